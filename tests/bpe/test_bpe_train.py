"""bpe/train.py: the fast trainer equals simple.train, on texts, counts and a file."""

import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe import EOT, Tokenizer, simple
from bpe import train as train_module
from bpe.table import PretokenTable
from bpe.train import (
    count_pretokens,
    learn_merges,
    train_bpe,
    train_bpe_from_iterator,
)


def train_quietly(trainer, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return trainer(*args, **kwargs)


def test_lecture_examples_as_simple_train():
    for text, vocab_size in [("aaabdaaabac", 259), ("abababab", 258), ("the cat in the hat", 259)]:
        assert train_bpe_from_iterator([text], vocab_size) == simple.train(text, vocab_size)


def test_too_small_corpus_warns_at_the_caller():
    with pytest.warns(UserWarning, match="asked for vocab_size 300, got 273") as caught:
        vocab, merges = train_bpe_from_iterator(["Hello world. Hello there, hello!"], 300)
    assert caught[0].filename == __file__
    assert len(merges) == 17 and len(vocab) == 273


def test_input_order_does_not_matter():
    texts = ["the quick brown fox", "jumps over", "the lazy dog", "quick quick", "dogs"]
    expected = train_quietly(train_bpe_from_iterator, texts, 300)
    for order in ([4, 3, 2, 1, 0], [2, 0, 4, 1, 3]):
        shuffled = [texts[i] for i in order]
        assert train_quietly(train_bpe_from_iterator, shuffled, 300) == expected


def test_file_errors(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"hello \xff world")
    with pytest.raises(ValueError, match="byte offset 6"):
        train_bpe(bad, 300)
    with pytest.raises(ValueError, match="missing.txt does not exist"):
        train_bpe(tmp_path / "missing.txt", 300)
    with pytest.raises(ValueError, match="too small"):  # checked before the file is read
        train_bpe(tmp_path / "missing.txt", 10)


def test_progress_callback_sees_both_stages():
    calls = []
    train_bpe_from_iterator(["aaabdaaabac"], 259, progress=lambda *call: calls.append(call))
    assert ("pretokenize", 11, 11) in calls
    assert [c for c in calls if c[0] == "merge"] == [
        ("merge", 1, 3),
        ("merge", 2, 3),
        ("merge", 3, 3),
    ]


# ---------------------------------------------------------------- fast == simple


text_alphabets = st.sampled_from(["ab", "aab ", "abc \n", "ab\n\n  ", "xyé😀 \n.'s", "a<|e|>b "])


@st.composite
def corpora(draw):
    alphabet = draw(text_alphabets)
    texts = draw(st.lists(st.text(alphabet, max_size=60), min_size=1, max_size=4))
    return texts


@settings(max_examples=300, deadline=None)
@given(
    corpora(),
    st.integers(0, 60),
    st.sampled_from(["gpt2", "gpt4", "nanochat", r"\S+|\s+", r"[^\n]+|\n"]),
    st.sampled_from([(), ("<|e|>",), ("<|e|>", "b")]),
)
def test_fast_equals_simple_on_random_corpora(texts, num_merges, pattern, special_tokens):
    vocab_size = 256 + num_merges + len(special_tokens)
    joined = "".join(texts)
    expected = train_quietly(simple.train, joined, vocab_size, special_tokens, pattern)
    got = train_quietly(train_bpe_from_iterator, [joined], vocab_size, special_tokens, pattern)
    assert got == expected
    tokens = [token for i, token in got[0].items() if i < 256 + len(got[1])]
    assert len(set(tokens)) == len(tokens)  # representable as tiktoken's {bytes: rank}


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.text("abcd", min_size=1, max_size=8), st.integers(1, 5000), max_size=12),
    st.integers(0, 40),
)
def test_fast_equals_simple_with_counts_of_every_size(word_counts, num_merges):
    """Counts from 1 to thousands: pairs wait in the buckets below the heap's floor and move up
    as it halves, and ties between a pair in the heap and one waiting must go the same way."""
    text = "\n".join(" ".join([word] * count) for word, count in word_counts.items())
    expected = train_quietly(simple.train, text, 256 + num_merges)
    assert train_quietly(train_bpe_from_iterator, [text], 256 + num_merges) == expected


@settings(max_examples=200, deadline=None)
@given(corpora(), st.integers(0, 60), st.sampled_from([0, 2, 4, 10**9]))
def test_numpy_and_loop_merges_equal_simple(texts, num_merges, flat_min_places):
    """FlatPretokens.merge by numpy for every merge (0), by the Python loop for every merge
    (10**9), or each by the one its number of places picks (2, 4)."""
    joined = "".join(texts)
    expected = train_quietly(simple.train, joined, 256 + num_merges)
    saved = train_module.FLAT_MIN_PLACES
    train_module.FLAT_MIN_PLACES = flat_min_places
    try:
        got = train_quietly(train_bpe_from_iterator, [joined], 256 + num_merges)
    finally:
        train_module.FLAT_MIN_PLACES = saved
    assert got == expected


@pytest.mark.parametrize("flat_min_places", [0, 256, 10**9], ids=["numpy", "both", "loop"])
def test_flat_merges_on_real_text(shakespeare, monkeypatch, flat_min_places):
    """Numpy (_merge_many), the Python loop (_merge_few) or both learn the same merges."""
    monkeypatch.setattr(train_module, "FLAT_MIN_PLACES", flat_min_places)
    counts = count_pretokens(shakespeare[:100_000], "gpt4")
    merges, tokens, _ = learn_merges(PretokenTable.from_counts(counts), 1000)
    monkeypatch.setattr(train_module, "FLAT_MIN_PLACES", 10**9)
    assert (merges, tokens) == learn_merges(PretokenTable.from_counts(counts), 1000)[:2]
    pair_counts = {}
    for pretoken, n in counts.items():
        simple.get_pair_counts(list(pretoken.encode()), pair_counts, n)
    flat = train_module.FlatPretokens(PretokenTable.from_counts(counts), 12)
    assert flat.pair_counts == {} and flat.admit(1)  # every pair waits, then all enter
    assert flat.pair_counts == {a << 12 | b: n for (a, b), n in pair_counts.items()}


def test_fast_equals_simple_on_real_text(shakespeare):
    text = shakespeare[:20_000]
    expected = simple.train(text, 256 + 120, [EOT])
    assert train_bpe_from_iterator([text], 256 + 120, [EOT]) == expected


def test_duplicate_bytes_are_never_made(shakespeare):
    """Merging until no pair is left, every token's bytes are new (tiktoken can hold them).

    The duplicate check (simple.train's rule) never fires here: we have found no
    corpus on which it does, but keep it, as it costs one set lookup per merge."""
    table = PretokenTable.from_counts(count_pretokens(shakespeare[:100_000]))
    merges, tokens, skipped = learn_merges(table, 10**9)
    assert len(set(tokens)) == len(tokens) == 256 + len(merges)
    assert skipped == 0  # no duplicate arises on this text (see the module docstring)


def test_trained_tokenizer_encodes_as_simple_encode(shakespeare):
    vocab, merges = train_bpe_from_iterator([shakespeare[:200_000]], 1000, [EOT])
    tok = Tokenizer(vocab, merges, special_tokens=[EOT])
    unseen = shakespeare[500_000:505_000]
    assert tok.encode(unseen) == simple.encode(unseen, merges, [EOT])
    assert tok.decode(tok.encode(unseen)) == unseen
    enc = tok.to_tiktoken()
    assert enc.encode(unseen) == tok.encode(unseen)


# ---------------------------------------------------------------- a file


def test_train_bpe_on_a_file_equals_in_memory(shakespeare_path, shakespeare):
    from_file = train_bpe(shakespeare_path, 2000, [EOT])
    assert from_file == train_bpe_from_iterator([shakespeare], 2000, [EOT])
    vocab, merges = from_file
    assert len(vocab) == 2000 and len(merges) == 2000 - 257
    # Pinned: Tiny Shakespeare's first merges under the GPT-2 pattern and the tie rule.
    assert merges[:5] == [(b" ", b"t"), (b"h", b"e"), (b" ", b"a"), (b"o", b"u"), (b" ", b"s")]


# ---------------------------------------------------------------- long pretokens


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("x" * 3001, id="one-run"),
        pytest.param("x" * 2048 + "\n", id="a-power-of-two"),
        pytest.param(
            "x" * 1500 + " " + "ab" * 700 + "\n" + "=" * 1201 + " " + "x" * 1100 + " é" * 600,
            id="several-runs",
        ),
        pytest.param("QmFzZTY" * 300 + " " + "QmFz" * 300, id="base64-like-letters"),
    ],
)
def test_long_pretokens_train_as_simple_train(text):
    """Runs like web text's base64 or "=====" lines: thousands of places in one pretoken, merged
    by numpy, must learn exactly simple.train's merges (a 200,000-character run is the same
    code, just longer)."""
    assert len(max(count_pretokens(text, "gpt2"), key=len)) > 1000
    expected = train_quietly(simple.train, text, 300)
    assert train_quietly(train_bpe_from_iterator, [text], 300) == expected
