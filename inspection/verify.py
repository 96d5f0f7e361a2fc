"""The auditor: `verify` checks a prepared folder against its meta.json, recomputing, not trusting.
meta.pkl is read as plain data, never run. Every problem is one line."""

import hashlib
import os
import sys
from pathlib import Path

import numpy as np

from bpe import EOT
from formats.schema import (
    GOLF_FORMAT,
    META_PKL,
    NANOCHAT,
    NANOCHAT_DATA_DIR,
    NANOCHAT_TOKENIZER_DIR,
    SPLIT_NAMES,
    index_name,
    listed_files,
    trainer_reads,
)
from formats.shards import open_npy, read_ids
from formats.tokenizers import encoding_sha256, nanogpt_sample_maps, record_encoding
from formats.val_bytes import CHUNK
from safety.commit import leftover_temporaries, lock_holder
from safety.errors import PrepareError, reading
from safety.files import read_plain_pickle, sha256_file
from safety.signals import closed_stdout

from . import golf, nanochat
from .folder import SHA256_DIFFERS, audit_shards, checked_meta, ids_problems, open_split
from .token_bytes import audit_token_bytes
from .val_bytes import audit_val_bytes

VERIFY_SHOWS_CHARS = 200  # how much of val `verify` decodes and prints


def verify(folder, quiet=False):
    """Audit a prepared folder against its meta.json; return the problems, one line each ([]: none).

    Prints each split and the start of val, and warns on stderr of an interrupted run's
    leftovers (the next run removes them); `quiet`: print nothing (show checks first)."""
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
    if (holder := lock_holder(folder)) is not None:
        return [f"{folder} is being written by a run right now ({holder}); verify it after"]
    leftovers = leftover_temporaries(folder)
    meta, problems = checked_meta(folder, leftovers), []
    if leftovers and not quiet:
        print(
            f"warning: {folder} holds leftover temporary files of an interrupted run "
            f"({', '.join(leftovers)}); the next run into this folder removes them",
            file=sys.stderr,
        )
    source = meta.get("source") or {}  # one elsewhere (a hub, --data-files) has no path
    if source.get("path") is not None:
        path = folder / source["path"]
        if path.is_file() and sha256_file(path) != source["sha256"]:
            problems.append(f"{path} does not match the source sha256 recorded in meta.json")
    problems += _unlisted_files(folder, meta, leftovers)
    if meta.get("format") == NANOCHAT:  # parquet shards of text: inspection/nanochat.py
        return nanochat.audit(folder, meta, quiet, problems)
    if meta.get("format") == GOLF_FORMAT:  # parameter-golf's datasets: inspection/golf.py
        return problems + golf.audit(folder, meta, quiet)
    dtype, vocab_size = np.dtype(meta["dtype"]), meta["tokenizer"]["vocab_size"]
    if "shards" in meta:
        problems += audit_shards(folder, meta, dtype, vocab_size, quiet)
    for name in SPLIT_NAMES if "shards" not in meta else ():
        split_problems = _audit_split(folder, name, meta["splits"][name], dtype, vocab_size, quiet)
        problems += split_problems  # the index is read against ids that passed
        if not split_problems:
            problems += _audit_index(folder, meta["splits"][name], dtype, meta["tokenizer"])
    decode, tokenizer_problems = _audit_tokenizer(folder, meta["tokenizer"])
    problems += tokenizer_problems
    problems += _audit_meta_pkl(folder, meta, check_content=not tokenizer_problems)
    problems += [] if problems else audit_token_bytes(folder, meta)  # reads the checked ids
    problems += [] if problems else audit_val_bytes(folder, meta)
    if not problems and not quiet:
        _, ids = open_split(folder, "val")
        start = decode([int(i) for i in ids[:VERIFY_SHOWS_CHARS]])[:VERIFY_SHOWS_CHARS]
        print("start of val:", repr(start))
    return problems


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
    return ids_problems(path, read_ids(path, dtype), split["sha256"], vocab_size)


def _audit_index(folder, split, dtype, tokenizer):
    """A split's document index (schema.index_name), if meta.json lists one: its sha256, and
    its starts (_starts_problem)."""
    record = split.get("index")
    if record is None:
        return []
    path = folder / index_name(Path(split["file"]).stem)  # its form: checked_meta's
    if not path.is_file():
        return [f"{path} is missing" if not os.path.lexists(path) else f"{path} is not a file"]
    if sha256_file(path) != record["sha256"]:
        return [f"{path} {SHA256_DIFFERS}"]
    try:
        starts = open_npy(path)  # its header checked against its size first
    except PrepareError as exc:
        return [str(exc)]
    data = read_ids(folder / split["file"], dtype)
    problem = _starts_problem(starts, record["documents"], data, tokenizer.get("eot_id"))
    return [f"{path}: {problem}"] if problem else []


def _starts_problem(starts, documents, data, eot_id):
    """What is wrong with a document index of `data`, as a phrase, or None: its starts must be
    uint64, 0 first, strictly increasing, below len(data), and every document must end with the
    end-of-text id (nanoGPT's) or begin with it (llm.c's), each such boundary a start."""
    if starts.dtype != np.uint64 or starts.ndim != 1 or len(starts) != documents:
        return (
            f"holds {starts.dtype} of shape {starts.shape}, not the {documents:,} uint64 "
            f"document starts meta.json records"
        )
    if documents == 0 or starts[0] != 0:
        return "the first document must start at token 0"
    if documents > 1 and not (np.diff(starts.astype(np.int64)) > 0).all():
        return "the document starts do not strictly increase"
    if int(starts[-1]) >= len(data):
        return (
            f"a document starts at token {int(starts[-1]):,}, past the split's {len(data):,} tokens"
        )
    if eot_id is None:
        return None
    starts = starts.astype(np.int64)  # below len(data): checked above
    ends = np.append(starts[1:] - 1, len(data) - 1)
    # where a boundary falls past an end-of-text id: after it (nanoGPT's), or on it (llm.c's)
    rules = [after for after, edges in ((1, ends), (0, starts)) if (data[edges] == eot_id).all()]
    if not rules:
        return (
            f"not every document ends with the end-of-text id {eot_id} (nor begins with it, "
            f"llm.c's rule)"
        )
    missing = [_first_missing_start(starts, data, eot_id, after) for after in rules]
    if None in missing:
        return None
    return (
        f"no document starts at token {missing[0]:,}, though the end-of-text id {eot_id} "
        f"at token {missing[0] - rules[0]:,} makes it a boundary: the index misses a document"
    )


def _first_missing_start(starts, data, eot_id, after):
    """The first boundary of `data` (each end-of-text id's position plus `after`) that `starts`
    leave out, or None: a start left out joins two documents into one that still keeps the rule.
    A chunk of ids at a time: memory flat, time linear."""
    for i in range(0, len(data), CHUNK):
        found = np.flatnonzero(data[i : i + CHUNK] == eot_id) + (i + after)
        found = found[found < len(data)]
        low, high = np.searchsorted(starts, [i + after, i + CHUNK + after])
        # each start is a boundary (the rule held), so fewer starts than boundaries is one missed
        if high - low < len(found):
            return int(found[~np.isin(found, starts[low:high])][0])
    return None


def _unlisted_files(folder, meta, leftovers):
    """Files a trainer pointed at the folder would read (schema.trainer_reads) that meta.json
    does not list; meta.pkl is _audit_meta_pkl's, and a leftover is warned about instead."""
    listed = listed_files(meta) | {META_PKL} | set(leftovers)
    nanochat_format = meta.get("format") == NANOCHAT
    names = [entry.name for entry in os.scandir(folder)]
    for sub in (NANOCHAT_DATA_DIR, NANOCHAT_TOKENIZER_DIR) if nanochat_format else ():
        if (folder / sub).is_symlink():  # its files are elsewhere, and changed from there
            return [
                f"{folder / sub} is a link, not a folder of the prepared set; run the folder's "
                "prepare.py again"
            ]
        if (folder / sub).is_dir():
            names += [f"{sub}/{entry.name}" for entry in os.scandir(folder / sub)]
    unlisted = [name for name in names if name not in listed and not name.endswith(".tmp")]
    unlisted = sorted(name for name in unlisted if trainer_reads(name, meta.get("format")))
    if not unlisted:
        return []
    more = f" and {len(unlisted) - 5:,} more" if len(unlisted) > 5 else ""
    shown = ", ".join(unlisted[:5]) + more
    reader = "nanochat" if nanochat_format else "a trainer"
    return [
        f"{folder} holds files that meta.json does not list but {reader} would read ({shown}); "
        f"move them away, or run the folder's prepare.py again"
    ]


def _audit_meta_pkl(folder, meta, check_content=True):
    """meta.pkl as nanoGPT would read it: recorded (its sha256) or recorded as absent, and plain
    data saying meta.json's vocab_size and stoi/itos (what sample.py encodes and decodes with)."""
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
    if tokenizer["kind"] == "bpe" and check_content:
        stoi, itos = nanogpt_sample_maps(record_encoding(tokenizer, folder))
        if content.get("itos") != itos or content.get("stoi") != stoi:
            return [f"{path}: stoi/itos are not those of the tokenizer meta.json records"]
    return []


def _audit_tokenizer(folder, tokenizer):
    """(ids -> text, problems): the tokenizer rebuilt from its recorded definition, checked."""
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
        encoding = record_encoding(tokenizer, folder)
    except PrepareError as exc:
        return None, [str(exc)]
    problems = []
    if encoding_sha256(encoding) != tokenizer.get("encoding_sha256", tokenizer["sha256"]):
        problems.append(f"{where} sha256 does not match the tokenizer rebuilt from its definition")
    if encoding.n_vocab != vocab_size:
        problems.append(f"{where} vocab_size {vocab_size:,} is not its {encoding.n_vocab:,} tokens")
    eot_id = encoding._special_tokens.get(EOT)  # what the documents were cut at, if any
    if tokenizer.get("eot_id") != eot_id:
        problems.append(f"{where}.eot_id is {tokenizer.get('eot_id')}, but its {EOT} is {eot_id}")
    return encoding.decode, problems


def verified_meta(folder):
    """meta.json of a folder `verify` finds no problem in, else a PrepareError of the first."""
    if problems := verify(folder, quiet=True):
        raise PrepareError(problems[0])
    return checked_meta(folder)
