"""JSON files read straight out of a .tar.gz as a stream, one member at a time, never unpacked.

Checked on the way, each an ArchiveError (a PrepareError: one `error:` line) naming the member:
the gzip trailer (an archive cut anywhere), every header as GNU tar checks it (tarfile takes a
damaged one for the end), nothing but zeros past the end, and each member before it is read: a
regular file at the top matching `pattern`, no larger than `max_bytes`, never twice.

    for name, data in json_members("TinyStories_all_data.tar.gz", "data[0-9][0-9].json"):
        stories = json_stories(name, data)  # ["Once upon a time...", ...]
"""

import contextlib
import fnmatch
import gzip
import json
import sys
import tarfile
import zlib
from pathlib import Path, PurePosixPath

from safety.errors import PrepareError
from safety.text import shortened

MAX_MEMBER_BYTES = 1 << 30  # 1 GiB: TinyStories' 50 members come from 1.6 GB of gzip in all
MAX_TRAILING_BYTES = 1 << 24  # after the archive's end: tar's zero padding, not another corpus
BLOCK = 512  # a tar is 512-byte blocks: a header, then a member's data padded to a block
MAX_EXTENSION_BYTES = 1 << 16  # a GNU long name or a pax header: 64 KiB (PATH_MAX is 4 KiB)
EXTENSIONS = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE)
EXTENSIONS += (tarfile.SOLARIS_XHDTYPE,)
MEMBER_FIELDS = {"path", "linkpath", "size"}  # what a global pax header must not set


class ArchiveError(PrepareError):
    """The archive, or one of its members, is not what it should be: one line, naming it."""


def json_members(path, pattern, max_bytes=MAX_MEMBER_BYTES, progress=True, raw=None):
    """Yield (name, data) of each member of the .tar.gz at `path`, in the archive's order.

    raw: a file object read in place of `path` (hub.Prefix), which then only names it."""
    from tqdm import tqdm

    path = Path(path)
    seen, reading = set(), None
    hidden = not progress or raw is not None  # a quiet run shows no bar, a prefix its own
    size = None if hidden else path.stat().st_size
    bar = tqdm(
        total=size, unit="B", unit_scale=True, desc=path.name, delay=1, leave=False, disable=hidden
    )
    opened = open(path, "rb") if raw is None else contextlib.nullcontext(raw)  # noqa: SIM115
    try:
        with opened as raw, gzip.GzipFile(fileobj=raw, mode="rb") as stream:
            archive = _Archive.open(fileobj=stream, mode="r|", path=path)
            member = archive.next()
            while member is not None:
                name = checked_name(member, pattern, max_bytes)
                if MEMBER_FIELDS & archive.pax_headers.keys():
                    raise ArchiveError(f"{path}: a global pax header names members; refused")
                if name in seen:
                    raise ArchiveError(f"{path}: {name} is in the archive twice")
                if name is not None:  # None: the top folder, "./"
                    seen.add(name)
                    reading = archive.last = name
                    data = archive.extractfile(member).read()
                    reading = f"the header after {name}"
                member = archive.next()  # a size that lies shows in the next header: first
                reading = None
                bar.update(raw.tell() - bar.n)
                if name is not None:
                    yield name, data
            reading = "the end of the archive"
            end, trailing = archive.fileobj.tell(), archive.fileobj.read(MAX_TRAILING_BYTES + 1)
            if len(trailing) > MAX_TRAILING_BYTES:
                raise ArchiveError(f"{path}: more than {MAX_TRAILING_BYTES:,} bytes after its end")
            if trailing.count(0) != len(trailing):  # a tar joined on: tar reads none of it
                at = end + len(trailing) - len(trailing.lstrip(bytes(1)))
                raise ArchiveError(
                    f"{path}: data at byte {at:,} of the tar, past its end (after "
                    f"{archive.last}): two archives joined into one? not a whole tar"
                )
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        where = f" in {reading}" if reading else ""
        raise ArchiveError(
            f"{path}: not a whole .tar.gz, cut short or damaged{where} ({exc})"
        ) from None
    finally:
        bar.close()


class _Archive(tarfile.TarFile):
    """A tar whose headers are checked; `path` and `last` (the last member read) name errors."""

    def __init__(self, *args, path, **kwargs):
        self.path, self.last = path, None
        super().__init__(*args, tarinfo=_Header, encoding="utf-8", **kwargs)


class _Header(tarfile.TarInfo):
    """A header read as GNU tar reads it: a damaged one is an error, not the archive's end."""

    @classmethod
    def fromtarfile(cls, archive):
        offset, block = archive.fileobj.tell(), archive.fileobj.read(BLOCK)
        if not block:
            raise tarfile.EmptyHeaderError("end of file header")
        if len(block) < BLOCK:
            raise _damaged(archive, offset, block, "its header is cut short")
        if block.count(0) == BLOCK:
            after = archive.fileobj.read(BLOCK)
            if after.count(0) != len(after):  # GNU tar warns of it and stops: refused here
                raise ArchiveError(
                    f"{archive.path}: data after a lone zero block at byte {offset:,} of the "
                    f"archive (after {archive.last or 'its start'}), where its end should be: "
                    f"not a whole tar"
                )
            raise tarfile.EOFHeaderError("end of file header")
        try:
            member = cls.frombuf(block, archive.encoding, archive.errors)
        except tarfile.HeaderError as exc:
            raise _damaged(archive, offset, block, f"its header is damaged ({exc})") from None
        if member.type in EXTENSIONS and member.size > MAX_EXTENSION_BYTES:
            reason = (
                f"an extension header of {member.size:,} bytes, more than the "
                f"{MAX_EXTENSION_BYTES:,} one may have"
            )
            raise _damaged(archive, offset, block, reason)
        member.offset = offset
        return member._proc_member(archive)


def _damaged(archive, offset, block, reason):
    name = bytes(block[:100]).split(b"\0", 1)[0].decode("utf-8", "backslashreplace")
    return ArchiveError(
        f"{archive.path}: archive member {shortened(repr(name))} at byte {offset:,} (after "
        f"{archive.last or 'the start of the archive'}): {reason}; the archive is damaged, or "
        f"not one this lesson reads whole: download it again"
    )


def checked_name(member, pattern, max_bytes=MAX_MEMBER_BYTES):
    """The member's name ("./data07.json" -> "data07.json"), None for the top folder itself, or
    an ArchiveError saying why the member is refused."""
    name = member.name
    where = f"archive member {shortened(repr(name))}"  # a 64 KiB name makes no 64 KiB line
    if name.startswith("/"):  # PurePosixPath(name).is_absolute()
        raise ArchiveError(
            f"{where} is an absolute path; refused (an archive names its files inside it)"
        )
    if ".." in PurePosixPath(name).parts:
        raise ArchiveError(f"{where} has a '..' that leads out of the archive's folder; refused")
    if member.issym() or member.islnk():
        kind = "a symbolic" if member.issym() else "a hard"
        raise ArchiveError(f"{where} is {kind} link (to {member.linkname!r}); refused")
    if member.ischr() or member.isblk() or member.isfifo():
        raise ArchiveError(f"{where} is a device or a FIFO, not a file; refused")
    if member.issparse():
        raise ArchiveError(f"{where} is a sparse file, which TinyStories has none of; refused")
    bare = name[2:] if name.startswith("./") else name
    if member.isdir():
        if bare.strip("/") in ("", "."):
            return None
        raise ArchiveError(f"{where} is a folder; the JSON files should be at the archive's top")
    if not member.isreg():
        raise ArchiveError(f"{where} is not a regular file; refused")
    if "/" in bare:
        raise ArchiveError(f"{where} is in a folder; the JSON files should be at the archive's top")
    if not fnmatch.fnmatchcase(bare, pattern):
        raise ArchiveError(f"{where} is not a file named like {pattern}; refused")
    if member.size > max_bytes:
        raise ArchiveError(
            f"{where} has {member.size:,} bytes, more than the {max_bytes:,} a member may have"
        )
    return bare


# an object parsed is the 1-tuple of its field's value, which no other JSON value parses to
JSON_KINDS = {tuple: "an object", str: "a string", bool: "a boolean"}


def json_stories(name, data, field="story"):
    """A member's bytes, a JSON list of objects, -> the list of each object's `field` string.

    b'[{"story": "Once...", "summary": "..."}]' -> ["Once..."]; the rest of each object is
    dropped as it is parsed. UTF-8 only, as llm.c's open() reads it on Linux."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _member_error(name, f"is not UTF-8 (byte {exc.start:,}): not a JSON file") from None
    try:
        items = json.loads(text, object_hook=lambda obj: (obj.get(field),))
    except ValueError as exc:  # a JSONDecodeError, or an integer past int()'s 4,300 digits
        raise _member_error(name, f"is not valid JSON ({exc})") from None
    except RecursionError:
        raise _member_error(name, "is nested too deeply to be read as JSON") from None
    if not isinstance(items, list):
        kind = JSON_KINDS.get(type(items), "a number" if items is not None else "null")
        raise _member_error(name, f"holds {kind}, not a JSON list of stories")
    stories = []
    for i, item in enumerate(items):
        if not isinstance(item, tuple) or not isinstance(item[0], str):
            raise _member_error(name, f'item {i:,} is not an object with a string "{field}"', ":")
        stories.append(item[0])
    return stories


def _member_error(name, what, joint=""):
    return ArchiveError(
        f"{name}{joint} {what}; the archive is not TinyStories' as llm.c reads it: download it "
        "again, or give --archive one of the same layout"
    )


def archive_file(path):
    """`path` as a Path if it is a regular file (a FIFO would block), else an ArchiveError."""
    path = Path(path)
    if not path.exists():
        raise ArchiveError(f"--archive {path} does not exist; check the path")
    if not path.is_file():
        kind = "a folder" if path.is_dir() else "a pipe or a device"
        raise ArchiveError(f"--archive {path} is {kind}, not a .tar.gz file")
    return path


if __name__ == "__main__":
    print("error: archive.py is a module of data/tinystories/prepare.py; run that", file=sys.stderr)
    sys.exit(2)
