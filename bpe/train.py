"""Learning BPE merges from text.

    vocab, merges = train_bpe("input.txt", vocab_size=4096, special_tokens=["<|endoftext|>"])

The rule, exactly (both implementations below follow it):

1. The text is split on the special tokens (longest first); they are never counted and
   no merge spans one. Each special token gets one id after all the merges, in the
   order given (GPT-2's layout: 256 bytes, then the merges, then `<|endoftext|>`).
2. Each piece is cut into pre-tokens by the pattern (patterns.py). Merges never cross
   a pre-token boundary.
3. Repeatedly, the most frequent adjacent pair of tokens inside the pre-tokens is merged
   into a new token with the next id. `aaa` holds the pair (a, a) twice; replacement is
   left to right and non-overlapping (core.merge_pair). Ties go to the greatest pair by
   (bytes of left token, bytes of right token), so the result does not depend on the
   order of the input.
4. A pair whose concatenation is already a token (b"abc" made as (ab, c), and now
   (a, bc) is the most frequent) is skipped for good: a second id with the same bytes
   could not be written as tiktoken's {bytes: rank} table. The next best pair is taken,
   and the number skipped is logged. (We have not met a corpus where this happens:
   merging Tiny Shakespeare line by line until no pair is left, 177,254 merges, skips
   none. The check costs one set lookup per merge and makes it impossible.)
5. When no pair is left before `vocab_size` is reached, training stops with a warning
   ("asked for vocab_size 160, got 111") and the smaller vocabulary is returned.

`train_bpe_simple` is the readable version (it rescans everything for every merge);
`train_bpe` / `train_bpe_from_iterator` are the fast ones. Tests prove they are equal.
"""

import heapq
import logging
import multiprocessing
import os
import re
import warnings
from collections import Counter
from pathlib import Path

import regex

from .core import get_pair_counts, merge_pair
from .patterns import GPT2_PATTERN, GPT4_PATTERN, PreTokenizer, resolve_pattern

log = logging.getLogger(__name__)

# Below this many characters a file is pre-tokenized in this process: starting worker
# processes and shipping text to them costs more than it saves.
PARALLEL_MIN_CHARS = 500_000


# ---------------------------------------------------------------------------
# Arguments, special tokens, the final vocabulary
# ---------------------------------------------------------------------------


def _check_special_tokens(special_tokens):
    """("<|endoftext|>",) -> ["<|endoftext|>"]; a duplicate, an empty token or a bare str raise."""
    if isinstance(special_tokens, (str, bytes)):
        raise TypeError(
            f"special_tokens must be a list of strings, not the single string {special_tokens!r}"
        )
    tokens = list(special_tokens)
    for token in tokens:
        if not isinstance(token, str) or not token:
            raise ValueError(f"special token {token!r} must be a non-empty string")
    duplicates = sorted({t for t in tokens if tokens.count(t) > 1})
    if duplicates:
        raise ValueError(f"special tokens must be distinct; repeated: {duplicates}")
    return tokens


def _num_merges(vocab_size, special_tokens):
    """The number of merges asked for: vocab_size 259, no special tokens -> 3."""
    smallest = 256 + len(special_tokens)
    if not isinstance(vocab_size, int) or vocab_size < smallest:
        raise ValueError(
            f"vocab_size {vocab_size!r} is too small: the 256 byte tokens and "
            f"{len(special_tokens)} special token(s) alone need {smallest}"
        )
    return vocab_size - smallest


def split_on_special_tokens(text, special_tokens):
    """Cut text at the special tokens, dropping them (longest first).

    "a<|endoftext|>b", ["<|endoftext|>"] -> ["a", "b"];   "ab", [] -> ["ab"]
    """
    if not special_tokens:
        return [text]
    return _special_regex(special_tokens).split(text)


def _special_regex(special_tokens):
    # Longest first, so that a token which is a prefix of another never wins.
    ordered = sorted(special_tokens, key=len, reverse=True)
    return re.compile("|".join(re.escape(token) for token in ordered))


def _finish(tokens, merges, special_tokens, num_merges, skipped, stacklevel):
    """Build (vocab, merges) from the token bytes by id, and report a short vocabulary."""
    if skipped:
        log.info("skipped %d pair(s) whose merge would have duplicated an existing token", skipped)
    if len(merges) < num_merges:
        asked = 256 + num_merges + len(special_tokens)
        got = 256 + len(merges) + len(special_tokens)
        warnings.warn(
            f"asked for vocab_size {asked}, got {got}: no pair left to merge after "
            f"{len(merges)} merge(s) ({skipped} skipped as duplicates); the text is too small",
            stacklevel=stacklevel,  # point at the caller of the public function
        )
    vocab = dict(enumerate(tokens))
    for token in special_tokens:
        vocab[len(vocab)] = token.encode("utf-8")
    return vocab, [(tokens[a], tokens[b]) for a, b in merges]


# ---------------------------------------------------------------------------
# The readable reference
# ---------------------------------------------------------------------------


def train_bpe_simple(text, vocab_size, special_tokens=(), pattern="gpt2"):
    """The reference trainer, minbpe style: count every pair again for every merge.

    "aaabdaaabac", vocab_size=259 -> merges [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b")]

    Slow (it rescans all the text per merge) but short enough to check by eye; the fast
    trainers must return exactly what this returns. See the module docstring for the rule.
    """
    special_tokens = _check_special_tokens(special_tokens)
    num_merges = _num_merges(vocab_size, special_tokens)
    compiled = regex.compile(resolve_pattern(pattern))
    chunks = [
        list(chunk.encode("utf-8"))
        for piece in split_on_special_tokens(text, special_tokens)
        for chunk in compiled.findall(piece)
    ]
    tokens = [bytes([b]) for b in range(256)]  # token bytes by id
    merges = []  # (left id, right id) by creation
    never = set()  # pairs skipped because their bytes already are a token
    skipped = 0
    while len(merges) < num_merges:
        counts = {}
        for ids in chunks:
            get_pair_counts(ids, counts)
        pair = None
        while pair is None:
            candidates = [p for p in counts if p not in never]
            if not candidates:
                break
            best = max(candidates, key=lambda p: (counts[p], tokens[p[0]], tokens[p[1]]))
            if tokens[best[0]] + tokens[best[1]] in tokens:
                never.add(best)
                skipped += 1
            else:
                pair = best
        if pair is None:
            break
        new_id = len(tokens)
        tokens.append(tokens[pair[0]] + tokens[pair[1]])
        merges.append(pair)
        chunks = [merge_pair(ids, pair, new_id) for ids in chunks]
    return _finish(tokens, merges, special_tokens, num_merges, skipped, stacklevel=3)


# ---------------------------------------------------------------------------
# Pre-tokenization: text -> {pre-token: count}
# ---------------------------------------------------------------------------


def count_pretokens(text, pattern="gpt2", special_tokens=()):
    """How often each pre-token occurs: "the cat the" -> Counter({"the": 1, " cat": 1, " the": 1})."""
    pretokenizer = PreTokenizer(pattern)  # regex.findall, faster on all-ASCII text
    counts = Counter()
    for piece in split_on_special_tokens(text, special_tokens):
        counts.update(pretokenizer.findall(piece))
    return counts


def _count_chunk(job):
    text, pattern, special_tokens = job
    return count_pretokens(text, pattern, special_tokens)


def _straddles_special(text, position, special_tokens):
    """True if some occurrence of a special token has `position` strictly inside it."""
    for token in special_tokens:
        start = max(0, position - len(token) + 1)
        if text.find(token, start, position + len(token) - 1) != -1:
            return True
    return False


def chunk_bounds(text, target_chars, pattern="gpt2", special_tokens=()):
    """Cut points that split `text` into pieces of about `target_chars` each, placed where
    pre-tokenizing the pieces separately gives exactly the pre-tokens of the whole text.

    For the GPT-2/GPT-4 patterns that is right after a newline which has a non-space
    character on both sides ("x\\nY"): no pre-token spans it, and the pattern's `$` and
    look-aheads see the same thing on either side. Any pattern may also be cut right
    before a special token (the text is split there anyway); a custom pattern only there.
    Returns [0, ..., len(text)].
    """
    on_lines = resolve_pattern(pattern) in (GPT2_PATTERN, GPT4_PATTERN)
    special = _special_regex(special_tokens) if special_tokens else None
    bounds = [0]
    position = target_chars
    while position < len(text):
        cut = None
        if on_lines:
            newline = text.find("\n", position)
            while newline != -1 and cut is None:
                if (
                    0 < newline < len(text) - 1
                    and not text[newline - 1].isspace()
                    and not text[newline + 1].isspace()
                    and not _straddles_special(text, newline + 1, special_tokens)
                ):
                    cut = newline + 1
                else:
                    newline = text.find("\n", newline + 1)
        if special is not None:
            match = special.search(text, position)
            while match and _straddles_special(text, match.start(), special_tokens):
                match = special.search(text, match.start() + 1)
            if match and (cut is None or match.start() < cut):
                cut = match.start()
        if cut is None or cut >= len(text):
            break
        bounds.append(cut)
        position = cut + target_chars
    bounds.append(len(text))
    return bounds


def count_pretokens_parallel(
    text, pattern="gpt2", special_tokens=(), num_workers=None, progress=None
):
    """count_pretokens, in worker processes over chunks cut by chunk_bounds; equal result."""
    num_workers = num_workers or os.cpu_count() or 1
    if num_workers < 2 or len(text) < PARALLEL_MIN_CHARS:
        counts = count_pretokens(text, pattern, special_tokens)
        if progress:
            progress("pretokenize", len(text), len(text))
        return counts
    # Large texts get a few chunks per worker, to keep them all busy to the end.
    num_chunks = num_workers * (4 if len(text) > 16 * PARALLEL_MIN_CHARS else 1)
    bounds = chunk_bounds(text, len(text) // num_chunks + 1, pattern, special_tokens)
    jobs = [(text[start:end], pattern, special_tokens) for start, end in zip(bounds, bounds[1:])]
    counts = Counter()
    done = 0
    with multiprocessing.Pool(min(num_workers, len(jobs))) as pool:
        for job, chunk_counts in zip(jobs, pool.imap(_count_chunk, jobs)):
            counts.update(chunk_counts)
            done += len(job[0])
            if progress:
                progress("pretokenize", done, len(text))
    return counts


# ---------------------------------------------------------------------------
# The fast merge loop over a {pre-token bytes: count} table
# ---------------------------------------------------------------------------

# Heap keys must put the greatest (bytes, bytes) first. Token t gets the string
# chr(256 - b) for each byte b, then _END (greater than all those chars): comparing
# two such strings reverses the bytes order, including "a prefix is smaller".
_END = "\u0400"


def _descending_key(token):
    """b"ab" -> "\\u009f\\u009e\\u0400": key(x) < key(y) exactly when x > y as bytes."""
    return "".join(chr(256 - b) for b in token) + _END


def learn_merges(word_counts, num_merges, progress=None):
    """The merges learned from {pre-token bytes: count}, as (left id, right id) pairs.

    {b"aaab": 2, b"aaac": 1}, 2 -> ([(97, 97), (256, 97)], token bytes by id, 0 skipped)

    Equal to train_bpe_simple's loop (same merges, same ties, same skips), but it never
    rescans: a merge of (a, b) only changes the pre-tokens holding a next to b, so it
    keeps pair -> the pre-tokens that hold it, updates the counts by the difference, and
    finds the best pair in a heap whose stale entries are dropped or refreshed when they
    reach the top. A count only grows for pairs holding the new token, so only those are
    pushed; a popped entry whose count has since dropped is pushed back with the new count.
    """
    tokens = [bytes([b]) for b in range(256)]
    known = set(tokens)
    keys = [_descending_key(t) for t in tokens]
    words = []  # each pre-token as a tuple of token ids
    freqs = []  # how often each occurs
    pair_counts = {}
    where = {}  # pair -> indices of the words that held it when it appeared (may be stale)
    for word, freq in word_counts.items():
        if len(word) < 2:
            continue
        index = len(words)
        ids = tuple(word)
        words.append(ids)
        freqs.append(freq)
        pairs = list(zip(ids, ids[1:]))
        for pair in pairs:
            pair_counts[pair] = pair_counts.get(pair, 0) + freq
        for pair in set(pairs):
            where.setdefault(pair, []).append(index)
    heap = [(-n, keys[a], keys[b], a, b) for (a, b), n in pair_counts.items()]
    heapq.heapify(heap)

    heappush, heappop = heapq.heappush, heapq.heappop
    pair_counts_get = pair_counts.get
    merges = []
    never = set()
    skipped = 0
    while len(merges) < num_merges and heap:
        negative, key_a, key_b, a, b = heappop(heap)
        count = pair_counts_get((a, b), 0)
        if count != -negative:
            if 0 < count < -negative:
                heappush(heap, (-count, key_a, key_b, a, b))
            continue
        if (a, b) in never:
            continue
        token = tokens[a] + tokens[b]
        if token in known:
            never.add((a, b))
            skipped += 1
            continue
        new = len(tokens)
        tokens.append(token)
        known.add(token)
        keys.append(key_a[:-1] + key_b)
        merges.append((a, b))

        # Only the neighbours of each occurrence change: (x, a) and (b, y) lose `freq`
        # and (x, new), (new, y) gain it. Pairs holding `new` are collected in `fresh`.
        fresh = {}
        fresh_get = fresh.get
        fresh_where = {}
        for index in where.pop((a, b)):
            word = words[index]
            last = len(word) - 1
            freq = freqs[index]
            parts = []
            start = 0  # word[start:] is not copied into parts yet
            i = 0
            todo = word.count(a)  # occurrences of `a` not looked at yet
            while todo:
                i = word.index(a, i)
                todo -= 1
                if i == last or word[i + 1] != b:
                    i += 1
                    continue
                if a == b:
                    todo -= 1
                if i > start:  # an unmerged left neighbour x
                    x = word[i - 1]
                    pair_counts[x, a] -= freq
                    pair = (x, new)
                    fresh[pair] = fresh_get(pair, 0) + freq
                    fresh_where.setdefault(pair, []).append(index)
                    parts.extend(word[start:i])
                elif i:  # right after the previous occurrence: (new, new)
                    pair = (new, new)
                    fresh[pair] = fresh_get(pair, 0) + freq
                    fresh_where.setdefault(pair, []).append(index)
                parts.append(new)
                i += 2
                start = i
                if i <= last:  # a right neighbour y
                    y = word[i]
                    pair_counts[b, y] -= freq
                    if (
                        y != a or i == last or word[i + 1] != b
                    ):  # else the next turn adds (new, new)
                        pair = (new, y)
                        fresh[pair] = fresh_get(pair, 0) + freq
                        fresh_where.setdefault(pair, []).append(index)
            if start:
                parts.extend(word[start:])
                words[index] = tuple(parts)
        del pair_counts[a, b]
        for pair, count in fresh.items():
            pair_counts[pair] = count
            where[pair] = fresh_where[pair]
            x, y = pair
            heappush(heap, (-count, keys[x], keys[y], x, y))
        if progress:
            progress("merge", len(merges), num_merges)
    return merges, tokens, skipped


# ---------------------------------------------------------------------------
# The public trainers
# ---------------------------------------------------------------------------


def train_bpe_from_iterator(
    texts, vocab_size, special_tokens=(), pattern="gpt2", num_workers=1, progress=None
):
    """train_bpe over strings already in memory; each text is split and pre-tokenized alone.

    ["aaabdaaabac"], vocab_size=259 -> the same as train_bpe_simple("aaabdaaabac", 259).
    num_workers and progress as in train_bpe (one process by default).
    """
    special_tokens = _check_special_tokens(special_tokens)
    _num_merges(vocab_size, special_tokens)
    resolve_pattern(pattern)  # a bad pattern fails here, before any work
    return _train_on_texts(texts, vocab_size, special_tokens, pattern, num_workers, progress)


def _train_on_texts(texts, vocab_size, special_tokens, pattern, num_workers, progress):
    total = sum(map(len, texts)) if isinstance(texts, (list, tuple)) else None
    counts = Counter()
    done = 0
    for text in texts:

        def report(stage, chars, _, before=done):
            progress(stage, before + chars, total)

        counts.update(
            count_pretokens_parallel(
                text, pattern, special_tokens, num_workers, report if progress else None
            )
        )
        done += len(text)
    word_counts = {word.encode("utf-8"): n for word, n in counts.items()}
    num_merges = _num_merges(vocab_size, special_tokens)
    merges, tokens, skipped = learn_merges(word_counts, num_merges, progress)
    # The warning points at the code that called train_bpe / train_bpe_from_iterator.
    return _finish(tokens, merges, special_tokens, num_merges, skipped, stacklevel=4)


def read_utf8(path):
    """The text of a file, strictly UTF-8; a bad byte raises ValueError naming its offset."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path} is not valid UTF-8 (byte offset {exc.start}: {exc.reason}); "
            "convert it to UTF-8 first"
        ) from None


def train_bpe(
    input_path, vocab_size, special_tokens=(), pattern="gpt2", num_workers=None, progress=None
):
    """Train a byte-level BPE on a UTF-8 text file -> (vocab, merges).

    vocab: {id: bytes}, ids 0..len-1: 0-255 the single bytes, then one id per merge in
    order (the two parts joined), then the special tokens in the order given.
    merges: [(left bytes, right bytes), ...] in creation order.
    vocab_size counts all three. Rule, ties and skipped duplicates: see the module docstring.

    Large files are pre-tokenized in `num_workers` processes (default: all CPUs).
    `progress(stage, done, total)`, if given, is called during "pretokenize" (characters)
    and "merge" (merges), e.g. to drive a progress bar.
    """
    special_tokens = _check_special_tokens(special_tokens)
    _num_merges(vocab_size, special_tokens)  # the arguments are checked before the file is read
    resolve_pattern(pattern)
    text = read_utf8(input_path)
    return _train_on_texts([text], vocab_size, special_tokens, pattern, num_workers, progress)
