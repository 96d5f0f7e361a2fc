"""Token ids and the .bin files nanoGPT reads: raw ids, one dtype, no header.

- dtype_for_vocab(vocab_size): uint16 up to 65,536 ids (nanoGPT's), uint32 beyond (with a warning)
- check_ids(ids, vocab_size, dtype): refuse ids a cast would corrupt
  (`np.array([65536]).astype(np.uint16)` is 0, silently)
- write_bin(path, id_batches, dtype, vocab_size): stream id arrays into a .bin file, atomically
"""

import sys
from pathlib import Path

import numpy as np

from prep.errors import PrepareError
from prep.files import atomic_path


def dtype_for_vocab(vocab_size):
    """The smallest dtype nanoGPT can read for ids 0..vocab_size-1: uint16 up to 65,536 ids.

    65 -> uint16; 50,257 -> uint16; 65,536 -> uint16; 65,537 -> uint32 (with a warning).
    """
    if vocab_size <= 2**16:
        return np.dtype(np.uint16)
    if vocab_size <= 2**32:
        print(
            f"warning: vocab_size {vocab_size:,} does not fit uint16, so the .bin files are uint32; "
            f"stock nanoGPT train.py reads uint16: change np.uint16 to np.uint32 in its get_batch",
            file=sys.stderr,
        )
        return np.dtype(np.uint32)
    raise PrepareError(f"vocab_size {vocab_size:,} is too large for uint32 token ids")


def check_ids(ids, vocab_size, dtype, where="ids"):
    """Refuse ids that are negative, >= vocab_size or beyond `dtype`, before any cast wraps them.

    [3, 70] with vocab_size 65 -> error "ids: token id 70 at position 1 is >= vocab_size 65"
    """
    ids = np.asarray(ids)
    if ids.size == 0:
        return
    if ids.dtype.kind not in "iu":
        raise PrepareError(f"{where}: token ids must be integers, got dtype {ids.dtype}")
    limit = min(vocab_size, int(np.iinfo(dtype).max) + 1)
    lowest, highest = int(ids.min()), int(ids.max())
    if lowest < 0 or highest >= limit:
        bad_index = int(np.argmax((ids < 0) | (ids >= limit)))  # the first bad one
        bad_id = int(ids.flat[bad_index])
        if bad_id < 0:
            reason = "negative"
        elif bad_id >= vocab_size:
            reason = f">= vocab_size {vocab_size:,}"
        else:
            reason = f"beyond {np.dtype(dtype).name}"
        raise PrepareError(f"{where}: token id {bad_id:,} at position {bad_index:,} is {reason}")


def write_bin(path, id_batches, dtype, vocab_size, expected_tokens=None, desc=None):
    """Stream an iterable of id arrays into `path` as raw `dtype` values; return the token count.

    [[0, 1, 2], [64, 63]] -> a 10-byte file of uint16 0 1 2 64 63. Memory stays at one batch;
    an empty split gives an empty file. Every batch is checked with `check_ids` before it is
    cast; the file appears under its name only when complete and its size checked. `desc`
    shows a progress bar with that title.
    """
    path = Path(path)
    dtype = np.dtype(dtype)
    bar = None
    if desc is not None:
        from tqdm import tqdm

        bar = tqdm(total=expected_tokens, unit="tok", unit_scale=True, desc=desc)
    written = 0  # a Python int: no 32-bit overflow on huge splits
    try:
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as f:
                for batch in id_batches:
                    batch = np.asarray(batch)
                    check_ids(batch, vocab_size, dtype, where=path.name)
                    f.write(np.ascontiguousarray(batch, dtype=dtype))  # tofile's errors lack errno
                    written += batch.size
                    if bar is not None:
                        bar.update(batch.size)
            if expected_tokens is not None and written != expected_tokens:
                raise PrepareError(
                    f"{path}: wrote {written:,} tokens, expected {expected_tokens:,}"
                )
            if tmp.stat().st_size != written * dtype.itemsize:
                raise PrepareError(
                    f"{path}: file size does not match {written:,} {dtype.name} tokens"
                )
    finally:
        if bar is not None:
            bar.close()
    return written
