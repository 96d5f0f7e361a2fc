"""The datatrove engine of data/openwebtext/prepare.py: the same train.bin and val.bin, from many tasks.

datatrove (Hugging Face's engine for LLM data processing at scale) runs a pipeline as N tasks on
one machine (local executor), a Slurm cluster or a Ray cluster, and resumes a crashed run by
skipping the tasks it marked completed. Four stages, each a datatrove executor depending on the
one before:

1. tokenize (N tasks): each task reads its slice of the input (contiguous pieces of the sorted
   files: rows of parquet files, lines of JSON Lines files, whole .txt files), runs the same pure
   `tokenize` as the datasets engine, and writes its ids (one flat file) and an index: per
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

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

from prep.documents import (
    BUILDERS,
    expand_data_files,
    hub_load_arguments,
    source_name,
    source_record,
)
from prep.errors import PrepareError
from prep.files import atomic_path
from prep.folder import folder_lock

WORK_FORMAT = 1  # bump when the layout of the work directory changes
DOCUMENTS_PER_BATCH = 1_000  # texts handed to `tokenize` at once
TOKENS_PER_WRITE = 1 << 22  # ids copied per write: 8 MB of uint16
INDEX_DTYPE = np.dtype([("file", "<u4"), ("position", "<i8"), ("tokens", "<u4")])
JSON_WHITESPACE = b" \t\r\n"
EXECUTORS = ("local", "slurm", "ray")
# fork where there is one: local tasks then start with the modules this process already imported
# (importing datatrove alone takes a second or more); datatrove's default is forkserver
LOCAL_START_METHOD = "fork" if sys.platform == "linux" else "forkserver"
# (tokenizer path, sha256) -> (encoding, record): a worker process loads a tokenizer once, and
# local workers forked from the main process start with the one it loaded
LOADED_TOKENIZERS = {}


# ---------------------------------------------------------------------------------------------
# the input: files, their lengths, and the slices of the tasks


def open_input(path, mode="rb"):
    """A local path or an fsspec URL (hf://datasets/..., s3://...) opened for reading."""
    if "://" not in path:
        return open(path, mode)
    import fsspec

    return fsspec.open(path, mode).open()


def list_remote_files(pattern):
    """The files an fsspec glob (hf://datasets/owner/name@revision/dir/*.parquet) names, sorted."""
    import fsspec

    fs, _ = fsspec.core.url_to_fs(pattern)
    protocol = pattern.split("://", 1)[0]
    return [f"{protocol}://{path}" for path in sorted(fs.glob(pattern))]


def file_identity(path):
    """What identifies a file's content for the work directory's name: path, size, time."""
    if "://" in path:
        import fsspec

        fs, inner = fsspec.core.url_to_fs(path)
        info = fs.info(inner)
        return [path, info.get("size"), str(info.get("last_commit") or info.get("mtime") or "")]
    stat = os.stat(path)
    return [os.path.abspath(path), stat.st_size, stat.st_mtime_ns]


def text_field_type(schema, path):
    """The arrow type of a parquet file's `text` column; no such column is the datasets engine's error."""
    if "text" not in schema.names:
        raise PrepareError(
            f"{path} has no 'text' column; its columns are: {', '.join(schema.names)}"
        )
    return schema.field("text").type


def file_lengths(files, kind):
    """How much of each file there is to share out: rows (parquet), bytes (JSON), 1 (.txt)."""
    if kind == "text":
        return [1] * len(files)
    if kind == "json":
        return [file_identity(path)[1] for path in files]
    import pyarrow.parquet as pq

    lengths = []
    for path in files:
        try:
            with open_input(path) as f:
                parquet = pq.ParquetFile(f)
                text_field_type(parquet.schema_arrow, path)
                lengths.append(parquet.metadata.num_rows)
        except PrepareError:
            raise
        except Exception as exc:  # not a parquet file, truncated footer, unreadable
            raise PrepareError(
                f"cannot read {path} as a parquet file ({type(exc).__name__}: {exc}); "
                f"replace or remove it"
            ) from None
    return lengths


def task_slices(lengths, tasks):
    """Share files of these lengths into `tasks` contiguous slices of (file, start, end) pieces.

    [3, 5] rows, 3 tasks -> [[(0, 0, 2)], [(0, 2, 3), (1, 0, 2)], [(1, 2, 5)]]
    Task t gets units [t*total//tasks, (t+1)*total//tasks) of all files end to end, so there can
    be more tasks than files (a task with an empty slice writes empty files).
    """
    total = sum(lengths)
    file_starts = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
    slices = []
    for task in range(tasks):
        low, high = task * total // tasks, (task + 1) * total // tasks
        pieces = []
        for file_number, length in enumerate(lengths):
            start = max(low - int(file_starts[file_number]), 0)
            end = min(high - int(file_starts[file_number]), length)
            if start < end:
                pieces.append((file_number, start, end))
        slices.append(pieces)
    return slices


# ---------------------------------------------------------------------------------------------
# reading a piece: the documents `datasets` reads, row for row


def read_text_document(path):
    """A .txt file as one document, as datasets' text reader opens it (universal newlines)."""
    with open_input(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PrepareError(
            f"{path} is not valid UTF-8 (byte offset {exc.start:,}); convert it to UTF-8"
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_parquet_rows(path, start, end):
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open_input(path) as f:
        parquet = pq.ParquetFile(f)
        is_string = pa.types.is_string(
            text_field_type(parquet.schema_arrow, path)
        ) or pa.types.is_large_string(parquet.schema_arrow.field("text").type)
        row = 0
        for group in range(parquet.metadata.num_row_groups):
            group_rows = parquet.metadata.row_group(group).num_rows
            if row + group_rows > start and row < end:
                texts = parquet.read_row_group(group, columns=["text"]).column("text")
                low, high = max(start - row, 0), min(end - row, group_rows)
                values = texts.slice(low, high - low).to_pylist()
                for offset, text in enumerate(values):
                    yield row + low + offset, text if is_string else None
            row += group_rows


def _refuse_duplicate_keys(pairs):
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("a key is specified twice")  # pyarrow, hence datasets, refuses it too
    return obj


# json.loads(line, object_pairs_hook=...) without a new JSONDecoder per line (a sixth of the
# reader's time on short documents): bytes are decoded as json.loads decodes them
JSON_DECODER = json.JSONDecoder(object_pairs_hook=_refuse_duplicate_keys)


def json_text(line, path, offset):
    """The `text` of one JSON Lines object; None when missing, null or not a string."""
    try:
        if line.lstrip(JSON_WHITESPACE).startswith(b"["):
            raise ValueError("a JSON array; the datatrove engine reads JSON Lines only")
        document = JSON_DECODER.decode(line.decode(json.detect_encoding(line), "surrogatepass"))
        if document is not None and not isinstance(document, dict):
            raise ValueError(f"a JSON {type(document).__name__}, not an object")
        text = None if document is None else document.get("text")
        if isinstance(text, str) and b"\\u" in line:
            text.encode("utf-8")  # a lone surrogate (\ud800): datasets refuses it
    except (ValueError, UnicodeError) as exc:
        reason = str(exc).splitlines()[0][:200]
        raise PrepareError(
            f"{path}: the line at byte {offset:,} is not a valid JSON Lines object ({reason}); "
            f"fix or remove that line"
        ) from None
    return text if isinstance(text, str) else None


def batches(items, size):
    """[1, 2, 3, 4, 5] with size 2 -> [1, 2], [3, 4], [5]"""
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class PieceReader:
    """(position, text) for each document of a piece of a file, exactly the rows datasets reads.

    text is None when missing, null or not a string. parquet: rows start..end-1, position = row.
    JSON Lines: every line that starts at a byte offset in [start, end), position = that offset;
    blank lines are skipped, as datasets' JSON reader skips them. .txt: the whole file is one
    document, position 0. What datasets refuses (invalid JSON, a duplicated key, invalid UTF-8)
    is a PrepareError naming the file and the byte offset. After the iteration, .begin and .end
    are the span of the file covered (rows, or bytes for JSON Lines), which the plan checks.
    """

    def __init__(self, path, kind, start, end):
        self.path, self.kind, self.start, self.end = path, kind, start, end
        self.begin = start

    def __iter__(self):
        if self.kind == "parquet":
            yield from read_parquet_rows(self.path, self.start, self.end)
            return
        if self.kind == "text":
            yield 0, read_text_document(self.path)
            return
        with open_input(self.path) as f:
            if self.start > 0:  # the line that straddles `start` belongs to the piece before
                f.seek(self.start - 1)
                f.readline()
            offset = self.begin = f.tell()
            while offset < self.end:
                line = f.readline()
                if not line:
                    break
                position = offset
                if offset == 0 and line.startswith(b"\xef\xbb\xbf"):
                    line, position = line[3:], 3  # a byte order mark: datasets ignores it
                if line.strip(JSON_WHITESPACE):
                    yield position, json_text(line, self.path, position)
                offset = position + len(line)
            self.end = offset


# ---------------------------------------------------------------------------------------------
# the work directory


class Work:
    """The paths of one run's work directory.

    WORK_ROOT/<hash of inputs, tokenizer, tasks>/ holds the token files of the tokenize stage;
    .../split-<hash of the split options and the output folder>/ the plan, the parts and the
    logs of the later stages. Each holds run.json, the options its name was made from.
    """

    def __init__(self, root, tokens_config, split_config):
        self.tokens_config, self.split_config = tokens_config, split_config
        self.tokens = Path(root) / config_hash(tokens_config)
        self.split = self.tokens / f"split-{config_hash(split_config)}"

    def token_file(self, rank):
        return self.tokens / "shards" / f"tokens-{rank:05d}.bin"

    def index_file(self, rank):
        return self.tokens / "shards" / f"index-{rank:05d}.npy"

    def summary_file(self, rank):
        return self.tokens / "shards" / f"summary-{rank:05d}.json"

    def plan_file(self, split, column):
        return self.split / "plan" / f"{split}-{column}.npy"

    def part_file(self, split, rank):
        return self.split / "parts" / f"{split}-{rank:05d}.bin"

    def logs(self, stage):
        return str((self.tokens if stage == "tokenize" else self.split) / "logs" / stage)

    def claim(self):
        """Create the folders, or check that existing ones were made for these same options."""
        for folder, config in ((self.tokens, self.tokens_config), (self.split, self.split_config)):
            for sub in ("shards",) if folder == self.tokens else ("plan", "parts"):
                (folder / sub).mkdir(parents=True, exist_ok=True)
            run_json = folder / "run.json"
            if run_json.exists():
                found = json.loads(run_json.read_text(encoding="utf-8"))
                if found != config:
                    raise PrepareError(
                        f"the work directory {folder} was made by another run (its run.json "
                        f"differs from this run's options); delete it or choose another --work-dir"
                    )
            else:
                with atomic_path(run_json) as tmp:
                    tmp.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def config_hash(config):
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------------------------
# the executors and the command line


def add_datatrove_arguments(
    parser,
    engines=("datasets", "datatrove"),
    engine_help="datasets: one machine (default); datatrove: N tasks on this machine, Slurm or "
    "Ray, resumable, the same train.bin and val.bin",
    work_dir_help="where token files, plans, parts and logs go (default: OUT_DIR/.datatrove-work)",
    workers_option=True,
):
    """The datatrove engine's options, added to the script's parser.

    The defaults are data/openwebtext/prepare.py's; train_tokenizer.py names its own engines,
    says what its work directory holds and keeps its own --workers (workers_option=False).
    """
    group = parser.add_argument_group("datatrove engine (pip install -e '.[scale]')")
    group.add_argument("--engine", choices=engines, default=engines[0], help=engine_help)
    group.add_argument("--executor", choices=EXECUTORS, default="local", help="where tasks run")
    group.add_argument(
        "--tasks",
        type=int,
        help="tasks the work is cut into (default: --workers, or 64 on a cluster)",
    )
    if workers_option:
        group.add_argument(
            "--workers",
            type=int,
            help="tasks running at once (default: --num-proc locally, no limit on a cluster)",
        )
    group.add_argument(
        "--work-dir",
        type=Path,
        help=f"{work_dir_help}; on a cluster, a folder every node sees",
    )
    group.add_argument("--slurm-partition", help="Slurm partition (required with --executor slurm)")
    group.add_argument("--slurm-time", default="24:00:00", help="Slurm time limit per task")
    group.add_argument("--slurm-cpus-per-task", type=int, default=1, help="CPUs per Slurm task")
    group.add_argument("--slurm-mem-per-cpu-gb", type=int, default=2, help="memory per CPU (GB)")


def check_datatrove_arguments(parser, args, local_workers=None):
    """Options of the datatrove engine without --engine datatrove are errors; fills in the
    defaults of --tasks and --workers. local_workers: the default --workers on this machine
    (default: --num-proc); a script that gives it owns --workers beyond the engine."""
    engine_options = ["executor", "tasks", "work_dir", "slurm_partition"]
    if local_workers is None:
        engine_options.append("workers")
        local_workers = getattr(args, "num_proc", None)
    if args.engine != "datatrove":
        for option in engine_options:
            if getattr(args, option) not in (None, parser.get_default(option)):
                parser.error(f"--{option.replace('_', '-')} needs --engine datatrove")
        return
    on_cluster = args.executor != "local"
    if args.workers is None:
        args.workers = -1 if on_cluster else local_workers
    if args.tasks is None:
        args.tasks = 64 if on_cluster else args.workers
    if args.tasks < 1 or (args.workers < 1 and not (on_cluster and args.workers == -1)):
        parser.error("--tasks and --workers must be at least 1")
    if args.executor == "slurm" and not args.slurm_partition:
        parser.error("--executor slurm needs --slurm-partition")


def make_executor(args, work, job):
    """The chain of four datatrove executors (each depends on the one before); returns the last.

    The commit stage always runs again (skip_completed=False): it rebuilds the outputs from the
    parts, so a re-run restores outputs deleted since.
    """
    from prep.datatrove_stages import STAGES

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


def stage_executor(args, job_name, **common):
    """One stage's executor on args.executor (local, Slurm or Ray) with the script's options.

    common: pipeline, tasks, logging_dir, depends, skip_completed (datatrove's arguments).
    """
    if args.executor == "local":
        from datatrove.executor import LocalPipelineExecutor

        return LocalPipelineExecutor(
            workers=min(args.workers, common["tasks"]), start_method=LOCAL_START_METHOD, **common
        )
    if args.executor == "slurm":
        from datatrove.executor import SlurmPipelineExecutor

        return SlurmPipelineExecutor(
            job_name=job_name,
            partition=args.slurm_partition,
            time=args.slurm_time,
            cpus_per_task=args.slurm_cpus_per_task,
            mem_per_cpu_gb=args.slurm_mem_per_cpu_gb,
            workers=args.workers,
            **common,
        )
    from datatrove.executor.ray import RayPipelineExecutor

    return RayPipelineExecutor(workers=args.workers, **common)


def input_files(data_files):
    """The files to read, in `datasets`' order, and their kind: ([paths or URLs], "json")."""
    if data_files is None:  # OpenWebText's parquet files on the hub, through fsspec's hf://
        return list_remote_files(hub_load_arguments()[1]["data_files"]["train"]), "parquet"
    files = expand_data_files(data_files)
    return [str(Path(path).resolve()) for path in files], BUILDERS[Path(files[0]).suffix.lower()][0]


def prepare_with_datatrove(args, encoding, tokenizer, dtype):
    """Prepare train.bin, val.bin and meta.json in args.out_dir with datatrove's executors."""
    try:
        import datatrove  # noqa: F401
    except ImportError:
        raise PrepareError(
            "--engine datatrove needs datatrove (Python >= 3.10): pip install -e '.[scale]'"
        ) from None
    if args.executor == "ray":
        try:
            import ray
        except ImportError:
            raise PrepareError("--executor ray needs Ray: pip install 'ray[default]'") from None
        if not ray.is_initialized():
            ray.init()  # joins the cluster of $RAY_ADDRESS, or starts one on this machine
    out_dir = Path(args.out_dir).resolve()
    if args.executor == "local":
        # the commit task runs in this process (datatrove runs a 1-task stage in the caller),
        # so this process holds the folder's lock from the start and the commit goes on under it
        with folder_lock(out_dir):
            run_stages(args, encoding, tokenizer, dtype, out_dir)
    else:
        # the commit task runs later in another process, maybe on another node, when this one
        # may have exited: it takes the lock itself; here a folder busy now is refused at once
        with folder_lock(out_dir):
            pass
        run_stages(args, encoding, tokenizer, dtype, out_dir)


def run_stages(args, encoding, tokenizer, dtype, out_dir):
    """The work directory, the job every task reads, and the four executors, run."""
    tokenizer_path = None if args.tokenizer is None else str(Path(args.tokenizer).resolve())
    LOADED_TOKENIZERS[tokenizer_path, tokenizer["sha256"]] = encoding, tokenizer
    files, kind = input_files(args.data_files)
    lengths = file_lengths(files, kind)
    source = source_name(args.data_files)
    job = {
        "files": files,
        "kind": kind,
        "lengths": lengths,
        "slices": task_slices(lengths, args.tasks),
        "tasks": args.tasks,
        "source": source,
        "source_record": source_record(args.data_files, None),
        "tokenizer_path": tokenizer_path,
        "tokenizer": tokenizer,
        "eot_id": tokenizer["eot_id"],
        "vocab_size": tokenizer["vocab_size"],
        "dtype": dtype.name,
        "val_fraction": args.val_fraction,
        "seed": args.seed,
        "out_dir": str(out_dir),
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
        "val_fraction": args.val_fraction,
        "seed": args.seed,
        "numpy": np.__version__,  # the permutation depends on numpy's generator stream
        "out_dir": str(out_dir),
    }
    work = Work(
        Path(args.work_dir or out_dir / ".datatrove-work").resolve(), tokens_config, split_config
    )
    work.claim()
    print(f"{source}: {len(files):,} files, {args.tasks:,} tasks; work directory {work.split}")
    from prep.datatrove_stages import show_user_errors_without_traceback

    show_user_errors_without_traceback()
    make_executor(args, work, job).run()
    if args.executor == "slurm":
        print(
            f"submitted to Slurm; the outputs appear in {out_dir} when the commit job ends "
            f"(logs: {work.split / 'logs'}); run the same command again to resume"
        )
