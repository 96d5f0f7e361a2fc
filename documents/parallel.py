"""A process pool over a stream, in order, reading only a few items ahead.

    for result in ordered_map(process, members(), processes=4, shared=(encoding,)):
        ...  # process(*item, encoding) for each item of members(), in the stream's order

Unlike Pool.imap, which reads its whole input at once, an item is read only when at most
`processes` are in flight. `shared` goes to every worker once. The workers ignore Ctrl-C and
exit if the parent dies.
"""

import contextlib
import gc
import multiprocessing
import os
import signal
import threading
import time
from collections import deque

_SHARED = ()  # in a worker: the pool's `shared` arguments


def ordered_map(function, items, processes, shared=()):
    """function(*item, *shared) for each item of the iterable `items`, yielded in order."""
    if processes < 2:
        for item in items:
            yield function(*item, *shared)
        return
    pool = start_pool(processes, _keep, (shared,))  # bpe's: Ctrl-C left to us, orphans exit
    pending, ended = deque(), False
    try:
        for item in items:
            pending.append(pool.apply_async(_call, (function, item)))
            if len(pending) > processes:  # one more queued: no worker waits for the next read
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()
        pool.close()
        pool.join()
        ended = True
    except GeneratorExit:  # the consumer stopped early (a budget met): no item is read further
        ended = True
        _let_finish(pool, pending)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM raised as one: end the workers at once
        end_workers(pool)
        ended = True  # Pool.terminate could now wait forever for a half-sent result
        raise
    finally:
        if not ended:  # an item failed: the others in flight finish too (see _let_finish)
            _let_finish(pool, pending)


def _let_finish(pool, pending):
    """The items in flight finish and the workers end (Pool.terminate could kill one half-way
    through sending a result, and then wait forever for the lock it holds)."""
    try:
        for result in pending:
            result.wait()
        pool.close()
        pool.join()
    except KeyboardInterrupt:
        end_workers(pool)
        raise


def _call(function, item):
    return function(*item, *_SHARED)


def _keep(shared):
    global _SHARED
    _SHARED = shared


def start_pool(processes, setup=None, setup_args=()):
    """A pool whose workers run setup(*setup_args), leave Ctrl-C to this process (a worker
    interrupted while sending would hang the pool) and exit if it goes."""
    block = hasattr(signal, "pthread_sigmask")
    if block:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    gc.freeze()  # forked workers: the collector leaves the parent's objects (and pages) alone
    try:
        initargs = (os.getpid(), setup, setup_args)
        return multiprocessing.Pool(processes, initializer=_worker_start, initargs=initargs)
    finally:
        gc.unfreeze()
        if block:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _worker_start(parent, setup, setup_args):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    exit_when_orphaned(parent)
    if setup is not None:
        setup(*setup_args)


def exit_when_orphaned(parent, every=0.2):
    """In a worker: a thread ends this process once `parent`, its parent, has gone."""

    def watch():
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def end_workers(pool):
    """Kill the pool's workers without waiting on the pool (see _let_finish)."""
    for worker in list(getattr(pool, "_pool", ())):
        with contextlib.suppress(Exception):
            worker.kill()
