"""Tokenizer training whose counting runs as datatrove tasks (--engine datatrove).

    train_with_datatrove(["corpus/*.parquet"], 32000, ["<|endoftext|>"], out="tok.json",
                         tasks=64, workers=8, work_dir="/shared/work", executor="local")

Task r of the count stage counts pieces r, r + N, ... of the input into its table; the one learn
task (always run again) adds them up and learns the merges: counts add up the same in any order,
so the file is byte-identical to one machine's. Tables live in WORK/counts-<hash of their inputs>/.
"""

import json
from collections import Counter
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from types import SimpleNamespace

from bpe import Tokenizer, train_bpe_from_counts
from bpe.checks import check_training_args
from documents.corpus import (
    Reading,
    cap_pieces,
    count_piece,
    expand_inputs,
    no_text_message,
    plan_pieces,
)
from engine.executors import (
    EXECUTORS,
    chain_executors,
    claim_folder,
    config_hash,
    join_ray_cluster,
    run_with_bars,
    show_user_errors_without_traceback,
)
from engine.readers import file_identity
from safety.errors import PrepareError
from safety.files import atomic_write_text, load_json, read_small_file, sha256_file

WORK_FORMAT = 1  # bump when the layout of the work directory changes


@dataclass(frozen=True)
class CountJob:
    """What every task of a training run reads (pickled to the task processes, on any node)."""

    inputs: list  # the --input globs as given, for the error of an empty input
    emptied_by_max_chars: int | None  # that error's too: the max_chars that left text out
    reading: Reading  # how the pieces are read and pretokenized
    pieces: list  # [Piece]: task r counts pieces r, r + N, ...
    tasks: int
    vocab_size: int
    pattern_name: str  # the tokenizer file's "pattern"


class CountWork:
    """The paths of one run's counting."""

    def __init__(self, root, config):
        self.config = json.loads(json.dumps(config))  # as run.json reads back: tuples as lists
        self.folder = Path(root).resolve() / f"counts-{config_hash(config)}"

    def table(self, rank):
        return self.folder / "counts" / f"{rank:05d}.json"

    def logs(self, stage):
        return str(self.folder / "logs" / stage)

    def claim(self, tasks):
        """Create the folder (or check its config); unmark the tasks whose tables fail a sha256."""
        claim_folder(self.folder, self.config, ("counts",))
        for rank in range(tasks):
            marker = Path(self.logs("count")) / "completions" / f"{rank:05d}"
            if marker.exists() and not self.table_intact(rank):
                marker.unlink()

    def table_sha256(self, rank):
        return self.table(rank).with_name(f"{rank:05d}.sha256")

    def table_intact(self, rank):
        """Whether table `rank` has the sha256 its task wrote beside it."""
        try:
            recorded = read_small_file(self.table_sha256(rank)).decode().strip()
            return recorded == sha256_file(self.table(rank))
        except (PrepareError, OSError, UnicodeDecodeError):
            return False


def count_task(data, rank=0, world_size=1, *, job, work):
    """Task `rank` of `world_size`: count pieces rank, rank + N, ... -> its table."""
    show_user_errors_without_traceback()  # this task may run in a process of its own
    counts = Counter()
    for piece in job.pieces[rank::world_size]:
        counts.update(count_piece(piece, job.reading))
    atomic_write_text(work.table(rank), json.dumps(counts))
    atomic_write_text(work.table_sha256(rank), sha256_file(work.table(rank)) + "\n")
    return data


def learn_task(data, _rank=0, _world_size=1, *, job, work, out):
    """The one task: add the count tables up, learn the merges, write the tokenizer."""
    counts = Counter()
    for rank in range(job.tasks):
        if not work.table_intact(rank):
            raise PrepareError(
                f"{work.table(rank)} is missing or differs from its recorded sha256; run the "
                f"same command again (it is counted again)"
            )
        counts.update(load_json(read_small_file(work.table(rank)), work.table(rank)))
    if not counts:
        raise PrepareError(no_text_message(job.inputs, job.emptied_by_max_chars))
    special_tokens = job.reading.special_tokens
    vocab, merges = train_bpe_from_counts(counts, job.vocab_size, special_tokens)
    first_special = 256 + len(merges)
    special_ids = {token: first_special + i for i, token in enumerate(special_tokens)}
    atomic_write_text(out, Tokenizer(vocab, merges, special_ids, job.pattern_name).to_json())
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
    max_chars=None,
    tasks=2,
    workers=2,
    executor="local",
    slurm_partition=None,
    slurm_time="24:00:00",
    slurm_cpus_per_task=1,
    slurm_mem_per_cpu_gb=2,
    piece_bytes=None,
    verbose=False,
):
    """Count on `tasks` datatrove tasks, learn on one, write the tokenizer file to `out` (on
    Slurm, when the learn job ends) -> the work folder of the count tables.

    piece_bytes: the size of a piece of a text or JSON lines file (default corpus.PIECE_BYTES).
    """
    if executor not in EXECUTORS:
        raise PrepareError(f"executor {executor!r} is not one of {', '.join(EXECUTORS)}")
    try:  # a bad option is one of bpe's checks' ValueErrors
        _, special_tokens, regex_pattern = check_training_args(vocab_size, special_tokens, pattern)
        reading = Reading(regex_pattern, tuple(special_tokens), text_column)
        paths = [str(Path(path).resolve()) for path in expand_inputs(inputs)]
        pieces = capped = plan_pieces(paths, reading, piece_bytes)
        if max_chars is not None:  # the same documents as on one machine, read once here
            capped = cap_pieces(pieces, reading, max_chars)
    except ValueError as exc:
        raise PrepareError(str(exc)) from None
    pieces, left_out = capped, capped != pieces
    most = max(len(pieces), 1)  # task r counts pieces r, r + N, ...: beyond, a task has none
    if tasks > most:  # each a process to start for nothing, and a table to add up
        print(f"note: --tasks {tasks:,} capped at {most:,}, the input's pieces")
        tasks = most
    config = {
        "format": WORK_FORMAT,
        "files": [file_identity(path) for path in paths],
        "reading": asdict(reading),
        "pieces": [asdict(piece) for piece in pieces],
        "tasks": tasks,
    }
    work = CountWork(work_dir, config)
    work.claim(tasks)
    job = CountJob(
        inputs=[str(path) for path in inputs],
        emptied_by_max_chars=max_chars if left_out else None,
        reading=reading,
        pieces=pieces,
        tasks=tasks,
        vocab_size=vocab_size,
        pattern_name=pattern,
    )
    options = SimpleNamespace(
        executor=executor,
        workers=workers,
        slurm_partition=slurm_partition,
        slurm_time=slurm_time,
        slurm_cpus_per_task=slurm_cpus_per_task,
        slurm_mem_per_cpu_gb=slurm_mem_per_cpu_gb,
        verbose=verbose,
    )
    if executor == "ray":
        join_ray_cluster()
    out = str(Path(out).resolve())
    stages = [  # learn waits for every count task
        ("count", partial(count_task, job=job, work=work), tasks),
        ("learn", partial(learn_task, job=job, work=work, out=out), 1),
    ]
    learn = chain_executors(options, "tokenizer", stages, work.logs)
    run_with_bars(learn, options, work.folder / "logs", [("count", work.logs("count"), tasks)])
    return work.folder
