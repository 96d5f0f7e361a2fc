"""--max-tokens N: a pinned hub dataset read a row group at a time, until N tokens are in hand.

    documents, record = budgeted_documents(hub, 200_000_000, document_tokens(encoding), "FineWeb")

Only the footers, the `token_count` columns the plan reads and the row groups used are fetched
(HTTP range requests), each written into a sparse copy in the cache and listed with its sha256
once it decoded. A piece that does not decode is fetched again once, then refused; so is a file
read whole whose bytes differ from the hub's LFS sha256.
"""

import hashlib
import json
import os
import re
from argparse import ArgumentTypeError
from fractions import Fraction
from pathlib import Path

import numpy as np

from documents.inputs import hub_entries, hub_failures
from safety import PrepareError
from safety.files import atomic_write_text

SUFFIXES = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9}
AGAIN = "run again when it can be reached: what was fetched is kept"
MAGIC = b"PAR1"  # a parquet file ends with its footer's length (4 bytes, little-endian) and this


def token_budget(text):
    """--max-tokens: a positive whole number of tokens, with an optional K, M or B suffix:
    "200M" -> 200_000_000; "1.5B" -> 1_500_000_000; "0", "2X", "1.5", "1.0000000001K" -> error."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMB]?)\s*", text, re.IGNORECASE)
    value = Fraction(match[1]) * SUFFIXES[match[2].upper()] if match else 0
    if value < 1 or value.denominator != 1:
        raise ArgumentTypeError(f"{text!r} is not a number of tokens (e.g. 200M, 1.5B, 1000000)")
    return int(value)


def document_tokens(encoding):
    """budgeted_documents' count of a tiktoken Encoding: each text's ids and its end-of-text.
    GPT-2's: ["Hello world", "Hi"] -> [3, 2]."""

    def count(texts):
        return [len(ids) + 1 for ids in encoding.encode_ordinary_batch(texts)]

    return count


def budgeted_documents(hub, max_tokens, count, where, first_tokens=0, first_documents=0):
    """(a Dataset of `hub`'s first documents whose count(texts) reach first_tokens + max_tokens,
    meta.json's "budget" record); the first_documents count no tokens."""
    import datasets
    from tqdm import tqdm

    needed, folder = first_tokens + max_tokens, cache_folder(hub)
    with hub_failures(where, AGAIN):
        files = [PartialFile(folder, entry, hub) for entry in listing(hub, where, folder)]
        print(plan(files, needed, where))
        texts, records, tokens = [], [], 0
        with tqdm(
            total=needed, unit=" tokens", unit_scale=True, desc="reading", delay=1, leave=False
        ) as bar:
            for file in files:
                if tokens >= needed:
                    break
                file.bar = bar
                free = max(first_documents - len(texts), 0)
                file_texts, file_tokens, record = file.documents(needed - tokens, count, free)
                texts += file_texts
                tokens += file_tokens
                records.append(record)
    if not texts:
        raise PrepareError(f"{where} holds no document: there is nothing to prepare from it")
    if tokens < needed:
        print(f"note: {where} holds {tokens:,} tokens, fewer than the {needed:,} asked: all read")
    fetched = sum(file.fetched for file in files)
    print(f"budget: {len(texts):,} documents, {tokens:,} tokens; {fetched:,} bytes fetched now")
    record = dict(max_tokens=max_tokens, first_tokens=first_tokens, tokens=tokens)
    record.update(first_documents=first_documents, documents=len(texts), files=records)
    return datasets.Dataset.from_dict({"text": texts}), record


def count_documents(hub, where):
    """The documents of `hub`'s files, as their footers count them (the footers alone fetched)."""
    folder = cache_folder(hub)
    with hub_failures(where, AGAIN):
        files = [PartialFile(folder, entry, hub) for entry in listing(hub, where, folder)]
        return sum(file.footer().num_rows for file in files)


def cache_folder(hub):
    """Where the pieces of `hub`'s files are kept, under HF_HOME."""
    from huggingface_hub import constants

    name = f"{hub.repo.replace('/', '--')}@{hub.revision}"
    return Path(constants.HF_HOME) / "token-budget" / name


def listing(hub, where, folder):
    """[{"path", "size", "sha256"}] of the hub's files, in order, kept in the cache."""
    path = folder / "listing.json"
    if path.exists():
        return json.loads(path.read_text())
    entries = hub_entries(hub, where, AGAIN)
    files = [{"path": e.path, "size": e.size, "sha256": e.lfs.sha256} for e in entries if e.lfs]
    for entry in files:  # the sha256 names the file's copy in the cache: "../x" would escape it
        if not re.fullmatch(r"[0-9a-f]{64}", str(entry["sha256"])):
            raise PrepareError(
                f"{hub.repo}@{hub.revision[:12]}/{entry['path']}: the hub gives its sha256 as "
                f"{str(entry['sha256'])[:80]!r}, not 64 hex digits; check that HF_ENDPOINT "
                "names the Hugging Face hub, then run again"
            )
    atomic_write_text(path, json.dumps(files))
    return files


def plan(files, needed, where):
    """The line before the download: the bytes the budget needs by the token_count column."""
    whole = sum(file.entry["size"] for file in files)
    estimated, size, groups, count = 0, 0, 0, 0
    for file in files:
        if estimated >= needed:
            break
        metadata = file.footer()
        if "token_count" not in metadata.schema.names:
            return f"{where}: {whole:,} bytes in {len(files)} files; read until {needed:,} tokens"
        count += 1
        for number, (start, end) in enumerate(file.row_groups(metadata)):
            if estimated >= needed:
                break
            estimated += file.token_counts(metadata, number)
            size, groups = size + end - start, groups + 1
    part = f"{size:,} bytes ({groups:,} row groups of {count:,} files, by token_count)"
    return f"{where}: {needed:,} tokens are about {part} of {whole:,} in {len(files):,} files"


class PartialFile:
    """A hub file's sparse copy in the cache, its pieces indexed {"START-END": sha256}."""

    def __init__(self, folder, entry, hub):
        self.entry, self.hub, self.remote, self.fetched, self.bar = entry, hub, None, 0, None
        self.name = f"{hub.repo}@{hub.revision[:12]}/{entry['path']}"
        self.path = folder / "files" / f"{entry['sha256']}.parquet"
        self.index_path = self.path.with_suffix(".json")
        if self.path.exists() and self.index_path.exists():
            self.index = json.loads(self.index_path.read_text())
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "wb") as file:
                file.truncate(entry["size"])  # a hole where no piece is yet
            self.index = {"pieces": {}, "footer": None}

    def documents(self, wanted, count, free=0):
        """(texts, tokens, meta.json's record) of the first documents whose tokens (but the
        first `free` documents') reach `wanted`; all of them are checked against the LFS sha256."""
        metadata, texts, tokens, groups = self.footer(), [], 0, []
        for number, (start, end) in enumerate(self.row_groups(metadata)):
            group = self.piece(start, end, lambda n=number: self.texts(metadata, n))
            lengths = np.array(count(group), dtype=np.int64)
            lengths[: max(free - len(texts), 0)] = 0
            counts = np.cumsum(lengths, dtype=np.int64)
            take = min(int(np.searchsorted(counts, wanted - tokens)) + 1, len(group))
            texts += group[:take]
            added = int(counts[take - 1]) if take else 0
            tokens += added
            self.bar.update(added)
            sha256 = self.index["pieces"][f"{start}-{end}"]
            groups.append(dict(row_group=number, bytes=[start, end], documents=take, sha256=sha256))
            if tokens >= wanted:
                break
        whole = (
            len(groups) == metadata.num_row_groups
            and groups[-1]["documents"] == metadata.row_group(len(groups) - 1).num_rows
        )
        if whole and not self.matches_hub():
            self.bar.update(-tokens)
            for key in list(self.index["pieces"]):  # a damaged piece decoded: all once more
                start, end = map(int, key.split("-"))
                self.write(start, self.fetch(start, end))
                self.index["pieces"][key] = self.sha256(start, end)
            self.save()
            if not self.matches_hub():
                raise PrepareError(
                    f"{self.name}: its bytes, fetched twice, do not have the sha256 the hub "
                    f"publishes, {self.entry['sha256']} (damaged on the way?); run again"
                )
            return self.documents(wanted, count, free)
        footer, size = self.index["footer"], self.entry["size"]
        record = {key: self.entry[key] for key in ("path", "size", "sha256")}
        sha256 = self.index["pieces"][f"{footer}-{size}"]
        record.update(whole=whole, footer={"bytes": [footer, size], "sha256": sha256})
        return texts, tokens, {**record, "row_groups": groups}

    def footer(self):
        """The file's parquet metadata, from its footer."""
        import pyarrow.parquet as pq

        size, start = self.entry["size"], self.index["footer"]
        if start is None:
            end = self.fetch(size - 8, size)
            if end[4:] != MAGIC:
                raise PrepareError(f"{self.name}: not a parquet file (it does not end with PAR1)")
            start = size - 8 - int.from_bytes(end[:4], "little")
        metadata = self.piece(start, size, lambda: pq.read_metadata(self.path))
        self.index["footer"] = start
        self.save()
        return metadata

    def row_groups(self, metadata):
        """[(start, end)] of each row group's bytes, up to the footer."""
        starts = [0]  # the first holds the file's leading PAR1
        for number in range(1, metadata.num_row_groups):
            group = metadata.row_group(number)
            starts.append(min(chunk_start(group.column(c)) for c in range(group.num_columns)))
        return list(zip(starts, starts[1:] + [self.index["footer"]]))

    def token_counts(self, metadata, number):
        """Row group `number`'s token_count sum, plus an end-of-text a document."""
        column = metadata.schema.names.index("token_count")
        chunk = metadata.row_group(number).column(column)
        start = chunk_start(chunk)
        read = lambda: self.texts(metadata, number, "token_count")  # noqa: E731
        values = self.piece(start, start + chunk.total_compressed_size, read)
        return sum(values) + len(values)

    def texts(self, metadata, number, column="text"):
        """The values of one column of one row group of the copy."""
        import pyarrow.parquet as pq

        parquet = pq.ParquetFile(self.path, metadata=metadata, page_checksum_verification=True)
        return parquet.read_row_group(number, columns=[column]).column(0).to_pylist()

    def piece(self, start, end, decode):
        """decode() of the bytes [start, end), fetched unless the copy holds them; bytes that do
        not decode are fetched once more, then refused."""
        problem = None
        for attempt in range(2):
            if attempt or not self.holds(start, end):
                self.write(start, self.fetch(start, end))
            try:
                value = decode()
            except Exception as exc:  # pyarrow's errors of damaged bytes: OSError, ArrowInvalid
                problem = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
                continue
            self.index["pieces"][f"{start}-{end}"] = self.sha256(start, end)
            self.save()
            return value
        raise PrepareError(
            f"{self.name}: bytes {start:,} to {end:,}, fetched twice, do not decode "
            f"({problem}); run again"
        )

    def holds(self, start, end):
        return self.index["pieces"].get(f"{start}-{end}") == self.sha256(start, end)

    def sha256(self, start, end):
        with open(self.path, "rb") as file:
            file.seek(start)
            return hashlib.sha256(file.read(end - start)).hexdigest()

    def matches_hub(self):
        return self.sha256(0, self.entry["size"]) == self.entry["sha256"]

    def fetch(self, start, end):
        """The bytes [start, end) of the hub's file: one HTTP range request."""
        if self.remote is None:
            from huggingface_hub import HfFileSystem

            url = f"datasets/{self.hub.repo}@{self.hub.revision}/{self.entry['path']}"
            self.remote = HfFileSystem().open(url, "rb", cache_type="none")
        self.remote.seek(start)
        data = self.remote.read(end - start)
        self.fetched += len(data)
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.fetched:,} bytes of {self.entry['path']}", False)
        return data

    def write(self, start, data):
        with open(self.path, "r+b") as file:
            file.seek(start)
            file.write(data)
            file.flush()
            os.fsync(file.fileno())

    def save(self):
        atomic_write_text(self.index_path, json.dumps(self.index))


def chunk_start(chunk):
    """Where a column chunk's bytes start: its dictionary page, else its first data page."""
    return chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
