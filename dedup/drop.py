"""Which documents a deduplicated corpus keeps: the first of each exact copy, or of each cluster of
near copies (what `prepare.py --dedup exact|near` drops before the split).

    exact_keep([text_hash(t) for t in texts])  -> [True, True, False, ...]: a repeat is dropped
    near_keep(signatures)                      -> the first document of each MinHash cluster kept

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
