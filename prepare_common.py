"""What the data/*/prepare.py lessons share: the helpers between "the text" and "train.bin".

Read it after data/shakespeare_char/prepare.py, a section a job: 1. the tokenizer and a document's
ids; 2. nanoGPT's .bin files and where their documents start; 3. llm.c's shards; 4. the folder
commit; 5. meta.json and meta.pkl; 6. documents: a pinned hub dataset, nanoGPT's split; 7. the
commands over a prepared folder.

What keeps the lessons safe without being the lesson is the `safety` package (one-line errors,
checked downloads, strict readers, the folder commit). The `inspection` package runs from here:

    python prepare_common.py verify data/shakespeare_char
    python prepare_common.py show data/shakespeare_char --split val --block-size 8
    python prepare_common.py packing data/openwebtext --block-size 1024
"""

import functools
import itertools
import json
import math
import pickle
import sys
from pathlib import Path

import numpy as np

from documents.encoded import encoded_documents
from formats.schema import (
    META_FORMAT_VERSION,
    META_PKL,
    RECORD_NAME,
    SHARD_FORMATS,
    written_by_a_run,
)
from formats.shards import check_ids, splits_record, write_npy, write_shard
from formats.tokenizers import nanogpt_sample_maps, write_token_bytes
from formats.val_bytes import (
    RecordTokens,
    batch_figures,
    figures_option,
    write_counted,
    write_val_bytes,
)
from safety import PrepareError, run_main
from safety.commit import folder_tokenizer
from safety.files import atomic_path, check_utf8_names, reserve, sha256_file
from safety.text import without_lone_surrogates

# ---------------------------------------------------------------------------------------------
# 1. tokenizers: the tiktoken Encoding a BPE lesson encodes with, and a document's ids


def bpe_encoding(tokenizer_path=None, need_eot=False):
    """The tiktoken Encoding a BPE pipeline encodes with, and its meta.json "tokenizer" record:
    None -> GPT-2 ({"kind": "tiktoken", "name": "gpt2", "vocab_size": 50257, "eot_id": 50256,
    ...}); a path -> a file of train_tokenizer.py ({"kind": "bpe", ...}). need_eot: one without
    <|endoftext|> is an error."""
    from formats.tokenizers import encoding_sha256, gpt2_encoding, trained_tokenizer

    if tokenizer_path is not None:
        encoding, record = trained_tokenizer(tokenizer_path, need_eot)
    else:
        encoding = gpt2_encoding()
        record = dict(kind="tiktoken", name="gpt2", vocab_size=encoding.n_vocab)
        record.update(eot_id=encoding.eot_token, sha256=encoding_sha256(encoding))
    encoding.encode_ordinary("")  # the fast encoder (formats/encoders.py) built before any step
    return encoding, record


def encode_document(text, encoding, eot_id, dtype, eot_first=False):
    """One document's ids and the end-of-text id, as a `dtype` array: "Hi" -> [17250, 50256]
    (nanoGPT's rule); eot_first -> [50256, 17250] (llm.c's). nanoGPT's
    np.array(encoding.encode_ordinary(text) + [eot_id], dtype) without a Python int per token
    (the cast is unchecked: `tokenize_documents` checks the largest id once)."""
    try:
        encoded = encoding.encode_to_numpy(text, disallowed_special=())
    except UnicodeEncodeError:  # lone surrogates: encode_ordinary repairs them as tiktoken does
        encoded = encoding.encode_ordinary(text)
    ids = np.empty(len(encoded) + 1, dtype)
    if eot_first:
        ids[0], ids[1:] = eot_id, encoded
    else:
        ids[:-1], ids[-1] = encoded, eot_id
    return ids


# ---------------------------------------------------------------------------------------------
# 2. bin files: raw token ids, one dtype, no header (what nanoGPT's get_batch memory-maps)

NANOGPT_READS = (  # dtype_for_vocab's warning for .bin files
    "the .bin files are uint32; stock nanoGPT train.py reads uint16: change np.uint16 to "
    "np.uint32 in its get_batch"
)


def dtype_for_vocab(vocab_size, readers=NANOGPT_READS):
    """The smallest dtype a trainer reads for ids 0..vocab_size-1: 65,536 -> uint16; 65,537 ->
    uint32, with a warning naming `readers` (nanoGPT's .bin files or llm.c's shards)."""
    if vocab_size <= 2**16:
        return np.dtype(np.uint16)
    if vocab_size > 2**32:
        raise PrepareError(f"vocab_size {vocab_size:,} is too large for uint32 token ids")
    print(f"warning: vocab_size {vocab_size:,} does not fit uint16, so {readers}", file=sys.stderr)
    return np.dtype(np.uint32)


def write_bin(path, batches, dtype, vocab_size):
    """Stream id arrays into `path` as raw `dtype` values, each checked (`check_ids`) before the
    cast; return the count: [[0, 1, 2], [64, 63]] -> a 10-byte file of uint16 0 1 2 64 63."""
    path, dtype = Path(path), np.dtype(dtype)
    written = 0  # a Python int: no 32-bit overflow on huge splits
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            for batch in batches:
                batch = np.asarray(batch)
                check_ids(batch, vocab_size, dtype, where=path.name)
                f.write(np.ascontiguousarray(batch, dtype=dtype))  # tofile's errors lack errno
                written += batch.size
        if tmp.stat().st_size != written * dtype.itemsize:
            raise PrepareError(f"{path}: file size does not match {written:,} {dtype.name} tokens")
    return written


def write_memmap(path, batches, num_tokens, dtype, desc):
    """nanoGPT's loop: a split of `num_tokens` ids, known in advance, into one file of that size,
    each batch through a memory map of its own range (memory stays flat: one batch is mapped)."""
    from tqdm import tqdm

    path, dtype = Path(path), np.dtype(dtype)
    with atomic_path(path) as tmp:
        with open(tmp, "r+b") as f:  # a full disk: an error here, not SIGBUS through a map
            reserve(f, num_tokens * dtype.itemsize)
        idx = 0
        bar = tqdm(total=num_tokens, unit="tok", unit_scale=True, desc=desc)
        for arr_batch in batches:
            arr = np.memmap(tmp, dtype, "r+", offset=idx * dtype.itemsize, shape=arr_batch.shape)
            arr[:] = arr_batch
            arr.flush()
            del arr  # closes the file: the commit renames it
            idx += len(arr_batch)
            bar.update(len(arr_batch))
        bar.close()
        if idx != num_tokens:
            raise PrepareError(f"{path}: wrote {idx:,} tokens, expected {num_tokens:,}")
    return idx


def write_document_starts(path, lengths):
    """A split's document index beside its .bin file: where each document starts, as uint64 token
    offsets (np.save): lengths [3, 2, 4] -> [0, 3, 5] (read by `prepare_common.py packing`)."""
    starts = np.zeros(len(lengths), np.uint64)
    np.cumsum(lengths[:-1], out=starts[1:])
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        write_npy(f, starts)


# ---------------------------------------------------------------------------------------------
# 3. shards: the files of llm.c, modded-nanogpt and build-nanogpt (data/fineweb, --format llmc)
#
# Past one .bin file per split, the token stream is cut into shards of `shard_size` tokens
# (llm.c's default: 100M). An llm.c shard (llm.c, modded-nanogpt) is a header of 256 little-endian
# int32, [20240520, 1, number of tokens, 0, ...], then the uint16 tokens (past 65,536 ids: 20240801,
# 7 and uint32: llm.c's llama-3 files); build-nanogpt's shard is the tokens saved by np.save.
# Every shard but the last is full, and a document may straddle two (llm.c's loop: fill_shards).

LLMC_READS = (  # dtype_for_vocab's warning for shards
    "the shards are llm.c's uint32 variant (magic 20240801, version 7: read by llm.c's "
    "train_llama3.py); modded-nanogpt, llm.c's train_gpt2 and build-nanogpt read uint16 only"
)


def fill_shards(batches, shard_size, dtype):
    """Cut a stream of id arrays into shards: [[1, 2, 3], [4, 5]], shard_size 2 -> [1, 2], [3, 4],
    [5]. One buffer, reused: use each shard before asking for the next."""
    buffer = np.empty(shard_size, dtype)
    count = 0
    for ids in batches:
        while count + len(ids) >= shard_size:  # the shard is full: llm.c writes it now
            room = shard_size - count
            buffer[count:] = ids[:room]
            yield buffer
            ids, count = ids[room:], 0
        buffer[count : count + len(ids)] = ids
        count += len(ids)
    if count:
        yield buffer[:count]


def llmc_names(prefix, split=None, first_index=0):
    """The shards' (split, file stem), in order. llm.c's rule, split None: shard 0 is val, the
    others train -> ("val", "edu_fineweb_val_000000"), ("train", "edu_fineweb_train_000001"), ...
    A split given names them all after it: ("train", "openwebtext_train_000003"), ..."""
    for index in itertools.count(first_index):
        name = split or ("val" if index == 0 else "train")
        yield name, f"{prefix}_{name}_{index:06d}"


def write_shards(out, batches, names, shard_size, dtype, vocab_size, shard_format, say=True):
    """Write the stream `batches` as shards in `out`, named by `names` (see llmc_names); return
    meta.json's record of each: [{"file", "split", "tokens", "sha256"}, ...]. say: print each."""
    shards = []
    for tokens, (split, stem) in zip(fill_shards(batches, shard_size, dtype), names):
        path = Path(out) / f"{stem}{SHARD_FORMATS[shard_format]}"
        check_ids(tokens, vocab_size, dtype, where=path.name)
        write_shard(path, tokens, shard_format)
        shards.append(
            {"file": path.name, "split": split, "tokens": len(tokens), "sha256": sha256_file(path)}
        )
        if say:
            print(f"wrote {path.name}: {len(tokens):,} tokens")
    return shards


# ---------------------------------------------------------------------------------------------
# 4. the folder commit (safety/commit.py): a prepared folder changes as one transaction
#
#     with output_folder(out_dir) as out:    # out_dir locked; `out`: an empty staging folder
#         write_bin(out / "train.bin", ...)  # every output is written into `out`,
#         write_meta(out, ...)               # meta.json, the commit record, last
#
# An error or an interrupt in the block leaves the old set as it was; a crash leaves the old
# set, the new one, or a folder without meta.json that `verify` calls incomplete.


# ---------------------------------------------------------------------------------------------
# 5. metadata: meta.json beside the .bin files (readable, safe) and nanoGPT's meta.pkl


def write_meta(
    out,
    *,
    script,
    tokenizer,
    dtype,
    source,
    split,
    options,
    split_tokens=None,
    shards=None,
    shard_format=None,
    texts=None,
    counted=None,
    eot_first=False,
):
    """Write meta.json, the commit record: all it takes to read, check and reproduce the outputs.

    tokenizer: {"kind": "char"|"tiktoken"|"bpe", "name", "vocab_size", "eot_id", "sha256", ...};
    split_tokens: {"train": 1003854, "val": 111540}, or shards (write_shards' list) and their
    shard_format. texts: {"train": text, "val": text}, for the byte figures (write_val_bytes);
    or `counted`, those figures counted as each document was encoded (write_counted).
    """
    out = Path(out)
    pkl = out / META_PKL
    meta = {
        "format_version": META_FORMAT_VERSION,
        "created_by": script,
        "tokenizer": folder_tokenizer(tokenizer, out),  # its path relative, if in the folder
        "dtype": np.dtype(dtype).name,
        "splits": splits_record(out, split_tokens, shards),
        "meta_pkl": {"file": META_PKL, "sha256": sha256_file(pkl)} if pkl.is_file() else None,
        "source": source,
        "split": split,
        "options": options,
    }
    if shards is not None:
        meta["format"], meta["shards"] = shard_format, shards
    splits = meta["splits"]
    meta["token_bytes"] = write_token_bytes(out, tokenizer, dtype, splits, shards, shard_format)
    if texts is not None:
        meta.update(write_val_bytes(out, meta, tokenizer, texts))
    elif counted is not None:
        meta.update(write_counted(out, meta, tokenizer, counted, eot_first))
    return write_record(out, meta)


def write_record(out, meta):
    """meta.json itself, atomically: the dict as indented UTF-8 JSON; return the dict."""
    check_utf8_names(meta)  # a file name that is not UTF-8 cannot be recorded: one line
    data = (json.dumps(meta, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    with atomic_path(Path(out) / RECORD_NAME) as tmp:
        tmp.write_bytes(data)
    return meta


def text_source(input_path, out_dir, characters, url=None):
    """meta.json's "source" for one text file: its path (relative when it sits in `out_dir`),
    sha256, size, and origin (`url`, None for a local --input)."""
    input_path = Path(input_path).resolve()
    inside = input_path.parent == Path(out_dir).resolve()
    if inside and written_by_a_run(input_path.name):  # its sha256 would not verify
        raise PrepareError(
            f"--input {input_path} is the folder's own {input_path.name}, which this run "
            "replaces; pass the text file it was made from"
        )
    return {
        "path": input_path.name if inside else str(input_path),
        "sha256": sha256_file(input_path),
        "characters": characters,
        "url": url,
    }


def write_pickle(path, obj):
    """Pickle `obj` to `path`, atomically (nanoGPT's meta.pkl)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        pickle.dump(obj, f)


def write_bpe_meta_pkl(out, tokenizer, encoding):
    """nanoGPT's meta.pkl for a trained tokenizer, {"vocab_size", "tokenizer", "stoi", "itos"}
    (GPT-2 needs none: nanoGPT's defaults); return whether one was written."""
    if tokenizer["kind"] != "bpe":
        return False
    stoi, itos = nanogpt_sample_maps(encoding)
    tokenizer = folder_tokenizer(tokenizer, out)  # as meta.json records it
    meta = dict(vocab_size=tokenizer["vocab_size"], tokenizer=tokenizer, stoi=stoi, itos=itos)
    write_pickle(Path(out) / META_PKL, meta)
    return True


# ---------------------------------------------------------------------------------------------
# 6. documents (loaded by documents/inputs.py's `load_documents`): nanoGPT's split, their ids


def id_batches(tokenized, documents_per_batch=10_000):
    """A tokenized dataset's ids in order, a batch of documents at a time as one flat array."""
    for batch in tokenized.with_format("arrow").iter(batch_size=documents_per_batch):
        yield batch["ids"].combine_chunks().flatten().to_numpy()


def tokenize_dataset(documents, encoding, tokenizer, dtype, where, num_proc, desc, eot_first=False):
    """nanoGPT's `documents.map(process, ...)`: every document's ids, length and byte figures
    (tokenize_documents), in `num_proc` processes, as a datasets.Dataset. The ids are stored as
    `dtype`, under a key of what decides them (datasets' own would pickle the vocabulary)."""
    from datasets.fingerprint import Hasher

    key = [documents._fingerprint, tokenizer["sha256"], tokenizer["eot_id"], eot_first, dtype.name]
    figures = figures_option(documents.data.nbytes)  # compared in numba past 256 MB
    options = dict(encoding=encoding, tokenizer=tokenizer, dtype=dtype, where=where)
    tokenize = functools.partial(
        tokenize_documents, **options, eot_first=eot_first, figures=figures
    )
    # and the file's columns: a file an earlier version wrote without "figures" is not read
    key = Hasher.hash([*key, ("ids", "len", "figures")])
    # the figures' tables and their compiled loop, made once here, before the workers fork
    tokens = RecordTokens(tokenizer, encoding=encoding, compiled=figures == "compiled")
    batch_figures(["warm"], [np.zeros(0, dtype)], tokens)  # for ids of this dtype
    return encoded_documents(documents, tokenize, dtype, num_proc, desc, key)


def split_sizes(num_documents, val_fraction):
    """(train, val) document counts of datasets' train_test_split(test_size=val_fraction):
    10,000 documents, 0.0005 -> (9995, 5); a side left empty is an error."""
    num_val = math.ceil(val_fraction * num_documents)
    num_train = num_documents - num_val
    if not 0 < val_fraction < 1 or num_train <= 0:
        empty = "val" if val_fraction <= 0 else "train"
        raise PrepareError(
            f"--val-fraction {val_fraction} of {num_documents:,} documents leaves {empty} empty; "
            f"choose a fraction that leaves at least one document on each side"
        )
    return num_train, num_val


SPLIT_RULE = (
    "nanoGPT's: ceil(val_fraction * n) documents to val, the first of "
    "np.random.default_rng(seed).permutation(n), train the rest in that order "
    "(datasets' train_test_split(shuffle=True), 'test' renamed 'val')"
)


def random_split(num_documents, val_fraction, seed):
    """nanoGPT's split of documents 0..n-1 (SPLIT_RULE): (train, val) document numbers, in the
    order written: 10 documents, 0.2, seed 2357 -> ([0, 9, 5, 6, 2, 7, 4, 1], [8, 3])."""
    _, num_val = split_sizes(num_documents, val_fraction)
    permutation = np.random.default_rng(seed).permutation(num_documents)
    return permutation[num_val:], permutation[:num_val]


def split_record(
    val_fraction, seed, documents, numpy_version=np.__version__, dedup=None, rule=None
):
    """meta.json's "split" for `random_split`: the rule and its inputs (numpy's version: the
    permutation is its generator's). dedup: the record of documents dropped before the split."""
    record = {
        "rule": rule or SPLIT_RULE,
        "val_fraction": val_fraction,
        "seed": seed,
        "numpy": numpy_version,
        "documents": documents,
    }
    return record if dedup is None else {**record, "dedup": dedup}


def tokenize_documents(
    texts, indices, encoding, tokenizer, dtype, where, eot_first=False, figures=False
):
    """nanoGPT's `process` for a batch of documents (a datasets map with indices): each one's ids
    and their lengths: ["Hi", "a"] -> {"ids": [[17250, 50256], [64, 50256]], "len": [2, 2]}.
    A pattern that leaves text out is refused, naming the document (`where`). figures: also each
    document's byte figures (formats/val_bytes.py), "compiled": with numba."""
    from formats.tokenizers import check_documents_covered, check_dtype_holds

    eot_id = tokenizer["eot_id"]
    check_dtype_holds(encoding, eot_id, dtype)  # before anything is encoded: no id wraps around
    ids = [encode_document(text, encoding, eot_id, dtype, eot_first) for text in texts]
    name = where if callable(where) else lambda i: f"{where} {indices[i]}"
    check_documents_covered(texts, ids, encoding, tokenizer, name)
    out = {"ids": ids, "len": [len(doc) for doc in ids]}
    if figures:
        texts = [without_lone_surrogates(text) for text in texts]  # as tiktoken encodes them
        documents = [doc[1:] if eot_first else doc[:-1] for doc in ids]  # no end-of-text
        tokens = RecordTokens(tokenizer, encoding=encoding, compiled=figures == "compiled")
        out["figures"] = batch_figures(texts, documents, tokens)
    return out


# ---------------------------------------------------------------------------------------------
# 7. the commands over a prepared folder (the inspection package, loaded when one runs)


def main(argv=None):
    """python prepare_common.py verify|show|packing|overlap|bpb FOLDER (each answers --help)"""
    from inspection import main as inspect_folder

    inspect_folder(argv)


if __name__ == "__main__":
    run_main(main)
