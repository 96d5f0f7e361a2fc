"""Which documents `--dedup exact|near` keeps: the first of each exact copy, or of each cluster of
documents sharing a band key (simple.first_of_clusters of simple.near_duplicate_pairs). No two
kept documents share a band, so no near copy straddles train and val by `overlap`'s rule.
"""

import numpy as np

from . import fast, simple


def exact_keep(hashes):
    """Keep each document whose hash did not occur before: [7, 8, 7, 9, 8] -> [T, T, F, T, F]."""
    keep = np.zeros(len(hashes), bool)
    keep[np.unique(np.asarray(hashes, np.uint64), return_index=True)[1]] = True
    return keep


def near_links(keys):
    """(first, document), sorted: each document linked to the first holding its key in some band
    of `keys` (documents, bands); a bucket of k documents gives k - 1 links, not k * (k - 1) / 2.

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
    """Keep the first document of each cluster of documents sharing a band key (near_links)."""
    return np.array(simple.first_of_clusters(len(keys), near_links(keys)), bool)


def shared_band(keys):
    """Which documents share some band's key with another (the only ones a near pair can hold).

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
    """What keep_documents holds of each document: "exact" its hash, "near" its 14 band keys."""
    if rule == "exact":
        return fast.document_hashes(tokens, offsets)
    return fast.band_keys(fast.minhash_signatures(tokens, offsets))


def no_keys(rule):
    """document_keys of no document: shape (0,) for "exact", (0, 14) for "near"."""
    return np.zeros((0,) if rule == "exact" else (0, simple.BANDS), np.uint64)


def keep_documents(rule, keys):
    """Which documents `--dedup rule` keeps (a bool array), from chunks of their document_keys.

    "near" runs near_keep on the documents of shared_band only: every other one is kept.
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
