"""bpe/fragments.py: counting by fragments equals simple.count_pretokens, on random and real
text."""

import sys
from collections import Counter

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe import fragments, simple
from bpe.fragments import WHITESPACE, FragmentCounter, fragment_bounds
from bpe.patterns import PATTERNS
from bpe.simple import EOT

NAMED = ["gpt2", "gpt4", "nanochat"]

# Pieces that make cutting interesting: every kind of whitespace (and \x1c, which str.isspace
# calls space but the patterns do not; \x00, the separator of documents), punctuation before
# newlines (GPT-4 joins them), contractions, digits, letters in and out of ASCII, and the
# special token, which cuts a document and is left out.
documents = st.lists(
    st.lists(
        st.sampled_from(
            [" ", "  ", "\n", "\r\n", "\t", "\x0b", "\x0c", "\x1c", "\x00", "\x85", "\xa0"]
            + ["\u2003", "\u3000", ".", ",\n", "!!", "'s", "'LL", "7", "123", "a", "The", "é"]
            + ["日本", "\u0430\u0431", "😀", EOT, "<|"]
        ),
        max_size=30,
    ).map("".join),
    max_size=5,
)


def counted_by_fragments(texts, pattern, special_tokens=()):
    counter = FragmentCounter(pattern, special_tokens)
    for text in texts:
        counter.add(text)
    return counter.pretoken_counts()


def counted_simply(texts, pattern, special_tokens=()):
    counts = Counter()
    for text in texts:
        counts.update(simple.count_pretokens(text, PATTERNS[pattern], special_tokens))
    return counts


@pytest.mark.parametrize("pattern", NAMED)
@settings(max_examples=200, deadline=None)
@given(texts=documents)
def test_fragments_count_as_simple_count_pretokens(pattern, texts):
    assert counted_by_fragments(texts, pattern, [EOT]) == counted_simply(texts, pattern, [EOT])


@pytest.mark.parametrize("pattern", NAMED)
@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.text(max_size=40), max_size=4))
def test_fragments_count_any_unicode_as_simple(pattern, texts):
    texts = [text.encode("utf-8", "replace").decode("utf-8") for text in texts]  # no surrogates
    assert counted_by_fragments(texts, pattern) == counted_simply(texts, pattern)


@pytest.mark.parametrize("pattern", NAMED)
def test_fragments_count_real_text_as_simple(pattern, shakespeare, monkeypatch):
    monkeypatch.setattr(fragments, "BUFFER_BYTES", 50_000)  # many buffers, one table
    paragraphs = shakespeare[:150_000].split("\n\n")
    assert counted_by_fragments(paragraphs, pattern) == counted_simply(paragraphs, pattern)


def test_whitespace_is_what_the_patterns_call_whitespace():
    every_char = "".join(map(chr, range(sys.maxunicode + 1)))
    assert "".join(regex.findall(r"\s", every_char)) == WHITESPACE


@pytest.mark.parametrize(
    "text, pattern, expected",
    [
        pytest.param("the cat.\n", "gpt2", ["the", " cat.", "\n"], id="gpt2-before-newline"),
        pytest.param("the cat.\n", "gpt4", ["the", " cat.\n"], id="gpt4-keeps-punctuation-newline"),
        pytest.param("a  b", "gpt2", ["a", "  b"], id="two-spaces-one-fragment"),
        pytest.param("a\u3000b c", "gpt2", ["a\u3000b", " c"], id="no-cut-before-long-whitespace"),
        pytest.param("\u3000 b", "gpt2", ["\u3000 b"], id="no-cut-after-long-whitespace"),
        pytest.param(" lead", "gpt2", [" lead"], id="no-cut-at-the-start"),
    ],
)
def test_where_fragments_are_cut(text, pattern, expected):
    data = text.encode()
    cut_before = fragments.CUT_BEFORE[PATTERNS[pattern]]
    starts, ends = fragment_bounds(data, cut_before)
    assert [data[s:e].decode() for s, e in zip(starts, ends)] == expected
