"""Which documents a deduplicated corpus keeps: the first of each exact copy, or of each cluster of
near copies (what `prepare.py --dedup exact|near` drops before the split).

    exact_keep([text_hash(t) for t in texts])  -> [True, True, False, ...]: a repeat is dropped
    near_keep(signatures)                      -> the first document of each MinHash cluster kept
    keep_documents("near", keys, signatures_of)    -> the same from 14 band keys a document held

near_keep equals simple.first_of_clusters(n, simple.near_duplicate_pairs(documents)): the pairs
sharing a band with estimated Jaccard >= 0.8 link documents into clusters; each keeps its first.
So no two kept documents are near duplicates, and no copy can straddle train and val.
"""

import numpy as np

from . import fast, simple


def exact_keep(hashes):
    """Keep each document whose hash did not occur before: [7, 8, 7, 9, 8] -> [T, T, F, T, F]."""
    keep = np.zeros(len(hashes), bool)
    keep[np.unique(np.asarray(hashes, np.uint64), return_index=True)[1]] = True
    return keep


def near_pairs(signatures, threshold=simple.THRESHOLD, bands=simple.BANDS, rows=simple.ROWS):
    """simple.near_duplicate_pairs from the documents' signatures (a (documents, bands * rows)
    array): every pair (i, j), i < j, in one band's bucket, whose signatures agree on at least
    `threshold` of their values. A bucket of k documents compares its k * (k - 1) / 2 pairs."""
    keys = fast.band_keys(signatures, bands, rows)
    pairs = set()
    for band in range(bands):
        order = np.argsort(keys[:, band], kind="stable")
        sorted_keys = keys[order, band]
        bounds = np.flatnonzero(np.diff(sorted_keys)) + 1
        for members in np.split(order, bounds):
            if len(members) < 2:
                continue
            i, j = np.triu_indices(len(members), k=1)
            agree = (signatures[members[i]] == signatures[members[j]]).mean(axis=1)
            pairs.update(zip(members[i][agree >= threshold].tolist(), members[j][agree >= threshold].tolist()))  # fmt: skip
    return pairs


def near_keep(signatures, threshold=simple.THRESHOLD, bands=simple.BANDS, rows=simple.ROWS):
    """Keep the first document of each cluster near_pairs links: simple.first_of_clusters."""
    pairs = near_pairs(signatures, threshold, bands, rows)
    return np.array(simple.first_of_clusters(len(signatures), sorted(pairs)), bool)


def shared_band(keys):
    """Which documents share some band's key with another: the only ones a near pair can hold.

    keys [[1, 5], [2, 5], [3, 6]] (3 documents, 2 bands) -> [True, True, False]
    """
    shared = np.zeros(len(keys), bool)
    for band in range(keys.shape[1]):
        _, inverse, counts = np.unique(keys[:, band], return_inverse=True, return_counts=True)
        shared |= counts[inverse.reshape(-1)] > 1
    return shared


def without_boundaries(ids, lengths, first):
    """Documents each holding one boundary token, first or last, as (tokens, offsets) without it.

    [0, 5, 6, 0, 7], lengths [3, 2], first=True -> ([5, 6, 7], [0, 2, 3])
    """
    offsets = fast.offsets_of(lengths)
    tokens = np.delete(np.asarray(ids), offsets[:-1] if first else offsets[1:] - 1)
    return tokens, offsets - np.arange(len(offsets))


def document_keys(rule, tokens, offsets):
    """What keep_documents holds of each document (tokens, offsets as in fast.py): "exact" its
    hash (fast.document_hashes, 8 bytes); "near" its 14 band keys (fast.band_keys of its MinHash
    signature, 112 bytes), not the 112 values of the signature itself (896 bytes)."""
    if rule == "exact":
        return fast.document_hashes(tokens, offsets)
    return fast.band_keys(fast.minhash_signatures(tokens, offsets))


def no_keys(rule):
    """document_keys of no document: "exact" -> an empty array; "near" -> one of shape (0, 14)."""
    return np.zeros((0,) if rule == "exact" else (0, simple.BANDS), np.uint64)


def keep_documents(rule, keys, signatures_of):
    """Which documents `--dedup rule` keeps, as a bool array, from their document_keys (an
    iterable of arrays, chunk after chunk, the documents in order).

    "exact": exact_keep of the hashes. "near": near_keep, from the signatures of only the
    documents sharing a band key with another (signatures_of(their numbers) makes them again):
    a pair shares a band, so every other document is alone in its cluster, and kept.
    """
    keys = np.concatenate([no_keys(rule), *keys])
    if rule == "exact":
        return exact_keep(keys)
    candidates = np.flatnonzero(shared_band(keys))
    keep = np.ones(len(keys), bool)
    if len(candidates):
        keep[candidates] = near_keep(signatures_of(candidates))
    return keep


def rule_record(rule):
    """meta.json's words for `--dedup rule`: what is compared, and the parameters."""
    record = {
        "rule": rule,
        "compared": "each document's token ids, its end-of-text token left out",
        "keeps": "the first document of each exact copy, in the order the documents are read",
        "hash": "blake2b, 8 bytes, of the ids as 4-byte little-endian integers",
    }
    if rule == "near":
        record.update(
            keeps="the first document of each cluster of near copies (pairs linked transitively)",
            hash="MinHash over token shingles, splitmix64 permutations from seed 0",
            shingle_tokens=simple.SHINGLE,
            bands=simple.BANDS,
            rows=simple.ROWS,
            threshold=simple.THRESHOLD,
            seed=0,
        )  # fmt: skip
    return record
