"""Built from GPT-2's own files, our Tokenizer gives exactly tiktoken's `gpt2` ids."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe import EOT, Tokenizer
from bpe.patterns import GPT2_PATTERN, GPT4_PATTERN

pytestmark = pytest.mark.usefixtures("downloads")  # GPT-2's files

# tiktoken's cl100k_base pattern, copied from tiktoken_ext/openai_public.py (tiktoken 0.x)
CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
    r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)


@pytest.fixture(scope="module")
def ours(gpt2_files):
    return Tokenizer.from_gpt2_files(*gpt2_files)


@pytest.fixture(scope="module")
def gpt4_split(ours):
    """GPT-2's vocabulary with GPT-4's pretokenization, and the same as a tiktoken Encoding."""
    tok = Tokenizer(ours.vocab, ours.merges, ours.special_tokens, pattern="gpt4")
    return tok, tok.to_tiktoken()


def test_gpt2_shape(ours, gpt2_encoding):
    assert ours.vocab_size == gpt2_encoding.n_vocab == 50257
    assert ours.special_tokens == {EOT: 50256} and ours.eot_id == 50256
    assert ours.pattern == GPT2_PATTERN == gpt2_encoding._pat_str
    assert ours.vocab[0] == b"!" and ours.vocab[220] == b" " and ours.vocab[256] == b" t"


def test_golden_ids(ours):
    # pinned from tiktoken.get_encoding("gpt2")
    assert ours.encode("hello world") == [31373, 995]
    assert ours.encode("Hello world!") == [15496, 995, 0]
    assert ours.encode("hi" + EOT) == [5303, 50256]
    assert ours.decode([31373, 995]) == "hello world"


def test_whole_tiny_shakespeare_equals_tiktoken(ours, gpt2_encoding, shakespeare):
    ids = ours.encode_ordinary(shakespeare)
    assert ids == gpt2_encoding.encode_ordinary(shakespeare)
    assert len(ids) == 338025  # 301,966 + 36,059 tokens in nanoGPT's train/val split
    assert ours.decode(ids) == shakespeare


def test_the_pipelines_split_figures(ours, shakespeare):
    n = len(shakespeare)
    train, val = shakespeare[: int(n * 0.9)], shakespeare[int(n * 0.9) :]
    assert (len(ours.encode_ordinary(train)), len(ours.encode_ordinary(val))) == (301966, 36059)


TRICKY = [
    "",
    " ",
    "   ",
    "hello   world",
    "tabs\t\tand\t newlines\n\n\nend",
    "windows\r\nline\r\n\r\nends\r\n",
    "trailing spaces   ",
    "trailing newlines\n\n",
    " leading",
    "\u00a0non-breaking\u2009thin\u3000ideographic space",
    "digits 1234567890 3.14159 1,000,000 ٣٤٥",
    "contractions: I'm you're he's we'll they've I'd can't DON'T",
    "quotes ‘curly’ “double” 'single'",
    "emoji 😀👍🏽👨‍👩‍👧 flags 🇫🇷",
    "CJK 中文字符 日本語のテキスト 한국어 텍스트",
    (
        "Ünïcödé àccénts ßtraße Ωμέγα "  # Latin, Greek; then four scripts
        "Кириллица עברית العربية हिन्दी"
    ),
    "def f(x):\n    return x**2  # square\n\tif (a && b) { c++; }\n",
    '<html><body class="x">text</body></html>',
    "mixed123abc___---...!!!???",
    "\x00\x01\x7f control chars \x1b[31m",
    "a" * 1000,
    " " * 100 + "x",
]


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_strings_equal_tiktoken(ours, gpt2_encoding, text):
    assert ours.encode_ordinary(text) == gpt2_encoding.encode_ordinary(text)
    assert ours.decode(ours.encode(text)) == text


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300))
def test_random_text_equals_tiktoken(ours, gpt2_encoding, text):
    assert ours.encode_ordinary(text) == gpt2_encoding.encode_ordinary(text)
    assert ours.decode(ours.encode_ordinary(text)) == text


WHITESPACE_HEAVY = st.lists(
    st.sampled_from(
        [" ", "  ", "\t", "\n", "\r\n", "\u00a0", "a", "Z", "7", "'s", "'ll", "!", "é", "中"]
    ),
    max_size=60,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=WHITESPACE_HEAVY)
def test_whitespace_heavy_text_equals_tiktoken(ours, gpt2_encoding, text):
    assert ours.encode_ordinary(text) == gpt2_encoding.encode_ordinary(text)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.one_of(st.text(max_size=20), st.just(EOT)), max_size=8))
def test_special_tokens_equal_tiktoken_allowed_special_all(ours, gpt2_encoding, parts):
    text = "".join(parts)
    assert ours.encode(text) == gpt2_encoding.encode(text, allowed_special="all")


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.integers(0, 50256), max_size=30))
def test_decode_random_ids_equals_tiktoken(ours, gpt2_encoding, ids):
    data = gpt2_encoding.decode_bytes(ids)
    assert ours.decode_bytes(ids) == data
    assert ours.decode(ids) == data.decode("utf-8", errors="replace") == gpt2_encoding.decode(ids)


def test_out_of_vocabulary_id(ours):
    with pytest.raises(ValueError, match="token id 50257 is not in this tokenizer's vocabulary"):
        ours.decode([31373, 50257])


def test_to_tiktoken_equals_tiktokens_own_gpt2(ours, gpt2_encoding, shakespeare):
    enc = ours.to_tiktoken(name="gpt2-ours")
    text = shakespeare[:200_000] + EOT + "\n".join(TRICKY)
    assert enc.encode(text, allowed_special="all") == gpt2_encoding.encode(
        text, allowed_special="all"
    )
    assert enc.n_vocab == 50257 and enc.eot_token == 50256


def test_encode_iterable_over_shakespeare_lines_equals_encode(ours, shakespeare, tmp_path):
    path = tmp_path / "input.txt"
    path.write_text(shakespeare, encoding="utf-8")
    with open(path, encoding="utf-8") as file:
        assert list(ours.encode_iterable(file)) == ours.encode(shakespeare)


def test_gpt2_files_round_trip_byte_for_byte_through_the_hf_pair(ours, gpt2_files, tmp_path):
    encoder_json, vocab_bpe = gpt2_files
    ours.save_hf(tmp_path)
    assert (tmp_path / "vocab.json").read_bytes() == encoder_json.read_bytes()
    assert (tmp_path / "merges.txt").read_bytes() == vocab_bpe.read_bytes()
    again = Tokenizer.load_hf(tmp_path / "vocab.json", tmp_path / "merges.txt")
    assert again.vocab == ours.vocab and again.merges == ours.merges
    assert again.special_tokens == ours.special_tokens


def test_gpt2_through_our_json_file(ours, tmp_path, shakespeare):
    path = tmp_path / "gpt2.json"
    ours.save(path)
    loaded = Tokenizer.load(path)
    assert loaded.vocab == ours.vocab and loaded.special_tokens == ours.special_tokens
    assert loaded.encode(shakespeare[:50_000]) == ours.encode(shakespeare[:50_000])
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["pattern"] == "gpt2"
    assert document["single_bytes"].startswith('!"#$%&')  # GPT-2's permuted byte ids
    assert document["merges"][:2] == ["Ġ t", "Ġ a"]  # vocab.bpe's first two merges


def test_gpt4_pattern_is_cl100ks_and_tiktoken_splits_text_the_same_way(gpt4_split):
    assert GPT4_PATTERN == CL100K_PAT
    gpt4_split, enc = gpt4_split
    # tiktoken's Rust regex engine cuts with the pattern, we cut with `regex`: same ids
    # means the same pretokens.
    text = "\n".join(TRICKY) + " I'M 12345678 x\r\n\r\n  y\n\n"
    assert gpt4_split.encode_ordinary(text) == enc.encode_ordinary(text)


@settings(max_examples=200, deadline=None)
@given(text=st.one_of(st.text(max_size=200), WHITESPACE_HEAVY))
def test_gpt4_pattern_matches_tiktoken_on_random_text(gpt4_split, text):
    tok, enc = gpt4_split
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)
