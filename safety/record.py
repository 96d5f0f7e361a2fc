"""The names a prepared folder's record (meta.json) lists, and which of them a trainer reads.

A folder owns exactly what its meta.json lists: a commit replaces or removes only those files,
and `verify` flags any other file a trainer would read. A record is input like any other (it can
be downloaded, shared, edited), so a name it lists counts only in the form its field allows.
"""

import fnmatch
import json
import re
from pathlib import Path

from .errors import PrepareError
from .text import shortened

META_PKL = "meta.pkl"  # nanoGPT's train.py and sample.py pickle.load it whenever it exists
SHARD_FORMATS = {"llmc": ".bin", "npy": ".npy"}
RECORD_NAME = "meta.json"
DOCUMENT_INDEXES = ("train.docs.npy", "val.docs.npy")  # read by docs/bos_batches.md's train.py
TOKEN_BYTES = "token_bytes.npy"  # every id's UTF-8 byte length, 0 for a special token
# nanochat's folder is the one with subfolders: its shards and its tokenizer directory
NANOCHAT_NAME = re.compile(
    r"base_data_climbmix/shard_\d{5}\.parquet|tokenizer/(tokenizer\.pkl|token_bytes\.(pt|npy))"
)


def listed_files(meta, where=RECORD_NAME):
    """The file names a meta.json lists as the folder's own (itself included): what a commit may
    replace or remove, and all `verify` accepts that a trainer would read. Every name the record
    gives is checked first (`name_problem`): one outside the folder, or not of the form its field
    allows ("prepare.py" as a shard), is a PrepareError naming the field and `where` the record
    is, so that nothing is read, replaced or removed through it.

    {"splits": {"train": {"file": "train.bin", ...}, ...}, "meta_pkl": null, ...}
    -> {"meta.json", "train.bin", "val.bin"}
    """
    problem = name_problem(meta)
    if problem is not None:
        raise PrepareError(refused_record(where, problem))
    return {RECORD_NAME} | {name for _, name, owned, _ in record_names(meta) if owned}


def refused_record(where, problem):
    """The one line that refuses a record (meta.json, the journal) for a name it lists."""
    return (
        f"{where}: {problem}; a record lists only file names inside its folder, so nothing was "
        f"read, replaced or removed through it: fix or remove {Path(where).name} and run again"
    )


def record_names(meta):
    """Every name field of a meta.json, whatever its value: (field, value, owned, form), `owned`
    whether the folder owns the file, `form` the one name the field allows (None: any plain name
    of the form `name_problem` checks).

    {"splits": {"train": {"file": "train.bin"}}, "tokenizer": {"path": "/t/tok.json"}}
    -> [("splits.train.file", "train.bin", True, "train.bin"), ("tokenizer.path", ..., False, None)]
    """
    if not isinstance(meta, dict):
        return []
    found, splits = [], meta.get("splits")
    for split, record in splits.items() if isinstance(splits, dict) else ():
        index = _field(record, "index")
        if isinstance(record, dict) and "file" in record:
            found.append((f"{_key('splits', split)}.file", record["file"], True, f"{split}.bin"))
        if isinstance(index, dict) and "file" in index:
            field = f"{_key('splits', split)}.index.file"
            found.append((field, index["file"], True, f"{split}.docs.npy"))
    shards = meta.get("shards") if isinstance(meta.get("shards"), list) else []
    for i, shard in enumerate(shards):
        if isinstance(shard, dict) and "file" in shard:
            found.append((f"shards[{i}].file", shard["file"], True, None))
    if isinstance(meta.get("meta_pkl"), dict):
        found.append(("meta_pkl.file", meta["meta_pkl"].get("file"), True, META_PKL))
    path = _field(meta.get("tokenizer"), "path")  # a file the run trained, or the user's outside
    if path is not None:
        owned = is_plain_name(path) and path.endswith(".json") and path != RECORD_NAME
        found.append(("tokenizer.path", path, owned, None))
    if _field(meta.get("source"), "path") is not None:  # the input, in the folder or outside
        found.append(("source.path", meta["source"]["path"], False, None))
    if _field(meta.get("token_bytes"), "file") is not None:
        found.append(("token_bytes.file", meta["token_bytes"]["file"], True, TOKEN_BYTES))
    files = meta.get("tokenizer_files") if isinstance(meta.get("tokenizer_files"), list) else []
    for i, item in enumerate(files):  # a nanochat folder's tokenizer directory
        if isinstance(item, dict) and "file" in item:
            found.append((f"tokenizer_files[{i}].file", item["file"], True, None))
    return found


def name_problem(meta):
    """The first name field of a meta.json that is not of its form, as a phrase, or None.

    A split's file is "<split>.bin", its index "<split>.docs.npy"; a shard's a name with its
    format's suffix, not hidden; meta_pkl's "meta.pkl"; the tokenizer's and the source's a plain
    name (in the folder) or an absolute path (a file outside, read, never owned).
    {"splits": {"../victim": {"file": "../victim.bin"}}} ->
    'splits["../victim"].file is "../victim.bin", expected a file name inside the folder'
    """
    suffix = SHARD_FORMATS.get(meta.get("format")) if isinstance(meta, dict) else None
    nanochat = isinstance(meta, dict) and meta.get("format") == "nanochat"
    for field, value, _, form in record_names(meta):
        if nanochat and field.startswith(("shards", "tokenizer_files", "tokenizer.path")):
            if not (isinstance(value, str) and NANOCHAT_NAME.fullmatch(value)):
                return (
                    f"{field} is {_shown(value)}, expected a name of nanochat's folder "
                    "(base_data_climbmix/shard_00000.parquet, tokenizer/tokenizer.pkl, ...)"
                )
            continue
        if not is_plain_name(value):
            absolute = isinstance(value, str) and "\0" not in value and Path(value).is_absolute()
            if field in ("tokenizer.path", "source.path") and absolute:
                continue  # an input outside the folder: read by verify, never owned
            return f"{field} is {_shown(value)}, expected a file name inside the folder"
        expected = None
        if form is not None and value != form:
            expected = json.dumps(form)
        elif field.startswith("shards") and suffix is None:
            expected = f"a format of {' or '.join(map(json.dumps, SHARD_FORMATS))} beside it"
        elif field.startswith("shards") and (value.startswith(".") or not value.endswith(suffix)):
            expected = f"a name ending in {suffix} (its format {meta['format']}), not hidden"
        if expected is not None:
            return f"{field} is {_shown(value)}, expected {expected}"
    return None


def journal_problem(journal):
    """The first name of a commit's journal ({"owned": [names]}) that is not a plain name of the
    folder, not hidden, as a phrase, or None: {"owned": ["a/b"]} -> 'owned[0] is "a/b", ...'."""
    names = journal.get("owned") if isinstance(journal, dict) else None
    for i, name in enumerate(names if isinstance(names, list) else []):
        nanochat = isinstance(name, str) and NANOCHAT_NAME.fullmatch(name)  # its subfolders' names
        if not (is_plain_name(name) or nanochat) or name.startswith("."):
            return f"owned[{i}] is {_shown(name)}, expected a file name inside the folder"
    return None


def _field(record, key):
    return record.get(key) if isinstance(record, dict) else None


def _key(field, key):
    """A field's name as the line shows it: splits.train, or splits["../victim"] for an odd key."""
    plain = isinstance(key, str) and key.isidentifier()
    return f"{field}.{key}" if plain else f"{field}[{json.dumps(key)}]"


def _shown(value):
    """A value as the line shows it: JSON, cut short (a 10 MB name makes no 10 MB line)."""
    return shortened(json.dumps(value))


def is_plain_name(value):
    """A file name inside the folder: "train.bin" yes; "", ".", "..", "a/b", "/etc" no."""
    return (
        isinstance(value, str)
        and value not in ("", ".", "..")
        and "/" not in value
        and "\\" not in value
        and "\0" not in value
    )


def trainer_reads(name, shard_format=None):
    """Whether a trainer pointed at the folder would read a file of this name: nanoGPT's
    train.bin, val.bin and meta.pkl, and the document starts the BOS-aligned train.py of
    docs/bos_batches.md reads (train.docs.npy, val.docs.npy); llm.c's and modded-nanogpt's
    `*_train_*.bin` and `*_val_*.bin` globs; build-nanogpt's any name holding "train" or "val"
    (its listdir filter), in a folder of .npy shards. "corpus_train_000002 (1).bin" -> True."""
    if name in ("train.bin", "val.bin", META_PKL, *DOCUMENT_INDEXES):
        return True
    if shard_format == "nanochat":  # its dataset.py lists every *.parquet of the data folder
        return name.startswith("base_data_climbmix/") and name.endswith(".parquet")
    globs = ("*_train_*.bin", "*_val_*.bin")  # C's and Python's globs pass hidden names over
    if not name.startswith(".") and any(fnmatch.fnmatchcase(name, glob) for glob in globs):
        return True
    return shard_format == "npy" and ("train" in name or "val" in name)
