"""Pre-tokenization: the regex that cuts text into chunks before BPE sees it.

BPE never merges across a chunk boundary, so " dog" and "dog." can share the token
"dog" without ever producing a token like "g." (the lecture notes' example of why GPT-2
splits first and merges second).
"""

import re

import regex

# GPT-2's pattern as released was
#   r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
# This is tiktoken's equivalent form (possessive quantifiers, so it never backtracks);
# using tiktoken's exact string lets `Tokenizer.to_tiktoken()` hand it over unchanged.
GPT2_PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
)

# GPT-4's (tiktoken cl100k_base): case-insensitive contractions, numbers in groups of at
# most three digits, and newlines kept apart from other punctuation.
GPT4_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""

PATTERNS = {"gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN}

# On text that is all ASCII, GPT-2's pattern means exactly this one: \p{L} is [A-Za-z], \p{N}
# is [0-9], \s is [ \t\n\v\f\r] (compiled with re.ASCII). Python's own `re` runs it about twice
# as fast as `regex` runs the Unicode one, and pre-tokenizing is most of a pure-Python encode.
# A test proves the two split every ASCII text alike.
GPT2_PATTERN_ASCII = (
    r"""'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+"""
)
ASCII_EQUIVALENTS = {GPT2_PATTERN: GPT2_PATTERN_ASCII}


def resolve_pattern(pattern):
    """A pattern name ("gpt2", "gpt4") or a regex string -> the regex string.

    "gpt2" -> GPT2_PATTERN; r"\\S+|\\s+" -> r"\\S+|\\s+" (a custom pattern passes through).
    """
    if pattern in PATTERNS:
        return PATTERNS[pattern]
    try:
        regex.compile(pattern)
    except (regex.error, TypeError) as exc:
        raise ValueError(
            f"pattern {pattern!r} is neither 'gpt2', 'gpt4' nor a valid regex: {exc}"
        ) from None
    return pattern


class PreTokenizer:
    """`findall(text)` with a pattern, taking the ASCII-only equivalent when the text allows.

    PreTokenizer("gpt2").findall("Hello world!") -> ["Hello", " world", "!"]
    Same pieces as regex.findall(resolve_pattern(pattern), text) for every text.
    """

    def __init__(self, pattern):
        self.pattern = resolve_pattern(pattern)
        self.regex = regex.compile(self.pattern)
        ascii_pattern = ASCII_EQUIVALENTS.get(self.pattern)
        self.ascii_regex = re.compile(ascii_pattern, re.ASCII) if ascii_pattern else None

    def findall(self, text):
        if self.ascii_regex is not None and text.isascii():
            return self.ascii_regex.findall(text)
        return self.regex.findall(text)
