"""bpe/simple.py: the lecture notes' worked examples, the rule, and a whole BPE on Tiny
Shakespeare."""

import random
import warnings

import pytest
import regex

from bpe import EOT, Tokenizer, simple, train_bpe_from_iterator
from bpe.patterns import GPT2_PATTERN
from bpe.simple import (
    count_pretokens,
    decode,
    encode,
    encode_pretoken,
    get_pair_counts,
    merge_pair,
    split_on_special_tokens,
    train,
)


def replay_merges(text, merges):
    """minbpe's way to encode: apply every merge in training order with merge_pair, per pretoken."""
    ids_of = {bytes([b]): b for b in range(256)}
    for i, (a, b) in enumerate(merges):
        ids_of[a + b] = 256 + i
    ids = []
    for pretoken in regex.findall(GPT2_PATTERN, text):
        pretoken_ids = list(pretoken.encode("utf-8"))
        for i, (a, b) in enumerate(merges):
            pretoken_ids = merge_pair(pretoken_ids, (ids_of[a], ids_of[b]), 256 + i)
        ids.extend(pretoken_ids)
    return ids


# ---------------------------------------------------------------- the two functions BPE is made of


def test_get_pair_counts_and_merge_pair_examples():
    assert get_pair_counts([1, 2, 3, 1, 2]) == {(1, 2): 2, (2, 3): 1, (3, 1): 1}
    assert get_pair_counts([1, 2], {(1, 2): 1}, weight=5) == {(1, 2): 6}
    assert merge_pair([1, 2, 3, 1, 2], (1, 2), 4) == [4, 3, 4]
    assert merge_pair([1, 1, 1], (1, 1), 2) == [2, 1]  # left to right, never overlapping


def test_segments_and_pretokens():
    assert split_on_special_tokens(f"a{EOT}b", [EOT]) == ["a", EOT, "b"]
    assert split_on_special_tokens("ab", []) == ["ab"]
    # A special token that is a prefix of a longer one: the longer wins ("longest first").
    assert split_on_special_tokens("x<a><ab>y", ["<a>", "<a"]) == ["x", "<a>", "", "<a", "b>y"]
    assert split_on_special_tokens("x<ab>y", ["<a", "<ab>"]) == ["x", "<ab>", "y"]
    assert count_pretokens("the cat the", GPT2_PATTERN) == {"the": 1, " cat": 1, " the": 1}
    assert count_pretokens(f"a b{EOT}b", GPT2_PATTERN, [EOT]) == {"a": 1, " b": 1, "b": 1}


# ---------------------------------------------------------------- training: worked examples


def test_lecture_aaabdaaabac():
    vocab, merges = train("aaabdaaabac", 259)
    assert merges == [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b")]
    assert vocab[256] == b"aa" and vocab[257] == b"aaa" and vocab[258] == b"aaab"
    assert encode("aaabdaaabac", merges) == [258, 100, 258, 97, 99]
    assert replay_merges("aaabdaaabac", merges) == [258, 100, 258, 97, 99]
    assert decode([258, 100, 258, 97, 99], vocab) == "aaabdaaabac"


def test_lecture_abababab():
    vocab, merges = train("abababab", 258)
    assert merges == [(b"a", b"b"), (b"ab", b"ab")]
    assert encode("abababab", merges) == replay_merges("abababab", merges) == [257, 257]


def test_lecture_the_cat_in_the_hat():
    # Pretokens: "the", " cat", " in", " the", " hat". (t,h), (h,e) and (a,t) all occur
    # twice; the tie goes to the greatest bytes, "t" > "h" > "a", so "th" comes first.
    # Then (th,e) and (a,t) tie at 2 and "th" > "a": "the". The notes' 256 = "th",
    # 257 = "the" come out exactly; " the" is not a token yet (" " + "the" occurs once).
    vocab, merges = train("the cat in the hat", 259)
    assert merges == [(b"t", b"h"), (b"th", b"e"), (b"a", b"t")]
    assert vocab[256] == b"th" and vocab[257] == b"the"


def test_lecture_low_lower_lowest_widest_learns_low_and_est():
    text = " ".join(["low"] * 5 + ["lower"] * 2 + ["lowest"] * 3 + ["widest"] * 4)
    vocab, merges = train(text, 256 + 6)
    assert merges == [
        (b"o", b"w"),
        (b"l", b"ow"),
        (b" ", b"low"),
        (b"s", b"t"),
        (b"e", b"st"),
        (b"w", b"i"),
    ]
    assert [vocab[i] for i in encode("lowest", merges)] == [b"low", b"est"]
    assert [vocab[i] for i in encode(" lowest", merges)] == [b" low", b"est"]


def test_too_small_corpus_stops_early_and_unseen_capital_round_trips():
    text = "Hello world. Hello there, hello!"
    with pytest.warns(UserWarning, match="asked for vocab_size 300, got 273"):
        vocab, merges = train(text, 300)
    assert len(merges) == 17 and len(vocab) == 273 and sorted(vocab) == list(range(273))
    # "P" never occurs in training: byte-level BPE still has its byte, nothing is lost
    # (the notes' character-level tokenizer turned it into <unk> and printed "lease").
    assert decode(encode("Please, only this token.", merges), vocab) == "Please, only this token."


def test_ties_go_to_the_greatest_bytes():
    # Pretokens "ab", " cd", " ef": every pair occurs once; the greatest is (e, f).
    assert train("ab cd ef", 257)[1] == [(b"e", b"f")]
    # Same left token: the right one decides.
    assert train("xa xc xb", 257, pattern=r"\S+|\s+")[1] == [(b"x", b"c")]
    # Bytes, not characters: "\xff" is b"\xc3\xbf", and (\xc3, \xbf) beats (x, c).
    assert train("xc \xff", 257, pattern=r"\S+|\s+")[1] == [(b"\xc3", b"\xbf")]
    # A prefix is smaller than its extensions: after (a, a), the pairs (aa, b) and (a, z)
    # both occur once, and b"aa" > b"a" decides although b"z" > b"b".
    assert train("aa aa aa aab az", 258, pattern=r"\S+|\s+")[1] == [(b"a", b"a"), (b"aa", b"b")]


def test_input_order_does_not_matter():
    lines = ["the quick brown fox", "jumps over", "the lazy dog", "quick quick", "dogs"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = train("\n".join(lines), 300)
        for seed in range(5):
            random.Random(seed).shuffle(lines)
            assert train("\n".join(lines), 300) == expected


def test_special_tokens_are_never_merged_across_and_get_the_last_ids():
    text = f"ab{EOT}ab{EOT}ab<|pad|>ba"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vocab, merges = train(text, 256 + 5 + 2, [EOT, "<|pad|>"])
    assert vocab[len(vocab) - 2] == EOT.encode() and vocab[len(vocab) - 1] == b"<|pad|>"
    assert list(vocab) == list(range(256 + len(merges) + 2))
    assert all(vocab[b] == bytes([b]) for b in range(256))
    for a, b in merges:  # nothing of a special token, nothing across one
        assert b"<" not in a + b and b"|" not in a + b and b">" not in a + b
        assert (a + b) not in (b"bab", b"ba<", b">ab")
    ids = encode(text, merges, [EOT, "<|pad|>"])
    assert ids.count(len(vocab) - 2) == 2 and ids.count(len(vocab) - 1) == 1
    assert decode(ids, vocab) == text


# ---------------------------------------------------------------- encoding one pretoken

HELLO_RANKS = {bytes([b]): b for b in range(256)} | {b"he": 256, b"ll": 257, b"hell": 258}


def test_encode_pretoken_worked_example():
    # The docstring's example: h e l l o -> he l l o -> he ll o -> hell o. More cases (lowest
    # rank first, a pretoken that is a token) are in test_bpe_tokenizer.py, fast == simple.
    assert encode_pretoken(b"hello", HELLO_RANKS) == [258, ord("o")]


# ---------------------------------------------------------------- the whole BPE on real text


def test_simple_alone_trains_encodes_and_decodes_tiny_shakespeare(shakespeare):
    """The acceptance test of the simple module: a learner's BPE on a real corpus, and the
    fast trainer and Tokenizer give exactly the same merges and ids."""
    vocab, merges = simple.train(shakespeare, 256 + 24 + 1, [EOT])
    assert merges[:5] == [(b" ", b"t"), (b"h", b"e"), (b" ", b"a"), (b"o", b"u"), (b" ", b"s")]
    text = shakespeare + EOT
    ids = simple.encode(text, merges, [EOT])
    assert simple.decode(ids, vocab) == text
    assert ids[-1] == 256 + 24 and len(ids) < len(text) * 0.8
    assert train_bpe_from_iterator([shakespeare], 256 + 24 + 1, [EOT]) == (vocab, merges)
    assert Tokenizer(vocab, merges, special_tokens=[EOT]).encode(text) == ids
    start = shakespeare[:20_000]
    assert simple.encode(start, merges) == replay_merges(start, merges)
