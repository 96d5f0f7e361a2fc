"""`python -m bpe show ...`: see a tokenizer at work (bpe/show.py).

`python -m bpe --help` (or -h) prints the usage. A problem the user can fix is one `error: ...`
line on stderr, no traceback: exit code 2 for a usage error (no command, or another one, whose
line holds the usage), 1 for the rest.
"""

import sys

from .cli import exit_with, run_main
from .show import ShowError, main, make_parser
from .text import shown


def usage():
    """The usage of the one command, on one line: "usage: python -m bpe show [-h] ..."."""
    return " ".join(make_parser().format_usage().split())


def usage_error(given):
    exit_with(f"error: {given}; {usage()} (see python -m bpe show --help)", 2)


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
        usage_error("give a command")
    if sys.argv[1] != "show":
        usage_error(f"{shown(sys.argv[1])} is not a command; the one command is show")
    run_main(lambda: main(sys.argv[2:]), ShowError)
