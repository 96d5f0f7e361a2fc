"""The fast encoder: tiktoken's ids, from fastokens where it is installed (12x to 30x less CPU on
GPT-2). tiktoken stays the reference: tests/parts/test_fast_encoder.py proves the ids equal."""

import contextlib
import hashlib
import json
import marshal
import os
import pickle
from importlib.metadata import version

import numpy as np

from bpe.io import render_token
from bpe.patterns import BUILTIN_PATTERNS, PATTERNS
from safety.files import atomic_path
from safety.gpt2 import data_cache

FAST_ENV = "NANOGPT_FAST_ENCODER"  # "0": encode with tiktoken alone
# The one code point where fastokens' regex engine (for any pattern but GPT-2's) and tiktoken's
# disagree: U+180E, \s to the first only. A text holding it goes to tiktoken.
SPLIT_DIFFERS = "\u180e"
# The pipelines run one process per core; fastokens' own BPE threads would only contend with them.
os.environ.setdefault("FASTOKENS_BPE_THREADS", "1")
_BUILT = {}  # "pid:id" -> a fastokens Tokenizer built in process pid (and its forked workers)


def fast_encoding(encoding):
    """A tiktoken Encoding as the pipelines encode with it: a `FastEncoding` of it when fastokens
    is installed, $NANOGPT_FAST_ENCODER is not "0" and the pattern is a built-in one."""
    # another pattern may leave text out, which tiktoken drops and fastokens' Split keeps
    if os.environ.get(FAST_ENV, "1").strip() == "0" or encoding._pat_str not in BUILTIN_PATTERNS:
        return encoding
    try:
        import fastokens  # noqa: F401  (the optional extra "fast")
    except ImportError:
        return encoding
    return FastEncoding(encoding)


class FastEncoding:
    """A tiktoken Encoding whose ordinary encoding runs in fastokens; a text fastokens refuses, and
    every other attribute, goes to tiktoken's `reference`."""

    def __init__(self, reference, tokenizer_json=None, built=None):
        self.reference = reference
        self._json = tokenizer_json  # hf_tokenizer_json(reference), made once
        self._fast = _BUILT.get(built)  # forked from the process that built it: that one
        self._built = built if self._fast else None  # its key in _BUILT, once built
        self._splits_by_regex = reference._pat_str != PATTERNS["gpt2"]  # not ByteLevel's regex
        if tokenizer_json is not None:  # unpickled in a worker process, which will encode
            self._ids("")

    def __getattr__(self, name):
        if name in ("reference", "_json", "_fast", "_built"):  # not yet set: while unpickling
            raise AttributeError(name)
        return getattr(self.reference, name)

    def __reduce__(self):
        # a worker process gets the JSON, not the 1.4 s of making it; one forked after fastokens'
        # side was built here finds it in _BUILT (its memory is a copy of ours) and skips the
        # 0.4 s of building it again; another (spawned) builds it from the JSON as it unpickles
        if self._json is None:
            self._json = cached_tokenizer_json(self.reference)
        return FastEncoding, (self.reference, self._json, self._built)

    def __repr__(self):
        return f"FastEncoding({self.reference!r})"

    def _ids(self, text):
        """fastokens' ids of `text` as a uint32 array, or None where it refuses the text."""
        if self._fast is None:
            self._fast = False  # until it is built: one that cannot be is not tried again
            import fastokens

            with contextlib.suppress(Exception):  # not a BPE vocabulary, a pattern PCRE2 refuses
                self._json = self._json or cached_tokenizer_json(self.reference)
                self._fast = fastokens.Tokenizer.from_json_str(self._json)
                self._built = f"{os.getpid()}:{id(self._fast)}"
                _BUILT[self._built] = self._fast  # for the workers forked from here
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


def cached_tokenizer_json(encoding):
    """`hf_tokenizer_json(encoding)`, kept in $NANOGPT_DATA_CACHE/fastokens under a hash of what it
    is made from (1.7 s for GPT-2's, 10 ms to read again); a cache it cannot use is left alone."""
    makers = [
        marshal.dumps(f.__code__) for f in (hf_tokenizer_json, recovered_merges, render_token)
    ]
    made_from = (encoding._pat_str, encoding._mergeable_ranks, makers, version("fastokens"))
    key = hashlib.sha256(pickle.dumps(made_from)).hexdigest()
    path = data_cache() / "fastokens" / f"tokenizer-{key[:32]}.json"
    with contextlib.suppress(OSError, UnicodeDecodeError):
        return path.read_text(encoding="utf-8")
    tokenizer_json = hf_tokenizer_json(encoding)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            tmp.write_text(tokenizer_json, encoding="utf-8")
    return tokenizer_json


def hf_tokenizer_json(encoding):
    """A tiktoken Encoding as a Hugging Face byte-level BPE tokenizer.json, with no special token
    (encode_ordinary encodes them as text); GPT-2's pattern is ByteLevel's built-in regex."""
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False}
    if encoding._pat_str == PATTERNS["gpt2"]:
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
    """The merge (a, b) of each token of two or more bytes, in rank order: what tiktoken's BPE with
    the ranks below the token's leaves of it. GPT-2's -> [(b" ", b"t"), ...]: its vocab.bpe."""
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
