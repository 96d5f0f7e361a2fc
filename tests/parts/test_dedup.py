"""dedup/: the readable functions' examples, the fast ones equal to them (random ids and Tiny
Shakespeare), planted pairs (every exact one found, 95% of the near ones, at most 2% of the
unrelated ones), and parameter-golf's train/val leak, scaled down."""

import random

import numpy as np
import pytest

from dedup import compiled, fast, simple
from dedup.drop import document_keys
from dedup.overlap import (
    ValIndex,
    documents_of,
    overlap_report,
    repeated_documents,
    stream_documents,
)

# ---------------------------------------------------------------- simple.py's examples


def test_simple_examples():
    assert simple.mix64(0) == 0 and simple.mix64(1) == 0x5692161D100B05E5
    assert simple.sequence_hash((5, 6)) == simple.mix64(simple.mix64(simple.SEED ^ 5) ^ 6)
    mixed = [simple.mix64(t ^ simple.SEED) for t in (5, 6)]
    expected = simple.mix64((mixed[0] + mixed[1] * simple.GRAM_BASE) & simple.MASK)
    assert simple.gram_hash((5, 6)) == expected
    assert simple.document_hash([5, 6, 7]) == simple.document_hash(np.array([5, 6, 7], np.uint16))
    assert simple.document_hash([5, 6, 7]) != simple.document_hash([5, 6, 7, 0])
    assert simple.shingles([5, 6, 7, 8], n=2) == {(5, 6), (6, 7), (7, 8)}
    assert simple.shingles([5], n=2) == {(5,)} and simple.shingles([], n=2) == set()
    assert simple.jaccard({1, 2, 3}, {2, 3, 4}) == 0.5 and simple.jaccard(set(), set()) == 1.0
    assert simple.estimated_jaccard([1, 2, 3, 4], [1, 2, 3, 5]) == 0.75
    assert simple.band_keys([1, 2, 3, 4], bands=2, rows=2) == [
        simple.sequence_hash((1, 2)),
        simple.sequence_hash((3, 4)),
    ]
    assert simple.minhash([]) == [simple.MASK] * 112
    documents = [[1, 2, 3, 4, 5, 6], [9, 9, 9, 9, 9, 9], [1, 2, 3, 4, 5, 6]]
    assert simple.near_duplicate_pairs(documents) == {(0, 2)}
    assert simple.first_of_clusters(5, {(0, 2), (2, 4)}) == [True, True, False, True, False]
    assert simple.shared_ngram_tokens([1, 2, 3, 4], {(2, 3)}, n=2) == 2


def test_minhash_estimates_jaccard():
    """Over many pairs, the fraction of equal minima is Jaccard's value on average."""
    rng = random.Random(0)
    errors = []
    for _ in range(30):
        base = [rng.randrange(1000) for _ in range(200)]
        other = [t if rng.random() > 0.1 else rng.randrange(1000) for t in base]
        true = simple.jaccard(simple.shingles(base), simple.shingles(other))
        errors.append(simple.estimated_jaccard(simple.minhash(base), simple.minhash(other)) - true)
    assert abs(np.mean(errors)) < 0.02 and np.std(errors) < 0.06


# ---------------------------------------------------------------- fast.py equals simple.py


def random_documents(seed, count=40, vocab=30):
    """Documents of random ids and lengths 0 to 60, the short ones (under 5 and 13) included."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, vocab, size=rng.integers(0, 60)) for _ in range(count)]


def assert_fast_equals_simple(documents, n=simple.SHINGLE, ngram=simple.NGRAM):
    tokens, offsets = documents_of(documents)
    signatures = fast.minhash_signatures(tokens, offsets, n)
    assert [simple.minhash(d, n) for d in documents] == signatures.tolist()
    assert [simple.band_keys(s.tolist()) for s in signatures] == fast.band_keys(signatures).tolist()
    hashes = [simple.document_hash(d) for d in documents]
    assert hashes == fast.document_hashes(tokens, offsets).tolist()
    grams, positions, owners = fast.ngram_hashes(tokens, offsets, ngram)
    expected = [
        (simple.gram_hash(tuple(d[i : i + ngram].tolist())), offsets[k] + i, k)
        for k, d in enumerate(documents)
        for i in range(len(d) - ngram + 1)
    ]
    assert list(zip(grams.tolist(), positions.tolist(), owners.tolist())) == expected
    # the tokens in n-grams of the other documents, against simple.shared_ngram_tokens
    other = {tuple(d[i : i + ngram].tolist()) for d in documents[1::2] for i in range(len(d))}
    found = np.array([tuple(tokens[p : p + ngram].tolist()) in other for p in positions.tolist()])
    covered = fast.covered_tokens(positions[found] if len(found) else positions, len(tokens), ngram)
    assert covered == sum(simple.shared_ngram_tokens(d, other, ngram) for d in documents)


@pytest.mark.parametrize("seed", range(4))
def test_fast_equals_simple_on_random_ids(seed):
    documents = random_documents(seed)
    assert_fast_equals_simple(documents)
    assert_fast_equals_simple(documents, n=2, ngram=3)


def test_fast_equals_simple_across_permutation_steps(monkeypatch):
    """A document's shingles split over several steps of ROWS_PER_STEP give the same minima."""
    monkeypatch.setattr(fast, "ROWS_PER_STEP", 7)
    assert_fast_equals_simple(random_documents(9, count=12))


def test_fast_equals_simple_on_tiny_shakespeare(paragraphs, gpt2_encoding):
    documents = [np.array(gpt2_encoding.encode_ordinary(p)) for p in paragraphs[:150]]
    assert_fast_equals_simple(documents)


def test_window_hashes_of_large_ids():
    """uint32 ids past 2**16 (llama-3's vocabulary) hash as Python's integers do."""
    ids = np.array([70000, 2**32 - 1, 5, 128255, 0], np.uint32)
    assert fast.window_hashes(ids, 2).tolist() == [
        simple.sequence_hash(tuple(ids[i : i + 2].tolist())) for i in range(4)
    ]
    assert fast.gram_hashes(ids, 2).tolist() == [
        simple.gram_hash(tuple(ids[i : i + 2].tolist())) for i in range(4)
    ]


@pytest.mark.parametrize("n", [1, 2, 13, 1000, 2999, 3000, 3001])
def test_gram_hashes_roll_whatever_n(n):
    """One pass for any n: each window's hash is simple.gram_hash of its n ids, a window of
    equal ids hashes equal wherever it lies, and one id changed changes every window holding it."""
    ids = np.random.default_rng(n).integers(0, 50257, size=3000)
    ids[1500:] = ids[:1500]
    hashes = fast.gram_hashes(ids, n)
    assert len(hashes) == max(len(ids) - n + 1, 0)
    for i in sorted({0, len(hashes) // 2, len(hashes) - 1} if len(hashes) else set()):
        assert hashes[i] == simple.gram_hash(ids[i : i + n].tolist())
    if n <= 1500:
        assert (hashes[: 1501 - n] == hashes[1500 : 3001 - n]).all()
        ids[1000] += 1
        changed = fast.gram_hashes(ids, n) != hashes
        assert changed.tolist() == [i <= 1000 < i + n for i in range(len(hashes))]


@pytest.mark.skipif(
    compiled.KERNELS is None, reason="numba is not installed (the fast-dedup extra)"
)
def test_compiled_equals_numpy(monkeypatch, paragraphs, gpt2_encoding):
    """dedup/compiled.py's kernels give fast.py's numpy values, each one: MinHash signatures,
    n-gram hashes at n = 1 to 3,001, look-ups; on random ids, uint32 ids past 2**16, the -1 of
    a character a vocabulary lacks, and Tiny Shakespeare."""
    rng = np.random.default_rng(5)
    shakespeare = [np.array(gpt2_encoding.encode_ordinary(p)) for p in paragraphs[:300]]
    corpora = [
        random_documents(1, count=200),
        [rng.integers(0, 2**32, size=rng.integers(0, 3000), dtype=np.uint32) for _ in range(9)],
        [np.array([-1, 5, 6, -1, 7] * 40, np.int64)],
        shakespeare,
    ]
    unique = np.unique(fast.gram_hashes(documents_of(shakespeare)[0][::3], 13))

    def values():
        out = []
        for documents in corpora:
            tokens, offsets = documents_of(documents)
            out.append(fast.minhash_signatures(tokens, offsets))
            for n in (1, 2, 13, 1000, 3001):
                out += fast.ngram_hashes(tokens, offsets, n)
            out.append(fast.lookup(unique)(fast.ngram_hashes(tokens, offsets)[0]))
        return out

    compiled_values = values()
    monkeypatch.setattr(fast, "kernels", lambda: None)
    for got, expected in zip(compiled_values, values(), strict=True):
        assert got.dtype == expected.dtype and got.tolist() == expected.tolist()
    assert (fast.lookup(unique)(unique) == np.arange(len(unique))).all()


NO_NUMBA = pytest.mark.skipif(compiled.KERNELS is None, reason="numba is not installed")


@pytest.mark.parametrize("path", ["numpy", pytest.param("compiled", marks=NO_NUMBA)])
def test_lookup(monkeypatch, path):
    if path == "numpy":
        monkeypatch.setattr(fast, "kernels", lambda: None)
    positions = fast.lookup(np.array([3, 7, 9], np.uint64))
    assert positions(np.array([9, 4, 3], np.uint64)).tolist() == [2, -1, 0]
    assert fast.lookup(np.zeros(0, np.uint64))(np.array([1], np.uint64)).tolist() == [-1]


# ---------------------------------------------------------------- streams of documents


@pytest.mark.parametrize(
    "stream, boundary, documents",
    [
        pytest.param([5, 6, 0, 7, 0, 8], "last", [[5, 6], [7], [8]], id="eot-last-tail"),
        pytest.param([5, 6, 0, 0, 7, 0], "last", [[5, 6], [], [7]], id="eot-last-empty"),
        pytest.param([5, 0, 6, 7, 0, 8], "first", [[5], [6, 7], [8]], id="bos-first-head"),
        pytest.param([0, 5, 0, 6, 7, 0], "first", [[5], [6, 7], []], id="bos-first-trailing"),
        pytest.param([5, 6, 7], "first", [[5, 6, 7]], id="no-boundary"),
    ],
)
def test_stream_documents(stream, boundary, documents):
    """The same documents whatever the blocks the stream is read in."""
    for block in (1, 2, 4, len(stream)):
        blocks = [np.array(stream[i : i + block]) for i in range(0, len(stream), block)]
        found = [
            tokens[a:b].tolist()
            for tokens, offsets in stream_documents(blocks, 0, boundary)
            for a, b in zip(offsets[:-1], offsets[1:])
        ]
        assert found == documents, block


def test_repeated_documents():
    hashes, lengths = np.array([7, 8, 7, 7], np.uint64), np.array([3, 1, 3, 3], np.uint32)
    assert repeated_documents(hashes, lengths) == (2, 6)


# ---------------------------------------------------------------- the acceptance: planted pairs


def word_documents(paragraphs, count, words_per_document, rng):
    """Documents of words drawn from Tiny Shakespeare's vocabulary, each its own."""
    words = sorted({w for p in paragraphs for w in p.split()})
    return [[rng.choice(words) for _ in range(words_per_document)] for _ in range(count)], words


def edited(document, words, rng, edits):
    """`document` with `edits` words replaced, inserted or deleted at random places."""
    document = list(document)
    for _ in range(edits):
        i = rng.randrange(len(document))
        kind = rng.choice("rid")
        if kind == "r":
            document[i] = rng.choice(words)
        elif kind == "i":
            document.insert(i, rng.choice(words))
        else:
            del document[i]
    return document


def planted_pairs(paragraphs, encode, seed=0):
    """(exact, near, unrelated) lists of (a, b) token pairs: equal; Jaccard 0.85 to 0.95 over
    5-gram shingles after word edits; Jaccard below 0.5 (some near it, after heavy edits)."""
    rng = random.Random(seed)
    documents, words = word_documents(paragraphs, 1700, 150, rng)
    ids = [np.array(encode(" ".join(d))) for d in documents]
    exact = [(ids[i], ids[i].copy()) for i in range(100)]
    near, unrelated = [], []
    for i in range(100, 1200):
        similar = i < 700  # the first 600 edited lightly, the rest heavily
        for _ in range(20):
            other = np.array(
                encode(
                    " ".join(
                        edited(
                            documents[i],
                            words,
                            rng,
                            rng.randrange(1, 6) if similar else rng.randrange(8, 30),
                        )
                    )
                )
            )
            j = simple.jaccard(simple.shingles(ids[i]), simple.shingles(other))
            if (0.85 <= j <= 0.95) if similar else (j < 0.5):
                (near if similar else unrelated).append((ids[i], other))
                break
    # unrelated also: pairs of other documents altogether
    unrelated += [(ids[i], ids[i + 1]) for i in range(1200, 1700, 2)]
    return exact, near, unrelated


def found_near(pairs):
    """Which val documents (the first of each pair) overlap_report finds near a train document
    (the second of each pair; each document is in one pair only)."""
    val = documents_of([a for a, _ in pairs])
    index = ValIndex(*val)
    for tokens, offsets in [documents_of([b]) for _, b in pairs]:
        index.match_near(fast.minhash_signatures(tokens, offsets))
    return index.near_found


@pytest.mark.slow
def test_planted_exact_near_and_unrelated_pairs(paragraphs, gpt2_encoding):
    exact, near, unrelated = planted_pairs(paragraphs, gpt2_encoding.encode_ordinary)
    assert len(near) >= 500 and len(unrelated) >= 700
    report = overlap_report(
        documents_of([a for a, _ in exact]), iter([documents_of([b for _, b in exact])])
    )
    assert report["val_documents_in_train"]["documents"] == len(exact)  # every exact pair
    assert report["val_near_duplicates_in_train"]["documents"] == len(exact)
    assert found_near(near).mean() >= 0.95
    # sharing a band is the rule: 1 - (1 - s**8)**14 is 5% at Jaccard 0.5, 1% at 0.4
    assert found_near(unrelated).mean() <= 0.02
    # and the readable version agrees on a few of them
    for a, b in near[:3] + unrelated[:3]:
        pairs = simple.near_duplicate_pairs([a, b])
        assert (pairs == {(0, 1)}) == bool(found_near([(a, b)])[0])


# ---------------------------------------------------------------- the acceptance: the leak


def test_parameter_golf_leak_scaled_down(paragraphs, gpt2_encoding):
    """val is documents 0-499 of a stream, train starts at document 100: 400 of 500 in train."""
    eot = gpt2_encoding.eot_token
    documents = [gpt2_encoding.encode_ordinary(p) + [eot] for p in dict.fromkeys(paragraphs[:2000])]
    stream = np.concatenate([np.array(d, np.uint16) for d in documents])
    starts = np.cumsum([0] + [len(d) for d in documents])
    val_stream, train_stream = stream[: starts[500]], stream[starts[100] :]
    val = next(stream_documents([val_stream], eot))
    blocks = np.array_split(train_stream, 7)  # read in blocks that cut documents
    report = overlap_report(val, stream_documents(blocks, eot))
    assert report["documents"] == {"train": len(documents) - 100, "val": 500}
    assert report["val_documents_in_train"] == {"documents": 400, "fraction": 0.8}
    assert report["val_near_duplicates_in_train"]["documents"] >= 400
    assert report["train_repeated_documents"]["documents"] == 0
    assert 0.75 < report["val_tokens_in_shared_ngrams"]["fraction"] < 0.85


# ---------------------------------------------------------------- what --dedup keeps


def test_exact_keep():
    from dedup.drop import exact_keep

    assert exact_keep([7, 8, 7, 9, 8]).tolist() == [True, True, False, True, False]


def test_a_boilerplate_repeated_costs_its_copies_not_their_pairs():
    """100,000 copies of one document and 1,000 of 100 others: one link a copy (not the
    5 billion pairs of a bucket); each keeps its first; overlap finds every val copy."""
    from dedup.drop import keep_documents, near_links

    rng = np.random.default_rng(0)
    boilerplate = rng.integers(0, 50257, 40)
    keys = np.repeat(fast.band_keys(fast.minhash_signatures(boilerplate, [0, 40])), 100_000, 0)
    assert near_links(keys) == [(0, i) for i in range(1, 100_000)]
    assert near_links(np.array([[1, 5], [2, 5], [1, 6]], np.uint64)) == [(0, 1), (0, 2)]
    others = [rng.integers(0, 50257, 30) for _ in range(100)]
    documents = [others[i % 100] for i in range(1000)] + [boilerplate] * 5000
    chunks = [documents_of(documents[i : i + 700]) for i in range(0, len(documents), 700)]
    keep = keep_documents("near", [document_keys("near", *chunk) for chunk in chunks])
    assert np.flatnonzero(keep).tolist() == [*range(100), 1000]
    val = documents_of([boilerplate] * 3000 + others)
    report = overlap_report(val, iter(chunks[:3]))
    assert report["val_near_duplicates_in_train"]["documents"] == 3100


@pytest.mark.parametrize("seed", range(3))
def test_near_keep_equals_simple(seed):
    """Documents with planted copies, near copies and chains of them: the clusters' first kept."""
    from dedup.drop import near_keep, near_links

    rng = random.Random(seed)
    documents = [[rng.randrange(500) for _ in range(rng.randrange(0, 80))] for _ in range(40)]
    for _ in range(30):  # a copy of an earlier document, a few ids changed
        copy = list(rng.choice(documents))
        for _ in range(rng.randrange(3)):
            if copy:
                copy[rng.randrange(len(copy))] = rng.randrange(500)
        documents.insert(rng.randrange(len(documents) + 1), copy)
    tokens, offsets = documents_of(documents)
    keys = fast.band_keys(fast.minhash_signatures(tokens, offsets))
    expected = simple.near_duplicate_pairs(documents)
    links = near_links(keys)
    assert set(links) <= expected and expected
    keep = near_keep(keys)
    assert keep.tolist() == simple.first_of_clusters(len(documents), expected)
    kept = [d for d, k in zip(documents, keep) if k]
    assert simple.near_duplicate_pairs(kept) == set()  # no two kept documents are near
