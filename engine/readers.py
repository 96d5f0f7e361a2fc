"""The input of the datatrove engine: its files, their lengths and each task's slice, in
`datasets`' order (files in order, rows in file order), so that both engines see the same
documents.
"""

import os
from pathlib import Path

import numpy as np

from documents.corpus import (
    check_text_column,
    file_kind,
    json_array_rows,
    json_line_text,
    json_lines,
    line_start,
    parquet_texts,
)
from documents.inputs import builder, expand_data_files, hub_files, source_name
from safety.errors import PrepareError
from safety.files import sha256_file
from safety.text import read_text


def file_identity(path):
    """A file's path, size and sha256 (not its time, which cp -p puts back)."""
    return [os.path.abspath(path), os.stat(path).st_size, sha256_file(path)]


def file_lengths(files, kind):
    """How much of each file there is to share out: rows (parquet), bytes (JSON Lines), 1 (.txt,
    a JSON array: read whole by one task)."""
    if kind == "text":
        return [1] * len(files)
    if kind == "json":
        return [1 if is_json_array(path) else os.path.getsize(path) for path in files]
    import pyarrow.parquet as pq

    lengths = []
    for path in files:
        try:
            with open(path, "rb") as f:
                parquet = pq.ParquetFile(f)
                check_text_column(path, parquet.schema_arrow.names)  # the datasets engine's
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


# A task costs about 60 ms to start, run and record (600 short documents take 1.1 s in 1 task,
# 4.5 s in 60), about what tokenizing 100 of them costs: a task gets at least this much work
MIN_TASK_DOCUMENTS = 100
MIN_TASK_BYTES = 1 << 20


def most_tasks(files, kind, lengths):
    """(The most tasks worth starting, each a piece no task can split and MIN_TASK_DOCUMENTS or
    MIN_TASK_BYTES; the input's size): 600 lines of 90 kB -> (6, "600 lines, 0.1 MB")."""
    size = sum(os.path.getsize(path) for path in files)
    if kind == "text":
        documents, pieces, unit = len(files), len(files), "files"
    elif kind == "json":  # a line is a document, or a blank one; an array is one piece
        documents = sum(1 if is_json_array(p) else count_lines(p) for p in files)
        pieces, unit = documents, "lines"
    else:
        import pyarrow.parquet as pq

        documents, pieces, unit = sum(lengths), 0, "rows"
        for path in files:
            with open(path, "rb") as f:
                pieces += pq.ParquetFile(f).metadata.num_row_groups
    worth = max(documents // MIN_TASK_DOCUMENTS, size // MIN_TASK_BYTES, 1)
    return min(pieces, worth) or 1, f"{documents:,} {unit}, {size / 1e6:,.1f} MB"


def is_json_array(path):
    """Whether a .json file is one JSON array of rows, as `datasets` reads one, not JSON Lines."""
    return file_kind(path) == "json-array"


def count_lines(path):
    """The lines of a file, an unended last one too: b"a\\nb\\n" -> 2, b"a\\nb" -> 2."""
    lines, last = 0, b"\n"
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            lines, last = lines + block.count(b"\n"), block[-1:]
    return lines + (last != b"\n")


class PieceReader:
    """(position, text) for each document of a piece of a file, exactly the rows datasets reads.

    text is None when missing or not a string; position: the row, or a JSON line's byte offset
    (each line starting in [start, end)). After the iteration, .begin and .end are the span of
    the file covered, which the plan checks.
    """

    def __init__(self, path, kind, start, end):
        self.path, self.kind, self.start, self.end = path, kind, start, end
        self.begin = start

    def __iter__(self):
        if self.kind == "parquet":
            for row, text in parquet_texts(self.path, "text", self.start, self.end):
                yield row, text if isinstance(text, str) else None
        elif self.kind == "text":
            yield 0, read_text(self.path)  # as datasets' text reader opens it
        elif is_json_array(self.path):
            for row, fields in enumerate(json_array_rows(self.path)):
                text = fields.get("text") if isinstance(fields, dict) else None
                yield row, text if isinstance(text, str) else None
        else:  # the line that straddles `start` belongs to the piece before
            with open(self.path, "rb") as f:
                self.begin, self.end = line_start(f, self.start), line_start(f, self.end)
                for offset, line in json_lines(f, self.begin, self.end):
                    yield offset, json_line_text(line, self.path, offset, "text")


def input_files(data_files, hub, outputs=frozenset()):
    """The files to read, in `datasets`' order, and their kind: ([paths], "json")."""
    if data_files is None:
        return hub_files(hub, source_name(None, hub))[0], "parquet"
    files = expand_data_files(data_files, outputs)
    return [str(Path(path).resolve()) for path in files], builder(files[0])[0]
