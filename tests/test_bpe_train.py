"""bpe/train.py: the lecture notes' worked examples, the exact rule, fast == simple, files."""

import random
import warnings
from collections import Counter

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe import Tokenizer
from bpe import train as train_module
from bpe.core import merge_pair
from bpe.patterns import resolve_pattern
from bpe.train import (
    chunk_bounds,
    count_pretokens,
    count_pretokens_parallel,
    learn_merges,
    train_bpe,
    train_bpe_from_iterator,
    train_bpe_simple,
)
from prep.downloads import TINY_SHAKESPEARE, fetch

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def shakespeare_path(tmp_path_factory):
    return fetch(TINY_SHAKESPEARE, tmp_path_factory.mktemp("ts") / "input.txt")


@pytest.fixture(scope="module")
def shakespeare(shakespeare_path):
    return shakespeare_path.read_text(encoding="utf-8")


def encode_with_merges(text, merges, pattern="gpt2"):
    """Apply the merges in training order with core.merge_pair, pre-token by pre-token."""
    ids_of = {bytes([b]): b for b in range(256)}
    for i, (a, b) in enumerate(merges):
        ids_of[a + b] = 256 + i
    ids = []
    for chunk in regex.findall(resolve_pattern(pattern), text):
        chunk_ids = list(chunk.encode("utf-8"))
        for i, (a, b) in enumerate(merges):
            chunk_ids = merge_pair(chunk_ids, (ids_of[a], ids_of[b]), 256 + i)
        ids.extend(chunk_ids)
    return ids


def train_quietly(trainer, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return trainer(*args, **kwargs)


# ---------------------------------------------------------------- worked examples


def test_lecture_aaabdaaabac():
    vocab, merges = train_bpe_simple("aaabdaaabac", 259)
    assert merges == [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b")]
    assert vocab[256] == b"aa" and vocab[257] == b"aaa" and vocab[258] == b"aaab"
    assert encode_with_merges("aaabdaaabac", merges) == [258, 100, 258, 97, 99]
    assert Tokenizer(vocab, merges).encode("aaabdaaabac") == [258, 100, 258, 97, 99]
    assert train_bpe_from_iterator(["aaabdaaabac"], 259) == (vocab, merges)


def test_lecture_abababab():
    vocab, merges = train_bpe_from_iterator(["abababab"], 258)
    assert merges == [(b"a", b"b"), (b"ab", b"ab")]
    assert encode_with_merges("abababab", merges) == [257, 257]


def test_lecture_the_cat_in_the_hat():
    # Pre-tokens: "the", " cat", " in", " the", " hat". (t,h), (h,e) and (a,t) all occur
    # twice; the tie goes to the greatest bytes, "t" > "h" > "a", so "th" comes first.
    # Then (th,e) and (a,t) tie at 2 and "th" > "a": "the". The notes' 256 = "th",
    # 257 = "the" come out exactly; " the" is not a token yet (" " + "the" occurs once).
    vocab, merges = train_bpe_from_iterator(["the cat in the hat"], 259)
    assert merges == [(b"t", b"h"), (b"th", b"e"), (b"a", b"t")]
    assert vocab[256] == b"th" and vocab[257] == b"the"


def test_lecture_low_lower_lowest_widest_learns_low_and_est():
    text = " ".join(["low"] * 5 + ["lower"] * 2 + ["lowest"] * 3 + ["widest"] * 4)
    vocab, merges = train_bpe_from_iterator([text], 256 + 6)
    assert merges == [
        (b"o", b"w"),
        (b"l", b"ow"),
        (b" ", b"low"),
        (b"s", b"t"),
        (b"e", b"st"),
        (b"w", b"i"),
    ]
    assert {b"low", b"est"} <= set(vocab.values())
    tok = Tokenizer(vocab, merges)
    assert [vocab[i] for i in tok.encode("lowest")] == [b"low", b"est"]
    assert [vocab[i] for i in tok.encode(" lowest")] == [b" low", b"est"]


def test_too_small_corpus_stops_early_and_unseen_capital_round_trips():
    text = "Hello world. Hello there, hello!"
    with pytest.warns(UserWarning, match="asked for vocab_size 300, got 273"):
        vocab, merges = train_bpe_from_iterator([text], 300)
    assert len(merges) == 17 and len(vocab) == 273 and sorted(vocab) == list(range(273))
    with pytest.warns(UserWarning, match="got 273"):
        assert train_bpe_simple(text, 300) == (vocab, merges)
    tok = Tokenizer(vocab, merges)
    # "P" never occurs in training: byte-level BPE still has its byte, nothing is lost
    # (the notes' character-level tokenizer turned it into <unk> and printed "lease").
    assert tok.decode(tok.encode("Please, only this token.")) == "Please, only this token."


def test_ties_go_to_the_greatest_bytes():
    # Pre-tokens "ab", " cd", " ef": every pair occurs once; the greatest is (e, f).
    _, merges = train_bpe_from_iterator(["ab cd ef"], 257)
    assert merges == [(b"e", b"f")]
    # Same left token: the right one decides.
    _, merges = train_bpe_from_iterator(["xa xc xb"], 257, pattern=r"\S+|\s+")
    assert merges == [(b"x", b"c")]
    # Bytes, not characters: "\xff" is b"\xc3\xbf", and (\xc3, \xbf) beats (x, c).
    _, merges = train_bpe_from_iterator(["xc \xff"], 257, pattern=r"\S+|\s+")
    assert merges == [(b"\xc3", b"\xbf")]
    # A prefix is smaller than its extensions: after (a, a), the pairs (aa, b) and (a, z)
    # both occur once, and b"aa" > b"a" decides although b"z" > b"b".
    _, merges = train_bpe_from_iterator(["aa aa aa aab az"], 258, pattern=r"\S+|\s+")
    assert merges == [(b"a", b"a"), (b"aa", b"b")]


def test_input_order_does_not_matter():
    texts = ["the quick brown fox", "jumps over", "the lazy dog", "quick quick", "dogs"]
    expected = train_quietly(train_bpe_from_iterator, texts, 300)
    for seed in range(5):
        shuffled = texts[:]
        random.Random(seed).shuffle(shuffled)
        assert train_quietly(train_bpe_from_iterator, shuffled, 300) == expected


def test_special_tokens_are_never_merged_across_and_get_the_last_ids():
    text = f"ab{EOT}ab{EOT}ab<|pad|>ba"
    vocab, merges = train_quietly(train_bpe_from_iterator, [text], 256 + 5 + 2, [EOT, "<|pad|>"])
    assert vocab[len(vocab) - 2] == EOT.encode() and vocab[len(vocab) - 1] == b"<|pad|>"
    assert len(vocab) == 256 + len(merges) + 2
    for a, b in merges:  # nothing of a special token, nothing across one
        assert b"<" not in a + b and b"|" not in a + b and b">" not in a + b
        assert (a + b) not in (b"bab", b"ba<", b">ab")
    # A special token that is a prefix of a longer one: the longer wins ("longest first").
    assert train_module.split_on_special_tokens("x<a><ab>y", ["<a>", "<a"]) == ["x", "", "b>y"]
    assert train_module.split_on_special_tokens("x<ab>y", ["<a", "<ab>"]) == ["x", "y"]


def test_vocab_layout_is_gpt2s():
    vocab, merges = train_bpe_from_iterator(["hello hello hello world"], 256 + 4 + 1, [EOT])
    assert list(vocab) == list(range(len(vocab)))
    assert all(vocab[b] == bytes([b]) for b in range(256))
    for i, (a, b) in enumerate(merges):
        assert vocab[256 + i] == a + b
    assert vocab[len(vocab) - 1] == EOT.encode()


def test_bad_arguments():
    with pytest.raises(ValueError, match="too small"):
        train_bpe_from_iterator(["abc"], 256, special_tokens=[EOT])
    with pytest.raises(ValueError, match="too small"):
        train_bpe_simple("abc", 100)
    with pytest.raises(ValueError, match="distinct"):
        train_bpe_from_iterator(["abc"], 300, special_tokens=[EOT, EOT])
    with pytest.raises(ValueError, match="non-empty"):
        train_bpe_from_iterator(["abc"], 300, special_tokens=[""])
    with pytest.raises(TypeError, match="list of strings"):
        train_bpe_from_iterator(["abc"], 300, special_tokens=EOT)
    with pytest.raises(ValueError, match="neither"):
        train_bpe_from_iterator(["abc"], 300, pattern="(unclosed")


def test_file_errors(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"hello \xff world")
    with pytest.raises(ValueError, match="byte offset 6"):
        train_bpe(bad, 300)
    with pytest.raises(FileNotFoundError):
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
    st.sampled_from(["gpt2", "gpt4", r"\S+|\s+", r"[^\n]+|\n"]),
    st.sampled_from([(), ("<|e|>",), ("<|e|>", "b")]),
)
def test_fast_equals_simple_on_random_corpora(texts, num_merges, pattern, special_tokens):
    vocab_size = 256 + num_merges + len(special_tokens)
    joined = "".join(texts)
    expected = train_quietly(train_bpe_simple, joined, vocab_size, special_tokens, pattern)
    got = train_quietly(train_bpe_from_iterator, [joined], vocab_size, special_tokens, pattern)
    assert got == expected
    tokens = [token for i, token in got[0].items() if i < 256 + len(got[1])]
    assert len(set(tokens)) == len(tokens)  # representable as tiktoken's {bytes: rank}


def test_fast_equals_simple_on_real_text(shakespeare):
    text = shakespeare[:20_000]
    expected = train_bpe_simple(text, 256 + 120, [EOT])
    assert train_bpe_from_iterator([text], 256 + 120, [EOT]) == expected


def test_duplicate_bytes_are_never_made(shakespeare):
    """Merging until no pair is left, every token's bytes are new (tiktoken can hold them).

    The duplicate check (module docstring, rule 4) never fires here: we have found no
    corpus on which it does, but keep it, as it costs one set lookup per merge."""
    word_counts = {w.encode(): n for w, n in count_pretokens(shakespeare[:100_000]).items()}
    merges, tokens, skipped = learn_merges(word_counts, 10**9)
    assert len(set(tokens)) == len(tokens) == 256 + len(merges)
    assert skipped == 0  # no duplicate arises on this text (see the module docstring)


def test_trained_tokenizer_encodes_like_its_merges_in_order(shakespeare):
    vocab, merges = train_bpe_from_iterator([shakespeare[:200_000]], 1000, [EOT])
    tok = Tokenizer(vocab, merges, special_tokens=[EOT])
    unseen = shakespeare[500_000:505_000]
    assert tok.encode(unseen) == encode_with_merges(unseen, merges)
    assert tok.decode(tok.encode(unseen)) == unseen
    enc = tok.to_tiktoken()
    assert enc.encode(unseen) == tok.encode(unseen)


# ---------------------------------------------------------------- files and workers


@settings(max_examples=200, deadline=None)
@given(
    st.text(st.sampled_from("ab .!\n\r\t\u00a0é"), max_size=200),
    st.integers(1, 30),
    st.sampled_from(["gpt2", "gpt4", r"\S+|\s+"]),
    st.sampled_from([(), ("<|e|>",)]),
)
def test_chunks_pretokenize_like_the_whole_text(body, target, pattern, special_tokens):
    text = body.replace("!", "<|e|>") if special_tokens else body
    bounds = chunk_bounds(text, target, pattern, special_tokens)
    assert bounds[0] == 0 and bounds[-1] == len(text) and bounds == sorted(bounds)
    counts = Counter()
    for start, end in zip(bounds, bounds[1:]):
        counts.update(count_pretokens(text[start:end], pattern, special_tokens))
    assert counts == count_pretokens(text, pattern, special_tokens)


def test_parallel_pretokenization_equals_one_process(shakespeare, monkeypatch):
    monkeypatch.setattr(train_module, "PARALLEL_MIN_CHARS", 0)  # use workers even for this
    text = shakespeare[:300_000] + EOT + shakespeare[300_000:400_000]
    expected = count_pretokens(text, "gpt2", [EOT])
    assert count_pretokens_parallel(text, "gpt2", [EOT], num_workers=2) == expected
    assert count_pretokens_parallel(text, "gpt4", [EOT], num_workers=3) == count_pretokens(
        text, "gpt4", [EOT]
    )


def test_train_bpe_on_a_file_equals_in_memory(shakespeare_path, shakespeare, monkeypatch):
    monkeypatch.setattr(train_module, "PARALLEL_MIN_CHARS", 0)
    from_file = train_bpe(shakespeare_path, 2000, [EOT], num_workers=2)
    assert from_file == train_bpe_from_iterator([shakespeare], 2000, [EOT])
    vocab, merges = from_file
    assert len(vocab) == 2000 and len(merges) == 2000 - 257
    # Pinned: Tiny Shakespeare's first merges under the GPT-2 pattern and the tie rule.
    assert merges[:5] == [(b" ", b"t"), (b"h", b"e"), (b" ", b"a"), (b"o", b"u"), (b" ", b"s")]
