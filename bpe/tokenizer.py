"""The fast encoder: a Tokenizer built from a vocabulary and its merges.

    tok = Tokenizer(vocab, merges, special_tokens={"<|endoftext|>": 4095})
    tok.encode("hello world<|endoftext|>")  -> [..., 4095]
    tok.decode(tok.encode(text)) == text

It gives the ids of `simple.encode` (special tokens found whole, the longest first; each segment
between them cut into pretokens; each pretoken's bytes merged by `simple.encode_pretoken`),
and the tests prove it. What makes it fast: each distinct pretoken is merged once and cached,
the merging itself (`encode_pretoken`) only re-looks at the pairs a merge changes, and the
lookups and joins run in C. Built from GPT-2's files it gives exactly tiktoken's `gpt2` ids.
"""

import gc
import hashlib
from heapq import heapify, heappop, heappush
from itertools import chain, repeat

from . import io
from .checks import (
    check_pattern,
    check_special_tokens,
    check_tiktoken_pattern,
    check_tiktoken_special_tokens,
    one_line,
    shown,
    tiktoken_failed,
    without_lone_surrogates,
)
from .patterns import BUILTIN_PATTERNS, PATTERNS, Pretokenizer, first_uncovered
from .simple import EOT, special_token_regex

CACHE_LIMIT = 1 << 16  # distinct pretokens kept encoded (~130 bytes each); emptied when full
STREAM_CHARS = 1 << 16  # encode_iterable works on at least this many characters at a time
NO_MERGE = 1 << 62  # rank of a pair that is not a token; above any real id
SINGLE_BYTES = [bytes([b]) for b in range(256)]
# Above this many bytes a pretoken is merged with a heap (encode_long_pretoken): finding the
# lowest rank by scanning all pairs once per merge is quadratic (a line of 200,000 "x" is one
# pretoken), while the scan in C is faster on the short pretokens text is made of.
HEAP_ENCODE_BYTES = 256


def encode_pretoken(pretoken, ranks):
    """Equal to simple.encode_pretoken, with less Python work per merge.

    b"hello" -> [h e l l o] -> [he l l o] -> [he ll o] -> [hell o] -> [258, 111] (its example)
    It keeps the rank of each adjacent pair of parts; a merge changes only the ranks of the
    two pairs around it, so only those are looked up again (as tiktoken's Rust
    `_byte_pair_merge` does).
    """
    token = ranks.get(pretoken)
    if token is not None:
        return [token]
    if len(pretoken) > HEAP_ENCODE_BYTES:
        return encode_long_pretoken(pretoken, ranks)
    get = ranks.get
    parts = list(map(SINGLE_BYTES.__getitem__, pretoken))
    pair_ranks = list(map(get, map(bytes.__add__, parts, parts[1:]), repeat(NO_MERGE)))
    best = min(pair_ranks, default=NO_MERGE)  # b"" and a single part have no pair
    while best != NO_MERGE:
        i = pair_ranks.index(best)  # the leftmost of equal ranks, as in the simple version
        parts[i] = merged = parts[i] + parts.pop(i + 1)
        del pair_ranks[i]
        if i > 0:
            pair_ranks[i - 1] = get(parts[i - 1] + merged, NO_MERGE)
        if i < len(pair_ranks):
            pair_ranks[i] = get(merged + parts[i + 1], NO_MERGE)
        best = min(pair_ranks, default=NO_MERGE)
    return list(map(ranks.__getitem__, parts))


def encode_long_pretoken(pretoken, ranks):
    """Equal to simple.encode_pretoken, in time n log n for a pretoken of n bytes.

    b"xxxx" with "xx" = 256, "xxxx" = 257 -> [x x x x] -> [xx x x] -> [xx xx] -> [xxxx] -> [257]
    The parts are a linked list (part i's right neighbour is part after[i]), and a heap holds
    rank * size + i for the pair starting at part i (one int: compared faster than a tuple):
    the lowest rank first, the leftmost of equal ranks (i grows left to right), as the simple
    version picks. A merge changes the pairs on its two sides, which are pushed again; an entry
    whose rank is no longer its pair's is dropped.
    """
    token = ranks.get(pretoken)
    if token is not None:  # as simple.encode_pretoken (and tiktoken): a token is itself
        return [token]
    get = ranks.get
    size = len(pretoken)
    parts = list(map(SINGLE_BYTES.__getitem__, pretoken))
    after = list(range(1, size + 1))  # `size`: no right neighbour
    before = list(range(-1, size - 1))  # -1: no left neighbour
    pair_ranks = list(map(get, map(bytes.__add__, parts, parts[1:]), repeat(NO_MERGE)))
    pair_ranks.append(NO_MERGE)  # the last part starts no pair
    heap = [rank * size + i for i, rank in enumerate(pair_ranks) if rank != NO_MERGE]
    heapify(heap)
    while heap:
        rank, i = divmod(heappop(heap), size)
        if pair_ranks[i] != rank:
            continue  # a merge next to it changed this pair since
        right = after[i]
        parts[i] += parts[right]
        parts[right] = None
        pair_ranks[right] = NO_MERGE
        after[i] = after[right]
        if after[i] < size:
            before[after[i]] = i
            pair_ranks[i] = get(parts[i] + parts[after[i]], NO_MERGE)
            if pair_ranks[i] != NO_MERGE:
                heappush(heap, pair_ranks[i] * size + i)
        else:
            pair_ranks[i] = NO_MERGE
        left = before[i]
        if left >= 0:
            pair_ranks[left] = get(parts[left] + parts[i], NO_MERGE)
            if pair_ranks[left] != NO_MERGE:
                heappush(heap, pair_ranks[left] * size + left)
    return [ranks[part] for part in parts if part is not None]


class Tokenizer:
    """A byte-level BPE tokenizer: a vocabulary, its merges, special tokens, and a pattern.

    vocab:   {id: bytes} for ids 0..n-1. Ids 0..255 are the 256 single bytes (in any order:
             a trained tokenizer has byte b at id b, GPT-2 permutes them), id 256 + i is
             merge i, then the special tokens (their UTF-8 bytes) if the vocab lists them.
    merges:  [(bytes, bytes)] in training order; merge i joins two earlier tokens.
    special_tokens: {"<|endoftext|>": id} with ids right after the merges, or a list of
             strings given ids in that order (an id already in `vocab` for that string is
             kept). None: any vocab entries after the merges are the special tokens.
    pattern: "gpt2", "gpt4", "nanochat" or a regex that cuts text into pretokens. Encoding refuses a
             text with a character the pattern does not match (it would be lost).
    """

    def __init__(self, vocab, merges, special_tokens=None, pattern="gpt2"):
        self.merges = [(bytes(a), bytes(b)) for a, b in merges]
        self.pattern = check_pattern(pattern)
        self.pattern_name = next((n for n, p in PATTERNS.items() if p == self.pattern), None)
        self._ranks = _ranks_from(vocab, self.merges)  # bytes -> id of every non-special token
        self.special_tokens = _special_ids(vocab, len(self._ranks), special_tokens)
        # in id order: the ranks run from 0, the special tokens follow them (sorted by id)
        self.vocab = {token_id: token for token, token_id in self._ranks.items()}
        self.vocab.update((i, text.encode("utf-8")) for text, i in self.special_tokens.items())
        self.vocab_size = len(self.vocab)
        self.eot_id = self.special_tokens.get(EOT)

        self._pretokenizer = Pretokenizer(self.pattern)
        self._regex = self._pretokenizer.regex
        # The built-in patterns match every character (patterns.py says why); for any other,
        # encoding compares the pretokens' total length with the text's.
        self._covers_every_text = self.pattern in BUILTIN_PATTERNS
        # pretoken str -> its ids (never changed once stored); see _encode_pretokens
        self._cache = {}
        self.cache_limit = CACHE_LIMIT
        self._special_regex = (
            special_token_regex(self.special_tokens) if self.special_tokens else None
        )
        self._longest_special = max(map(len, self.special_tokens), default=0)

    def __repr__(self):
        return (
            f"Tokenizer(vocab_size={self.vocab_size}, merges={len(self.merges)}, "
            f"special_tokens={self.special_tokens}, pattern={self.pattern_name or self.pattern!r})"
        )

    # ------------------------------------------------------------ encoding

    def encode_ordinary(self, text):
        """Text -> ids, with special-token strings treated as plain text (tiktoken's
        encode_ordinary).

        "hello world" -> [31373, 995] with GPT-2's files.
        Equal to simple.encode without special tokens.
        """
        return self._encode_segment(text, 0)

    def encode(self, text):
        """Text -> ids, each special token found whole (the longest where two overlap).

        "hi<|endoftext|>" -> [5303, 50256] with GPT-2's files, as tiktoken's
        encode(text, allowed_special="all"). Equal to simple.encode: the segments between
        special tokens are encoded on their own.
        """
        ids, rest = self._encode_specials(text, len(text), 0)
        ids.extend(self._encode_segment(text[rest:], rest))
        return ids

    def encode_iterable(self, texts, *, buffer_chars=STREAM_CHARS):
        """Stream ids from an iterable of strings (an open file gives lines) in bounded memory.

        list(tok.encode_iterable(open("input.txt"))) == tok.encode(open("input.txt").read())

        The end of one string may fall inside a pretoken, a whitespace run or a special token,
        so the last pretokens are held back until more text shows how they end. Memory is
        about `buffer_chars` characters plus the longest pretoken (tests use 1 to cut
        everywhere).
        """
        buffer = ""
        offset = 0  # the position of buffer[0] in the whole stream
        for text in texts:
            buffer += text
            if len(buffer) >= buffer_chars:
                ids, settled = self._encode_settled(buffer, offset)
                buffer, offset = buffer[settled:], offset + settled
                yield from ids
        ids, rest = self._encode_specials(buffer, len(buffer), offset)
        yield from ids
        yield from self._encode_segment(buffer[rest:], offset + rest)

    def _encode_specials(self, text, end, offset):
        """Encode `text` up to the end of its last special token that starts before `end`.

        -> (ids, the position after that special token, or 0 if there is none).
        The segments before each special token are encoded with _encode_segment; `offset`
        (the position of text[0] in what the user gave) only serves to name a position in an
        error.
        """
        ids = []
        start = 0
        if self._special_regex is not None:
            for match in self._special_regex.finditer(text):
                if match.start() >= end:
                    break
                ids.extend(self._encode_segment(text[start : match.start()], offset + start))
                ids.append(self.special_tokens[match.group()])
                start = match.end()
        return ids, start

    def _encode_settled(self, buffer, offset):
        """Encode the start of `buffer` that more text cannot change -> (ids, its length).

        Settled: a special token with room after it for any longer one, and every
        pretoken but the last two before the next unsettled position (a pretoken's match
        looks at most into the next one: "  x" -> " ", " x", but "  " + "\\n" -> "  \\n").
        """
        # A special token starting after `end` could still grow or begin earlier.
        end = max(0, len(buffer) - self._longest_special + 1)
        ids, start = self._encode_specials(buffer, end, offset)
        end = max(end, start)
        pretokens = self._regex.findall(buffer, start, end)
        if len(pretokens) <= 2:
            return ids, start
        settled = pretokens[:-2]
        length = sum(map(len, settled))
        if not self._covers_every_text:
            # The settled pretokens must run on from `start` with no gap (a gap after them is
            # looked at again with more text).
            uncovered = first_uncovered(self._regex, buffer, start, end)
            if uncovered is not None and uncovered < start + length:
                self._refuse_uncovered(buffer, uncovered, offset)
        try:
            ids.extend(self._encode_pretokens(settled))
        except UnicodeEncodeError:
            ids.extend(self._encode_segment("".join(settled), offset + start))
        return ids, start + length

    def _encode_segment(self, segment, offset):
        """Text without special tokens -> ids (encode_ordinary; `offset` as in _encode_specials)."""
        pretokens = self._pretokenizer.findall(segment)
        # Pretokens never overlap, so they cover the segment exactly when their lengths add up.
        if not self._covers_every_text and sum(map(len, pretokens)) != len(segment):
            self._refuse_uncovered(segment, first_uncovered(self._regex, segment), offset)
        try:
            return self._encode_pretokens(pretokens)
        except UnicodeEncodeError:  # lone surrogates: not valid Unicode; repair as tiktoken does
            return self._encode_segment(without_lone_surrogates(segment), offset)

    def _refuse_uncovered(self, text, position, offset):
        raise ValueError(
            f"the pattern {shown(self.pattern)} matches no pretoken at position "
            f"{offset + position:,} (the character {text[position]!r}), so encoding would lose "
            f"it; use a pattern that matches every character, such as 'gpt2'"
        )

    def _encode_pretokens(self, pretokens):
        """Pretokens -> ids: [" hello", " world"] -> [23748, 995] with GPT-2's files.

        Same ids as `encode_pretoken` on each pretoken's bytes. Text repeats the same
        pretokens over and over, so each distinct one is encoded once and kept in a cache;
        the lookups and the joining then run in C (map, chain), which is what makes this
        pure-Python tokenizer fast.
        """
        cache = self._cache
        new_pretokens = set(pretokens).difference(cache)
        if new_pretokens:
            if len(cache) + len(new_pretokens) > self.cache_limit:
                cache.clear()  # crude but bounded; the frequent pretokens come straight back
                new_pretokens = set(pretokens)
            ranks = self._ranks
            # BPE makes many short-lived lists and no reference cycles; without this pause
            # Python's cycle collector would rescan every object in the process again and
            # again (about a tenth of a cold encode).
            gc_was_enabled = gc.isenabled()
            gc.disable()
            try:
                for pretoken in new_pretokens:
                    cache[pretoken] = encode_pretoken(pretoken.encode("utf-8"), ranks)
            finally:
                if gc_was_enabled:
                    gc.enable()
        return list(chain.from_iterable(map(cache.__getitem__, pretokens)))

    # ------------------------------------------------------------ decoding

    def decode_bytes(self, ids):
        """Ids -> the bytes they stand for: [31373, 995] -> b"hello world" with GPT-2's files."""
        try:
            return b"".join(map(self.vocab.__getitem__, ids))
        except (KeyError, TypeError):
            for token_id in ids:
                if token_id not in self.vocab:
                    raise ValueError(
                        f"token id {shown(token_id)} is not in this tokenizer's vocabulary "
                        f"(ids 0..{self.vocab_size - 1})"
                    ) from None
            raise

    def decode(self, ids):
        """Ids -> text; bytes that are not valid UTF-8 become U+FFFD ("�") instead of raising.

        A model may emit half of a character's bytes: [the id of b"\\xe4"] -> "\\ufffd".
        """
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    # ------------------------------------------------------------ other tools

    def to_tiktoken(self, name="nanogpt-bpe"):
        """A tiktoken.Encoding with the same ids, to encode at tiktoken's speed.

        tok.to_tiktoken().encode(text, allowed_special="all") == tok.encode(text)
        (tiktoken's plain `encode` refuses text containing special tokens unless allowed.)

        Refused (ValueError) where the ids could differ (checks.check_tiktoken_pattern and
        check_tiktoken_special_tokens), and, in one line, whatever else tiktoken cannot build.
        """
        import tiktoken

        check_tiktoken_special_tokens(self.special_tokens)
        check_tiktoken_pattern(self.pattern)
        try:
            return tiktoken.Encoding(
                name=name,
                pat_str=self.pattern,
                mergeable_ranks=dict(self._ranks),
                special_tokens=dict(self.special_tokens),
            )
        except BaseException as exc:
            if not tiktoken_failed(exc):
                raise
            raise ValueError(
                f"tiktoken cannot build an encoding of this tokenizer (pattern "
                f"{self.pattern_name or shown(self.pattern)}, {len(self.special_tokens):,} special "
                f"token(s)): {one_line(exc)}"
            ) from None

    def to_json(self):
        """The text `save` writes: one fixed layout, so same tokenizer -> same text (see
        bpe/io.py)."""
        pattern = self.pattern_name or self.pattern
        return io.tokenizer_to_json(self.vocab, self.merges, self.special_tokens, pattern)

    def sha256(self):
        """The sha256 of the saved file's bytes: names this tokenizer in a dataset's metadata."""
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()

    def save(self, path):
        """Write our JSON file (bpe/io.py describes it) atomically: temp name, then rename."""
        io.write_text_atomically(path, self.to_json())

    @classmethod
    def load(cls, path):
        """Read a file written by `save`; any problem is a TokenizerFileError naming the file."""
        vocab, merges, special_tokens, pattern = io.tokenizer_from_json(path)
        try:
            tokenizer = cls(vocab, merges, special_tokens, pattern)
            check_tiktoken_pattern(tokenizer.pattern)  # as to_tiktoken() will: named here
            return tokenizer
        except ValueError as exc:
            raise io.TokenizerFileError(f"{path}: {exc}") from None

    def save_hf(self, folder):
        """Write GPT-2's / Hugging Face's `vocab.json` + `merges.txt` into `folder`.

        GPT-2 itself, saved this way, gives its own encoder.json and vocab.bpe byte for
        byte. The pair carries no pattern: give it again to `load_hf`.
        """
        io.write_text_atomically(
            f"{folder}/vocab.json", io.hf_vocab_json(self.vocab, self.special_tokens)
        )
        io.write_text_atomically(f"{folder}/merges.txt", io.hf_merges_txt(self.merges))

    @classmethod
    def load_hf(cls, vocab_json, merges_txt=None, pattern="gpt2"):
        """Read a `vocab.json` + `merges.txt` pair (or a folder holding both).

        Entries after the merges in vocab.json (GPT-2's "<|endoftext|>") are the special tokens.
        """
        if merges_txt is None:
            vocab_json, merges_txt = f"{vocab_json}/vocab.json", f"{vocab_json}/merges.txt"
        vocab, merges, special_tokens = io.read_hf(vocab_json, merges_txt)
        try:
            return cls(vocab, merges, special_tokens, pattern)
        except ValueError as exc:
            raise io.TokenizerFileError(f"{vocab_json} with {merges_txt}: {exc}") from None

    @classmethod
    def from_gpt2_files(cls, encoder_json, vocab_bpe):
        """GPT-2's tokenizer from its own two files: 50,257 ids, "<|endoftext|>" = 50256.

        Tokenizer.from_gpt2_files("encoder.json", "vocab.bpe").encode("hello world") -> [31373, 995]
        """
        return cls.load_hf(encoder_json, vocab_bpe, pattern="gpt2")


def _ranks_from(vocab, merges):
    """Check the vocabulary against the merges -> {token bytes: id} of the non-special tokens.

    ids 0..255 must be 256 distinct single bytes; id 256 + i must be merge i's two tokens
    joined, both made before it. Two ids with the same bytes are refused: ranks are keyed
    by bytes (as in tiktoken), so one of them could never be produced.
    """
    ranks = {}
    for token_id in range(256 + len(merges)):
        if token_id not in vocab:
            raise ValueError(
                f"vocab has no id {token_id}; ids must run from 0 without gaps "
                f"(256 single bytes, then one per merge, {len(merges)} merges)"
            )
        token = bytes(vocab[token_id])
        if token_id < 256 and len(token) != 1:
            raise ValueError(
                f"vocab id {token_id} is {shown(token)}; ids 0..255 must be single bytes"
            )
        if token_id >= 256:
            a, b = merges[token_id - 256]
            if token != a + b:
                raise ValueError(
                    f"vocab id {token_id} is {shown(token)} but merge {token_id - 256} makes "
                    f"{shown(a)} + {shown(b)} = {shown(a + b)}; merge i must make id 256 + i"
                )
            for half in (a, b):
                if half not in ranks:
                    raise ValueError(
                        f"merge {token_id - 256} ({shown(a)}, {shown(b)}) uses {shown(half)}, "
                        f"which is not a token made before it"
                    )
        if token in ranks:
            raise ValueError(
                f"vocab ids {ranks[token]} and {token_id} are both {shown(token)}; "
                f"each token's bytes must appear once"
            )
        ranks[token] = token_id
    return ranks


def _special_ids(vocab, n_base, special_tokens):
    """The special tokens as {text: id}, checked to follow the merges without gaps.

    ["<|endoftext|>"] with 4095 ordinary ids -> {"<|endoftext|>": 4095}.
    """
    extra = {token_id: bytes(token) for token_id, token in vocab.items() if token_id >= n_base}
    if special_tokens is None:
        try:
            special_tokens = {token.decode("utf-8"): token_id for token_id, token in extra.items()}
        except UnicodeDecodeError:
            raise ValueError(
                "vocab has entries after the merges that are not UTF-8 special tokens"
            ) from None
    elif not isinstance(special_tokens, dict):
        listed = check_special_tokens(special_tokens)
        by_bytes = {token: token_id for token_id, token in extra.items()}
        special_tokens, next_id = {}, max(extra, default=n_base - 1) + 1
        for text in listed:
            if text.encode("utf-8") in by_bytes:
                special_tokens[text] = by_bytes[text.encode("utf-8")]
            else:
                special_tokens[text], next_id = next_id, next_id + 1
    special_tokens = dict(special_tokens)
    check_special_tokens(special_tokens)

    by_id = {}
    for text, token_id in special_tokens.items():
        if token_id in by_id:
            raise ValueError(
                f"special tokens {shown(by_id[token_id])} and {shown(text)} both have id {token_id}"
            )
        if not isinstance(token_id, int) or token_id < n_base:
            raise ValueError(
                f"special token {shown(text)} has id {shown(token_id)}, which collides with the "
                f"{n_base} byte and merge ids; special ids start at {n_base}"
            )
        if token_id in extra and extra[token_id] != text.encode("utf-8"):
            raise ValueError(
                f"special token {shown(text)} has id {token_id}, but vocab has "
                f"{shown(extra[token_id])} there"
            )
        by_id[token_id] = text
    unclaimed = sorted(set(extra) - set(by_id))
    if unclaimed:
        raise ValueError(
            f"vocab id {unclaimed[0]} ({shown(extra[unclaimed[0]])}) is neither a merge nor a "
            f"special token; list it in special_tokens"
        )
    if sorted(by_id) != list(range(n_base, n_base + len(by_id))):
        raise ValueError(
            f"special token ids {shown(sorted(by_id))} must follow the merges without gaps, "
            f"from {n_base}"
        )
    return dict(sorted(special_tokens.items(), key=lambda item: item[1]))
