"""The token files a prepared folder holds, as trainers read them: their dtypes and headers.

nanoGPT's train.bin and val.bin: raw ids, no header. llm.c's shards: a header of 256
little-endian int32 ([magic, version, number of tokens, 0, ...]), then the ids; build-nanogpt's:
the ids saved by np.save. prepare_common.py writes them (its section on shards); `read_shard`
reads one back with every check a trainer's reader makes.
"""

from pathlib import Path

import numpy as np

from safety import PrepareError

META_FORMAT_VERSION = 1
SPLIT_NAMES = ("train", "val")  # nanoGPT reads both; a folder without either is not usable
BIN_DTYPES = ("uint16", "uint32")
LLMC_HEADER_INTS = 256
# (magic, version) of an llm.c shard by its dtype: uint16 GPT-2 ids, uint32 for llama-3's
LLMC_MAGIC_VERSION = {np.dtype(np.uint16): (20240520, 1), np.dtype(np.uint32): (20240801, 7)}


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
