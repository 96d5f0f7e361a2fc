"""The names a prepared folder's record (meta.json) lists, and which of them a trainer reads.

A folder owns exactly what its meta.json lists: a commit replaces or removes only those files,
and `verify` flags any other file a trainer would read. A record is input like any other (it can
be downloaded, shared, edited), so a name it lists counts only in the form its field allows.
"""

import fnmatch

META_PKL = "meta.pkl"  # nanoGPT's train.py and sample.py pickle.load it whenever it exists


SHARD_FORMATS = {"llmc": ".bin", "npy": ".npy"}


RECORD_NAME = "meta.json"


def listed_files(meta):
    """The file names a meta.json lists as the folder's own (itself included): what a commit may
    replace or remove, and all `verify` accepts that a trainer would read. Only names of the
    form each field has are taken ("train.bin", a shard of its format's suffix...), so a record
    that names "prepare.py" as a shard gives it no hold on that file.

    {"splits": {"train": {"file": "train.bin", ...}, ...}, "meta_pkl": null, ...}
    -> {"meta.json", "train.bin", "val.bin"}
    """
    names = {RECORD_NAME}
    if not isinstance(meta, dict):
        return names
    splits = meta.get("splits") if isinstance(meta.get("splits"), dict) else {}
    for split, record in splits.items():
        record = record if isinstance(record, dict) else {}
        index = record.get("index") if isinstance(record.get("index"), dict) else {}
        names |= {record.get("file")} & {f"{split}.bin"}
        names |= {index.get("file")} & {f"{split}.docs.npy"}
    suffix = SHARD_FORMATS.get(meta.get("format"))
    shards = meta.get("shards") if isinstance(meta.get("shards"), list) else []
    for shard in shards if suffix else ():
        name = shard.get("file") if isinstance(shard, dict) else None
        if is_plain_name(name) and name.endswith(suffix) and not name.startswith("."):
            names.add(name)
    if isinstance(meta.get("meta_pkl"), dict) and meta["meta_pkl"].get("file") == META_PKL:
        names.add(META_PKL)
    tokenizer = meta.get("tokenizer") if isinstance(meta.get("tokenizer"), dict) else {}
    path = tokenizer.get("path")
    if is_plain_name(path) and path.endswith(".json") and path != RECORD_NAME:
        names.add(path)  # a tokenizer the run trained and wrote into the folder
    return names


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
    train.bin, val.bin and meta.pkl; llm.c's and modded-nanogpt's `*_train_*.bin` and
    `*_val_*.bin` globs; build-nanogpt's any name holding "train" or "val" (its listdir filter),
    in a folder of .npy shards. "edu_fineweb_train_000002 (1).bin" -> True."""
    if name in ("train.bin", "val.bin", META_PKL):
        return True
    globs = ("*_train_*.bin", "*_val_*.bin")  # C's and Python's globs pass hidden names over
    if not name.startswith(".") and any(fnmatch.fnmatchcase(name, glob) for glob in globs):
        return True
    return shard_format == "npy" and ("train" in name or "val" in name)
