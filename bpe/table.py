"""Pretoken counts held compactly: each distinct pretoken once, in one bytes object and two arrays.

    table = PretokenTable.from_counts({"the": 5, " cat": 2})
    table.data, table.lengths, table.counts      # b"the cat", [3, 4], [5, 2]
    PretokenTable.total([table, table]).to_counter()   # Counter({"the": 10, " cat": 4})

A {str: int} dict holds a pretoken in about 100 bytes (the str, the int, the dict's slot); a
table holds its UTF-8 bytes and 12 more (an int32 length, an int64 count). The corpus's worker
processes send their counts as tables (a bytes object and two arrays to pickle, not a dict of
a hundred thousand entries), the main process adds them up with `total` (numpy, no Python
object per pretoken), and the trainer reads its pretokens from the table's arrays.

`total` equals adding the dicts up with Counter.update, order included: a pretoken comes
where it was first seen (first table first), so `to_counter()` is that Counter, item for item.
"""

from collections import Counter

import numpy as np

# (1 << 8 * n) - 1: the low n bytes of a little-endian uint64 (fragments.py's too).
LOW_BYTES = np.array([(1 << 8 * n) - 1 for n in range(9)], np.uint64)
# Up to this many bytes a pretoken is compared as uint64 words, longer ones as rows of bytes.
WORDS_MAX_BYTES = 64


def run_starts(values, *more):
    """Where each run of equal rows of sorted columns starts: [3, 3, 5] -> [0, 2];
    [3, 3, 5], [1, 2, 2] -> [0, 1, 2]."""
    changes = np.ones(len(values), bool)
    changes[1:] = values[1:] != values[:-1]
    for column in more:
        changes[1:] |= column[1:] != column[:-1]
    return np.flatnonzero(changes)


class PretokenTable:
    """Distinct pretokens (UTF-8, joined in `data`) with their `lengths` in bytes and `counts`."""

    def __init__(self, data, lengths, counts):
        self.data = data
        self.lengths = np.asarray(lengths, np.int32)
        self.counts = np.asarray(counts, np.int64)

    @classmethod
    def from_counts(cls, counts):
        """{"the": 5, " cat": 2} -> data b"the cat", lengths [3, 4], counts [5, 2]."""
        encoded = [pretoken.encode("utf-8") for pretoken in counts]
        lengths = np.fromiter(map(len, encoded), np.int32, len(encoded))
        return cls(b"".join(encoded), lengths, np.fromiter(counts.values(), np.int64, len(counts)))

    def __len__(self):
        return len(self.lengths)

    def items(self):
        """(pretoken, count) pairs, as a dict's items(): ("the", 5), (" cat", 2)."""
        ends = np.cumsum(self.lengths).tolist()
        data, start = self.data, 0
        for end, count in zip(ends, self.counts.tolist()):
            yield data[start:end].decode("utf-8"), count
            start = end

    def to_counter(self):
        return Counter(dict(self.items()))

    def starts(self):
        """Where each pretoken starts in `data`: lengths [3, 4] -> [0, 3]."""
        return np.cumsum(self.lengths, dtype=np.int64) - self.lengths

    @classmethod
    def total(cls, tables):
        """One table of the tables' pretokens, each once with its counts added, in the order
        first seen: [{"a": 1, "b": 2}, {"c": 1, "a": 5}] -> {"a": 6, "b": 2, "c": 1}."""
        tables = [table for table in tables if len(table)]
        if len(tables) < 2:
            return tables[0] if tables else cls(b"", [], [])
        joined = cls(
            b"".join(table.data for table in tables),
            np.concatenate([table.lengths for table in tables]),
            np.concatenate([table.counts for table in tables]),
        )
        firsts, counts = joined._distinct()
        return cls(joined._gather(firsts), joined.lengths[firsts], counts)

    def _distinct(self):
        """-> (the index of each distinct pretoken's first place, ascending; its total count).

        Pretokens of the same length are sorted by fixed-size keys (_keys), so equal ones
        end up side by side. b"ab", b"c", b"ab" (counts 1 each) -> [0, 1], [2, 1]
        """
        # Stable sorts of 16-bit values are radix sorts: a length is capped there, and the
        # (rare) pretokens of 0xFFFF bytes or more are grouped by a dict.
        capped = np.minimum(self.lengths, 0xFFFF).astype(np.uint16)
        by_length = np.argsort(capped, kind="stable")
        bounds = [*run_starts(capped[by_length]).tolist(), len(by_length)]
        total_at = np.zeros(len(self), np.int64)  # each distinct one's total, at its first index
        starts, codes = self.starts(), np.frombuffer(self.data, np.uint8)
        # The 8 bytes from every place of data (past its end: zeros), as one integer.
        words = np.ndarray(len(codes) + 1, "<u8", self.data + bytes(8), 0, (1,))
        for low, high in zip(bounds, bounds[1:]):
            index = by_length[low:high]  # ascending: the sort was stable
            if capped[index[0]] == 0xFFFF:
                self._add_long(index, starts, total_at)
                continue
            keys = _keys(codes, words, starts[index], int(capped[index[0]]))
            order = np.lexsort(keys) if len(keys) > 1 else np.argsort(keys[0])
            groups = run_starts(*(key[order] for key in keys))
            firsts = np.minimum.reduceat(index[order], groups)
            total_at[firsts] = np.add.reduceat(self.counts[index[order]], groups)
        firsts = np.flatnonzero(total_at)  # every count is at least 1
        return firsts, total_at[firsts]

    def _add_long(self, index, starts, total_at):
        """_distinct's grouping of the pretokens at `index` (ascending), by a dict."""
        firsts = {}
        for at in index.tolist():
            pretoken = self.data[starts[at] : starts[at] + self.lengths[at]]
            first = firsts.setdefault(pretoken, at)
            total_at[first] += self.counts[at]

    def _gather(self, chosen, chunk=1 << 16):
        """The bytes of the pretokens at the indexes `chosen`, joined, in that order."""
        starts, codes = self.starts(), np.frombuffer(self.data, np.uint8)
        parts = []
        for at in range(0, len(chosen), chunk):
            some = chosen[at : at + chunk]
            lengths = self.lengths[some].astype(np.int64)
            offsets = np.repeat(starts[some] - (np.cumsum(lengths) - lengths), lengths)
            parts.append(codes[offsets + np.arange(len(offsets))].tobytes())
        return b"".join(parts)


def _keys(codes, words, starts, length):
    """Sort keys of the pretokens at `starts`, all of `length` bytes: up to WORDS_MAX_BYTES,
    their 8-byte words (`words`: from every place of `codes`; the last one's bytes past the
    pretoken masked off); longer, their bytes as one opaque value each (compared bytewise, more
    slowly). b"abcdefghij" -> [u64 of b"abcdefgh", u64 of b"ij"]."""
    if length > WORDS_MAX_BYTES:
        rows = np.lib.stride_tricks.sliding_window_view(codes, length)[starts]
        return [rows.view(f"V{length}").ravel()]
    keys = [words[starts + at] for at in range(0, length, 8)] or [words[starts]]
    keys[-1] &= LOW_BYTES[length - 8 * (len(keys) - 1)]
    return keys
