"""The datatrove pipeline of a document lesson: its outputs, from many tasks.

Four stages (engine/stages.py), each depending on the one before: tokenize (N tasks), plan (1),
write (N, no file with two writers), commit (1: meta.json last). A rerun skips the tasks marked
completed, in a work directory named by a hash of what its files depend on.
"""

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from documents.inputs import HubDataset, source_name, source_record
from engine.executors import (
    LOADED_TOKENIZERS,
    WORK_FORMAT,
    Work,
    add_datatrove_arguments,
    chain_executors,
    check_datatrove_arguments,
    config_hash,
    join_ray_cluster,
    run_with_bars,
)
from engine.layouts import RandomSplit, ShardStream
from engine.readers import (
    MIN_TASK_BYTES,
    MIN_TASK_DOCUMENTS,
    file_identity,
    file_lengths,
    input_files,
    most_tasks,
    task_slices,
)
from formats import schema
from formats.val_bytes import figures_option
from inspection.overlap import say_overlap
from prepare_common import NANOGPT_READS, bpe_encoding, dtype_for_vocab
from safety.commit import folder_lock, folder_outputs
from safety.files import atomic_path
from safety.text import plural

WORK_NAME = ".datatrove-work"  # the work directory in the output folder, without --work-dir


@dataclass(frozen=True)
class Lesson:
    """What a lesson's prepare_datatrove.py gives the engine beyond its options."""

    script: str  # the lesson's prepare.py, as meta.json names it: "data/openwebtext/prepare.py"
    hub: HubDataset  # the dataset it pins, read when --data-files is not given
    prefix: str  # of its shards' names: "openwebtext", "edufineweb"
    layout: RandomSplit | ShardStream  # how its documents become its outputs
    # --max-tokens: its prepare.py's step, budget(args, encoding, source) -> (datasets.Dataset
    # of the documents kept, meta.json's budget record)
    budget: Callable


@dataclass(frozen=True)
class Job:
    """What every task of a run reads (pickled to the task processes, on any node)."""

    files: list  # the input files, in `datasets`' order
    kind: str  # "parquet", "json" or "text"
    lengths: list  # of each file: rows, bytes or 1 (readers.file_lengths)
    slices: list  # each tokenize task's [(file number, start, end)] (readers.task_slices)
    tasks: int
    source: str  # the input as the lessons name it in their output
    source_record: dict  # meta.json's "source", without the number of documents
    script: str  # the lesson's, for meta.json
    prefix: str  # of shard names
    layout: RandomSplit | ShardStream
    tokenizer_path: str | None  # None: GPT-2's
    tokenizer: dict  # its record (name, sha256, vocab_size, eot_id, ...)
    dtype: str  # of the ids: "uint16" or "uint32"
    out_dir: str  # resolved
    out_dir_as_given: str  # as the "wrote ..." line says it
    options: dict  # meta.json's "options"
    dedup: str | None = None  # --dedup: "exact", "near", or None (every document kept)
    figures: bool | str = True  # tokenize_documents': "compiled" where a task reads enough


def twin_main(arguments, description, lesson_of, readers=NANOGPT_READS):
    """The main of a lesson's data/*/prepare_datatrove.py."""
    parser = arguments()
    parser.description = description
    add_datatrove_arguments(parser)  # --executor, --tasks, --workers, --work-dir, --slurm-*
    args = parser.parse_args()
    if args.max_tokens and args.data_files:
        parser.error("--max-tokens reads the hub's files: leave out --data-files")
    check_datatrove_arguments(parser, args)
    encoding, tokenizer = bpe_encoding(args.tokenizer, need_eot=True)
    vocab_size, eot_id = tokenizer["vocab_size"], tokenizer["eot_id"]
    dtype = dtype_for_vocab(vocab_size, readers)
    print(f"tokenizer: {tokenizer['name']} ({vocab_size:,} tokens, end of text = {eot_id})")
    prepare_with_datatrove(args, encoding, tokenizer, dtype, lesson_of(args))  # the last commits
    if args.executor != "slurm":  # committed by now: said as prepare.py says it
        say_overlap(args.out_dir)


def prepare_with_datatrove(args, encoding, tokenizer, dtype, lesson):
    """Prepare the `lesson`'s outputs and meta.json in args.out_dir with datatrove's executors."""
    if args.executor == "ray":
        join_ray_cluster()
    out_dir = Path(args.out_dir).resolve()
    if args.executor != "local":  # the commit task takes the lock later, maybe on another node:
        with folder_lock(out_dir):  # a folder busy now is refused at once
            pass
        return run_stages(args, encoding, tokenizer, dtype, out_dir, lesson)
    # the commit runs in this process (datatrove runs a 1-task stage in the caller), under this lock
    with folder_lock(out_dir):
        work_root = out_dir / WORK_NAME  # the default one is removed if this run made it and fails
        new = args.work_dir is None and not os.path.lexists(work_root)
        try:
            run_stages(args, encoding, tokenizer, dtype, out_dir, lesson)
        except BaseException:
            if new:
                shutil.rmtree(work_root, ignore_errors=True)
            raise


def run_stages(args, encoding, tokenizer, dtype, out_dir, lesson):
    """The job every task reads, its work directory, and the four executors, chained, run."""
    from engine.stages import STAGES  # datatrove's classes: imported once it is known installed

    work_root = Path(args.work_dir or out_dir / WORK_NAME).resolve()
    budgeted = budget_input(args, encoding, lesson, work_root) if args.max_tokens else None
    job = make_job(args, tokenizer, dtype, out_dir, lesson, budgeted)
    LOADED_TOKENIZERS[job.tokenizer_path, tokenizer["sha256"]] = encoding, tokenizer
    tokens_config = {
        "format": WORK_FORMAT,
        "files": [file_identity(path) for path in job.files],
        "kind": job.kind,
        "tokenizer": tokenizer["sha256"],
        "eot_id": tokenizer["eot_id"],
        "dtype": dtype.name,
        "tasks": job.tasks,
    }
    # the permutation depends on numpy's generator stream
    split_config = {**job.layout.config(), "numpy": np.__version__, "out_dir": str(out_dir)}
    if job.dedup:  # the tokenize tasks write each document's keys; the plan drops the copies
        tokens_config["dedup"] = split_config["dedup"] = job.dedup
    work = Work(work_root, tokens_config, split_config)
    work.claim()
    print(
        f"{job.source}: {plural(len(job.files), 'file')}, {plural(job.tasks, 'task')}; work "
        f"directory {work.split}"
    )
    stages = [
        (stage.name, stage(work, job), job.tasks if stage.parallel else 1) for stage in STAGES
    ]
    bars = [(name, work.logs(name), job.tasks) for name in ("tokenize", "write")]
    run_with_bars(
        chain_executors(args, "nanogpt", stages, work.logs), args, work.split / "logs", bars
    )
    if args.executor == "slurm":
        print(
            f"submitted to Slurm; the outputs appear in {out_dir} when the commit job ends "
            f"(logs: {work.split / 'logs'}); run the same command again to resume"
        )


def budget_input(args, encoding, lesson, work_root):
    """--max-tokens: the lesson's budget step, its documents written into the work root as one
    parquet file named by the budget record -> (its path, the record). The same budget resumes
    the same work directory; another is another input."""
    import pyarrow.parquet as pq

    documents, budget = lesson.budget(args, encoding, source_name(None, lesson.hub))
    path = work_root / f"budget-{config_hash(budget)}.parquet"
    work_root.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:  # row groups as small as a task's least share of documents
        pq.write_table(documents.data.table, tmp, row_group_size=MIN_TASK_DOCUMENTS)
    return str(path), budget


def make_job(args, tokenizer, dtype, out_dir, lesson, budgeted=None):
    """The Job of a run; `budgeted`: budget_input's (path, record)."""
    budget_file, budget = budgeted or (None, None)
    outputs = folder_outputs(schema, out_dir)  # a --data-files glob over the folder
    files, kind = input_files([budget_file] if budget else args.data_files, lesson.hub, outputs)
    layout = lesson.layout
    if budget and budget["first_documents"]:  # the lesson's val: the source's first documents
        layout = replace(layout, first_documents=budget["first_documents"])
    lengths = file_lengths(files, kind)
    most, size = most_tasks(files, kind, lengths)
    if args.tasks > most:  # each task is a process to start: too small ones cost more than they do
        print(
            f"note: --tasks {args.tasks:,} capped at {most:,} for {size} (at least "
            f"{MIN_TASK_DOCUMENTS} documents or {MIN_TASK_BYTES >> 20} MB a task)"
        )
        args.tasks = most
    tokenizer_path = None if args.tokenizer is None else str(Path(args.tokenizer).resolve())
    # the byte figures compared in numba where a task's share of the files on disk (its text is
    # no smaller) is large enough
    figures = figures_option(sum(map(os.path.getsize, files)) / args.tasks)
    return Job(
        files=files,
        kind=kind,
        lengths=lengths,
        slices=task_slices(lengths, args.tasks),
        tasks=args.tasks,
        source=source_name(args.data_files, lesson.hub),
        source_record=source_record(args.data_files, None, lesson.hub, budget),
        script=lesson.script,
        prefix=lesson.prefix,
        layout=layout,
        tokenizer_path=tokenizer_path,
        tokenizer=tokenizer,
        dtype=dtype.name,
        out_dir=str(out_dir),
        out_dir_as_given=str(args.out_dir),
        options={
            "tokenizer": None if args.tokenizer is None else str(args.tokenizer),
            "engine": "datatrove",
            "executor": args.executor,
            "tasks": args.tasks,
            "workers": args.workers,
        },
        dedup=args.dedup,
        figures=figures,
    )
