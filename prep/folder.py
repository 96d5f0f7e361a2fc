"""A prepared folder changes as one transaction, like a git commit: `output_folder`.

    with output_folder(out_dir) as out:        # out_dir locked; `out` is an empty staging folder
        write_bin(out / "train.bin", ...)      # every output is written into `out`,
        write_json(out / "meta.json", ...)     # meta.json (the folder's commit record) included
    # leaving the block without an error committed them: out_dir holds the new, complete set

meta.json is the commit record: a folder with a meta.json is complete and consistent, because
meta.json is removed before the first data file is replaced and written back last. The exact
order, and what a crash (SIGKILL, power loss) at each step leaves:

1. lock: an advisory lock (`fcntl.lockf`, LOCK_EX | LOCK_NB) on `out_dir/.prepare.lock`, then
   our pid and command are written into it. If another process holds it, `FolderBusy` (a
   PrepareError) names it at once: a second run into a busy folder stops; it does not wait. The
   OS drops the lock when its holder dies, however it dies. A POSIX lock rather than `flock`:
   worker processes forked by datasets do not inherit it, so one orphaned by a SIGKILL cannot
   keep the folder locked. The lock file stays (removing it would race with the next run).
   A run whose commit comes later in the same process takes the lock first with `folder_lock`
   (the datatrove engine on this machine); its `output_folder` then goes on under it.
2. clean: temporaries of killed runs (`.prepare.<pid>.tmp/` staging folders, `.<name>.<pid>.tmp`
   files) are removed; holding the lock proves their writers are gone.
3. stage: the block writes into `out_dir/.prepare.<pid>.tmp/`. An error or an interrupt
   (Ctrl-C, SIGTERM) removes it; a crash leaves it beside the old outputs, which are untouched
   (`verify` passes and warns about the leftover; the next run removes it).
4. check: meta.json must be staged; no file to be replaced may be a folder; every staged file
   is fsynced. Nothing in out_dir has changed yet.
5. uncommit: the old meta.json is removed and out_dir fsynced. From here to step 7 the folder
   has no meta.json: `verify` reports it incomplete in one line.
6. replace: each staged data file is renamed into place (`os.replace`, atomic per file); an
   output of the old set that this run did not write (one of OUTPUT_NAMES, e.g. a meta.pkl left
   by a run with another tokenizer) is removed; out_dir is fsynced.
7. commit: meta.json is renamed into place and out_dir fsynced: the new set is complete.
8. the staging folder is removed and the lock released.

For the fault tests only: with NANOGPT_DATA_PAUSE_AT=<step> in the environment, the process stops
itself (SIGSTOP) at that step ("staged": step 4 done; "uncommitted": step 5 done; "replaced": the
first data file renamed; "committed": step 7 done), so that a test can SIGKILL it exactly there.

Ctrl-C and SIGTERM are held back during steps 5-7 (a few renames), so an interrupt lands before
them (old set kept) or after (new set complete), never between; only a crash can, and then the
folder has no meta.json. An interrupt raises KeyboardInterrupt (`Terminated` for SIGTERM) whose
message says truthfully what was left.
"""

import contextlib
import errno
import fcntl
import os
import re
import shutil
import signal
import sys
import threading
from pathlib import Path

from prep.errors import PrepareError

PAUSE_ENV = "NANOGPT_DATA_PAUSE_AT"  # tests only: see the module docstring
LOCK_NAME = ".prepare.lock"
RECORD_NAME = "meta.json"
# The files a run owns: after a commit the folder holds exactly the ones this run wrote.
OUTPUT_NAMES = ("train.bin", "val.bin", "meta.pkl", RECORD_NAME)
# Every temporary name the project writes: ".prepare.<pid>.tmp" (a staging folder) and
# ".<name>.<pid>.tmp" (a file being written beside its final name).
TEMPORARY_NAME = re.compile(r"^\.(.+)\.\d+\.tmp$")  # group 1: the final name


# The folders this process has committed: what an interrupt message may say was done.
COMMITTED = []
# The folders whose lock this process holds -> our pid (a POSIX lock is dropped when its process
# closes any descriptor of the file, so we must never open it a second time; a forked child
# inherits this dict but not the lock, hence the pid).
_HELD = {}


def interrupted_message(what="interrupted"):
    """What to tell the user about the output folders when an interrupt ends the program."""
    if COMMITTED:
        return f"{what} after the new outputs in {', '.join(map(str, COMMITTED))} were complete"
    return f"{what} before any output folder was changed"


class FolderBusy(PrepareError):
    """Another live process holds the folder's lock."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that the same cleanup runs (exit code 143, not 130)."""


@contextlib.contextmanager
def output_folder(out_dir):
    """Lock `out_dir` (created if needed), yield a staging folder, commit it if the block succeeds.

    See the module docstring for the order of operations and what a crash leaves. A process
    that holds out_dir's lock already (see `folder_lock`) keeps it and does not lock again.
    """
    with folder_lock(out_dir) as folder:
        _remove_leftovers(folder)
        staging = folder / f".prepare.{os.getpid()}.tmp"
        _create_staging(staging)
        try:
            with _sigterm_raises_terminated():
                yield staging
                _commit(staging, folder)
        except OSError as exc:  # no space, quota, file too large, I/O error...
            raise PrepareError(_failure_message(exc, folder)) from None
        except KeyboardInterrupt as exc:
            what = "terminated" if isinstance(exc, Terminated) else "interrupted"
            if folder in COMMITTED:  # held back during the commit, raised as it ended
                raise type(exc)(f"{what} after the new outputs in {folder} were complete") from None
            raise type(exc)(
                f"{what}; the outputs in {folder} were left as they were (nothing was replaced)"
            ) from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def folder_lock(out_dir):
    """Hold `out_dir`'s lock (step 1; the folder is created if needed) for the block; yield it.

    For a run whose commit comes later in the same process, such as the datatrove engine on
    this machine: it holds the lock from the start, and its last task's `output_folder` goes on
    under it. Re-entrant: in a process that holds the lock already, the block just runs (a
    second descriptor of the lock file, once closed, would drop our POSIX lock).
    """
    folder = _make_folder(Path(out_dir))
    if _HELD.get(folder.resolve()) == os.getpid():
        yield folder
        return
    with _folder_lock(folder):
        yield folder


def leftover_temporaries(folder):
    """The temporary files and folders a killed run left in `folder`, by name, sorted."""
    with contextlib.suppress(OSError):
        return sorted(
            entry.name for entry in os.scandir(folder) if TEMPORARY_NAME.match(entry.name)
        )
    return []


def lock_holder(folder):
    """Who holds `folder`'s lock, "pid N: command", if another live process does; else None."""
    if _HELD.get(Path(folder).resolve()) == os.getpid():
        # ours: opening and closing the lock file again would drop our POSIX lock
        return None
    try:
        fd = os.open(Path(folder) / LOCK_NAME, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            return _describe_holder(fd)
        raise
    finally:
        os.close(fd)  # closing drops our own shared lock, if we got it
    return None


# ---------------------------------------------------------------------------------------------
# the steps


def _make_folder(folder):
    if folder.exists() and not folder.is_dir():
        raise PrepareError(f"--out-dir {folder} is a file, not a folder; choose another path")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PrepareError(
            f"cannot create the output folder {folder}: {exc.strerror}; choose another --out-dir"
        ) from None
    return folder


@contextlib.contextmanager
def _folder_lock(folder):
    path = folder / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise PrepareError(
            f"cannot write into the output folder {folder}: {exc.strerror}; "
            f"choose a writable --out-dir"
        ) from None
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            raise FolderBusy(
                f"{folder} is being prepared by another run ({_describe_holder(fd)}); "
                f"wait for it to finish, or choose another --out-dir"
            ) from None
        command = " ".join([Path(sys.executable).name, *sys.argv])
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {command}\n".encode(errors="backslashreplace"), 0)
        _HELD[folder.resolve()] = os.getpid()
        try:
            yield
        finally:
            del _HELD[folder.resolve()]
    finally:
        os.close(fd)  # releases the lock


def _describe_holder(fd):
    record = os.pread(fd, 4096, 0).decode(errors="replace").strip()
    pid, _, command = record.partition(" ")
    return f"pid {pid}: {command}" if pid.isdigit() else "a process that has not said which"


def _remove_leftovers(folder):
    names = leftover_temporaries(folder)
    for name in names:
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    if names:
        print(f"removed {len(names)} temporary file(s) left in {folder} by an interrupted run")


def _create_staging(staging):
    try:
        staging.mkdir()
    except OSError as exc:
        raise PrepareError(
            f"cannot write into the output folder {staging.parent}: {exc.strerror}; "
            f"choose a writable --out-dir"
        ) from None


def _commit(staging, folder):
    staged = sorted(
        entry.name for entry in os.scandir(staging) if not TEMPORARY_NAME.match(entry.name)
    )
    if RECORD_NAME not in staged:
        raise PrepareError(f"nothing to commit in {folder}: no {RECORD_NAME} was written")
    stale = [name for name in OUTPUT_NAMES if name not in staged and (folder / name).exists()]
    for name in staged + stale:
        target = folder / name
        if target.is_dir() and not target.is_symlink():
            raise PrepareError(
                f"{target} is a folder where the output {name} goes; move it away and run again "
                f"(nothing in {folder} was changed)"
            )
    for name in staged:
        _fsync_path(staging / name)
    data_files = [name for name in staged if name != RECORD_NAME]
    _pause_if_asked("staged")
    with _signals_held():
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / RECORD_NAME)
            _fsync_path(folder)
            _pause_if_asked("uncommitted")
            for name in data_files:
                os.replace(staging / name, folder / name)
                _pause_if_asked("replaced")
            for name in stale:
                os.unlink(folder / name)
            _fsync_path(folder)
            os.replace(staging / RECORD_NAME, folder / RECORD_NAME)
            _fsync_path(folder)
            COMMITTED.append(folder)
            _pause_if_asked("committed")
        except OSError as exc:
            raise PrepareError(
                f"cannot replace the outputs in {folder} ({exc.strerror}: {exc.filename}); "
                f"the folder is now incomplete (no {RECORD_NAME}): fix the cause and run again"
            ) from None
    for name in stale:
        print(f"removed {folder / name}, left by an earlier run that this one does not replace")


def _failure_message(exc, folder):
    """An OSError while the outputs were staged, as one line: what, where, and that nothing changed.

    OSError(ENOSPC, ...) -> "cannot finish the outputs in out: No space left on device; nothing
    was replaced (the previous outputs are whole): free some space and run again"
    """
    reason = exc.strerror or str(exc)
    if exc.filename:  # a staged name like .prepare.12.tmp/.train.bin.12.tmp -> train.bin
        name = TEMPORARY_NAME.sub(r"\1", Path(exc.filename).name)
        reason += f" ({name})"
    hint = {
        errno.ENOSPC: "free some space and run again",
        errno.EDQUOT: "free some space (your disk quota is full) and run again",
        errno.EFBIG: "the file size limit (ulimit -f) is too small for these outputs",
    }.get(exc.errno, "fix the cause and run again")
    return (
        f"cannot finish the outputs in {folder}: {reason}; nothing was replaced "
        f"(the previous outputs are whole): {hint}"
    )


def _pause_if_asked(step):
    if os.environ.get(PAUSE_ENV) == step:
        os.kill(os.getpid(), signal.SIGSTOP)


def _fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _signals_held():
    """Hold back Ctrl-C and SIGTERM for the block; one that arrived meanwhile is raised after."""
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def _sigterm_raises_terminated():
    """SIGTERM raises Terminated in this process (its forked workers keep the default).

    Only the main thread may set a signal handler: in another one (a task run by a thread of
    some cluster executor) SIGTERM keeps its handler.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _raise_terminated(_signum, _frame):
    raise Terminated()


def _sigterm_default_in_forked_child():
    """A worker forked while SIGTERM raises Terminated (datasets' map workers) dies of SIGTERM.

    A Python signal handler runs between bytecodes only: a SIGTERM that lands just before the
    worker blocks in a C call (waiting for the lock of its pool's task queue) is never handled,
    the worker lives on, and Pool.terminate, which datasets calls when a worker raised, waits for
    it forever. The default action ends the worker in the kernel, at once.
    """
    if signal.getsignal(signal.SIGTERM) is _raise_terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


os.register_at_fork(after_in_child=_sigterm_default_in_forked_child)
