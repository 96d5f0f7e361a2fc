"""JSON files read straight out of a .tar.gz, one member at a time, never unpacked to disk.

TinyStories' TinyStories_all_data.tar.gz holds data00.json ... data49.json at its top: llm.c's
dev/data/tinystories.py unpacks it with `tar -xzf` into a folder and globs `*.json` there (not
below), and finds 50. Here the archive is read front to back once, as a stream, so memory holds
one member whatever the archive's size, and nothing of it ever reaches the disk:

- gzip.GzipFile, read block by block as GNU tar reads a tar: at the end of the stream the
  gzip trailer's CRC and length are checked, so an archive cut anywhere, even between two
  members, is an error, not a shorter corpus; every header is checked (`TarStream`) where
  Python's tarfile takes a damaged one for the end of the archive and stops, silently: a bad
  checksum, a header cut short, or anything but zeros where the end-of-archive blocks are, is
  an ArchiveError naming the member and the byte offset; a GNU long name or a pax header may
  hold MAX_EXTENSION_BYTES (bounded like a member: memory stays flat on any archive);
- each member is checked on its header, before a byte of it is read: a regular file at the
  archive's top whose name matches the glob `pattern` (an optional leading "./" dropped; the top
  folder "./" itself is passed over), no larger than `max_bytes` (what a gzip bomb would have to
  claim). An absolute name, a name with "..", a symbolic or hard link, a device, a FIFO, a
  folder, a file in a folder, any other name, or the same name twice is an ArchiveError naming
  the member;
- a member cut short, or a damaged gzip stream, is an ArchiveError naming the member being read.

`json_stories` then reads one member's bytes as a JSON list of objects and keeps only each
object's "story" string (the rest of each object is dropped as it is parsed).

    for name, data in json_members("TinyStories_all_data.tar.gz", "data[0-9][0-9].json"):
        stories = json_stories(name, data)  # ["Once upon a time...", ...]

Errors are ArchiveError, a PrepareError: one `error:` line from any command.
"""

import fnmatch
import gzip
import json
import tarfile
import zlib
from pathlib import Path, PurePosixPath

from safety.errors import PrepareError
from safety.text import shortened

MAX_MEMBER_BYTES = 1 << 30  # 1 GiB: TinyStories' 50 members come from 1.6 GB of gzip in all
MAX_TRAILING_BYTES = 1 << 24  # after the archive's end: tar's zero padding, not another corpus


class ArchiveError(PrepareError):
    """The archive, or one of its members, is not what it should be: one line, naming it."""


def json_members(path, pattern, max_bytes=MAX_MEMBER_BYTES, progress=True):
    """Yield (name, data) of each member of the .tar.gz at `path`, in the archive's order.

    `pattern`, a glob ("data[0-9][0-9].json"), must match each member's name; see the module
    docstring for every check. data: a bytearray of the member's bytes. progress: a tqdm bar
    of the archive's (compressed) bytes read, shown after a second (a quick run prints none)."""
    from tqdm import tqdm

    path = Path(path)
    seen, reading = set(), None
    size, hidden = path.stat().st_size, not progress  # a quiet run shows no bar
    bar = tqdm(
        total=size, unit="B", unit_scale=True, desc=path.name, delay=1, leave=False, disable=hidden
    )
    try:
        with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as stream:
            tar = TarStream(stream, path)
            member = tar.next_member()
            while member is not None:
                name = checked_name(member, pattern, max_bytes)
                if name is None:  # the top folder, "./"
                    tar.skip_data(member.size)
                    member = tar.next_member()
                    continue
                if name in seen:
                    raise ArchiveError(f"{path}: {name} is in the archive twice")
                seen.add(name)
                reading = tar.last = name
                data = tar.read_data(member.size)
                reading = f"the header after {name}"
                member = tar.next_member()  # a size that lies shows in the next header: first
                reading = None
                bar.update(raw.tell() - bar.n)
                yield name, data
            reading = "the end of the archive"
            if len(stream.read(MAX_TRAILING_BYTES + 1)) > MAX_TRAILING_BYTES:
                raise ArchiveError(f"{path}: more than {MAX_TRAILING_BYTES:,} bytes after its end")
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        where = f" in {reading}" if reading else ""
        raise ArchiveError(
            f"{path}: not a whole .tar.gz, cut short or damaged{where} ({exc})"
        ) from None
    finally:
        bar.close()


BLOCK = 512  # a tar is 512-byte blocks: a header, then a member's data padded to a block
MAX_EXTENSION_BYTES = 1 << 16  # a GNU long name or a pax header: 64 KiB (PATH_MAX is 4 KiB)
LONG_NAMES = {tarfile.GNUTYPE_LONGNAME: "name", tarfile.GNUTYPE_LONGLINK: "linkname"}
PAX_TYPES = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)
PAX_FIELDS = {"path": "name", "linkpath": "linkname", "size": "size"}  # what a member takes


class TarStream:
    """The members of an uncompressed tar, read from `stream` front to back as GNU tar reads
    them (the module docstring says what is checked): a GNU long name or a pax header applied
    to the member after it. An ArchiveError names the last whole member (`last`) and the byte
    offset of the header in the tar.

        tar = TarStream(stream, path)
        while (member := tar.next_member()) is not None:  # a tarfile.TarInfo
            data = tar.read_data(member.size)             # or tar.skip_data(member.size)
    """

    def __init__(self, stream, path):
        self.stream, self.path, self.offset, self.last = stream, path, 0, None

    def next_member(self):
        """The next member's header (extensions applied), or None at the end of the archive."""
        extended = {}  # what GNU long names and pax headers say of the member that follows
        while True:
            offset, block = self.offset, self._read(BLOCK)
            if not block and not extended:  # no end-of-archive blocks: the gzip trailer vouches
                return None
            if block.count(0) == BLOCK and not extended:
                self._check_end(offset)
                return None
            try:
                member = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
            except tarfile.HeaderError as exc:
                raise self._damaged(offset, block, f"its header is damaged ({exc})") from None
            if member.type not in (*LONG_NAMES, *PAX_TYPES):
                break
            if member.size > MAX_EXTENSION_BYTES:
                raise self._damaged(
                    offset,
                    block,
                    f"an extension header of {member.size:,} bytes, more than "
                    f"the {MAX_EXTENSION_BYTES:,} one may have",
                )
            data = bytes(self.read_data(member.size))
            if member.type in LONG_NAMES:
                text = data.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
                extended[LONG_NAMES[member.type]] = text
            else:
                fields = self._pax_fields(offset, block, data)
                if member.type != tarfile.XGLTYPE:
                    extended.update(fields)
                elif fields:  # a global header naming every member that follows: not ours
                    raise self._damaged(offset, block, "a global pax header naming members")
        if member.type == tarfile.GNUTYPE_SPARSE or member.sparse is not None:
            raise self._damaged(offset, block, "a sparse file, which TinyStories has none of")
        for field, value in extended.items():
            setattr(member, field, value)
        member.offset = offset
        return member

    def read_data(self, size):
        """A member's `size` bytes of data (then its padding, skipped), read 1 MB at a time into
        one buffer of its size (no joined copies)."""
        data = bytearray(size)
        view, done = memoryview(data), 0
        while done < size:
            chunk = self.stream.read(min(1 << 20, size - done))
            if not chunk:
                raise EOFError(f"{done:,} of its {size:,} bytes")
            view[done : done + len(chunk)] = chunk
            done += len(chunk)
        self.offset += size
        self.skip_data(0, padding=-size % BLOCK)
        return data

    def skip_data(self, size, padding=None):
        """Pass over `size` bytes of data and their padding, a block of 1 MB at a time."""
        left = size + (-size % BLOCK if padding is None else padding)
        while left:
            chunk = self._read(min(left, 1 << 20))
            if not chunk:
                raise EOFError(f"the archive ends inside a member, at byte {self.offset:,}")
            left -= len(chunk)

    def _read(self, size):
        data = self.stream.read(size)
        self.offset += len(data)
        if 0 < len(data) < size == BLOCK:
            raise self._damaged(self.offset - len(data), data, "its header is cut short")
        return data

    def _check_end(self, offset):
        """The block after the first zero block must be zeros too (or the stream end): a member
        after a lone zero block is refused, not dropped (GNU tar warns of it and stops)."""
        block = self._read(BLOCK)
        if block.count(0) != len(block):
            raise ArchiveError(
                f"{self.path}: data after a lone zero block at byte {offset:,} of the archive "
                f"(after {self.last or 'its start'}), where its end should be: not a whole tar"
            )

    def _pax_fields(self, offset, block, data):
        """A pax header's records ("%d path=data07.json\n"...) -> the member's fields it sets."""
        fields = {}
        while data:
            length, space, _ = data.partition(b" ")
            size = int(length) if length.isdigit() and space else 0
            record = data[:size]
            key, equals, value = record[len(length) + 1 : -1].partition(b"=")
            if size > len(data) or not record.endswith(b"\n") or not equals:
                raise self._damaged(offset, block, "a pax header that is not key=value records")
            if key.startswith(b"GNU.sparse."):
                raise self._damaged(offset, block, "a sparse file, which TinyStories has none of")
            if key.decode("utf-8", "replace") in PAX_FIELDS:
                text = value.decode("utf-8", "surrogateescape")
                if key == b"size" and not text.isdigit():
                    raise self._damaged(offset, block, f"a pax size {text!r}")
                fields[PAX_FIELDS[key.decode()]] = int(text) if key == b"size" else text
            data = data[len(record) :]
        return fields

    def _damaged(self, offset, block, reason):
        """The ArchiveError of a header at `offset`: its member named as the header names it."""
        name = bytes(block[:100]).split(b"\0", 1)[0].decode("utf-8", "backslashreplace")
        return ArchiveError(
            f"{self.path}: archive member {shortened(repr(name))} at byte {offset:,} (after "
            f"{self.last or 'the start of the archive'}): {reason}; the archive is damaged, or "
            f"not one this lesson reads whole: download it again"
        )


def checked_name(member, pattern, max_bytes=MAX_MEMBER_BYTES):
    """The member's name ("./data07.json" -> "data07.json"), None for the top folder itself, or
    an ArchiveError saying why the member is refused (checked in this order: the name's safety,
    the kind of entry, the name, the size)."""
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


class _Field:
    """An object of a member's list as it is parsed: only the value of its field is kept."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


JSON_KINDS = {dict: "an object", _Field: "an object", str: "a string", bool: "a boolean"}


def json_stories(name, data, field="story"):
    """A member's bytes, a JSON list of objects, -> the list of each object's `field` string.

    b'[{"story": "Once...", "summary": "..."}]' -> ["Once..."]. Every object is replaced by its
    field's value as soon as it is parsed (`object_hook`), so the rest of it (TinyStories' own
    summaries, prompts and word lists) never sits in memory. The bytes must be UTF-8 (as llm.c's
    open() reads them on Linux); anything else, a JSON that is not a list, or an item without a
    string `field`, is an ArchiveError naming the member (and the item).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ArchiveError(f"{name} is not UTF-8 (byte {exc.start:,}): not a JSON file") from None
    try:
        items = json.loads(text, object_hook=lambda obj: _Field(obj.get(field)))
    except json.JSONDecodeError as exc:
        raise ArchiveError(f"{name} is not valid JSON ({exc})") from None
    except RecursionError:
        raise ArchiveError(f"{name} is nested too deeply to be read as JSON") from None
    if not isinstance(items, list):
        kind = JSON_KINDS.get(type(items), "a number" if items is not None else "null")
        raise ArchiveError(f"{name} holds {kind}, not a JSON list of stories")
    stories = []
    for i, item in enumerate(items):
        if not isinstance(item, _Field) or not isinstance(item.value, str):
            raise ArchiveError(f'{name}: item {i:,} is not an object with a string "{field}"')
        stories.append(item.value)
    return stories


def archive_file(path):
    """`path` as a Path if it is a regular file (a FIFO would block whoever reads it, a folder
    cannot be one), else an ArchiveError saying what it is."""
    path = Path(path)
    if not path.exists():
        raise ArchiveError(f"--archive {path} does not exist; check the path")
    if not path.is_file():
        kind = "a folder" if path.is_dir() else "a pipe or a device"
        raise ArchiveError(f"--archive {path} is {kind}, not a .tar.gz file")
    return path
