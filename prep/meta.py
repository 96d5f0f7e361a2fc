"""The metadata beside the .bin files, and `verify`, which re-checks a folder against it.

- write_meta(out_dir, ...): meta.json, readable and safe: tokenizer, dtype, each split's token
  count and sha256, the source, the split rule, the options
- text_source(input_path, out_dir, characters, url): meta.json's "source" for one text file
- write_pickle(path, obj): nanoGPT's meta.pkl contract (vocab_size, stoi/itos), atomically
- write_bpe_meta_pkl(out_dir, tokenizer, encoding): meta.pkl for a trained tokenizer, none for GPT-2
- nanogpt_sample_maps(encoding): the stoi/itos nanoGPT's sample.py reads, for a BPE vocabulary
- verify(folder): audit a prepared folder, recomputing what its meta.json records; the problems
  found, one line each (`python prepare_common.py verify DIR`)
- META_FORMAT_VERSION: the version of meta.json's layout
"""

import hashlib
import json
import pickle
import sys
from pathlib import Path

import numpy as np

from prep.errors import PrepareError
from prep.files import atomic_path, sha256_file
from prep.folder import leftover_temporaries, lock_holder
from prep.tokenizers import encoding_sha256, gpt2_encoding

META_FORMAT_VERSION = 1
VERIFY_SHOWS_CHARS = 200  # how much of val `verify` decodes and prints


def write_meta(out_dir, *, tokenizer, dtype, split_tokens, source, split, options, script):
    """Write meta.json: everything needed to read, check and reproduce the .bin files.

    tokenizer: {"kind": "char"|"tiktoken"|"bpe", "name", "vocab_size", "eot_id", "sha256", ...};
    split_tokens: {"train": 1003854, "val": 111540}; source: {"path", "sha256", ...}.
    """
    out_dir = Path(out_dir)
    meta = {
        "format_version": META_FORMAT_VERSION,
        "created_by": script,
        "tokenizer": tokenizer,
        "dtype": np.dtype(dtype).name,
        "splits": {
            name: {
                "file": f"{name}.bin",
                "tokens": count,
                "sha256": sha256_file(out_dir / f"{name}.bin"),
            }
            for name, count in split_tokens.items()
        },
        "source": source,
        "split": split,
        "options": options,
    }
    bad = _first_non_utf8(meta)
    if bad is not None:  # a name from the file system that is not UTF-8
        raise PrepareError(
            f"the file name {bad.encode('utf-8', 'surrogateescape')!r} is not valid UTF-8, so "
            f"meta.json cannot record it; rename the file"
        )
    data = (json.dumps(meta, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    with atomic_path(out_dir / "meta.json") as tmp:
        tmp.write_bytes(data)
    return meta


def _first_non_utf8(value):
    """The first string in a JSON-like value that UTF-8 cannot encode (a lone surrogate), or None.

    {"path": "caf\\udce9.txt"} -> "caf\\udce9.txt" (Python's name for the file name bytes caf\\xe9.txt)
    """
    if isinstance(value, str):
        return None if value.isascii() or _encodes(value) else value
    children = value.values() if isinstance(value, dict) else value
    if isinstance(value, (dict, list, tuple)):
        return next((bad for bad in map(_first_non_utf8, children) if bad is not None), None)
    return None


def _encodes(text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text_source(input_path, out_dir, characters, url=None):
    """meta.json's "source" for one text file: where it is, its sha256 and size, its origin.

    The path is relative when the file sits in `out_dir` (a downloaded input.txt), so the
    folder can be moved; `url` is None for a local --input.
    """
    input_path = Path(input_path).resolve()
    inside = input_path.parent == Path(out_dir).resolve()
    return {
        "path": input_path.name if inside else str(input_path),
        "sha256": sha256_file(input_path),
        "characters": characters,
        "url": url,
    }


def write_pickle(path, obj):
    """Pickle `obj` to `path`, atomically (nanoGPT's meta.pkl)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        pickle.dump(obj, f)


def write_bpe_meta_pkl(out_dir, tokenizer, encoding):
    """nanoGPT's meta.pkl for a BPE pipeline; return whether one was written.

    A trained tokenizer ({"kind": "bpe", ...}) -> {"vocab_size", "tokenizer", "stoi", "itos"}:
    train.py sizes the model from vocab_size, and sample.py, which reads stoi/itos whenever a
    meta.pkl exists, can run (see `nanogpt_sample_maps`). GPT-2 -> no meta.pkl, so train.py and
    sample.py keep their GPT-2 defaults (prep.folder's commit removes one an earlier run left).
    """
    meta_pkl = Path(out_dir) / "meta.pkl"
    if tokenizer["kind"] == "bpe":
        stoi, itos = nanogpt_sample_maps(encoding)
        write_pickle(
            meta_pkl,
            {
                "vocab_size": tokenizer["vocab_size"],
                "tokenizer": tokenizer,
                "stoi": stoi,
                "itos": itos,
            },
        )
        return True
    return False


def nanogpt_sample_maps(encoding):
    """stoi/itos for nanoGPT's sample.py, which encodes [stoi[c] for c in s] and decodes
    ''.join(itos[i] for i in ids): a character-level view of a BPE vocabulary.

    itos: every id -> its bytes as text (a token holding part of a multi-byte character shows
    as U+FFFD: sample.py can only join strings); stoi: each character that is a token by
    itself -> that id, so a prompt like "\n" or "ROMEO:" encodes one character per token.
    """
    itos = {}
    for token_id in range(encoding.n_vocab):
        try:
            itos[token_id] = encoding.decode_single_token_bytes(token_id).decode(
                "utf-8", errors="replace"
            )
        except KeyError:  # a gap in a tiktoken vocabulary
            continue
    stoi = {
        text: token_id
        for token_id, text in sorted(itos.items(), reverse=True)
        if len(text) == 1 and text != "\ufffd"
    }
    return stoi, itos


SPLIT_NAMES = ("train", "val")  # nanoGPT reads both; a folder without either is not usable
BIN_DTYPES = ("uint16", "uint32")


def verify(folder):
    """Audit a prepared folder against its meta.json; return the problems, one line each.

    [] means the folder is complete and consistent. Recomputed, not trusted: each split's size,
    sha256 and largest id; the source's sha256 when the source is in the folder; the tokenizer's
    sha256 from its recorded definition (the characters, GPT-2's files, the trained tokenizer's
    file). Prints each split and the start of val; a leftover of an interrupted run is a warning
    on stderr (the data may still be whole; the next run removes it).
    """
    try:
        return _audit(Path(folder))
    except OSError as exc:  # an unreadable file: still one line, never a traceback
        return [f"cannot read {exc.filename or folder}: {exc.strerror or exc}"]


def _audit(folder):
    holder = lock_holder(folder)
    if holder is not None:
        return [f"{folder} is being written by a run right now ({holder}); verify it after"]
    leftovers = leftover_temporaries(folder)
    meta, problems = read_meta(folder, leftovers)
    if problems:
        return problems
    if leftovers:
        print(
            f"warning: {folder} holds leftover temporary files of an interrupted run "
            f"({', '.join(leftovers)}); the next run into this folder removes them",
            file=sys.stderr,
        )
    dtype = np.dtype(meta["dtype"])
    vocab_size = meta["tokenizer"]["vocab_size"]
    for name in SPLIT_NAMES:
        problems += _audit_split(folder, name, meta["splits"][name], dtype, vocab_size)
    problems += _audit_source(folder, meta.get("source") or {})
    decode, tokenizer_problems = _audit_tokenizer(folder, meta["tokenizer"])
    problems += tokenizer_problems
    if not problems:
        ids = np.memmap(folder / meta["splits"]["val"]["file"], dtype=dtype, mode="r")
        start = decode([int(i) for i in ids[:VERIFY_SHOWS_CHARS]])[:VERIFY_SHOWS_CHARS]
        print("start of val:", repr(start))
    return problems


def read_meta(folder, leftovers=()):
    """(meta, []) for a well-formed meta.json, or (None, [the first problem with it]).

    Without meta.json, a folder holding .bin files or `leftovers` (temporary names) is one that
    a run was interrupted in while it replaced the files (see prep/folder.py).
    """
    if not folder.is_dir():
        what = "a file" if folder.exists() else "missing"
        return None, [
            f"{folder} is {what}: give the folder that holds train.bin, val.bin and meta.json"
        ]
    path = folder / "meta.json"
    if not path.exists():
        if leftovers or any((folder / name).exists() for name in ("train.bin", "val.bin")):
            left = f", leaving {', '.join(leftovers)}" if leftovers else ""
            return None, [
                f"{path} does not exist: the folder is incomplete (a run was interrupted while "
                f"replacing its files{left}); run its prepare.py again"
            ]
        return None, [f"{path} does not exist; run the folder's prepare.py first"]
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        return None, [f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}"]
    except json.JSONDecodeError as exc:
        return None, [f"{path} is not valid JSON ({exc})"]
    if not isinstance(meta, dict):
        return None, [f"{path} holds a JSON {type(meta).__name__}, not an object"]
    if meta.get("format_version") != META_FORMAT_VERSION:
        return None, [
            f"{path} has format_version {meta.get('format_version')!r}, expected {META_FORMAT_VERSION}"
        ]
    problem = _shape_problem(meta)
    return (None, [f"{path}: {problem}"]) if problem else (meta, [])


def _shape_problem(meta):
    """The first field of meta.json that is missing or has the wrong type, as a phrase, or None."""

    def wrong(where, value, expected):
        return f"{where} is {json.dumps(value)}, expected {expected}"

    for key, kind in (("tokenizer", dict), ("splits", dict), ("dtype", str)):
        if key not in meta:
            return f'"{key}" is missing'
        if not isinstance(meta[key], kind):
            return wrong(key, meta[key], f"a JSON {'object' if kind is dict else 'string'}")
    if meta["dtype"] not in BIN_DTYPES:
        return wrong("dtype", meta["dtype"], " or ".join(BIN_DTYPES))
    tokenizer = meta["tokenizer"]
    for key, check, expected in (
        ("kind", lambda v: v in ("char", "tiktoken", "bpe"), '"char", "tiktoken" or "bpe"'),
        ("vocab_size", lambda v: _is_int(v) and v > 0, "a positive integer"),
        ("sha256", _is_sha256, "a sha256 (64 hex digits)"),
    ):
        if key not in tokenizer:
            return f'tokenizer "{key}" is missing'
        if not check(tokenizer[key]):
            return wrong(f"tokenizer.{key}", tokenizer[key], expected)
    missing = [name for name in SPLIT_NAMES if name not in meta["splits"]]
    if missing:
        return (
            f"splits has no {' and no '.join(missing)}: a prepared folder needs both train and val"
        )
    for name in SPLIT_NAMES:
        split = meta["splits"][name]
        if not isinstance(split, dict):
            return wrong(f"splits.{name}", split, "a JSON object")
        for key, check, expected in (
            ("file", _is_plain_name, "a file name in the folder"),
            ("tokens", lambda v: _is_int(v) and v >= 0, "a count of tokens"),
            ("sha256", _is_sha256, "a sha256 (64 hex digits)"),
        ):
            if key not in split:
                return f'splits.{name} "{key}" is missing'
            if not check(split[key]):
                return wrong(f"splits.{name}.{key}", split[key], expected)
    if "source" in meta and not isinstance(meta["source"], dict):
        return wrong("source", meta["source"], "a JSON object")
    return None


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_sha256(value):
    return (
        isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
    )


def _is_plain_name(value):
    return isinstance(value, str) and value not in ("", ".", "..") and "/" not in value


def _audit_split(folder, name, split, dtype, vocab_size):
    path = folder / split["file"]
    if not path.is_file():
        return [f"{path} is missing" if not path.exists() else f"{path} is not a file"]
    size = path.stat().st_size
    if size != split["tokens"] * dtype.itemsize:
        return [f"{path} has {size:,} bytes, expected {split['tokens']:,} {dtype.name} tokens"]
    print(f"{name}: {split['tokens']:,} tokens, {dtype.name}, {path}")
    if size == 0:
        return [f"{path} holds no tokens: nanoGPT cannot read an empty {name} split"]
    problems = []
    if sha256_file(path) != split["sha256"]:
        problems.append(f"{path} does not match the sha256 recorded in meta.json")
    highest = int(np.memmap(path, dtype=dtype, mode="r").max())
    if highest >= vocab_size:
        problems.append(f"{path} holds token id {highest:,} >= vocab_size {vocab_size:,}")
    return problems


def _audit_source(folder, source):
    path = source.get("path")
    if not isinstance(path, str) or not isinstance(source.get("sha256"), str):
        return []
    path = folder / path
    if path.is_file() and sha256_file(path) != source["sha256"]:
        return [f"{path} does not match the source sha256 recorded in meta.json"]
    return []


def _audit_tokenizer(folder, tokenizer):
    """(ids -> text, problems): the tokenizer rebuilt from its recorded definition, its sha256 checked."""
    where = f"{folder / 'meta.json'}: tokenizer"
    kind, vocab_size = tokenizer["kind"], tokenizer["vocab_size"]
    if kind == "char":
        chars = tokenizer.get("chars")
        if not isinstance(chars, str):
            return None, [f'{where} "chars" is missing or not a string']
        problems = []
        if hashlib.sha256(chars.encode()).hexdigest() != tokenizer["sha256"]:
            problems.append(f"{where} sha256 does not match its recorded characters")
        if len(chars) != vocab_size:
            problems.append(f"{where} has {len(chars)} characters but vocab_size {vocab_size}")
        return (lambda ids: "".join(chars[i] for i in ids)), problems
    try:
        if kind == "tiktoken":
            if tokenizer.get("name") != "gpt2":
                return None, [f"{where} name {tokenizer.get('name')!r} is not one we can rebuild"]
            encoding = gpt2_encoding()
            found = encoding_sha256(encoding)
        else:
            encoding, found = _trained_encoding(folder, tokenizer, where)
    except PrepareError as exc:
        return None, [str(exc)]
    problems = []
    if found != tokenizer.get("encoding_sha256", tokenizer["sha256"]):
        problems.append(f"{where} sha256 does not match the tokenizer rebuilt from its definition")
    if encoding.n_vocab != vocab_size:
        problems.append(f"{where} vocab_size {vocab_size:,} is not its {encoding.n_vocab:,} tokens")
    return encoding.decode, problems


def _trained_encoding(folder, tokenizer, where):
    """(Encoding, sha256 of its file) of a trained tokenizer's recorded file."""
    from bpe import Tokenizer

    if not isinstance(tokenizer.get("path"), str):
        raise PrepareError(f'{where} "path" is missing or not a string')
    path = folder / tokenizer["path"]  # an absolute path stays as it is
    if not path.is_file():
        raise PrepareError(
            f"the tokenizer file {path} recorded in {folder / 'meta.json'} is missing"
        )
    if sha256_file(path) != tokenizer["sha256"]:
        raise PrepareError(
            f"{path} has changed since {folder / 'meta.json'} was written (sha256 differs)"
        )
    try:
        encoding = Tokenizer.load(path).to_tiktoken()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PrepareError(f"{path} cannot be loaded ({exc})") from None
    return encoding, encoding_sha256(encoding)
