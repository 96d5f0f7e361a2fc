"""verify and bpb for a parameter-golf folder (data/parameter_golf/prepare.py): its documents,
tokenizers/, datasets/fineweb10B_{suffix}/ of llm.c shards and manifest.json, each recomputed
from the documents and the ids a trainer reads."""

import itertools
import json
from pathlib import Path

import numpy as np

from documents.corpus import documents
from formats import golf
from formats.schema import FIGURES, GOLF_EXPORT, GOLF_MANIFEST
from formats.shards import read_shard
from formats.tokenizers import load_trained
from formats.val_bytes import add_figures, checked_shares, document_ids
from safety.errors import PrepareError
from safety.files import load_json, read_small_file, sha256_file
from safety.text import shortened

from .bpb import audit_lines, document_share_sums
from .folder import SHA256_DIFFERS, audit_shards
from .val_bytes import first_difference

BATCH = 1024  # val documents encoded at a time, as prepare.py encodes them


def audit(folder, meta, quiet=False):
    """verify's problems with a parameter-golf folder, one line each; prints each audit."""
    folder, problems, tokenizers = Path(folder), [], []
    for item in meta["files"]:
        path = folder / item["file"]
        if not path.is_file() or sha256_file(path) != item["sha256"]:
            problems.append(f"{path} is missing or {SHA256_DIFFERS}")
    # shards in datasets/*/ that train_gpt.py's globs read but meta.json does not list
    listed = {s["file"] for d in meta["datasets"] for k in ("shards", "val_bytes") for s in d[k]}
    found = (p.relative_to(folder).as_posix() for p in folder.glob("datasets/*/fineweb_*.bin"))
    found = sorted(name for name in found if name not in listed)
    if found:
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3:,} more" if len(found) > 3 else "")
        problems.append(
            f"{folder} holds shards meta.json does not list ({shown}); train_gpt.py would read "
            "them: move them away, or run prepare.py again"
        )
    if problems:
        return problems
    for i, dataset in enumerate(meta["datasets"]):
        where = f"{folder / 'meta.json'}: datasets[{i}]"
        try:
            tokens = rebuilt_tokenizer(folder, dataset["tokenizer"], where)
        except PrepareError as exc:
            problems.append(str(exc))
            continue
        tokenizers.append(tokens)
        shard_meta = {"format": "llmc", "shards": dataset["shards"]}
        if shards := audit_shards(folder, shard_meta, np.dtype(np.uint16), tokens.vocab_size, True):
            problems += shards
            continue
        val_docs = meta["split"]["val_docs"]
        problems += (
            _audit_figures(folder, dataset, tokens, where, val_docs)
            or _audit_sidecars(folder, dataset, tokens)  # read by document
            or _audit_encoded_val(folder, dataset, tokens, val_docs)
        )
        if not problems and not quiet:
            print("\n".join(audit_lines(dataset["name"], dataset["bytes"])))
    return problems or _audit_manifest(folder, meta, tokenizers)


def not_one_dataset(folder, meta):
    """The PrepareError for a command reading one stream of ids, given a parameter-golf folder."""
    names = ", ".join(dataset["name"] for dataset in meta["datasets"])
    return PrepareError(
        f"{folder} is a parameter-golf folder of datasets ({names}); bpb and verify read it "
        f"whole, overlap one dataset: python prepare_common.py overlap "
        f"{Path(folder) / 'datasets' / meta['datasets'][0]['name']}"
    )


def rebuilt_tokenizer(folder, record, where):
    """The dataset's tokenizer from its files (each checked against its sha256 first)."""
    for item in record["files"]:
        path = folder / item["file"]
        if not path.is_file() or sha256_file(path) != item.get("sha256"):
            raise PrepareError(f"{path} is missing or {SHA256_DIFFERS}")
    path = folder / record["files"][0]["file"]
    if record["kind"] == "byte":
        if path.read_bytes() != golf.byte260_json():
            raise PrepareError(f"{path} is not parameter-golf's pure-byte tokenizer")
        tokens = golf.ByteTokens()
    elif record["kind"] == "sentencepiece_bpe":
        try:
            golf.sentencepiece_module()
        except PrepareError:  # no sentencepiece package: nothing of the dataset is checked
            raise PrepareError(
                f"{path} needs the sentencepiece package to be read, so the shards and val bytes "
                f"sidecars of {where} cannot be checked against it: pip install -e '.[golf]'"
            ) from None
        tokens = golf.SentencePieceTokens(path)
    else:
        tokens = golf.BpeTokens(load_trained(path, option="the tokenizer")[1], record.get("bos_id"))
    if (tokens.vocab_size, tokens.bos_id) != (record.get("vocab_size"), record.get("bos_id")):
        raise PrepareError(
            f"{where}.tokenizer says {json.dumps(record.get('vocab_size'))} ids and BOS "
            f"{json.dumps(record.get('bos_id'))}, its files {tokens.vocab_size} and {tokens.bos_id}"
        )
    return tokens


def split_ids(folder, dataset, split, key="shards"):
    """The split's shards (or val bytes sidecars) of a dataset in train_gpt.py's sorted order,
    each mapped only when reached: the shards may outnumber the files a process may open."""
    records = sorted((s for s in dataset[key] if s["split"] == split), key=lambda s: s["file"])
    return (read_shard(folder / s["file"], "llmc", np.dtype(np.uint16)) for s in records)


def joined_ids(folder, dataset, split, key="shards"):
    """split_ids as one array, each shard copied and its map let go before the next is read."""
    return np.concatenate([np.array(ids) for ids in split_ids(folder, dataset, split, key)])


def _audit_figures(folder, dataset, tokens, where, val_docs):
    """Each split's byte figures recounted from the documents (val the first val_docs) and ids."""
    docs, problems = folder / golf.DOCS, []
    texts = iter(documents([docs]))
    for split in ("val", "train"):
        figures = dict.fromkeys(FIGURES, 0)
        recorded = dataset["bytes"][split] if isinstance(dataset["bytes"][split], dict) else {}
        try:
            for ids in document_ids(split_ids(folder, dataset, split), tokens.bos_id):
                if (text := next(texts, None)) is None:
                    return [f"{where}'s {split} shards hold more documents than {docs}"]
                add_figures(figures, text, ids, tokens)
        except PrepareError as exc:  # the first shard, in train_gpt.py's sorted order, not a BOS
            first = min(s["file"] for s in dataset["shards"] if s["split"] == split)
            return [f"{folder / first}: {exc}, as train_gpt.py reads the shards (sorted by name)"]
        if split == "val" and figures["documents"] != val_docs:
            problems.append(
                f"{where}'s val shards hold {figures['documents']:,} documents, meta.json's "
                f"split.val_docs says {json.dumps(val_docs)}"
            )
        for name in FIGURES:
            if figures[name] != recorded.get(name):
                problems.append(
                    f"{where}.bytes.{split}.{name} is {json.dumps(recorded.get(name))}, "
                    f"recomputed from the documents and the ids: {figures[name]:,}"
                )
    if next(texts, None) is not None:
        problems.append(f"{docs} holds more documents than {where}'s shards")
    return problems


def _audit_sidecars(folder, dataset, tokens):
    """Each val bytes sidecar's header, sha256, length, and per document its shares' sum."""
    sidecars, problems = dataset["val_bytes"], []
    if not sidecars:
        return []
    vals = [s for s in dataset["shards"] if s["split"] == "val"]
    for sidecar, val in zip(sidecars, vals):
        path = folder / sidecar["file"]
        try:
            shares = read_shard(path, "llmc", np.dtype(np.uint16))
        except PrepareError as exc:
            problems.append(str(exc))
            continue
        if sha256_file(path) != sidecar["sha256"]:
            problems.append(f"{path} {SHA256_DIFFERS}")
        if len(shares) != val["tokens"]:
            problems.append(
                f"{path} holds {len(shares):,} shares, its val shard {folder / val['file']} "
                f"{val['tokens']:,} tokens"
            )
    if len(sidecars) != len(vals):
        problems.append(
            f"{folder / vals[0]['file']}: {len(vals)} val shard(s) but {len(sidecars)} val "
            "bytes sidecar(s)"
        )
    if problems:
        return problems
    val = joined_ids(folder, dataset, "val"), joined_ids(folder, dataset, "val", "val_bytes")
    sums = document_share_sums(*val, tokens.bos_id)
    for index, (total, text) in enumerate(zip(sums, documents([folder / golf.DOCS]))):
        if int(total) != len(text.encode()):
            return [
                f"{folder / sidecars[0]['file']}: the shares of val document {index:,} sum to "
                f"{int(total):,}, its text has {len(text.encode()):,} UTF-8 bytes"
            ]
    return []


def _audit_encoded_val(folder, dataset, tokens, val_docs):
    """The first position where val's ids or shares differ from the val documents encoded again."""
    # val encoded as prepare.py encodes it: BOS then the ids, the BOS's share 0 (a document of
    # no token: its whole text), and the shares only if the dataset has sidecars
    texts = itertools.islice(documents([folder / golf.DOCS]), val_docs)
    encoded = {key: [] for key in ("shards", "val_bytes") if dataset[key]}
    while batch := list(itertools.islice(texts, BATCH)):
        for text, (ids, shares) in zip(batch, tokens.encode_batch(batch)):
            encoded["shards"].append(np.concatenate([[tokens.bos_id], ids]).astype(np.uint16))
            if "val_bytes" in encoded:
                shares = np.concatenate([[0 if len(ids) else len(text.encode())], shares])
                encoded["val_bytes"].append(checked_shares(shares, folder / golf.DOCS))
    source = f"{folder / golf.DOCS}'s val documents encoded by {dataset['tokenizer']['name']}"
    for key, arrays in encoded.items():
        expected, what = np.concatenate(arrays), "id" if key == "shards" else "share"
        records = sorted((s for s in dataset[key] if s["split"] == "val"), key=lambda s: s["file"])
        found = joined_ids(folder, dataset, "val", key)
        if len(found) != len(expected):
            return [
                f"{folder / records[0]['file']}: val's {key} hold {len(found):,} {what}s, "
                f"{source} give {len(expected):,}"
            ]
        start = 0
        for record in records:
            part, start = slice(start, start + record["tokens"]), start + record["tokens"]
            path = folder / record["file"]
            if line := first_difference(path, found[part], expected[part], source, what):
                return [line]
    return []


def _audit_manifest(folder, meta, tokenizers):
    """manifest.json against the one prepare.py writes (golf.manifest) from what verify checked,
    the first field that differs named: parameter-golf's scripts read its counts, ids and paths."""
    export, datasets = folder / GOLF_EXPORT, meta["datasets"]
    specs = load_json(read_small_file(export), export)
    specs = specs.get("tokenizers") if isinstance(specs, dict) else None
    named = [
        (s.get("name"), f"fineweb10B_{s.get('dataset_suffix')}") if isinstance(s, dict) else s
        for s in (specs if isinstance(specs, list) else [None])
    ]
    if named != [(d["tokenizer"]["name"], d["name"]) for d in datasets]:
        return [f"{export}: tokenizers is not the spec of each dataset meta.json lists, in order"]
    files = [[item["file"] for item in dataset["tokenizer"]["files"]] for dataset in datasets]
    variants = [
        {"spec": spec, "tokens": tokens, "files": names, "dataset": dataset}
        for spec, tokens, names, dataset in zip(specs, tokenizers, files, datasets)
    ]
    source, shard_size = meta.get("source") or {}, meta["split"].get("shard_size")
    repo, file = source.get("repo"), source.get("file")
    if repo is not None and not (isinstance(repo, str) and isinstance(file, str)):
        return [f"{folder / 'meta.json'}: source.repo and source.file are not both strings"]
    if shard_size is not None and (type(shard_size) is not int or shard_size < 1):
        return [f"{folder / 'meta.json'}: split.shard_size is {shortened(repr(shard_size))}"]
    remote = (repo, file.rpartition("/")[0]) if repo is not None else (None, None)
    sidecar = None
    if golf.SIDECAR in {item["file"] for item in meta["files"]}:
        path = folder / golf.SIDECAR
        sidecar = golf.sidecar_record(read_small_file(path), path)
    counts = datasets[0]["bytes"]  # each split's documents, recounted by now
    num_docs = counts["val"]["documents"] + counts["train"]["documents"]
    val_docs = meta["split"]["val_docs"]
    expected = golf.manifest(variants, num_docs, val_docs, shard_size, sidecar, {"remote": remote})
    path = folder / GOLF_MANIFEST
    difference = _differing_field(load_json(read_small_file(path), path), expected)
    if difference is None:
        return []
    field, found, wanted = difference
    return [
        f"{path}: {field or 'its content'} is {shortened(json.dumps(found))}, but meta.json and "
        f"the files it lists give {shortened(json.dumps(wanted))}; run prepare.py again"
    ]


def _differing_field(found, expected, field=""):
    """(field, its value, the one expected) where two JSON values first differ, or None:
    ({"a": [1, 2]}, {"a": [1, 3]}) -> ("a[1]", 2, 3); a field on one side only is null on the
    other: ({"a": 1, "b": 2}, {"a": 1}) -> ("b", 2, None)."""
    if isinstance(expected, dict) and isinstance(found, dict):
        keys = {**found, **expected}
        fields = [(f"{field}.{key}" if field else key, key) for key in keys]
        for name, key in fields:
            if (key in found) != (key in expected):
                return name, found.get(key), expected.get(key)
    elif isinstance(expected, list) and isinstance(found, list) and len(found) == len(expected):
        fields = [(f"{field}[{i}]", i) for i in range(len(expected))]
    elif found == expected and type(found) is type(expected):
        return None
    else:
        return field, found, expected
    for name, key in fields:
        if difference := _differing_field(found[key], expected[key], name):
            return difference
    return None
