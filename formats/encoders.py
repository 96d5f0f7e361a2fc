"""The fast encoder: tiktoken's ids, from fastokens where it is installed.

- `fast_encoding`: the Encoding every pipeline encodes with: a tiktoken Encoding as it is, or
  wrapped in a `FastEncoding` when fastokens is installed and NANOGPT_FAST_ENCODER is not "0"
- `FastEncoding`: a tiktoken Encoding whose ordinary encoding runs in fastokens (12x to 30x less
  CPU on GPT-2), tiktoken itself for any text fastokens refuses and for everything else
- `hf_tokenizer_json`: a tiktoken Encoding as a Hugging Face byte-level BPE tokenizer.json
- `recovered_merges`: the merges a tiktoken Encoding's ranks stand for (GPT-2's: its vocab.bpe)

tiktoken stays the reference: tests/parts/test_fast_encoder.py proves the ids equal on random
Unicode and on the real corpora, for GPT-2 and for trained tokenizers.
"""

import contextlib
import os

import numpy as np

from bpe.io import render_token

FAST_ENV = "NANOGPT_FAST_ENCODER"  # "0": encode with tiktoken alone
# The one code point where fastokens' regex engine (for any pattern but GPT-2's) and tiktoken's
# disagree: U+180E, a space before Unicode 6.3 and a format character since, is \s to the first
# only. A text holding it goes to tiktoken (tests/parts/test_fast_encoder.py tries every code
# point).
SPLIT_DIFFERS = "\u180e"
# The pipelines run one process per core; fastokens' own BPE threads would only contend with them.
os.environ.setdefault("FASTOKENS_BPE_THREADS", "1")


def fast_encoding(encoding):
    """`encoding` (a tiktoken Encoding) as the pipelines encode with it: a `FastEncoding` of it
    when fastokens is installed, $NANOGPT_FAST_ENCODER is not "0" and the pattern is GPT-2's,
    GPT-4's or nanochat's (the ones tests/parts/test_fast_encoder.py proves), else `encoding`
    itself."""
    from bpe.patterns import BUILTIN_PATTERNS

    # another pattern may leave text out, which tiktoken drops and fastokens' Split keeps
    if os.environ.get(FAST_ENV, "1").strip() == "0" or encoding._pat_str not in BUILTIN_PATTERNS:
        return encoding
    try:
        import fastokens  # noqa: F401  (the optional extra "fast")
    except ImportError:
        return encoding
    return FastEncoding(encoding)


class FastEncoding:
    """A tiktoken Encoding whose encode_ordinary, encode_ordinary_batch and encode_to_numpy (with
    no special token recognised) run in fastokens, built from `hf_tokenizer_json` when first used:
    the same ids, per document. A text fastokens refuses (a lone surrogate) goes to tiktoken, as
    does every other attribute (n_vocab, decode, _pat_str, ...): `reference` is the Encoding."""

    def __init__(self, reference, tokenizer_json=None):
        self.reference = reference
        self._json = tokenizer_json  # hf_tokenizer_json(reference), made once
        self._fast = None
        self._splits_by_regex = not uses_byte_level_regex(reference)
        if tokenizer_json is not None:  # unpickled in a worker process, which will encode
            self._ids("")

    def __getattr__(self, name):
        if name in ("reference", "_json", "_fast"):  # not yet set: while unpickling
            raise AttributeError(name)
        return getattr(self.reference, name)

    def __reduce__(self):
        # a worker process gets the JSON, not the 0.4 s of making it, and builds fastokens'
        # side (0.35 s) as it unpickles: nothing built in one process is used in another
        if self._json is None:
            self._json = hf_tokenizer_json(self.reference)
        return FastEncoding, (self.reference, self._json)

    def __repr__(self):
        return f"FastEncoding({self.reference!r})"

    def _ids(self, text):
        """fastokens' ids of `text` as a uint32 array, or None where it refuses the text."""
        if self._fast is None:
            self._fast = False  # until it is built: one that cannot be is not tried again
            import fastokens

            with contextlib.suppress(Exception):  # not a BPE vocabulary, a pattern PCRE2 refuses
                self._json = self._json or hf_tokenizer_json(self.reference)
                self._fast = fastokens.Tokenizer.from_json_str(self._json)
        if self._fast is False or (self._splits_by_regex and SPLIT_DIFFERS in text):
            return None
        try:
            ids, _ = self._fast.encode_batch_flat([text])
        except Exception:  # whatever fastokens refuses, tiktoken encodes (or refuses) itself
            return None
        return np.frombuffer(ids, np.uint32)

    def encode_to_numpy(self, text, *, allowed_special=frozenset(), disallowed_special="all"):
        """tiktoken's encode_to_numpy; fast with no special token recognised or refused."""
        ids = self._ids(text) if not allowed_special and not disallowed_special else None
        if ids is None:
            return self.reference.encode_to_numpy(
                text, allowed_special=allowed_special, disallowed_special=disallowed_special
            )
        return ids

    def encode_ordinary(self, text):
        """tiktoken's encode_ordinary: "Hi" -> [17250] (GPT-2), as a list of ints."""
        ids = self._ids(text)
        return self.reference.encode_ordinary(text) if ids is None else ids.tolist()

    def encode_ordinary_batch(self, texts, *, num_threads=None):  # noqa: ARG002 (one thread)
        """tiktoken's encode_ordinary_batch: one list of ids per text."""
        return [self.encode_ordinary(text) for text in texts]


def uses_byte_level_regex(encoding):
    """Whether the encoding's pattern is GPT-2's, which ByteLevel's built-in regex runs."""
    from bpe.patterns import PATTERNS

    return encoding._pat_str == PATTERNS["gpt2"]


def hf_tokenizer_json(encoding):
    """A tiktoken Encoding as a Hugging Face tokenizer.json: byte-level BPE, its ranks as the
    vocabulary, `recovered_merges` as the merges, its pattern as the pre-tokenizer (GPT-2's own
    is ByteLevel's built-in regex, which fastokens scans without a regex engine), no special
    token (they are encoded as text, as encode_ordinary does). ignore_merges: a pretoken that is
    a token is that token, as in tiktoken."""
    import json

    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False}
    if uses_byte_level_regex(encoding):
        pre_tokenizer = {**byte_level, "use_regex": True}
    else:
        split = {"type": "Split", "pattern": {"Regex": encoding._pat_str}, "behavior": "Isolated"}
        pretokenizers = [{**split, "invert": False}, {**byte_level, "use_regex": False}]
        pre_tokenizer = {"type": "Sequence", "pretokenizers": pretokenizers}
    model = {
        "type": "BPE",
        "dropout": None,
        "unk_token": None,
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": False,
        "byte_fallback": False,
        "ignore_merges": True,
        "vocab": {render_token(token): rank for token, rank in encoding._mergeable_ranks.items()},
        "merges": [[render_token(a), render_token(b)] for a, b in recovered_merges(encoding)],
    }
    return json.dumps(
        {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [],
            "normalizer": None,
            "pre_tokenizer": pre_tokenizer,
            "post_processor": None,
            "decoder": {**byte_level, "use_regex": False},
            "model": model,
        }
    )


def recovered_merges(encoding):
    """The merge (a, b) of each token of two or more bytes, in rank order: the two parts that
    tiktoken's own BPE, with only the ranks below the token's, leaves of its bytes.

    GPT-2's -> [(b" ", b"t"), (b" ", b"a"), (b"h", b"e"), ...]: its vocab.bpe, line for line.
    """
    ranks = encoding._mergeable_ranks
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        parts = [token[i : i + 1] for i in range(len(token))]
        while len(parts) > 2:
            pairs = [(ranks.get(a + b, rank), i) for i, (a, b) in enumerate(zip(parts, parts[1:]))]
            lowest, i = min(pairs)
            if lowest >= rank:  # no earlier token joins two parts: not a BPE vocabulary
                raise ValueError(f"token {rank} ({token!r}) is made by no merge of earlier tokens")
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        if len(parts) == 2:
            merges.append((parts[0], parts[1]))
    return merges
