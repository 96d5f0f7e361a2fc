"""fast.py's slow loops compiled with numba (`pip install '.[fast-dedup]'`); KERNELS is None
without it. Each kernel equals fast.py's numpy code on the same uint64 values (the tests compare).
"""

from types import SimpleNamespace

import numpy as np

from safety.compiled import compiled, numba

from . import fast, simple

SEED = np.uint64(simple.SEED)  # a global: numba compiles it in as a constant, and can cache
mix64 = compiled(fast.mix64)  # on a number, as on an array


@compiled
def minhash(tokens, offsets, n, a, b, signatures):
    """fast.minhash_signatures, each shingle hashed as it is used."""
    for d in range(len(offsets) - 1):
        start, end = offsets[d], offsets[d + 1]
        row = signatures[d]
        for p in range(start, max(end - n + 1, min(start + 1, end))):
            h = SEED
            for q in range(p, min(p + n, end)):
                h = mix64(h ^ np.uint64(tokens[q]))
            for k in range(len(a)):  # a branch-free min: the compiler vectorises it
                row[k] = min(row[k], a[k] * h + b[k])


@compiled
def ngram_hashes(tokens, offsets, n, base, inverse):
    """fast.ngram_hashes of gram_hashes, the window's sum rolled on a token at a time."""
    count = 0
    for d in range(len(offsets) - 1):
        count += max(offsets[d + 1] - offsets[d] - n + 1, 0)
    hashes = np.empty(count, np.uint64)
    positions = np.empty(count, np.int64)
    owners = np.empty(count, np.int64)
    top = np.uint64(1)  # base ** (n - 1)
    for _ in range(n - 1):
        top *= base
    i = 0
    for d in range(len(offsets) - 1):
        start, end = offsets[d], offsets[d + 1]
        if end - start < n:
            continue
        window = np.uint64(0)
        weight = np.uint64(1)
        for q in range(start, start + n):
            window += mix64(np.uint64(tokens[q]) ^ SEED) * weight
            weight *= base
        for p in range(start, end - n + 1):
            if p > start:
                window = (window - mix64(np.uint64(tokens[p - 1]) ^ SEED)) * inverse
                window += mix64(np.uint64(tokens[p + n - 1]) ^ SEED) * top
            hashes[i], positions[i], owners[i] = mix64(window), p, d
            i += 1
    return hashes, positions, owners


@compiled
def table(unique):
    """An open-addressing table of distinct hashes, by their low bits, and a bitmap of 8 bits a
    hash, by their top bits, that most absent hashes miss: (keys, slots, bits, shift)."""
    size, shift = 16, 58  # the bitmap: 2**(64 - shift) bits
    while size < 2 * len(unique):
        size *= 2
    while 2 ** (64 - shift) < 8 * len(unique) and shift > 6:
        shift -= 1
    keys = np.zeros(size, np.uint64)
    slots = np.full(size, -1, np.int64)
    bits = np.zeros(2 ** (64 - shift) // 64, np.uint64)
    for i in range(len(unique)):
        j = np.intp(unique[i] & np.uint64(size - 1))
        while slots[j] >= 0:
            j = (j + 1) & (size - 1)
        keys[j], slots[j] = unique[i], i
        bit = np.intp(unique[i] >> np.uint64(shift))
        bits[bit >> 6] |= np.uint64(1) << np.uint64(bit & 63)
    return keys, slots, bits, shift


@compiled
def positions(keys, slots, bits, shift, hashes):
    """Each hash's position in the table's distinct hashes, or -1."""
    out = np.empty(len(hashes), np.int64)
    for i in range(len(hashes)):
        bit = np.intp(hashes[i] >> np.uint64(shift))
        if not (bits[bit >> 6] >> np.uint64(bit & 63)) & np.uint64(1):
            out[i] = -1
            continue
        j = np.intp(hashes[i] & np.uint64(len(keys) - 1))
        while slots[j] >= 0 and keys[j] != hashes[i]:
            j = (j + 1) & (len(keys) - 1)
        out[i] = slots[j]
    return out


KERNELS = None
if numba is not None:
    KERNELS = SimpleNamespace(
        minhash=minhash, ngram_hashes=ngram_hashes, table=table, positions=positions
    )
