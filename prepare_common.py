"""What the data/*/prepare.py lessons share: the helpers between "the text" and "train.bin".

Read it top to bottom after data/shakespeare_char/prepare.py, one section a job: 1. downloads
checked against a pinned sha256; 2. the tokenizer (GPT-2's or a trained one); 3. the dtype of
the ids, nanoGPT's .bin files and where their documents start; 4. llm.c's shards; 5. the folder
commit; 6. meta.json and meta.pkl; 7. documents: nanoGPT's split, each document's ids, rows
that begin at a document start; 8. verify, show and packing.

What keeps these safe without being the lesson is imported from hardening/, its contract said
where it is used: one-line errors, strict and bounded readers, the commit's lock and signals,
the `datasets` loader's edge cases, the auditor. It is also a command, for any prepared folder:

    python prepare_common.py verify data/shakespeare_char
    python prepare_common.py show data/shakespeare_char --split val --block-size 8
    python prepare_common.py packing data/openwebtext --block-size 1024
"""

import hashlib
import itertools
import json
import math
import os
import pickle
import sys
from collections import namedtuple
from pathlib import Path

import numpy as np

# The hardening each helper below stands on, and what a lesson takes through this file:
# isort: off
from hardening import audit, show
from hardening.cli import ArgumentParser, run_main  # a failure: one `error:` line, no traceback
from hardening.cli import default_num_proc, fraction, positive_int, random_seed, tokens_per_shard
from hardening.commit import RECORD_NAME, folder_lock, folder_tokenizer, output_folder
from hardening.documents import HubDataset, load_documents, source_name, source_record
from hardening.documents import id_batches, ids_cache_options, split_sizes
from hardening.errors import PrepareError
from hardening.files import atomic_path, data_cache, check_utf8_names, read_text, sha256_file
from hardening.formats import LLMC_HEADER_INTS, LLMC_MAGIC_VERSION, META_FORMAT_VERSION, META_PKL
from hardening.formats import SHARD_FORMATS, splits_record, text_source
from hardening.http import MIRROR_ENV, download_blocks
from hardening.tokenizers import check_covered, check_documents_covered, check_dtype_holds
from hardening.tokenizers import encode_document, encoding_sha256
from hardening.tokenizers import nanogpt_sample_maps, trained_tokenizer
from hardening.archive import archive_file, json_members, json_stories  # TinyStories' archive
from hardening.pool import ordered_map
from hardening.stories import SplitFiles, story_vocab_size, train_story_bpe
from bpe import EOT
# isort: on

# ---------------------------------------------------------------------------------------------
# 1. downloads: known remote files, downloaded once and checked against a pinned sha256
#
# The classic failure this prevents is an HTML error page saved as input.txt: whatever server
# answered, the bytes are renamed into place only if their sha256 is the pinned one. A lesson
# pins its own files; GPT-2's are here. mirror_path: where the bytes sit in NANOGPT_DATA_MIRROR.
RemoteFile = namedtuple("RemoteFile", ["url", "sha256", "mirror_path"])

GPT2_VOCAB_BPE = RemoteFile(
    url="https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe",
    sha256="1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
    mirror_path="gpt2/vocab.bpe",
)
GPT2_ENCODER_JSON = RemoteFile(
    url="https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/encoder.json",
    sha256="196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    mirror_path="gpt2/encoder.json",
)


def fetch(remote, dest):
    """Put `remote`'s bytes at `dest`, checked against its pinned sha256; return `dest`. A `dest`
    with the right hash is reused, one with a wrong hash refused, never overwritten. With
    NANOGPT_DATA_MIRROR set (a folder or an http(s) URL), the bytes come from the mirror."""
    dest = Path(dest)
    if dest.exists():
        if not dest.is_file():
            raise PrepareError(f"{dest} exists and is not a file; move it away and run again")
        found = sha256_file(dest)
        if found != remote.sha256:
            raise PrepareError(
                f"{dest} exists but its sha256 is {found}, not the expected {remote.sha256}; "
                f"delete it to download it again"
            )
        return dest
    if not dest.parent.is_dir():
        raise PrepareError(f"cannot download to {dest}: {dest.parent} is not a folder")
    mirror = os.environ.get(MIRROR_ENV, "").strip()
    if not mirror or mirror.startswith(("http://", "https://")):
        url = f"{mirror.rstrip('/')}/{remote.mirror_path}" if mirror else remote.url
        # retried if the connection drops or the server says 5xx (hardening/http.py)
        return download_blocks(url, lambda blocks, total: save_verified(blocks, remote.sha256, dest, url, total))  # fmt: skip
    source = Path(mirror) / remote.mirror_path
    if not source.is_file():
        layout = "laid out as the origin's files are (such as gpt2/vocab.bpe)"
        raise PrepareError(f"mirror file {source} does not exist; {MIRROR_ENV} should name a folder {layout}")  # fmt: skip
    with open(source, "rb") as f:
        blocks = iter(lambda: f.read(1 << 20), b"")
        return save_verified(blocks, remote.sha256, dest, source, source.stat().st_size)


def save_verified(blocks, expected_sha256, dest, source, total_bytes):
    """Write byte blocks to `dest` via a temp name, if their sha256 matches; `total_bytes` is the
    size the source announced (None if unknown): fewer bytes is an error."""
    digest = hashlib.sha256()
    received = 0
    with atomic_path(dest) as tmp:  # the final name appears only if every check below passes
        with open(tmp, "wb") as f:
            for block in blocks:
                f.write(block)
                digest.update(block)
                received += len(block)
        if total_bytes is not None and received != total_bytes:
            raise PrepareError(
                f"{source} was cut short: received {received:,} of {total_bytes:,} bytes; "
                f"nothing was saved, run again"
            )
        found = digest.hexdigest()
        if found != expected_sha256:
            raise PrepareError(
                f"{source} sent {received:,} bytes with sha256 {found}, not the expected "
                f"{expected_sha256} (an error page or a changed file?); nothing was saved to {dest}"
            )
    return Path(dest)


# ---------------------------------------------------------------------------------------------
# 2. tokenizers: the tiktoken Encoding a BPE lesson encodes with, GPT-2's or a trained one


def bpe_encoding(tokenizer_path=None, need_eot=False):
    """The tiktoken Encoding a BPE pipeline encodes with, and its meta.json "tokenizer" record.

    None -> GPT-2: (Encoding "gpt2", {"kind": "tiktoken", "name": "gpt2", "vocab_size": 50257,
    "eot_id": 50256, ...}); a path -> a file of train_tokenizer.py ({"kind": "bpe", ...}), loaded
    with `bpe.Tokenizer.load`; need_eot: one without <|endoftext|> is an error.
    """
    if tokenizer_path is not None:
        return trained_tokenizer(tokenizer_path, need_eot)
    encoding = gpt2_encoding()
    n_vocab, eot, sha256 = encoding.n_vocab, encoding.eot_token, encoding_sha256(encoding)
    record = {"kind": "tiktoken", "name": "gpt2", "vocab_size": n_vocab, "eot_id": eot, "sha256": sha256}  # fmt: skip
    return encoding, record


def gpt2_encoding():
    """`tiktoken.get_encoding("gpt2")`, with its two files fetched by `fetch` first: tiktoken
    looks in $TIKTOKEN_CACHE_DIR for a file named sha1(url) of each; we put checked copies there
    (so a mirror works offline, and a failed download is our one line, not tiktoken's traceback).
    """
    import tiktoken

    tiktoken_cache = data_cache("tiktoken", "TIKTOKEN_CACHE_DIR")  # that variable, or ours
    for remote in (GPT2_VOCAB_BPE, GPT2_ENCODER_JSON):
        fetch(remote, tiktoken_cache / hashlib.sha1(remote.url.encode()).hexdigest())
    os.environ["TIKTOKEN_CACHE_DIR"] = str(tiktoken_cache)
    return tiktoken.get_encoding("gpt2")


# ---------------------------------------------------------------------------------------------
# 3. bin files: raw token ids, one dtype, no header (what nanoGPT's get_batch memory-maps)

NANOGPT_READS = (  # dtype_for_vocab's warning for .bin files
    "the .bin files are uint32; stock nanoGPT train.py reads uint16: change np.uint16 to "
    "np.uint32 in its get_batch"
)


def dtype_for_vocab(vocab_size, readers=NANOGPT_READS):
    """The smallest dtype a trainer reads for ids 0..vocab_size-1: uint16 up to 65,536 ids.

    65 -> uint16; 50,257 -> uint16; 65,536 -> uint16; 65,537 -> uint32 (with a warning that
    `readers`, what reads the files, is for nanoGPT's .bin files or llm.c's shards).
    """
    if vocab_size <= 2**16:
        return np.dtype(np.uint16)
    if vocab_size > 2**32:
        raise PrepareError(f"vocab_size {vocab_size:,} is too large for uint32 token ids")
    print(f"warning: vocab_size {vocab_size:,} does not fit uint16, so {readers}", file=sys.stderr)
    return np.dtype(np.uint32)


def check_ids(ids, vocab_size, dtype, where="ids"):
    """Refuse ids that are negative, >= vocab_size or beyond `dtype`, before any cast wraps them:
    [3, 70] with vocab_size 65 -> error "ids: token id 70 at position 1 is >= vocab_size 65"."""
    ids = np.asarray(ids)
    if ids.size == 0:
        return
    if ids.dtype.kind not in "iu":
        raise PrepareError(f"{where}: token ids must be integers, got dtype {ids.dtype}")
    limit = min(vocab_size, int(np.iinfo(dtype).max) + 1)
    if int(ids.min()) < 0 or int(ids.max()) >= limit:
        bad_index = int(np.argmax((ids < 0) | (ids >= limit)))  # the first bad one
        bad_id = int(ids.flat[bad_index])
        if bad_id < 0:
            reason = "negative"
        elif bad_id >= vocab_size:
            reason = f">= vocab_size {vocab_size:,}"
        else:
            reason = f"beyond {np.dtype(dtype).name}"
        raise PrepareError(f"{where}: token id {bad_id:,} at position {bad_index:,} is {reason}")


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
    each batch through a memory map of its own range (memory stays flat: one batch is mapped).
    The ids were checked against the dtype when they were made (`tokenize_documents`)."""
    from tqdm import tqdm

    path, dtype = Path(path), np.dtype(dtype)
    with atomic_path(path) as tmp:
        np.memmap(tmp, dtype=dtype, mode="w+", shape=(num_tokens,)).flush()  # the file, full size
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
    offsets (np.save), the first 0: lengths [3, 2, 4] -> [0, 3, 5]. nanoGPT's get_batch never
    reads it; `document_batch` and `python prepare_common.py packing` do."""
    starts = np.zeros(len(lengths), np.uint64)
    np.cumsum(lengths[:-1], out=starts[1:])
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.save(f, starts)


# ---------------------------------------------------------------------------------------------
# 4. shards: the files of llm.c, modded-nanogpt and build-nanogpt (data/fineweb, --format llmc)
#
# Past one .bin file per split, the token stream is cut into shards of `shard_size` tokens
# (llm.c's default: 100M). An llm.c shard (llm.c, modded-nanogpt) is a header, then the tokens:
#
#     bytes 0..1023    256 little-endian int32: [20240520, 1, number of tokens, 0, 0, ..., 0]
#                                                  magic     version
#     bytes 1024..     the tokens, uint16
#
# and for a vocabulary past 65,536 ids (llm.c's llama-3 files): magic 20240801, version 7, uint32.
# build-nanogpt's shards are the same tokens saved by np.save: numpy's .npy header, no llm.c one.
#
# Every shard but the last is full, a document may straddle two, the last holds the rest (never
# empty): the bytes of llm.c's "append the document while `count + len(doc) < shard_size`,
# else top the shard up with its first tokens, write it, and start the next with the rest".

LLMC_READS = (  # dtype_for_vocab's warning for shards
    "the shards are llm.c's uint32 variant (magic 20240801, version 7: read by llm.c's "
    "train_llama3.py); modded-nanogpt, llm.c's train_gpt2 and build-nanogpt read uint16 only"
)
DEFAULT_SHARD_SIZE = 10**8  # tokens per shard: llm.c's --shard_size, build-nanogpt's int(1e8)


def llmc_header(num_tokens, dtype):
    """The 256 int32 that start an llm.c shard: 1,000 uint16 tokens -> [20240520, 1, 1000, 0, ...]."""
    if not 0 <= num_tokens < 2**31:
        raise PrepareError(f"an llm.c shard holds fewer than 2**31 tokens, not {num_tokens:,}")
    header = np.zeros(LLMC_HEADER_INTS, dtype="<i4")
    header[0], header[1] = LLMC_MAGIC_VERSION[np.dtype(dtype)]
    header[2] = num_tokens
    return header


def write_shard(path, tokens, shard_format):
    """One shard file, atomically: llm.c's header and the tokens, or np.save's .npy."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        if shard_format == "llmc":
            f.write(llmc_header(len(tokens), tokens.dtype).tobytes())
            f.write(tokens.astype(tokens.dtype.newbyteorder("<"), copy=False).tobytes())
        else:
            np.save(f, tokens)  # what build-nanogpt's np.save(filename, tokens) writes


def fill_shards(batches, shard_size, dtype):
    """Cut a stream of id arrays into shards, each full one and then the rest: [[1, 2, 3], [4, 5]]
    (any batching of it), shard_size 2 -> [1, 2], [3, 4], [5]. One buffer, reused: use each shard
    before asking for the next."""
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
    meta.json's record of each: [{"file", "split", "tokens", "sha256"}, ...]. say: print a line
    for each (a task writing some in parallel with others leaves that to its commit)."""
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
# 5. the folder commit: a prepared folder changes as one transaction, like a git commit
#
#     with output_folder(out_dir) as out:    # out_dir locked; `out`: an empty staging folder
#         write_bin(out / "train.bin", ...)  # every output is written into `out`,
#         write_meta(out, ...)               # meta.json, the commit record, last
#     # the block ended without an error: out_dir holds the new, complete set
#
# An error or an interrupt in the block leaves the old set as it was; a crash leaves the old
# set, the new one, or a folder without meta.json that `verify` calls incomplete. The folder
# owns exactly what its meta.json lists (hardening/commit.py: the steps, and the lock).


# ---------------------------------------------------------------------------------------------
# 6. metadata: meta.json beside the .bin files (readable, safe) and nanoGPT's meta.pkl


def write_meta(out, *, script, tokenizer, dtype, source, split, options, split_tokens=None, shards=None, shard_format=None):  # fmt: skip
    """Write meta.json, the commit record: all it takes to read, check and reproduce the outputs.

    tokenizer: {"kind": "char"|"tiktoken"|"bpe", "name", "vocab_size", "eot_id", "sha256", ...};
    split_tokens: {"train": 1003854, "val": 111540}, or shards (write_shards' list) and their
    shard_format; meta.pkl, if written already, is recorded by its sha256, else as null.
    """
    out = Path(out)
    meta_pkl = out / META_PKL
    meta = {
        "format_version": META_FORMAT_VERSION,
        "created_by": script,
        "tokenizer": folder_tokenizer(tokenizer, out),  # its path relative, if in the folder
        "dtype": np.dtype(dtype).name,
        "splits": splits_record(out, split_tokens, shards),
        "meta_pkl": {"file": META_PKL, "sha256": sha256_file(meta_pkl)}
        if meta_pkl.is_file()
        else None,  # fmt: skip
        "source": source,
        "split": split,
        "options": options,
    }
    if shards is not None:
        meta["format"], meta["shards"] = shard_format, shards
    check_utf8_names(meta)  # a file name that is not UTF-8 cannot be recorded: one line
    data = (json.dumps(meta, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    with atomic_path(out / RECORD_NAME) as tmp:
        tmp.write_bytes(data)
    return meta


def write_pickle(path, obj):
    """Pickle `obj` to `path`, atomically (nanoGPT's meta.pkl)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        pickle.dump(obj, f)


def write_bpe_meta_pkl(out, tokenizer, encoding):
    """nanoGPT's meta.pkl for a BPE pipeline; return whether one was written. A trained tokenizer
    -> {"vocab_size", "tokenizer", "stoi", "itos"}: train.py sizes the model from vocab_size, and
    sample.py can run (`nanogpt_sample_maps`). GPT-2 -> none: nanoGPT keeps its GPT-2 defaults.
    """
    if tokenizer["kind"] != "bpe":
        return False
    stoi, itos = nanogpt_sample_maps(encoding)
    tokenizer = folder_tokenizer(tokenizer, out)  # as meta.json records it
    meta = {"vocab_size": tokenizer["vocab_size"], "tokenizer": tokenizer, "stoi": stoi, "itos": itos}  # fmt: skip
    write_pickle(Path(out) / META_PKL, meta)
    return True


# ---------------------------------------------------------------------------------------------
# 7. documents: nanoGPT's random split of documents, and each document's ids
#
# A document lesson pins its dataset (a HubDataset) and loads it with `load_documents`, which
# refuses in one line what `datasets` would stumble on (hardening/documents.py).


SPLIT_RULE = (
    "nanoGPT's: ceil(val_fraction * n) documents to val, the first of "
    "np.random.default_rng(seed).permutation(n), train the rest in that order "
    "(datasets' train_test_split(shuffle=True), 'test' renamed 'val')"
)


def random_split(num_documents, val_fraction, seed):
    """nanoGPT's split of documents 0..n-1: (train, val) document numbers, in the order written.

    10 documents, 0.2, seed 2357 -> (array([0, 9, 5, 6, 2, 7, 4, 1]), array([8, 3])): datasets'
    train_test_split(test_size=val_fraction, seed=seed, shuffle=True), val the first
    ceil(val_fraction * n) of np.random.default_rng(seed).permutation(n), train the rest.
    """
    _, num_val = split_sizes(num_documents, val_fraction)
    permutation = np.random.default_rng(seed).permutation(num_documents)
    return permutation[num_val:], permutation[:num_val]


def split_record(val_fraction, seed, documents, numpy_version=np.__version__):
    """meta.json's "split" for `random_split`: the rule and its inputs. documents: {"train": 9995,
    "val": 5}; the permutation is numpy's generator stream, so numpy's version is recorded too."""
    return {
        "rule": SPLIT_RULE,
        "val_fraction": val_fraction,
        "seed": seed,
        "numpy": numpy_version,
        "documents": documents,
    }


def tokenize_documents(texts, indices, encoding, tokenizer, dtype, where, eot_first=False):
    """nanoGPT's `process` for a batch of documents (a datasets map with indices): each one's ids
    and their lengths: ["Hi", "a"] -> {"ids": [[17250, 50256], [64, 50256]], "len": [2, 2]}.

    Each document is encode_ordinary(text) + [eot_id] (`encode_document`: the same ids as one
    numpy array; eot_first: llm.c's rule, the end-of-text id first). Refused, naming the document
    (`where` and its number, or where(i)): a trained tokenizer's pattern that leaves text out.
    """
    eot_id = tokenizer["eot_id"]
    check_dtype_holds(encoding, eot_id, dtype)  # before anything is encoded: no id wraps around
    ids = [encode_document(text, encoding, eot_id, dtype, eot_first) for text in texts]
    name = where if callable(where) else lambda i: f"{where} {indices[i]}"
    check_documents_covered(texts, ids, encoding, tokenizer, name)
    return {"ids": ids, "len": [len(doc) for doc in ids]}


def document_batch(data, starts, batch_size, block_size, rng):
    """nanoGPT's get_batch with every row beginning at a document start drawn by `rng` (a numpy
    Generator): (x, y), int64 arrays of (batch_size, block_size). A row reads block_size + 1
    tokens of the stream, on into the next document where its own is shorter; y is x one token
    on. Starts with fewer than block_size + 1 tokens left are never drawn (docs/bos_batches.md).
    ([5, 6, 0, 7, 0, 8, 9, 0], [0, 3, 5], 2, 2, default_rng(0)) -> x [[8, 9], [7, 0]], y [[9, 0], [0, 8]]
    """
    last = np.searchsorted(starts, len(data) - block_size)  # starts[:last] have T + 1 tokens left
    if last == 0:
        raise PrepareError(f"no document start has block_size + 1 = {block_size + 1:,} tokens after it in a split of {len(data):,}")  # fmt: skip
    ix = starts[rng.integers(last, size=batch_size)].astype(np.int64)
    rows = np.stack([data[i : i + block_size + 1] for i in ix]).astype(np.int64)
    return np.ascontiguousarray(rows[:, :-1]), np.ascontiguousarray(rows[:, 1:])


# ---------------------------------------------------------------------------------------------
# 8. verify and show: the auditor (hardening/audit.py, hardening/show.py), for any folder


def verify(folder, quiet=False):
    """The problems of a prepared folder, one line each ([]: complete and consistent): every file
    meta.json lists recomputed against it (size, sha256, largest id), the tokenizer rebuilt."""
    return audit.verify(folder, gpt2_encoding, quiet)


def main(argv=None):
    """python prepare_common.py verify|show|packing FOLDER (each answers --help)"""
    show.main(argv, gpt2_encoding)


if __name__ == "__main__":
    run_main(main)
