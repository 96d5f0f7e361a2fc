"""The command line of every command, bpe's and the project's: the argument parser (one-line
usage errors, "did you mean", nanoGPT's underscore spellings) and `run_main` (a failure is one
`error:` line, never a traceback). The project's safety.cli.run_main adds its signals to it.
"""

import argparse
import difflib
import os
import stat
import sys

from .text import shortened

DEBUG_ENV = "NANOGPT_DEBUG"  # NANOGPT_DEBUG=1: an unexpected exception shows its traceback


def run_main(main, user_errors=(), interrupted=None, end_children=lambda: None):
    """Run `main()`; an exception of `user_errors` (a problem the user can fix) becomes one
    `error: ...` line on stderr and exit code 1.

    A stdout closed by its reader (`| head -1`) ends the command quietly, exit code 141, after
    `end_children()`. Ctrl-C exits with code 130, or with the line and code `interrupted(exc)`
    gives. An OSError no code turned into a clearer message still gets one line (with the file
    it names), and so does, as a last resort, any other exception (with what was being read,
    see safety.errors.reading): the traceback only with NANOGPT_DEBUG=1.
    """
    # a file name that is not valid UTF-8 must not turn a print into a crash
    sys.stdout.reconfigure(errors="backslashreplace")
    sys.stderr.reconfigure(errors="backslashreplace")
    try:
        main()
        sys.stdout.flush()  # a closed stdout shows here, not as Python's message at exit
    except user_errors as exc:
        exit_with(f"error: {exc}", 1)
    except KeyboardInterrupt as exc:
        if interrupted is None:
            sys.exit(130)
        exit_with(*interrupted(exc), at_once=True)
    except OSError as exc:
        if closed_stdout(exc):
            quiet_exit(end_children)
        where = f"{exc.filename}: " if exc.filename else ""
        exit_with(f"error: {where}{exc.strerror or exc}", 1)
    except BaseException as exc:  # the last resort: a case no code foresaw, still one line
        # a panic of Rust code (tiktoken's) is one too, though not an Exception; sys.exit is none
        failed = isinstance(exc, Exception) or type(exc).__name__ == "PanicException"
        if not failed or os.environ.get(DEBUG_ENV) == "1":
            raise
        exit_with(f"error: {unexpected_message(exc)}", 1)


def quiet_exit(end_children):
    """stdout was closed by its reader (`| head -1`): exit 141 (128 + SIGPIPE, what a shell
    shows for a Unix tool that SIGPIPE ended) with no message. stdout is pointed at /dev/null
    first, so that the interpreter's last flush of it finds nothing to complain about."""
    end_children()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(141)


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


def exit_with(line, code, at_once=False):
    """Print the one error line and exit; `at_once` skips the exit handlers (a pool's, which may
    wait forever for a worker that was ended while it sent a result)."""
    print(" ".join(line.split("\n")), file=sys.stderr)
    if at_once:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


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


class ArgumentParser(argparse.ArgumentParser):
    """argparse.ArgumentParser as every command of the project parses its options.

    - a usage error is one line, exit code 2: `error: ... (see PROG --help)`
    - a misspelled option is named with the closest one: "--tokenzier" -> did you mean --tokenizer?
      (no abbreviations: "--tok" is not taken for --tokenizer, and so is never a surprise)
    - nanoGPT's underscore spellings answer too: --out_dir is --out-dir, --vocab_size=4096 is
      --vocab-size=4096 (not shown in --help: one spelling is documented)
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        if sys.argv[0].endswith(".py"):  # "see data/shakespeare/prepare.py --help", as typed
            kwargs.setdefault("prog", sys.argv[0])
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        return super().parse_known_args(respelled(self, args), namespace)

    def error(self, message):
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def respelled(parser, args):
    """`args` with each --a_b option (nanoGPT's spelling) as --a-b; an unknown option is an error.

    ["--out_dir=x", "--seed", "1"] -> ["--out-dir=x", "--seed", "1"]; ["--sead", "1"] -> error
    "unrecognized option --sead; did you mean --seed?". Values are left as they are, and so is
    everything after "--". A parser with subcommands leaves their options to their own parsers.
    """
    known = set(parser._option_string_actions)
    commands = [
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    ]
    respelled = []
    for i, token in enumerate(args):
        if token == "--" or (commands and token in commands[0].choices):
            return respelled + args[i:]
        name, equals, value = token.partition("=")
        if name.startswith("--") and " " not in name and name not in known:
            dashed = name.replace("_", "-")
            if dashed not in known:
                parser.error(unknown_option(name, known))
            token = dashed + equals + value
        respelled.append(token)
    return respelled


# What one command calls an option another calls otherwise: the text lessons read one file
# (--input), the document lessons files (--data-files); train_tokenizer.py writes one file (--out).
SAME_OPTION = {
    "--input": "--data-files",
    "--data-files": "--input",
    "--out": "--out-dir",
    "--out-dir": "--out",
    "--output": "--out-dir",
}


def unknown_option(name, known):
    """ "--tokenzier" -> "unrecognized option --tokenzier; did you mean --tokenizer?";
    "--input" where the command takes --data-files -> "...; did you mean --data-files?" """
    long_options = sorted(option for option in known if option.startswith("--"))
    close = difflib.get_close_matches(name.replace("_", "-"), long_options, n=1, cutoff=0.6)
    same = [SAME_OPTION[name]] if SAME_OPTION.get(name) in known else []
    hint = close or same
    return f"unrecognized option {name}" + (f"; did you mean {hint[0]}?" if hint else "")
