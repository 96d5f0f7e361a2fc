"""modded-nanogpt's shard reader, as the reference for tests (not product code).

Our own words, with numpy in place of torch, for KellerJordan/modded-nanogpt train_gpt.py's
`_load_data_shard(file)`: it reads the 256-int32 header, asserts header[0] == 20240520 ("magic
number mismatch in the data .bin file") and header[1] == 1 ("unsupported version"), allocates
header[2] uint16 tokens, seeks to byte 1024 and reads into them, and asserts that it read exactly
2 * header[2] bytes ("number of tokens read does not match header"). Its readinto stops at the
buffer's end, so bytes past header[2] tokens would go unnoticed by it: `load_data_shard` here
also requires that the file ends there (as llm.c's dataloader.h does), so a test using it checks
both readers. The trainer globs `data/fineweb10B/fineweb_train_*.bin` and
`fineweb_val_*.bin` (classic FineWeb names; the shards its `cached_fineweb10B.py` downloads
from kjj0/fineweb10B-gpt2).
"""

from pathlib import Path

import numpy as np


def load_data_shard(path):
    """The shard's tokens (uint16), after modded-nanogpt's checks and an exact-size check."""
    with Path(path).open("rb", buffering=0) as f:
        header = np.frombuffer(f.read(256 * 4), dtype=np.int32)
        assert header[0] == 20240520, "magic number mismatch in the data .bin file"
        assert header[1] == 1, "unsupported version"
        num_tokens = int(header[2])
        tokens = np.empty(num_tokens, dtype=np.uint16)
        nbytes = f.readinto(tokens)
        assert nbytes == 2 * num_tokens, "number of tokens read does not match header"
        assert f.read(1) == b"", "bytes after header[2] tokens"
    return tokens
