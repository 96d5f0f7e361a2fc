"""verify, show and packing for a nanochat folder (data/nanochat/prepare.py): parquet shards of
text, which nanochat tokenizes as it reads them, and its tokenizer directory.

verify recomputes what nanochat's readers depend on: every shard's sha256, its one `text` column,
zstd, row groups of 1,024 documents (the last of a shard may hold fewer), its documents,
characters and bytes; the shards in sorted order are the recorded ones (nanochat reads every
.parquet of the folder, the last as val); tokenizer.pkl a tiktoken.Encoding with nanochat's
nine special tokens right after the merges; token_bytes each id's byte length.
"""

import json
import os
from pathlib import Path

import numpy as np

from formats import nanochat
from formats.tokenizers import encoding_sha256
from safety.errors import PrepareError
from safety.files import sha256_file
from safety.record import NANOCHAT_NAME

SHOWS_CHARS = 200  # how much of val `verify` prints


def shape_problem(meta):
    """The first field of a nanochat meta.json that is missing or wrong, as a phrase, or None."""
    shards = meta.get("shards")
    if not isinstance(shards, list) or not shards:
        return "shards is missing or empty: a nanochat folder lists its parquet shards"
    for i, shard in enumerate(shards):
        fields = ("file", "split", "documents", "characters", "bytes", "sha256")
        if not isinstance(shard, dict) or any(key not in shard for key in fields):
            return f"shards[{i}] is not a record of {', '.join(fields)}"
        if not str(shard["file"]).startswith(nanochat.DATA_DIR) or not NANOCHAT_NAME.fullmatch(shard["file"]):  # fmt: skip
            return f"shards[{i}].file is {json.dumps(shard['file'])}, expected {nanochat.shard_name(i)!r}"  # fmt: skip
    splits = [shard["split"] for shard in shards]
    if splits[-1] != "val" or set(splits[:-1]) != {"train"}:
        return f"the shards' splits are {splits}: nanochat reads the last as val, the others as train"  # fmt: skip
    tokenizer = meta.get("tokenizer")
    if tokenizer is not None and (not isinstance(tokenizer, dict) or tokenizer.get("path") != "tokenizer/tokenizer.pkl"):  # fmt: skip
        return 'tokenizer is not null nor a record with "path": "tokenizer/tokenizer.pkl"'
    return None


def audit(folder, meta, quiet=False):
    """verify's problems with a nanochat folder, one line each; prints each split, then val's start."""
    problems = []
    for shard in meta["shards"]:
        problems += _audit_shard(folder, shard)
    problems += _audit_listing(folder, meta)
    if meta.get("tokenizer") is not None:
        problems += _audit_tokenizer(folder, meta)
    if problems or quiet:
        return problems
    for split, totals in meta["splits"].items():
        print(f"{split}: {totals['documents']:,} documents, {totals['characters']:,} characters in {totals['shards']} shard(s)")  # fmt: skip
    first = next(nanochat.shard_texts(Path(folder) / meta["shards"][-1]["file"]))[0]
    print("start of val:", repr(first[:SHOWS_CHARS]))
    return problems


def _audit_shard(folder, shard):
    """One shard as nanochat reads it, against its record."""
    import pyarrow.parquet as pq

    path = Path(folder) / shard["file"]
    if not path.is_file():
        return [f"{path} is missing"]
    if sha256_file(path) != shard["sha256"]:
        return [f"{path} does not match the sha256 recorded in meta.json"]
    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow's errors: a file that is not parquet
        return [f"{path} is not a parquet file pyarrow can read ({type(exc).__name__})"]
    if parquet.schema_arrow.names != ["text"]:
        return [f"{path} has the columns {parquet.schema_arrow.names}, not nanochat's one 'text'"]
    groups = [parquet.metadata.row_group(g) for g in range(parquet.num_row_groups)]
    if any(g.num_rows != nanochat.ROW_GROUP_SIZE for g in groups[:-1]) or groups[-1].num_rows > nanochat.ROW_GROUP_SIZE:  # fmt: skip
        return [f"{path} has row groups of {[g.num_rows for g in groups]} documents, not 1,024 each (the last of a shard may hold fewer)"]  # fmt: skip
    if any(g.column(0).compression != "ZSTD" for g in groups):
        return [f"{path} is not compressed with zstd"]
    texts = [text for batch in nanochat.shard_texts(path) for text in batch]
    found = {"documents": len(texts), "characters": sum(map(len, texts)), "bytes": sum(len(t.encode()) for t in texts)}  # fmt: skip
    wrong = [f"{key} {found[key]:,} (meta.json: {shard[key]:,})" for key in found if found[key] != shard[key]]  # fmt: skip
    return [f"{path} holds {', '.join(wrong)}"] if wrong else []


def _audit_listing(folder, meta):
    """The .parquet files nanochat would list in the data folder must be exactly the recorded ones:
    another would be read as train, or become the val shard."""
    data = Path(folder) / nanochat.DATA_DIR
    found = sorted(f for f in os.listdir(data) if f.endswith(".parquet") and not f.endswith(".tmp"))
    recorded = [shard["file"].split("/")[1] for shard in meta["shards"]]
    if found == recorded:
        return []
    extra = sorted(set(found) - set(recorded))
    return [f"{data} holds .parquet files meta.json does not list, which nanochat would read ({', '.join(extra[:5])}); move them away, or run prepare.py again"]  # fmt: skip


def _audit_tokenizer(folder, meta):
    """tokenizer.pkl, token_bytes.pt/.npy and token_bytes.npy, recomputed from the encoding."""
    for item in meta.get("tokenizer_files") or []:
        path = Path(folder) / item["file"]
        if not path.is_file() or sha256_file(path) != item["sha256"]:
            return [f"{path} is missing or does not match the sha256 recorded in meta.json"]
    tokenizer, encoding = meta["tokenizer"], load(folder, meta)
    if problem := nanochat.special_tokens_problem(encoding):
        return [f"{Path(folder) / tokenizer['path']}: {problem}"]
    if encoding.n_vocab != tokenizer["vocab_size"] or encoding_sha256(encoding) != tokenizer.get("encoding_sha256"):  # fmt: skip
        return [f"{Path(folder) / tokenizer['path']} is not the tokenizer meta.json records (its vocab_size or encoding_sha256)"]  # fmt: skip
    splits = {name: split["bytes"] for name, split in meta["splits"].items()}
    if (meta.get("token_bytes") or {}).get("bytes") != splits:
        return [f"{Path(folder) / 'meta.json'}: token_bytes.bytes is not the splits' bytes {splits}"]  # fmt: skip
    expected = nanochat.token_byte_lengths(encoding)
    for path in [Path(folder) / "token_bytes.npy", *(Path(folder) / f["file"] for f in meta["tokenizer_files"])]:  # fmt: skip
        lengths = _token_bytes(path)
        if lengths is not None and not np.array_equal(lengths, expected):
            return [f"{path} is not each id's byte length (0 for the special tokens)"]
    return []


def _token_bytes(path):
    """The int32 lengths in a token_bytes .npy or .pt (None: tokenizer.pkl, or a .pt without torch)."""
    if path.suffix == ".npy":
        lengths = np.load(path)
        return lengths if lengths.dtype == np.int32 else None
    if path.suffix != ".pt":
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch.load(path, weights_only=True).numpy()


def load(folder, meta):
    """The folder's tokenizer as the tiktoken.Encoding nanochat unpickles, or one line why not."""
    if meta.get("tokenizer") is None:
        raise PrepareError(f"{Path(folder) / 'meta.json'} records no tokenizer: run data/nanochat/prepare.py with --vocab-size N")  # fmt: skip
    return nanochat.load_encoding(Path(folder) / meta["tokenizer"]["path"])


def split_documents(folder, meta, split):
    """The split's documents in nanochat's order: its shards', row group by row group."""
    if split not in meta["splits"]:
        raise PrepareError(f"{Path(folder) / 'meta.json'} has no split {split!r}: {list(meta['splits'])}")  # fmt: skip
    for shard in meta["shards"]:
        if shard["split"] == split:
            for batch in nanochat.shard_texts(Path(folder) / shard["file"]):
                yield from batch


def show_lines(folder, meta, split, block_size, index):
    """Document `index` of the split: its first block_size tokens, <|bos|> first, each id and text."""
    from bpe.show import token_text

    encoding, documents = load(folder, meta), split_documents(folder, meta, split)
    text = next((t for i, t in enumerate(documents) if i == index), None)
    if text is None:
        raise PrepareError(f"{split} holds {meta['splits'][split]['documents']:,} documents: --offset {index:,} is past the last")  # fmt: skip
    # the document as nanochat's dataloader makes it: <|bos|>, then encode_ordinary(text)
    ids = [encoding._special_tokens[nanochat.BOS], *encoding.encode_ordinary(text)]
    size = len(text.encode())
    lines = [
        f"{split} document {index:,}: {len(ids):,} tokens (<|bos|> first), {size:,} bytes of text: {size / max(len(ids) - 1, 1):.2f} bytes per token",  # fmt: skip
        f"{'t':>5}  id     token",
    ]
    shown = [encoding.decode_single_token_bytes(i) for i in ids[: block_size + 1]]
    lines += [f"{t:>5}  {i:<6} '{token_text(b)}'" for t, (i, b) in enumerate(zip(ids, shown))]
    return lines


def packing_lines(folder, meta, split, block_size):
    """nanochat's figures for the split at T = block_size: document lengths, what its BOS
    best-fit rows keep, bytes per token."""
    from .packing import best_fit_tokens_kept, nearest_rank

    encoding = load(folder, meta)
    documents = list(split_documents(folder, meta, split))
    lengths = np.array([len(ids) + 1 for ids in encoding.encode_ordinary_batch(documents)])
    tokens, size = int(lengths.sum()), meta["splits"][split]["bytes"]
    p50, p90, p99 = nearest_rank(lengths)
    kept = best_fit_tokens_kept(lengths, block_size)
    return [
        f"{split} of {folder}: {len(lengths):,} documents, {tokens:,} tokens with their <|bos|>; a document's length in tokens: p50 {p50:,}, p90 {p90:,}, p99 {p99:,}, max {int(lengths.max()):,}",  # fmt: skip
        f"{size:,} bytes of text: {size / (tokens - len(lengths)):.2f} bytes per token (<|bos|> excluded)",  # fmt: skip
        f"nanochat's BOS best-fit rows of {block_size + 1:,} tokens (max_seq_len {block_size:,} and its target) keep {kept:.1%} of the tokens",  # fmt: skip
    ]
