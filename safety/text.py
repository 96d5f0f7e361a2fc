"""Text as every reader of the project reads it, and as every error line quotes it."""

import contextlib
import stat
from pathlib import Path

from .errors import PrepareError

SHOWN_CHARS = 200  # a value quoted in an error line is cut to this many characters


def universal_newlines(text):
    """nanoGPT's newlines (its open(path, "r").read()): "a\\r\\nb\\rc" -> "a\\nb\\nc"."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def decode(data, path, offset=0, newlines=True):
    """Bytes of `path` (from byte `offset`) as strict UTF-8 with nanoGPT's newlines (or not):
    b"caf\\xe9" -> "x.txt is not valid UTF-8: byte offset 3 is b'\\xe9'; convert the file to
    UTF-8 first"."""
    try:
        text = data.decode("utf-8")
        return universal_newlines(text) if newlines else text
    except UnicodeDecodeError as exc:
        raise PrepareError(
            f"{path} is not valid UTF-8: byte offset {offset + exc.start:,} is "
            f"{data[exc.start : exc.start + 1]!r}; convert the file to UTF-8 first"
        ) from None


def read_text(path, newlines=True):
    """A whole regular file as `decode` reads it, else a PrepareError in one line naming it."""
    path = Path(path)
    with contextlib.suppress(OSError):  # a missing file is reported below, when it is read
        if not stat.S_ISREG(path.stat().st_mode) and not path.is_dir():
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
    return decode(data, path, newlines=newlines)


def without_lone_surrogates(text):
    """What tiktoken's encode_ordinary does with a lone surrogate: "a\\ud800" -> "a\\ufffd"."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def shortened(text, limit=SHOWN_CHARS, length=None, unit="characters"):
    """`text` cut to `limit` characters, with its length (or `length` `unit`s): "abc" -> "abc";
    "x" * 10**7 -> "xx...x... (10,000,000 characters)", the first 200."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) if length is None else length:,} {unit})"


def shown(value, limit=SHOWN_CHARS):
    """repr(value) `shortened`, with the value's own length: "abc" -> "'abc'";
    "x" * 10**7 -> "'xx...x... (10,000,000 characters)", the repr's first 200."""
    text = repr(value)
    if isinstance(value, (str, bytes)):
        unit = "bytes" if isinstance(value, bytes) else "characters"
        return shortened(text, limit, len(value), unit)
    return shortened(text, limit, unit="characters in all")


def plural(count, noun):
    """A count as a line says it: 1, "file" -> "1 file"; 2, "file" -> "2 files"."""
    return f"{count:,} {noun}{'s' * (count != 1)}"
