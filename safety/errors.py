"""A problem the user can fix is a PrepareError: one line, no traceback (see cli.run_main)."""

import contextlib


class PrepareError(Exception):
    """A problem the user can fix: printed as one line, without a traceback, by `run_main`."""


@contextlib.contextmanager
def reading(path):
    """Name `path` in the error line of any exception that escapes the block (the innermost
    `reading` wins): `with reading(meta_json): ...`."""
    try:
        yield
    except Exception as exc:
        if getattr(exc, "nanogpt_reading", None) is None:
            exc.nanogpt_reading = str(path)
        raise
