"""A prepared folder's schema, written once: every file name it holds, the fields of its record
(meta.json) and their forms, and which of its names a trainer reads.

A folder owns exactly what its meta.json lists: a commit replaces or removes only those files,
and `verify` flags any other file a trainer would read. A record is input like any other (it can
be downloaded, shared, edited), so a name it lists counts only in the form its field allows.
"""

import fnmatch
import json
import re
from pathlib import Path

from safety.commit import RECORD_NAME  # the commit record, named by the commit
from safety.errors import PrepareError
from safety.text import shortened

META_FORMAT_VERSION = 1
SPLIT_NAMES = ("train", "val")  # nanoGPT reads both; a folder without either is not usable
BIN_DTYPES = ("uint16", "uint32")
META_PKL = "meta.pkl"  # nanoGPT's train.py and sample.py pickle.load it whenever it exists
SHARD_FORMATS = {"llmc": ".bin", "npy": ".npy"}
INDEX_SUFFIX = ".docs.npy"  # a split's document starts, read by docs/bos_batches.md's train.py
TOKEN_BYTES = "token_bytes.npy"  # every id's UTF-8 byte length, 0 for a special token
VAL_BYTES = "val_bytes.bin"  # each val token's share of the text's UTF-8 bytes (formats/val_bytes)
VAL_BYTES_NAME = re.compile(rf"{re.escape(VAL_BYTES)}|\w[\w.-]*_bytes(_\d{{6}})?\.(bin|npy)")
FIGURES = (  # a split's byte figures (meta.json's "bytes"): inspection/bpb.py says each
    *("documents", "text_bytes", "tokenizer_bytes", "decoded_bytes"),
    *("changed_documents", "lost_bytes", "gained_bytes"),
)
NANOCHAT = "nanochat"  # the format of nanochat's folder, the one with subfolders:
NANOCHAT_DATA_DIR = "base_data_climbmix"  # nanochat/dataset.py's DATA_DIR
NANOCHAT_TOKENIZER_DIR = "tokenizer"
NANOCHAT_TOKENIZER = f"{NANOCHAT_TOKENIZER_DIR}/tokenizer.pkl"
NANOCHAT_TOKEN_BYTES = f"{NANOCHAT_TOKENIZER_DIR}/token_bytes.pt"  # what nanochat's bpb reads
NANOCHAT_NAME = re.compile(
    rf"{NANOCHAT_DATA_DIR}/shard_\d{{5}}\.parquet"
    rf"|{NANOCHAT_TOKENIZER_DIR}/(tokenizer\.pkl|token_bytes\.(pt|npy))"
)
GOLF_FORMAT = "parameter_golf"  # parameter-golf's folder (formats/golf.py): its documents,
GOLF_DOCS = "docs_selected.jsonl"  # tokenizers/ and datasets/fineweb10B_{suffix}/ of shards
GOLF_EXPORT, GOLF_MANIFEST = "tokenizer_config.export.json", "manifest.json"
GOLF_FILES = (GOLF_DOCS, GOLF_EXPORT, GOLF_MANIFEST)  # what every such folder's "files" lists
GOLF_NAME = re.compile(
    r"(manifest|tokenizer_config\.export)\.json|docs_selected\.(jsonl|source_manifest\.json)"
    r"|tokenizers/[\w.-]+\.(model|vocab|json)"
    r"|datasets/fineweb10B_\w+/fineweb_(train|val|val_bytes)_\d{6}\.bin"
)
GOLF_KINDS = ("sentencepiece_bpe", "byte", "bpe")
FILE_KEYS = ("file", "sha256")  # of each file parameter-golf's record lists


def bin_name(split):
    """The file nanoGPT's train.py opens for a split: "train" -> "train.bin"."""
    return f"{split}.bin"


def index_name(split):
    """A split's document index: "train" -> "train" + INDEX_SUFFIX."""
    return f"{split}{INDEX_SUFFIX}"


def sidecars(meta):
    """The val bytes sidecars a meta.json lists, by name: ["val_bytes.bin"]; [] for none."""
    return [item["file"] for item in (meta.get("val_bytes") or {}).get("files", [])]


def val_bytes_name(ids_file):
    """The val bytes sidecar beside a val ids file, named so that no trainer's glob reads it as ids
    (build-nanogpt reads every name holding "val"): "val.bin" -> VAL_BYTES;
    "edu_fineweb_val_000000.npy" -> "edu_fineweb_bytes_000000.npy"."""
    if ids_file == bin_name("val"):
        return VAL_BYTES
    stem, found, rest = ids_file.rpartition("_val")
    if not found:
        raise PrepareError(f"{ids_file} is not a val file's name (<name>_val_000000.bin)")
    return f"{stem}_bytes{rest}"


def nanochat_shard_name(index):
    """A nanochat shard's path in the folder: 0 -> NANOCHAT_DATA_DIR + "/shard_00000.parquet"."""
    return f"{NANOCHAT_DATA_DIR}/shard_{index:05d}.parquet"


DOCUMENT_INDEXES = tuple(map(index_name, SPLIT_NAMES))


# ---------------------------------------------------------------------------------------------
# the fields of meta.json and their forms: (key, check, expected)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_count(value):
    return _is_int(value) and value >= 0


def _is_sha256(value):
    return isinstance(value, str) and len(value) == 64 and set(value) <= set("0123456789abcdef")


def is_plain_name(value):
    """A file name inside the folder: "train.bin" yes; "", ".", "..", "a/b", "/etc" no."""
    return isinstance(value, str) and value not in ("", ".", "..") and not set("/\\\0") & set(value)


FILE = ("file", is_plain_name, "a file name in the folder")
SHA256 = ("sha256", _is_sha256, "a sha256 (64 hex digits)")
TOP_FIELDS = (
    ("tokenizer", lambda v: isinstance(v, dict), "a JSON object"),
    ("splits", lambda v: isinstance(v, dict), "a JSON object"),
    ("dtype", lambda v: isinstance(v, str), "a JSON string"),
    ("dtype", lambda v: v in BIN_DTYPES, " or ".join(BIN_DTYPES)),
)
TOKENIZER_FIELDS = (
    ("kind", lambda v: v in ("char", "tiktoken", "bpe"), '"char", "tiktoken" or "bpe"'),
    ("vocab_size", lambda v: _is_int(v) and v > 0, "a positive integer"),
    SHA256,
)
SPECIAL_IDS = ("eot_id", "bos_id")  # a tokenizer record's: null (none), else one of its ids
NANOCHAT_PATTERN = ("pattern", lambda v: v == "nanochat", '"nanochat" (its split pattern)')
SHARD_FIELDS = (
    FILE,
    ("split", lambda v: v in SPLIT_NAMES, '"train" or "val"'),
    ("tokens", lambda v: _is_int(v) and v > 0, "a positive count of tokens"),
    SHA256,
)
INDEX_FIELDS = (FILE, ("documents", _is_count, "a count of documents"), SHA256)
SPLIT_FIELDS = (FILE, ("tokens", _is_count, "a count of tokens"), SHA256)
TEXT_KEYS = ("documents", "characters", "bytes")  # of a nanochat shard, and of its split
TEXT_FIELDS = tuple((key, _is_count, "a count") for key in TEXT_KEYS)
NANOCHAT_SHARD_FIELDS = (
    ("file", lambda v: isinstance(v, str) and NANOCHAT_NAME.fullmatch(v), "a shard's name"),
    ("split", lambda v: v in SPLIT_NAMES, '"train" or "val"'),
    *TEXT_FIELDS,
    SHA256,
)
META_PKL_FIELDS = (("file", lambda v: v == META_PKL, json.dumps(META_PKL)), SHA256)
TOKEN_BYTES_FIELDS = (("file", lambda v: v == TOKEN_BYTES, json.dumps(TOKEN_BYTES)), SHA256)
LISTED_FILE_FIELDS = (
    ("file", lambda v: isinstance(v, str) and NANOCHAT_NAME.fullmatch(v), "a tokenizer file"),
    SHA256,
)


def wrong(where, value, expected):
    """A field's problem as a phrase: 'dtype is "int8", expected uint16 or uint32'."""
    return f"{where} is {shortened(json.dumps(value))}, expected {expected}"


def fields_problem(record, where, fields):
    """The first of `fields` (key, check, expected) missing from `record` or failing its check."""
    if not isinstance(record, dict):
        return wrong(where, record, "a JSON object")
    for key, check, expected in fields:
        if key not in record:
            return f'{where} "{key}" is missing'.lstrip()
        if not check(record[key]):
            return wrong(f"{where}.{key}" if where else key, record[key], expected)
    return None


def shape_problem(meta):
    """The first field of meta.json that is missing or has the wrong type, as a phrase, or None."""
    source = meta.get("source")  # verify checks the file against its sha256; a budgeted run
    sha256 = _field(source, "sha256")  # reads no whole file, so records both null
    if source is not None and not isinstance(source, dict):
        return wrong("source", source, "a JSON object")
    if (sha256 is not None or _field(source, "path") is not None) and not _is_sha256(sha256):
        return wrong("source.sha256", sha256, "the source's sha256 (64 hex digits)")
    if meta.get("format") == NANOCHAT:
        return _nanochat_problem(meta)
    if meta.get("format") == GOLF_FORMAT:
        return _golf_problem(meta)
    problem = fields_problem(meta, "", TOP_FIELDS)
    problem = problem or fields_problem(meta["tokenizer"], "tokenizer", TOKENIZER_FIELDS)
    if problem := problem or _special_ids_problem(meta["tokenizer"]):
        return problem
    pkl = meta.get("meta_pkl")
    if pkl is not None and fields_problem(pkl, "meta_pkl", META_PKL_FIELDS):
        return wrong("meta_pkl", pkl, f'null or {{"file": "{META_PKL}", "sha256": ...}}')
    if problem := _token_bytes_problem(meta) or _val_bytes_problem(meta):
        return problem
    if "shards" in meta:  # llm.c's or .npy shards
        shards = meta["shards"]
        if meta.get("format") not in SHARD_FORMATS:
            return wrong("format", meta.get("format"), '"llmc" or "npy"')
        if problem := _list_problem(shards, "shards", SHARD_FIELDS, "a list of the shards"):
            return problem
        if shards[0]["split"] != "val":
            return wrong("shards[0].split", shards[0]["split"], '"val" (shard 0 is val)')
        if all(shard["split"] != "train" for shard in shards):
            return (
                "shards has no train shard: llm.c and modded-nanogpt would have nothing to train on"
            )
        return _sidecar_tokens_problem(meta)
    if missing := [name for name in SPLIT_NAMES if name not in meta["splits"]]:
        return (
            f"splits has no {' and no '.join(missing)}: a prepared folder needs both train and val"
        )
    for name in SPLIT_NAMES:
        split = meta["splits"][name]
        if problem := fields_problem(split, f"splits.{name}", SPLIT_FIELDS):
            return problem
        if split["file"] != bin_name(name):  # the name nanoGPT's train.py opens, whatever we say
            return wrong(
                f"splits.{name}.file", split["file"], f'"{bin_name(name)}" (what nanoGPT reads)'
            )
        if "index" in split and (
            problem := fields_problem(split["index"], f"splits.{name}.index", INDEX_FIELDS)
        ):
            return problem
    return _sidecar_tokens_problem(meta)


def _special_ids_problem(tokenizer, required=()):
    """A tokenizer record's SPECIAL_IDS: each an id below vocab_size, or null unless required."""
    for key in SPECIAL_IDS:
        value = tokenizer.get(key)
        if (value is not None or key in required) and not (
            _is_int(value) and 0 <= value < tokenizer["vocab_size"]
        ):
            none = "" if key in required else ", or null"
            expected = f"an id below vocab_size {tokenizer['vocab_size']:,}{none}"
            return wrong(f"tokenizer.{key}", value, expected)
    return None


def _sidecar_tokens_problem(meta):
    """Each val bytes sidecar's tokens against its ids file's record: one share a token."""
    files = (meta.get("val_bytes") or {}).get("files", [])
    records = meta.get("shards") or [meta["splits"][name] for name in SPLIT_NAMES]
    counts = {record["file"]: record["tokens"] for record in records}
    for i, item in enumerate(files):
        if item["ids"] in counts and item["tokens"] != counts[item["ids"]]:
            return (
                f"val_bytes.files[{i}].tokens is {item['tokens']:,}, but its ids file "
                f"{item['ids']} holds {counts[item['ids']]:,} (one share a token)"
            )
    return None


def _token_bytes_problem(meta):
    """meta.json's token_bytes: absent or null (a folder written before it), else its record."""
    if meta.get("token_bytes") is None:
        return None
    problem = fields_problem(meta["token_bytes"], "token_bytes", TOKEN_BYTES_FIELDS)
    bytes_ = meta["token_bytes"].get("bytes") if problem is None else None
    if problem is None and not (isinstance(bytes_, dict) and all(map(_is_count, bytes_.values()))):
        return wrong("token_bytes.bytes", bytes_, "each split's count of bytes")
    return problem


def _val_bytes_problem(meta):
    """meta.json's bytes and val_bytes: absent (a folder written before them), else each split's
    figures and the sidecars' record."""
    figures, record = meta.get("bytes"), meta.get("val_bytes")
    if figures is not None and not (
        isinstance(figures, dict)
        and all(_is_count(_field(f, k)) for f in figures.values() for k in FIGURES)
    ):
        return wrong("bytes", figures, f"each split's counts of {', '.join(FIGURES)}")
    if record is None:
        return None
    if not isinstance(record, dict) or record.get("dtype") != "uint16":
        return wrong("val_bytes", record, 'a record of "dtype": "uint16", "eot" and "files"')
    if record.get("eot") not in ("first", "last", None):
        return wrong("val_bytes.eot", record.get("eot"), '"first", "last" or null')
    fields = (FILE, ("ids", is_plain_name, "a val ids file's name"), SHARD_FIELDS[2], SHA256)
    return _list_problem(record.get("files"), "val_bytes.files", fields, "a list of the sidecars")


def _list_problem(items, where, fields, expected):
    """fields_problem of each record of `items`, a list that is not empty."""
    if not isinstance(items, list) or not items:
        return wrong(where, items, expected)
    for i, item in enumerate(items):
        if problem := fields_problem(item, f"{where}[{i}]", fields):
            return problem
    return None


def _nanochat_problem(meta):
    shards = meta.get("shards")
    if not isinstance(shards, list) or not shards:
        return "shards is missing or empty: a nanochat folder lists its parquet shards"
    for i, shard in enumerate(shards):
        if problem := fields_problem(shard, f"shards[{i}]", NANOCHAT_SHARD_FIELDS):
            return problem
        if shard["file"] != nanochat_shard_name(i):
            return wrong(f"shards[{i}].file", shard["file"], json.dumps(nanochat_shard_name(i)))
    splits = [shard["split"] for shard in shards]
    if splits[-1] != "val" or set(splits[:-1]) != {"train"}:
        return (
            f"the shards' splits are {splits}: nanochat reads the last as val, the others as train"
        )
    tokenizer = meta.get("tokenizer")
    if tokenizer is not None:
        if not isinstance(tokenizer, dict) or tokenizer.get("path") != NANOCHAT_TOKENIZER:
            return f'tokenizer is not null nor a record with "path": "{NANOCHAT_TOKENIZER}"'
        if not (
            _is_int(tokenizer.get("vocab_size")) and _is_sha256(tokenizer.get("encoding_sha256"))
        ):
            return "tokenizer has no vocab_size or encoding_sha256 to check tokenizer.pkl against"
        problem = fields_problem(tokenizer, "tokenizer", (NANOCHAT_PATTERN,))
        if problem := problem or _special_ids_problem(tokenizer, required=("bos_id",)):
            return problem
        files = meta.get("tokenizer_files")
        expected = "a list of the tokenizer directory's files"
        if problem := _list_problem(files, "tokenizer_files", LISTED_FILE_FIELDS, expected):
            return problem
        if NANOCHAT_TOKENIZER not in [item["file"] for item in files]:
            return f"tokenizer_files does not list {NANOCHAT_TOKENIZER}, whose sha256 it records"
        if meta.get("token_bytes") is None:
            return wrong("token_bytes", None, f"the record of {TOKEN_BYTES}")
        if problem := _token_bytes_problem(meta) or _val_bytes_problem(meta):
            return problem
    elif meta.get("tokenizer_files") or meta.get("token_bytes") is not None:  # unchecked then
        return "tokenizer is null, yet tokenizer_files or token_bytes lists files of a tokenizer"
    return None


def _golf_problem(meta):
    files = meta.get("files")
    if not _records(files, FILE_KEYS) or not set(GOLF_FILES) <= {f["file"] for f in files}:
        return f"files is not a list of records of file and sha256 naming {', '.join(GOLF_FILES)}"
    split = meta.get("split")
    if not isinstance(split, dict) or not _is_count(split.get("val_docs")):
        return "split is not a record of val_docs, a count of documents"
    datasets = meta.get("datasets")
    if not isinstance(datasets, list) or not datasets:
        return "datasets is missing or empty: a parameter-golf folder lists its datasets"
    for i, dataset in enumerate(datasets):
        keys = ("name", "tokenizer", "shards", "val_bytes", "bytes")
        if not isinstance(dataset, dict) or any(key not in dataset for key in keys):
            return f"datasets[{i}] is not a record of {', '.join(keys)}"
        tokenizer, kinds = dataset["tokenizer"], " or ".join(GOLF_KINDS)
        tok_files = _field(tokenizer, "files")
        if _field(tokenizer, "kind") not in GOLF_KINDS or not (
            _records(tok_files, FILE_KEYS) and tok_files
        ):
            return f"datasets[{i}].tokenizer is not a record of kind {kinds} and files"
        for key in ("shards", "val_bytes"):
            fields = ("file", "split", "tokens", "sha256")
            if not _records(dataset[key], fields) or any(
                s["split"] not in SPLIT_NAMES for s in dataset[key]
            ):
                return f"datasets[{i}].{key} is not a list of records of {', '.join(fields)}"
            for j, record in enumerate(dataset[key]):  # the tokens and sha256 verify checks
                where = f"datasets[{i}].{key}[{j}]"  # (their names: checked by name_problem)
                if problem := fields_problem(record, where, SHARD_FIELDS[2:]):
                    return problem
                if key == "val_bytes" and record["split"] != "val":  # a sidecar is val's
                    return wrong(f"{where}.split", record["split"], '"val"')
        listed = {shard["split"] for shard in dataset["shards"]}
        # nothing to train on, or no val loss: train_gpt.py reads both splits
        if empty := [name for name in SPLIT_NAMES if name not in listed]:
            return (
                f"datasets[{i}].shards has no {' and no '.join(empty)} shard: parameter-golf's "
                f"train_gpt.py reads both splits"
            )
        if not isinstance(dataset["bytes"], dict) or set(dataset["bytes"]) != set(SPLIT_NAMES):
            return f"datasets[{i}].bytes is not a record of val and train"
    return None


def _records(value, fields):
    """Whether `value` is a list of dicts that each hold `fields`."""
    return isinstance(value, list) and all(
        isinstance(item, dict) and all(key in item for key in fields) for item in value
    )


def totals_problem(meta):
    """A folder of shards' splits against the sums of its shards (a record shape_problem passed):
    each split's shards and tokens (nanochat's documents, characters and bytes)."""
    if "shards" not in meta:
        return None
    keys = TEXT_KEYS if meta.get("format") == NANOCHAT else ("tokens",)
    found = {}
    for shard in meta["shards"]:
        totals = found.setdefault(shard["split"], {"shards": 0, **dict.fromkeys(keys, 0)})
        totals["shards"] += 1
        for key in keys:
            totals[key] += shard[key]
    splits = meta["splits"] if isinstance(meta.get("splits"), dict) else None
    recorded = {
        name: {key: split.get(key) for key in found[name]} if isinstance(split, dict) else split
        for name, split in (splits or {}).items()
        if name in found
    }
    if splits is None or set(splits) != set(found) or recorded != found:
        return (
            f"splits is {shortened(json.dumps(meta.get('splits')))}, but its shards add up to "
            f"{json.dumps(found)}"
        )
    return None


# ---------------------------------------------------------------------------------------------
# the names a record lists, which the folder owns, and which a trainer reads


def listed_files(meta, where=RECORD_NAME):
    """The file names a meta.json lists as the folder's own (itself included), each checked first
    (`name_problem`, else a PrepareError naming `where`): what a commit may replace or remove.

    {"splits": {"train": {"file": "train.bin", ...}, ...}} -> {"meta.json", "train.bin", "val.bin"}
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
    """Every name field of a meta.json: (field, value, owned, form), `form` the one name the field
    allows (None: any of the form `name_problem` checks).

    {"splits": {"train": {"file": "train.bin"}}} -> [("splits.train.file", "train.bin", True, ...)]
    """
    if not isinstance(meta, dict):
        return []
    found, splits = [], meta.get("splits")
    for split, record in splits.items() if isinstance(splits, dict) else ():
        key, index = _key("splits", split), _field(record, "index")
        if isinstance(record, dict) and "file" in record:
            found.append((f"{key}.file", record["file"], True, bin_name(split)))
        if isinstance(index, dict) and "file" in index:
            found.append((f"{key}.index.file", index["file"], True, index_name(split)))
    shards = _dicts(meta.get("shards"))
    found += [(f"shards[{i}].file", s["file"], True, None) for i, s in shards if "file" in s]
    if isinstance(meta.get("meta_pkl"), dict):
        found.append(("meta_pkl.file", meta["meta_pkl"].get("file"), True, META_PKL))
    path = _field(meta.get("tokenizer"), "path")  # a file the run trained, or the user's
    if path is not None:
        trained_here = meta["tokenizer"].get("trained_here") is True  # safety.folder_tokenizer
        owned = trained_here and is_plain_name(path) and path.endswith(".json")
        owned = owned and path != RECORD_NAME
        found.append(("tokenizer.path", path, owned, None))
    if _field(meta.get("source"), "path") is not None:  # the input, in the folder or outside
        found.append(("source.path", meta["source"]["path"], False, None))
    if _field(meta.get("token_bytes"), "file") is not None:
        found.append(("token_bytes.file", meta["token_bytes"]["file"], True, TOKEN_BYTES))
    if isinstance(meta.get("val_bytes"), dict):
        for i, item in _dicts(meta["val_bytes"].get("files")):
            found.append((f"val_bytes.files[{i}].file", item.get("file"), True, None))
    if meta.get("format") == GOLF_FORMAT:  # its files, and each dataset's
        lists = [("files", meta.get("files"))]
        for i, d in _dicts(meta.get("datasets")):
            lists += [(f"datasets[{i}].{key}", d.get(key)) for key in ("shards", "val_bytes")]
            lists.append((f"datasets[{i}].tokenizer.files", _field(d.get("tokenizer"), "files")))
        for field, items in lists:
            found += [(f"{field}[{j}].file", it.get("file"), True, None) for j, it in _dicts(items)]
    files = _dicts(meta.get("tokenizer_files"))  # a nanochat folder's tokenizer directory
    return found + [
        (f"tokenizer_files[{i}].file", f["file"], True, None) for i, f in files if "file" in f
    ]


def _dicts(items):
    """(index, item) of the dicts in `items`, a list (anything else holds none)."""
    items = items if isinstance(items, list) else []
    return [(i, item) for i, item in enumerate(items) if isinstance(item, dict)]


FOLDER_NAMES = {  # format -> the fields that name its own folder's files, their form, said
    GOLF_FORMAT: (
        ("files", "datasets"),
        GOLF_NAME,
        "a name of parameter-golf's folder (manifest.json, "
        "datasets/fineweb10B_sp1024/fineweb_val_000000.bin, ...)",
    ),
    NANOCHAT: (
        ("shards", "tokenizer_files", "tokenizer.path"),
        NANOCHAT_NAME,
        f"a name of nanochat's folder ({nanochat_shard_name(0)}, {NANOCHAT_TOKENIZER}, ...)",
    ),
}


def name_problem(meta):
    """The first name field of a meta.json that is not of its form, as a phrase, or None: the
    tokenizer's and the source's may be an absolute path (a file outside, read, never owned).

    {"splits": {"../victim": {"file": "../victim.bin"}}} ->
    'splits["../victim"].file is "../victim.bin", expected a file name inside the folder'
    """
    shard_format = meta.get("format") if isinstance(meta, dict) else None
    suffix = SHARD_FORMATS.get(shard_format)
    fields, pattern, names = FOLDER_NAMES.get(shard_format, ((), None, None))
    for field, value, _, form in record_names(meta):
        if field.startswith(fields):  # a name of the format's own folder, with its subfolders
            if not (isinstance(value, str) and pattern.fullmatch(value)):
                return wrong(field, value, names)
            continue
        if not is_plain_name(value):
            absolute = isinstance(value, str) and "\0" not in value and Path(value).is_absolute()
            if field in ("tokenizer.path", "source.path") and absolute:
                continue  # an input outside the folder: read by verify, never owned
            return wrong(field, value, "a file name inside the folder")
        expected = None
        if form is not None and value != form:
            expected = json.dumps(form)
        elif field.startswith("val_bytes") and not VAL_BYTES_NAME.fullmatch(value):
            expected = f"{json.dumps(VAL_BYTES)} or a shard's sidecar, <name>_bytes_000000.bin"
        elif field.startswith("shards") and suffix is None:
            expected = f"a format of {' or '.join(map(json.dumps, SHARD_FORMATS))} beside it"
        elif field.startswith("shards") and (value.startswith(".") or not value.endswith(suffix)):
            expected = f"a name ending in {suffix} (its format {meta['format']}), not hidden"
        if expected is not None:
            return wrong(field, value, expected)
    return None


def journal_problem(journal):
    """The first name of a commit's journal that no meta.json could list as the folder's own: the
    journal vouches for no more than a record would. {"owned": ["notes.txt"]} -> 'owned[0] ...'."""
    names = journal.get("owned") if isinstance(journal, dict) else None
    for i, name in enumerate(names if isinstance(names, list) else []):
        if isinstance(name, str) and (NANOCHAT_NAME.fullmatch(name) or GOLF_NAME.fullmatch(name)):
            continue  # a name of nanochat's or parameter-golf's folder; else record_names' forms:
        plain = is_plain_name(name) and not name.startswith(".")
        if not (plain and (name == META_PKL or name.endswith((*SHARD_FORMATS.values(), ".json")))):
            expected = "the name of an output inside the folder (train.bin, meta.json, ...)"
            return wrong(f"owned[{i}]", name, expected)
    return None


def _field(record, key):
    return record.get(key) if isinstance(record, dict) else None


def _key(field, key):
    """A field's name as the line shows it: splits.train, or splits["../victim"] for an odd key."""
    plain = isinstance(key, str) and key.isidentifier()
    return f"{field}.{key}" if plain else f"{field}[{json.dumps(key)}]"


def trainer_reads(name, shard_format=None):
    """Whether a trainer pointed at the folder would read a file of this name (nanoGPT's, the
    BOS-aligned train.py's, llm.c's, modded-nanogpt's, build-nanogpt's, nanochat's, the
    bits-per-byte files): "corpus_train_000002 (1).bin" -> True."""
    if name in (*map(bin_name, SPLIT_NAMES), META_PKL, *DOCUMENT_INDEXES):
        return True
    if shard_format == NANOCHAT:  # dataset.py lists every *.parquet; the bpb reads token_bytes.pt
        data = name.startswith(f"{NANOCHAT_DATA_DIR}/") and name.endswith(".parquet")
        return data or NANOCHAT_NAME.fullmatch(name) is not None
    if shard_format == GOLF_FORMAT:  # train_gpt.py's DATA_PATH globs, in a dataset's folder
        return fnmatch.fnmatchcase(name, "datasets/*/fineweb_*.bin")
    if name == TOKEN_BYTES or VAL_BYTES_NAME.fullmatch(name):
        return True
    globs = ("*_train_*.bin", "*_val_*.bin")  # C's and Python's globs pass hidden names over
    if not name.startswith(".") and any(fnmatch.fnmatchcase(name, glob) for glob in globs):
        return True
    return shard_format == "npy" and ("train" in name or "val" in name)


def written_by_a_run(name):
    """Whether a text lesson's run writes (replaces) a file of this name: "meta.pkl" -> True."""
    return name in (RECORD_NAME, TOKEN_BYTES, VAL_BYTES) or trainer_reads(name)
