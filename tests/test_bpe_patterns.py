"""bpe/patterns.py: the ASCII fast path splits exactly as GPT-2's Unicode pattern does."""

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe.patterns import GPT2_PATTERN, GPT4_PATTERN, PreTokenizer, resolve_pattern
from prep.downloads import TINY_SHAKESPEARE, fetch

# Every ASCII character, with the ones that make pre-tokenization interesting drawn more often:
# the whitespace kinds (and \x1c-\x1f, which Python's str.isspace calls space but Unicode does
# not), apostrophes of contractions, digits, letters, punctuation.
ascii_text = st.lists(
    st.one_of(
        st.characters(min_codepoint=0, max_codepoint=127),
        st.sampled_from(
            [" ", "  ", "\n", "\r\n", "\t", "\x0b", "\x0c", "\x1c", "\x1f", "'", "'s", "'ll", "'VE"]
        ),
    ),
    max_size=60,
).map("".join)


@settings(max_examples=600, deadline=None)
@given(ascii_text)
def test_ascii_fast_path_equals_the_unicode_pattern(text):
    pretokenizer = PreTokenizer("gpt2")
    assert pretokenizer.ascii_regex.findall(text) == regex.findall(GPT2_PATTERN, text)
    assert pretokenizer.findall(text) == regex.findall(GPT2_PATTERN, text)


def test_ascii_fast_path_on_tiny_shakespeare(tmp_path):
    path = fetch(TINY_SHAKESPEARE, tmp_path / "input.txt")
    text = path.read_text(encoding="utf-8")
    assert text.isascii()
    assert PreTokenizer("gpt2").findall(text) == regex.findall(GPT2_PATTERN, text)


def test_non_ascii_text_and_other_patterns_take_the_unicode_regex():
    text = "Grüße, 世界 's 12345 \u00a0\u0085 x"
    assert PreTokenizer("gpt2").findall(text) == regex.findall(GPT2_PATTERN, text)
    assert PreTokenizer("gpt4").ascii_regex is None
    assert PreTokenizer("gpt4").findall("Hello 12345") == ["Hello", " ", "123", "45"]
    assert PreTokenizer(r"\S+|\s+").findall("a  b") == ["a", "  ", "b"]
    assert resolve_pattern("gpt4") == GPT4_PATTERN
