"""The files of a prepared folder that trainers read, their names and headers, and their readers.

nanoGPT's: train.bin and val.bin (raw ids), meta.pkl; ours: meta.json, the commit record.
llm.c's shards: a header of 256 little-endian int32 ([magic, version, number of tokens, 0, ...]),
then the ids; build-nanogpt's: the ids saved by np.save (see prepare_common's section on shards).
"""

import fnmatch
from pathlib import Path

import numpy as np

from .errors import PrepareError
from .files import sha256_file

META_FORMAT_VERSION = 1
META_PKL = "meta.pkl"  # nanoGPT's train.py and sample.py pickle.load it whenever it exists
SPLIT_NAMES = ("train", "val")  # nanoGPT reads both; a folder without either is not usable
BIN_DTYPES = ("uint16", "uint32")
LLMC_HEADER_INTS = 256


LLMC_MAGIC_VERSION = {np.dtype(np.uint16): (20240520, 1), np.dtype(np.uint32): (20240801, 7)}


SHARD_FORMATS = {"llmc": ".bin", "npy": ".npy"}


def read_shard(path, shard_format, dtype):
    """A shard's tokens (memory-mapped), after the readers' checks; a PrepareError if one fails."""
    path = Path(path)
    if shard_format == "npy":
        try:
            tokens = np.load(path, mmap_mode="r")
        except (ValueError, EOFError) as exc:
            raise PrepareError(f"{path} is not a .npy file numpy can read ({exc})") from None
        if tokens.dtype != dtype or tokens.ndim != 1:
            raise PrepareError(
                f"{path} holds {tokens.dtype} of shape {tokens.shape}, not {dtype} ids"
            )
        return tokens
    size = path.stat().st_size
    if size < LLMC_HEADER_INTS * 4:
        raise PrepareError(f"{path} has {size:,} bytes: shorter than llm.c's 1,024-byte header")
    header = np.fromfile(path, dtype="<i4", count=LLMC_HEADER_INTS)
    magic, version = LLMC_MAGIC_VERSION[dtype]
    if (int(header[0]), int(header[1])) != (magic, version):
        raise PrepareError(
            f"{path} starts with magic {header[0]}, version {header[1]}; llm.c's {dtype.name} "
            f"shards start with {magic}, {version}"
        )
    if header[2] <= 0:
        raise PrepareError(f"{path}: its header says {header[2]:,} tokens (llm.c needs at least 1)")
    expected = LLMC_HEADER_INTS * 4 + int(header[2]) * dtype.itemsize
    if size != expected:
        raise PrepareError(
            f"{path} has {size:,} bytes; its header says {header[2]:,} tokens: {expected:,} bytes"
        )
    return np.memmap(path, dtype=dtype.newbyteorder("<"), mode="r", offset=LLMC_HEADER_INTS * 4)


def splits_record(out, split_tokens, shards):
    """meta.json's "splits": each .bin file's tokens and sha256 (and its document index, if one
    was written beside it), or each split's shard totals. A shard set without a train shard is
    refused: llm.c and modded-nanogpt would have nothing to train on.

    {"train": 9, "val": 1} -> {"train": {"file": "train.bin", "tokens": 9, "sha256": ...}, ...}
    """
    splits = {}
    for name, count in (split_tokens or {}).items() if shards is None else ():
        sha256 = sha256_file(out / f"{name}.bin")
        splits[name] = {"file": f"{name}.bin", "tokens": count, "sha256": sha256}
        index = out / f"{name}.docs.npy"
        if index.is_file():
            documents = len(np.load(index, mmap_mode="r"))
            splits[name]["index"] = {"file": index.name, "documents": documents, "sha256": sha256_file(index)}  # fmt: skip
    if shards is not None and all(shard["split"] != "train" for shard in shards):
        tokens = sum(shard["tokens"] for shard in shards)
        raise PrepareError(
            f"all {tokens:,} tokens fit in shard 0, which is val, so the shard set has no train "
            f"shard for llm.c or modded-nanogpt to read; choose a --shard-size below {tokens:,}"
        )
    for shard in shards or ():
        totals = splits.setdefault(shard["split"], {"tokens": 0, "shards": 0})
        totals["tokens"] += shard["tokens"]
        totals["shards"] += 1
    return splits


def text_source(input_path, out_dir, characters, url=None):
    """meta.json's "source" for one text file: its path (relative when it sits in `out_dir`, so
    the folder can move), sha256, size, and origin (`url`, None for a local --input)."""
    input_path = Path(input_path).resolve()
    inside = input_path.parent == Path(out_dir).resolve()
    return {
        "path": input_path.name if inside else str(input_path),
        "sha256": sha256_file(input_path),
        "characters": characters,
        "url": url,
    }


RECORD_NAME = "meta.json"


def listed_files(meta):
    """The file names a meta.json lists as the folder's own (itself included): what a commit may
    replace or remove, and all `verify` accepts that a trainer would read. Only names of the
    form each field has are taken ("train.bin", a shard of its format's suffix...), so a record
    that names "prepare.py" as a shard gives it no hold on that file.

    {"splits": {"train": {"file": "train.bin", ...}, ...}, "meta_pkl": null, ...}
    -> {"meta.json", "train.bin", "val.bin"}
    """
    names = {RECORD_NAME}
    if not isinstance(meta, dict):
        return names
    splits = meta.get("splits") if isinstance(meta.get("splits"), dict) else {}
    for split, record in splits.items():
        record = record if isinstance(record, dict) else {}
        index = record.get("index") if isinstance(record.get("index"), dict) else {}
        names |= {record.get("file")} & {f"{split}.bin"}
        names |= {index.get("file")} & {f"{split}.docs.npy"}
    suffix = SHARD_FORMATS.get(meta.get("format"))
    shards = meta.get("shards") if isinstance(meta.get("shards"), list) else []
    for shard in shards if suffix else ():
        name = shard.get("file") if isinstance(shard, dict) else None
        if is_plain_name(name) and name.endswith(suffix) and not name.startswith("."):
            names.add(name)
    if isinstance(meta.get("meta_pkl"), dict) and meta["meta_pkl"].get("file") == META_PKL:
        names.add(META_PKL)
    tokenizer = meta.get("tokenizer") if isinstance(meta.get("tokenizer"), dict) else {}
    path = tokenizer.get("path")
    if is_plain_name(path) and path.endswith(".json") and path != RECORD_NAME:
        names.add(path)  # a tokenizer the run trained and wrote into the folder
    return names


def is_plain_name(value):
    """A file name inside the folder: "train.bin" yes; "", ".", "..", "a/b", "/etc" no."""
    return (
        isinstance(value, str)
        and value not in ("", ".", "..")
        and "/" not in value
        and "\\" not in value
        and "\0" not in value
    )


def trainer_reads(name, shard_format=None):
    """Whether a trainer pointed at the folder would read a file of this name: nanoGPT's
    train.bin, val.bin and meta.pkl; llm.c's and modded-nanogpt's `*_train_*.bin` and
    `*_val_*.bin` globs; build-nanogpt's any name holding "train" or "val" (its listdir filter),
    in a folder of .npy shards. "edu_fineweb_train_000002 (1).bin" -> True."""
    if name in ("train.bin", "val.bin", META_PKL):
        return True
    globs = ("*_train_*.bin", "*_val_*.bin")  # C's and Python's globs pass hidden names over
    if not name.startswith(".") and any(fnmatch.fnmatchcase(name, glob) for glob in globs):
        return True
    return shard_format == "npy" and ("train" in name or "val" in name)
