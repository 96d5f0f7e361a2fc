"""Every command's argument parser, `run_main` (a failure is one `error:` line, never a
traceback), and the checked numbers of the options."""

import argparse
import difflib
import math
import os
import signal
import sys
import threading
from pathlib import Path

from .commit import interrupted_message
from .errors import PrepareError
from .signals import (
    IN_RUN_MAIN,
    SIGNALS_RECEIVED,
    Terminated,
    closed_stdout,
    end_children,
    raise_interrupt,
    sigterm_raises_terminated,
)
from .text import shortened

DEBUG_ENV = "NANOGPT_DEBUG"  # NANOGPT_DEBUG=1: an unexpected exception shows its traceback


def run_main(main):
    """Run `main()`; a PrepareError becomes one `error: ...` line on stderr and exit code 1.

    A closed stdout (`| head -1`) exits 141 quietly; Ctrl-C 130 and SIGTERM 143, saying what
    they left, its workers ended; any other exception is one line (traceback: NANOGPT_DEBUG=1).
    """
    IN_RUN_MAIN.append(os.getpid())
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, raise_interrupt)  # recorded too (SIGNALS_RECEIVED)
    # a file name that is not valid UTF-8 must not turn a print into a crash
    sys.stdout.reconfigure(errors="backslashreplace")
    sys.stderr.reconfigure(errors="backslashreplace")
    try:
        with sigterm_raises_terminated():
            main()
        if SIGNALS_RECEIVED:  # its exception was lost on the way: the run is still interrupted
            raise Terminated() if SIGNALS_RECEIVED[0] == signal.SIGTERM else KeyboardInterrupt()
        sys.stdout.flush()  # a closed stdout shows here, not as Python's message at exit
    except PrepareError as exc:
        exit_with(f"error: {exc}", 1)
    except KeyboardInterrupt as exc:
        end_children()
        what = "terminated" if isinstance(exc, Terminated) else "interrupted"
        line = f"error: {str(exc) or interrupted_message(what)}"
        exit_with(line, 143 if what == "terminated" else 130, at_once=True)
    except OSError as exc:
        if closed_stdout(exc):  # exit 141 (128 + SIGPIPE, as a Unix tool would), no message
            end_children()
            # the interpreter's last flush of stdout then finds nothing to complain about
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(141)
        where = f"{exc.filename}: " if exc.filename else ""
        exit_with(f"error: {where}{exc.strerror or exc}", 1)
    except BaseException as exc:  # the last resort: a case no code foresaw, still one line
        # a panic of Rust code (tiktoken's) is one too, though not an Exception; sys.exit is none
        failed = isinstance(exc, Exception) or type(exc).__name__ == "PanicException"
        if not failed or os.environ.get(DEBUG_ENV) == "1":
            raise
        where = getattr(exc, "nanogpt_reading", None)  # see safety.errors.reading
        if isinstance(exc, RecursionError):
            what = "nested too deeply to read (RecursionError)"
        else:
            what = f"{type(exc).__name__}: {shortened(exc)}".rstrip(": ")
        where = f"{where}: " if where else ""
        exit_with(f"error: {where}{what}; set {DEBUG_ENV}=1 to see the traceback", 1)


def fraction(text):
    """A number strictly between 0 and 1: "0.0005" -> 0.0005; "nan", "inf", "0", "1" -> error."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    between = math.isfinite(value) and 0 < value < 1
    return _checked(value, between, f"{text} is not a number strictly between 0 and 1")


def whole_number(text):
    """The integer `text` names: "12" -> 12; "1.5", "x" -> error."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{shortened(text)!r} is not a whole number") from None


def random_seed(text):
    """A random seed numpy accepts, 0 to 2**32 - 1: "2357" -> 2357; "-1" -> error."""
    value = whole_number(text)
    return _checked(value, 0 <= value < 2**32, f"{text} is not between 0 and 2**32 - 1")


def non_negative_int(text):
    """A whole number of 0 or more (a token id, a number of merges): "0" -> 0; "-1" -> error."""
    value = whole_number(text)
    return _checked(value, value >= 0, f"{shortened(text)} is less than 0")


def positive_int(text):
    """A whole number of at least 1 (processes, workers): "4" -> 4; "0" -> error."""
    value = whole_number(text)
    return _checked(value, value >= 1, f"{shortened(text)} is less than 1")


def tokens_per_shard(text):
    """Tokens per shard: 1 to 2**31 - 1 (an llm.c header's int32)."""
    value = positive_int(text)
    return _checked(value, value < 2**31, f"{text} is not below 2**31 (an llm.c shard's limit)")


def _checked(value, good, problem):
    if not good:
        raise argparse.ArgumentTypeError(problem)
    return value


def default_num_proc():
    """The CPUs this process may use, at most 8 (nanoGPT's default): 2 on a 2-core machine."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(8, cpus or 1))


def exit_with(line, code, at_once=False):
    """Print the one error line and exit; `at_once` skips the exit handlers (a pool's may wait
    forever for a worker ended while it sent a result)."""
    print(" ".join(line.split("\n")), file=sys.stderr)
    if at_once:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


class ArgumentParser(argparse.ArgumentParser):
    """argparse.ArgumentParser with one-line usage errors (exit code 2), "did you mean", no
    abbreviations, and nanoGPT's underscore spellings (--out_dir is --out-dir)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        if sys.argv[0].endswith(".py"):  # "see data/shakespeare/prepare.py --help", as typed
            kwargs.setdefault("prog", sys.argv[0])
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        return super().parse_known_args(respelled(self, args), namespace)

    def _get_value(self, action, arg_string):
        # Path("") is Path("."): an empty --out-dir wrote into the current folder
        if action.type is Path and not arg_string.strip():
            name = "/".join(action.option_strings) or action.dest
            self.error(f"argument {name}: an empty path; give a file or a folder")
        return super()._get_value(action, arg_string)

    def error(self, message):
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def respelled(parser, args):
    """`args` with each --a_b option as --a-b (not past "--" or a subcommand); an unknown
    option is an error: ["--out_dir=x", "--seed", "1"] -> ["--out-dir=x", "--seed", "1"]."""
    known = set(parser._option_string_actions)
    commands = [a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    respelled = []
    for i, token in enumerate(args):
        if token == "--" or (commands and token in commands[0]):
            return respelled + args[i:]
        name, equals, value = token.partition("=")
        if name.startswith("--") and " " not in name and name not in known:
            dashed = name.replace("_", "-")
            if dashed not in known:
                parser.error(unknown_option(name, known))
            token = dashed + equals + value
        respelled.append(token)
    return respelled


# What one command calls an option another calls otherwise
SAME_OPTION = {
    "--input": "--data-files",
    "--data-files": "--input",
    "--out": "--out-dir",
    "--out-dir": "--out",
    "--output": "--out-dir",
}


def unknown_option(name, known):
    """ "--tokenzier" -> "unrecognized option --tokenzier; did you mean --tokenizer?" """
    long_options = sorted(option for option in known if option.startswith("--"))
    close = difflib.get_close_matches(name.replace("_", "-"), long_options, n=1, cutoff=0.6)
    same = [SAME_OPTION[name]] if SAME_OPTION.get(name) in known else []
    hint = close or same
    return f"unrecognized option {name}" + (f"; did you mean {hint[0]}?" if hint else "")
