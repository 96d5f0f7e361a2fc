"""Started by every Python process of a test run (PYTHONPATH): this machine made to look like
Windows or macOS where it matters to the lessons. fcntl, signal.pthread_sigmask and
os.sched_getaffinity are gone; the folder commit finds a msvcrt whose `locking` is Windows's,
built on this machine's POSIX locks; new processes start with spawn, not fork."""

import builtins
import fcntl as _fcntl
import multiprocessing
import os
import signal
import types
import warnings


def _locking(fd, mode, nbytes):
    """msvcrt.locking: lock (or unlock) `nbytes` from the file's current position, no waiting."""
    start = os.lseek(fd, 0, os.SEEK_CUR)
    if mode == _msvcrt.LK_UNLCK:
        _fcntl.lockf(fd, _fcntl.LOCK_UN, nbytes, start)
        return
    # Windows locks a read-only file too; POSIX takes only a shared lock on one
    writable = (_fcntl.fcntl(fd, _fcntl.F_GETFL) & os.O_ACCMODE) != os.O_RDONLY
    try:
        _fcntl.lockf(
            fd, (_fcntl.LOCK_EX if writable else _fcntl.LOCK_SH) | _fcntl.LOCK_NB, nbytes, start
        )
    except BlockingIOError:
        raise PermissionError(13, "Permission denied") from None


_msvcrt = types.ModuleType("msvcrt")
_msvcrt.LK_UNLCK, _msvcrt.LK_LOCK, _msvcrt.LK_NBLCK, _msvcrt.LK_RLCK, _msvcrt.LK_NBRLCK = range(5)
_msvcrt.locking = _locking
_import = builtins.__import__


def _windows_import(name, globals=None, locals=None, fromlist=(), level=0):
    if name == "fcntl":
        raise ModuleNotFoundError("No module named 'fcntl'", name="fcntl")
    # only the folder commit: other modules (subprocess) take msvcrt as a sign of Windows
    if name == "msvcrt" and (globals or {}).get("__name__") == "safety.commit":
        return _msvcrt
    return _import(name, globals, locals, fromlist, level)


builtins.__import__ = _windows_import
warnings.filterwarnings("ignore", "only soft file lock is available")  # filelock, fcntl gone
del signal.pthread_sigmask
del os.sched_getaffinity
multiprocessing.set_start_method("spawn", force=True)
try:
    import multiprocess  # datasets' and datatrove's dill-based copy of multiprocessing
except ImportError:
    pass
else:
    multiprocess.set_start_method("spawn", force=True)
