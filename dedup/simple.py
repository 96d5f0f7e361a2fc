"""Duplicates and near duplicates among documents of token ids, written to be read (read it first).

    document_hash([5, 6, 7]) == document_hash([5, 6, 7])          # an exact copy: equal hashes
    shingles([5, 6, 7, 8], n=2) == {(5, 6), (6, 7), (7, 8)}       # what a document is made of
    jaccard(shingles(a), shingles(b))                              # how much two documents share
    estimated_jaccard(minhash(a), minhash(b))                      # the same, from 112 numbers each

Exact copies have equal hashes. Near copies share most of their shingles (runs of 5 tokens): the
Jaccard similarity |A & B| / |A | B| of their shingle sets is near 1. Under a random permutation
of all shingles, A's smallest is B's smallest with probability Jaccard(A, B), so the fraction of
equal minima over 112 permutations (a MinHash signature) estimates it. The signature is cut into
14 bands of 8 rows, each hashed to a key; two documents sharing a band's key are near duplicates
(datatrove's rule): probability 1 - (1 - s**8)**14 at similarity s, 99% at 0.85, 56% at 0.7, 5%
at 0.5. Clusters are what such pairs link transitively, found from each document's 14 keys: the
cost grows with the documents, never with pairs of them.

Every hash is a fixed function of the ids (splitmix64's mixer, blake2b), never Python's hash():
the same answers on every platform. fast.py computes the same results with numpy.
"""

import hashlib

MASK = 2**64 - 1  # the hashes are 64-bit unsigned integers; arithmetic wraps around, as in C
SEED = 0x9E3779B97F4A7C15  # where every sequence hash starts (the golden ratio's 64 bits)
SHINGLE = 5  # tokens per shingle, the unit of near-duplicate similarity
BANDS, ROWS = 14, 8  # datatrove's LSH: 14 bands of 8 hashes, a signature of 112
NGRAM = 13  # GPT-3's contamination rule: a shared run of 13 tokens
GRAM_BASE = SEED  # gram_hash's base: odd, so its powers mod 2**64 are all invertible


def mix64(x):
    """splitmix64's finalizer: a 64-bit integer -> one whose bits all depend on all of x.

    0 -> 0; 1 -> 0x5692161D100B05E5 (each output bit flips with about half the input bits)
    """
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def sequence_hash(values):
    """A 64-bit hash of a sequence of integers, one mix per value:
    (5, 6) -> mix64(mix64(SEED ^ 5) ^ 6)."""
    h = SEED
    for value in values:
        h = mix64(h ^ value)
    return h


def gram_hash(ids):
    """A 64-bit hash of an n-gram that a window can roll: each id mixed, weighted by a power of
    GRAM_BASE by its place, summed, the sum mixed. (5, 6) -> mix64(mix64(5 ^ SEED) + mix64(6 ^
    SEED) * GRAM_BASE). Sliding one token on subtracts the first id's term and adds the new
    one's, whatever n is (fast.gram_hashes); sequence_hash chains n mixes, n passes a window.
    """
    total = sum(mix64(int(token) ^ SEED) * pow(GRAM_BASE, k, 2**64) for k, token in enumerate(ids))
    return mix64(total & MASK)


def document_hash(ids):
    """A document's 64-bit hash: blake2b of its ids as 4-byte little-endian integers.

    [5, 6, 7] -> the same number on every machine; equal lists <-> equal hashes (up to 2**-64)
    """
    data = b"".join(int(token).to_bytes(4, "little") for token in ids)
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def shingles(ids, n=SHINGLE):
    """The set of runs of n consecutive tokens; a shorter document is one shingle, itself.

    [5, 6, 7, 8] with n=2 -> {(5, 6), (6, 7), (7, 8)};   [5] with n=2 -> {(5,)};   [] -> set()
    """
    ids = tuple(int(token) for token in ids)
    if len(ids) < n:
        return {ids} if ids else set()
    return {ids[i : i + n] for i in range(len(ids) - n + 1)}


def jaccard(a, b):
    """|a & b| / |a | b| of two sets: {1, 2, 3}, {2, 3, 4} -> 0.5; two empty sets -> 1.0."""
    return len(a & b) / len(a | b) if a or b else 1.0


def permutations(num_hashes):
    """The num_hashes random-looking maps x -> (a * x + b) mod 2**64 (a odd, so each is a
    permutation of the 64-bit numbers), as (a, b) pairs drawn by splitmix64 from a fixed seed.

    2 -> [(a0, b0), (a1, b1)], the same on every machine
    """
    pairs, state = [], 0
    for _ in range(num_hashes):
        state = (state + SEED) & MASK
        a = mix64(state) | 1
        state = (state + SEED) & MASK
        pairs.append((a, mix64(state)))
    return pairs


def minhash(ids, n=SHINGLE, num_hashes=BANDS * ROWS):
    """A document's MinHash signature: for each permutation, the smallest permuted shingle hash.

    Two documents' signatures agree at each position with probability Jaccard(their shingles);
    an empty document -> [2**64 - 1] * num_hashes (no shingle).
    """
    hashes = [sequence_hash(shingle) for shingle in shingles(ids, n)]
    return [
        min(((a * h + b) & MASK for h in hashes), default=MASK) for a, b in permutations(num_hashes)
    ]


def estimated_jaccard(signature_a, signature_b):
    """The fraction of positions where two signatures agree: [1, 2, 3, 4], [1, 2, 3, 5] -> 0.75."""
    return sum(x == y for x, y in zip(signature_a, signature_b)) / len(signature_a)


def band_keys(signature, bands=BANDS, rows=ROWS):
    """One hash per band of `rows` consecutive signature values: two documents with equal keys in
    some band are candidates. [1, 2, 3, 4] with bands=2, rows=2 -> [sequence_hash((1, 2)),
    sequence_hash((3, 4))]"""
    return [sequence_hash(signature[band * rows : (band + 1) * rows]) for band in range(bands)]


def near_duplicate_pairs(documents, bands=BANDS, rows=ROWS, n=SHINGLE):
    """The pairs (i, j), i < j, of documents whose signatures share some band's key.

    [[1, 2, 3, 4, 5, 6], [9, 9, 9, 9, 9, 9], [1, 2, 3, 4, 5, 6]] -> {(0, 2)}
    """
    keys = [band_keys(minhash(ids, n, bands * rows), bands, rows) for ids in documents]
    return {
        (i, j)
        for j in range(len(documents))
        for i in range(j)
        if any(a == b for a, b in zip(keys[i], keys[j]))
    }


def first_of_clusters(num_documents, pairs):
    """Which documents to keep: the first of each cluster that `pairs` link (union-find).

    5 documents, pairs {(0, 2), (2, 4)} -> [True, True, False, True, False]: 2, 4 join 0's cluster
    """
    parent = list(range(num_documents))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]  # halve the path: later look-ups are shorter
            i = parent[i]
        return i

    for i, j in pairs:
        a, b = root(i), root(j)
        parent[max(a, b)] = min(a, b)  # the earlier document is the root
    return [root(i) == i for i in range(num_documents)]


def shared_ngram_tokens(ids, other_ngrams, n=NGRAM):
    """How many of the tokens of `ids` lie in some n-gram that is in `other_ngrams` (a set of
    tuples); a document shorter than n has no n-gram. [1, 2, 3, 4], {(2, 3)}, n=2 -> 2"""
    covered = set()
    for i in range(len(ids) - n + 1):
        if tuple(int(token) for token in ids[i : i + n]) in other_ngrams:
            covered.update(range(i, i + n))
    return len(covered)
