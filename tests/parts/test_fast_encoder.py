"""The fast encoder (formats/encoders.py) gives tiktoken's ids, every one, for GPT-2 and for
tokenizers trained here (GPT-2's, GPT-4's and nanochat's patterns): on random Unicode, on every
code point, on runs of 200,000 characters and on Tiny Shakespeare; and it is the Encoding the
pipelines get, unless NANOGPT_FAST_ENCODER=0."""

import pickle

import numpy as np
import pytest
from conftest import REPO, run_python
from hypothesis import given, settings
from hypothesis import strategies as st

from formats.encoders import FastEncoding, recovered_merges

pytest.importorskip(
    "fastokens", reason="the fast encoder's tests need the extra: pip install -e '.[fast]'"
)

# Pieces that sit on the patterns' edges: contractions, the special token as text, letters of
# Unicode 15 (Kawi, Nag Mundari, CJK extension H) and 16 (Todhri, Sunuwar, Kirat Rai, Ol Onal),
# U+180E (a format character since Unicode 6.3, once a space), combining marks, NUL, other
# spaces and line ends, digits of other scripts, an emoji with its joiner.
EDGES = [
    "<|endoftext|>",
    "'s",
    "'LL",
    "'Ve",
    " 's",
    "\U00011f04",
    "\U0001e4d0",
    "\U00031350",
    "\U000105c0",
    "\U00011bc0",
    "\U00016d43",
    "\U0001e5d0",
    "\u180e",
    "e\u0301",
    "\u0301\u0302",
    "\x00",
    "\u00a0",
    "\u3000",
    "\u2028",
    "\r\n",
    "\n\n",
    "\t ",
    "   ",
    "\u0663\u0664",
    "12345",
    "\U0001f469\u200d\U0001f4bb",
    "\ufeff",
    "\U000e0001",
    "\ud800",
    "\udfff",
    "a",
    " the",
]
TEXTS = st.lists(
    st.one_of(st.text(st.characters(exclude_categories=()), max_size=12), st.sampled_from(EDGES)),
    max_size=40,
).map("".join)


def every_code_point():
    """Each code point alone, after a space, between letters and before a digit: the patterns'
    classes (\\p{L}, \\p{N}, \\s) decided for all 1,114,112 of them, lone surrogates apart."""
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    return "".join(f"{c} {c}a{c}1{c}'s\n" for c in chars)


@pytest.fixture(scope="module")
def encodings(gpt2_encoding, trained, shakespeare):
    """{name: (tiktoken Encoding, its FastEncoding)}: GPT-2, and BPEs of 1,000 ids trained on
    Tiny Shakespeare with GPT-2's, GPT-4's and nanochat's patterns."""
    from bpe import EOT, Tokenizer, train_bpe_from_iterator

    tiktoken_encodings = {"gpt2": getattr(gpt2_encoding, "reference", gpt2_encoding)}
    tiktoken_encodings["trained-gpt2"] = trained.to_tiktoken()
    for pattern in ("gpt4", "nanochat"):
        vocab, merges = train_bpe_from_iterator([shakespeare[:200_000]], 1000, [EOT], pattern)
        tokenizer = Tokenizer(vocab, merges, special_tokens=[EOT], pattern=pattern)
        tiktoken_encodings[f"trained-{pattern}"] = tokenizer.to_tiktoken()
    return {name: (enc, FastEncoding(enc)) for name, enc in tiktoken_encodings.items()}


NAMES = ["gpt2", "trained-gpt2", "trained-gpt4", "trained-nanochat"]


def assert_same_ids(reference, fast, text):
    expected = reference.encode_ordinary(text)
    assert fast.encode_ordinary(text) == expected
    try:
        expected_array = reference.encode_to_numpy(text, disallowed_special=())
    except (
        UnicodeEncodeError
    ):  # a lone surrogate: tiktoken's encode_to_numpy refuses it, so must we
        with pytest.raises(UnicodeEncodeError):
            fast.encode_to_numpy(text, disallowed_special=())
        return
    got = fast.encode_to_numpy(text, disallowed_special=())
    assert got.dtype == expected_array.dtype and np.array_equal(got, expected_array)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=300, deadline=None)
@given(text=TEXTS)
def test_random_unicode_gets_tiktokens_ids(encodings, name, text):
    """Random text of every general category (lone surrogates too) and the edge pieces: the same
    ids as tiktoken's encode_ordinary and encode_to_numpy."""
    assert_same_ids(*encodings[name], text)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_code_point_gets_tiktokens_ids(encodings, name):
    """All of Unicode, each code point in four contexts: the same ids as tiktoken's."""
    assert_same_ids(*encodings[name], every_code_point())


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "text",
    [
        pytest.param("a" * 200_000, id="letters"),
        pytest.param(" " * 200_000, id="spaces"),
        pytest.param("\n" * 200_000, id="newlines"),
        pytest.param("7" * 200_000, id="digits"),
        pytest.param("!" * 200_000, id="punctuation"),
        pytest.param("\u0301" * 200_000, id="combining-marks"),
        pytest.param("\x00" * 200_000, id="nul"),
        pytest.param("".join(EDGES[:-3]) * 4_000, id="edges"),
    ],
)
def test_runs_of_200000_characters_get_tiktokens_ids(encodings, name, text):
    """Runs of 200,000 characters of one kind (BPE's worst case: one long pretoken)."""
    assert_same_ids(*encodings[name], text)


@pytest.mark.parametrize("name", NAMES)
def test_tiny_shakespeare_gets_tiktokens_ids(encodings, name, shakespeare):
    """The corpus of the golden tests, whole and line by line."""
    reference, fast = encodings[name]
    assert_same_ids(reference, fast, shakespeare)
    lines = shakespeare.splitlines(keepends=True)
    assert fast.encode_ordinary_batch(lines) == reference.encode_ordinary_batch(lines)


def test_recovered_merges_are_gpt2s_vocab_bpe(encodings, gpt2_files):
    """The merges recovered from tiktoken's ranks are GPT-2's own vocab.bpe, line for line."""
    from bpe.io import render_token

    lines = gpt2_files[1].read_text(encoding="utf-8").splitlines()[1:]
    merges = recovered_merges(encodings["gpt2"][0])
    assert [f"{render_token(a)} {render_token(b)}" for a, b in merges] == lines


def test_fast_encoding_pickles_and_keeps_the_definition(encodings):
    """A worker process gets a FastEncoding that encodes the same; its definition (what
    meta.json's sha256 fingerprints) is the tiktoken Encoding's."""
    from formats.tokenizers import encoding_sha256

    reference, fast = encodings["gpt2"]
    copy = pickle.loads(pickle.dumps(fast))
    assert isinstance(copy, FastEncoding) and copy.encode_ordinary("Hello world") == [15496, 995]
    assert encoding_sha256(copy) == encoding_sha256(reference)
    assert (copy.n_vocab, copy.eot_token, copy.decode([15496, 995])) == (
        50257,
        50256,
        "Hello world",
    )


@pytest.mark.parametrize(
    "value, wrapped",
    [
        pytest.param("0", False, id="off"),
        pytest.param("1", True, id="on"),
        pytest.param("", True, id="unset"),
    ],
)
@pytest.mark.usefixtures("downloads")
def test_the_pipelines_encoding_follows_the_switch(value, wrapped):
    """NANOGPT_FAST_ENCODER=0 gives tiktoken's Encoding itself; otherwise the FastEncoding."""
    code = "import formats.tokenizers as t; print(type(t.gpt2_encoding()).__name__)"
    result = run_python("-c", code, cwd=REPO, env={"NANOGPT_FAST_ENCODER": value})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ("FastEncoding" if wrapped else "Encoding")
