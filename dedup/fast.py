"""simple.py's functions for many documents at once, with numpy: the same numbers, faster.

Documents come as one array of token ids and their offsets: document i is
tokens[offsets[i]:offsets[i + 1]] (offsets [0, 3, 3, 5] -> three documents of 3, 0 and 2 ids).
tests/parts/test_dedup.py proves each function equals the simple.py one it names.
"""

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import simple

THREADS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()

U64 = np.uint64
MASK = U64(simple.MASK)
GRAM_INVERSE = pow(simple.GRAM_BASE, -1, 2**64)  # GRAM_BASE * GRAM_INVERSE = 1 (mod 2**64)
ROWS_PER_STEP = 8192  # shingles permuted at once: 8,192 x 112 hashes x 8 bytes = 7 MB


def kernels():
    """compiled.py's KERNELS (None without numba), imported late: numba takes 1.5 s to import."""
    from .compiled import KERNELS

    return KERNELS


def offsets_of(lengths):
    """Where each document begins in the flat array, and the end: [3, 0, 2] -> [0, 3, 3, 5]."""
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def mix64(x):
    """simple.mix64 on every element of a uint64 array (x is overwritten and returned)."""
    x ^= x >> U64(30)
    x *= U64(0xBF58476D1CE4E5B9)
    x ^= x >> U64(27)
    x *= U64(0x94D049BB133111EB)
    x ^= x >> U64(31)
    return x


def window_hashes(tokens, n):
    """[simple.sequence_hash(tokens[i:i + n]) for each i]; fewer than n tokens -> []."""
    if len(tokens) < n:
        return np.zeros(0, U64)
    return sequence_hashes(np.lib.stride_tricks.sliding_window_view(np.asarray(tokens), n))


def gram_hashes(tokens, n):
    """[simple.gram_hash(tokens[i:i + n]) for each i]; fewer than n tokens -> [].

    One pass whatever n is: with prefix sums P[i] of mix64(id) * BASE**i, window i is
    (P[i + n] - P[i]) * BASE**-i (all mod 2**64).
    """
    count = len(tokens) - n + 1
    if count <= 0:
        return np.zeros(0, U64)
    terms = mix64(np.asarray(tokens).astype(U64) ^ U64(simple.SEED))
    terms *= powers(simple.GRAM_BASE, len(terms))
    prefix = np.zeros(len(terms) + 1, U64)
    np.cumsum(terms, out=prefix[1:])
    windows = prefix[n:] - prefix[:count]
    windows *= powers(GRAM_INVERSE, count)
    return mix64(windows)


def powers(base, count):
    """[base**k mod 2**64 for k in range(count)] as uint64: 3, 4 -> [1, 3, 9, 27]."""
    result = np.full(count, U64(base), U64)
    result[:1] = 1
    return np.multiply.accumulate(result, out=result)


def document_hashes(tokens, offsets):
    """[simple.document_hash(document) for each document]."""
    data = memoryview(np.ascontiguousarray(tokens, dtype="<u4")).cast("B")
    hashes = np.empty(len(offsets) - 1, U64)
    for i, (start, end) in enumerate(zip(offsets[:-1].tolist(), offsets[1:].tolist())):
        digest = hashlib.blake2b(data[4 * start : 4 * end], digest_size=8).digest()
        hashes[i] = int.from_bytes(digest, "little")
    return hashes


def shingle_hashes(tokens, offsets, n=simple.SHINGLE):
    """(flat, begins): the hashes of simple.shingles(document i, n) are flat[begins[i]:begins[i +
    1]], in the order they occur, repeats kept (a minimum does not care)."""
    tokens, offsets = np.asarray(tokens), np.asarray(offsets, np.int64)
    lengths = np.diff(offsets)
    counts = np.where(lengths >= n, lengths - n + 1, np.minimum(lengths, 1))
    begins = offsets_of(counts)
    flat = np.empty(begins[-1], U64)
    hashes, positions, owners = ngram_hashes(tokens, offsets, n, window_hashes)  # long documents
    flat[begins[owners] + positions - offsets[owners]] = hashes
    for length in range(1, n):  # the short documents, those of one length at a time
        short = np.flatnonzero(lengths == length)
        if len(short):
            rows = tokens[offsets[short][:, None] + np.arange(length)]
            flat[begins[short]] = sequence_hashes(rows)
    return flat, begins


def on_threads(work, bounds):
    """work(lo, hi) for each pair of neighbouring bounds, a thread each (the kernels hold no GIL):
    [0, 5, 9] -> work(0, 5), work(5, 9)."""
    with ThreadPoolExecutor(len(bounds) - 1) as pool:
        list(pool.map(work, bounds[:-1], bounds[1:]))


def sequence_hashes(rows):
    """[simple.sequence_hash(row) for row in rows] of a 2-D array of integers."""
    h = np.full(len(rows), simple.SEED, U64)
    for column in np.asarray(rows).T:  # a column at a time: `rows` may be a window view
        h ^= column.astype(U64)
        mix64(h)
    return h


def minhash_signatures(tokens, offsets, n=simple.SHINGLE, num_hashes=simple.BANDS * simple.ROWS):
    """[simple.minhash(document, n, num_hashes) for each document], a 2-D array."""
    a, b = (np.array(column, U64) for column in zip(*simple.permutations(num_hashes)))
    signatures = np.full((len(offsets) - 1, num_hashes), MASK, U64)
    compiled = kernels()
    if compiled is not None:
        offsets, tokens = np.asarray(offsets, np.int64), np.asarray(tokens)

        def sign(lo, hi):  # documents lo..hi-1, into their rows of signatures
            compiled.minhash(tokens, offsets[lo : hi + 1], n, a, b, signatures[lo:hi])

        cuts = np.searchsorted(offsets, np.linspace(0, offsets[-1], THREADS + 1)[1:-1])
        on_threads(sign, [0, *np.unique(cuts), len(offsets) - 1])  # as many tokens a thread
        return signatures
    flat, begins = shingle_hashes(tokens, offsets, n)
    nonempty = np.flatnonzero(np.diff(begins) > 0)
    firsts = begins[nonempty]  # where each nonempty document's hashes begin in `flat`
    permuted = np.empty((ROWS_PER_STEP, num_hashes), U64)
    for lo in range(0, len(flat), ROWS_PER_STEP):
        hi = min(lo + ROWS_PER_STEP, len(flat))
        rows = permuted[: hi - lo]
        np.multiply(flat[lo:hi, None], a, out=rows)
        rows += b
        # the documents whose hashes meet [lo, hi): the one holding lo, and those starting after
        first = np.searchsorted(firsts, lo, side="right") - 1
        last = np.searchsorted(firsts, hi, side="left")
        cuts = np.maximum(firsts[first:last], lo) - lo
        docs = nonempty[first:last]
        signatures[docs] = np.minimum(signatures[docs], np.minimum.reduceat(rows, cuts, axis=0))
    return signatures


def lookup(unique):
    """A function: hashes -> each one's position in `unique` (sorted, distinct), -1 where absent.

    lookup([3, 7, 9])([9, 4, 3]) -> [2, -1, 0]
    """
    compiled = kernels()
    if compiled is None:

        def sorted_lookup(hashes):  # the hashes sorted first: the look-ups walk `unique` once
            where = np.full(len(hashes), -1, np.int64)
            if len(unique) == 0:
                return where
            order = np.argsort(hashes)
            index = np.minimum(np.searchsorted(unique, hashes[order]), len(unique) - 1)
            hit = unique[index] == hashes[order]
            where[order[hit]] = index[hit]
            return where

        return sorted_lookup
    table = compiled.table(np.asarray(unique, U64))

    def positions(hashes):
        found = np.empty(len(hashes), np.int64)

        def look(lo, hi):
            found[lo:hi] = compiled.positions(*table, hashes[lo:hi])

        on_threads(look, np.linspace(0, len(hashes), THREADS + 1).astype(np.int64))
        return found

    return positions


def band_keys(signatures, bands=simple.BANDS, rows=simple.ROWS):
    """[simple.band_keys(signature, bands, rows) for each row] as a (documents, bands) array."""
    keys = np.empty((len(signatures), bands), U64)
    for band in range(bands):
        keys[:, band] = sequence_hashes(signatures[:, band * rows : (band + 1) * rows])
    return keys


def ngram_hashes(tokens, offsets, n=simple.NGRAM, hashes=gram_hashes):
    """(hashes, positions, owners) of every n-gram inside one document, hashed by `hashes`.

    [1, 2, 3 | 4, 5], n=2 -> hashes of (1, 2), (2, 3), (4, 5); positions [0, 1, 3]; owners [0, 0, 1]
    """
    offsets = np.asarray(offsets, np.int64)
    compiled = kernels() if hashes is gram_hashes else None
    if compiled is not None:
        base, inverse = U64(simple.GRAM_BASE), U64(GRAM_INVERSE)
        return compiled.ngram_hashes(np.asarray(tokens), offsets, n, base, inverse)
    windows = hashes(tokens, n)
    positions = np.arange(len(windows))
    owners = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))[: len(windows)]
    inside = positions + n <= offsets[owners + 1]
    return windows[inside], positions[inside], owners[inside]


def covered_tokens(positions, num_tokens, n):
    """simple.shared_ngram_tokens' count, of n-grams at `positions`: [0, 1], 5, n=2 -> 3."""
    change = np.zeros(num_tokens + 1, np.int64)
    np.add.at(change, np.asarray(positions, np.int64), 1)
    np.add.at(change, np.asarray(positions, np.int64) + n, -1)
    return int(np.count_nonzero(np.cumsum(change[:-1])))
