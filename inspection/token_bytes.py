"""token_bytes.npy, what bits per byte divides by: each id's UTF-8 byte length, 0 for a special
token (nanochat's token_bytes), and the bytes of text each split's ids stand for (meta.json's
"token_bytes"). verify recomputes both; show and packing print bytes per token from them.
"""

from pathlib import Path

import numpy as np

from formats.shards import read_shard
from formats.tokenizers import record_byte_lengths, text_bytes
from safety.files import sha256_file
from safety.record import TOKEN_BYTES


def audit_token_bytes(folder, meta):
    """token_bytes.npy against the tokenizer rebuilt, and each split's bytes recomputed; a folder
    written before it was recorded has none, which is no problem."""
    record = meta.get("token_bytes")
    if record is None or meta.get("format") == "nanochat":  # nanochat's: inspection/nanochat.py
        return []
    path = Path(folder) / TOKEN_BYTES
    if not isinstance(record, dict) or record.get("file") != TOKEN_BYTES or not path.is_file():
        return [f"{path} is missing, or meta.json's token_bytes does not name it"]
    if sha256_file(path) != record.get("sha256"):
        return [f"{path} does not match the sha256 recorded in meta.json"]
    tokenizer = dict(meta["tokenizer"])
    if tokenizer["kind"] == "bpe":  # its file, relative to the folder once committed
        tokenizer["path"] = str(Path(folder) / tokenizer["path"])
    try:
        lengths = np.load(path)
    except (ValueError, EOFError) as exc:  # not a .npy file, or one of pickled objects
        return [f"{path} is not a .npy file numpy can read ({exc})"]
    if not np.array_equal(lengths, record_byte_lengths(tokenizer)):
        return [f"{path} is not each id's UTF-8 byte length (0 for a special token)"]
    found = split_bytes(folder, meta, lengths)
    if found != record.get("bytes"):
        return [f"{Path(folder) / 'meta.json'}: token_bytes.bytes is {record.get('bytes')}, the ids stand for {found}"]  # fmt: skip
    return []


def split_bytes(folder, meta, lengths):
    """The bytes of text each split's ids stand for: {"train": 1003854, "val": 111540}."""
    dtype, totals = np.dtype(meta["dtype"]), {}
    for name, split in meta["splits"].items():
        if "shards" in meta:
            shards = [s for s in meta["shards"] if s["split"] == name]
            arrays = [read_shard(Path(folder) / s["file"], meta["format"], dtype) for s in shards]
        else:
            path = Path(folder) / split["file"]
            arrays = [np.memmap(path, dtype, "r")] if path.stat().st_size else []
        totals[name] = sum(text_bytes(ids, lengths) for ids in arrays)
    return totals


def bytes_per_token_lines(meta, split):
    """[the line of a split's bytes per token], "val: 111,540 bytes of text in 111,540 tokens:
    1.00 bytes per token", or [] for a folder written before token_bytes, which has none."""
    record = meta.get("token_bytes")
    if not isinstance(record, dict) or split not in record.get("bytes", {}):
        return []
    size, tokens = record["bytes"][split], meta["splits"][split]["tokens"]
    return [f"{split}: {size:,} bytes of text in {tokens:,} tokens: {size / max(tokens, 1):.2f} bytes per token"]  # fmt: skip
