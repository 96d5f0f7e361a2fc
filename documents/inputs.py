"""A lesson's inputs, hub files or --data-files, checked before `datasets` reads them: what can
go wrong is refused in one line naming the input (`load_documents`)."""

import contextlib
import errno
import fnmatch
import hashlib
import json
import os
from collections import namedtuple
from pathlib import Path

import numpy as np

from safety.errors import PrepareError
from safety.files import sha256_file
from safety.text import decode, shortened

from .corpus import (
    KINDS,
    check_text_column,
    expand_inputs,
    file_kind,
    json_array_rows,
    json_line_text,
    json_lines,
)

BUILDERS = {
    "parquet": ("parquet", {}),
    "jsonl": ("json", {}),
    "text": ("text", {"sample_by": "document"}),  # a .txt file is one document
}
DATA_FILES_HELP = "local .parquet, .jsonl/.json ('text' field) or .txt (one document each) files"
LOCAL_FILES = "to use local files instead, pass --data-files 'DIR/*.parquet'"  # a hub failure's


def builder(path):
    """The datasets builder (name, options) of a --data-files file: "a.jsonl" -> ("json", {})."""
    return BUILDERS[KINDS[Path(path).suffix.lower()]]


def hub_files(hub, where):
    """(local paths, content hashes) of `hub`'s files at its revision, each checked against
    the hash the hub publishes (`checked_download`)."""
    with hub_failures(where):
        entries = hub_entries(hub, where)
        return [list(column) for column in zip(*(checked_download(hub, e) for e in entries))]


def hub_entries(hub, where, advice=LOCAL_FILES):
    """The hub's entries (path, size, lfs.sha256, blob_id) of `hub`'s files, sorted by path."""
    from huggingface_hub import HfApi

    with hub_failures(where, advice):
        # asked first: it fails at once, saying which, where a listing would retry and wait
        HfApi().dataset_info(hub.repo, revision=hub.revision)
        folder = hub.files.rsplit("/", 1)[0] if "/" in hub.files else ""
        tree = HfApi().list_repo_tree(
            hub.repo, path_in_repo=folder, revision=hub.revision, repo_type="dataset"
        )
        entries = sorted(
            (e for e in tree if hasattr(e, "blob_id") and fnmatch.fnmatchcase(e.path, hub.files)),
            key=lambda e: e.path,
        )
        if not entries:
            raise PrepareError(f"{where} holds no file matching {hub.files}")
        return entries


@contextlib.contextmanager
def hub_failures(where, advice=LOCAL_FILES):
    """Any failure of the block but a PrepareError: one line saying so, and `advice`."""
    try:
        yield
    except PrepareError:
        raise
    except Exception as exc:  # offline, DNS, HTTP, a moved revision: all end the same way
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            from huggingface_hub import constants  # where hf_hub_download keeps its files

            raise PrepareError(
                f"cannot download {where}: no space left in the Hugging Face cache, "
                f"{constants.HF_HUB_CACHE}; free some space there, or set HF_HOME to a folder "
                "with room"
            ) from None
        detail = shortened(" ".join(f"{type(exc).__name__}: {exc}".split()))
        raise PrepareError(
            f"cannot load {where} from the Hugging Face hub ({detail}); {advice}"
        ) from None


def checked_download(hub, entry):
    """(path, content hash) of one hub file, checked: an LFS file's sha256, else its blob id."""
    from huggingface_hub import hf_hub_download

    expected, kind = (entry.lfs.sha256, "sha256") if entry.lfs else (entry.blob_id, "git blob id")
    for force in (False, True):  # a cached copy may be the damaged one: fetch it again once
        path = hf_hub_download(
            hub.repo, entry.path, repo_type="dataset", revision=hub.revision, force_download=force
        )
        found = sha256_file(path) if entry.lfs else _git_blob_id(path)
        if found == expected:
            return path, found
    raise PrepareError(
        f"{hub.repo}@{hub.revision[:12]}/{entry.path}: the bytes received have {kind} {found}, "
        f"not the {expected} the hub publishes for the file (damaged on the way?); run again"
    )


def _git_blob_id(path):
    digest = hashlib.sha1(b"blob %d\0" % os.path.getsize(path))
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


MAX_JSON_DEPTH = 500  # deeper nesting is refused before pyarrow (which crashes on 20,000) reads it


def inputs_sha256(files):
    """One sha256 of the files' contents; on the way, a text file that is not UTF-8 or JSON
    nested more than MAX_JSON_DEPTH deep is refused, naming the place."""
    digest = hashlib.sha256()
    for path in files:
        kind = KINDS[Path(path).suffix.lower()]
        depth = 0 if kind == "jsonl" else None
        line, offset = 1, 0
        with open(path, "rb") as file:
            for block in _blocks_ending_at_newlines(file):
                digest.update(hashlib.sha256(block).digest())
                if kind != "parquet":  # else the reader's error names no file
                    decode(block, path, offset)
                if depth is not None:
                    depth = _check_json_depth(block, depth, path, line)
                    line += block.count(b"\n")
                offset += len(block)
        digest.update(b"\0")
    return digest.hexdigest()


def _blocks_ending_at_newlines(file):
    rest = b""
    for block in iter(lambda: file.read(1 << 24), b""):
        block = rest + block
        cut = block.rfind(b"\n") + 1
        if cut:
            yield block[:cut]
        rest = block[cut:]
    if rest:
        yield rest


def _check_json_depth(block, depth, path, first_line):
    """The nesting depth after `block` (cut at newlines, which no JSON string holds)."""
    data = np.frombuffer(block, dtype=np.uint8)
    index = np.arange(len(data))
    backslash = data == ord("\\")
    last_other = np.maximum.accumulate(np.where(backslash, -1, index))  # last non-backslash <= i
    quotes = np.flatnonzero(data == ord('"'))
    before = quotes - 1
    run = np.where(before >= 0, before - last_other[np.maximum(before, 0)], 0)  # backslashes
    real = quotes[run % 2 == 0]  # unescaped quotes open and close strings (none spans a line)
    toggles = np.zeros(len(data) + 1, dtype=np.int8)
    toggles[real + 1] = 1
    in_string = (np.cumsum(toggles)[:-1] % 2 == 1) | np.isin(index, real)
    opens = ((data == ord("[")) | (data == ord("{"))) & ~in_string
    closes = ((data == ord("]")) | (data == ord("}"))) & ~in_string
    levels = depth + np.cumsum(opens.astype(np.int64) - closes.astype(np.int64))
    if len(levels) and levels.max() > MAX_JSON_DEPTH:
        where = int(np.argmax(levels > MAX_JSON_DEPTH))
        line = first_line + int(np.count_nonzero(data[:where] == ord("\n")))
        raise PrepareError(
            f"{path} line {line:,}: JSON nested more than {MAX_JSON_DEPTH} levels deep; no "
            f"document is, and the reader would crash: fix or remove that line"
        )
    return int(levels[-1]) if len(levels) else depth


def expand_data_files(patterns, outputs=frozenset()):
    """Each PATH|GLOB -> its files, sorted: ["b.txt", "a/*.txt"] -> b.txt, a/1.txt, a/2.txt; of
    one known kind, not all empty, none of `outputs` (the output folder's own files)."""
    try:
        files = expand_inputs(patterns)
    except PrepareError as exc:
        raise PrepareError(f"--data-files: {exc}") from None
    for path in files:
        if Path(path).resolve() in outputs:
            raise PrepareError(
                f"--data-files {path} is a file of the output folder (its meta.json lists it), "
                "which this run replaces; name the documents it was made from"
            )
    kinds = {Path(path).suffix.lower() for path in files}
    unknown = [path for path in files if Path(path).suffix.lower() not in KINDS]
    if unknown:
        raise PrepareError(
            "--data-files must name .parquet, .jsonl, .json or .txt files; found "
            f"{unknown[0]} ({Path(unknown[0]).suffix or 'no suffix'})"
        )
    if len({KINDS[kind] for kind in kinds}) > 1:
        raise PrepareError(
            f"--data-files mixes {', '.join(sorted(kinds))} files; give files of one kind"
        )
    if all(_holds_nothing(path) for path in files):
        raise PrepareError(
            f"--data-files names only empty files ({files[0]}, ...); there is nothing to prepare"
        )
    return files


def _holds_nothing(path):
    """True for a file of no document (datasets fails obscurely on one listed first)."""
    if Path(path).stat().st_size == 0:
        return True
    if KINDS[Path(path).suffix.lower()] == "jsonl":
        with open(path, "rb") as f:  # read up to its third character that is not blank
            shown = b""
            for block in iter(lambda: f.read(1 << 16), b""):
                shown += block.translate(None, b" \t\r\n")
                if len(shown) > 2:
                    return False
            return shown in (b"", b"[]")
    if Path(path).suffix.lower() != ".parquet":
        return False
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path).metadata.num_rows == 0
    except Exception:  # not a parquet file: datasets will say so
        return False


def check_texts(dataset, source):
    check_text_column(source, dataset.column_names)
    if len(dataset) == 0:
        raise PrepareError(f"{source} holds no documents; there is nothing to prepare")
    if getattr(dataset.features["text"], "dtype", None) in ("string", "large_string"):
        # only missing values can be wrong, and Arrow counts those without reading the texts
        column = dataset.with_format("arrow")["text"]
        if column.null_count:
            _refuse_missing_texts(source, column.is_null().to_numpy(zero_copy_only=False))
    else:
        batches = (dataset[s : s + 10_000]["text"] for s in range(0, len(dataset), 10_000))
        missing = (not isinstance(text, str) for batch in batches for text in batch)
        _refuse_missing_texts(source, np.fromiter(missing, bool, len(dataset)))


def _refuse_missing_texts(source, missing):
    """Refuse documents whose 'text' is missing or not a string (`missing`: a flag each)."""
    if missing.any():
        raise PrepareError(
            f"{source}: {int(missing.sum()):,} of {len(missing):,} documents have a missing or "
            f"non-string 'text' (the first at row {int(np.argmax(missing)):,}); fix or drop "
            "those rows"
        )


# A lesson's pinned dataset; `files` is a glob of parquet files (no loading script runs)
HubDataset = namedtuple("HubDataset", "repo revision config files split", defaults=("train",))


def load_documents(hub, data_files, num_proc, cache_dir, outputs=frozenset()):
    """The documents (`hub`'s files, or else `data_files`') as a datasets.Dataset with a `text`
    column of strings, in a stable order; every failure is a PrepareError saying what to do."""
    import datasets

    if cache_dir is not None and Path(cache_dir).exists() and not Path(cache_dir).is_dir():
        raise PrepareError(f"--cache-dir {cache_dir} is a file, not a folder; choose another path")
    if data_files is None:
        files, hashes = hub_files(hub, source_name(None, hub))
        content = hashlib.sha256("".join(hashes).encode()).hexdigest()
    else:
        files = expand_data_files(data_files, outputs)
        content = inputs_sha256(files)
    name, options = builder(files[0])
    if name != "text":  # a text file is a document even when empty
        files = [path for path in files if not _holds_nothing(path)] or files
    if name == "json":
        check_later_json_texts(files, source_name(data_files, hub))
    if name == "parquet":
        options = {**options, "columns": ["text"]} if check_parquet_texts(files) else options
    # datasets knows a local file by its path, size and time: its cache of the documents goes
    # in a folder named by their content, so an input edited in place is read again
    cache_dir = Path(cache_dir or datasets.config.HF_DATASETS_CACHE) / f"inputs-{content[:16]}"
    verbosity = datasets.logging.get_verbosity()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)  # its log of a failure: ours below
    try:
        dataset = datasets.load_dataset(
            name,
            data_files={"train": files},
            split="train",
            cache_dir=str(cache_dir),
            num_proc=min(num_proc, len(files)),
            **options,
        )
    except Exception as exc:  # a corrupt parquet file, invalid JSON, different columns...
        if name == "json":
            name_bad_json_line(files)  # the file and line, as the datatrove engine names them
            name_other_fields(files)
        cause = exc.__cause__ or exc  # datasets wraps the telling error in a generic one
        detail = shortened(" ".join(f"{type(cause).__name__}: {cause}".split()))
        what = f"--data-files {' '.join(data_files)}" if data_files else source_name(None, hub)
        raise PrepareError(f"datasets could not read {what} ({detail})") from None
    finally:
        datasets.logging.set_verbosity(verbosity)
    check_texts(dataset, source_name(data_files, hub))
    return dataset


def check_parquet_texts(files):
    """Refuse a parquet file without a 'text' column of strings; whether datasets can read that
    column alone (then the others need not agree between files)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from datasets.packaged_modules.parquet.parquet import ParquetConfig

    for path in files:
        try:
            schema = pq.read_schema(path)
        except (pa.ArrowException, OSError):  # not a parquet file: datasets will say so
            continue
        check_text_column(path, schema.names)
        kind = schema.field("text").type
        values = kind.value_type if pa.types.is_dictionary(kind) else kind  # one encoding
        if str(values) not in ("string", "large_string", "string_view", "null"):
            raise PrepareError(f"{path}'s 'text' column holds {kind}, not strings")
    return "columns" in ParquetConfig.__dataclass_fields__


def check_later_json_texts(files, source):
    """Refuse JSON files after the first with a missing or non-string 'text' (datasets casts
    them to the first's types, which check_texts checks: a number would become its digits)."""
    import pyarrow as pa
    import pyarrow.json as pj

    only_text = pj.ParseOptions(
        explicit_schema=pa.schema({"text": pa.string()}), unexpected_field_behavior="ignore"
    )
    stream = getattr(pj, "open_json", None)  # pyarrow 17 on; before it, Python counts
    for path in files[1:]:
        if file_kind(path) == "json-array" or stream is None:  # read whole by datasets too
            clean = None not in _json_texts(path)
        else:
            try:  # Arrow's parser, as datasets', typing the texts only: no Python object a row
                clean = all(b.column(0).null_count == 0 for b in stream(path, None, only_text))
            except pa.ArrowInvalid:  # a text of another type, or a line datasets will refuse
                clean = False
        if not clean:  # each document read again, in Python, to count them
            missing = (text is None for each in files for text in _json_texts(each))
            return _refuse_missing_texts(source, np.fromiter(missing, bool))


def _json_texts(path):
    if file_kind(path) == "json-array":
        for row in json_array_rows(path):
            text = row.get("text") if isinstance(row, dict) else None
            yield text if isinstance(text, str) else None
        return
    with open(path, "rb") as f:
        for offset, line in json_lines(f, 0, os.path.getsize(path)):
            yield json_line_text(line, path, offset)


def name_other_fields(files):
    """Once datasets failed: name the first file whose fields differ from the first's."""
    fields = [set(json_columns([path])) for path in files]
    other = next((i for i, names in enumerate(fields) if names != fields[0]), None)
    if other is not None:
        raise PrepareError(
            f"{files[other]} holds the fields {', '.join(sorted(fields[other]))}, {files[0]} "
            f"{', '.join(sorted(fields[0]))}: datasets reads JSON files of the same fields only; "
            "make them agree (a prepare_datatrove.py reads the text alone)"
        )


def json_columns(files):
    """The fields of the JSON files' objects: {"b": 1, "a": 2} then {"c": 3} -> ["b", "a", "c"]."""
    columns = {}
    for path in files:
        if file_kind(path) == "json-array":
            rows = json_array_rows(path)
            columns.update(dict.fromkeys(k for row in rows if isinstance(row, dict) for k in row))
            continue
        with open(path, "rb") as f:
            for _, line in json_lines(f, 0, os.path.getsize(path)):
                columns.update(dict.fromkeys(json.loads(line) or ()))
    return list(columns)


def name_bad_json_line(files):
    """Once datasets failed: raise our reader's error on the first bad line, if it finds one."""
    for path in files:
        for _ in _json_texts(path):
            pass


def source_name(data_files, hub):
    """None -> "Skylion007/openwebtext@79d93d786212"; ["a/*.jsonl", "b.txt"] -> "a/*.jsonl
    b.txt"."""
    if data_files:
        return " ".join(data_files)
    config = f" ({hub.config})" if hub.config not in hub.files else ""
    return f"{hub.repo}@{hub.revision[:12]}{config}"


def source_record(data_files, num_documents, hub, budget=None):
    """meta.json's "source": the hub's repo, revision, config (and budget), or the --data-files."""
    if data_files:
        return {"files": data_files, "documents": num_documents}
    record = dict(repo=hub.repo, revision=hub.revision, config=hub.config, documents=num_documents)
    return {**record, "budget": budget} if budget else record
