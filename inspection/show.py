"""`show`: one block of a prepared folder as nanoGPT's get_batch reads it, x and y side by side,
each document start marked."""

import os
import sys
from pathlib import Path

import numpy as np

from formats.shards import open_npy
from formats.tokenizers import record_encoding
from safety.errors import PrepareError

from .folder import open_split
from .token_bytes import bytes_per_token_lines


def random_offset(num_tokens, block_size, seed):
    """The offset get_batch would draw (torch.randint(len(data) - block_size)), with numpy."""
    return int(np.random.default_rng(seed).integers(max(num_tokens - block_size, 1)))


def block_lines(folder, split="train", block_size=8, offset=0):
    """One block as printed lines: x and y side by side, each token with its id and text.

    The lecture's "ABBA" (ten times) prepared by shakespeare_char, block_size 3 ->
        train: 36 tokens; at position t the model has read x[0..t] and must predict y[t]
        x = data[0:3] = [0, 1, 1]
        y = data[1:4] = [1, 1, 0]
            t  x[t]   y[t]
            0  0 'A'  1 'B'
            1  1 'B'  1 'B'
            2  1 'B'  0 'A'
    """
    meta, data = open_split(folder, split)
    if block_size >= len(data):
        raise PrepareError(
            f"--block-size {block_size:,} is too large: {split} holds {len(data):,} tokens, and a "
            f"block and its target need block_size + 1"
        )
    if not 0 <= offset < len(data) - block_size:
        raise PrepareError(
            f"{split} holds {len(data):,} tokens: a block of {block_size} and its target need "
            f"an offset from 0 to {len(data) - block_size - 1:,}, not {offset:,}"
        )
    x = data[offset : offset + block_size].tolist()
    y = data[offset + 1 : offset + 1 + block_size].tolist()
    largest = max(x + y)
    if largest >= meta["tokenizer"]["vocab_size"]:
        raise PrepareError(f"{folder}: token id {largest:,} is not in the vocabulary; run verify")
    from bpe.show import token_text

    tokenizer, digits = meta["tokenizer"], len(str(largest))
    if tokenizer["kind"] == "char":
        token_bytes = [c.encode("utf-8") for c in tokenizer["chars"]].__getitem__
    else:
        token_bytes = record_encoding(tokenizer, folder).decode_single_token_bytes

    def cell(token_id):
        return f"{token_id:>{digits}} '{token_text(token_bytes(token_id))}'"

    cells = [(cell(a), cell(b)) for a, b in zip(x, y)]
    width = max(len("x[t]"), *(len(a) for a, _ in cells))
    end = offset + block_size
    lines = [
        f"{split}: {len(data):,} tokens; at position t the model has read x[0..t] and must "
        f"predict y[t]",
        f"x = data[{offset}:{end}] = {x}",
        f"y = data[{offset + 1}:{end + 1}] = {y}",
        f"{'t':>5}  {'x[t]':<{width}}  y[t]",
    ]
    record = meta["splits"].get(split) if "shards" not in meta else None
    starts = set()  # of documents in the block, from the split's index if it has one
    if isinstance(record, dict) and "index" in record:
        index = open_npy(Path(folder) / record["index"]["file"])
        starts = {int(i) for i in index[slice(*np.searchsorted(index, [offset, end]))]}
    colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    for t, (a, b) in enumerate(cells):
        row = f"{t:>5}  {a:<{width}}  {b}"
        if offset + t in starts:  # bold cyan on a terminal
            row = f"\033[1;36m{row}\033[0m" if colour else row + "  <- a document starts"
        lines.append(row)
    if starts:
        lines.append(
            "a document starts at the marked x[t]: the EOT before it ends the one before, and "
            "the model reads across it"
        )
    return lines


def show(folder, meta, split="train", block_size=8, offset=0, seed=None):
    """Print one block of a verified folder's split at `offset`, or get_batch's for `seed`."""
    if seed is not None:
        _, data = open_split(folder, split, meta)
        offset = random_offset(len(data), block_size, seed)
    lines = block_lines(folder, split, block_size, offset) + bytes_per_token_lines(meta, split)
    print(*lines, sep="\n")
