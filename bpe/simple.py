"""A whole byte-level BPE in one sitting: train, encode, decode (read this module first).

    vocab, merges = train(text, vocab_size=300, special_tokens=[EOT])
    ids = encode("hello world" + EOT, merges, special_tokens=[EOT])
    decode(ids, vocab) == "hello world" + EOT

The text is UTF-8 bytes, so ids 0..255 are the 256 bytes and nothing is ever unknown. Training
repeatedly merges the most frequent adjacent pair into a new token (id 256, 257, ...); encoding
replays those merges, lowest id first; decoding joins the tokens' bytes. Two cuts come first:
the special tokens ("<|endoftext|>") cut the text into segments and are never merged, and the
pattern cuts each segment into pretokens ("hello", " world"): no merge crosses a pretoken, so
" dog" and "dog." share "dog" and never make a token like "g.".

Everything here is written to be read; `train.py` and `tokenizer.py` compute exactly the same
results fast (each says which function here it equals, and the tests prove it).
"""

import re
import warnings
from collections import Counter

import regex

from .checks import check_pattern, check_special_tokens, check_training_args

EOT = "<|endoftext|>"  # GPT-2's end-of-text special token, put between documents


def get_pair_counts(ids, counts=None, weight=1):
    """Count adjacent pairs; add into `counts` if given, each occurrence counting `weight`.

    [1, 2, 3, 1, 2] -> {(1, 2): 2, (2, 3): 1, (3, 1): 1}
    """
    counts = {} if counts is None else counts
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + weight
    return counts


def merge_pair(ids, pair, new_id):
    """Replace every non-overlapping occurrence of `pair`, left to right, by `new_id`.

    [1, 2, 3, 1, 2], (1, 2), 4 -> [4, 3, 4];   [1, 1, 1], (1, 1), 2 -> [2, 1]
    """
    merged = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            merged.append(new_id)
            i += 2
        else:
            merged.append(ids[i])
            i += 1
    return merged


def special_token_regex(special_tokens):
    """The regex that finds special tokens, the longest first where one is a prefix of another.

    ["<|a|>", "<|a|>b"] -> "(<\\|a\\|>b|<\\|a\\|>)": "<|a|>b" is one special token, not "<|a|>" +
    "b".
    """
    longest_first = sorted(special_tokens, key=lambda token: (-len(token), token))
    return re.compile("(" + "|".join(map(re.escape, longest_first)) + ")")


def split_on_special_tokens(text, special_tokens):
    """Segments and special tokens, alternating (the special tokens at the odd positions).

    "a<|endoftext|>b", ["<|endoftext|>"] -> ["a", "<|endoftext|>", "b"];   "ab", [] -> ["ab"]
    """
    if not special_tokens:
        return [text]
    return special_token_regex(special_tokens).split(text)


def count_pretokens(text, pattern, special_tokens=()):
    """How often each pretoken occurs, special tokens left out.

    "the cat the", GPT2_PATTERN -> Counter({"the": 1, " cat": 1, " the": 1})
    """
    segments = split_on_special_tokens(text, special_tokens)[::2]
    return Counter(pretoken for segment in segments for pretoken in regex.findall(pattern, segment))


def train(text, vocab_size, special_tokens=(), pattern="gpt2"):
    """Learn vocab_size - 256 - len(special_tokens) merges from `text` -> (vocab, merges).

    "aaabdaaabac", 259 -> merges [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b")], i.e. the tokens
    256 = "aa", 257 = "aaa", 258 = "aaab" (the lecture notes' example).
    vocab: {id: bytes}: the 256 bytes, one id per merge, then the special tokens in order.

    The rule: each step merges the pair with the highest count summed over all pretokens
    ("aaa" holds (a, a) twice); ties go to the greatest pair by (left bytes, right bytes),
    so the input's order never matters. A pair whose joined bytes already are a token (b"abc"
    made as (ab, c), now (a, bc)) is passed over: two ids with the same bytes could not be
    written as tiktoken's {bytes: id} table. With no pair left, it stops early with a warning.
    """
    num_merges, special_tokens, pattern = check_training_args(vocab_size, special_tokens, pattern)
    # Each distinct pretoken once, as byte ids, with how often it occurs ("low": 5, ...).
    pretokens = {
        tuple(pretoken.encode("utf-8")): count
        for pretoken, count in count_pretokens(text, pattern, special_tokens).items()
    }
    tokens = [bytes([b]) for b in range(256)]  # token bytes by id
    merges = []
    while len(merges) < num_merges:
        counts = {}
        for ids, count in pretokens.items():
            get_pair_counts(ids, counts, weight=count)
        known = set(tokens)
        candidates = [p for p in counts if tokens[p[0]] + tokens[p[1]] not in known]
        if not candidates:
            warnings.warn(
                f"asked for vocab_size {vocab_size}, got {vocab_size - num_merges + len(merges)}: "
                f"no pair left to merge after {len(merges)} merge(s); the text is too small",
                stacklevel=2,
            )
            break
        pair = max(candidates, key=lambda p: (counts[p], tokens[p[0]], tokens[p[1]]))
        new_id = len(tokens)
        tokens.append(tokens[pair[0]] + tokens[pair[1]])
        merges.append((tokens[pair[0]], tokens[pair[1]]))
        pretokens = {tuple(merge_pair(ids, pair, new_id)): n for ids, n in pretokens.items()}
    vocab = dict(enumerate(tokens + [token.encode("utf-8") for token in special_tokens]))
    return vocab, merges


def encode_pretoken(pretoken, ranks):
    """BPE on one pretoken's bytes -> ids (tiktoken's `_educational.bpe_encode`).

    `ranks` maps token bytes -> id, a lower id merged earlier. With h, e, l, o and "he" = 256,
    "ll" = 257, "hell" = 258: b"hello" -> [h e l l o] -> [he l l o] -> [he ll o] -> [hell o]
    -> [258, 111]. Like tiktoken, a pretoken that is itself a token is that one token.
    """
    if pretoken in ranks:
        return [ranks[pretoken]]
    parts = [bytes([b]) for b in pretoken]
    while True:
        # The adjacent pair that was merged earliest in training (the leftmost of equal ones).
        best_index, best_rank = None, None
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best_rank is None or rank < best_rank):
                best_index, best_rank = i, rank
        if best_index is None:
            return [ranks[part] for part in parts]
        i = best_index
        parts = parts[:i] + [parts[i] + parts[i + 1]] + parts[i + 2 :]


def encode(text, merges, special_tokens=(), pattern="gpt2"):
    """Text -> ids with the merges `train` learned; special tokens are found whole.

    "aaabdaaabac" with the merges of "aaabdaaabac", 259 -> [258, 100, 258, 97, 99]
    Special tokens get the ids after the merges, as `train` does; text the pattern skips is lost.
    """
    special_tokens, pattern = check_special_tokens(special_tokens), check_pattern(pattern)
    ranks = {bytes([b]): b for b in range(256)}
    for i, (left, right) in enumerate(merges):
        ranks[left + right] = 256 + i
    special_ids = {token: 256 + len(merges) + i for i, token in enumerate(special_tokens)}
    ids = []
    for i, part in enumerate(split_on_special_tokens(text, special_tokens)):
        if i % 2:  # a special token
            ids.append(special_ids[part])
        else:  # a segment
            for pretoken in regex.findall(pattern, part):
                ids.extend(encode_pretoken(pretoken.encode("utf-8"), ranks))
    return ids


def decode(ids, vocab):
    """Ids -> text: join the tokens' bytes; bytes that are not UTF-8 become "\\ufffd".

    [258, 100, 258, 97, 99] with the vocab of "aaabdaaabac", 259 -> "aaabdaaabac"
    """
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")
