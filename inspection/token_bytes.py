"""The token_bytes file (each id's UTF-8 byte length, 0 for a special token) and the bytes of
text each split's ids stand for, what bits per byte divides by."""

from pathlib import Path

import numpy as np

from formats.schema import RECORD_NAME, TOKEN_BYTES
from formats.shards import open_npy, read_ids, read_shard
from formats.tokenizers import record_byte_lengths, text_bytes
from safety.errors import PrepareError
from safety.files import sha256_file


def audit_token_bytes(folder, meta):
    """TOKEN_BYTES against the tokenizer's lengths, and each split's bytes recomputed from its ids
    (a folder written before it was recorded has none)."""
    record = meta.get("token_bytes")  # a nanoGPT folder's (nanochat's: inspection/nanochat.py)
    if record is None:
        return []
    path = Path(folder) / TOKEN_BYTES
    if sha256_file(path) != record["sha256"]:
        return [f"{path} does not match the sha256 recorded in {RECORD_NAME}"]
    try:
        lengths = open_npy(path)
    except PrepareError as exc:
        return [str(exc)]
    expected = record_byte_lengths(meta["tokenizer"], folder)
    if lengths.dtype != expected.dtype or not np.array_equal(lengths, expected):
        return [
            f"{path} holds {lengths.dtype} of shape {lengths.shape}: not each id's UTF-8 byte "
            f"length as {expected.shape[0]:,} int32 (0 for a special token)"
        ]
    dtype, found = np.dtype(meta["dtype"]), {}
    for name, split in meta["splits"].items():
        if "shards" in meta:  # a shard at a time: shards may outnumber the files one may open
            shards = [s for s in meta["shards"] if s["split"] == name]
            arrays = (read_shard(Path(folder) / s["file"], meta["format"], dtype) for s in shards)
        else:
            arrays = [read_ids(Path(folder) / split["file"], dtype)]
        found[name] = sum(text_bytes(ids, expected) for ids in arrays)
    if found != record["bytes"]:
        return [
            f"{Path(folder) / RECORD_NAME}: token_bytes.bytes is {record['bytes']}, the ids "
            f"stand for {found}"
        ]
    return []


def bytes_per_token(meta, split):
    """{"bytes": 111540, "bytes_per_token": 1.0} of a split, or {} for a folder without them."""
    record = meta.get("token_bytes")
    if not isinstance(record, dict) or split not in record.get("bytes", {}):
        return {}
    size, tokens = record["bytes"][split], meta["splits"][split]["tokens"]
    return {"bytes": size, "bytes_per_token": size / max(tokens, 1)}


def bytes_per_token_lines(meta, split):
    """["val: 111,540 bytes of text in 111,540 tokens: 1.00 bytes per token"], or []."""
    if not (figures := bytes_per_token(meta, split)):
        return []
    size, tokens = figures["bytes"], meta["splits"][split]["tokens"]
    per = figures["bytes_per_token"]
    return [f"{split}: {size:,} bytes of text in {tokens:,} tokens: {per:.2f} bytes per token"]
