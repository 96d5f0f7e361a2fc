"""Counting pretokens by fragments: each distinct stretch of text is pretokenized once.

    counter = FragmentCounter("gpt4", special_tokens=["<|endoftext|>"])
    counter.add("the cat and the dog")        # any number of documents
    counter.pretoken_counts()  # Counter({" the": 1, "the": 1, " cat": 1, " and": 1, " dog": 1})

Equal to simple.count_pretokens over each document (split at the special tokens), summed (the tests
prove it on random
and real text), and about twice as fast on web text (docs20: 3.0 against 6.3 s in one
process): the pattern's regex was most of the time of counting, and most of a corpus repeats.

A *fragment* is the text between two cuts, where a cut is a place where pretokenizing the
parts separately gives exactly the pretokens of the whole: right before an ASCII whitespace
character that follows a character that is not whitespace ("the| cat|.\\n" is not cut before
the newline for GPT-4, whose pattern joins punctuation and the newlines after it). There:

- no pretoken spans the cut: under the three patterns (GPT-2's, GPT-4's, nanochat's), a
  pretoken holding a non-whitespace character never goes on into whitespace, except GPT-4's
  and nanochat's punctuation with the newlines after it (hence \\r and \\n are never cut
  before under those two);
- the pretokens before the cut do not change when the text ends there: a pattern's `$` and
  look-aheads only look at whitespace, and the cut follows a character that is not.

So the fragments of a document are counted (numpy finds the cuts and counts the fragments of
up to 16 bytes, a Counter the longer ones) and only the distinct ones go to the regex. Two
fragments that each start with a cut's whitespace and end without whitespace may be joined:
the place between them is a cut again. So the distinct fragments are pretokenized joined, in
batches of the same count, with one regex call per batch.
"""

from collections import Counter

import numpy as np

from .patterns import GPT2_PATTERN, GPT4_PATTERN, NANOCHAT_PATTERN, PATTERNS, Pretokenizer
from .simple import split_on_special_tokens
from .table import LOW_BYTES, run_starts

# The characters `\s` matches in the patterns (the `regex` module's, Unicode White_Space;
# a test checks it against every character).
WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
LONG_WHITESPACE = tuple(char.encode("utf-8") for char in WHITESPACE if ord(char) >= 0x80)

# The whitespace a cut may come right before, for each pattern.
CUT_BEFORE = {
    GPT2_PATTERN: b"\t\n\x0b\x0c\r ",
    GPT4_PATTERN: b"\t\x0b\x0c ",
    NANOCHAT_PATTERN: b"\t\x0b\x0c ",
}

# Documents are joined into one buffer of about this many bytes, with SEPARATOR between them
# (a worker's block: corpus.BLOCK_BYTES).
BUFFER_BYTES = 256 << 10
# At most this many fragments are pretokenized by one regex call: its list of pretokens is
# the largest thing a worker holds (a piece's 40,000 fragments seen once: 10 MB).
BATCH_FRAGMENTS = 4096
SEPARATOR = b"\x00"


def _byte_table(byte_values):
    table = np.zeros(256, bool)
    table[list(byte_values)] = True
    return table


# Bytes that end a character that is not whitespace: every byte but ASCII whitespace and the
# separator. (A byte of 0x80 or more may end a long whitespace character: checked apart.)
_NOT_WHITE_END = ~_byte_table([ord(c) for c in WHITESPACE if ord(c) < 0x80] + [0])
_LONG_WHITE_END = _byte_table(sequence[-1] for sequence in LONG_WHITESPACE)


def fragment_cuts(data, cut_before):
    """The cuts of `data` (UTF-8 bytes): the positions of the bytes in `cut_before` that follow
    a character that is not whitespace, as a numpy array.

    b"the cat.\\n", b"\\t\\n\\x0b\\x0c\\r " -> [3, 8]   (GPT-2's: before " cat" and before "\\n")
    """
    codes = np.frombuffer(data, np.uint8)
    cuts = np.flatnonzero(_byte_table(cut_before)[codes[1:]]) + 1
    before = codes[cuts - 1]
    cuts = cuts[_NOT_WHITE_END[before]]
    # Rare: a byte of 0x80 or more that may end a long whitespace character; look closer.
    suspects = np.flatnonzero(_LONG_WHITE_END[codes[cuts - 1]])
    if len(suspects):
        white = [i for i in suspects.tolist() if data.endswith(LONG_WHITESPACE, 0, cuts[i])]
        cuts = np.delete(cuts, white)
    return cuts


def fragment_bounds(data, cut_before):
    """(starts, ends) of the fragments of `data`, documents joined by SEPARATOR, as numpy arrays.

    b"the cat\x00a dog", b" " -> ([0, 3, 8, 9], [3, 7, 9, 13])
    """
    cuts = fragment_cuts(data, cut_before)
    separators = np.flatnonzero(np.frombuffer(data, np.uint8) == SEPARATOR[0])
    starts = np.sort(np.concatenate(([0], cuts, separators + 1)))
    ends = np.sort(np.concatenate((cuts, separators, [len(data)])))
    return starts, ends


# A fragment of up to 16 bytes (95% of web text's) is counted by numpy as the integers of its
# first and last 8 bytes, little-endian (no fragment holds a zero byte: the padding cannot be
# mistaken for one); the longer ones as bytes, by a Counter.
def _count_short(windows, starts, lengths):
    """{fragment: count} of the fragments of up to 16 bytes at `starts` (windows: the 8 bytes
    from every place as an integer, see FragmentCounter._flush)."""
    counts = {}
    for words in (1, 2):  # up to 8 bytes: one integer each, sorted faster than two
        chosen = (lengths > 8 * (words - 1)) & (lengths <= 8 * words)
        at, length = starts[chosen], lengths[chosen]
        low = windows[at] & LOW_BYTES[np.minimum(length, 8)]
        if words == 1:
            low, repeats = np.unique(low, return_counts=True)
            high = np.zeros_like(low)
        else:
            high = windows[at + 8] & LOW_BYTES[length - 8]
            order = np.lexsort((high, low))
            low, high = low[order], high[order]
            firsts = run_starts(low, high)
            repeats = np.diff(firsts, append=len(low))
            low, high = low[firsts], high[firsts]
        # As "S16" (bytes, trailing zeros dropped) the two integers are the fragment again.
        fragments = np.stack((low, high), axis=1).view("S16").ravel().tolist()
        counts.update(zip(fragments, repeats.tolist()))
    return counts


class FragmentCounter:
    """Pretoken counts of documents, equal to simple.count_pretokens(document, pattern,
    special_tokens) over each, summed. By fragments for GPT-2's, GPT-4's and nanochat's
    patterns; another pattern has no cut rule here, and its documents are pretokenized whole."""

    def __init__(self, pattern, special_tokens=()):
        self.pattern = PATTERNS.get(pattern, pattern)
        self.special_tokens = special_tokens
        self.pretokenizer = Pretokenizer(self.pattern)
        self.cut_before = CUT_BEFORE.get(self.pattern)
        self.fragments = Counter()  # {fragment bytes: count}
        self.pretokens = Counter()  # documents counted whole (no cut rule, or holding SEPARATOR)
        self.buffer = []
        self.buffered = 0

    def add(self, text):
        """Count one document; the special tokens in it are left out (and cut it in segments)."""
        for segment in split_on_special_tokens(text, self.special_tokens)[::2]:
            self._add_segment(segment)

    def _add_segment(self, text):
        data = text.encode("utf-8", "surrogatepass")
        if self.cut_before is None or SEPARATOR in data:  # cannot be joined to the others
            self.pretokens.update(self.pretokenizer.findall(text))
            return
        self.buffer.append(data)
        self.buffered += len(data) + 1
        if self.buffered >= BUFFER_BYTES:
            self._flush()

    def _flush(self):
        if not self.buffer:
            return
        data = SEPARATOR.join(self.buffer)
        self.buffer = []
        self.buffered = 0
        starts, ends = fragment_bounds(data, self.cut_before)
        lengths = ends - starts
        short = lengths <= 16
        # The 8 bytes from every place of data (up to 16 past its end: zeros), as an integer.
        windows = np.ndarray(len(data) + 9, "<u8", data + bytes(24), 0, (1,))
        self.fragments.update(_count_short(windows, starts[short], lengths[short]))
        long_ones = np.flatnonzero(~short)
        long_starts, long_ends = starts[long_ones].tolist(), ends[long_ones].tolist()
        self.fragments.update([data[start:end] for start, end in zip(long_starts, long_ends)])

    def pretoken_counts(self):
        """{pretoken: count} of every document added so far."""
        self._flush()
        counts = self.pretokens.copy()
        self.fragments.pop(b"", None)  # empty documents
        fragments = list(self.fragments)
        repeats = np.fromiter(self.fragments.values(), np.int64, len(fragments))
        joinable, ascii_only = self._kinds(fragments)
        for index in np.flatnonzero(~joinable).tolist():  # a document's first or last
            self._add_pretokens(counts, [fragments[index]], int(repeats[index]))
        # Batches of joinable fragments with the same count and kind, one regex call each.
        chosen = np.flatnonzero(joinable)
        chosen = chosen[np.lexsort((ascii_only[chosen], repeats[chosen]))]
        starts = run_starts(repeats[chosen], ascii_only[chosen]).tolist()
        chosen = chosen.tolist()
        for start, end in zip(starts, [*starts[1:], len(chosen)]):
            for first in range(start, end, BATCH_FRAGMENTS):
                batch = [fragments[i] for i in chosen[first : min(end, first + BATCH_FRAGMENTS)]]
                self._add_pretokens(counts, batch, int(repeats[chosen[start]]))
        return counts

    def _kinds(self, fragments):
        """Which fragments may be joined (they start with a cut's whitespace and end with a
        character that is not whitespace: all but a document's first or last), and which are
        all ASCII; two numpy arrays of bools."""
        lengths = np.fromiter(map(len, fragments), np.int64, len(fragments))
        ends = np.cumsum(lengths)
        starts = ends - lengths
        codes = np.frombuffer(b"".join(fragments), np.uint8)
        if not len(codes):
            return np.zeros(0, bool), np.zeros(0, bool)
        last = codes[ends - 1]
        joinable = (lengths > 1) & _byte_table(self.cut_before)[codes[starts]]
        joinable &= _NOT_WHITE_END[last]
        for index in np.flatnonzero(joinable & _LONG_WHITE_END[last]).tolist():
            joinable[index] = not fragments[index].endswith(LONG_WHITESPACE)
        ascii_only = np.maximum.reduceat(codes, starts) < 0x80
        return joinable, ascii_only

    def _add_pretokens(self, counts, fragments, repeats):
        """Add the pretokens of the fragments, each occurring `repeats` times."""
        pretokens = self.pretokenizer.findall(b"".join(fragments).decode("utf-8", "surrogatepass"))
        if repeats == 1:
            counts.update(pretokens)
            return
        for pretoken, n in Counter(pretokens).items():
            counts[pretoken] += n * repeats
