"""A prepared folder read as its trainer reads it: meta.json checked (formats/schema.py), a
split's ids."""

import os
from pathlib import Path

from formats.schema import (
    GOLF_FORMAT,
    META_FORMAT_VERSION,
    RECORD_NAME,
    name_problem,
    shape_problem,
    totals_problem,
    trainer_reads,
)
from formats.shards import read_ids, read_shard
from safety.commit import JOURNAL_NAME
from safety.errors import PrepareError
from safety.files import json_kind, load_json, read_small_file, sha256_file

SHA256_DIFFERS = "does not match the sha256 recorded in meta.json"


def checked_meta(folder, leftovers=()):
    """meta.json of `folder` if it is well-formed, else a PrepareError of its first problem;
    without one, a folder holding .bin files or `leftovers` is one a run was interrupted in."""
    folder = Path(folder)
    if not folder.is_dir():
        what = "a file" if folder.exists() else "missing"
        raise PrepareError(
            f"{folder} is {what}: give the folder a prepare.py wrote, the one holding its meta.json"
        )
    path = folder / RECORD_NAME
    if not os.path.lexists(path):
        if found := golf_dataset(folder):  # its meta.json is its parameter-golf folder's
            raise PrepareError(
                f"{folder} is the dataset {found[1]['name']} of the parameter-golf folder "
                f"{found[0]}, whose meta.json describes it: verify and bpb read {found[0]}; "
                f"overlap reads this dataset: python prepare_common.py overlap {folder}"
            )
        interrupted = leftovers or os.path.lexists(folder / JOURNAL_NAME)
        if interrupted or any(trainer_reads(p.name) for p in folder.iterdir()):
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
            f"{path} has format_version {meta.get('format_version')!r}, "
            f"expected {META_FORMAT_VERSION}"
        )
    if problem := shape_problem(meta) or name_problem(meta) or totals_problem(meta):
        raise PrepareError(f"{path}: {problem}")
    return meta


def golf_dataset(folder):
    """(ROOT, its meta.json's record of the dataset) for ROOT/datasets/NAME, a dataset that
    ROOT's parameter-golf meta.json lists; None for any other folder."""
    dataset, root = Path(folder).resolve(), Path(folder).resolve().parent.parent
    if dataset.parent.name != "datasets" or not (root / RECORD_NAME).is_file():
        return None
    meta = checked_meta(root)
    datasets = meta["datasets"] if meta.get("format") == GOLF_FORMAT else []
    record = next((d for d in datasets if d["name"] == dataset.name), None)
    return None if record is None else (root, record)


def open_split(folder, split, meta=None):
    """(meta, the split's ids memory-mapped as get_batch maps them): a .bin file, or a shard
    folder's first of the split (or the one named)."""
    folder = Path(folder)
    meta = meta or checked_meta(folder)
    if "shards" in meta:
        shard = next((s for s in meta["shards"] if split in (s["file"], s["split"])), None)
        if shard is None:
            raise PrepareError(f"{folder} has no shard of split or file {split!r}")
        return meta, read_shard(folder / shard["file"], meta["format"], meta["dtype"])
    if split not in meta["splits"]:
        raise PrepareError(f"{folder / RECORD_NAME} has no split {split!r}: {list(meta['splits'])}")
    path = folder / meta["splits"][split]["file"]
    if not path.is_file() or path.stat().st_size == 0:
        raise PrepareError(f"{path} is missing or empty; run the folder's prepare.py again")
    return meta, read_ids(path, meta["dtype"])


def ids_problems(path, ids, sha256, vocab_size):
    """A token file's sha256 against meta.json's, and its largest id against vocab_size."""
    problems = [] if sha256_file(path) == sha256 else [f"{path} {SHA256_DIFFERS}"]
    highest = int(ids.max())
    if highest >= vocab_size:
        problems.append(f"{path} holds token id {highest:,} >= vocab_size {vocab_size:,}")
    return problems


def audit_shards(folder, meta, dtype, vocab_size, quiet=False):
    """Each shard meta.json lists: its header as readers check it, tokens, sha256, largest id."""
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
        problems += ids_problems(path, tokens, shard["sha256"], vocab_size)
    return problems
