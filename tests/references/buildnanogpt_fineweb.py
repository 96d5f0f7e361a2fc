"""build-nanogpt's fineweb.py, as the reference for tests (not product code).

Written in our own words from the source (karpathy/build-nanogpt: fineweb.py, and
train_gpt2.py's `load_tokens`), single process. The token stream and the shard rule are llm.c's
(see tests/references/llmc_fineweb.py: end of text first, `count + len(doc) < shard_size` appends,
otherwise top up, save, and start the next shard with the rest; the last partial shard only if
non-empty; and the same two places where the script crashes); what differs:

- FineWeb-Edu sample-10BT only, GPT-2 only, uint16 only; shard_size = int(1e8);
- each shard is saved with `np.save(DIR/"edufineweb_{split}_{index:06d}", tokens)`: numpy's .npy
  format (np.save adds the `.npy`), no llm.c header; the full shards are the whole uint16
  buffer, the last one its filled part. Shard 0 is `val`.
- the trainer finds its shards with `split in name` over the sorted folder listing and loads
  them with np.load(...).astype(np.int32).

    write_npy_shards(documents, encoding, out_dir, shard_size=10**8) -> [Path, ...]
"""

from pathlib import Path

import numpy as np
from llmc_fineweb import ReferenceCrash, document_tokens


def write_npy_shards(documents, encoding, out_dir, shard_size=10**8):
    """Write the shards build-nanogpt's fineweb.py writes from `documents`; return their paths."""
    out_dir = Path(out_dir)
    buffer = np.empty(shard_size, dtype=np.uint16)
    count, index, paths = 0, 0, []
    bar_open = False

    def save(tokens):
        split = "val" if index == 0 else "train"
        np.save(out_dir / f"edufineweb_{split}_{index:06d}", tokens)
        paths.append(out_dir / f"edufineweb_{split}_{index:06d}.npy")

    for text in documents:
        tokens = document_tokens(text, encoding, "gpt-2")
        if count + len(tokens) < shard_size:
            buffer[count : count + len(tokens)] = tokens
            count += len(tokens)
            bar_open = True
            continue
        if not bar_open:
            raise ReferenceCrash("build-nanogpt: 'NoneType' object has no attribute 'update'")
        room = shard_size - count
        buffer[count:] = tokens[:room]
        save(buffer)
        index += 1
        bar_open = False
        rest = tokens[room:]
        if len(rest) > shard_size:
            raise ReferenceCrash("build-nanogpt: could not broadcast the rest of a document")
        buffer[: len(rest)] = rest
        count = len(rest)
    if count != 0:
        save(buffer[:count])
    return paths


def load_tokens(path):
    """build-nanogpt train_gpt2.py's `load_tokens`, without torch: the ids as int32."""
    return np.load(path).astype(np.int32)
