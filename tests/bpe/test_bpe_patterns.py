"""bpe/patterns.py: the ASCII fast path splits as each named Unicode pattern does; coverage."""

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe.checks import check_pattern
from bpe.patterns import (
    GPT2_PATTERN,
    GPT4_PATTERN,
    NANOCHAT_PATTERN,
    Pretokenizer,
    ascii_stretches,
    first_uncovered,
)

# Every ASCII character, with the ones that make pretokenization interesting drawn more often:
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


NAMED_PATTERNS = [GPT2_PATTERN, GPT4_PATTERN, NANOCHAT_PATTERN]


@pytest.mark.parametrize("pattern", NAMED_PATTERNS, ids=["gpt2", "gpt4", "nanochat"])
@settings(max_examples=600, deadline=None)
@given(text=ascii_text)
def test_ascii_fast_path_equals_the_unicode_pattern(pattern, text):
    pretokenizer = Pretokenizer(pattern)
    assert pretokenizer.ascii_regex.findall(text) == regex.findall(pattern, text)
    assert pretokenizer.findall(text) == regex.findall(pattern, text)


# Mostly ASCII, with the characters that decide where a text may be cut drawn often: newlines
# next to ASCII and Unicode spaces (\u00a0, \u2028, \x85), accents, CJK, emoji.
mixed_text = st.lists(
    st.one_of(
        ascii_text,
        st.sampled_from(
            ["é", "世界", "\u00a0", "\u2028", "\x85", "\n", "\n\n", " \n", "\n ", "😀"]
        ),
    ),
    max_size=12,
).map("".join)


@pytest.mark.parametrize("pattern", NAMED_PATTERNS, ids=["gpt2", "gpt4", "nanochat"])
@settings(max_examples=300, deadline=None)
@given(text=mixed_text)
def test_mostly_ascii_text_splits_as_the_unicode_pattern(pattern, text):
    assert Pretokenizer(pattern).findall(text) == regex.findall(pattern, text)
    stretches = ascii_stretches(text)
    assert [start for start, _, _ in stretches[1:]] == [end for _, end, _ in stretches[:-1]]
    assert all(text[start:end].isascii() for start, end, is_ascii in stretches if is_ascii)
    assert "".join(text[start:end] for start, end, _ in stretches) == text


def test_ascii_stretches_keep_the_lines_around_non_ascii():
    assert ascii_stretches("ab\ncd\néf\ngh") == [(0, 6, True), (6, 9, False), (9, 11, True)]
    assert ascii_stretches("ab\n\néf") == [(0, 6, False)]  # no cut next to a blank line
    assert ascii_stretches("é\nab\né") == [(0, 2, False), (2, 5, True), (5, 6, False)]
    assert ascii_stretches("ab") == [(0, 2, True)]


def test_ascii_fast_path_on_tiny_shakespeare(shakespeare):
    assert shakespeare.isascii()
    assert Pretokenizer(GPT2_PATTERN).findall(shakespeare) == regex.findall(
        GPT2_PATTERN, shakespeare
    )


def test_non_ascii_text_and_other_patterns_take_the_unicode_regex():
    text = "Grüße, 世界 's 12345 \u00a0\u0085 x"
    assert Pretokenizer(GPT2_PATTERN).findall(text) == regex.findall(GPT2_PATTERN, text)
    assert Pretokenizer(r"\S+|\s+").ascii_regex is None
    assert Pretokenizer(GPT4_PATTERN).findall("Hello 12345") == ["Hello", " ", "123", "45"]
    assert Pretokenizer(r"\S+|\s+").findall("a  b") == ["a", "  ", "b"]
    assert Pretokenizer("gpt2").pattern == GPT2_PATTERN  # a name, not the regex "gpt2"
    assert Pretokenizer("gpt4").findall("Hello 12345") == ["Hello", " ", "123", "45"]
    assert check_pattern("gpt4") == GPT4_PATTERN


@pytest.mark.parametrize(
    "pattern, text, position",
    [
        pytest.param(r"\w+", "a b, c!", 1, id="space-between-words"),
        pytest.param(r"\w+", "abc", None, id="covered"),
        pytest.param(r"\w+", "", None, id="empty-text"),
        pytest.param(r"\w+", " abc", 0, id="first-character"),
        pytest.param(r"\w+", "abc!", 3, id="last-character"),
        pytest.param(r"a*", "aab", 2, id="empty-matches"),
        pytest.param(r"(?<=a)b|a", "ab\nb", 2, id="look-behind"),
    ],
)
def test_first_uncovered(pattern, text, position):
    assert first_uncovered(pattern, text) == position
    assert first_uncovered(regex.compile(pattern), text) == position


def test_first_uncovered_within_bounds():
    assert first_uncovered(r"\w+", "a b c", 2, 3) is None
    assert first_uncovered(r"\w+", "a b c", 2, 4) == 3


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=100))
def test_the_named_patterns_cover_any_unicode_text(text):
    assert first_uncovered(GPT2_PATTERN, text) is None
    assert first_uncovered(GPT4_PATTERN, text) is None
    assert first_uncovered(NANOCHAT_PATTERN, text) is None


def test_nanochat_pattern_is_gpt4s_with_two_digit_numbers():
    """nanochat/tokenizer.py's SPLIT_PATTERN: numbers in twos; the rest as GPT-4's, save GPT-4's
    `\\s++$` (a whitespace run with a newline at the very end is one pretoken there)."""
    assert check_pattern("nanochat") == NANOCHAT_PATTERN
    text = "Hello 12345 we'LL\n\n  go...\r\n x"
    assert Pretokenizer("nanochat").findall(text) == [
        "Hello",
        " ",
        "12",
        "34",
        "5",
        " we",
        "'LL",
        "\n\n",
        " ",
        " go",
        "...\r\n",
        " x",
    ]
    assert regex.findall(GPT4_PATTERN, text)[2:4] == ["123", "45"]
    assert regex.findall(GPT4_PATTERN, "a\n ") == ["a", "\n "]
    assert regex.findall(NANOCHAT_PATTERN, "a\n ") == ["a", "\n", " "]
