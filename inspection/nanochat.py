"""verify, show and packing for a nanochat folder (data/nanochat/prepare.py): parquet shards of
text, which nanochat tokenizes as it reads them, and its tokenizer directory."""

import io
import json
from pathlib import Path

import numpy as np

from formats import nanochat
from formats.schema import RECORD_NAME, TOKEN_BYTES
from formats.shards import open_npy
from formats.tokenizers import encoding_sha256, record_encoding
from formats.val_bytes import RecordTokens, text_figures
from safety.errors import PrepareError
from safety.files import read_small_file, sha256_file

from .packing import best_fit_tokens_kept, length_figures
from .show import random_offset
from .val_bytes import figure_problems

SHOWS_CHARS = 200  # how much of val `verify` prints


def audit(folder, meta, quiet=False, problems=()):
    """verify's problems with a nanochat folder, one line each, after those verify found;
    prints each split, then val's start."""
    problems = list(problems)
    for shard in meta["shards"]:
        problems += _audit_shard(folder, shard)
    if meta.get("tokenizer") is not None and not problems:
        problems += _audit_tokenizer(folder, meta)
    if problems or quiet:
        return problems
    for split, n in meta["splits"].items():
        shards = f"in {n['shards']} shard(s)"
        print(f"{split}: {n['documents']:,} documents, {n['characters']:,} characters {shards}")
    first = next(nanochat.shard_texts(Path(folder) / meta["shards"][-1]["file"]))[0]
    print("start of val:", repr(first[:SHOWS_CHARS]))
    return problems


def _audit_shard(folder, shard):
    """One shard as nanochat reads it (one `text` column, zstd, row groups of 1,024), against
    its record."""
    import pyarrow.parquet as pq

    path = Path(folder) / shard["file"]
    if not path.is_file():
        return [f"{path} is missing"]
    if sha256_file(path) != shard["sha256"]:
        return [f"{path} does not match the sha256 recorded in {RECORD_NAME}"]
    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow's errors: a file that is not parquet
        return [f"{path} is not a parquet file pyarrow can read ({type(exc).__name__})"]
    if parquet.schema_arrow.names != ["text"]:
        return [f"{path} has the columns {parquet.schema_arrow.names}, not nanochat's one 'text'"]
    groups = [parquet.metadata.row_group(g) for g in range(parquet.num_row_groups)]
    rows, size = [g.num_rows for g in groups], nanochat.ROW_GROUP_SIZE
    if any(n != size for n in rows[:-1]) or rows[-1] > size:
        return [
            f"{path} has row groups of {rows} documents, not 1,024 each (the last of a shard "
            f"may hold fewer)"
        ]
    if any(g.column(0).compression != "ZSTD" for g in groups):
        return [f"{path} is not compressed with zstd"]
    texts = [text for batch in nanochat.shard_texts(path) for text in batch]
    found = {"documents": len(texts), "characters": sum(map(len, texts))}
    found["bytes"] = sum(len(t.encode()) for t in texts)
    wrong = [key for key in found if found[key] != shard[key]]
    wrong = [f"{key} {found[key]:,} ({RECORD_NAME}: {shard[key]:,})" for key in wrong]
    return [f"{path} holds {', '.join(wrong)}"] if wrong else []


def _audit_tokenizer(folder, meta):
    """tokenizer.pkl, and each token_bytes file against the lengths the encoding gives."""
    folder, tokenizer = Path(folder), meta["tokenizer"]
    for item in meta["tokenizer_files"]:
        path = folder / item["file"]
        if sha256_file(path) != item["sha256"]:  # a file missing, or not a regular one: its line
            return [f"{path} does not match the sha256 recorded in {RECORD_NAME}"]
    encoding = load(folder, meta)
    if problem := nanochat.special_tokens_problem(encoding):
        return [f"{folder / tokenizer['path']}: {problem}"]
    if tokenizer["bos_id"] != encoding._special_tokens[nanochat.BOS]:
        return [
            f"{folder / RECORD_NAME}: tokenizer.bos_id is {tokenizer['bos_id']}, but "
            f"{tokenizer['path']}'s {nanochat.BOS} is {encoding._special_tokens[nanochat.BOS]}"
        ]
    sha256 = encoding_sha256(encoding)
    if encoding.n_vocab != tokenizer["vocab_size"] or sha256 != tokenizer["encoding_sha256"]:
        return [
            f"{folder / tokenizer['path']} is not the tokenizer {RECORD_NAME} records (its "
            f"vocab_size or encoding_sha256)"
        ]
    record, path = meta["token_bytes"], folder / TOKEN_BYTES
    if sha256_file(path) != record["sha256"]:
        return [f"{path} does not match the sha256 recorded in {RECORD_NAME}"]
    expected = nanochat.token_byte_lengths(encoding)
    names = [item["file"] for item in meta["tokenizer_files"] if "token_bytes" in item["file"]]
    for token_bytes in [path, *(folder / name for name in names)]:
        lengths = _token_bytes(token_bytes)
        if lengths is not None and not (
            lengths.dtype == expected.dtype and np.array_equal(lengths, expected)
        ):
            return [
                f"{token_bytes} holds {lengths.dtype} of shape {lengths.shape}: not each id's byte "
                f"length as {expected.shape[0]:,} int32 (0 for the special tokens)"
            ]
    # _audit_shard recomputed each shard's bytes of text (and the splits add up)
    found = {name: split["bytes"] for name, split in meta["splits"].items()}
    if record["bytes"] != found:
        return [
            f"{folder / RECORD_NAME}: token_bytes.bytes is {record['bytes']}, but the documents "
            f"hold {found} bytes of text"
        ]
    if meta.get("bytes") is None:  # a folder written before the byte figures
        return []
    tokens = RecordTokens(tokenizer, folder, encoding)
    recounted = {
        split: text_figures(nanochat.split_batches(folder, meta["shards"], split), tokens)
        for split in meta["splits"]
    }
    return figure_problems(folder / RECORD_NAME, meta["bytes"], recounted, "the shards")


def _token_bytes(path):
    """The lengths in a token_bytes .npy or .pt (None: a .pt where torch is not importable)."""
    if path.suffix == ".npy":
        return np.asarray(open_npy(path))
    try:
        import torch
    except ImportError:
        return None
    try:
        saved = torch.load(io.BytesIO(read_small_file(path)), weights_only=True)
    except Exception as exc:  # torch's errors: a file that is not a tensor it saved
        raise PrepareError(
            f"{path} is not a tensor torch can load ({type(exc).__name__})"
        ) from None
    if not isinstance(saved, torch.Tensor):
        raise PrepareError(f"{path} holds a {type(saved).__name__}, not a tensor")
    return saved.numpy()


def load(folder, meta):
    """The folder's tokenizer as the tiktoken.Encoding nanochat unpickles, or one line why not."""
    if meta.get("tokenizer") is None:
        raise PrepareError(
            f"{Path(folder) / RECORD_NAME} records no tokenizer: run data/nanochat/prepare.py "
            f"with --vocab-size N"
        )
    return record_encoding(meta["tokenizer"], folder)


def split_documents(folder, meta, split):
    """The split's documents in nanochat's order: its shards', row group by row group."""
    if split not in meta["splits"]:
        where = Path(folder) / RECORD_NAME
        raise PrepareError(f"{where} has no split {split!r}: {list(meta['splits'])}")
    for batch in nanochat.split_batches(folder, meta["shards"], split):
        yield from batch


def show(folder, meta, split, block_size, index, seed=None):
    """Print document `index` of the split (or a random one for `seed`): its first block_size
    tokens, <|bos|> first."""
    from bpe.show import token_text

    if seed is not None:
        index = random_offset(meta["splits"].get(split, {"documents": 1})["documents"], 0, seed)
    encoding, documents = load(folder, meta), split_documents(folder, meta, split)
    text = next((t for i, t in enumerate(documents) if i == index), None)
    if text is None:
        raise PrepareError(
            f"{split} holds {meta['splits'][split]['documents']:,} documents: --offset "
            f"{index:,} is past the last"
        )
    # the document as nanochat's dataloader makes it: <|bos|>, then encode_ordinary(text)
    ids = [encoding._special_tokens[nanochat.BOS], *encoding.encode_ordinary(text)]
    size = len(text.encode())
    print(
        f"{split} document {index:,}: {len(ids):,} tokens (<|bos|> first), {size:,} bytes of "
        f"text: {size / max(len(ids) - 1, 1):.2f} bytes per token",
        f"{'t':>5}  id     token",
        sep="\n",
    )
    for t, i in enumerate(ids[: block_size + 1]):
        print(f"{t:>5}  {i:<6} '{token_text(encoding.decode_single_token_bytes(i))}'")


def packing(folder, meta, split, block_size, as_json=False):
    """Print nanochat's figures for the split at T = block_size (its lengths with <|bos|>): plain
    lines, or one JSON object."""
    encoding = load(folder, meta)
    documents = list(split_documents(folder, meta, split))
    lengths = np.array([len(ids) + 1 for ids in encoding.encode_ordinary_batch(documents)])
    tokens, size = int(lengths.sum()), meta["splits"][split]["bytes"]
    text_tokens = tokens - len(lengths)
    if text_tokens == 0:
        raise PrepareError(
            f"{split} of {folder} holds {len(lengths):,} documents and no token of text: there "
            f"is nothing to pack; prepare it from documents that hold text"
        )
    figures = length_figures(lengths)
    report = {
        "documents": len(lengths),
        "tokens": tokens,
        "document_tokens": figures,
        "bytes": size,
        "bytes_per_token": size / text_tokens,
        "best_fit_tokens_kept": best_fit_tokens_kept(lengths, block_size),
        "block_size": block_size,
    }
    if as_json:
        print(json.dumps(report))
        return
    print(
        f"{split} of {folder}: {len(lengths):,} documents, {tokens:,} tokens with their <|bos|>; "
        f"a document's length in tokens: p50 {figures['p50']:,}, p90 {figures['p90']:,}, "
        f"p99 {figures['p99']:,}, max {figures['max']:,}",
        f"{size:,} bytes of text: {report['bytes_per_token']:.2f} bytes per token "
        f"(<|bos|> excluded)",
        f"nanochat's BOS best-fit rows of {block_size + 1:,} tokens (max_seq_len "
        f"{block_size:,} and its target) keep {report['best_fit_tokens_kept']:.1%} of the tokens",
        sep="\n",
    )
