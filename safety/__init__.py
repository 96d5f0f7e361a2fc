"""The safety machinery under every lesson: what keeps a run safe, not what it teaches.

A lesson imports its contracts from here:

    from safety import ArgumentParser, PrepareError, RemoteFile, fetch, output_folder, run_main

- errors.py: PrepareError, and naming the file an unexpected exception was reading
- signals.py: Ctrl-C and SIGTERM as exceptions, held back while a commit renames its files
- cli.py: run_main (one `error:` line, never a traceback) and the argument parser
- text.py: strict UTF-8 text with nanoGPT's newlines, values quoted short, `plural`
- files.py: strict and bounded readers, a pickle read without running it, atomic writes
- gpt2.py: GPT-2's two files pinned, the mirror, the line of a network that is not there
- downloads.py: a remote file pinned by its sha256, fetched with retries of what may pass
- compiled.py: a loop compiled with numba where it is installed (dedup's and formats' kernels)
- commit.py: the folder commit (lock, staging, replace, meta.json last)
- spool.py: arrays written in order, whatever order they come in

Layers: safety (imports nothing of the project) and bpe (the tokenizer alone) < documents <
formats < inspection < prepare_common < the lessons < engine. Nothing
here imports a layer above it, and importing a module runs nothing but definitions.
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
