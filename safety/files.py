"""Files read strictly and within bounds, never trusted; files written atomically."""

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
    """The hex sha256 of a regular file's bytes."""
    digest = hashlib.sha256()
    with open_regular(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def open_regular(path, limit=None):
    """`path` open for reading (binary) if it is a regular file of at most `limit` bytes: opened
    without waiting (a FIFO) and checked on its descriptor; else a PrepareError naming it."""
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
    """The bytes of a small regular file (meta.json, meta.pkl), at most `limit` of them."""
    with open_regular(path, limit) as file:
        try:
            data = file.read(limit + 1)
        except OSError as exc:
            raise PrepareError(f"cannot read {path}: {exc.strerror}") from None
    if len(data) > limit:
        raise PrepareError(f"{path} has more than {limit:,} bytes: not ours")
    return data


def load_json(data, path):
    """json.loads of a file's bytes; any JSON Python refuses is a PrepareError naming it."""
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
    """Give the open `file` its `size` bytes of disk now: a full disk under a memory map is a
    SIGBUS later, here an OSError(ENOSPC). posix_fallocate where it works, else zeros."""
    if size and hasattr(os, "posix_fallocate"):
        try:
            os.posix_fallocate(file.fileno(), 0, size)
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
    def find_class(self, module, name):  # any global (os.system): a hostile meta.pkl runs nothing
        raise pickle.UnpicklingError(f"it names {module}.{name}, not plain data")


def read_plain_pickle(path):
    """The plain data (dicts, lists, strings, numbers) of a pickle file, read running nothing."""
    data = read_small_file(path)
    try:
        return _PlainDataUnpickler(io.BytesIO(data)).load()
    except Exception as exc:  # any malformed pickle: UnpicklingError, EOFError, ValueError...
        raise PrepareError(f"{path} is not a pickle of plain data ({exc})") from None


def first_non_utf8(value):
    """The first string in a JSON-like value that UTF-8 cannot encode, or None:
    {"path": "caf\\udce9.txt"} -> "caf\\udce9.txt" (the file name bytes caf\\xe9.txt)."""
    if isinstance(value, str):
        return None if without_lone_surrogates(value) == value else value
    children = value.values() if isinstance(value, dict) else value
    if isinstance(value, (dict, list, tuple)):
        return next((bad for bad in map(first_non_utf8, children) if bad is not None), None)
    return None


def cache_folder(folder, variable):
    """`folder`, created if needed, else a one-line error naming `variable`."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PrepareError(
            f"cannot use {folder} as a cache folder ({exc.strerror}); set {variable} to a "
            f"writable folder"
        ) from None
    return folder


def check_utf8_names(record):
    """Refuse a record holding a string UTF-8 cannot encode (a file name's surrogate escapes)."""
    bad = first_non_utf8(record)
    if bad is not None:
        raise PrepareError(
            f"the file name {bad.encode('utf-8', 'surrogateescape')!r} is not valid UTF-8, so "
            f"meta.json cannot record it; rename the file"
        )


TEMPORARY_TAG = "nanogpt-"  # in every atomic_path temporary: only such a file is a leftover of ours
NAME_MAX = 255  # bytes in a file name, on every file system the project runs on


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside `path`; rename it into place only if the block succeeds.

    Hidden, pid-tagged, random and made with O_EXCL (no planted link is written through); an
    OSError naming no file names `path`: train.bin -> .train.bin.1234.nanogpt-k3j9x_q2.tmp
    """
    path = Path(path)
    tail = f".{os.getpid()}.{TEMPORARY_TAG}"  # the name cut to fit where `path` fits:
    room = NAME_MAX - len(tail.encode()) - 1 - 8 - len(".tmp")  # mkstemp's 8 characters
    cut = path.name.encode("utf-8", "surrogateescape")[:room].decode("utf-8", "ignore")
    try:
        fd, name = tempfile.mkstemp(prefix=f".{cut}{tail}", suffix=".tmp", dir=path.parent)
    except OSError as exc:  # it names the temporary, a name the user never gave
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    os.close(fd)
    tmp = Path(name)
    try:
        mask = os.umask(0)  # read only by setting it: put back at once
        os.umask(mask)
        with contextlib.suppress(OSError):  # mkstemp's 0600, made what a plain open would make
            os.chmod(tmp, 0o666 & ~mask)
        with naming(path):  # a full disk names the file it could not write
            yield tmp
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


@contextlib.contextmanager
def naming(path):
    """Name `path` in a plain OSError of the block that names no file (a subclass, such as
    BrokenPipeError, is about something else): OSError(ENOSPC, ...) -> filename `path`."""
    try:
        yield
    except OSError as exc:
        if type(exc) is not OSError or exc.filename is not None or exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def atomic_write_text(path, text):
    """Write `text` as UTF-8 (newlines as they are) to `path` through `atomic_path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8", newline="\n")
