"""Files read strictly and within bounds, hashed, and never trusted; files written atomically.

- `read_text`: a whole text as strict UTF-8 (a bad byte: its offset), never a pipe or a device
- `open_regular`: every file read is opened through it: a regular file of bounded size, never
  a FIFO to block on or an endless device (/dev/zero)
- `read_small_file`: the bytes of a small file (meta.json, meta.pkl, a work record), at most
  SMALL_FILE_LIMIT bytes
- `read_plain_pickle`: a pickle of plain data, read without running anything it names
- `atomic_path`, `atomic_write_text`: a file is the old one or the whole new one, never half
"""

import contextlib
import errno
import hashlib
import io
import json
import os
import pickle
import stat
import tempfile
from pathlib import Path

from .errors import PrepareError
from .text import without_lone_surrogates

SMALL_FILE_LIMIT = 1 << 28  # 256 MB: more than any meta.json, meta.pkl or work record we write


def sha256_file(path):
    """The hex sha256 of a regular file's bytes, read 1 MB at a time (`open_regular`)."""
    digest = hashlib.sha256()
    with open_regular(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def open_regular(path, limit=None):
    """`path` open for reading (binary), once it is known to be a regular file of at most `limit`
    bytes: the one check before the project reads a file. A FIFO would block forever and
    /dev/zero never ends, so the file is opened without waiting and checked on its descriptor;
    anything else is a PrepareError naming it."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise PrepareError(f"{path} does not exist") from None
    except OSError as exc:
        raise PrepareError(f"cannot read {path}: {exc.strerror}") from None
    info = os.fstat(fd)  # before fdopen, which refuses a folder with an error naming no file
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a pipe or a device"
        raise PrepareError(f"{path} is not a regular file ({kind}); remove it and run again")
    if limit is not None and info.st_size > limit:
        os.close(fd)
        raise PrepareError(f"{path} has {info.st_size:,} bytes, more than {limit:,}: not ours")
    return os.fdopen(fd, "rb")


def read_small_file(path, limit=SMALL_FILE_LIMIT):
    """The bytes of a small file (meta.json, meta.pkl, tokenizer.pkl, a work record), at most
    `limit` bytes of a regular file (`open_regular`)."""
    with open_regular(path, limit) as file:
        try:
            data = file.read(limit + 1)
        except OSError as exc:
            raise PrepareError(f"cannot read {path}: {exc.strerror}") from None
    if len(data) > limit:
        raise PrepareError(f"{path} has more than {limit:,} bytes: not ours")
    return data


def load_json(data, path):
    """json.loads of a file's bytes; a file that is not JSON, nested too deeply for Python's
    parser (20,000 levels), or holding a number int() refuses, is a PrepareError naming it."""
    try:
        return json.loads(data)
    except UnicodeDecodeError as exc:
        raise PrepareError(f"{path} is not UTF-8 (byte {exc.start:,}): not valid JSON") from None
    except json.JSONDecodeError as exc:
        raise PrepareError(f"{path} is not valid JSON ({exc})") from None
    except ValueError:  # int() refuses a number of more than 4,300 digits
        raise PrepareError(
            f"{path} holds a number of over 4,300 digits: not JSON we read"
        ) from None
    except RecursionError:
        raise PrepareError(f"{path} is nested too deeply to be read as JSON") from None


def json_kind(value):
    """The JSON name of a value's type: None -> "null", {} -> "object", [] -> "array"."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def reserve(file, size, block=1 << 20):
    """Give the open `file` its full `size` bytes of disk now, so that no later write through a
    memory map of it can find the disk full (that is SIGBUS, not an error): posix_fallocate where
    the platform has it (Linux; glibc writes the blocks itself where the file system cannot),
    else zeros written through `write`. A disk too small is an OSError(ENOSPC) here, at once."""
    fd = file.fileno()
    if size and hasattr(os, "posix_fallocate"):
        try:
            os.posix_fallocate(fd, 0, size)
            return
        except OSError as exc:  # not supported by this file system: write the blocks
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise
    file.seek(0)
    zeros = bytes(min(block, size))
    for start in range(0, size, block):
        file.write(zeros[: min(block, size - start)])
    file.flush()


class _PlainDataUnpickler(pickle.Unpickler):
    """Reads a pickle of plain data only (dicts, lists, strings, numbers): any global (a class, a
    function such as os.system) is refused, so reading a hostile meta.pkl runs nothing."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"it names {module}.{name}, not plain data")


def read_plain_pickle(path):
    """The plain data of a pickle file, read without running anything (`_PlainDataUnpickler`)."""
    data = read_small_file(path)
    try:
        return _PlainDataUnpickler(io.BytesIO(data)).load()
    except Exception as exc:  # any malformed pickle: UnpicklingError, EOFError, ValueError...
        raise PrepareError(f"{path} is not a pickle of plain data ({exc})") from None


def first_non_utf8(value):
    """The first string in a JSON-like value that UTF-8 cannot encode (a lone surrogate), or None.

    {"path": "caf\\udce9.txt"} -> "caf\\udce9.txt" (Python's name for the file name bytes
    caf\\xe9.txt)
    """
    if isinstance(value, str):
        return None if without_lone_surrogates(value) == value else value
    children = value.values() if isinstance(value, dict) else value
    if isinstance(value, (dict, list, tuple)):
        return next((bad for bad in map(first_non_utf8, children) if bad is not None), None)
    return None


def cache_folder(folder, variable):
    """`folder`, created if needed; one that cannot be (a file is there) is a one-line error."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PrepareError(
            f"cannot use {folder} as a cache folder ({exc.strerror}); set {variable} to a "
            f"writable folder"
        ) from None
    return folder


def check_utf8_names(record):
    """Refuse a record (meta.json) holding a string UTF-8 cannot encode: a file name whose bytes
    are not UTF-8 (Python's surrogate escapes), in one line naming it."""
    bad = first_non_utf8(record)
    if bad is not None:
        raise PrepareError(
            f"the file name {bad.encode('utf-8', 'surrogateescape')!r} is not valid UTF-8, so "
            f"meta.json cannot record it; rename the file"
        )


# In the name of every temporary file of atomic_path: only such a file is a leftover of ours.
TEMPORARY_TAG = "nanogpt-"


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside `path`; rename it into place only if the block succeeds.

    A crash, an error or Ctrl-C inside the block leaves the previous `path` (or none), never a
    half-written file that looks valid; an OSError of the block that names no file (a write's
    "No space left on device"), or of making the temporary (a folder missing or read-only),
    names `path`. The temporary name is in the same folder, so the rename is atomic; hidden,
    pid-tagged and unpredictable, and created exclusively (O_EXCL, no link followed), so it
    never looks like a finished output, two runs don't collide, a link planted at a guessed name
    is never written through, and a leftover is provably ours (TEMPORARY_TAG):
    train.bin -> .train.bin.1234.nanogpt-k3j9x_q2.tmp
    """
    path = Path(path)
    try:
        fd, name = tempfile.mkstemp(
            prefix=_temporary_prefix(path.name), suffix=".tmp", dir=path.parent
        )
    except OSError as exc:  # it names the temporary, a name the user never gave
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    os.close(fd)
    tmp = Path(name)
    try:
        with contextlib.suppress(OSError):  # mkstemp's 0600, made what a plain open would make
            os.chmod(tmp, 0o666 & ~_umask())
        with naming(path):  # a full disk names the file it could not write
            yield tmp
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


@contextlib.contextmanager
def naming(path):
    """Name `path` in an OSError of the block that names no file: a write that fails (ENOSPC,
    EDQUOT, EFBIG, EIO: a plain OSError) names none. OSError(ENOSPC, "No space left on device")
    -> the same, with filename `path`. A subclass (a closed stdout's BrokenPipeError, a
    download's ConnectionError) is about something else, and is left as it is."""
    try:
        yield
    except OSError as exc:
        if type(exc) is not OSError or exc.filename is not None or exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from None


NAME_MAX = 255  # bytes in a file name, on every file system the project runs on


def _temporary_prefix(name):
    """atomic_path's prefix for `name`, its end cut so that the whole temporary name (with
    mkstemp's 8 random characters and ".tmp") fits wherever `name` fits."""
    tail = f".{os.getpid()}.{TEMPORARY_TAG}"
    room = NAME_MAX - len(tail.encode()) - 1 - 8 - len(".tmp")
    cut = name.encode("utf-8", "surrogateescape")[:room].decode("utf-8", "ignore")
    return f".{cut}{tail}"


def _umask():
    """The process's umask (os.umask can only be read by setting it, and is put back at once)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path, text):
    """Write `text` as UTF-8 (newlines as they are) to `path` through `atomic_path`, making
    its folder first: a reader never sees a half-written file, a failure leaves no temporary."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8", newline="\n")
