"""A problem the user can fix is a PrepareError: one line, no traceback (see cli.run_main)."""

import contextlib
import os
import stat
import sys

from bpe.text import shortened  # a value quoted in an error line, cut

DEBUG_ENV = "NANOGPT_DEBUG"  # NANOGPT_DEBUG=1: an unexpected exception shows its traceback


class PrepareError(Exception):
    """A problem the user can fix: printed as one line, without a traceback, by `run_main`."""


def unexpected_message(exc):
    """One line for an exception no code turned into a PrepareError: what was being read, what
    went wrong. RecursionError(...) while reading deep.json -> "deep.json: nested too deeply
    (RecursionError); ..."."""
    where = getattr(exc, "nanogpt_reading", None)
    if isinstance(exc, RecursionError):
        what = "nested too deeply to read (RecursionError)"
    else:
        what = f"{type(exc).__name__}: {shortened(exc)}".rstrip(": ")
    return f"{where + ': ' if where else ''}{what}; set {DEBUG_ENV}=1 to see the traceback"


@contextlib.contextmanager
def reading(path):
    """Name `path` in the error line of any exception that escapes the block (the innermost
    `reading` wins): `with reading(meta_json): ...`."""
    try:
        yield
    except Exception as exc:
        if getattr(exc, "nanogpt_reading", None) is None:
            exc.nanogpt_reading = str(path)
        raise


def closed_stdout(exc):
    """Whether `exc` is a write to a stdout nobody reads any more (`... | head -1`, head has
    exited): a BrokenPipeError naming no file, while stdout is a pipe whose reader is gone. Not
    an error of the run: the command ends quietly, as a Unix tool does (see cli.run_main)."""
    if not isinstance(exc, BrokenPipeError) or exc.filename is not None:
        return False
    try:
        fd = sys.stdout.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        import select

        if not hasattr(select, "poll"):  # Windows: no poll, and a pipe's EPIPE is stdout's
            return True
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # stdout closed or replaced: not a pipe
        return False
