"""The safety machinery under every lesson: what keeps a run safe, not what it teaches.

    from safety import ArgumentParser, PrepareError, RemoteFile, fetch, output_folder, run_main

It imports nothing of the project, and importing a module runs nothing but definitions.
"""

from .cli import (
    ArgumentParser,
    default_num_proc,
    fraction,
    non_negative_int,
    positive_int,
    random_seed,
    run_main,
    tokens_per_shard,
)
from .commit import folder_outputs, output_folder
from .downloads import RemoteFile, fetch
from .errors import PrepareError
from .text import read_text

__all__ = [
    "ArgumentParser",
    "PrepareError",
    "RemoteFile",
    "default_num_proc",
    "fetch",
    "fraction",
    "non_negative_int",
    "folder_outputs",
    "output_folder",
    "positive_int",
    "random_seed",
    "read_text",
    "run_main",
    "tokens_per_shard",
]
