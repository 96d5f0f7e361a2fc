"""How a failure reaches the user: one `error: ...` line on stderr, exit code 1, no traceback.

- PrepareError: a problem the user can fix (a missing file, a bad option, a failed download)
- run_main(main): run a script's main and turn a PrepareError (or Ctrl-C) into that line
"""

import sys


class PrepareError(Exception):
    """A problem the user can fix: printed as one line, without a traceback, by `run_main`."""


def run_main(main):
    """Run `main()`; a PrepareError becomes one `error: ...` line on stderr and exit code 1."""
    try:
        main()
    except PrepareError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("error: interrupted; outputs already in place were left untouched", file=sys.stderr)
        sys.exit(130)
