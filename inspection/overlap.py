"""`overlap`: what a folder's val shares with its train, and what train repeats, from the token files.

    python prepare_common.py overlap data/openwebtext [--json] [--ngram 13] [--against quiz.jsonl]

The figures are dedup/overlap.py's; this module finds the files and the document rule. A folder
with meta.json says it all: the tokenizer's end-of-text id, and whether it comes after each
document (nanoGPT's .bin files) or before (llm.c's shards, TinyStories'): the document index
(SPLIT.docs.npy) decides where there is one. A folder no meta.json describes (llm.c's,
modded-nanogpt's, build-nanogpt's shards, nanochat's or parameter-golf's BOS-first files) is read
with the flags: --boundary-id ID, --boundary first|last (default first), --dtype for raw files,
--train and --val globs (default *train* and *val*). Each file is an llm.c shard (its header's
magic says so), a .npy array, or raw ids.

val's hashes are held (dedup/overlap.py says how many bytes); train is read in blocks of
BLOCK_TOKENS and forgotten, so memory stays flat however large train is.
"""

import json
from pathlib import Path

import numpy as np

from dedup.overlap import documents_of, exact_report, overlap_report, stream_documents
from formats.shards import LLMC_MAGIC_VERSION, open_npy, read_shard
from formats.tokenizers import gpt2_encoding
from safety.errors import PrepareError
from safety.text import plural

from .verify import checked_meta

BLOCK_TOKENS = 1 << 20  # train is read 1M tokens at a time (a chunk's arrays: about 130 MB)
DTYPE_OF_MAGIC = {magic: dtype for dtype, (magic, _) in LLMC_MAGIC_VERSION.items()}


def token_file(path, dtype=None):
    """Where a file's token ids are: (path, byte offset, dtype, count), for an llm.c shard (its
    header checked, its dtype by its magic), a .npy array, or raw `dtype` ids (None: only the
    first two are understood). Read with np.fromfile (`read_tokens`): no memory map, whose
    pages would stay resident while the map lives."""
    path = Path(path)
    if path.suffix == ".npy":
        tokens = read_shard(path, "npy", open_npy(path).dtype)  # its header checked first
        return path, tokens.offset, tokens.dtype, len(tokens)
    first = np.fromfile(path, dtype="<i4", count=1)
    if len(first) and int(first[0]) in DTYPE_OF_MAGIC:
        tokens = read_shard(path, "llmc", DTYPE_OF_MAGIC[int(first[0])])
        return path, tokens.offset, tokens.dtype, len(tokens)
    if dtype is None:
        raise PrepareError(
            f"{path} has no llm.c header and is not a .npy file: say its ids' type with "
            f"--dtype uint16|uint32"
        )
    size, itemsize = path.stat().st_size, np.dtype(dtype).itemsize
    if size % itemsize:
        raise PrepareError(f"{path}: its size is not a whole number of {dtype} ids")
    return path, 0, np.dtype(dtype).newbyteorder("<"), size // itemsize


def read_tokens(where, start=0, count=None):
    """`count` ids (None: all) of a token_file from id `start`: [(f, 1024, uint16, 10), 2, 3] -> 3 ids."""
    path, offset, dtype, total = where
    count = total - start if count is None else min(count, total - start)
    return np.fromfile(path, dtype=dtype, count=count, offset=offset + start * dtype.itemsize)


def folder_layout(folder, train_glob=None, val_glob=None, boundary_id=None, boundary=None, dtype=None):  # fmt: skip
    """What `overlap` reads: {"train": [paths], "val": [paths], "boundary_id", "boundary",
    "dtype", "tokenizer" (meta.json's record, or None)}, from meta.json and the flags (which win)."""
    folder = Path(folder)
    meta = checked_meta(folder) if (folder / "meta.json").exists() or not folder.is_dir() else None
    layout = meta_layout(folder, meta) if meta else {"tokenizer": None, "dtype": None}
    for split, glob in (("train", train_glob), ("val", val_glob)):
        if glob is not None or meta is None:
            layout[split] = sorted(folder.glob(glob or f"*{split}*"))
        if not layout[split]:
            raise PrepareError(f"{folder} has no {split} file matching {glob or f'*{split}*'}; name them with --{split} GLOB")  # fmt: skip
    layout["dtype"] = dtype or layout["dtype"]
    layout["boundary_id"] = layout.get("boundary_id") if boundary_id is None else boundary_id
    layout["boundary"] = boundary or layout.get("boundary", "first")
    if layout["boundary_id"] is None:
        raise PrepareError(
            f"{folder}: no meta.json says which token separates the documents: pass "
            f"--boundary-id ID (and --boundary first|last: before each document, or after)"
        )
    return layout


def meta_layout(folder, meta):
    """The files, end-of-text id and rule of a folder meta.json describes."""
    layout = {"tokenizer": meta["tokenizer"], "dtype": meta["dtype"]}
    eot_id = layout["boundary_id"] = meta["tokenizer"].get("eot_id")
    for split in ("train", "val"):
        if "shards" in meta:
            layout[split] = [folder / s["file"] for s in meta["shards"] if s["split"] == split]
        else:
            layout[split] = [folder / meta["splits"][split]["file"]] if split in meta["splits"] else []  # fmt: skip
    index = None if "shards" in meta else meta["splits"].get("train", {}).get("index")
    if index is not None:  # the index says: the token before every start is the EOT, or not
        data = np.memmap(layout["train"][0], dtype=meta["dtype"], mode="r")
        starts = open_npy(folder / index["file"]).astype(np.int64)
        last = bool((data[np.append(starts[1:], len(data)) - 1] == eot_id).all())
        del data  # the map is let go: its pages are not overlap's memory
    elif layout["train"]:  # llm.c's rule puts it first, nanoGPT's last: the ends say which
        first = read_tokens(token_file(layout["train"][0], meta["dtype"]), 0, 1)
        end_file = token_file(layout["train"][-1], meta["dtype"])
        end = read_tokens(end_file, max(end_file[3] - 1, 0))
        last = not (len(first) and first[0] == eot_id and end[-1] != eot_id)
    layout["boundary"] = "last" if layout["train"] and last else "first"
    return layout


def blocks(paths, dtype, block_tokens=BLOCK_TOKENS):
    """The ids of the files in order, block_tokens at a time."""
    for path in paths:
        where = token_file(path, dtype)
        for start in range(0, where[3], block_tokens):
            yield read_tokens(where, start, block_tokens)


def whole(chunks):
    """One (tokens, offsets) of all the documents of a stream of chunks (val: held whole)."""
    tokens, offsets = [], [np.zeros(1, np.int64)]
    end = 0
    for chunk_tokens, chunk_offsets in chunks:
        tokens.append(chunk_tokens)
        offsets.append(chunk_offsets[1:] + end)
        end += len(chunk_tokens)
    return np.concatenate(tokens or [np.zeros(0, np.int64)]), np.concatenate(offsets)


def against_items(path, encode):
    """A benchmark file's items as (tokens, offsets): each non-empty line of a .txt file, or the
    "text" field of each line of a .jsonl file, encoded with the folder's tokenizer."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise PrepareError(f"--against {path}: cannot read it as UTF-8 text ({exc})") from None
    if path.suffix == ".jsonl":
        texts = [_jsonl_text(line, path, number) for number, line in enumerate(lines, 1) if line.strip()]  # fmt: skip
    elif path.suffix == ".txt":
        texts = [line for line in lines if line.strip()]
    else:
        raise PrepareError(f"--against {path}: give a .txt file (an item a line) or a .jsonl file (a 'text' field a line)")  # fmt: skip
    if not texts:
        raise PrepareError(f"--against {path} holds no item")
    return documents_of([encode(text) for text in texts])


def _jsonl_text(line, path, number):
    try:
        item = json.loads(line)
    except ValueError:
        raise PrepareError(f"--against {path} line {number}: not JSON") from None
    if not isinstance(item, dict) or not isinstance(item.get("text"), str):
        raise PrepareError(f"--against {path} line {number}: no 'text' string field")
    return item["text"]


def encoder_for(tokenizer, folder):
    """text -> ids with the folder's tokenizer (meta.json's record; None: GPT-2's, llm.c's)."""
    if tokenizer is None or tokenizer.get("kind") == "tiktoken":
        import tiktoken

        name = "gpt2" if tokenizer is None else tokenizer.get("name")
        encoding = gpt2_encoding() if name == "gpt2" else tiktoken.get_encoding(name)
        return encoding.encode_ordinary
    if tokenizer.get("kind") == "bpe":
        from formats.tokenizers import trained_tokenizer

        path = Path(tokenizer["path"])
        return trained_tokenizer(path if path.is_absolute() else Path(folder) / path)[0].encode_ordinary  # fmt: skip
    stoi = {c: i for i, c in enumerate(tokenizer.get("chars", []))}
    return lambda text: [stoi[c] for c in text if c in stoi]


def folder_overlap(folder, ngram=13, against=(), **flags):
    """overlap_report of `folder` (see folder_layout for the flags), with its layout."""
    layout = folder_layout(folder, **flags)
    rule = (layout["boundary_id"], layout["boundary"])
    val = whole(stream_documents(blocks(layout["val"], layout["dtype"]), *rule))
    encode = encoder_for(layout["tokenizer"], folder) if against else None
    items = {str(path): against_items(path, encode) for path in against}
    train = stream_documents(blocks(layout["train"], layout["dtype"]), *rule)
    return overlap_report(val, train, ngram=ngram, against=items), layout


def say_overlap(folder):
    """Print what a document lesson prints at its end: overlap's two cheap figures (a hash per
    document, dedup/overlap.py's exact_report) on the folder it wrote, how many val documents
    have an exact copy in train and how much of train repeats, and the command that tells more."""
    from tqdm import tqdm

    layout = folder_layout(folder)
    rule = (layout["boundary_id"], layout["boundary"])
    val = stream_documents(blocks(layout["val"], layout["dtype"]), *rule)
    train = stream_documents(blocks(layout["train"], layout["dtype"]), *rule)
    report = exact_report(val, tqdm(train, desc="hashing the documents", unit=" blocks", delay=1, leave=False))  # fmt: skip
    docs, exact = report["documents"], report["val_documents_in_train"]
    repeats = report["train_repeated_documents"]
    print(f"val documents with an exact copy in train: {exact['documents']:,} of {docs['val']:,} ({exact['fraction']:.1%}); train documents repeating an earlier one: {repeats['documents']:,} of {docs['train']:,} ({repeats['token_fraction']:.1%} of train's tokens)")  # fmt: skip
    print(f"  more (near copies, shared 13-token runs, benchmarks): python prepare_common.py overlap {folder}; --dedup exact|near drops the copies before the split")  # fmt: skip


def overlap_lines(report):
    """The figures as plain lines, each saying what it means for the val loss."""
    docs, tokens = report["documents"], report["tokens"]
    exact, near = report["val_documents_in_train"], report["val_near_duplicates_in_train"]
    shared, repeats = report["val_tokens_in_shared_ngrams"], report["train_repeated_documents"]
    rule = near["rule"]
    lines = [
        f"train: {plural(docs['train'], 'document')}, {tokens['train']:,} tokens; val: {plural(docs['val'], 'document')}, {tokens['val']:,} tokens (the boundary token left out)",  # fmt: skip
        f"val documents with an exact copy in train: {exact['documents']:,} ({exact['fraction']:.1%}): the model is trained on these, so its val loss on them measures memory, not how it does on unseen text",  # fmt: skip
        f"val documents with a near copy in train: {near['documents']:,} ({near['fraction']:.1%}) (estimated Jaccard >= {rule['threshold']} over {rule['shingle_tokens']}-token shingles; MinHash, {rule['bands']} bands of {rule['rows']} rows): they lower the val loss the same way",  # fmt: skip
        f"val tokens inside a {shared['ngram']}-token run that train also holds: {shared['fraction']:.1%} (GPT-3's contamination rule): the share of val the model may predict from memory",  # fmt: skip
        f"train documents repeating an earlier one: {repeats['documents']:,}, {repeats['token_fraction']:.1%} of train's tokens: gradient steps spent again on the same text (prepare.py --dedup exact drops them)",  # fmt: skip
    ]
    for record in report["against"]:
        lines.append(
            f"{record['file']}: {record['items_with_ngram_in_train']:,} of {record['items']:,} items share a {shared['ngram']}-token run with train, held by {record['train_documents_holding_one']:,} train documents ({record['items_shorter_than_ngram']:,} items are shorter than {shared['ngram']} tokens, not checked): scores on those items may come from memory"  # fmt: skip
        )
    return lines


def overlap(folder, as_json=False, **options):
    """Print folder_overlap's figures: plain lines, or one JSON object."""
    report, layout = folder_overlap(folder, **options)
    if as_json:
        print(json.dumps(report))
        return
    print(f"{folder}: documents cut at token {layout['boundary_id']} ({layout['boundary']} in each)")  # fmt: skip
    print(*overlap_lines(report), sep="\n")


def add_parser(commands):
    """The `overlap` command's options, on prepare_common's subcommands."""
    parser = commands.add_parser("overlap", help="what val shares with train, what train repeats")
    parser.add_argument("folder", help="a prepared folder, or one of llm.c's or nanochat's shards")
    parser.add_argument("--json", action="store_true", help="the figures as one JSON object")
    parser.add_argument("--ngram", type=int, default=13, metavar="N", help="the shared run's length in tokens (default: 13, GPT-3's)")  # fmt: skip
    parser.add_argument("--against", nargs="+", default=[], metavar="FILE", help="benchmark items: .txt (one a line) or .jsonl (a 'text' field)")  # fmt: skip
    parser.add_argument("--boundary-id", type=int, metavar="ID", help="the token between documents (default: meta.json's end-of-text id)")  # fmt: skip
    parser.add_argument("--boundary", choices=["first", "last"], help="it comes before each document (llm.c, nanochat) or after (nanoGPT)")  # fmt: skip
    parser.add_argument("--dtype", choices=["uint16", "uint32"], help="the ids' type in raw files")
    parser.add_argument("--train", metavar="GLOB", help="the train files (default: *train*)")
    parser.add_argument("--val", metavar="GLOB", help="the val files (default: *val*)")
    return parser


def run(args):
    """Run the parsed `overlap` command."""
    if args.ngram < 1:
        raise PrepareError(f"--ngram must be at least 1, got {args.ngram}")
    flags = {"train_glob": args.train, "val_glob": args.val, "boundary_id": args.boundary_id}
    flags.update(boundary=args.boundary, dtype=args.dtype)
    overlap(args.folder, args.json, ngram=args.ngram, against=args.against, **flags)
