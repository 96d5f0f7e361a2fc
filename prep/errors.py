"""How a failure reaches the user: one `error: ...` line on stderr, exit code 1, no traceback.

- PrepareError: a problem the user can fix (a missing file, a bad option, a failed download)
- run_main(main): run a script's main and turn a PrepareError, an interrupt, or (as a last
  resort) an OSError into that line
"""

import sys


class PrepareError(Exception):
    """A problem the user can fix: printed as one line, without a traceback, by `run_main`."""


def run_main(main):
    """Run `main()`; a PrepareError becomes one `error: ...` line on stderr and exit code 1.

    Ctrl-C (exit code 130) and SIGTERM (143) say what they left: prep.folder's message when
    they stopped a run staging its outputs. An OSError no code turned into a clearer message
    still gets one line (with the file it names), not a traceback.
    """
    # a file name that is not valid UTF-8 must not turn a print into a crash
    sys.stdout.reconfigure(errors="backslashreplace")
    sys.stderr.reconfigure(errors="backslashreplace")
    try:
        main()
    except PrepareError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt as exc:
        from prep.folder import Terminated, interrupted_message

        what = "terminated" if isinstance(exc, Terminated) else "interrupted"
        print(f"error: {str(exc) or interrupted_message(what)}", file=sys.stderr)
        sys.exit(143 if isinstance(exc, Terminated) else 130)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        sys.exit(1)
