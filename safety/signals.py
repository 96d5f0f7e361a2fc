"""Ctrl-C and SIGTERM as exceptions a run can clean up after, and the moments they must wait.

A worker forked meanwhile keeps SIGTERM's default action, and leaves Ctrl-C to its parent.
"""

import contextlib
import os
import signal
import stat
import sys
import threading


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that the same cleanup runs (exit code 143, not 130)."""


# Ctrl-C and SIGTERM as they arrive: a handler's exception raised in a __del__ is lost, and
# run_main still ends the run as interrupted.
SIGNALS_RECEIVED = []
IN_RUN_MAIN = []  # the pid of a process whose main runs under run_main (its forks inherit it)
_FORK_HANDLER = []  # whether the fork handlers are registered (once, not at import)


@contextlib.contextmanager
def signals_held():
    """Hold back Ctrl-C and SIGTERM for the block; one that arrived meanwhile is raised after."""
    # handlers, not a signal mask: numpy's OpenBLAS threads do not block a signal
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; this one's interrupts are not held back
        return
    arrived = []
    held = [n for n in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(n) != signal.SIG_IGN]
    handlers = {number: signal.signal(number, lambda n, _: arrived.append(n)) for number in held}
    try:
        yield
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
    if arrived:
        raise Terminated() if arrived[0] == signal.SIGTERM else KeyboardInterrupt()


@contextlib.contextmanager
def sigterm_raises_terminated():
    """SIGTERM raises Terminated in this process's main thread (forked workers keep the default)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if hasattr(os, "register_at_fork") and not _FORK_HANDLER:  # once; Windows forks no worker
        os.register_at_fork(
            before=_block_sigterm_for_fork,
            after_in_parent=_unblock_after_fork,
            after_in_child=_sigterm_default_in_forked_child,
        )
        _FORK_HANDLER.append(True)
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _raise_terminated(_signum, _frame):
    SIGNALS_RECEIVED.append(signal.SIGTERM)
    raise Terminated()


def raise_interrupt(_signum, _frame):
    SIGNALS_RECEIVED.append(signal.SIGINT)
    raise KeyboardInterrupt()


def _sigterm_default_in_forked_child():
    """A forked worker dies of SIGTERM in the kernel (a Python handler would wait for a C call
    to return: Pool.terminate could wait forever), and under run_main ignores Ctrl-C."""
    if signal.getsignal(signal.SIGTERM) is _raise_terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if IN_RUN_MAIN and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    _unblock_after_fork()


def end_children():
    """SIGKILL the worker processes this process started with multiprocessing."""
    for name in ("multiprocessing", "multiprocess"):  # the stdlib's, and datasets'/datatrove's fork
        with contextlib.suppress(Exception):  # a module not imported is None: no children
            for child in sys.modules.get(name).active_children():
                with contextlib.suppress(Exception):
                    child.kill()


_MASK_BEFORE_FORK = {}  # each forking thread's mask, restored on both sides after the fork


def _block_sigterm_for_fork():
    """Block SIGTERM across a fork: a child could drop it before its action is set."""
    if signal.getsignal(signal.SIGTERM) is _raise_terminated:
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        _MASK_BEFORE_FORK[threading.get_ident()] = mask


def _unblock_after_fork():
    previous = _MASK_BEFORE_FORK.pop(threading.get_ident(), None)
    if previous is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def closed_stdout(exc):
    """Whether `exc` is a write to a stdout pipe nobody reads any more (`... | head -1`)."""
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
