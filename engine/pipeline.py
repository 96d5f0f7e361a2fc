"""The datatrove pipeline of a document lesson (data/openwebtext, data/fineweb): its outputs, from many tasks.

datatrove (Hugging Face's engine for LLM data processing at scale) runs a pipeline as N tasks on
one machine (local executor), a Slurm cluster or a Ray cluster, and resumes a crashed run by
skipping the tasks it marked completed. Four stages, each a datatrove executor depending on the
one before:

1. tokenize (N tasks): each task reads its slice of the input (contiguous pieces of the sorted
   files: rows of parquet files, lines of JSON Lines files, whole .txt files), runs the same pure
   `tokenize_documents` as the datasets engine, and writes its ids (one flat file) and an index: per
   document its file number, its position in the file (row, or byte offset of its line) and its
   token count.
2. plan (1 task): the tasks' indexes in task order are the documents in `datasets`' order (files
   in order, rows in file order); it checks that every document is there exactly once, draws
   nanoGPT's split (`random_split`, the function the datasets engine uses too) and records, for each
   document of each split, where its ids are and where they go.
3. write (N tasks): task r writes part r of each split: one contiguous range of the output,
   copied in order from the memory-mapped token files. No file has two writers.
4. commit (1 task): joins the parts into train.bin and val.bin, checks the sizes and writes
   meta.json last.

The work directory is named by a hash of everything the tokens depend on (input files with
their sizes and times, tokenizer, number of tasks), and its split stages by a hash of the split
options, so a re-run resumes only its own work and never mixes in another run's files.
"""

from pathlib import Path

import numpy as np

from engine.executors import (
    LOADED_TOKENIZERS,
    WORK_FORMAT,
    Work,
    join_ray_cluster,
    plural,
    quiet_logs,
    show_user_errors_without_traceback,
    stage_executor,
    task_bars,
)
from engine.readers import (
    MIN_TASK_BYTES,
    MIN_TASK_DOCUMENTS,
    file_identity,
    file_lengths,
    input_files,
    most_tasks,
    task_slices,
)
from prepare_common import source_name, source_record
from safety.commit import folder_lock


def make_executor(args, work, job):
    """The chain of four datatrove executors (each depends on the one before); returns the last.

    The commit stage always runs again (skip_completed=False): it rebuilds the outputs from the
    parts, so a re-run restores outputs deleted since.
    """
    from engine.stages import STAGES  # datatrove's classes: imported once it is known installed

    previous = None
    for name, step in STAGES:
        tasks = args.tasks if name in ("tokenize", "write") else 1
        previous = stage_executor(
            args,
            f"nanogpt-{name}",
            pipeline=[step(work, job)],
            tasks=tasks,
            logging_dir=work.logs(name),
            depends=previous,
            skip_completed=name != "commit",
        )
    return previous


def prepare_with_datatrove(args, encoding, tokenizer, dtype, lesson):
    """Prepare train.bin, val.bin and meta.json (or shards) in args.out_dir with datatrove's
    executors, for the `lesson`, what its cluster script asks beyond its options: {"script",
    "hub" (its pinned HubDataset), "prefix" (of shard names), "split": "nanoGPT" (OpenWebText's
    random split: train.bin and val.bin, or llm.c shards) or "llm.c" (FineWeb's: the documents
    in order, or args.shuffle's permutation, cut into shards), "split_rule" (meta.json's words
    for it)}."""
    if args.executor == "ray":
        join_ray_cluster()
    out_dir = Path(args.out_dir).resolve()
    if args.executor == "local":
        # the commit task runs in this process (datatrove runs a 1-task stage in the caller),
        # so this process holds the folder's lock from the start and the commit goes on under it
        with folder_lock(out_dir):
            run_stages(args, encoding, tokenizer, dtype, out_dir, lesson)
    else:
        # the commit task runs later in another process, maybe on another node, when this one
        # may have exited: it takes the lock itself; here a folder busy now is refused at once
        with folder_lock(out_dir):
            pass
        run_stages(args, encoding, tokenizer, dtype, out_dir, lesson)


def run_stages(args, encoding, tokenizer, dtype, out_dir, lesson):
    """The work directory, the job every task reads, and the four executors, run."""
    tokenizer_path = None if args.tokenizer is None else str(Path(args.tokenizer).resolve())
    LOADED_TOKENIZERS[tokenizer_path, tokenizer["sha256"]] = encoding, tokenizer
    hub = lesson["hub"]
    files, kind = input_files(args.data_files, hub)
    lengths = file_lengths(files, kind)
    most, size = most_tasks(files, kind, lengths)
    if args.tasks > most:  # each task is a process to start: too small ones cost more than they do
        print(
            f"note: --tasks {args.tasks:,} capped at {most:,} for {size} (at least "
            f"{MIN_TASK_DOCUMENTS} documents or {MIN_TASK_BYTES >> 20} MB a task)"
        )
        args.tasks = most
    source = source_name(args.data_files, hub)
    nanogpt_split = lesson["split"] == "nanoGPT"  # else llm.c's rule: no split
    job = {
        "files": files,
        "kind": kind,
        "lengths": lengths,
        "slices": task_slices(lengths, args.tasks),
        "tasks": args.tasks,
        "source": source,
        "source_record": source_record(args.data_files, None, hub),
        "script": lesson["script"],
        "prefix": lesson["prefix"],
        "split_rule": lesson["split_rule"],
        "tokenizer_path": tokenizer_path,
        "tokenizer": tokenizer,
        "eot_id": tokenizer["eot_id"],
        "vocab_size": tokenizer["vocab_size"],
        "dtype": dtype.name,
        "val_fraction": args.val_fraction if nanogpt_split else None,
        "seed": args.seed if nanogpt_split else None,
        "shuffle": None if nanogpt_split else args.shuffle,  # data/fineweb's --shuffle SEED
        "format": args.format,
        "shard_size": args.shard_size,
        "out_dir": str(out_dir),
        "out_dir_as_given": str(args.out_dir),
        "options": {
            "tokenizer": None if args.tokenizer is None else str(args.tokenizer),
            "engine": "datatrove",
            "executor": args.executor,
            "tasks": args.tasks,
            "workers": args.workers,
        },
    }
    tokens_config = {
        "format": WORK_FORMAT,
        "files": [file_identity(path) for path in files],
        "kind": kind,
        "tokenizer": tokenizer["sha256"],
        "eot_id": tokenizer["eot_id"],
        "dtype": dtype.name,
        "tasks": args.tasks,
    }
    split_config = {
        "val_fraction": args.val_fraction if nanogpt_split else None,
        "seed": args.seed if nanogpt_split else None,
        "numpy": np.__version__,  # the permutation depends on numpy's generator stream
        "out_dir": str(out_dir),
    }
    if not nanogpt_split:  # data/fineweb: the write tasks cut the shards, in the plan's order
        split_config.update(shuffle=job["shuffle"], shard_size=args.shard_size, format=args.format)
    work = Work(
        Path(args.work_dir or out_dir / ".datatrove-work").resolve(), tokens_config, split_config
    )
    work.claim()
    print(
        f"{source}: {plural(len(files), 'file')}, {plural(args.tasks, 'task')}; "
        f"work directory {work.split}"
    )
    show_user_errors_without_traceback()
    executor = make_executor(args, work, job)
    with quiet_logs(work.split / "logs", args.verbose) as terminal:
        bars = [
            (f"{name} ({plural(args.tasks, 'task')})", work.logs(name), args.tasks)
            for name in ("tokenize", "write")
        ]
        with task_bars(bars, terminal, show=args.executor != "slurm"):
            executor.run()
    if args.executor == "slurm":
        print(
            f"submitted to Slurm; the outputs appear in {out_dir} when the commit job ends "
            f"(logs: {work.split / 'logs'}); run the same command again to resume"
        )
