"""Ctrl-C and SIGTERM as exceptions a run can clean up after, and the moments they must wait.

- SIGTERM raises `Terminated` (a KeyboardInterrupt: the same cleanup as Ctrl-C, exit code 143)
  while `sigterm_raises_terminated` is in force;
- `signals_held` holds both back for a few renames (the folder commit) and raises after;
- a worker forked meanwhile keeps SIGTERM's default action, and leaves Ctrl-C to its parent;
- `end_children` ends the worker processes a run started, so an interrupt leaves none behind.
"""

import contextlib
import os
import signal
import stat
import sys
import threading


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that the same cleanup runs (exit code 143, not 130)."""


# Ctrl-C and SIGTERM as they arrive. The exception a handler raises is lost if it lands in a
# __del__ or a weakref callback (Python prints "Exception ignored" and goes on): run_main then
# still ends the run as interrupted, after it (see run_main).
SIGNALS_RECEIVED = []
IN_RUN_MAIN = []  # the pid of a process whose main runs under run_main (its forks inherit it)
_FORK_HANDLER = []  # whether the fork handler is registered (once, when first needed)


@contextlib.contextmanager
def signals_held():
    """Hold back Ctrl-C and SIGTERM for the block; one that arrived meanwhile is raised after."""
    # Python runs a signal's handler in the main thread whichever thread the kernel gave the
    # signal to (numpy's OpenBLAS threads do not block it), so a signal mask is not enough: the
    # handlers themselves only note what arrives meanwhile, and it is raised after the block.
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
    """SIGTERM raises Terminated in this process (its forked workers keep the default).

    Only the main thread may set a signal handler: in another one (a task run by a thread of
    some cluster executor) SIGTERM keeps its handler.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    install_fork_handler()
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
    """A worker forked while SIGTERM raises Terminated (datasets' map workers) dies of SIGTERM,
    and a worker forked under run_main ignores Ctrl-C (its main process ends it).

    A Python signal handler runs between bytecodes only: a SIGTERM that lands just before the
    worker blocks in a C call (waiting for the lock of its pool's task queue) is never handled,
    the worker lives on, and Pool.terminate waits for it forever. The default action ends the
    worker in the kernel, at once; a SIGTERM sent during the fork was held back
    (`_block_sigterm_for_fork`) and is delivered only now, under that action.
    """
    if signal.getsignal(signal.SIGTERM) is _raise_terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if IN_RUN_MAIN and threading.current_thread() is threading.main_thread():
        # Ctrl-C reaches the whole group: a worker (a pool's, datatrove's) leaves it to the
        # main process, which ends its workers (end_children) and says one line
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    _unblock_after_fork()


def end_children():
    """End (SIGKILL) the worker processes this process started with multiprocessing (a pool's
    workers, a Manager): an interrupted run leaves no process behind."""
    for name in ("multiprocessing", "multiprocess"):  # the stdlib's, and datasets'/datatrove's fork
        module = sys.modules.get(name)
        if module is None:
            continue
        with contextlib.suppress(Exception):
            for child in module.active_children():
                with contextlib.suppress(Exception):
                    child.kill()


# The signal mask each forking thread had before the fork, restored on both sides after it
_MASK_BEFORE_FORK = {}


def _block_sigterm_for_fork():
    """Block SIGTERM across a fork while it raises Terminated: CPython drops a signal that reaches
    the child before its after-fork handler has set its action (Pool.terminate right after a short
    map sends one then), and Pool.terminate would wait forever for the worker that missed it.
    In the parent, a SIGTERM that lands during the fork is raised when the run ends (run_main)."""
    if signal.getsignal(signal.SIGTERM) is _raise_terminated:
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        _MASK_BEFORE_FORK[threading.get_ident()] = mask


def _unblock_after_fork():
    previous = _MASK_BEFORE_FORK.pop(threading.get_ident(), None)
    if previous is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def install_fork_handler():
    """Register the fork handlers, once (not at import): a fork blocks SIGTERM until the child
    has set its action (`_sigterm_default_in_forked_child`)."""
    if hasattr(os, "register_at_fork") and not _FORK_HANDLER:  # Windows forks no worker
        os.register_at_fork(
            before=_block_sigterm_for_fork,
            after_in_parent=_unblock_after_fork,
            after_in_child=_sigterm_default_in_forked_child,
        )
        _FORK_HANDLER.append(True)


def closed_stdout(exc):
    """Whether `exc` is a write to a stdout nobody reads any more (`... | head -1`, head has
    exited): a BrokenPipeError naming no file, while stdout is a pipe whose reader is gone. Not
    an error of the run: the command ends quietly, as a Unix tool does (see safety.cli.run_main)."""
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
