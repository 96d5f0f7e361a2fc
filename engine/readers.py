"""Reading the input of the datatrove engine: files, their lengths, the pieces of the tasks.

Each task of the tokenize stage reads its slice of the input: contiguous pieces of the sorted
files (rows of parquet files, lines of JSON Lines files, whole .txt files), in `datasets`' order
(files in order, rows in file order), so that both engines see the same documents.
"""

import json
import os
from pathlib import Path

import numpy as np

from prepare_common import source_name
from safety.errors import PrepareError
from safety.files import read_text, sha256_file
from safety.inputs import BUILDERS, expand_data_files, hub_files

JSON_WHITESPACE = b" \t\r\n"

# ---------------------------------------------------------------------------------------------
# the input: files, their lengths, and the slices of the tasks


def file_identity(path):
    """What identifies a file's content for the work directory's name: path, size, and its
    content's sha256. Not its time: an input edited in place with its size and time put back
    (cp -p, rsync -t, tar x) is another input."""
    return [os.path.abspath(path), os.stat(path).st_size, sha256_file(path)]


def text_field_type(schema, path):
    """The arrow type of a parquet file's `text` column; no such column is the datasets engine's error."""
    if "text" not in schema.names:
        raise PrepareError(
            f"{path} has no 'text' column; its columns are: {', '.join(schema.names)}"
        )
    return schema.field("text").type


def file_lengths(files, kind):
    """How much of each file there is to share out: rows (parquet), bytes (JSON), 1 (.txt)."""
    if kind == "text":
        return [1] * len(files)
    if kind == "json":
        return [file_identity(path)[1] for path in files]
    import pyarrow.parquet as pq

    lengths = []
    for path in files:
        try:
            with open(path, "rb") as f:
                parquet = pq.ParquetFile(f)
                text_field_type(parquet.schema_arrow, path)
                lengths.append(parquet.metadata.num_rows)
        except PrepareError:
            raise
        except Exception as exc:  # not a parquet file, truncated footer, unreadable
            raise PrepareError(
                f"cannot read {path} as a parquet file ({type(exc).__name__}: {exc}); "
                f"replace or remove it"
            ) from None
    return lengths


def task_slices(lengths, tasks):
    """Share files of these lengths into `tasks` contiguous slices of (file, start, end) pieces.

    [3, 5] rows, 3 tasks -> [[(0, 0, 2)], [(0, 2, 3), (1, 0, 2)], [(1, 2, 5)]]
    Task t gets units [t*total//tasks, (t+1)*total//tasks) of all files end to end, so there can
    be more tasks than files (a task with an empty slice writes empty files).
    """
    total = sum(lengths)
    file_starts = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
    slices = []
    for task in range(tasks):
        low, high = task * total // tasks, (task + 1) * total // tasks
        pieces = []
        for file_number, length in enumerate(lengths):
            start = max(low - int(file_starts[file_number]), 0)
            end = min(high - int(file_starts[file_number]), length)
            if start < end:
                pieces.append((file_number, start, end))
        slices.append(pieces)
    return slices


# ---------------------------------------------------------------------------------------------
# reading a piece: the documents `datasets` reads, row for row


def read_parquet_rows(path, start, end):
    import pyarrow.parquet as pq

    with open(path, "rb") as f:
        parquet = pq.ParquetFile(f)
        is_string = holds_strings(text_field_type(parquet.schema_arrow, path))
        row = 0
        for group in range(parquet.metadata.num_row_groups):
            group_rows = parquet.metadata.row_group(group).num_rows
            if row + group_rows > start and row < end:
                texts = parquet.read_row_group(group, columns=["text"]).column("text")
                low, high = max(start - row, 0), min(end - row, group_rows)
                values = texts.slice(low, high - low).to_pylist()
                for offset, text in enumerate(values):
                    yield row + low + offset, text if is_string else None
            row += group_rows


def holds_strings(arrow_type):
    """Whether a column of this arrow type holds strings, however encoded: string, large_string,
    string_view, or a dictionary of them (what datasets reads as strings too)."""
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    is_view = getattr(pa.types, "is_string_view", lambda _: False)
    return (
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or is_view(arrow_type)
    )


# A task costs about 60 ms to start, run and record (600 short documents take 1.1 s in 1 task,
# 4.5 s in 60), about what tokenizing 100 of them costs: a task gets at least this much work
MIN_TASK_DOCUMENTS = 100
MIN_TASK_BYTES = 1 << 20


def most_tasks(files, kind, lengths):
    """The most tasks worth starting on this input: each one at least MIN_TASK_DOCUMENTS
    documents or MIN_TASK_BYTES of input, and a piece no task can split (a parquet row group, a
    line, a .txt file). -> (tasks, the input's size in words): 600 lines of 90 kB -> (6, "600
    lines, 0.1 MB")."""
    size = sum(os.path.getsize(path) for path in files)
    if kind == "text":
        documents = pieces = len(files)
        unit = "files"
    elif kind == "json":  # a line is a document, or a blank one
        documents = pieces = sum(count_lines(path) for path in files)
        unit = "lines"
    else:
        import pyarrow.parquet as pq

        documents, pieces, unit = sum(lengths), 0, "rows"
        for path in files:
            with open(path, "rb") as f:
                pieces += pq.ParquetFile(f).metadata.num_row_groups
    worth = max(documents // MIN_TASK_DOCUMENTS, size // MIN_TASK_BYTES, 1)
    return min(pieces, worth) or 1, f"{documents:,} {unit}, {size / 1e6:,.1f} MB"


def count_lines(path):
    """The lines of a file, an unended last one too: b"a\\nb\\n" -> 2, b"a\\nb" -> 2."""
    lines, last = 0, b"\n"
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            lines, last = lines + block.count(b"\n"), block[-1:]
    return lines + (last != b"\n")


def _refuse_duplicate_keys(pairs):
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("a key is specified twice")  # pyarrow, hence datasets, refuses it too
    return obj


# json.loads(line, object_pairs_hook=...) without a new JSONDecoder per line (a sixth of the
# reader's time on short documents): bytes are decoded as json.loads decodes them
JSON_DECODER = json.JSONDecoder(object_pairs_hook=_refuse_duplicate_keys)


def json_text(line, path, offset):
    """The `text` of one JSON Lines object; None when missing, null or not a string."""
    try:
        if line.lstrip(JSON_WHITESPACE).startswith(b"["):
            raise ValueError("a JSON array; the datatrove engine reads JSON Lines only")
        document = JSON_DECODER.decode(line.decode(json.detect_encoding(line), "surrogatepass"))
        if document is not None and not isinstance(document, dict):
            raise ValueError(f"a JSON {type(document).__name__}, not an object")
        text = None if document is None else document.get("text")
        if isinstance(text, str) and b"\\u" in line:
            text.encode("utf-8")  # a lone surrogate (\ud800): datasets refuses it
    except (ValueError, UnicodeError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        reason = reason.splitlines()[0][:200]
        raise PrepareError(
            f"{path}: the line at byte {offset:,} is not a valid JSON Lines object ({reason}); "
            f"fix or remove that line"
        ) from None
    return text if isinstance(text, str) else None


def batches(items, size):
    """[1, 2, 3, 4, 5] with size 2 -> [1, 2], [3, 4], [5]"""
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class PieceReader:
    """(position, text) for each document of a piece of a file, exactly the rows datasets reads.

    text is None when missing, null or not a string. parquet: rows start..end-1, position = row.
    JSON Lines: every line that starts at a byte offset in [start, end), position = that offset;
    blank lines are skipped, as datasets' JSON reader skips them. .txt: the whole file is one
    document, position 0. What datasets refuses (invalid JSON, a duplicated key, invalid UTF-8)
    is a PrepareError naming the file and the byte offset. After the iteration, .begin and .end
    are the span of the file covered (rows, or bytes for JSON Lines), which the plan checks.
    """

    def __init__(self, path, kind, start, end):
        self.path, self.kind, self.start, self.end = path, kind, start, end
        self.begin = start

    def __iter__(self):
        if self.kind == "parquet":
            yield from read_parquet_rows(self.path, self.start, self.end)
            return
        if self.kind == "text":
            yield 0, read_text(self.path)  # as datasets' text reader opens it
            return
        with open(self.path, "rb") as f:
            if self.start > 0:  # the line that straddles `start` belongs to the piece before
                f.seek(self.start - 1)
                f.readline()
            offset = self.begin = f.tell()
            while offset < self.end:
                line = f.readline()
                if not line:
                    break
                position = offset
                if offset == 0 and line.startswith(b"\xef\xbb\xbf"):
                    line, position = line[3:], 3  # a byte order mark: datasets ignores it
                if line.strip(JSON_WHITESPACE):
                    yield position, json_text(line, self.path, position)
                offset = position + len(line)
            self.end = offset


def input_files(data_files, hub):
    """The files to read, in `datasets`' order, and their kind: ([paths], "json"). The hub's are
    downloaded first, each checked against the sha256 the hub publishes (`hub_files`): on a
    cluster, into a hub cache (HF_HOME) that the nodes share, as they share the work directory."""
    if data_files is None:
        return hub_files(hub, source_name(None, hub))[0], "parquet"
    files = expand_data_files(data_files)
    return [str(Path(path).resolve()) for path in files], BUILDERS[Path(files[0]).suffix.lower()][0]
