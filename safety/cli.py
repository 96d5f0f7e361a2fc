"""The command line: `run_main` (a failure is one `error:` line, never a traceback, with the
project's signals), and the checked numbers of the options; the argument parser every command
shares is bpe.cli's (one-line usage errors, "did you mean")."""

import argparse
import math
import os
import signal
import threading

from bpe import cli as bpe_cli

from .commit import interrupted_message
from .errors import PrepareError
from .signals import (
    IN_RUN_MAIN,
    SIGNALS_RECEIVED,
    Terminated,
    end_children,
    raise_interrupt,
    sigterm_raises_terminated,
)


def run_main(main):
    """Run `main()` as bpe.cli.run_main runs a command (a PrepareError is one `error: ...` line
    and exit code 1; any other failure one line too), with the project's signals.

    A stdout closed by its reader (`| head -1`) ends the command quietly, exit code 141.
    Ctrl-C (exit code 130) and SIGTERM (143, raised as `Terminated` for the whole run) say what
    they left: the folder commit's message when they stopped a run staging its outputs; the
    worker processes the run started are ended with it (`end_children`).
    """
    IN_RUN_MAIN.append(os.getpid())
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, raise_interrupt)  # recorded too (SIGNALS_RECEIVED)

    def with_signals():
        with sigterm_raises_terminated():
            main()
        if SIGNALS_RECEIVED:  # its exception was lost on the way: the run is still interrupted
            raise Terminated() if SIGNALS_RECEIVED[0] == signal.SIGTERM else KeyboardInterrupt()

    bpe_cli.run_main(with_signals, PrepareError, interrupted, end_children)


def interrupted(exc):
    """The line and exit code of a run stopped by Ctrl-C or SIGTERM, its workers ended."""
    what = "terminated" if isinstance(exc, Terminated) else "interrupted"
    end_children()
    return f"error: {str(exc) or interrupted_message(what)}", 143 if what == "terminated" else 130


def fraction(text):
    """A number strictly between 0 and 1: "0.0005" -> 0.0005; "nan", "inf", "0", "1" -> error."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and 0 < value < 1):
        raise argparse.ArgumentTypeError(f"{text} is not a number strictly between 0 and 1")
    return value


def whole_number(text):
    """The integer `text` names: "12" -> 12; "1.5", "x" -> error."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def random_seed(text):
    """A random seed numpy accepts, 0 to 2**32 - 1: "2357" -> 2357; "-1" -> error."""
    value = whole_number(text)
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 2**32 - 1")
    return value


def positive_int(text):
    """A whole number of at least 1 (processes, workers): "4" -> 4; "0" -> error."""
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is less than 1")
    return value


def tokens_per_shard(text):
    """Tokens per shard: 1 to 2**31 - 1 (llm.c's header counts them in an int32)."""
    value = positive_int(text)
    if value >= 2**31:
        raise argparse.ArgumentTypeError(f"{text} is not below 2**31 (an llm.c shard's limit)")
    return value


def default_num_proc():
    """The CPUs this process may use, at most 8 (nanoGPT's default): 2 on a 2-core machine."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(8, cpus or 1))
