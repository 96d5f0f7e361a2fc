"""Which documents a deduplicated corpus keeps: the first of each exact copy, or of each cluster of
near copies (what `prepare.py --dedup exact|near` drops before the split).

    exact_keep([text_hash(t) for t in texts])  -> [True, True, False, ...]: a repeat is dropped
    near_keep(keys)                            -> the first document of each cluster kept
    keep_documents("near", chunks_of_keys)     -> the same from 14 band keys a document held

near_keep equals simple.first_of_clusters(n, simple.near_duplicate_pairs(documents)): documents
sharing a band's key are linked into clusters (a union-find over band keys); each keeps its first.
So no two kept documents share a band, and no near copy can straddle train and val: `overlap`
calls a val document near a train one by the same rule.
"""

import numpy as np

from . import fast, simple


def exact_keep(hashes):
    """Keep each document whose hash did not occur before: [7, 8, 7, 9, 8] -> [T, T, F, T, F]."""
    keep = np.zeros(len(hashes), bool)
    keep[np.unique(np.asarray(hashes, np.uint64), return_index=True)[1]] = True
    return keep


def near_links(keys):
    """The links a union-find over band keys needs (a (documents, bands) array of keys): each
    document paired with the first document holding its key in some band, (first, it), sorted.
    A bucket of k documents gives k - 1 links, never its k * (k - 1) / 2 pairs.

    keys [[1, 5], [2, 5], [1, 6]] -> [(0, 1), (0, 2)]: 0 and 1 share band 1, 0 and 2 band 0
    """
    count = max(len(keys), 1)
    links = [np.zeros(0, np.int64)]  # link (first, document) as the number first * count + document
    for column in np.asarray(keys).T:
        order = np.argsort(column, kind="stable")  # each bucket's documents in order
        sorted_keys = column[order]
        starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
        firsts = np.repeat(order[starts], np.diff(np.r_[starts, len(order)]))
        joined = firsts != order
        links.append(firsts[joined] * count + order[joined])
    links = np.unique(np.concatenate(links))
    return list(zip((links // count).tolist(), (links % count).tolist()))


def near_keep(keys):
    """Keep the first document of each cluster of documents sharing a band key (keys as in
    near_links): simple.first_of_clusters over near_links."""
    return np.array(simple.first_of_clusters(len(keys), near_links(keys)), bool)


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


def keep_documents(rule, keys):
    """Which documents `--dedup rule` keeps, as a bool array, from their document_keys (an
    iterable of arrays, chunk after chunk, the documents in order).

    "exact": exact_keep of the hashes. "near": near_keep of the documents sharing a band key
    with another (shared_band): every other document is alone in its cluster, and kept.
    """
    keys = np.concatenate([no_keys(rule), *keys])
    if rule == "exact":
        return exact_keep(keys)
    candidates = np.flatnonzero(shared_band(keys))
    keep = np.ones(len(keys), bool)
    if len(candidates):
        keep[candidates] = near_keep(keys[candidates])
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
            keeps="the first document of each cluster of documents sharing a band key (linked "
            "transitively)",
            hash="MinHash over token shingles, splitmix64 permutations from seed 0",
            shingle_tokens=simple.SHINGLE,
            bands=simple.BANDS,
            rows=simple.ROWS,
            seed=0,
        )
    return record
