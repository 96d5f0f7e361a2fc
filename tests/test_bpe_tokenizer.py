"""The Tokenizer on small vocabularies: hand-made merges and one trained on Tiny Shakespeare.

GPT-2's own files and exact equality with tiktoken are in test_bpe_gpt2.py.
"""

import hashlib
import json

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe
from bpe import Tokenizer
from bpe.io import TokenizerFileError
from bpe.patterns import GPT2_PATTERN
from bpe.tokenizer import bpe_encode_chunk, bpe_encode_chunk_simple
from prep.downloads import TINY_SHAKESPEARE, fetch

EOT = "<|endoftext|>"


def byte_vocab():
    return {b: bytes([b]) for b in range(256)}


def hand_made(merges, special_tokens=None, pattern="gpt2"):
    """A tokenizer from merges written by hand: [(b"h", b"e"), (b"he", b"l")] -> ids 256, 257."""
    vocab = byte_vocab()
    for i, (a, b) in enumerate(merges):
        vocab[256 + i] = a + b
    return Tokenizer(vocab, merges, special_tokens, pattern)


@pytest.fixture(scope="module")
def shakespeare(tmp_path_factory):
    path = fetch(TINY_SHAKESPEARE, tmp_path_factory.mktemp("ts") / "input.txt")
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def trained(shakespeare):
    """1,000 ids learned from the first 200,000 characters, with <|endoftext|> as the last id."""
    vocab, merges = bpe.train_bpe_from_iterator([shakespeare[:200_000]], 1000, special_tokens=[EOT])
    return Tokenizer(vocab, merges, special_tokens=[EOT])


# ---------------------------------------------------------------- BPE on one chunk

HELLO_RANKS = {bytes([b]): b for b in range(256)} | {b"he": 256, b"ll": 257, b"hell": 258}


def test_simple_bpe_worked_example():
    # The docstring's example: h e l l o -> he l l o -> he ll o -> hell o
    assert bpe_encode_chunk_simple(b"hello", HELLO_RANKS) == [258, ord("o")]
    assert bpe_encode_chunk(b"hello", HELLO_RANKS) == [258, ord("o")]


def test_lowest_rank_wins_then_leftmost():
    ranks = {bytes([b]): b for b in range(256)} | {b"bc": 256, b"ab": 257, b"aa": 258}
    # "bc" (256) is merged before "ab" (257) although "ab" is to its left
    assert bpe_encode_chunk_simple(b"abc", ranks) == [ord("a"), 256]
    # equal ranks: the leftmost pair goes first, "aaa" -> (aa)(a)
    assert bpe_encode_chunk_simple(b"aaa", ranks) == [258, ord("a")]
    assert bpe_encode_chunk(b"aaa", ranks) == [258, ord("a")]


def test_a_chunk_that_is_a_token_is_that_token_as_in_tiktoken():
    # "abcd" was made as ab + cd, but merging step by step from bytes would take bc first
    # and get stuck at a|bc|d; tiktoken (and so we) return the whole token.
    ranks = {bytes([b]): b for b in range(256)} | {b"bc": 256, b"ab": 257, b"cd": 258, b"abcd": 259}
    assert bpe_encode_chunk_simple(b"abcd", ranks) == [259]
    assert bpe_encode_chunk(b"abcd", ranks) == [259]
    assert bpe_encode_chunk(b"abcdx", ranks) == [ord("a"), 256, ord("d"), ord("x")]


@settings(max_examples=300, deadline=None)
@given(chunk=st.binary(max_size=40))
def test_fast_bpe_equals_simple_bpe_on_random_bytes(trained, chunk):
    ranks = trained._ranks
    assert bpe_encode_chunk(chunk, ranks) == bpe_encode_chunk_simple(chunk, ranks)


@settings(max_examples=300, deadline=None)
@given(chunk=st.text(alphabet="ab", max_size=30).map(str.encode))
def test_fast_bpe_equals_simple_on_a_two_letter_vocabulary(chunk):
    # Many overlapping tokens of a, b: the hardest case for the neighbour bookkeeping.
    tok = hand_made(
        [
            (b"a", b"a"),
            (b"a", b"b"),
            (b"aa", b"a"),
            (b"b", b"b"),
            (b"ab", b"aa"),
            (b"bb", b"a"),
            (b"aaa", b"aaa"),
        ]
    )
    assert bpe_encode_chunk(chunk, tok._ranks) == bpe_encode_chunk_simple(chunk, tok._ranks)


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=200))
def test_encode_is_simple_bpe_on_each_pre_token(trained, text):
    expected = []
    for piece in regex.findall(GPT2_PATTERN, text):
        expected += bpe_encode_chunk_simple(piece.encode("utf-8"), trained._ranks)
    assert trained.encode_ordinary(text) == expected


# ---------------------------------------------------------------- encode and decode


def test_hand_made_merges_encode_as_expected():
    tok = hand_made([(b"h", b"e"), (b"l", b"l"), (b"he", b"ll"), (b" ", b"w")])
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
    tok = hand_made([])
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
    tok = hand_made([], special_tokens=[EOT, EOT + EOT, "<|"])
    eot, double, bar = 256, 257, 258
    assert tok.encode(EOT + EOT + EOT) == [double, eot]
    assert tok.encode("<|<|endoftext|>") == [bar, eot]
    assert tok.encode("x<|endoftext") == [ord("x"), bar] + list(b"endoftext")


def test_text_next_to_a_special_token_is_encoded_as_if_the_text_ended_there():
    # tiktoken's behaviour: "  " before a special token is a trailing whitespace run
    tok = hand_made([(b" ", b" ")], special_tokens=[EOT])
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
    assert hand_made([]).eot_id is None


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


def test_constructor_refuses_a_bad_pattern():
    with pytest.raises(ValueError, match="neither 'gpt2', 'gpt4' nor a valid regex"):
        hand_made([], pattern="(unclosed")


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
    chunks = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
    assert list(trained.encode_iterable(chunks, buffer_chars=buffer_chars)) == trained.encode(text)


@settings(max_examples=200, deadline=None)
@given(
    text=STREAM_TEXT,
    cuts=st.lists(st.integers(0, 200), max_size=8),
    pattern=st.sampled_from(["gpt2", "gpt4"]),
    specials=st.sampled_from([[], [EOT, EOT + EOT, "<|"]]),
)
def test_encode_iterable_with_both_patterns_with_and_without_specials(
    text, cuts, pattern, specials
):
    tok = hand_made([(b" ", b" "), (b"\r", b"\n"), (b"'", b"l"), (b"'l", b"l")], specials, pattern)
    cuts = sorted({min(c, len(text)) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
    assert list(tok.encode_iterable(chunks, buffer_chars=1)) == tok.encode(text)


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
    tok = hand_made([(b"'", b"l"), (b"'l", b"l"), (b" ", b" ")], specials)
    # the text after the cut is long enough for the start to be settled and encoded early
    chunks = [text[:cut], text[cut:], " and then a good deal more text to come after it"]
    assert list(tok.encode_iterable(chunks, buffer_chars=1)) == tok.encode("".join(chunks))


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


# ---------------------------------------------------------------- save and load


def test_save_load_same_ids_and_same_bytes(trained, shakespeare, tmp_path):
    path = tmp_path / "tok.json"
    trained.save(path)
    loaded = Tokenizer.load(path)
    text = shakespeare[300_000:320_000] + EOT
    assert loaded.encode(text) == trained.encode(text)
    assert loaded.vocab == trained.vocab and loaded.merges == trained.merges
    loaded.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == trained.sha256()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left


def test_the_saved_file_is_readable(trained, tmp_path):
    path = tmp_path / "tok.json"
    trained.save(path)
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    assert text.endswith("}\n")
    assert lines[1:4] == [
        '  "format": "nanogpt-bpe-tokenizer",',
        '  "version": 1,',
        '  "pattern": "gpt2",',
    ]
    assert lines[4] == '  "special_tokens": {"<|endoftext|>": 999},'
    # one merge per line, in GPT-2's printable alphabet, e.g. "Ġ t" for (b" ", b"t")
    first = trained.merges[0]
    assert (
        lines[7]
        == "    "
        + json.dumps(
            f"{bpe.core.render_token(first[0])} {bpe.core.render_token(first[1])}",
            ensure_ascii=False,
        )
        + ","
    )
    assert len(lines) == 7 + len(trained.merges) + 3
    assert json.loads(text)["single_bytes"][ord("!")] == "!"


def test_a_custom_pattern_and_permuted_bytes_survive_save_load(tmp_path):
    vocab = {i: bytes([255 - i]) for i in range(256)} | {256: b"ab"}
    tok = Tokenizer(vocab, [(b"a", b"b")], {EOT: 257}, pattern=r"\S+|\s+")
    tok.save(tmp_path / "t.json")
    loaded = Tokenizer.load(tmp_path / "t.json")
    assert loaded.vocab == tok.vocab and loaded.pattern == r"\S+|\s+"
    assert loaded.encode("ab a" + EOT) == [256, 255 - ord(" "), 255 - ord("a"), 257]
    assert json.loads((tmp_path / "t.json").read_text())["pattern"] == r"\S+|\s+"


def write_json_file(tmp_path, change):
    tok = hand_made([(b"a", b"b"), (b"ab", b"c")], [EOT])
    document = json.loads(tok.to_json())
    change(document)
    path = tmp_path / "tok.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.update(format="something-else"), "is not a tokenizer file"),
        (
            lambda d: d.update(version=2),
            "has tokenizer format version 2, but this code reads version 1",
        ),
        (lambda d: d.pop("merges"), r"lacks the field\(s\) \['merges'\]"),
        (
            lambda d: d["merges"].__setitem__(1, "ab zz"),
            r"merge 1 \('ab zz'\) refers to the unknown token 'zz'",
        ),
        (
            lambda d: d["merges"].__setitem__(0, "ab c"),
            r"merge 0 \('ab c'\) refers to the unknown token 'ab'",
        ),
        (
            lambda d: d["merges"].append("a b"),
            r"merge 2 \('a b'\) makes the duplicate token 'ab', which already has id 256",
        ),
        (lambda d: d["merges"].append("abc"), r"merge 2: expected two tokens"),
        (lambda d: d.update(single_bytes=d["single_bytes"][:255] + "a"), "repeats a byte"),
        (lambda d: d["special_tokens"].update({"<|pad|>": 258}), r"both have id 258"),
        (lambda d: d.update(pattern="(unclosed"), "neither 'gpt2', 'gpt4' nor a valid regex"),
    ],
)
def test_load_errors_name_the_file(tmp_path, change, message):
    path = write_json_file(tmp_path, change)
    with pytest.raises(TokenizerFileError, match=message) as info:
        Tokenizer.load(path)
    assert str(path) in str(info.value)


def test_load_errors_for_missing_file_bad_json_and_duplicate_keys(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(TokenizerFileError, match=f"{missing} does not exist"):
        Tokenizer.load(missing)
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": ', encoding="utf-8")
    with pytest.raises(TokenizerFileError, match=f"{broken} is not valid JSON"):
        Tokenizer.load(broken)
    twice = tmp_path / "twice.json"
    twice.write_text('{"format": "a", "format": "b"}', encoding="utf-8")
    with pytest.raises(TokenizerFileError, match=f"{twice} has the key 'format' twice"):
        Tokenizer.load(twice)


def test_hf_pair_round_trip(trained, tmp_path):
    trained.save_hf(tmp_path)
    assert (tmp_path / "merges.txt").read_text(encoding="utf-8").startswith("#version: 0.2\n")
    loaded = Tokenizer.load_hf(tmp_path)
    assert loaded.vocab == trained.vocab and loaded.special_tokens == trained.special_tokens
    loaded.save_hf(tmp_path / "again")
    for name in ("vocab.json", "merges.txt"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / name).read_bytes()


def test_hf_pair_that_does_not_belong_together(trained, tmp_path):
    trained.save_hf(tmp_path)
    vocab = json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8"))
    first, second = [k for k, v in vocab.items() if v in (256, 257)]
    vocab[first], vocab[second] = 257, 256
    (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    with pytest.raises(
        TokenizerFileError, match="id 256 should be .* the two files do not belong together"
    ):
        Tokenizer.load_hf(tmp_path)
