"""Pretokenization: the regex that cuts text into pretokens before BPE sees it.

BPE never merges across a pretoken boundary, so " dog" and "dog." can share the token
"dog" without ever producing a token like "g." (the lecture notes' example of why GPT-2
splits first and merges second).

A pattern must match every character: what no pretoken covers is not encoded at all.
GPT-2's, GPT-4's and nanochat's do (see GPT2_PATTERN); `first_uncovered` finds what a custom one
misses.
"""

import re

import regex

# The three patterns cover every text: every character is a letter (\p{L}), a number (\p{N}),
# whitespace (\s) or none of these ([^\s\p{L}\p{N}]), and each of the four classes has an
# alternative that matches one such character wherever it stands (the final `\s` for
# whitespace), so the matches of findall follow each other with no gap.
#
# GPT-2's pattern as released was
#   r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
# This is tiktoken's equivalent form (possessive quantifiers, so it never backtracks);
# using tiktoken's exact string lets `Tokenizer.to_tiktoken()` hand it over unchanged.
GPT2_PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
)

# GPT-4's (tiktoken cl100k_base): case-insensitive contractions, numbers in groups of at
# most three digits, and newlines kept apart from other punctuation.
GPT4_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

# nanochat's (nanochat/tokenizer.py SPLIT_PATTERN, trained with rustbpe): GPT-4's as minbpe
# writes it, with numbers in groups of at most two digits ("a sweet spot for a 32K vocab").
NANOCHAT_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*"""
    r"""|\s*[\r\n]|\s+(?!\S)|\s+"""
)

PATTERNS = {"gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN, "nanochat": NANOCHAT_PATTERN}

# On text that is all ASCII, each pattern means exactly its ASCII form below: \p{L} is
# [A-Za-z], \p{N} is [0-9], \s is [ \t\n\v\f\r] (compiled with re.ASCII), and a quantifier at
# the end of an alternative may be possessive or not (nothing after it could make it give
# back; possessive, `re` gives up sooner where an alternative fails: 0.57 -> 0.47 s on 5 MB of
# GPT-2's). Python's own `re` runs these 2x (GPT-2's) to 3x (GPT-4's) as fast as `regex` runs
# the Unicode ones, and pretokenizing is most of the counting. Tests prove (hypothesis) that
# each splits every ASCII text as its pattern does.
ASCII_EQUIVALENTS = {
    GPT2_PATTERN: (
        r"""'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]++| ?[0-9]++| ?[^\sA-Za-z0-9]++|\s+(?!\S)|\s+"""
    ),
    GPT4_PATTERN: (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\nA-Za-z0-9]?+[A-Za-z]++|[0-9]{1,3}+| ?[^\sA-Za-z0-9]++"""
        r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
    ),
    NANOCHAT_PATTERN: (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\nA-Za-z0-9]?+[A-Za-z]++|[0-9]{1,2}+| ?[^\sA-Za-z0-9]++"""
        r"""[\r\n]*+|\s*[\r\n]|\s+(?!\S)|\s+"""
    ),
}


# The patterns we ship: each covers every text (see above), and a text may be cut into pieces
# and stretches where is_line_cut says. A user's own pattern may leave characters out, and is
# cut only before a special token.
BUILTIN_PATTERNS = frozenset(PATTERNS.values())


def first_uncovered(pattern, text, start=0, end=None):
    """The position of the first character of `text` in no pretoken, or None if there is none.

    r"\\w+", "a b, c!" -> 1 (the space: only "a", "b", "c" are pretokens);  GPT2_PATTERN -> None.
    `pattern` is a regex string or a compiled regex; `start` and `end` look at text[start:end]
    only, as findall(text, start, end) would.
    """
    end = len(text) if end is None else end
    position = start
    for match in regex.finditer(pattern, text, pos=start, endpos=end):
        if match.start() != position:
            return position
        position = match.end()
    return None if position == end else position


class Pretokenizer:
    """`findall(text)` with a pattern, taking the ASCII-only equivalent when the text allows.

    Pretokenizer("gpt2").findall("Hello world!") -> ["Hello", " world", "!"]
    The same pretokens as regex.findall(pattern, text) for every text. `pattern` is a name
    ("gpt2", "gpt4", "nanochat") or a regex; a name must not be read as the regex matching its own
    letters.
    """

    def __init__(self, pattern):
        self.pattern = PATTERNS.get(pattern, pattern)
        self.regex = regex.compile(self.pattern)
        ascii_pattern = ASCII_EQUIVALENTS.get(self.pattern)
        self.ascii_regex = re.compile(ascii_pattern, re.ASCII) if ascii_pattern else None

    def findall(self, text):
        if self.ascii_regex is None:
            return self.regex.findall(text)
        if text.isascii():
            return self.ascii_regex.findall(text)
        # Mostly-ASCII text (web text: a few accents and quotes a page) goes to the ASCII
        # regex too, all but the lines around its non-ASCII characters.
        pretokens = []
        for start, end, is_ascii in ascii_stretches(text):
            stretch_regex = self.ascii_regex if is_ascii else self.regex
            pretokens += stretch_regex.findall(text[start:end])
        return pretokens


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def is_line_cut(text, cut):
    """True if `cut` is right after a newline with a non-space character on both sides.

    "ab\ncd", 3 -> True;  "ab \ncd", 4 -> False.  Cutting there, the built-in patterns'
    pretokens of the two parts are those of the whole: no pretoken spans such a newline,
    and the pattern's `$` and look-aheads see the same thing on either side.
    """
    return (
        2 <= cut < len(text)
        and text[cut - 1] == "\n"
        and spaceless_around(text[cut - 2], text[cut])
    )


def spaceless_around(before_newline, after_newline):
    """The rule of is_line_cut for the two characters around a newline, wherever they are read
    from (a str, or UTF-8 bytes: bpe.corpus.Cutter): ("b", "c") -> True; (" ", "c") -> False."""
    return not before_newline.isspace() and not after_newline.isspace()


def ascii_stretches(text):
    """`text` as (start, end, is_ascii) stretches in order, cut only where is_line_cut, with every
    non-ASCII character in a stretch of the lines around it.

    "ab\ncd\néf\ngh" -> [(0, 6, True), (6, 9, False), (9, 11, True)]
    """
    stretches = []
    position = 0  # text[:position] is in stretches
    while match := _NON_ASCII.search(text, position):
        newline = text.rfind("\n", position, match.start())
        while newline != -1 and not is_line_cut(text, newline + 1):
            newline = text.rfind("\n", position, newline)
        start = position if newline == -1 else newline + 1
        newline = text.find("\n", match.start())
        while newline != -1 and not is_line_cut(text, newline + 1):
            newline = text.find("\n", newline + 1)
        end = len(text) if newline == -1 else newline + 1
        if start > position:
            stretches.append((position, start, True))
        if stretches and not stretches[-1][2] and stretches[-1][1] == start:
            start = stretches.pop()[0]  # two non-ASCII stretches in a row: one regex call
        stretches.append((start, end, False))
        position = end
    if position < len(text):
        stretches.append((position, len(text), True))
    return stretches
