"""`python -m bpe show ...`: see a tokenizer at work (bpe/show.py).

`python -m bpe --help` (or -h) prints the usage. A problem the user can fix is one `error: ...`
line on stderr, no traceback: exit code 2 for a usage error (no command, or another one, whose
line holds the usage), 1 for the rest.
"""

import os
import sys

from .checks import shown
from .show import ShowError, main, make_parser


def usage():
    """The usage of the one command, on one line: "usage: python -m bpe show [-h] ..."."""
    return " ".join(make_parser().format_usage().split())


def fail(line, code):
    print(" ".join(line.split("\n")), file=sys.stderr)
    sys.exit(code)


def run(argv):
    """main(argv), a ShowError as one line (exit 1), Ctrl-C as exit 130, and a stdout closed by
    its reader (`| head -1`) as a quiet exit 141."""
    sys.stdout.reconfigure(errors="backslashreplace")  # a file name that is not UTF-8
    try:
        main(argv)
        sys.stdout.flush()
    except ShowError as exc:
        fail(f"error: {exc}", 1)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)


if __name__ == "__main__":
    if sys.argv[1:2] in (["--help"], ["-h"]):
        print(
            usage(),
            "",
            "commands:",
            "  show  how a text is cut into tokens (show --help: its options)",
            sep="\n",
        )
        sys.exit(0)
    if not sys.argv[1:]:
        fail(f"error: give a command; {usage()} (see python -m bpe show --help)", 2)
    if sys.argv[1] != "show":
        given = f"{shown(sys.argv[1])} is not a command; the one command is show"
        fail(f"error: {given}; {usage()} (see python -m bpe show --help)", 2)
    run(sys.argv[2:])
