"""The Tokenizer on small vocabularies: hand-made merges and one trained on Tiny Shakespeare.

GPT-2's own files and exact equality with tiktoken are in test_bpe_gpt2.py.
"""

import re

import pytest
from conftest import hand_made_tokenizer
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe
from bpe import EOT, Tokenizer, simple
from bpe.tokenizer import encode_long_pretoken, encode_pretoken


def byte_vocab():
    return {b: bytes([b]) for b in range(256)}


# ---------------------------------------------------------------- BPE on one pretoken

HELLO_RANKS = {bytes([b]): b for b in range(256)} | {b"he": 256, b"ll": 257, b"hell": 258}
ABC_RANKS = {bytes([b]): b for b in range(256)} | {b"bc": 256, b"ab": 257, b"aa": 258}
ABCD_RANKS = {bytes([b]): b for b in range(256)} | {
    b"bc": 256,
    b"ab": 257,
    b"cd": 258,
    b"abcd": 259,
}


@pytest.mark.parametrize(
    "pretoken, ranks, expected",
    [
        pytest.param(b"hello", HELLO_RANKS, [258, ord("o")], id="worked-example"),
        pytest.param(b"abc", ABC_RANKS, [ord("a"), 256], id="lowest-rank-first"),
        pytest.param(b"aaa", ABC_RANKS, [258, ord("a")], id="leftmost-of-equal-ranks"),
        pytest.param(b"abcd", ABCD_RANKS, [259], id="a-pretoken-that-is-a-token"),
        pytest.param(b"abcdx", ABCD_RANKS, [97, 256, 100, 120], id="merged-step-by-step"),
        pytest.param(b"", HELLO_RANKS, [], id="empty"),
    ],
)
def test_fast_encode_pretoken_gives_the_simple_examples(pretoken, ranks, expected):
    assert encode_pretoken(pretoken, ranks) == simple.encode_pretoken(pretoken, ranks) == expected


@settings(max_examples=300, deadline=None)
@given(pretoken=st.binary(max_size=40))
def test_fast_encode_pretoken_equals_simple_on_random_bytes(trained, pretoken):
    ranks = trained._ranks
    assert encode_pretoken(pretoken, ranks) == simple.encode_pretoken(pretoken, ranks)


TWO_LETTER_MERGES = [
    (b"a", b"a"),
    (b"a", b"b"),
    (b"aa", b"a"),
    (b"b", b"b"),
    (b"ab", b"aa"),
    (b"bb", b"a"),
    (b"aaa", b"aaa"),
]


@settings(max_examples=300, deadline=None)
@given(pretoken=st.text(alphabet="ab", max_size=30).map(str.encode))
def test_fast_encode_pretoken_equals_simple_on_a_two_letter_vocabulary(pretoken):
    # Many overlapping tokens of a, b: the hardest case for the neighbour bookkeeping.
    tok = hand_made_tokenizer(TWO_LETTER_MERGES)
    assert encode_pretoken(pretoken, tok._ranks) == simple.encode_pretoken(pretoken, tok._ranks)


@settings(max_examples=300, deadline=None)
@given(
    pretoken=st.one_of(st.binary(max_size=80), st.text(alphabet="ab", max_size=120).map(str.encode))
)
def test_heap_encode_of_long_pretokens_equals_simple(trained, pretoken):
    """encode_long_pretoken (a heap, n log n) is called directly: any length must agree."""
    for ranks in (trained._ranks, hand_made_tokenizer(TWO_LETTER_MERGES)._ranks):
        assert encode_long_pretoken(pretoken, ranks) == simple.encode_pretoken(pretoken, ranks)


def test_heap_encode_takes_a_pretoken_that_is_a_token_whole():
    ranks = hand_made_tokenizer(TWO_LETTER_MERGES)._ranks
    assert encode_long_pretoken(b"aaaaaa", ranks) == simple.encode_pretoken(b"aaaaaa", ranks)
    assert encode_long_pretoken(b"", ranks) == []


def test_one_huge_pretoken_encodes_as_tiktoken():
    """200,000 "x" is one pretoken: the heap path takes about a second (the scan took minutes)."""
    vocab, merges = bpe.train_bpe_from_iterator(["x" * 4096], 256 + 12)
    tok = Tokenizer(vocab, merges)
    text = "x" * 200_000 + "y" + "x" * 3
    ids = tok.encode(text)
    assert ids == tok.to_tiktoken().encode(text)
    # 48 tokens of 4,096 x; 3,392 x as 2,048 + 1,024 + 256 + 64; y; xxx as xx + x
    assert len(ids) == 48 + 4 + 1 + 2
    assert tok.decode(ids) == text


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(st.one_of(st.text(max_size=30), st.just(EOT)), max_size=6))
def test_encode_equals_simple_encode_on_random_text(trained, parts):
    text = "".join(parts)
    assert trained.encode(text) == simple.encode(text, trained.merges, [EOT])
    assert trained.encode_ordinary(text) == simple.encode(text, trained.merges)


# ---------------------------------------------------------------- encode and decode


def test_hand_made_merges_encode_as_expected():
    tok = hand_made_tokenizer([(b"h", b"e"), (b"l", b"l"), (b"he", b"ll"), (b" ", b"w")])
    assert tok.encode("hello") == [258, ord("o")]
    assert tok.encode("hello world") == [258, ord("o"), 259, ord("o"), ord("r"), ord("l"), ord("d")]
    assert tok.decode([258, ord("o"), 259]) == "hello w"


def test_trained_round_trips_and_compresses(trained, shakespeare):
    text = shakespeare[200_000:260_000]  # text it did not see
    ids = trained.encode(text)
    assert trained.decode(ids) == text
    assert len(ids) < len(text.encode("utf-8")) / 2


def test_a_capital_never_seen_still_round_trips(trained, shakespeare):
    # The book's "lease" accident: its tokenizer never saw "P", turned it into <unk>, and
    # decoding dropped it. Byte-level BPE falls back to single bytes instead: nothing is lost,
    # even for characters the training text never had.
    assert "Ω" not in shakespeare[:200_000] and "😀" not in shakespeare[:200_000]
    for text in ["Please, <mask> only this token.", "Ωμέγα 😀", "PLEASE"]:
        assert trained.decode(trained.encode(text)) == text
    assert trained.encode("😀") == list("😀".encode())


def test_invalid_utf8_decodes_to_replacement_characters():
    tok = hand_made_tokenizer([])
    # half of "中" (e4 b8 ad) and a lone continuation byte
    assert tok.decode([0xE4, 0xB8]) == "\ufffd"
    assert tok.decode([0x80, ord("a")]) == "\ufffda"
    assert tok.decode_bytes([0xE4, 0xB8]) == b"\xe4\xb8"


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.integers(0, 999), max_size=50))
def test_decode_of_any_valid_ids_never_raises(trained, ids):
    data = b"".join(trained.vocab[i] for i in ids)
    assert trained.decode_bytes(ids) == data
    assert trained.decode(ids) == data.decode("utf-8", errors="replace")


@pytest.mark.parametrize("bad_id", [1000, -1, 10**9])
def test_decode_names_an_id_outside_the_vocabulary(trained, bad_id):
    with pytest.raises(
        ValueError, match=rf"token id {bad_id} is not in this tokenizer's vocabulary"
    ):
        trained.decode([1, 2, bad_id])


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300))
def test_round_trip_on_arbitrary_text(trained, text):
    assert trained.decode(trained.encode(text)) == text


def test_a_full_cache_is_emptied_and_encoding_goes_on(shakespeare):
    vocab, merges = bpe.train_bpe_from_iterator([shakespeare[:20_000]], 300)
    small, large = Tokenizer(vocab, merges), Tokenizer(vocab, merges)
    small.cache_limit = 50
    for start in range(0, 40_000, 10_000):
        text = shakespeare[start : start + 10_000]
        assert small.encode(text) == large.encode(text)
        assert len(small._cache) <= max(50, len(set(small._regex.findall(text))))


def test_lone_surrogates_are_repaired_as_tiktoken_does(trained):
    assert trained.decode(trained.encode("a\ud800b")) == "a\ufffdb"


# ---------------------------------------------------------------- special tokens


def test_special_tokens_are_whole_and_never_split(trained):
    assert trained.eot_id == 999 and trained.special_tokens == {EOT: 999}
    ids = trained.encode(f"First Citizen:{EOT}Speak")
    assert ids.count(999) == 1
    assert ids[ids.index(999) + 1 :] == trained.encode_ordinary("Speak")
    assert trained.decode(ids) == f"First Citizen:{EOT}Speak"


def test_encode_ordinary_treats_special_text_as_plain(trained):
    ids = trained.encode_ordinary(f"a{EOT}b")
    assert 999 not in ids and trained.decode(ids) == f"a{EOT}b"


def test_overlapping_special_tokens_longest_first():
    tok = hand_made_tokenizer([], special_tokens=[EOT, EOT + EOT, "<|"])
    eot, double, bar = 256, 257, 258
    assert tok.encode(EOT + EOT + EOT) == [double, eot]
    assert tok.encode("<|<|endoftext|>") == [bar, eot]
    assert tok.encode("x<|endoftext") == [ord("x"), bar] + list(b"endoftext")


def test_text_next_to_a_special_token_is_encoded_as_if_the_text_ended_there():
    # tiktoken's behaviour: "  " before a special token is a trailing whitespace run
    tok = hand_made_tokenizer([(b" ", b" ")], special_tokens=[EOT])
    assert tok.encode("a  " + EOT) == [ord("a"), 256, 257]
    assert tok.encode("a  b") == [ord("a"), ord(" "), ord(" "), ord("b")]


def test_special_tokens_given_as_dict_list_or_taken_from_the_vocab():
    vocab = byte_vocab() | {256: b"ab", 257: EOT.encode()}
    merges = [(b"a", b"b")]
    as_dict = Tokenizer(vocab, merges, {EOT: 257})
    as_list = Tokenizer(vocab, merges, [EOT])
    inferred = Tokenizer(vocab, merges)
    assert as_dict.special_tokens == as_list.special_tokens == inferred.special_tokens == {EOT: 257}
    appended = Tokenizer(byte_vocab() | {256: b"ab"}, merges, [EOT, "<|pad|>"])
    assert appended.special_tokens == {EOT: 257, "<|pad|>": 258} and appended.vocab_size == 259
    assert hand_made_tokenizer([]).eot_id is None


# ---------------------------------------------------------------- constructor checks


@pytest.mark.parametrize(
    "vocab_change, merges, specials, message",
    [
        ({256: b"xy"}, [(b"a", b"b")], None, r"vocab id 256 is b'xy' but merge 0 makes"),
        ({}, [(b"a", b"b")], None, r"vocab has no id 256"),
        (
            {256: b"ab", 257: b"ab"},
            [(b"a", b"b"), (b"a", b"b")],
            None,
            r"vocab ids 256 and 257 are both b'ab'",
        ),
        ({7: b"a"}, [], None, r"vocab ids 7 and 97 are both b'a'|vocab ids 97 and"),
        ({7: b"ab"}, [], None, r"ids 0..255 must be single bytes"),
        ({256: b"abc"}, [(b"a", b"bc")], None, r"uses b'bc', which is not a token made before it"),
        ({256: b"ab"}, [(b"a", b"b")], {EOT: 255}, r"collides with the 257 byte and merge ids"),
        ({256: b"ab"}, [(b"a", b"b")], {EOT: 258}, r"must follow the merges without gaps"),
        ({256: b"ab"}, [(b"a", b"b")], {EOT: 257, "<|x|>": 257}, r"both have id 257"),
        (
            {256: b"ab", 257: b"zz"},
            [(b"a", b"b")],
            {EOT: 258},
            r"vocab id 257 \(b'zz'\) is neither a merge",
        ),
    ],
)
def test_constructor_refuses_inconsistent_tables(vocab_change, merges, specials, message):
    vocab = byte_vocab() | vocab_change
    with pytest.raises(ValueError, match=message):
        Tokenizer(vocab, merges, specials)


# ---------------------------------------------------------------- streaming

STREAM_TEXT = st.lists(
    st.sampled_from(
        [
            " ",
            " ",
            "\n",
            "\r\n",
            "\t",
            "a",
            "b",
            "1",
            "'",
            "s",
            "ll",
            "!",
            ".",
            "é",
            "中",
            "😀",
            "\u00a0",
            EOT,
            "<|",
            "endoftext|>",
        ]
    ),
    max_size=80,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    text=STREAM_TEXT,
    cuts=st.lists(st.integers(0, 200), max_size=8),
    buffer_chars=st.sampled_from([1, 3, 10_000]),
)
def test_encode_iterable_equals_encode_wherever_the_text_is_cut(trained, text, cuts, buffer_chars):
    cuts = sorted({min(c, len(text)) for c in cuts})
    parts = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
    assert list(trained.encode_iterable(parts, buffer_chars=buffer_chars)) == trained.encode(text)


@settings(max_examples=200, deadline=None)
@given(
    text=STREAM_TEXT,
    cuts=st.lists(st.integers(0, 200), max_size=8),
    pattern=st.sampled_from(["gpt2", "gpt4", "nanochat"]),
    specials=st.sampled_from([[], [EOT, EOT + EOT, "<|"]]),
)
def test_encode_iterable_with_each_pattern_with_and_without_specials(text, cuts, pattern, specials):
    tok = hand_made_tokenizer(
        [(b" ", b" "), (b"\r", b"\n"), (b"'", b"l"), (b"'l", b"l")], specials, pattern
    )
    cuts = sorted({min(c, len(text)) for c in cuts})
    parts = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
    assert list(tok.encode_iterable(parts, buffer_chars=1)) == tok.encode(text)


@pytest.mark.parametrize(
    "text, cut",
    [
        ("we'll go", 4),  # a contraction cut in two: "'l" + "l"
        ("a   \n  b", 3),  # a whitespace run cut in the middle
        ("a  ", 2),  # trailing whitespace, then the end
        ("x<|endoftext|>y", 5),  # a special token cut in two
        ("x" + EOT + EOT, 14),  # a special token that could still grow into a longer one
    ],
)
@pytest.mark.parametrize("specials", [[], [EOT, EOT + EOT]])
def test_encode_iterable_known_hard_cuts(text, cut, specials):
    tok = hand_made_tokenizer([(b"'", b"l"), (b"'l", b"l"), (b" ", b" ")], specials)
    # the text after the cut is long enough for the start to be settled and encoded early
    parts = [text[:cut], text[cut:], " and then a good deal more text to come after it"]
    assert list(tok.encode_iterable(parts, buffer_chars=1)) == tok.encode("".join(parts))


def test_encode_iterable_over_an_open_file(trained, shakespeare, tmp_path):
    path = tmp_path / "text.txt"
    path.write_text(shakespeare[:100_000].replace("\n\n", f"\n{EOT}\n"), encoding="utf-8")
    with open(path, encoding="utf-8") as file:
        streamed = list(trained.encode_iterable(file, buffer_chars=1000))
    assert streamed == trained.encode(path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------- to_tiktoken


def test_to_tiktoken_gives_the_same_ids(trained, shakespeare):
    enc = trained.to_tiktoken()
    text = shakespeare[200_000:300_000] + EOT + "  Ünïcode 中文 😀 \r\n\t "
    assert enc.encode(text, allowed_special="all") == trained.encode(text)
    assert enc.encode_ordinary(text) == trained.encode_ordinary(text)
    assert enc.n_vocab == trained.vocab_size == 1000
    assert enc.decode(trained.encode(text)) == text


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=200))
def test_to_tiktoken_equal_on_random_text(trained, text):
    assert trained.to_tiktoken().encode_ordinary(text) == trained.encode_ordinary(text)


def test_to_tiktoken_refuses_a_special_token_that_starts_another():
    # encode takes the longest; tiktoken's order among its special tokens is unspecified.
    tok = hand_made_tokenizer([], special_tokens=["<|a|>", "<|a|>b"])
    assert tok.encode("<|a|>b") == [257]
    with pytest.raises(ValueError, match=r"special token '<\|a\|>' is a prefix of '<\|a\|>b'"):
        tok.to_tiktoken()


SPECIAL_PARTS = ["<|", "a", "b", "|>", "x", " "]


@settings(max_examples=100, deadline=None)
@given(
    specials=st.lists(
        st.lists(st.sampled_from(SPECIAL_PARTS), min_size=1, max_size=4).map("".join),
        min_size=1,
        max_size=4,
        unique=True,
    ),
    text_parts=st.lists(st.sampled_from(SPECIAL_PARTS + ["<|a|>", "<|b|>", "\n"]), max_size=20),
)
def test_to_tiktoken_agrees_with_encode_on_every_special_token_set_it_accepts(specials, text_parts):
    tok = hand_made_tokenizer([(b"<", b"|"), (b"|", b">"), (b" ", b"a")], special_tokens=specials)
    text = "".join(text_parts)
    if any(a != b and b.startswith(a) for a in specials for b in specials):
        with pytest.raises(ValueError, match="is a prefix of"):
            tok.to_tiktoken()
    else:
        assert tok.to_tiktoken().encode(text, allowed_special="all") == tok.encode(text)


# ---------------------------------------------------------------- a pattern that misses text


def test_a_pattern_that_misses_a_character_is_refused_with_its_position():
    tok = hand_made_tokenizer([], pattern=r"\w+")
    for encode in (tok.encode, tok.encode_ordinary, lambda text: list(tok.encode_iterable([text]))):
        with pytest.raises(ValueError, match=r"at position 1 \(the character ' '\)"):
            encode("a b, c!")
    assert tok.encode("abc") == [97, 98, 99]


@pytest.mark.parametrize(
    "text, position",
    [
        pytest.param("ab<s>c d", 6, id="after-a-special-token"),
        pytest.param("abcdefgh!", 8, id="at-the-very-end"),
        pytest.param("abcd efgh ijkl mnop", 4, id="early-in-a-long-text"),
        pytest.param("ab<s>cd<s>ef gh", 12, id="after-two-special-tokens"),
    ],
)
@pytest.mark.parametrize("buffer_chars", [1, 4, 1000])
def test_the_position_counts_from_the_start_of_the_text(text, position, buffer_chars):
    tok = hand_made_tokenizer([], special_tokens=["<s>"], pattern=r"\w+")
    expected = re.escape(f"at position {position} (the character {text[position]!r})")
    with pytest.raises(ValueError, match=expected):
        tok.encode(text)
    with pytest.raises(ValueError, match=expected):  # streamed one character at a time
        list(tok.encode_iterable(list(text), buffer_chars=buffer_chars))
