"""The folder commit: a prepared folder changes as one transaction, like a git commit.

    with output_folder(out_dir, schema) as staging:  # out_dir locked; `staging` empty
        write_bin(staging / "train.bin", ...)  # every output, meta.json last of all
    # leaving the block without an error committed them: out_dir holds the new, complete set

A folder with a meta.json is complete: it is removed before the first data file is replaced
and written back last. The steps, and what a crash at each leaves:

1. lock `out_dir/.prepare.lock` (`fcntl.lockf`, non-blocking; msvcrt's on Windows) and write
   our pid and command in it; a busy folder is `FolderBusy` at once. The OS drops the lock when
   its holder dies; forked workers do not inherit a POSIX lock. The lock file is removed while
   still locked, so a run that locked a removed file locks again (`lock_file`). A failed run
   removes the folders it created and left empty. `folder_lock` takes the lock early.
2. clean: killed runs' staging folders (holding STAGING_MARKER) and atomic_path's temporaries
   are removed; the lock proves their writers gone. Nothing of the user's is taken for one.
3. stage into `out_dir/.prepare.<pid>.tmp/`: an error or interrupt removes it; a crash leaves
   it beside the untouched old outputs, for the next run to remove.
4. check: meta.json is staged, no output's place is a folder; every staged file is fsynced.
5. uncommit: the old meta.json is removed (a journal lists every name owned meanwhile).
6. replace each data file (`os.replace`), remove the old set's outputs this run did not write.
7. commit: meta.json is renamed into place. 8. the staging folder goes, the lock is released.

Ctrl-C and SIGTERM are held back during steps 5-7, so an interrupt lands before them (old set
kept) or after (new set complete); its message says truthfully what was left.
"""

import contextlib
import errno
import itertools
import json
import os
import re
import shutil
import stat
import sys
from pathlib import Path

from .errors import PrepareError
from .files import TEMPORARY_TAG, atomic_write_text, load_json, read_small_file
from .signals import Terminated, closed_stdout, signals_held, sigterm_raises_terminated

LOCK_NAME = ".prepare.lock"
WINDOWS_LOCK_OFFSET = 1 << 30  # the byte msvcrt locks: past the pid record, which stays readable
# Every name the folder owns while it has no meta.json, for the run after a crash there.
JOURNAL_NAME = ".prepare.journal"
RECORD_NAME = "meta.json"
# ".prepare.<pid>.tmp" (staging) and ".<name>.<pid>.<random>.tmp" (atomic_path); group 1: name
TEMPORARY_NAME = re.compile(r"^\.(.+)\.\d+(\.[^.]+)?\.tmp$")
STAGING_NAME = re.compile(r"^\.prepare\.\d+\.tmp$")
OUR_TEMPORARY_FILE = re.compile(rf"^\.(.+)\.\d+\.{TEMPORARY_TAG}[A-Za-z0-9_]+\.tmp$")
STAGING_MARKER = ".nanogpt-staging"  # only a staging folder holding it is a leftover of ours

COMMITTED, UNCOMMITTED = [], []  # the folders this process committed, or began to
# folder -> pid of its lock's holder here: closing a second descriptor would drop a POSIX lock,
# and a forked child inherits this dict but not the lock
_HELD = {}


def interrupted_message(what="interrupted"):
    """What to tell the user about the output folders when an interrupt ends the program."""
    if COMMITTED:
        return f"{what} after the new outputs in {', '.join(map(str, COMMITTED))} were complete"
    return f"{what} before any output folder was changed"


class FolderBusy(PrepareError):
    """Another live process holds the folder's lock."""


@contextlib.contextmanager
def output_folder(out_dir, schema):
    """Lock `out_dir` (created if needed), yield a staging folder, commit it if the block succeeds
    (`schema`, formats.schema, says which names a record lists and a trainer reads)."""
    with folder_lock(out_dir) as folder:
        # a commit's journal, cut short before or after meta.json: done with
        if os.path.lexists(folder / RECORD_NAME) and os.path.isfile(folder / JOURNAL_NAME):
            os.unlink(folder / JOURNAL_NAME)
        leftovers = leftover_temporaries(folder)
        for path in (folder / name for name in leftovers):
            if path.is_dir() and not path.is_symlink():
                _remove_staging(path)
            else:
                path.unlink()
        if leftovers:
            print(
                f"removed {len(leftovers)} temporary file(s) left in {folder} by an interrupted run"
            )
        _refuse_strangers(schema, folder, os.listdir(folder), READ_BY_A_TRAINER)
        staging = folder / f".prepare.{os.getpid()}.tmp"
        try:
            try:  # inside the cleanup: a half-made one is removed too
                staging.mkdir()
                marker = staging / STAGING_MARKER
                os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            except OSError as exc:
                raise _unwritable(folder, exc) from None
            with sigterm_raises_terminated():
                yield staging
                _commit(schema, staging, folder)
        except OSError as exc:  # no space, quota, file too large, I/O error...
            if closed_stdout(exc):  # `| head`: the run stops as if interrupted (run_main)
                raise
            raise PrepareError(_failure_message(exc, folder)) from None
        except KeyboardInterrupt as exc:
            what = "terminated" if isinstance(exc, Terminated) else "interrupted"
            if folder in COMMITTED:  # held back during the commit, raised as it ended
                raise type(exc)(f"{what} after the new outputs in {folder} were complete") from None
            if folder in UNCOMMITTED:  # not held back (not the main thread): between the renames
                raise type(exc)(
                    f"{what} while the outputs in {folder} were replaced: the folder is "
                    f"incomplete (no {RECORD_NAME}); run again"
                ) from None
            raise type(exc)(
                f"{what}; the outputs in {folder} were left as they were (nothing was replaced)"
            ) from None
        finally:
            with contextlib.suppress(OSError):
                _remove_staging(staging)


@contextlib.contextmanager
def folder_lock(out_dir):
    """Hold `out_dir`'s lock (re-entrant) for the block; yield the folder, which is created if
    needed and removed again, if empty, when the block fails."""
    folder = Path(out_dir)
    # the folders about to be created, deepest first: a/b/c with only a -> [a/b/c, a/b]
    created = list(itertools.takewhile(lambda p: not os.path.lexists(p), [folder, *folder.parents]))
    if folder.exists() and not folder.is_dir():
        raise PrepareError(f"--out-dir {folder} is a file, not a folder; choose another path")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PrepareError(
            f"cannot create the output folder {folder}: {exc.strerror}; choose another --out-dir"
        ) from None
    if _HELD.get(folder.resolve()) == os.getpid():
        yield folder
        return
    path = folder / LOCK_NAME
    try:
        fd = lock_file(folder, path)
        try:
            command = " ".join([Path(sys.executable).name, *sys.argv])
            try:
                os.ftruncate(fd, 0)
                os.lseek(fd, 0, os.SEEK_SET)
                os.write(fd, f"{os.getpid()} {command}\n".encode(errors="backslashreplace"))
            except OSError as exc:  # a full disk: the empty lock file made for it goes too
                if os.name != "nt" and _same_file(fd, path):
                    os.unlink(path)
                raise PrepareError(_failure_message(exc, folder)) from None
            _HELD[folder.resolve()] = os.getpid()
            try:
                yield folder
            finally:
                del _HELD[folder.resolve()]
                if os.name != "nt" and _same_file(fd, path):
                    os.unlink(path)  # still locked: a run that opened it meanwhile sees it gone
        finally:
            os.close(fd)  # releases the lock
            if os.name == "nt":  # Windows removes no open file: one another run opened stays
                with contextlib.suppress(OSError):
                    os.unlink(path)
    except BaseException:
        for path in created:  # out_dir first, then up
            try:
                os.rmdir(path)  # only an empty folder: nothing a user or another run put there
            except OSError:
                break
        raise


def leftover_temporaries(folder):
    """What killed runs left in `folder` (names, sorted); nothing of the user's, however named."""

    def ours(entry):
        if entry.is_dir(follow_symlinks=False):
            marker = os.path.join(entry.path, STAGING_MARKER)
            return STAGING_NAME.match(entry.name) and os.path.lexists(marker)
        return entry.is_file(follow_symlinks=False) and OUR_TEMPORARY_FILE.match(entry.name)

    with contextlib.suppress(OSError):
        return sorted(entry.name for entry in os.scandir(folder) if ours(entry))
    return []


def lock_holder(folder):
    """Who holds `folder`'s lock, "pid N: command", if another live process does; else None."""
    if _HELD.get(Path(folder).resolve()) == os.getpid() or not Path(folder).is_dir():
        return None  # ours: opening and closing the lock file again would drop it
    try:
        fd = _open_lock(Path(folder) / LOCK_NAME, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        return None if _try_lock(fd, exclusive=False) else _describe_holder(fd)
    finally:
        os.close(fd)  # closing drops our own shared lock, if we got it


def lock_file(folder, path):
    """Open `path` and lock it: its descriptor, or FolderBusy naming the run that holds it. A
    lock of a file no longer at `path` (removed by a run that ended) is taken again."""
    while True:
        try:
            fd = _open_lock(path, os.O_RDWR | os.O_CREAT)  # no link, no FIFO: a regular file
        except OSError as exc:
            raise _unwritable(folder, exc) from None
        try:
            if not _try_lock(fd):
                raise FolderBusy(
                    f"{folder} is being prepared by another run ({_describe_holder(fd)}); "
                    f"wait for it to finish, or choose another --out-dir"
                ) from None
            if _same_file(fd, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _same_file(fd, path):
    try:
        return os.path.samestat(os.fstat(fd), os.lstat(path))
    except FileNotFoundError:
        return False


def _open_lock(path, flags):
    """Open the lock file, only a regular one: never through a symlink, never blocking."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise PrepareError(_not_a_lock(path, "a symbolic link"))
    nofollow, nonblock = getattr(os, "O_NOFOLLOW", 0), getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | nofollow | nonblock, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PrepareError(_not_a_lock(path, "a symbolic link")) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise PrepareError(
            _not_a_lock(path, "a folder" if stat.S_ISDIR(mode) else "a FIFO or a device")
        )
    return fd


def _not_a_lock(path, what):
    return (
        f"{path} is {what}, not the regular file a lock must be: nothing was written; remove "
        f"it (it is not one this project made) and run again"
    )


def _try_lock(fd, exclusive=True):
    """Lock `fd` without waiting: True, or False if another process holds it (on Windows a
    shared lock is only a test, released at once)."""
    try:
        import fcntl
    except ImportError:
        import msvcrt

        os.lseek(fd, WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        if not exclusive:
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return True
    try:
        fcntl.lockf(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            return False
        raise
    return True


def _describe_holder(fd):
    os.lseek(fd, 0, os.SEEK_SET)
    pid, _, command = os.read(fd, 4096).decode(errors="replace").strip().partition(" ")
    return f"pid {pid}: {command}" if pid.isdigit() else "a process that has not said which"


def _remove_staging(staging):
    """Remove a staging folder, its marker last: killed half-way, it is still a leftover of ours."""
    marked = False
    for entry in os.scandir(staging):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        elif entry.name == STAGING_MARKER:
            marked = True
        else:
            os.unlink(entry.path)
    if marked:  # a folder half-made may have none
        os.unlink(staging / STAGING_MARKER)
    os.rmdir(staging)


def _unwritable(folder, exc):
    return PrepareError(
        f"cannot write into the output folder {folder}: {exc.strerror}; choose a writable --out-dir"
    )


def _staged_names(staging):
    """The files staged, sorted, "sub/name" for one in a staged subfolder."""
    names = []
    for entry in os.scandir(staging):
        if TEMPORARY_NAME.match(entry.name) or entry.name == STAGING_MARKER:
            continue
        if entry.is_dir(follow_symlinks=False):
            names += [f"{entry.name}/{name}" for name in _staged_names(entry.path)]
        else:
            names.append(entry.name)
    return sorted(names)


def _commit(schema, staging, folder):
    staged = _staged_names(staging)
    if RECORD_NAME not in staged:
        raise PrepareError(f"nothing to commit in {folder}: no {RECORD_NAME} was written")
    owned = owned_files(schema, folder)
    stale = [
        name for name in sorted(owned) if name not in staged and os.path.lexists(folder / name)
    ]
    for name in staged + stale:
        target = folder / name
        if target.is_dir() and not target.is_symlink():
            raise PrepareError(
                f"{target} is a folder where the output {name} goes; move it away and run again "
                f"(nothing in {folder} was changed)"
            )
    present = os.listdir(folder)  # and the names in the subfolders the outputs go into
    # each subfolder, and those it is in, of what goes in and what goes: never through a link
    parts = [name.split("/")[:-1] for name in staged + stale]
    for sub in sorted({"/".join(p[: k + 1]) for p in parts for k in range(len(p))}):
        path = folder / sub
        if os.path.islink(path) or (os.path.lexists(path) and not path.is_dir()):
            raise PrepareError(
                f"{path} is a link or a file where the outputs' folder {sub}/ goes; move "
                f"it away and run again (nothing in {folder} was changed)"
            )
        if path.is_dir():
            present += [f"{sub}/{name}" for name in os.listdir(path)]
    _refuse_strangers(schema, folder, staged)
    # the staged shard format ("llmc", "npy"): build-nanogpt's .npy shards, its own name rule
    record = load_json(read_small_file(staging / RECORD_NAME), staging / RECORD_NAME)
    shard_format = record.get("format") if isinstance(record, dict) else None
    _refuse_strangers(schema, folder, set(present) - set(staged), READ_BY_A_TRAINER, shard_format)
    for name in staged:
        _fsync_path(staging / name)
    data_files = [name for name in staged if name != RECORD_NAME]
    journal = {"owned": sorted(owned | set(staged))}  # a failure writing it changed nothing yet
    atomic_write_text(folder / JOURNAL_NAME, json.dumps(journal) + "\n")
    _fsync_path(folder)
    with signals_held():
        try:
            UNCOMMITTED.append(folder)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / RECORD_NAME)
            _fsync_path(folder)
            for name in data_files:
                (folder / name).parent.mkdir(parents=True, exist_ok=True)  # nanochat's, golf's
                os.replace(staging / name, folder / name)
            for name in stale:
                os.unlink(folder / name)
            for subfolder in {(folder / name).parent for name in staged + stale} - {folder}:
                _fsync_path(subfolder)
            _fsync_path(folder)
            os.replace(staging / RECORD_NAME, folder / RECORD_NAME)
            _fsync_path(folder)
            os.unlink(folder / JOURNAL_NAME)
            for subfolder in {(folder / name).parent for name in stale} - {folder}:
                with contextlib.suppress(OSError):  # emptied by the removals: it goes too
                    subfolder.rmdir()
            COMMITTED.append(folder)
        except OSError as exc:
            raise PrepareError(
                f"cannot replace the outputs in {folder} ({exc.strerror}: {exc.filename}); "
                f"the folder is now incomplete (no {RECORD_NAME}): fix the cause and run again"
            ) from None
    for name in stale:
        print(f"removed {folder / name}, left by an earlier run that this one does not replace")


def folder_outputs(schema, out_dir):
    """The files `out_dir` owns, as absolute paths: what a run replaces, so never its input."""
    folder = Path(out_dir).resolve()
    return {folder / name for name in owned_files(schema, folder)} if folder.is_dir() else set()


def owned_files(schema, folder):
    """The names `folder` owns: those its meta.json or its journal lists, never by pattern."""
    owned = set()
    for name in (RECORD_NAME, JOURNAL_NAME):
        path = folder / name
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        try:
            record = load_json(read_small_file(path), path)
        except PrepareError:  # unreadable: it vouches for nothing (its own name is still ours)
            record = None
        if name == RECORD_NAME:
            owned |= schema.listed_files(record, where=path)  # a name outside the folder: refused
        elif (problem := schema.journal_problem(record)) is not None:
            raise PrepareError(schema.refused_record(path, problem))
        elif isinstance(record, dict) and isinstance(record.get("owned"), list):
            owned |= set(record["owned"])
    return owned | {RECORD_NAME}


READ_BY_A_TRAINER = "a trainer would read it with this run's outputs"


def _refuse_strangers(schema, folder, names, fate=None, shard_format=None):
    """Refuse a file no record of the folder lists that an output would replace, or (`fate`
    READ_BY_A_TRAINER) that a trainer would read beside them."""
    owned = owned_files(schema, folder)
    for name in sorted(names):
        path = folder / name  # a folder in an output's way is the commit's to name
        if name in owned or not os.path.lexists(path) or os.path.isdir(path):
            continue
        if fate is not READ_BY_A_TRAINER or schema.trainer_reads(name, shard_format):
            raise PrepareError(
                f"{path} is not listed by a meta.json of this folder, and "
                f"{fate or 'an output of this run would replace it'}; move it away (or choose "
                f"another --out-dir) and run again"
            )


def _failure_message(exc, folder):
    """An OSError while the outputs were staged, as one line.

    OSError(ENOSPC, ...) -> "cannot finish the outputs in out: No space left on device; nothing
    was replaced (the previous outputs are whole): free some space and run again"
    """
    reason, name = exc.strerror or str(exc), exc.filename
    inside = os.path.join(os.path.abspath(folder), "")  # "out/": where the outputs are staged
    if isinstance(name, str) and os.path.abspath(name).startswith(inside):
        # a staged name like .prepare.12.tmp/.train.bin.12.tmp -> train.bin
        reason += " ({})".format(TEMPORARY_NAME.sub(r"\1", Path(name).name))
    elif name:  # a cache's file, maybe on a disk of its own: named whole
        reason = f"{name}: {reason}"
    hint = {
        errno.ENOSPC: "free some space and run again",
        errno.EDQUOT: "free some space (your disk quota is full) and run again",
        errno.EFBIG: "the file size limit (ulimit -f) is too small for these outputs",
    }.get(exc.errno, "fix the cause and run again")
    return (
        f"cannot finish the outputs in {folder}: {reason}; nothing was replaced "
        f"(the previous outputs are whole): {hint}"
    )


def _fsync_path(path):
    if os.name == "nt" and os.path.isdir(path):
        return  # Windows opens no folder to fsync it (NTFS journals the renames themselves)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def folder_tokenizer(tokenizer, staging):
    """meta.json's tokenizer record, its path relative when the file is in the folder (a moved
    folder still verifies); one trained into the staging folder is the set's ("trained_here")."""
    path = tokenizer.get("path") if isinstance(tokenizer, dict) else None
    staging = Path(staging).resolve()
    if not isinstance(path, str) or not (staging / STAGING_MARKER).is_file():
        return tokenizer
    path = Path(path).resolve()
    if path.parent == staging:
        return {**tokenizer, "path": path.name, "trained_here": True}
    return {**tokenizer, "path": path.name} if path.parent == staging.parent else tokenizer
