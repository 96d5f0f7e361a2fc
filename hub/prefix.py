"""--max-tokens on a file read front to back (a .tar.gz, a .jsonl): only the prefix N tokens need.

    prefix = Prefix(url, cache / "TinyStories_all_data.tar.gz", "TinyStories_all_data.tar.gz")
    data = prefix.read(1 << 16)  # the file's next bytes: from the cache, else fetched
    prefix.record()  # {"file", "size", "bytes", "sha256"}: the bytes read so far

A remote file is fetched by Range requests a piece at a time, each appended to the cached copy
and its length and sha256 recorded before a byte of it is read; a rerun hashes the copy again
(one that differs is fetched again once, then refused). Two runs take a copy in turn. Read to
its end, the file's sha256 is checked against its pin.
"""

import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path

from documents.inputs import hub_failures, hub_files
from safety import PrepareError
from safety.commit import FolderBusy, lock_file
from safety.downloads import download_range, mirror_file
from safety.files import atomic_path, atomic_write_text
from safety.gpt2 import data_cache, mirrored
from safety.text import shortened

from .budget import AGAIN, cache_folder, listing

MIN_PIECE, MAX_PIECE = 1 << 16, 1 << 24  # bytes a request: 64 KiB to 16 MiB, 1% of the file


def pinned_prefix(remote, where):
    """The Prefix of a RemoteFile: a mirror folder's copy, else its URL (or the mirror's)."""
    url, name = mirrored(remote.url, remote.mirror_path), Path(remote.mirror_path).name
    if not url.startswith(("http://", "https://")):
        return Prefix(mirror_file(remote, url), None, where, remote.sha256)
    return Prefix(url, data_cache() / "prefix" / f"{remote.sha256}-{name}", where, remote.sha256)


COMMIT = re.compile(r"[0-9a-f]{40}")  # a git commit's sha1, as the hub names one


def hub_commit(hub, where):
    """`hub` at the commit its branch names now (offline: the commit the cache read last)."""
    from huggingface_hub import HfApi, constants

    kept = cache_folder(hub) / "commit"
    last = kept.read_bytes().strip().decode("latin-1") if kept.is_file() else ""
    last = last if COMMIT.fullmatch(last) else None  # a damaged file names no commit
    if constants.HF_HUB_OFFLINE:
        if last is None:
            raise PrepareError(
                f"{where}: HF_HUB_OFFLINE is set, and {kept} names no commit read earlier; "
                "run once with the hub in reach"
            )
        return hub._replace(revision=last)
    advice = AGAIN
    if last:  # say how to read it anyway
        advice += f", or set HF_HUB_OFFLINE=1 to read {last[:12]}, the commit read last"
    with hub_failures(where, advice):
        commit = HfApi().dataset_info(hub.repo, revision=hub.revision).sha
    if not isinstance(commit, str) or not COMMIT.fullmatch(commit):
        raise PrepareError(
            f"{where}: the hub gives {hub.revision}'s commit as {shortened(repr(commit))}, not "
            "40 hex digits; check that HF_ENDPOINT names the Hugging Face hub, then run again"
        )
    atomic_write_text(kept, commit)
    return hub._replace(revision=commit)


def hub_prefix(hub, where):
    """The Prefix of the one LFS file `hub.files` names, kept beside budget.py's pieces."""
    from huggingface_hub import hf_hub_url

    folder = cache_folder(hub)
    with hub_failures(where, AGAIN):
        entries = listing(hub, where, folder)
    if len(entries) != 1:
        raise PrepareError(f"{where}: {hub.files} is not one LFS file of the hub; run again")
    (entry,) = entries
    url = hf_hub_url(hub.repo, entry["path"], repo_type="dataset", revision=hub.revision)
    cache = folder / "prefix" / f"{entry['sha256']}-{Path(entry['path']).name}"
    return Prefix(url, cache, f"{where}/{entry['path']}", entry["sha256"])


def hub_small_file(hub, path, where):
    """The bytes of the hub's small file `path`, checked, kept for a rerun offline."""
    kept = cache_folder(hub) / "files" / Path(path).name
    if not kept.is_file():
        (downloaded,), _ = hub_files(hub._replace(files=path), where)
        kept.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(kept) as tmp:
            Path(tmp).write_bytes(Path(downloaded).read_bytes())
    return kept.read_bytes()


def waited_lock(path):
    """The descriptor of the lock file `path`, locked once no other run holds it."""
    said = False
    while True:
        try:
            return lock_file(path.parent, path)
        except FolderBusy:
            if not said:
                copy = path.with_suffix("")
                print(f"waiting for another run reading {copy} to finish it", file=sys.stderr)
                said = True
            time.sleep(0.1)


def piece_bytes(size):
    """The bytes of one Range request of a file of `size` bytes (None: not known yet):
    1,608,001,638 -> 16,080,016; 1,000,000 -> 65,536; None -> 65,536."""
    return min(max((size or 0) // 100, MIN_PIECE), MAX_PIECE)


class Prefix:
    """The bytes of `source` (a URL kept at `cache`, or a local file) read from its start;
    `sha256` (the whole file's) is checked at its end."""

    def __init__(self, source, cache, where, sha256=None):
        self.source, self.where, self.pinned = str(source), where, sha256
        self.remote = cache is not None
        self.position, self.fetched, self.digest, self.bar = 0, 0, hashlib.sha256(), None
        self.buffer = b""  # pulled from the copy, not read yet (a line's rest)
        self.lock = None  # a remote copy's lock file, held until close()
        if self.remote:
            self.path, self.index_path = Path(cache), Path(f"{cache}.json")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.lock = waited_lock(Path(f"{cache}.lock"))
            self.size, self.kept, self.kept_digest = self.checked_copy()
        else:
            self.path = Path(source)
            self.size = self.kept = self.path.stat().st_size
        self.file = open(self.path, "rb")  # noqa: SIM115 (closed by close())

    def checked_copy(self):
        """(size or None, bytes kept, their sha256 object) of the copy, hashed and checked again."""
        index = dict(url=self.source, size=None, bytes=0, sha256=hashlib.sha256().hexdigest())
        if self.path.is_file() and self.index_path.is_file():
            index = json.loads(self.index_path.read_text())
        with open(self.path, "ab") as file:
            file.truncate(index["bytes"])  # bytes written after the last record: not vouched for
        for attempt in range(2):
            digest = hashlib.sha256()
            with open(self.path, "rb") as file:
                for block in iter(lambda: file.read(1 << 20), b""):
                    digest.update(block)
            if digest.hexdigest() == index["sha256"]:
                return index["size"], index["bytes"], digest
            if attempt == 0:  # the kept bytes fetched again, over the copy
                with open(self.path, "r+b") as file:
                    while file.tell() < index["bytes"]:
                        start = file.tell()
                        end = min(start + piece_bytes(index["size"]), index["bytes"])
                        data, _ = download_range(self.source, start, end)
                        self.fetched += len(data)
                        file.write(data)
        raise PrepareError(
            f"{self.where}: the first {index['bytes']:,} bytes kept in {self.path}, fetched "
            f"twice, do not have the sha256 recorded when they were fetched, "
            f"{index['sha256'][:12]} (has the file changed?); delete {self.path} and run again"
        )

    def read(self, count=-1):
        """The next `count` bytes (fewer at the file's end only; -1: to its end)."""
        while count < 0 or len(self.buffer) < count:
            block = self.pull(1 << 20 if count < 0 else count - len(self.buffer))
            if not block:
                break
            self.buffer += block
        cut = len(self.buffer) if count < 0 else count
        data, self.buffer = self.buffer[:cut], self.buffer[cut:]
        self.position += len(data)
        self.digest.update(data)
        self.progress().update(len(data))
        if not data and count and self.pinned and self.digest.hexdigest() != self.pinned:
            raise PrepareError(
                f"{self.where}: read to its end, its sha256 is {self.digest.hexdigest()}, not "
                f"the pinned {self.pinned}; {self.advice()}"
            )
        return data

    def readline(self):
        """The next line, its newline included (b"" at the file's end)."""
        while b"\n" not in self.buffer and (block := self.pull(1 << 16)):
            self.buffer += block
        end = self.buffer.find(b"\n") + 1 or len(self.buffer)
        return self.read(end) if end else self.read(1)

    def pull(self, count):
        """Up to `count` bytes of the copy past those pulled (a piece fetched if needed)."""
        if self.file.tell() >= self.kept:
            self.fetch_piece()
        return self.file.read(min(count, self.kept - self.file.tell()))

    def fetch_piece(self):
        """Append the next piece of a remote file to the copy and record it."""
        if not self.remote or (self.size is not None and self.kept >= self.size):
            return
        end = self.kept + piece_bytes(self.size)
        data, self.size = download_range(self.source, self.kept, min(end, self.size or end))
        with open(self.path, "ab") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())  # on disk before the record vouches for it
        self.kept += len(data)
        self.fetched += len(data)
        self.kept_digest.update(data)
        record = {"url": self.source, "size": self.size, "bytes": self.kept}
        record["sha256"] = self.kept_digest.hexdigest()
        atomic_write_text(self.index_path, json.dumps(record))

    def progress(self):
        """The bar of the bytes read."""
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(
                total=self.size, unit="B", unit_scale=True, desc=self.where, delay=1, leave=False
            )
        return self.bar

    def note(self, tokens):
        """Show the tokens the bytes read hold so far beside the bar."""
        self.progress().set_postfix_str(f"{tokens:,} tokens", refresh=False)

    def tell(self):
        return self.position

    def advice(self):
        return f"delete {self.path} and run again" if self.remote else "check the file"

    def record(self):
        """meta.json's record of the bytes read (no URL: any mirror's are one record)."""
        return dict(
            file=self.where, size=self.size, bytes=self.position, sha256=self.digest.hexdigest()
        )

    def close(self):
        self.file.close()
        if self.lock is not None:
            os.close(self.lock)
        if self.bar is not None:
            self.bar.close()
