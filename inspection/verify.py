"""The auditor: `verify` checks a prepared folder against its meta.json, recomputing, not trusting.

What a folder holds is what its meta.json lists: each split's file (or each shard) by size,
sha256 and largest id; the source by sha256 when it sits in the folder; the tokenizer rebuilt
from its recorded definition; meta.pkl read as plain data, never run. Every problem is one line.
"""

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

from formats.shards import BIN_DTYPES, META_FORMAT_VERSION, SPLIT_NAMES, open_npy, read_shard
from formats.tokenizers import encoding_sha256, gpt2_encoding, load_trained
from safety.commit import JOURNAL_NAME, leftover_temporaries, lock_holder
from safety.errors import PrepareError, reading
from safety.files import json_kind, load_json, read_plain_pickle, read_small_file, sha256_file
from safety.record import (
    META_PKL,
    SHARD_FORMATS,
    is_plain_name,
    listed_files,
    name_problem,
    trainer_reads,
)
from safety.signals import closed_stdout

from .token_bytes import audit_token_bytes

VERIFY_SHOWS_CHARS = 200  # how much of val `verify` decodes and prints
SHA256_DIFFERS = "does not match the sha256 recorded in meta.json"


def verify(folder, quiet=False):
    """Audit a prepared folder against its meta.json; return the problems, one line each.

    [] means the folder is complete and consistent. Recomputed, not trusted: each split's size,
    sha256 and largest id; the source's sha256 when the source is in the folder; the tokenizer's
    sha256 from its recorded definition (the characters, GPT-2's files, the trained tokenizer's
    file). Prints each split and the start of val; a leftover of an interrupted run is a warning
    on stderr (the data may still be whole; the next run removes it). `quiet`: print nothing
    (for `show`, which makes the same checks first).
    """
    try:
        with reading(folder):  # an exception no check foresaw still names the folder (run_main)
            return _audit(Path(folder), quiet)
    except PrepareError as exc:
        return [str(exc)]
    except OSError as exc:  # an unreadable file: still one line, never a traceback
        if closed_stdout(exc):  # `verify ... | head -1`: run_main ends it quietly
            raise
        return [f"cannot read {exc.filename or folder}: {exc.strerror or exc}"]


def _audit(folder, quiet=False):
    holder = lock_holder(folder)
    if holder is not None:
        return [f"{folder} is being written by a run right now ({holder}); verify it after"]
    leftovers = leftover_temporaries(folder)
    meta, problems = checked_meta(folder, leftovers), []
    if leftovers and not quiet:
        print(
            f"warning: {folder} holds leftover temporary files of an interrupted run "
            f"({', '.join(leftovers)}); the next run into this folder removes them",
            file=sys.stderr,
        )
    if meta.get("format") == "nanochat":  # parquet shards of text: inspection/nanochat.py
        from .nanochat import audit

        return audit(folder, meta, quiet)
    dtype = np.dtype(meta["dtype"])
    vocab_size = meta["tokenizer"]["vocab_size"]
    if "shards" in meta:
        problems += _audit_shards(folder, meta, dtype, vocab_size, quiet)
    for name in SPLIT_NAMES if "shards" not in meta else ():
        problems += _audit_split(folder, name, meta["splits"][name], dtype, vocab_size, quiet)
        problems += _audit_index(folder, meta["splits"][name], dtype, meta["tokenizer"])
    problems += _audit_source(folder, meta.get("source") or {})
    decode, tokenizer_problems = _audit_tokenizer(folder, meta["tokenizer"])
    problems += tokenizer_problems
    problems += _audit_meta_pkl(folder, meta, check_content=not tokenizer_problems)
    problems += _unlisted_files(folder, meta, leftovers)
    problems += [] if problems else audit_token_bytes(folder, meta)  # reads the checked ids
    if not problems and not quiet:
        _, ids = open_split(folder, "val")
        start = decode([int(i) for i in ids[:VERIFY_SHOWS_CHARS]])[:VERIFY_SHOWS_CHARS]
        print("start of val:", repr(start))
    return problems


def checked_meta(folder, leftovers=()):
    """meta.json of `folder` if it is well-formed, else a PrepareError of its first problem.

    Without meta.json, a folder holding .bin files or `leftovers` (temporary names) is one that
    a run was interrupted in while it replaced the files (see safety/commit.py).
    """
    folder = Path(folder)
    if not folder.is_dir():
        what = "a file" if folder.exists() else "missing"
        raise PrepareError(
            f"{folder} is {what}: give the folder that holds train.bin, val.bin and meta.json"
        )
    path = folder / "meta.json"
    if not os.path.lexists(path):
        if (
            leftovers
            or os.path.lexists(folder / JOURNAL_NAME)
            or any(trainer_reads(p.name) for p in folder.iterdir())
        ):
            left = f", leaving {', '.join(leftovers)}" if leftovers else ""
            raise PrepareError(
                f"{path} does not exist: the folder is incomplete (a run was interrupted while "
                f"replacing its files{left}); run its prepare.py again"
            )
        raise PrepareError(f"{path} does not exist; run the folder's prepare.py first")
    meta = load_json(read_small_file(path), path)
    if not isinstance(meta, dict):
        raise PrepareError(f"{path} holds a JSON {json_kind(meta)}, not an object")
    if meta.get("format_version") != META_FORMAT_VERSION:
        raise PrepareError(
            f"{path} has format_version {meta.get('format_version')!r}, expected {META_FORMAT_VERSION}"
        )
    if problem := _shape_problem(meta) or name_problem(meta):  # name_problem: each file named
        raise PrepareError(f"{path}: {problem}")
    return meta


def _shape_problem(meta):
    """The first field of meta.json that is missing or has the wrong type, as a phrase, or None."""
    if meta.get("format") == "nanochat":
        from .nanochat import shape_problem

        return shape_problem(meta)
    problem = _fields_problem(meta, "", TOP_FIELDS)
    if problem is None and meta["dtype"] not in BIN_DTYPES:
        problem = _wrong("dtype", meta["dtype"], " or ".join(BIN_DTYPES))
    if problem := problem or _fields_problem(meta["tokenizer"], "tokenizer", TOKENIZER_FIELDS):
        return problem
    if meta.get("meta_pkl") is not None and not (
        isinstance(meta["meta_pkl"], dict)
        and meta["meta_pkl"].get("file") == META_PKL
        and _is_sha256(meta["meta_pkl"].get("sha256"))
    ):
        return _wrong(
            "meta_pkl", meta["meta_pkl"], f'null or {{"file": "{META_PKL}", "sha256": ...}}'
        )
    if "shards" in meta:
        return _shards_problem(meta)
    missing = [name for name in SPLIT_NAMES if name not in meta["splits"]]
    if missing:
        return (
            f"splits has no {' and no '.join(missing)}: a prepared folder needs both train and val"
        )
    for name in SPLIT_NAMES:
        split = meta["splits"][name]
        if problem := _fields_problem(split, f"splits.{name}", SPLIT_FIELDS):
            return problem
        if split["file"] != f"{name}.bin":  # the name nanoGPT's train.py opens, whatever we say
            return _wrong(
                f"splits.{name}.file", split["file"], f'"{name}.bin" (what nanoGPT reads)'
            )
    if "source" in meta and not isinstance(meta["source"], dict):
        return _wrong("source", meta["source"], "a JSON object")
    return None


def _shards_problem(meta):
    """_shape_problem's checks of a folder of shards: its format, and each shard's record."""
    if meta.get("format") not in SHARD_FORMATS:
        return _wrong("format", meta.get("format"), '"llmc" or "npy"')
    shards = meta["shards"]
    if not isinstance(shards, list) or not shards:
        return _wrong("shards", shards, "a list of the shards")
    for i, shard in enumerate(shards):
        if problem := _fields_problem(shard, f"shards[{i}]", SHARD_FIELDS):
            return problem
    if shards[0]["split"] != "val":
        return _wrong("shards[0].split", shards[0]["split"], '"val" (shard 0 is val)')
    if all(shard["split"] != "train" for shard in shards):
        return "shards has no train shard: llm.c and modded-nanogpt would have nothing to train on"
    return None


def _fields_problem(record, where, fields):
    """The first of `fields` (key, check, expected) missing from `record` or failing its check;
    a `record` that is not a JSON object fails first."""
    if not isinstance(record, dict):
        return _wrong(where, record, "a JSON object")
    for key, check, expected in fields:
        if key not in record:
            return f'{where} "{key}" is missing'.lstrip()
        if not check(record[key]):
            return _wrong(f"{where}.{key}" if where else key, record[key], expected)
    return None


def _wrong(where, value, expected):
    return f"{where} is {json.dumps(value)}, expected {expected}"


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_sha256(value):
    return isinstance(value, str) and len(value) == 64 and set(value) <= set("0123456789abcdef")


# (key, check, expected) of the fields of each record of meta.json
FILE = ("file", is_plain_name, "a file name in the folder")
SHA256 = ("sha256", _is_sha256, "a sha256 (64 hex digits)")
TOP_FIELDS = (
    ("tokenizer", lambda v: isinstance(v, dict), "a JSON object"),
    ("splits", lambda v: isinstance(v, dict), "a JSON object"),
    ("dtype", lambda v: isinstance(v, str), "a JSON string"),
)
TOKENIZER_FIELDS = (
    ("kind", lambda v: v in ("char", "tiktoken", "bpe"), '"char", "tiktoken" or "bpe"'),
    ("vocab_size", lambda v: _is_int(v) and v > 0, "a positive integer"),
    SHA256,
)
SHARD_FIELDS = (
    FILE,
    ("split", lambda v: v in SPLIT_NAMES, '"train" or "val"'),
    ("tokens", lambda v: _is_int(v) and v > 0, "a positive count of tokens"),
    SHA256,
)
INDEX_FIELDS = (
    FILE,
    ("documents", lambda v: _is_int(v) and v >= 0, "a count of documents"),
    SHA256,
)
SPLIT_FIELDS = (FILE, ("tokens", lambda v: _is_int(v) and v >= 0, "a count of tokens"), SHA256)


def _audit_split(folder, name, split, dtype, vocab_size, quiet=False):
    path = folder / split["file"]
    if not path.is_file():
        return [f"{path} is missing" if not os.path.lexists(path) else f"{path} is not a file"]
    size = path.stat().st_size
    if size != split["tokens"] * dtype.itemsize:
        return [f"{path} has {size:,} bytes, expected {split['tokens']:,} {dtype.name} tokens"]
    if not quiet:
        print(f"{name}: {split['tokens']:,} tokens, {dtype.name}, {path}")
    if size == 0:
        return [f"{path} holds no tokens: nanoGPT cannot read an empty {name} split"]
    return _ids_problems(path, np.memmap(path, dtype=dtype, mode="r"), split["sha256"], vocab_size)


def _ids_problems(path, ids, sha256, vocab_size):
    """A token file's sha256 against meta.json's, and its largest id against vocab_size."""
    problems = [] if sha256_file(path) == sha256 else [f"{path} {SHA256_DIFFERS}"]
    highest = int(ids.max())
    if highest >= vocab_size:
        problems.append(f"{path} holds token id {highest:,} >= vocab_size {vocab_size:,}")
    return problems


def _audit_index(folder, split, dtype, tokenizer):
    """A split's document index (SPLIT.docs.npy), if meta.json lists one: its sha256, and
    the starts it holds: uint64, 0 first, strictly increasing, below the split's token count, and
    on the boundary rule: every document ends with the end-of-text id (nanoGPT's) or every one
    begins with it (llm.c's)."""
    record = split.get("index")
    if record is None:
        return []
    path = folder / f"{Path(split['file']).stem}.docs.npy"
    problem = _fields_problem(record, "index", INDEX_FIELDS) if isinstance(record, dict) else "is not a JSON object"  # fmt: skip
    if problem or record["file"] != path.name:
        return [f"{folder / 'meta.json'}: the index of {split['file']} {problem or 'is not ' + path.name}"]  # fmt: skip
    if not path.is_file():
        return [f"{path} is missing" if not os.path.lexists(path) else f"{path} is not a file"]
    if sha256_file(path) != record["sha256"]:
        return [f"{path} {SHA256_DIFFERS}"]
    try:
        starts = open_npy(path)  # its header checked against its size first
    except PrepareError as exc:
        return [str(exc)]
    data = np.memmap(folder / split["file"], dtype=dtype, mode="r")
    problem = _starts_problem(starts, record["documents"], data, tokenizer.get("eot_id"))
    return [f"{path}: {problem}"] if problem else []


def _starts_problem(starts, documents, data, eot_id):
    """What is wrong with a document index of `data`, as a phrase, or None."""
    if starts.dtype != np.uint64 or starts.ndim != 1 or len(starts) != documents:
        return f"holds {starts.dtype} of shape {starts.shape}, not the {documents:,} uint64 document starts meta.json records"  # fmt: skip
    if documents == 0 or starts[0] != 0:
        return "the first document must start at token 0"
    if documents > 1 and not (np.diff(starts.astype(np.int64)) > 0).all():
        return "the document starts do not strictly increase"
    if int(starts[-1]) >= len(data):
        return f"a document starts at token {int(starts[-1]):,}, past the split's {len(data):,} tokens"  # fmt: skip
    ends = np.append(starts[1:].astype(np.int64) - 1, len(data) - 1)
    if eot_id is None or (data[ends] == eot_id).all() or (data[starts] == eot_id).all():
        return None
    return f"not every document ends with the end-of-text id {eot_id} (nor begins with it, llm.c's rule)"  # fmt: skip


def _audit_shards(folder, meta, dtype, vocab_size, quiet=False):
    """Each shard meta.json lists: its header (or .npy header) as the readers check it, its
    token count, sha256 and largest id; and no shard in the folder that the list leaves out."""
    problems = []
    for shard in meta["shards"]:
        path = folder / shard["file"]
        if not path.is_file():
            problems.append(f"{path} is missing" if not path.exists() else f"{path} is not a file")
            continue
        try:
            tokens = read_shard(path, meta["format"], dtype)
        except PrepareError as exc:
            problems.append(str(exc))
            continue
        if not quiet:
            print(f"{shard['split']}: {len(tokens):,} tokens, {dtype.name}, {path}")
        if len(tokens) != shard["tokens"]:
            problems.append(
                f"{path} holds {len(tokens):,} tokens, meta.json says {shard['tokens']:,}"
            )
            continue
        problems += _ids_problems(path, tokens, shard["sha256"], vocab_size)
    return problems


def _unlisted_files(folder, meta, leftovers):
    """Files a trainer pointed at the folder would read (formats.trainer_reads: nanoGPT's names,
    the shard globs of llm.c, modded-nanogpt and build-nanogpt) that meta.json does not list.
    meta.pkl is _audit_meta_pkl's; a leftover of an interrupted run is warned about instead."""
    listed = listed_files(meta) | {META_PKL} | set(leftovers)
    unlisted = sorted(
        entry.name
        for entry in os.scandir(folder)
        if entry.name not in listed and trainer_reads(entry.name, meta.get("format"))
    )
    if not unlisted:
        return []
    shown = ", ".join(unlisted[:5]) + (
        f" and {len(unlisted) - 5:,} more" if len(unlisted) > 5 else ""
    )
    return [
        f"{folder} holds files that meta.json does not list but a trainer would read ({shown}); "
        f"move them away, or run the folder's prepare.py again"
    ]


def _audit_meta_pkl(folder, meta, check_content=True):
    """meta.pkl as nanoGPT would read it: recorded (its sha256) or recorded as absent, and plain
    data that says what meta.json says (vocab_size; a character tokenizer's stoi/itos)."""
    path, record, tokenizer = folder / META_PKL, meta.get("meta_pkl", ...), meta["tokenizer"]
    exists = os.path.lexists(path)
    if record is None or (record is ... and not exists and tokenizer["kind"] != "char"):
        if exists:
            return [
                f"{path} is not part of this folder's set (meta.json records none), but "
                f"nanoGPT would read it; run the folder's prepare.py again"
            ]
        return []
    if not exists:
        return [f"{path} is missing (nanoGPT reads vocab_size from it); run prepare.py again"]
    if record is not ... and sha256_file(path) != record["sha256"]:
        return [f"{path} {SHA256_DIFFERS}"]
    try:
        content = read_plain_pickle(path)
    except PrepareError as exc:
        return [str(exc)]
    if not isinstance(content, dict) or content.get("vocab_size") != tokenizer["vocab_size"]:
        found = content.get("vocab_size") if isinstance(content, dict) else type(content).__name__
        return [f"{path} holds vocab_size {found!r}, but meta.json {tokenizer['vocab_size']!r}"]
    chars = tokenizer.get("chars")
    if tokenizer["kind"] == "char" and isinstance(chars, str) and check_content:
        itos = dict(enumerate(chars))
        if content.get("itos") != itos or content.get("stoi") != {c: i for i, c in itos.items()}:
            return [f"{path}: stoi/itos are not the characters meta.json records"]
    return []


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
    if kind == "tiktoken" and tokenizer.get("name") != "gpt2":
        return None, [f"{where} name {tokenizer.get('name')!r} is not one we can rebuild"]
    try:
        encoding = (
            gpt2_encoding() if kind == "tiktoken" else _trained_encoding(folder, tokenizer, where)
        )
    except PrepareError as exc:
        return None, [str(exc)]
    problems = []
    if encoding_sha256(encoding) != tokenizer.get("encoding_sha256", tokenizer["sha256"]):
        problems.append(f"{where} sha256 does not match the tokenizer rebuilt from its definition")
    if encoding.n_vocab != vocab_size:
        problems.append(f"{where} vocab_size {vocab_size:,} is not its {encoding.n_vocab:,} tokens")
    return encoding.decode, problems


def _trained_encoding(folder, tokenizer, where):
    """The tiktoken Encoding of a trained tokenizer's recorded file, checked against its sha256."""
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
    return load_trained(path, option="the tokenizer")[1]


def verified_meta(folder):
    """meta.json of a folder `verify` finds no problem in (nanoGPT's reads depend on what it
    checks), else a PrepareError of the first one."""
    if problems := verify(folder, quiet=True):
        raise PrepareError(problems[0])
    return checked_meta(folder)


def open_split(folder, split):
    """(meta, the split's ids memory-mapped with the dtype meta.json names), as get_batch maps them."""
    folder = Path(folder)
    meta = checked_meta(folder)
    dtype = np.dtype(meta["dtype"])
    if "shards" in meta:  # a folder of shards: the split's first one, or the one named
        shard = next((s for s in meta["shards"] if split in (s["file"], s["split"])), None)
        if shard is None:
            raise PrepareError(f"{folder} has no shard of split or file {split!r}")
        return meta, read_shard(folder / shard["file"], meta["format"], dtype)
    if split not in meta["splits"]:
        raise PrepareError(f"{folder / 'meta.json'} has no split {split!r}: {list(meta['splits'])}")
    path = folder / meta["splits"][split]["file"]
    if not path.is_file() or path.stat().st_size == 0:
        raise PrepareError(f"{path} is missing or empty; run the folder's prepare.py again")
    return meta, np.memmap(path, dtype=dtype, mode="r")
