"""Batches whose rows begin at document starts: nanoGPT's get_batch, aligned to documents."""

import numpy as np

from hardening.packing import PackingError


def document_batch(data, starts, batch_size, block_size, rng):
    """(x, y), int64 arrays of (batch_size, block_size): each row of x begins at a random document start.

    As get_batch, a row reads block_size + 1 tokens of the stream (y is x one token on), running
    into the next document where its own is shorter. Only the document starts with block_size + 1
    tokens left can begin a row; the others, at the end of the split, are never drawn.
    ([5, 6, 0, 7, 0, 8, 9, 0], [0, 3, 5], 2, 2, default_rng(0)) -> x [[8, 9], [7, 0]], y [[9, 0], [0, 8]]
    """
    last = np.searchsorted(starts, len(data) - block_size)  # starts[:last] have T + 1 tokens left
    if last == 0:
        raise PackingError(
            f"no document start has block_size + 1 = {block_size + 1:,} tokens after it "
            f"in a split of {len(data):,} tokens"
        )
    ix = starts[rng.integers(last, size=batch_size)].astype(np.int64)
    rows = np.stack([data[i : i + block_size + 1] for i in ix]).astype(np.int64)
    return np.ascontiguousarray(rows[:, :-1]), np.ascontiguousarray(rows[:, 1:])
