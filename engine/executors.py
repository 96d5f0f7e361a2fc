"""The work directory, the executors and the command line of every datatrove stage. Nothing here
imports datatrove at load: a command answers --help, and says what to install, without it.
"""

import contextlib
import functools
import hashlib
import importlib
import json
import multiprocessing
import os
import shutil
import sys
import threading
from pathlib import Path

from documents.parallel import exit_when_orphaned
from safety.errors import PrepareError
from safety.files import atomic_write_text, load_json, read_small_file, sha256_file
from safety.text import plural

WORK_FORMAT = 3  # bump when the layout of the work directory changes
EXECUTORS = ("local", "slurm", "ray")
LOG_NAME = "datatrove.log"  # datatrove's own logs, in the work directory (see quiet_logs)
# (tokenizer path, sha256) -> (encoding, record): a worker process loads a tokenizer once, and
# local workers forked from the main process start with the one it loaded
LOADED_TOKENIZERS = {}


class Work:
    """The paths of one run's work directory: ROOT/<hash of tokens_config>/ (the tokenize stage's
    files) and in it split-<hash of split_config>/ (the later stages'), each with its run.json."""

    def __init__(self, root, tokens_config, split_config):
        self.tokens_config, self.split_config = tokens_config, split_config
        self.tokens = Path(root) / config_hash(tokens_config)
        self.split = self.tokens / f"split-{config_hash(split_config)}"

    def _task_file(self, name, suffix, rank):
        return self.tokens / "tasks" / f"{name}-{rank:05d}.{suffix}"

    token_file = functools.partialmethod(_task_file, "tokens", "bin")
    index_file = functools.partialmethod(_task_file, "index", "npy")
    summary_file = functools.partialmethod(_task_file, "summary", "json")
    keys_file = functools.partialmethod(_task_file, "keys", "npy")  # --dedup's document_keys
    figures_file = functools.partialmethod(_task_file, "figures", "npy")

    def tokenize_files(self, rank):
        """What tokenize task `rank` writes before its summary (which records their sha256)."""
        keys = (self.keys_file(rank),) if self.tokens_config.get("dedup") else ()
        return (self.token_file(rank), self.index_file(rank), self.figures_file(rank), *keys)

    def plan_file(self, split, column):
        return self.split / "plan" / f"{split}-{column}.npy"

    def part_file(self, split, rank):
        return self.split / "parts" / f"{split}-{rank:05d}.bin"

    def written_file(self, rank):  # the sha256 of each file write task `rank` wrote
        return self.split / "parts" / f"written-{rank:05d}.json"

    @property
    def plan_json(self):
        return self.split / "plan" / "plan.json"

    def read_plan(self):
        return json.loads(self.plan_json.read_text(encoding="utf-8"))

    def shard_records(self, rank):  # a ShardStream's
        return self.split / "parts" / f"shards-{rank:05d}.json"

    def logs(self, stage):
        return str((self.tokens if stage == "tokenize" else self.split) / "logs" / stage)

    def claim(self):
        """Create the folders, or check that existing ones were made for these same options, and
        unmark the tokenize and write tasks whose files are gone or differ from the sha256s they
        recorded, so that this run makes them again (an output changed in place through its
        hard-linked part too)."""
        claim_folder(self.tokens, self.tokens_config, ("tasks",))
        claim_folder(self.split, self.split_config, ("plan", "parts"))
        intact = {
            "tokenize": lambda r: task_files_intact(self.summary_file(r), self.tokenize_files(r)),
            "write": lambda r: task_files_intact(self.written_file(r)),  # the parts it names
        }
        for stage, task_intact in intact.items():
            completions = Path(self.logs(stage)) / "completions"
            for marker in completions.iterdir() if completions.is_dir() else ():
                if marker.name.isdigit() and not task_intact(int(marker.name)):
                    marker.unlink()


def task_files_intact(summary_file, files=None):
    """Whether `files` (default: those it names) have the sha256s `summary_file` recorded."""
    try:
        recorded = load_json(read_small_file(summary_file), summary_file)["sha256"]
        files = [summary_file.parent / name for name in recorded] if files is None else files
        return all(recorded.get(path.name) == sha256_file(path) for path in files)
    except (PrepareError, OSError, AttributeError, KeyError, TypeError):
        return False


def claim_folder(folder, config, subfolders):
    """Create `folder` with run.json holding `config`, or refuse one made with another."""
    for sub in subfolders:
        (folder / sub).mkdir(parents=True, exist_ok=True)
    run_json = folder / "run.json"
    if not os.path.lexists(run_json):
        atomic_write_text(run_json, json.dumps(config, indent=2) + "\n")
    elif load_json(read_small_file(run_json), run_json) != config:
        raise PrepareError(
            f"the work directory {folder} was made by another run (its run.json "
            f"differs from this run's options); delete it or choose another --work-dir"
        )


def config_hash(config):
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def add_datatrove_arguments(
    parser,
    engines=None,
    engine_help=None,
    work_dir_help="where token files, plans, parts and logs go (default: OUT_DIR/.datatrove-work)",
    workers_option=True,
):
    """The datatrove engine's options, added to the script's parser (with `engines`, an --engine
    option chooses among them; workers_option=False: the script has its own --workers)."""
    group = parser.add_argument_group("datatrove (pip install -e '.[scale]')")
    if engines is None:
        parser.set_defaults(engine="datatrove")
    else:
        group.add_argument("--engine", choices=engines, default=engines[0], help=engine_help)
    group.add_argument("--executor", choices=EXECUTORS, default="local", help="where tasks run")
    tasks = "tasks the work is cut into (default: --workers, or 64 on a cluster)"
    group.add_argument("--tasks", type=int, help=tasks)
    if workers_option:
        workers = "tasks running at once (default: --num-proc locally, no limit on a cluster)"
        group.add_argument("--workers", type=int, help=workers)
    work_dir = f"{work_dir_help}; on a cluster, a folder every node sees"
    group.add_argument("--work-dir", type=Path, help=work_dir)
    verbose = f"show datatrove's own logs here too (always in the work directory's {LOG_NAME})"
    group.add_argument("--verbose", action="store_true", help=verbose)
    group.add_argument("--slurm-partition", help="Slurm partition (required with --executor slurm)")
    group.add_argument("--slurm-time", default="24:00:00", help="Slurm time limit per task")
    group.add_argument("--slurm-cpus-per-task", type=int, default=1, help="CPUs per Slurm task")
    group.add_argument("--slurm-mem-per-cpu-gb", type=int, default=2, help="memory per CPU (GB)")


def check_datatrove_arguments(parser, args, local_workers=None):
    """Refuse the engine's options without --engine datatrove, fill in --tasks and --workers
    (local_workers: the local default, else --num-proc), check datatrove (and Ray) installed."""
    engine_options = ["executor", "tasks", "work_dir", "verbose", "slurm_partition"]
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
    if args.executor == "slurm" and shutil.which("sbatch") is None:  # datatrove submits with it
        parser.error(
            "--executor slurm needs Slurm's sbatch, not found on PATH: run on a node of "
            "the cluster, or use --executor local"
        )
    needed = {  # before any work: the one line saying what to install
        "datatrove": "this needs datatrove, which is not installed: "
        'pip install -e ".[scale]" (the scale extra)'
    }
    if args.executor == "ray":
        needed["ray"] = '--executor ray needs Ray: pip install -e ".[ray]" (the ray extra)'
    for module, message in needed.items():
        try:
            importlib.import_module(module)
        except ImportError:
            raise PrepareError(message) from None


def chain_executors(args, job_name, stages, logs):
    """The executors of `stages` [(name, step, tasks)], each depending on the one before; returns
    what runs them all. The last stage always runs again: it rebuilds an output deleted since."""
    previous, chained = None, args.executor != "ray"
    executors = []
    for name, step, tasks in stages:
        last = name == stages[-1][0]
        depends = previous if chained else None
        common = dict(pipeline=[step], tasks=tasks, logging_dir=logs(name), depends=depends)
        previous = stage_executor(args, f"{job_name}-{name}", skip_completed=not last, **common)
        executors.append((name, previous))
    return previous if chained else RayStages(executors)


class RayStages:
    """Ray's executors run in turn, each checked complete before the next: datatrove's logs a
    failed task and returns, and one depending on it would wait for good."""

    def __init__(self, executors):
        self.executors = executors

    def run(self):
        import ray

        if not ray.is_initialized():  # (RAY_ADDRESS, if set, names the cluster) each task's log
            ray.init(log_to_driver=False)  # is in its stage's logs/, not interleaved on stderr
        for name, executor in self.executors:
            done = Path(executor.logging_dir.path) / "completions"
            if not executor.skip_completed:  # the stage run again: its old marks say nothing
                for mark in done.glob("*"):
                    mark.unlink()
            executor.run()
            if failed := executor.get_incomplete_ranks(skip_completed=True):
                logs = Path(executor.logging_dir.path) / "logs"
                lines = (
                    line
                    for path in sorted(logs.glob("task_*.log"))
                    for line in path.read_text(errors="replace").splitlines()
                )
                errors = (  # datatrove's "... | ERROR | where - MESSAGE": the first MESSAGE
                    line.split(" - ", 1)[1] for line in lines if "| ERROR" in line and " - " in line
                )
                raise PrepareError(
                    next(errors, None)
                    or f"{plural(len(failed), 'task')} of the {name} stage failed on Ray (their "
                    f"logs: {logs}); fix the cause and run again"
                )


def stage_executor(args, job_name, **common):
    """One stage's executor on args.executor; common: datatrove's other arguments."""
    if args.executor == "local":
        from datatrove.executor import LocalPipelineExecutor

        forked_processes_exit_with_this_one()
        # the program's start method, else fork on Linux: the tasks then start with the modules
        # imported already (datatrove alone takes a second), not forkserver's nothing
        method = multiprocessing.get_start_method(allow_none=True)
        if method is None:
            method = "fork" if sys.platform == "linux" else multiprocessing.get_start_method()
        workers = min(args.workers, common["tasks"])
        return LocalPipelineExecutor(workers=workers, start_method=method, **common)
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


@functools.cache  # once: every process forked from then on runs the hook
def forked_processes_exit_with_this_one():
    """Each process the local executor forks exits once its parent has gone: after a kill -9 of
    the run, datatrove's Manager's server would wait forever (spawned processes stay)."""
    import multiprocess.util

    multiprocess.util.register_after_fork(
        multiprocess, lambda module: exit_when_orphaned(module.parent_process().pid)
    )


def join_ray_cluster():
    """Join the Ray cluster of $RAY_ADDRESS, or start one on this machine, once per process."""
    import ray

    if not ray.is_initialized():
        ray.init()


@contextlib.contextmanager
def quiet_logs(logs_folder, verbose=False):
    """datatrove's own logs go to LOGS_FOLDER/datatrove.log, not to the terminal (unless verbose):
    file descriptor 2 points there, which every task's process inherits. Yields the terminal's
    stderr, for the progress bars."""
    if verbose:
        yield sys.stderr
        return
    Path(logs_folder).mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    terminal = os.dup(2)
    with open(Path(logs_folder) / LOG_NAME, "ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        with os.fdopen(os.dup(terminal), "w") as stream:
            yield stream
    finally:
        sys.stderr.flush()
        os.dup2(terminal, 2)
        os.close(terminal)


@contextlib.contextmanager
def task_bars(stages, stream):
    """While the block runs, a bar of the tasks done for each (name, folder, tasks) in turn."""
    from tqdm import tqdm

    ended = threading.Event()

    def done(folder):
        with contextlib.suppress(OSError):
            return len(os.listdir(Path(folder) / "completions"))
        return 0

    def watch():
        for name, folder, tasks in stages:
            if ended.is_set() and not done(folder):
                return  # the run stopped before this stage
            description = f"{name} ({plural(tasks, 'task')})"
            with tqdm(total=tasks, desc=description, unit="task", file=stream) as bar:
                while bar.n < tasks:
                    if done(folder) != bar.n:  # redrawn only when it moves: a log file stays short
                        bar.update(done(folder) - bar.n)
                    if ended.wait(0.1) and bar.n < tasks:
                        bar.update(done(folder) - bar.n)
                        return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        ended.set()
        watcher.join()


def run_with_bars(executor, args, logs_folder, bars):
    """executor.run() under quiet_logs and task_bars."""
    show_user_errors_without_traceback()  # a bad file is one line in the logs, then `error:`
    bars = bars if args.executor != "slurm" else []  # on Slurm the tasks run later: no bars
    with quiet_logs(logs_folder, args.verbose) as terminal, task_bars(bars, terminal):
        executor.run()


def show_user_errors_without_traceback():
    """A PrepareError (bad input, explained in one line) is logged without its traceback."""
    from loguru import logger

    def drop_traceback(record):
        exception = record["exception"]
        if exception is not None and isinstance(exception.value, PrepareError):
            record["exception"] = None

    logger.configure(patcher=drop_traceback)
