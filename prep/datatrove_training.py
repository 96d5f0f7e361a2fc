"""Counting on a cluster: tokenizer training with datatrove (pip install -e '.[scale]').

    train_with_datatrove(["shards/*.parquet"], 32000, ["<|endoftext|>"], out="tok.json",
                         tasks=64, workers=8, work_dir="/shared/work", executor="local")

Two datatrove stages, the second depending on the first:

1. count (N tasks): task r counts the pre-tokens of every N-th slice of the input, starting at
   slice r (the slices of bpe/corpus.py: byte ranges of text and JSON lines files cut where the
   pre-tokens do not change, row groups of parquet files), and writes its count table,
   WORK/counts/r.json. Text never leaves the task; only counts do.
2. learn (1 task): adds the N tables up, learns the merges (train_bpe_from_counts) and writes the
   tokenizer file.

Counts add up the same in any order and ties between pairs go to the greatest bytes, so the
tokenizer file is byte-identical to train_tokenizer.py's (one machine) on the same files.
Every run counts again (it removes the count tables it finds first, so no other run's mix in).
"""

import json
import sys
from collections import Counter
from dataclasses import asdict
from functools import partial
from pathlib import Path

from bpe import Tokenizer, train_bpe_from_counts
from bpe.checks import check_training_args
from bpe.corpus import Reading, Slice, count_slice, expand_inputs, plan_slices
from bpe.io import atomic_write_text

EXECUTORS = ("local", "slurm")
# fork where there is one: tasks start with the modules this process already imported
LOCAL_START_METHOD = "fork" if sys.platform == "linux" else "forkserver"


def count_task(data, rank=0, world_size=1, *, job, work_dir):
    """Stage 1, task `rank` of `world_size`: count slices rank, rank + N, ... -> counts/rank.json."""
    reading = Reading(**job["reading"])
    counts = Counter()
    for piece in job["slices"][rank::world_size]:
        counts.update(count_slice(Slice(**piece), reading))
    atomic_write_text(Path(work_dir) / "counts" / f"{rank:05d}.json", json.dumps(counts))
    return data


def learn_task(data, _rank=0, _world_size=1, *, job, work_dir, out):
    """Stage 2 (one task): add the count tables up, learn the merges, write the tokenizer.

    (datatrove passes every step the task's rank and the number of tasks; one task needs neither.)
    """
    counts = Counter()
    for table in sorted((Path(work_dir) / "counts").glob("*.json")):
        counts.update(json.loads(table.read_text(encoding="utf-8")))
    special_tokens = job["reading"]["special_tokens"]
    vocab, merges = train_bpe_from_counts(counts, job["vocab_size"], special_tokens)
    first_special = 256 + len(merges)
    special_ids = {token: first_special + i for i, token in enumerate(special_tokens)}
    Tokenizer(vocab, merges, special_ids, pattern=job["pattern_name"]).save(out)
    return data


def train_with_datatrove(
    inputs,
    vocab_size,
    special_tokens=(),
    *,
    out,
    work_dir,
    pattern="gpt2",
    text_column="text",
    tasks=2,
    workers=2,
    executor="local",
    slurm_partition=None,
    slice_bytes=None,
):
    """Count on `tasks` datatrove tasks, learn on one; the tokenizer file is written to `out`.

    slice_bytes: the size of a slice of a text or JSON lines file (default corpus.SLICE_BYTES).
    """
    if executor not in EXECUTORS:
        raise ValueError(f"executor {executor!r} is not one of {', '.join(EXECUTORS)}")
    _, special_tokens, regex_pattern = check_training_args(vocab_size, special_tokens, pattern)
    reading = Reading(regex_pattern, tuple(special_tokens), text_column)
    slices = plan_slices(expand_inputs(inputs), reading, slice_bytes)
    job = {
        "reading": asdict(reading),
        "slices": [asdict(piece) for piece in slices],
        "vocab_size": vocab_size,
        "pattern_name": pattern,
    }
    work_dir = Path(work_dir).resolve()
    out = str(Path(out).resolve())
    for table in (work_dir / "counts").glob("*.json"):  # another run's tables must not mix in
        table.unlink()
    stages = [
        ("count", partial(count_task, job=job, work_dir=str(work_dir)), tasks),
        ("learn", partial(learn_task, job=job, work_dir=str(work_dir), out=out), 1),
    ]
    previous = None
    for name, step, stage_tasks in stages:
        common = {
            "pipeline": [step],
            "tasks": stage_tasks,
            "logging_dir": str(work_dir / "logs" / name),
            "depends": previous,
            "skip_completed": False,
        }
        if executor == "local":
            from datatrove.executor import LocalPipelineExecutor

            previous = LocalPipelineExecutor(
                workers=min(workers, stage_tasks), start_method=LOCAL_START_METHOD, **common
            )
        else:
            from datatrove.executor import SlurmPipelineExecutor

            previous = SlurmPipelineExecutor(
                job_name=f"tokenizer-{name}",
                partition=slurm_partition,
                time="24:00:00",
                workers=workers,
                **common,
            )
    previous.run()
