"""`python -m bpe show ...`: see a tokenizer at work (bpe/show.py).

A problem the user can fix is one `error: ...` line on stderr and exit code 1, no traceback.
"""

import os
import sys

from .show import ShowError, main

if __name__ == "__main__":
    if sys.argv[1:2] != ["show"]:
        given = f"{sys.argv[1]!r} is not a command" if sys.argv[1:] else "give a command"
        print(
            f"error: {given}; the one command is show (see python -m bpe show --help)",
            file=sys.stderr,
        )
        sys.exit(2)
    sys.stdout.reconfigure(errors="backslashreplace")  # a stray surrogate must not crash a print
    try:
        main(sys.argv[2:])
    except ShowError as exc:
        sys.exit(f"error: {exc}")
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # the last resort: a case no code foresaw is still one line
        if os.environ.get("NANOGPT_DEBUG") == "1":
            raise
        what = "nested too deeply" if isinstance(exc, RecursionError) else f"{exc}"
        sys.exit(f"error: {type(exc).__name__}: {what}; set NANOGPT_DEBUG=1 for the traceback")
