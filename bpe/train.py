"""The fast trainer: the same merges as `simple.train`, learned without rescanning the text.

    vocab, merges = train_bpe("input.txt", vocab_size=4096, special_tokens=["<|endoftext|>"])

`simple.train` states the rule (most frequent pair, ties to the greatest bytes, a pair whose
bytes already are a token passed over, an early stop with a warning) and this module follows
it exactly; the tests prove the two equal on random and real text. It is fast in three ways:

1. Pretokens are counted once, and the merges are learned from those counts (which worker
   processes, or many machines, may count: `train_bpe_from_counts`).
2. `learn_merges` never rescans: a merge only changes the places that hold the pair, so
   it keeps, for each pair, its count and where it is, and a heap of the counts. Memory: the
   pretokens are a PretokenTable (table.py), and the pairs far below the top (most of them)
   wait in flat arrays, not dicts (FlatPretokens).
3. All pretokens are one array of ids linked past the merged places (FlatPretokens): a merge
   at thousands of places (the first ones) is made by numpy, at a few by a Python loop. Its
   time is linear in the length of a pretoken: a line of 2,000,000 "x" is 1,000,000 places of
   (x, x), merged by numpy in one go.

On the rule that passes over a pair whose joined bytes already are a token: we have not met
a corpus where it happens (merging Tiny Shakespeare line by line until no pair is left,
177,254 merges, passes over none); the check costs one set lookup per merge.
"""

import logging
import warnings
from array import array
from collections import Counter, defaultdict
from heapq import heapify, heappop, heappush

import numpy as np

from .checks import check_pattern, check_training_args
from .fragments import FragmentCounter
from .io import read_text
from .table import PretokenTable, run_starts

log = logging.getLogger(__name__)

# ------------------------------------------------------ Pretokenization: text -> {pretoken: count}


def count_pretokens(text, pattern="gpt2", special_tokens=()):
    """Equal to simple.count_pretokens, counted by fragments (fragments.py).

    "the cat the" -> Counter({"the": 1, " cat": 1, " the": 1})
    """
    counter = FragmentCounter(check_pattern(pattern), special_tokens)
    counter.add(text)
    return counter.pretoken_counts()


# --------------------------------------------- The fast merge loop over a table of pretoken counts

# Heap keys must put the greatest (bytes, bytes) first. Token t gets the string
# chr(256 - b) for each byte b, then _END (greater than all those chars): comparing
# two such strings reverses the bytes order, including "a prefix is smaller".
_END = "\u0400"


def _descending_key(token):
    """b"ab" -> "\\u009f\\u009e\\u0400": key(x) < key(y) exactly when x > y as bytes."""
    return "".join(chr(256 - b) for b in token) + _END


def learn_merges(table, num_merges, progress=None):
    """The merges learned from a PretokenTable, as (left id, right id) pairs.

    {"aaab": 2, "aaac": 1}, 2 -> ([(97, 97), (256, 97)], token bytes by id, 0 skipped)

    Equal to simple.train's loop (same merges, same ties, same pairs passed over), in the same
    three phases, side by side:

        simple.train                            here
        get_pair_counts over the pretokens      FlatPretokens, once (the table is kept up to date)
        max(candidates, key=...)                BestPair.pop
        merge_pair on every pretoken            FlatPretokens.merge

    It never rescans: a merge of (a, b) only changes the places holding a next to b, so it
    keeps, for each pair, where it is. A pair (a, b) is the int a << shift | b in the dicts:
    they hold many pairs, and an int is made and hashed faster than a tuple.
    """
    tokens = [bytes([b]) for b in range(256)]
    known = set(tokens)
    keys = [_descending_key(t) for t in tokens]
    shift = (256 + num_merges).bit_length()  # every id is below 1 << shift
    flat = FlatPretokens(table, shift)
    best_pair = BestPair(flat, keys)
    merges = []
    skipped = 0
    while len(merges) < num_merges:
        pair = best_pair.pop()
        if pair is None:
            break  # no pair left
        a, b = pair >> shift, pair & best_pair.mask
        token = tokens[a] + tokens[b]
        if token in known:  # simple.train's candidates leave it out
            best_pair.never.add(pair)
            skipped += 1
            continue
        new = len(tokens)
        tokens.append(token)
        known.add(token)
        keys.append(keys[a][:-1] + keys[b])
        merges.append((a, b))
        best_pair.push(flat.merge(pair, new, best_pair.floor))
        if progress:
            progress("merge", len(merges), num_merges)
    return merges, tokens, skipped


# A merge at this many places or more is made by numpy (FlatPretokens._merge_many): below,
# its ~30 numpy calls cost more than a Python loop over the places (_merge_few). Measured on
# docs20: 236 against 215 us a merge at 32-63 places, 280 against 460 us at 64-127.
FLAT_MIN_PLACES = 48
SEPARATOR = -1  # in FlatPretokens.ids, after each pretoken
GONE = -2  # in FlatPretokens.ids, the right place of a merged pair


class FlatPretokens:
    """Phases 1 and 3 over every pretoken at once: the pair counts, then the merges.

    Pretokens b"ab", b"a" counted 3 and 1 times -> ids [97, 98, -1, 97, -1] (SEPARATOR after
    each pretoken), weight [3, 3, 3, 1, 1] (the count of the pretoken each place is in), and
    the pair 97 << shift | 98 counted 3 times, at the places [0] (where its left id is).

    A pair is tracked or waiting. A tracked pair has its count in pair_counts and its places in
    `places` (some stale, none missing, in order). Most pairs are never merged (of the 665,000
    pairs made learning 32,503 merges from 200 MB of Linux source, 70,000 ever came near the
    top), and a pair's count never grows (a merge only takes occurrences away, and makes pairs
    holding its new token, with their counts then): so a pair made below the heap's floor
    (BestPair) waits in `waiting`, compactly, its count then an upper bound, until the floor
    comes down to that bound (`admit`).

    A merge of (a, b) writes the new id at the left place of each occurrence and GONE at the
    right one; `after` and `before` link the places still there, skipping the gone ones. The
    arrays are array.array, read one item at a time by _merge_few, and numpy arrays over the
    same memory (the `_np` names) for _merge_many.
    """

    def __init__(self, table, shift):
        self.shift = shift
        size = len(table.data) + len(table)  # the bytes of each pretoken, then a SEPARATOR
        self.ids, self.ids_np = _filled(size, np.int32, SEPARATOR)
        is_byte = np.ones(size, bool)
        is_byte[np.cumsum(table.lengths + 1, dtype=np.int64) - 1] = False
        self.ids_np[is_byte] = np.frombuffer(table.data, np.uint8)
        del is_byte
        counts = table.counts
        if len(counts) and counts.max() < 2**31:
            counts = counts.astype(np.int32)  # half the memory
        self.weight, self.weight_np = _shared(np.repeat(counts, table.lengths + 1))
        self.after, self.after_np = _shared(np.arange(1, size + 1, dtype=np.int32))
        # before[0] is -1: ids[-1] is a SEPARATOR
        self.before, self.before_np = _shared(np.arange(-1, size - 1, dtype=np.int32))
        self.pair_counts, self.places = {}, {}
        self.waiting = WaitingPairs()
        self.waiting.add(*self._byte_pairs())

    def _byte_pairs(self):
        """The pairs of the pretokens' bytes, grouped: (pairs, counts, places, starts) as
        WaitingPairs.add takes them. The largest arrays are made one at a time."""
        ids = self.ids_np
        left = np.flatnonzero((ids[:-1] >= 0) & (ids[1:] >= 0)).astype(np.int32)
        keys = ids[left].astype(np.uint16) << 8  # numpy sorts 16 bits by radix
        keys |= ids[1:][left].astype(np.uint16)
        order = np.argsort(keys, kind="stable")
        places, keys = left[order], keys[order]
        del left, order
        starts = run_starts(keys)
        counts = np.add.reduceat(self.weight_np[places], starts, dtype=np.int64)
        keys = keys[starts].astype(np.int64)
        return keys >> 8 << self.shift | keys & 255, counts, places, starts

    def admit(self, floor):
        """Track the waiting pairs whose upper bound is at least `floor`: their counts are
        their places still holding them, weighed. -> those pairs (0 counts left out)."""
        pairs, places, starts = self.waiting.take(floor)
        if not len(pairs):
            return []
        owner = np.repeat(np.arange(len(pairs)), np.diff(starts, append=len(places)))
        shift, ids = self.shift, self.ids_np
        left, right = pairs[owner] >> shift, pairs[owner] & ((1 << shift) - 1)
        still = (ids[places] == left) & (ids[self.after_np[places]] == right)
        places, owner = places[still], owner[still]
        counts = np.zeros(len(pairs), np.int64)
        np.add.at(counts, owner, self.weight_np[places])
        bounds = np.searchsorted(owner, np.arange(len(pairs) + 1)).tolist()
        admitted = []
        for index, (pair, count) in enumerate(zip(pairs.tolist(), counts.tolist())):
            if count:
                self.pair_counts[pair] = count
                self.places[pair] = places[bounds[index] : bounds[index + 1]]
                admitted.append(pair)
        return admitted

    def merge(self, merged, new, floor):
        """simple.merge_pair(ids, merged, new) on every pretoken, and get_pair_counts after
        minus before added to the tracked pairs' counts -> the pairs holding `new` counted at
        least `floor` times, tracked, and their counts (the others wait)."""
        at = self.places.pop(merged)
        if len(at) >= FLAT_MIN_PLACES:
            fresh, places = self._merge_many(merged, new, np.asarray(at))
        else:
            fresh, places = self._merge_few(merged, new, at)
        del self.pair_counts[merged]
        tracked = {}
        for pair, count in fresh.items():  # pairs holding `new` are new: nothing to add to
            if count >= floor:
                tracked[pair] = count
                self.places[pair] = places[pair]
            else:
                self.waiting.add_one(pair, count, places[pair])
        self.pair_counts.update(tracked)
        return tracked

    def _merge_few(self, merged, new, at):
        """merge, one place at a time (left to right, so two occurrences never overlap)."""
        ids, after, before, weight = self.ids, self.after, self.before, self.weight
        pair_counts, shift = self.pair_counts, self.shift
        a, b = merged >> shift, merged & ((1 << shift) - 1)
        b_high, new_high = b << shift, new << shift
        fresh, places = defaultdict(int), defaultdict(list)
        follows = False  # two occurrences in a row: (new, a) made, then lost
        for place in at if at.__class__ is list else at.tolist():
            if ids[place] != a:
                continue  # stale: an earlier merge took `a` away
            right = after[place]
            if ids[right] != b:
                continue  # stale
            count = weight[place]
            left, beyond = before[place], after[right]
            x, y = ids[left], ids[beyond]
            if x >= 0:
                if x == new:  # the occurrence just before, merged a moment ago: (new, a) lost
                    fresh[new_high | a] -= count
                    follows = True
                elif (x << shift | a) in pair_counts:  # else it waits, its bound unchanged
                    pair_counts[x << shift | a] -= count
                fresh[x << shift | new] += count
                places[x << shift | new].append(left)
            if y >= 0:
                if (b_high | y) in pair_counts:
                    pair_counts[b_high | y] -= count
                fresh[new_high | y] += count
                places[new_high | y].append(place)
            ids[place], ids[right] = new, GONE
            after[place], before[beyond] = beyond, place
        if follows:
            fresh = {pair: count for pair, count in fresh.items() if count}
        return fresh, places

    def _merge_many(self, merged, new, at):
        """merge, on every place at once by numpy: the same counts as _merge_few."""
        shift, ids, after, before = self.shift, self.ids_np, self.after_np, self.before_np
        a, b = merged >> shift, merged & ((1 << shift) - 1)
        right = after[at]
        now = (ids[at] == a) & (ids[right] == b)  # the stale places fall out
        at, right = at[now], right[now]
        if a == b:  # in a run of a's, every other place from the run's start: merge_pair's
            index = np.arange(len(at))
            first = np.maximum.accumulate(np.where(ids[before[at]] != a, index, 0))
            at = at[(index - first) % 2 == 0]
            right = after[at]
        left, beyond = before[at], after[right]
        x, y, weight = ids[left], ids[beyond], self.weight_np[at].astype(np.int64)
        # Two occurrences in a row (a b a b): their middle pair (b, a) is lost once, on the
        # right of the first, and (new, new) made once, also there.
        follows = left[1:] == right[:-1]
        ids[at], ids[right] = new, GONE
        after[at], before[beyond] = beyond, at
        has_x, has_y = x >= 0, y >= 0
        has_x[1:] &= ~follows
        x, y = x[has_x].astype(np.int64), y[has_y].astype(np.int64)
        y_now = ids[beyond[has_y]].astype(np.int64)  # read after the writes: `new` if followed
        weights = np.concatenate((weight[has_x], weight[has_y]))
        lost, counts, _, _ = _grouped(np.concatenate((x << shift | a, b << shift | y)), weights)
        pair_counts = self.pair_counts
        for pair, count in zip(lost.tolist(), counts.tolist()):
            if pair in pair_counts:  # else it waits, its bound unchanged
                pair_counts[pair] -= count
        made = np.concatenate((x << shift | new, new << shift | y_now))
        places = np.concatenate((left[has_x], at[has_y]))
        made, counts, places, starts = _grouped(made, weights, places)
        bounds = [*starts.tolist(), len(places)]
        made = made.tolist()
        return (
            dict(zip(made, counts.tolist())),
            {pair: places[bounds[i] : bounds[i + 1]] for i, pair in enumerate(made)},
        )


def _grouped(keys, weights, places=None):
    """Parallel arrays grouped by key -> (each key once, ascending, as an int64 array; the
    total weight of each; with `places`, the places sorted by key, and where each key's start).

    [5, 3, 5], [1, 2, 4], [7, 8, 9] -> [3, 5], [2, 5], [8, 7, 9], [0, 1]
    """
    if not len(keys):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, int)
    order = keys.argsort(kind="stable")
    keys = keys[order]
    starts = run_starts(keys)
    totals = np.add.reduceat(weights[order].astype(np.int64), starts)
    keys = keys[starts].astype(np.int64)
    return keys, totals, None if places is None else places[order], starts


def _shared(values):
    """An array.array copy of a numpy array of int32 or int64, and a numpy array over its memory."""
    shared, view = _filled(len(values), values.dtype)
    view[:] = values
    return shared, view


def _filled(size, dtype, value=0):
    """An array.array of `size` items of `value` (int32 or int64, as `dtype`), and a numpy array
    over its memory: made in place, with no temporary copy."""
    shared = array({4: "i", 8: "q"}[np.dtype(dtype).itemsize], [value]) * size
    return shared, np.frombuffer(shared, dtype)


class WaitingPairs:
    """The pairs waiting below the heap's floor (FlatPretokens), in flat arrays rather than
    dicts: each pair (a << shift | b), an upper bound of its count, and where its places end in
    `pool` (they start where the previous pair's end). About 28 bytes a pair and 4 a place,
    where a tracked pair takes about 200 in its dicts.
    """

    def __init__(self):
        self.pairs, self.bounds, self.ends = array("q"), array("q"), array("q")
        self.pool = array("i")

    def add(self, pairs, counts, places, starts):
        """Many pairs: `places` of them all, those of the i-th from starts[i] on."""
        ends = np.append(starts[1:], len(places)).astype(np.int64) + len(self.pool)
        for stored, values, dtype in [
            (self.pairs, pairs, np.int64),
            (self.bounds, counts, np.int64),
            (self.ends, ends, np.int64),
            (self.pool, places, np.int32),
        ]:
            stored.frombytes(np.asarray(values, dtype).tobytes())

    def add_one(self, pair, count, places):
        self.pairs.append(pair)
        self.bounds.append(count)
        if places.__class__ is list:
            self.pool.extend(places)
        else:
            self.pool.frombytes(places.astype(np.int32).tobytes())
        self.ends.append(len(self.pool))

    def largest_bound(self):
        return max(self.bounds, default=0)

    def take(self, floor):
        """The pairs whose bound is at least `floor`, which leave -> (pairs, their places in one
        array, where each pair's start), as `add` takes them."""
        bounds, pairs = np.frombuffer(self.bounds, np.int64), np.frombuffer(self.pairs, np.int64)
        leaving = bounds >= floor
        if not leaving.any():
            return pairs[:0], np.zeros(0, np.int32), np.zeros(0, np.int64)
        ends = np.frombuffer(self.ends, np.int64)
        lengths = np.diff(ends, prepend=0)
        in_pool = np.repeat(leaving, lengths)
        pool = np.frombuffer(self.pool, np.int32)
        taken = pairs[leaving], pool[in_pool], np.cumsum(lengths[leaving]) - lengths[leaving]
        staying = ~leaving
        self.pairs, _ = _shared(pairs[staying])
        self.bounds, _ = _shared(bounds[staying])
        self.ends, _ = _shared(np.cumsum(lengths[staying]))
        self.pool, _ = _shared(pool[~in_pool])
        return taken


class BestPair:
    """Phase 2, equal to simple.train's max(candidates, key=(count, left bytes, right bytes)),
    without looking at every pair each time.

    A heap holds (-count, key of a + key of b, pair): the highest count first, ties to the
    greatest bytes (_descending_key; as each key ends with _END and only there, the joined keys
    sort as the pairs of keys would). Its entries may be stale: an entry whose count has since
    changed is put back with the new count when it reaches the top. Most pairs are never merged
    (half of those made are seen once), so the heap only holds the pairs counted at least
    `floor` times: the others wait, untracked (FlatPretokens.waiting), or tracked in buckets by
    bit length (counts in [2**(k - 1), 2**k) in buckets[k]) if their count fell below the floor,
    until the heap is empty and the floor halves.
    """

    def __init__(self, flat, keys):
        self.flat = flat
        self.pair_counts = flat.pair_counts  # the table FlatPretokens.merge keeps up to date
        self.keys = keys  # _descending_key of each token, by id
        self.shift = flat.shift
        self.mask = (1 << self.shift) - 1
        self.never = set()  # pairs passed over (their bytes already are a token)
        self.floor = 1 << flat.waiting.largest_bound().bit_length()  # above every count
        self.buckets = [[] for _ in range(self.floor.bit_length() + 1)]
        self.heap = []

    def pop(self):
        """The pair with the highest count, ties to the greatest bytes; None when none is left."""
        heap, buckets, get = self.heap, self.buckets, self.pair_counts.get
        while True:
            if not heap:
                if self.floor == 1:
                    return None
                self._lower_floor()
                continue
            negative, key, pair = heappop(heap)
            count = get(pair, 0)
            if count != -negative:  # stale: put back with its count, or wait in a bucket
                if count >= self.floor:
                    heappush(heap, (-count, key, pair))
                elif count:
                    buckets[count.bit_length()].append(pair)
            elif pair not in self.never:
                return pair

    def _lower_floor(self):
        """Halve the floor; the pairs waiting in the bucket just above it, and the untracked
        ones whose bound reaches it, enter the heap."""
        self.floor >>= 1
        floor, get, keys = self.floor, self.pair_counts.get, self.keys
        waiting, self.buckets[floor.bit_length()] = self.buckets[floor.bit_length()], []
        entering = []
        for pair in waiting + self.flat.admit(floor):
            count = get(pair, 0)
            if count >= floor:
                entering.append((-count, keys[pair >> self.shift] + keys[pair & self.mask], pair))
            elif count:
                self.buckets[count.bit_length()].append(pair)
        self.heap += entering
        heapify(self.heap)  # one O(n) pass, not a push each

    def push(self, fresh):
        """Add the pairs a merge made ({pair: count}, each holding the new token, at the floor
        or above)."""
        heap, keys, shift, mask = self.heap, self.keys, self.shift, self.mask
        for pair, count in fresh.items():
            heappush(heap, (-count, keys[pair >> shift] + keys[pair & mask], pair))


# ---------------------------------------------------------------- The public trainers


def train_bpe(input_path, vocab_size, special_tokens=(), pattern="gpt2", progress=None):
    """Train a byte-level BPE on a UTF-8 text file -> (vocab, merges); equal to simple.train.

    vocab: {id: bytes}, ids 0..len-1: 0-255 the single bytes, then one id per merge in
    order (the two parts joined), then the special tokens in the order given.
    merges: [(left bytes, right bytes), ...] in creation order.
    vocab_size counts all three. The rule, ties and pairs passed over: see simple.train.
    `progress(stage, done, total)`, if given, is called during "pretokenize" (characters) and
    "merge" (merges), e.g. to drive a progress bar.
    """
    check_training_args(vocab_size, special_tokens, pattern)  # before the file is read
    text = read_text(input_path)
    return _train_on_texts([text], vocab_size, special_tokens, pattern, progress)


def train_bpe_from_counts(pretoken_counts, vocab_size, special_tokens=(), progress=None):
    """train_bpe on a {pretoken: count} dict, or a PretokenTable, already made (by worker
    processes, or by many machines, added up); the special tokens only get their ids at the
    end."""
    num_merges, special_tokens, _ = check_training_args(vocab_size, special_tokens, "gpt2")
    return _train_on_counts(pretoken_counts, num_merges, vocab_size, special_tokens, progress)


def train_bpe_from_iterator(texts, vocab_size, special_tokens=(), pattern="gpt2", progress=None):
    """train_bpe over strings already in memory; each text is split and pretokenized alone.

    ["aaabdaaabac"], vocab_size=259 -> the same as simple.train("aaabdaaabac", 259).
    """
    return _train_on_texts(texts, vocab_size, special_tokens, pattern, progress)


def _train_on_texts(texts, vocab_size, special_tokens, pattern, progress):
    num_merges, special_tokens, pattern = check_training_args(vocab_size, special_tokens, pattern)
    total = sum(map(len, texts)) if isinstance(texts, (list, tuple)) else None
    counts, done = Counter(), 0
    for text in texts:
        counts.update(count_pretokens(text, pattern, special_tokens))
        done += len(text)
        if progress:
            progress("pretokenize", done, total)
    return _train_on_counts(counts, num_merges, vocab_size, special_tokens, progress)


def _train_on_counts(counts, num_merges, vocab_size, special_tokens, progress):
    table = counts if isinstance(counts, PretokenTable) else PretokenTable.from_counts(counts)
    merges, tokens, skipped = learn_merges(table, num_merges, progress)
    if skipped:
        log.info("passed over %d pair(s) whose merge would have duplicated a token", skipped)
    if len(merges) < num_merges:
        warnings.warn(
            f"asked for vocab_size {vocab_size}, got {vocab_size - num_merges + len(merges)}: "
            f"no pair left to merge after {len(merges)} merge(s); the text is too small",
            stacklevel=4,  # point at the code that called the public trainer
        )
    vocab = dict(enumerate(tokens + [token.encode("utf-8") for token in special_tokens]))
    return vocab, [(tokens[a], tokens[b]) for a, b in merges]
