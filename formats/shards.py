"""The token files a prepared folder holds, as trainers read them: their dtypes and headers.

nanoGPT's train.bin and val.bin: raw ids, no header. llm.c's shards: a header of 256
little-endian int32 ([magic, version, number of tokens, 0, ...]), then the ids; build-nanogpt's:
the ids saved by np.save. prepare_common.py writes them (its section on shards), each id first
checked to fit the file (`check_ids`); `read_shard` reads one back with every check a
trainer's reader makes, and `document_batch` draws nanoGPT's rows from a split's document starts.
"""

import math
import os
from pathlib import Path

import numpy as np

from safety import PrepareError
from safety.files import atomic_path, open_regular, sha256_file
from safety.text import shortened

from .schema import bin_name, index_name

LLMC_HEADER_INTS = 256
# (magic, version) of an llm.c shard by its dtype: uint16 GPT-2 ids, uint32 for llama-3's
LLMC_MAGIC_VERSION = {np.dtype(np.uint16): (20240520, 1), np.dtype(np.uint32): (20240801, 7)}


def llmc_header(num_tokens, dtype):
    """The 256 int32 that start an llm.c shard: 1,000 uint16 tokens -> [20240520, 1, 1000, 0,
    ...]."""
    if not 0 <= num_tokens < 2**31:
        raise PrepareError(f"an llm.c shard holds fewer than 2**31 tokens, not {num_tokens:,}")
    header = np.zeros(LLMC_HEADER_INTS, dtype="<i4")
    header[0], header[1] = LLMC_MAGIC_VERSION[np.dtype(dtype)]
    header[2] = num_tokens
    return header


def open_npy(path):
    """A .npy file's array, memory-mapped, once its header is checked against the file's size:
    a header that claims 2**62 uint64 in a 136-byte file is a PrepareError saying so, where
    np.load would warn of an overflow (two lines of RuntimeWarning) and then fail."""
    path = Path(path)
    with open_regular(path) as f:
        try:
            version = np.lib.format.read_magic(f)
            if version not in ((1, 0), (2, 0)):
                raise ValueError(f"format version {version}, not the 1.0 or 2.0 np.save writes")
            read = {(1, 0): np.lib.format.read_array_header_1_0}.get(
                version, np.lib.format.read_array_header_2_0
            )
            shape, fortran, dtype = read(f)
        except (ValueError, EOFError) as exc:
            raise PrepareError(f"{path} is not a .npy file numpy can read ({exc})") from None
        offset, size = f.tell(), os.fstat(f.fileno()).st_size
        expected = offset + math.prod(shape) * dtype.itemsize  # Python ints: no overflow
        if dtype.hasobject or size != expected:
            raise PrepareError(
                f"{path} is not a .npy file numpy can read (its header says {dtype} of shape "
                f"{shortened(str(tuple(shape)))}: {expected:,} bytes, but the file has {size:,})"
            )
        if size == offset:  # no bytes to map
            return np.empty(shape, dtype)
        order = "F" if fortran else "C"
        return np.memmap(f, dtype=dtype, mode="r", offset=offset, shape=shape, order=order)


def read_ids(path, dtype):
    """A .bin file of raw ids (nanoGPT's), memory-mapped as get_batch maps it (empty: none)."""
    with open_regular(path) as f:
        size, width = os.fstat(f.fileno()).st_size, np.dtype(dtype).itemsize
        if size % width:  # cut or grown by a byte: no id can be read from its end
            raise PrepareError(
                f"{path} has {size:,} bytes, not a whole number of {np.dtype(dtype).name} values "
                f"({width} bytes each): it is damaged; run its prepare.py again"
            )
        if size == 0:
            return np.empty(0, dtype)
        return np.memmap(f, dtype=dtype, mode="r")


def read_shard(path, shard_format, dtype):
    """A shard's tokens (memory-mapped), after the readers' checks; a PrepareError if one fails."""
    path, dtype = Path(path), np.dtype(dtype)
    if shard_format == "npy":
        tokens = open_npy(path)
        if tokens.dtype != dtype or tokens.ndim != 1:
            raise PrepareError(
                f"{path} holds {tokens.dtype} of shape {tokens.shape}, not {dtype} ids"
            )
        return tokens
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size < LLMC_HEADER_INTS * 4:
            raise PrepareError(f"{path} has {size:,} bytes: shorter than llm.c's 1,024-byte header")
        header = np.frombuffer(f.read(LLMC_HEADER_INTS * 4), dtype="<i4")
        magic, version = LLMC_MAGIC_VERSION[dtype]
        if (int(header[0]), int(header[1])) != (magic, version):
            raise PrepareError(
                f"{path} starts with magic {header[0]}, version {header[1]}; llm.c's "
                f"{dtype.name} shards start with {magic}, {version}"
            )
        if header[2] <= 0:
            raise PrepareError(
                f"{path}: its header says {header[2]:,} tokens (llm.c needs at least 1)"
            )
        expected = LLMC_HEADER_INTS * 4 + int(header[2]) * dtype.itemsize
        if size != expected:
            raise PrepareError(
                f"{path} has {size:,} bytes; its header says {header[2]:,} tokens: "
                f"{expected:,} bytes"
            )
        little = dtype.newbyteorder("<")
        return np.memmap(f, dtype=little, mode="r", offset=LLMC_HEADER_INTS * 4)


def check_ids(ids, vocab_size, dtype, where="ids"):
    """Refuse ids that are negative, >= vocab_size or beyond `dtype`, before any cast wraps them:
    [3, 70] with vocab_size 65 -> error "ids: token id 70 at position 1 is >= vocab_size 65"."""
    ids = np.asarray(ids)
    if ids.size == 0:
        return
    if ids.dtype.kind not in "iu":
        raise PrepareError(f"{where}: token ids must be integers, got dtype {ids.dtype}")
    limit = min(vocab_size, int(np.iinfo(dtype).max) + 1)
    if int(ids.min()) < 0 or int(ids.max()) >= limit:
        bad_index = int(np.argmax((ids < 0) | (ids >= limit)))  # the first bad one
        bad_id = int(ids.flat[bad_index])
        if bad_id < 0:
            reason = "negative"
        elif bad_id >= vocab_size:
            reason = f">= vocab_size {vocab_size:,}"
        else:
            reason = f"beyond {np.dtype(dtype).name}"
        raise PrepareError(f"{where}: token id {bad_id:,} at position {bad_index:,} is {reason}")


def write_shard(path, tokens, shard_format):
    """One shard file, atomically: llm.c's header and the tokens, or np.save's .npy."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        if shard_format == "llmc":
            f.write(llmc_header(len(tokens), tokens.dtype).tobytes())
            f.write(tokens.astype(tokens.dtype.newbyteorder("<"), copy=False).tobytes())
        else:
            write_npy(f, tokens)  # what build-nanogpt's np.save(filename, tokens) writes


def write_npy(file, array):
    """np.save(file, array) for the 1-D arrays we write (the same bytes: numpy's version 1.0
    header, then the array's), written through file.write: np.save writes with tofile, whose
    error on a full disk ("20000 requested and 3056 written") has no errno to say why."""
    array = np.ascontiguousarray(array)
    np.lib.format.write_array_header_1_0(file, np.lib.format.header_data_from_array_1_0(array))
    file.write(memoryview(array).cast("B"))


def val_documents(lengths, shard_size):
    """How many documents of an llm.c stream (each its end-of-text, then its ids; `lengths`
    counting both, in order) are val: a document is in the shard its end-of-text is in, and
    shard 0 is val. Lengths [3, 3, 3], shard size 4 -> 2 (the second starts at token 3)."""
    starts = np.cumsum(lengths) - np.asarray(lengths)
    return int(np.searchsorted(starts, shard_size, side="left"))


def check_train_shard(tokens, shard_size):
    """Refuse a stream of `tokens` that shard 0, val, holds whole (shard_size None: it does)."""
    if shard_size is None or tokens <= shard_size:
        advice = f"choose a --shard-size below {tokens:,}"
        if tokens < 2:  # no shard size leaves a token for train
            advice = "the corpus (after --dedup, if given) needs more text than that"
        raise PrepareError(
            f"shard 0, which is val, holds every token ({tokens:,}), so the shard set has no "
            f"train shard for llm.c or modded-nanogpt to read; {advice}"
        )


def splits_record(out, split_tokens, shards):
    """meta.json's "splits": each .bin file's tokens and sha256 (and its document index, if one
    was written beside it), or each split's shard totals. A shard set without a train shard is
    refused: llm.c and modded-nanogpt would have nothing to train on.

    {"train": 9, "val": 1} -> {"train": {"file": "train.bin", "tokens": 9, "sha256": ...}, ...}
    """
    splits = {}
    for name, count in (split_tokens or {}).items() if shards is None else ():
        sha256 = sha256_file(out / bin_name(name))
        splits[name] = {"file": bin_name(name), "tokens": count, "sha256": sha256}
        index = out / index_name(name)
        if index.is_file():
            documents = len(open_npy(index))
            record = {"file": index.name, "documents": documents, "sha256": sha256_file(index)}
            splits[name]["index"] = record
    if shards is not None and all(shard["split"] != "train" for shard in shards):
        check_train_shard(sum(shard["tokens"] for shard in shards), shard_size=None)
    for shard in shards or ():
        totals = splits.setdefault(shard["split"], {"tokens": 0, "shards": 0})
        totals["tokens"] += shard["tokens"]
        totals["shards"] += 1
    return splits


def document_batch(data, starts, batch_size, block_size, rng):
    """nanoGPT's get_batch with every row beginning at a document start drawn by `rng` (a numpy
    Generator): (x, y), int64 arrays of (batch_size, block_size). A row reads block_size + 1
    tokens of the stream, on into the next document where its own is shorter; y is x one token
    on. Starts with fewer than block_size + 1 tokens left are never drawn (docs/bos_batches.md).
    ([5, 6, 0, 7, 0, 8, 9, 0], [0, 3, 5], 2, 2, default_rng(0))
    -> x [[8, 9], [7, 0]], y [[9, 0], [0, 8]]
    """
    last = np.searchsorted(starts, len(data) - block_size)  # starts[:last] have T + 1 tokens left
    if last == 0:
        raise PrepareError(
            f"no document start has block_size + 1 = {block_size + 1:,} tokens after it in a "
            f"split of {len(data):,}"
        )
    ix = starts[rng.integers(last, size=batch_size)].astype(np.int64)
    rows = np.stack([data[i : i + block_size + 1] for i in ix]).astype(np.int64)
    return np.ascontiguousarray(rows[:, :-1]), np.ascontiguousarray(rows[:, 1:])
