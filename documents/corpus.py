"""The one reader of document files (the lessons' --data-files, the engine, train_tokenizer.py),
and a corpus read as pretoken counts, in memory that does not grow with the corpus.

    counts = count_table(["shards/*.parquet"], special_tokens=["<|endoftext|>"]).to_counter()
    # Counter({" the": 5_231_208, ",": 4_517_117, ...})

A file's kind is its suffix (KINDS): .jsonl/.json one JSON object a line (a .json starting with
`[` is one array), .parquet one document a row, .txt (and, for the trainer, any other suffix)
one document. A *piece* is one worker's job (bytes or row groups of a file, `plan_pieces`), a
*block* what it reads at a time (BLOCK_BYTES). Workers send back PretokenTables, never text.
The result equals `train.count_pretokens` over each document, summed: a text is only cut right
after a newline with a non-space character on both sides, or right before a special token.
"""

import glob
import json
import os
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from bpe.checks import check_pattern, check_special_tokens, check_training_args, check_workers
from bpe.fragments import FragmentCounter
from bpe.patterns import BUILTIN_PATTERNS, is_line_cut, spaceless_around
from bpe.simple import special_token_regex
from bpe.table import PretokenTable
from bpe.train import count_pretokens, train_bpe_from_counts
from safety.errors import PrepareError
from safety.text import decode, read_text, shown

from .parallel import ordered_map

# Measured on 20 MB of Linux source, two workers: peak PSS 91 MB with 1 MB blocks, 75 MB with
# 256 KB; 8 MB pieces took 1.28x the memory of the text, 2 MB pieces 1.15x.
BLOCK_BYTES = 256 << 10
PIECE_BYTES = 2 << 20
PIECES_PER_WORKER = 16
# Below these sizes, starting worker processes costs more than it saves.
PARALLEL_MIN_BYTES = 1 << 20
PARALLEL_MIN_CHARS = 500_000
PARQUET_BATCH_ROWS = 1024


@dataclass(frozen=True)
class Piece:
    """Bytes [start, end) of a text or JSON lines file, or row groups of a parquet file."""

    path: str
    kind: str  # "text", "jsonl", "json-array" or "parquet"
    start: int
    end: int
    size: int
    first_row: int = 0  # parquet: the index of the piece's first row in the file
    stop_row: int = -1  # parquet, JSON array: the row to stop before (-1: to the end)


@dataclass(frozen=True)
class Reading:
    pattern: str
    special_tokens: tuple
    text_column: str = "text"


def expand_inputs(inputs):
    """Each PATH|GLOB -> its files, sorted, in the order given; a name matching nothing raises.

    ["b.txt", "a/*.txt"] -> ["b.txt", "a/1.txt", "a/2.txt"]
    """
    files = {}  # a file named twice (a.txt, ./a.txt, a link) keeps its first place
    for name in inputs:
        name = os.path.expanduser(str(name))
        matches = [name] if os.path.exists(name) else sorted(glob.glob(name, recursive=True))
        if not matches:
            raise PrepareError(f"{name} does not exist (nor matches any file); check the path")
        for path in matches:
            if os.path.isdir(path):
                raise PrepareError(
                    f"{path} is a folder; give the files in it, or a glob such as "
                    f"{folder_glob(path)}"
                )
            if not os.path.isfile(path):
                raise PrepareError(f"{path} is not a file; give files or a glob of files")
            files.setdefault(os.path.realpath(path), path)
    return list(files.values())


def folder_glob(folder):
    """ "corpus/" holding a.jsonl, b.jsonl -> "corpus/*.jsonl" (the most common suffix)."""
    suffixes = [Path(name).suffix for name in os.listdir(folder) if Path(name).suffix]
    suffix = max(sorted(set(suffixes)), key=suffixes.count) if suffixes else ".txt"
    return os.path.join(folder.rstrip("/\\") or folder, f"*{suffix}")


KINDS = {".parquet": "parquet", ".jsonl": "jsonl", ".json": "jsonl", ".txt": "text"}


def file_kind(path):
    """ "a.parquet" -> "parquet"; "a.json" -> "jsonl" or "json-array"; "a.md" -> "text"."""
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        with _open(path) as file:
            start = file.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()  # a BOM, then [
        return "json-array" if start.startswith(b"[") else "jsonl"
    return KINDS.get(suffix, "text")


def _open(path):
    try:
        return open(path, "rb")
    except OSError as exc:
        raise PrepareError(f"cannot read {path}: {exc.strerror}") from None


def _char_ending_at(data, end):
    """The character whose last byte is data[end - 1] (U+FFFD if that is not UTF-8)."""
    start = end - 1
    while start > 0 and end - start < 4 and 0x80 <= data[start] < 0xC0:
        start -= 1
    return data[start:end].decode("utf-8", "replace")[-1:]


def _char_starting_at(data, start):
    lead = data[start]
    length = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    return data[start : start + length].decode("utf-8", "replace")[:1]


def straddles_special(text, position, special_tokens):
    """Whether `position` is strictly inside a special token (str or bytes alike):
    "a<|x|>b", 3, ["<|x|>"] -> True; "a<|x|>b", 1, ["<|x|>"] -> False."""
    return any(
        text.find(token, max(0, position - len(token) + 1), position + len(token) - 1) != -1
        for token in special_tokens
    )


def piece_bounds(text, target_chars, pattern="gpt2", special_tokens=()):
    """[0, ..., len(text)]: cuts about `target_chars` apart that leave the pretokens unchanged
    (after "x\\nY" for a built-in pattern; before a special token for any)."""
    on_lines = check_pattern(pattern) in BUILTIN_PATTERNS
    special = special_token_regex(special_tokens) if special_tokens else None
    bounds = [0]
    position = target_chars
    while position < len(text):
        cut = None
        newline = text.find("\n", position) if on_lines else -1
        while newline != -1 and cut is None:
            at = newline + 1
            if is_line_cut(text, at) and not straddles_special(text, at, special_tokens):
                cut = at
            newline = text.find("\n", at)
        if special is not None:
            match = special.search(text, position)
            while match and straddles_special(text, match.start(), special_tokens):
                match = special.search(text, match.start() + 1)
            if match and (cut is None or match.start() < cut):
                cut = match.start()
        if cut is None or cut >= len(text):
            break
        bounds.append(cut)
        position = cut + target_chars
    bounds.append(len(text))
    return bounds


def count_texts(texts, pattern="gpt2", special_tokens=(), num_workers=1):
    """bpe.train.count_pretokens of each text, summed, in worker processes over pieces of each
    text cut by piece_bounds; equal result."""
    num_workers = check_workers(num_workers) or os.cpu_count() or 1
    counts = Counter()
    for text in texts:
        bounds = [0, len(text)]
        if num_workers >= 2 and len(text) >= PARALLEL_MIN_CHARS:
            num_pieces = num_workers * (4 if len(text) > 16 * PARALLEL_MIN_CHARS else 1)
            bounds = piece_bounds(text, len(text) // num_pieces + 1, pattern, special_tokens)
        jobs = [(text[a:b], pattern, special_tokens) for a, b in zip(bounds, bounds[1:])]
        for piece_counts in ordered_map(count_pretokens, jobs, min(num_workers, len(jobs))):
            counts.update(piece_counts)
    return counts


class Cutter:
    """Where UTF-8 bytes may be cut (`pattern` a regex, not a name):
    Cutter(GPT2_PATTERN, []).cut(b"ab\\ncd\\nef", 1, 8, last=True) -> 6."""

    def __init__(self, pattern, special_tokens):
        self.on_lines = pattern in BUILTIN_PATTERNS
        self.specials = [token.encode("utf-8") for token in special_tokens]
        # A cut this close to the end of the bytes at hand cannot be checked yet.
        self.margin = max([4] + [len(token) for token in self.specials])

    def _line_cut(self, data, cut):
        return (
            cut >= 2
            and spaceless_around(_char_ending_at(data, cut - 1), _char_starting_at(data, cut))
            and not straddles_special(data, cut, self.specials)
        )

    def cut(self, data, start, limit, last=False):
        """The first (`last`: the last) cut at or after `start` before a special token that ends
        by `limit`, or after a newline before `limit` (last) or up to it (first), or -1. Each
        cut's neighbours must be at hand: data[:limit + margin], or data ends at a cut."""
        find = data.rfind if last else data.find
        best = -1
        if self.on_lines:
            newline = find(b"\n", max(start - 1, 1), limit - last)
            while newline != -1 and best == -1:
                if self._line_cut(data, newline + 1):
                    best = newline + 1
                elif last:
                    newline = data.rfind(b"\n", max(start - 1, 1), newline)
                else:
                    newline = data.find(b"\n", newline + 1, limit)
        for token in self.specials:
            end = limit if last or best == -1 else best  # first: only a token before `best`
            at = find(token, start, end)
            while at != -1 and (not last or at > best):
                if not straddles_special(data, at, self.specials):
                    best = at
                    break
                at = data.rfind(token, start, at) if last else data.find(token, at + 1, end)
        return best


def plan_pieces(paths, reading, piece_bytes=None):
    """The pieces of every file, in file order, of about piece_bytes (default PIECE_BYTES)."""
    piece_bytes = piece_bytes or PIECE_BYTES
    pieces = []
    for path in paths:
        kind = file_kind(path)
        if kind == "parquet":
            pieces += _parquet_pieces(path, reading.text_column)
        elif kind == "json-array":
            pieces.append(Piece(path, kind, 0, os.path.getsize(path), os.path.getsize(path)))
        else:
            pieces += _byte_pieces(path, kind, reading, piece_bytes)
    return pieces


def _byte_pieces(path, kind, reading, piece_bytes):
    size = os.path.getsize(path)
    cutter = Cutter(reading.pattern, reading.special_tokens)
    if kind == "text" and not cutter.on_lines and not cutter.specials:
        return [Piece(path, kind, 0, size, size)]  # a custom pattern: no place to cut
    bounds = [0]
    with _open(path) as file:
        while bounds[-1] + piece_bytes < size:
            at = bounds[-1] + piece_bytes
            cut = _next_cut(file, at, cutter) if kind == "text" else line_start(file, at)
            if cut >= size:
                break
            bounds.append(cut)
    bounds.append(size)
    return [Piece(path, kind, a, b, b - a) for a, b in zip(bounds, bounds[1:])]


def _next_cut(file, position, cutter):
    """The first cut at or after byte `position` of a text file, or its size."""
    back = min(position, 8)  # the character before a newline is looked at too
    file.seek(position - back)
    data = b""
    searched = back  # no cut before this
    while True:
        block = file.read(BLOCK_BYTES)
        data += block
        cut = cutter.cut(data, searched, len(data) - (cutter.margin if block else 1))
        searched = max(searched, len(data) - cutter.margin - 8)
        if cut != -1 or not block:
            return position - back + (len(data) if cut == -1 else cut)


# What a missing text column's error says to do: the trainer's, a lesson's
TEXT_COLUMN_OPTION = "name yours with --text-column"
ONLY_TEXT_COLUMN = "this command reads that one only"


def check_text_column(where, names, text_column="text", hint=""):
    """ "a.parquet has no 'text' column; its columns are: id, body", if it has none."""
    if text_column not in names:
        raise PrepareError(
            f"{where} has no {shown(text_column)} column; its columns are: {', '.join(names)}{hint}"
        )


def _parquet_pieces(path, text_column, fix=TEXT_COLUMN_OPTION):
    metadata = _parquet_file(path).metadata
    check_text_column(path, metadata.schema.to_arrow_schema().names, text_column, f"; {fix}")
    size = os.path.getsize(path)
    rows = max(metadata.num_rows, 1)
    pieces, first_row = [], 0
    for group in range(metadata.num_row_groups):
        group_rows = metadata.row_group(group).num_rows
        share = size * group_rows // rows
        pieces.append(Piece(path, "parquet", group, group + 1, share, first_row))
        first_row += group_rows
    return pieces


def _parquet_file(path):
    import pyarrow
    import pyarrow.parquet

    try:
        return pyarrow.parquet.ParquetFile(path)
    except (OSError, pyarrow.ArrowException) as exc:
        raise PrepareError(f"{path}: cannot be read as parquet ({exc})") from None


def cap_pieces(pieces, reading, max_chars):
    """The pieces cut to the first whole documents (a row, or a text up to a cut) within
    max_chars characters, in file order."""
    capped, budget = [], max_chars
    for piece in pieces:
        stop = None
        for start, chars in _documents_with_sizes(piece, reading):
            if chars > budget:
                stop = start
                break
            budget -= chars
        if stop is None:
            capped.append(piece)
            continue
        if piece.kind in ("parquet", "json-array"):
            share = piece.size * (stop - piece.first_row) // max(_rows_in(piece), 1)
            capped.append(replace(piece, stop_row=stop, size=share))
        elif stop > piece.start:
            capped.append(replace(piece, end=stop, size=stop - piece.start))
        break
    return capped


def _rows_in(piece):
    if piece.kind == "json-array":
        return len(json_array_rows(piece.path))
    metadata = _parquet_file(piece.path).metadata
    return sum(metadata.row_group(g).num_rows for g in range(piece.start, piece.end))


def leaves_out(inputs, reading, max_chars):
    """Whether max_chars leaves a document out: ["d.jsonl"] of "some words", 3 -> True."""
    pieces = plan_pieces(expand_inputs(inputs), reading)
    return cap_pieces(pieces, reading, max_chars) != pieces


def no_text_message(inputs, max_chars=None):
    """The error for files with no text to train on; max_chars: the cap that emptied them."""
    names = " ".join(map(str, inputs))
    if max_chars is None:
        return f"{names}: no text to train on (no character outside the special tokens)"
    return (
        f"{names}: no text to train on within --max-chars {max_chars:,}: the first document "
        f"with text is longer, and a document is taken whole or not at all; raise --max-chars"
    )


def _documents_with_sizes(piece, reading):
    if piece.kind != "text":
        for start, text in _rows(piece, reading.text_column):
            yield start, len(text)
        return
    cutter = Cutter(reading.pattern, reading.special_tokens)
    for offset, data in _blocks(piece, cutter):
        start = 0
        while start < len(data):
            cut = cutter.cut(data, start + 1, len(data) - 1)
            cut = len(data) if cut == -1 else cut
            text = decode(data[start:cut], piece.path, offset + start)
            yield offset + start, len(text)
            start = cut


def documents(paths, text_column="text", fix=TEXT_COLUMN_OPTION):
    """Each document's text, in file order: ["a.txt", "b.jsonl"] -> "all of a.txt", "b.jsonl's
    first row's text", ...; a row without a string text raises, saying `fix`."""
    for path in paths:
        kind = file_kind(path)
        if kind == "text":
            yield read_text(path)
            continue
        size = os.path.getsize(path)
        whole = [Piece(path, kind, 0, size, size)]
        for piece in _parquet_pieces(path, text_column, fix) if kind == "parquet" else whole:
            yield from (text for _, text in _rows(piece, text_column, fix))


def count_piece(piece, reading):
    """{pretoken: count} of one piece's documents."""
    counter = FragmentCounter(reading.pattern, reading.special_tokens)
    for text in piece_texts(piece, reading):
        counter.add(text)
    return counter.pretoken_counts()


def piece_texts(piece, reading):
    """The text of one piece: a text piece in blocks, else its rows."""
    if piece.kind == "text":
        for offset, data in _blocks(piece, Cutter(reading.pattern, reading.special_tokens)):
            yield decode(data, piece.path, offset)
    else:
        for _, text in _rows(piece, reading.text_column):
            yield text


def _blocks(piece, cutter):
    """(byte offset, bytes) of a text piece, in blocks of about BLOCK_BYTES ending at cuts."""
    with _open(piece.path) as file:
        file.seek(piece.start)
        data = b""
        offset = piece.start  # of data[0] in the file
        position = piece.start  # how far the file has been read
        while position < piece.end or data:
            block = file.read(min(BLOCK_BYTES, piece.end - position))
            position = position + len(block) if block else piece.end
            data += block
            cut = len(data)
            if position < piece.end:
                cut = cutter.cut(data, 1, len(data) - cutter.margin, last=True)
                if cut == -1:
                    continue  # no place to cut yet: read on
            yield offset, data[:cut]
            data = data[cut:]
            offset += cut


def _rows(piece, text_column, fix=TEXT_COLUMN_OPTION):
    """(row index or line offset, text) of each row; a row without a string text raises."""
    path = piece.path
    if piece.kind == "parquet":
        end = piece.first_row + _rows_in(piece) if piece.stop_row == -1 else piece.stop_row
        for row, text in parquet_texts(path, text_column, piece.first_row, end):
            yield row, _string(text, path, f"row {row}", text_column)
    elif piece.kind == "json-array":
        rows = json_array_rows(path)
        for number in range(len(rows) if piece.stop_row == -1 else piece.stop_row):
            yield number, _text_of(rows[number], path, f"row {number}", text_column, fix)
    else:
        with _open(path) as file:
            for offset, line in json_lines(file, piece.start, piece.end):
                text = json_line_text(line, path, offset, text_column)
                if text is None:  # _text_of says what is there instead (and raises)
                    _text_of(json.loads(line), path, _line_at(path, offset), text_column, fix)
                yield offset, text


def _text_of(row, path, where, text_column, fix=TEXT_COLUMN_OPTION):
    if not isinstance(row, dict) or text_column not in row:
        raise PrepareError(f"{path} {where}: no {shown(text_column)} field; {fix}")
    text = _string(row[text_column], path, where, text_column)
    problem = _lone_surrogate(text)
    if problem:
        raise PrepareError(f"{path} {where}: {problem}; fix or remove that row")
    return text


def _string(text, path, where, text_column):
    if not isinstance(text, str):
        kind = "null" if text is None else type(text).__name__
        raise PrepareError(
            f"{path} {where}: {shown(text_column)} is {kind}, not a string; fix or remove that row"
        )
    return text


def json_array_rows(path):
    """The rows of a JSON array file, read whole: '[{"text": "a"}]' -> [{"text": "a"}]."""
    with _open(path) as file:
        try:
            rows = json.load(file)
        except ValueError as exc:
            raise PrepareError(f"{path} is not valid JSON ({exc})") from None
        except RecursionError:
            raise PrepareError(f"{path}: JSON nested too deeply to read") from None
    if not isinstance(rows, list):
        raise PrepareError(f"{path} is a JSON {type(rows).__name__}, not a list of rows")
    return rows


JSON_WHITESPACE = b" \t\r\n"


def line_start(file, position):
    """Where the first line at or after byte `position` starts: b"ab\\ncd" at 1 -> 3, at 3 -> 3."""
    if position == 0:
        return 0
    file.seek(position - 1)
    file.readline()
    return file.tell()


def json_lines(file, start, end):
    """(byte offset, line) of each non-blank line starting in [start, end), no opening BOM:
    b'{"text": "a"}\\n\\n{"text": "b"}\\n', 0, 30 -> (0, b'{"text": "a"}\\n'), (15, ...)."""
    file.seek(start)
    offset = start
    while offset < end:
        line = file.readline()
        if not line:
            break
        content = line.removeprefix(b"\xef\xbb\xbf") if offset == 0 else line
        if content.strip(JSON_WHITESPACE):
            yield offset, content
        offset += len(line)


def _object_of_unique_keys(pairs):
    row = dict(pairs)
    if len(row) < len(pairs):  # pyarrow, so `datasets`, refuses it (json.loads keeps the last)
        keys = [key for key, _ in pairs]
        twice = next(key for key in keys if keys.count(key) > 1)
        raise ValueError(f"the key {shown(twice)} appears twice")
    return row


# One decoder for every line (one per line took a sixth of the engine's reading time)
JSON_DECODER = json.JSONDecoder(object_pairs_hook=_object_of_unique_keys)


def json_line_text(line, path, offset, text_column="text"):
    """The text_column of one JSON line, None if missing or not a string: b'{"text": "a"}' ->
    "a"; b'{"text": 5}', b'null' -> None. What `datasets` refuses raises, naming the line."""
    if line.lstrip(JSON_WHITESPACE).startswith(b"["):  # one line of an array, or its first
        problem = "a JSON array, not an object (JSON Lines hold one object a line)"
        raise _bad_line(path, offset, problem)
    try:
        row = JSON_DECODER.decode(line.decode(json.detect_encoding(line)))
    except UnicodeDecodeError as exc:
        problem = f"not valid UTF-8 (byte {exc.start:,} of the line is {line[exc.start :][:1]!r})"
        raise _bad_line(path, offset, problem) from None
    except ValueError as exc:  # not JSON, a key twice
        raise _bad_line(path, offset, f"not valid JSON ({exc})") from None
    except RecursionError:
        raise _bad_line(path, offset, "JSON nested too deeply to read") from None
    if row is not None and not isinstance(row, dict):
        raise _bad_line(path, offset, f"a JSON {type(row).__name__}, not an object")
    text = None if row is None else row.get(text_column)
    if not isinstance(text, str):
        return None
    # the line is UTF-8: only a "\ud800" escape makes a lone surrogate
    problem = _lone_surrogate(text) if b"\\u" in line else None
    if problem:
        raise _bad_line(path, offset, problem)
    return text


def _bad_line(path, offset, problem):
    return PrepareError(f"{path} {_line_at(path, offset)}: {problem}; fix or remove that line")


def _lone_surrogate(text):
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (
            f"the text holds a lone surrogate (\\u{ord(text[exc.start]):04x} at character "
            f"{exc.start:,}), which is no character"
        )
    return None


def _line_at(path, offset):
    with _open(path) as file:
        blocks = iter(lambda: file.read(min(1 << 20, offset - file.tell())), b"")
        newlines = sum(block.count(b"\n") for block in blocks)
    return f"line {newlines + 1:,}"


def parquet_texts(path, text_column, start, end):
    """(row, value of text_column) for rows [start, end): ("a.parquet", "text", 2, 4) ->
    (2, "c"), (3, None)."""
    parquet = _parquet_file(path)
    groups, row = [], None  # the row groups to read; the first one's first row
    first = 0
    for group in range(parquet.metadata.num_row_groups):
        rows = parquet.metadata.row_group(group).num_rows
        if first < end and first + rows > start:
            groups.append(group)
            row = first if row is None else row
        first += rows
    if not groups:
        return
    batches = parquet.iter_batches(PARQUET_BATCH_ROWS, row_groups=groups, columns=[text_column])
    for batch in batches:
        low, high = max(start - row, 0), min(end - row, batch.num_rows)
        if low < high:
            for number, text in enumerate(batch.column(0).slice(low, high - low).to_pylist()):
                yield row + low + number, text
        row += batch.num_rows


def _count_job(piece, reading):
    return PretokenTable.from_counts(count_piece(piece, reading))


# Pending tables are added up once they hold this many pretokens, or as many as the total
PENDING_PRETOKENS = 1 << 20


def count_table(
    inputs,
    pattern="gpt2",
    special_tokens=(),
    text_column="text",
    max_chars=None,
    num_workers=None,
    progress=None,
):
    """The pretoken counts of every document of the files (globs allowed), as a PretokenTable;
    max_chars: the first documents only (cap_pieces); progress("read", done, total) in bytes."""
    num_workers = check_workers(num_workers) or os.cpu_count() or 1
    reading = Reading(
        check_pattern(pattern), tuple(check_special_tokens(special_tokens)), text_column
    )
    paths = expand_inputs(inputs)
    size = sum(os.path.getsize(path) for path in paths)
    piece_bytes = size // (PIECES_PER_WORKER * num_workers) + 1
    piece_bytes = max(BLOCK_BYTES, min(PIECE_BYTES, piece_bytes))
    pieces = plan_pieces(paths, reading, piece_bytes)
    if max_chars is not None:
        pieces = cap_pieces(pieces, reading, max_chars)
    total = sum(piece.size for piece in pieces)
    jobs = [(piece, reading) for piece in pieces]
    table, pending, done = PretokenTable.total([]), [], 0
    processes = min(num_workers, len(jobs)) if total >= PARALLEL_MIN_BYTES else 1
    for piece_table, piece in zip(ordered_map(_count_job, jobs, processes), pieces):
        pending.append(piece_table)
        if sum(map(len, pending)) >= max(len(table), PENDING_PRETOKENS):
            table, pending = PretokenTable.total([table, *pending]), []
        done += piece.size
        if progress:
            progress("read", done, total)
    return PretokenTable.total([table, *pending])


def train_bpe_from_files(
    inputs,
    vocab_size,
    special_tokens=(),
    pattern="gpt2",
    text_column="text",
    max_chars=None,
    num_workers=None,
    progress=None,
):
    """bpe's trainer on files and globs: ["a.txt", "shards/*.parquet"], 4096 -> the same as
    bpe.train_bpe_from_iterator on their documents (count_table's)."""
    check_training_args(vocab_size, special_tokens, pattern)
    table = count_table(
        inputs, pattern, special_tokens, text_column, max_chars, num_workers, progress
    )
    return train_bpe_from_counts(table, vocab_size, special_tokens, progress)
