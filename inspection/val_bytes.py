"""verify's audit of a folder's byte figures (meta.json's "bytes") and val bytes sidecars
("val_bytes"), recomputed from the ids a trainer reads alone: these folders' tokenizers
(characters, GPT-2, train_tokenizer.py's) are byte-level and lossless, as prepare.py checked, so
a document is what its ids decode to and a token's share is its byte length (0 for a separator).
"""

from pathlib import Path

import numpy as np

from formats.schema import FIGURES, RECORD_NAME, bin_name, val_bytes_name
from formats.shards import read_ids, read_shard
from formats.val_bytes import (
    SHARE_DTYPE,
    RecordTokens,
    add_figures,
    straddled_tail,
    val_part_only,
    written_documents,
    written_files,
    written_parts,
)
from safety.errors import PrepareError
from safety.files import sha256_file


def audit_val_bytes(folder, meta):
    """Each split's figures and each val sidecar against those recomputed from the ids, one
    line a problem naming the file and the figure; a folder written before them has none."""
    if meta.get("bytes") is None and meta.get("val_bytes") is None:
        return []
    record = Path(folder) / RECORD_NAME
    if meta.get("bytes") is None or meta.get("val_bytes") is None:
        return [f"{record}: records one of bytes and val_bytes without the other"]
    tokens = RecordTokens(meta["tokenizer"], folder)
    try:
        found = recounted_figures(folder, meta, tokens)
    except PrepareError as exc:
        return [f"{record}: val_bytes.eot is {meta['val_bytes']['eot']!r}, but {exc}"]
    problems = figure_problems(record, meta["bytes"], found, "the ids")
    return problems + audit_sidecars(folder, meta, tokens.lengths)


def recounted_figures(folder, meta, tokens):
    """Each split's figures from its ids, the text of each document being what they decode to."""
    figures = {split: dict.fromkeys(FIGURES, 0) for split, _ in written_files(folder, meta)}
    eot, eot_id = meta["val_bytes"]["eot"], meta["tokenizer"].get("eot_id")
    for split, ids in written_documents(written_parts(folder, meta), eot_id, eot):
        add_figures(figures[split], tokens.decode(ids), ids, tokens)
    tail = straddled_tail(folder, meta, eot_id) if eot == "first" else ()
    return val_part_only(figures, *[tokens.own_bytes(tail)] * 2) if len(tail) else figures


def figure_problems(record, recorded, found, source):
    """meta.json's bytes against those recounted from `source`, a line each that differs:
    "meta.json: bytes.val.text_bytes is 5, recounted from the ids: 6"."""
    problems = []
    for split, figures in found.items():
        have = recorded.get(split) or {}
        for name in FIGURES:
            if have.get(name) != figures[name]:
                problems.append(
                    f"{record}: bytes.{split}.{name} is {have.get(name)}, recounted from "
                    f"{source}: {figures[name]:,}"
                )
    return problems


def audit_sidecars(folder, meta, lengths):
    """Each sidecar: its name, sha256 and length against its val ids file, then each share
    against the byte length of the token it stands beside."""
    vals = [s["file"] for s in meta.get("shards", []) if s["split"] == "val"] or [bin_name("val")]
    files = meta["val_bytes"]["files"]
    if [item["ids"] for item in files] != vals:
        named = [item["ids"] for item in files]
        return [f"{Path(folder) / RECORD_NAME}: val_bytes.files are beside {named}, not {vals}"]
    ids = (array for split, array in written_parts(folder, meta) if split == "val")
    problems = []
    for item, val_ids in zip(files, ids):
        path = Path(folder) / item["file"]
        if item["file"] != val_bytes_name(item["ids"]):
            problems.append(
                f"{path}: the sidecar of {item['ids']} is {val_bytes_name(item['ids'])}"
            )
            continue
        if sha256_file(path) != item["sha256"]:
            problems.append(f"{path} does not match the sha256 recorded in {RECORD_NAME}")
        shard = "shards" in meta and meta["format"]  # read as its ids file is: a shard, or raw
        shares = read_shard(path, shard, SHARE_DTYPE) if shard else read_ids(path, SHARE_DTYPE)
        if len(shares) != len(val_ids):
            problems.append(
                f"{path} holds {len(shares):,} shares, {item['ids']} {len(val_ids):,} ids: it "
                "must hold one a token"
            )
            continue
        expected = lengths[np.asarray(val_ids, dtype=np.int64)]
        if problem := first_difference(path, shares, expected, item["ids"]):
            problems.append(problem)
    return problems


def first_difference(path, found, expected, source, what="share"):
    """The line naming the first of a file's values (shares, or ids) that is not the one
    recomputed from `source`, or None: "val_bytes.bin: share 7 is 2, recomputed from val.bin: 3
    (1 of 9 differ)". `found` and `expected` are as long."""
    wrong = np.flatnonzero(np.asarray(found) != expected)
    if not len(wrong):
        return None
    at = int(wrong[0])
    return (
        f"{path}: {what} {at:,} is {int(found[at])}, recomputed from {source}: "
        f"{int(expected[at])} ({len(wrong):,} of {len(found):,} differ)"
    )


def sidecar_line(meta):
    """bpb's line naming the sidecars and what a trainer does with them."""
    names = [item["file"] for item in meta["val_bytes"]["files"]]
    shown = ", ".join(names[:2]) + (f" and {len(names) - 2:,} more" if len(names) > 2 else "")
    return (
        f"  val's bytes sidecar: {shown} (each token's share of the text's UTF-8 bytes: bits per "
        "byte divides the loss over an eval window by their sum over it)"
    )
