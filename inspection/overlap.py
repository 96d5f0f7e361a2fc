"""`overlap`: what a folder's val shares with its train, and what train repeats, from its files.

    python prepare_common.py overlap data/openwebtext [--json] [--ngram 13] [--against quiz.jsonl]

The figures are dedup/overlap.py's; this module finds the files and the document rule. A folder
with meta.json says it all: the tokenizer's end-of-text id, and whether it comes after each
document (nanoGPT's .bin files) or before (llm.c's shards, FineWeb's, TinyStories'): the document
index (beside each split) decides where there is one, else the ends of the splits' streams. A
nanochat folder's documents are its parquet rows, encoded with its tokenizer.pkl; a dataset of a
parameter-golf folder, its shards as the folder's meta.json lists them. Any other folder is read
with the flags: --boundary-id ID (default for llm.c's shards: the token its fineweb.py puts
before each document, GPT-2's 50256 or llama-3's 128000), --boundary first|last (default first),
--dtype for raw files, --train and --val globs (default *train* and *val*). Each file is an llm.c
shard (its header's magic says so), a .npy array, or raw ids.

val's hashes are held (dedup/overlap.py says how many bytes); train is read in blocks of
BLOCK_TOKENS and forgotten, so memory stays flat however large train is.
"""

import json
from pathlib import Path

import numpy as np

from dedup.overlap import documents_of, exact_report, overlap_report, stream_documents
from formats.schema import GOLF_FORMAT
from formats.shards import LLMC_MAGIC_VERSION, open_npy, read_shard
from formats.tokenizers import gpt2_encoding
from safety.errors import PrepareError
from safety.text import plural, read_text

from .folder import checked_meta, golf_dataset

BLOCK_TOKENS = 1 << 20  # train is read 1M tokens at a time (a chunk's arrays: about 130 MB)
TEXTS_PER_CHUNK = 1_000  # a nanochat split's rows encoded at a time
DTYPE_OF_MAGIC = {magic: dtype for dtype, (magic, _) in LLMC_MAGIC_VERSION.items()}
# llm.c's dev/data/fineweb.py puts one token before each document: GPT-2's <|endoftext|>
# (uint16 shards), llama-3's <|begin_of_text|> (uint32 shards)
DOCUMENT_START_OF_MAGIC = {20240520: 50256, 20240801: 128000}
UNKNOWN_CHARACTER = -1  # --against's id for a character a vocabulary lacks: no train id equals it


def token_file(path, dtype=None):
    """Where a file's token ids are: (path, byte offset, dtype, count), for an llm.c shard (its
    header checked, its dtype by its magic), a .npy array, or raw `dtype` ids (None: only the
    first two are understood). Read with np.fromfile (`read_tokens`): no memory map, whose
    pages would stay resident while the map lives."""
    path = Path(path)
    if path.suffix == ".npy":
        tokens = read_shard(path, "npy", open_npy(path).dtype)  # its header checked first
        return path, tokens.offset, tokens.dtype, len(tokens)
    magic = llmc_magic(path)
    if magic is not None:
        tokens = read_shard(path, "llmc", DTYPE_OF_MAGIC[magic])
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


def llmc_magic(path):
    """The llm.c magic number a file starts with, or None: a shard of GPT-2 ids -> 20240520."""
    first = np.fromfile(path, dtype="<i4", count=1)
    return int(first[0]) if len(first) and int(first[0]) in DTYPE_OF_MAGIC else None


def read_tokens(where, start=0, count=None):
    """`count` ids (None: all) of a token_file from id `start`:
    [(f, 1024, uint16, 10), 2, 3] -> 3 ids."""
    path, offset, dtype, total = where
    count = total - start if count is None else min(count, total - start)
    return np.fromfile(path, dtype=dtype, count=count, offset=offset + start * dtype.itemsize)


def folder_layout(
    folder, train_glob=None, val_glob=None, boundary_id=None, boundary=None, dtype=None
):
    """What `overlap` reads: {"train": [paths], "val": [paths], "boundary_id", "boundary",
    "dtype", "tokenizer" (meta.json's record, or None)}, from meta.json and the flags (which win);
    a nanochat folder: {"nanochat": its meta.json, "tokenizer": None}."""
    folder = Path(folder)
    meta = checked_meta(folder) if (folder / "meta.json").exists() or not folder.is_dir() else None
    if meta is not None and meta.get("format") == "nanochat":
        return {"nanochat": meta, "tokenizer": None}
    golf = golf_dataset(folder) if meta is None else None
    if meta:
        layout = meta_layout(folder, meta)
    elif golf:
        layout = golf_layout(*golf)
    else:
        layout = {"tokenizer": None, "dtype": None}
    for split, glob in (("train", train_glob), ("val", val_glob)):
        if glob is not None or (meta is None and golf is None):
            layout[split] = sorted(folder.glob(glob or f"*{split}*"))
        if not layout[split]:
            raise PrepareError(
                f"{folder} has no {split} file matching {glob or f'*{split}*'}; "
                f"name them with --{split} GLOB"
            )
    layout["dtype"] = dtype or layout["dtype"]
    if meta is None and golf is None:  # llm.c's shards say their tokenizer: which token leads
        magics = {llmc_magic(path) for path in layout["train"] + layout["val"]}
        if len(magics) == 1 and None not in magics:
            layout["boundary_id"] = DOCUMENT_START_OF_MAGIC[magics.pop()]
    layout["boundary_id"] = layout.get("boundary_id") if boundary_id is None else boundary_id
    layout["boundary"] = boundary or layout.get("boundary", "first")
    if layout["boundary_id"] is None:
        where = (
            f"{folder / 'meta.json'}'s tokenizer has no end-of-text token"
            if meta
            else (f"{folder} has no meta.json and its files no llm.c header")
        )
        raise PrepareError(
            f"{where}, so nothing says where one document ends and the next begins: pass "
            f"--boundary-id ID of the token between them (and --boundary first|last: before "
            f"each document, or after)"
        )
    return layout


def boundary_problem(layout):
    """Why the layout's boundary id cannot occur in its ids (too large for their dtype), or None."""
    where = token_file(layout["val"][0], layout["dtype"])
    largest = np.iinfo(where[2]).max
    if not 0 <= layout["boundary_id"] <= largest:
        return (
            f"--boundary-id {layout['boundary_id']:,} cannot occur in {where[0]}'s "
            f"{where[2].name} ids (0 to {largest:,}): every split would be one document"
        )
    return None


def meta_layout(folder, meta):
    """The files, end-of-text id and rule of a folder meta.json describes."""
    if meta.get("format") == GOLF_FORMAT:
        from .golf import not_one_dataset

        raise not_one_dataset(folder, meta)
    layout = {"tokenizer": meta["tokenizer"], "dtype": meta["dtype"]}
    eot_id = layout["boundary_id"] = meta["tokenizer"].get("eot_id")
    for split in ("train", "val"):
        if "shards" in meta:
            layout[split] = [folder / s["file"] for s in meta["shards"] if s["split"] == split]
        elif split in meta["splits"]:
            layout[split] = [folder / meta["splits"][split]["file"]]
        else:
            layout[split] = []
    index = None if "shards" in meta else meta["splits"].get("train", {}).get("index")
    if index is not None:  # the index says: the token before every start is the EOT, or not
        data = np.memmap(layout["train"][0], dtype=meta["dtype"], mode="r")
        starts = open_npy(folder / index["file"]).astype(np.int64)
        last = bool((data[np.append(starts[1:], len(data)) - 1] == eot_id).all())
        del data  # the map is let go: its pages are not overlap's memory
        layout["boundary"] = "last" if last else "first"
    elif eot_id is not None and layout["train"] and layout["val"]:
        layout["boundary"] = boundary_from_ends(layout, eot_id)
    return layout


def golf_layout(root, record):
    """The shards of a parameter-golf dataset its root's meta.json lists (not the val bytes
    sidecars beside them), each document led by the tokenizer's BOS."""
    layout = {"golf": (root, record), "tokenizer": None, "dtype": None, "boundary": "first"}
    layout["boundary_id"] = record["tokenizer"]["bos_id"]
    for split in ("train", "val"):
        layout[split] = [root / s["file"] for s in record["shards"] if s["split"] == split]
    return layout


def boundary_from_ends(layout, eot_id):
    """ "first" or "last": where the end-of-text token sits, from the ends of the two splits'
    streams. Documents each followed by it (nanoGPT's) make a stream that ends with it; each led
    by it (llm.c's, FineWeb's, whose shard 0, val, begins the whole corpus), one that begins
    with it. Each split's stream votes with its two ends; a tie is nanoGPT's "last"."""
    votes = 0
    for split in ("train", "val"):
        head = read_tokens(token_file(layout[split][0], layout["dtype"]), 0, 1)
        tail_file = token_file(layout[split][-1], layout["dtype"])
        tail = read_tokens(tail_file, max(tail_file[3] - 1, 0))
        votes += int(len(head) > 0 and head[0] == eot_id)
        votes -= int(len(tail) > 0 and tail[-1] == eot_id)
    return "first" if votes > 0 else "last"


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
    try:  # read_text refuses a FIFO (read forever) and a device (/dev/zero: never ends)
        lines = read_text(path).splitlines()
    except PrepareError as exc:
        raise PrepareError(f"--against: {exc}") from None
    if path.suffix == ".jsonl":
        numbered = enumerate(lines, 1)
        texts = [_jsonl_text(line, path, number) for number, line in numbered if line.strip()]
    elif path.suffix == ".txt":
        texts = [line for line in lines if line.strip()]
    else:
        raise PrepareError(
            f"--against {path}: give a .txt file (an item a line) or a .jsonl file "
            f"(a 'text' field a line)"
        )
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


def encoder_for(layout, folder):
    """text -> ids with the folder's tokenizer (meta.json's record; None: GPT-2's, llm.c's)."""
    tokenizer = layout["tokenizer"]
    if "golf" in layout:
        from .golf import rebuilt_tokenizer

        root, record = layout["golf"]
        tokens = rebuilt_tokenizer(root, record["tokenizer"], f"{root / 'meta.json'}'s dataset")
        return lambda text: tokens.encode_batch([text])[0][0].tolist()
    if "nanochat" in layout:
        from .nanochat import load

        return load(folder, layout["nanochat"]).encode_ordinary
    if tokenizer is None or tokenizer.get("kind") == "tiktoken":
        import tiktoken

        name = "gpt2" if tokenizer is None else tokenizer.get("name")
        encoding = gpt2_encoding() if name == "gpt2" else tiktoken.get_encoding(name)
        return encoding.encode_ordinary
    if tokenizer.get("kind") == "bpe":
        from formats.tokenizers import trained_tokenizer

        path = Path(tokenizer["path"])
        return trained_tokenizer(path if path.is_absolute() else Path(folder) / path)[
            0
        ].encode_ordinary
    return character_encoder(tokenizer.get("chars", []))


def character_encoder(chars):
    """text -> ids of a character vocabulary; a character it lacks -> UNKNOWN_CHARACTER, which
    no train id equals, so no shared run spans it: "ab?a", chars "ab" -> [0, 1, -1, 0]."""
    stoi = {c: i for i, c in enumerate(chars)}
    return lambda text: [stoi.get(c, UNKNOWN_CHARACTER) for c in text]


def split_chunks(layout, folder, split):
    """A split's documents as (tokens, offsets) chunks, their boundary token left out: cut from
    the token files, or a nanochat split's rows encoded (without the <|bos|> it puts first)."""
    if "nanochat" in layout:
        from .nanochat import load, split_documents

        encoding, texts = (
            load(folder, layout["nanochat"]),
            split_documents(folder, layout["nanochat"], split),
        )
        batch = []
        for text in texts:
            batch.append(text)
            if len(batch) == TEXTS_PER_CHUNK:
                yield documents_of(encoding.encode_ordinary_batch(batch))
                batch = []
        if batch:
            yield documents_of(encoding.encode_ordinary_batch(batch))
        return
    rule = (layout["boundary_id"], layout["boundary"])
    yield from stream_documents(blocks(layout[split], layout["dtype"]), *rule)


def folder_overlap(folder, layout, ngram=13, against=()):
    """overlap_report of `folder` read as `layout` (folder_layout's)."""
    val = whole(split_chunks(layout, folder, "val"))
    encode = encoder_for(layout, folder) if against else None
    items = {str(path): against_items(path, encode) for path in against}
    return overlap_report(val, split_chunks(layout, folder, "train"), ngram=ngram, against=items)


def say_overlap(folder):
    """Print what a document lesson prints at its end: overlap's two cheap figures (a hash per
    document, dedup/overlap.py's exact_report) on the folder it wrote, how many val documents
    have an exact copy in train and how much of train repeats, and the command that tells more."""
    from tqdm import tqdm

    layout = folder_layout(folder)
    val = split_chunks(layout, folder, "val")
    train = tqdm(
        split_chunks(layout, folder, "train"),
        desc="hashing the documents",
        unit=" blocks",
        delay=1,
        leave=False,
    )
    report = exact_report(val, train)
    docs, exact = report["documents"], report["val_documents_in_train"]
    repeats = report["train_repeated_documents"]
    print(
        f"val documents with an exact copy in train: {exact['documents']:,} of {docs['val']:,} "
        f"({exact['fraction']:.1%}); train documents repeating an earlier one: "
        f"{repeats['documents']:,} of {docs['train']:,} ({repeats['token_fraction']:.1%} of "
        f"train's tokens)"
    )
    print(
        f"  more (near copies, shared 13-token runs, benchmarks): python prepare_common.py "
        f"overlap {folder}; --dedup exact|near drops the copies before the split"
    )


def overlap_lines(report):
    """The figures as plain lines, each saying what it means for the val loss."""
    docs, tokens = report["documents"], report["tokens"]
    exact, near = report["val_documents_in_train"], report["val_near_duplicates_in_train"]
    shared, repeats = report["val_tokens_in_shared_ngrams"], report["train_repeated_documents"]
    rule, n = near["rule"], shared["ngram"]
    lines = [
        f"train: {plural(docs['train'], 'document')}, {tokens['train']:,} tokens; "
        f"val: {plural(docs['val'], 'document')}, {tokens['val']:,} tokens "
        f"(the boundary token left out)",
        f"val documents with an exact copy in train: {exact['documents']:,} "
        f"({exact['fraction']:.1%}): the model is trained on these, so its val loss on them "
        f"measures memory, not how it does on unseen text",
        f"val documents with a near copy in train: {near['documents']:,} "
        f"({near['fraction']:.1%}) (sharing one of {rule['bands']} MinHash band keys of "
        f"{rule['rows']} rows over {rule['shingle_tokens']}-token shingles: likely from Jaccard "
        f"0.7, near certain from 0.85): they lower the val loss the same way",
        f"val tokens inside a {n}-token run that train also holds: {shared['fraction']:.1%} "
        f"(GPT-3's contamination rule): the share of val the model may predict from memory",
        f"train documents repeating an earlier one: {repeats['documents']:,}, "
        f"{repeats['token_fraction']:.1%} of train's tokens: gradient steps spent again on the "
        f"same text (prepare.py --dedup exact drops them)",
    ]
    for record in report["against"]:
        lines.append(
            f"{record['file']}: {record['items_with_ngram_in_train']:,} of "
            f"{record['items']:,} items share a {n}-token run with train, held by "
            f"{record['train_documents_holding_one']:,} train documents "
            f"({record['items_shorter_than_ngram']:,} items are shorter than {n} tokens, not "
            f"checked): scores on those items may come from memory"
        )
    return lines


def rule_line(folder, layout):
    """What overlap says first: how it cut the documents."""
    if "nanochat" in layout:
        return f"{folder}: documents are its parquet rows, encoded with its tokenizer.pkl"
    where = "before" if layout["boundary"] == "first" else "after"
    return f"{folder}: documents cut at token {layout['boundary_id']} (one {where} each document)"


def add_parser(commands):
    """The `overlap` command's options, on prepare_common's subcommands."""
    from safety import non_negative_int, positive_int

    parser = commands.add_parser("overlap", help="what val shares with train, what train repeats")
    parser.add_argument("folder", help="a prepared folder, or one of llm.c's or nanochat's shards")
    parser.add_argument("--json", action="store_true", help="the figures as one JSON object")
    parser.add_argument(
        "--ngram",
        type=positive_int,
        default=13,
        metavar="N",
        help="the shared run's length in tokens (default: 13, GPT-3's)",
    )
    parser.add_argument(
        "--against",
        nargs="+",
        default=[],
        metavar="FILE",
        help="benchmark items: .txt (one a line) or .jsonl (a 'text' field)",
    )
    parser.add_argument(
        "--boundary-id",
        type=non_negative_int,
        metavar="ID",
        help="the token between documents (default: meta.json's end-of-text id; llm.c's shards: "
        "the one its fineweb.py puts first)",
    )
    parser.add_argument(
        "--boundary",
        choices=["first", "last"],
        help="it comes before each document (llm.c, parameter-golf) or after (nanoGPT)",
    )
    parser.add_argument("--dtype", choices=["uint16", "uint32"], help="the ids' type in raw files")
    parser.add_argument("--train", metavar="GLOB", help="the train files (default: *train*)")
    parser.add_argument("--val", metavar="GLOB", help="the val files (default: *val*)")
    parser.set_defaults(usage_error=parser.error)
    return parser


def run(args):
    """Run the parsed `overlap` command: its layout first (a --boundary-id its ids cannot hold
    is a usage error, before any work), then the figures, plain lines or one JSON object."""
    flags = {"train_glob": args.train, "val_glob": args.val, "boundary_id": args.boundary_id}
    layout = folder_layout(args.folder, boundary=args.boundary, dtype=args.dtype, **flags)
    problem = None if "nanochat" in layout else boundary_problem(layout)
    if problem:
        args.usage_error(problem)
    report = folder_overlap(args.folder, layout, args.ngram, args.against)
    if args.json:
        print(json.dumps(report))
        return
    print(rule_line(args.folder, layout))
    print(*overlap_lines(report), sep="\n")
