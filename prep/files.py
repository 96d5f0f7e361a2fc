"""Files on disk, handled so that a failure never leaves a half-written output.

- read_text(path): a whole file as strict UTF-8; a bad byte is an error giving its offset
- sha256_file(path): the hex sha256 of a file, read in blocks
- atomic_path(path): a temporary path beside `path`, renamed into place only on success
"""

import contextlib
import hashlib
import os
import stat
from pathlib import Path

from prep.errors import PrepareError


def read_text(path):
    """Read a whole file as strict UTF-8; a bad byte is an error that gives its offset."""
    path = Path(path)
    with contextlib.suppress(OSError):  # a missing file is reported below, when it is read
        if not stat.S_ISREG(path.stat().st_mode) and not path.is_dir():
            # a pipe would block (or be read once, then hashed empty): refuse it before opening
            raise PrepareError(
                f"{path} is not a regular file (a pipe or a device?); save the text to a file "
                f"and pass that"
            )
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise PrepareError(f"{path} does not exist; check the path") from None
    except IsADirectoryError:
        raise PrepareError(f"{path} is a folder, not a text file") from None
    except OSError as exc:
        raise PrepareError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PrepareError(
            f"{path} is not valid UTF-8: byte offset {exc.start:,} is {data[exc.start : exc.start + 1]!r}; "
            f"convert the file to UTF-8 first"
        ) from None


def sha256_file(path):
    """The hex sha256 of a file's bytes, read 1 MB at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside `path`; rename it into place only if the block succeeds.

    A crash, an error or Ctrl-C inside the block leaves the previous `path` (or none), never a
    half-written file that looks valid. The temporary name is in the same folder, so the rename
    is atomic, and hidden and pid-tagged, so it never looks like a finished output and two runs
    don't collide: train.bin -> .train.bin.1234.tmp
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
