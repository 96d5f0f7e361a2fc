"""`overlap`: what a folder's val shares with its train, and what train repeats, from its files.

    python prepare_common.py overlap data/openwebtext [--json] [--ngram 13] [--against quiz.jsonl]

The figures are dedup/overlap.py's; this module finds the files and where documents end: from
meta.json, a parameter-golf dataset's record, or the flags. train is read in blocks of
BLOCK_TOKENS and forgotten, so memory stays flat however large train is.
"""

import itertools
import json
from pathlib import Path

import numpy as np

from dedup import fast
from dedup.overlap import documents_of, exact_report, overlap_report, stream_documents
from formats.schema import GOLF_FORMAT
from formats.shards import LLMC_MAGIC_VERSION, open_npy, read_shard
from formats.tokenizers import gpt2_encoding
from safety import non_negative_int, positive_int
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
    """(path, byte offset, dtype, count) of an llm.c shard, a .npy array, or raw `dtype` ids.
    read_tokens reads them with np.fromfile: a memory map's pages would stay resident."""
    path = Path(path)
    magic = None if path.suffix == ".npy" else llmc_magic(path)
    if path.suffix == ".npy" or magic is not None:  # the header checked first
        kind = ("npy", open_npy(path).dtype) if magic is None else ("llmc", DTYPE_OF_MAGIC[magic])
        tokens = read_shard(path, *kind)
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
    """`count` ids (None: all) of a token_file from id `start`."""
    path, offset, dtype, total = where
    count = total - start if count is None else min(count, total - start)
    return np.fromfile(path, dtype=dtype, count=count, offset=offset + start * dtype.itemsize)


def folder_layout(
    folder, train_glob=None, val_glob=None, boundary_id=None, boundary=None, dtype=None
):
    """What `overlap` reads: {"train", "val" (paths), "boundary_id", "boundary", "dtype",
    "tokenizer"}, from meta.json and the flags (which win); nanochat's: {"nanochat": meta}."""
    folder = Path(folder)
    meta = checked_meta(folder) if (folder / "meta.json").exists() or not folder.is_dir() else None
    if meta is not None and meta.get("format") == "nanochat":
        return {"nanochat": meta, "tokenizer": None}
    golf = golf_dataset(folder) if meta is None else None
    if meta:
        layout = meta_layout(folder, meta)
    elif golf:
        root, record = golf  # each document led by the tokenizer's BOS
        layout = {"golf": golf, "tokenizer": None, "dtype": None, "boundary": "first"}
        layout["boundary_id"] = record["tokenizer"]["bos_id"]
        for split in ("train", "val"):
            layout[split] = [root / s["file"] for s in record["shards"] if s["split"] == split]
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
        where = f"{folder / 'meta.json'}'s tokenizer has no end-of-text token"
        where = where if meta else f"{folder} has no meta.json and its files no llm.c header"
        raise PrepareError(
            f"{where}, so nothing says where one document ends and the next begins: pass "
            f"--boundary-id ID of the token between them (and --boundary first|last: before "
            f"each document, or after)"
        )
    return layout


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
        votes = 0  # a stream beginning with the EOT (llm.c's) says "first", ending with it "last"
        for split in ("train", "val"):
            head = read_tokens(token_file(layout[split][0], layout["dtype"]), 0, 1)
            tail_file = token_file(layout[split][-1], layout["dtype"])
            tail = read_tokens(tail_file, max(tail_file[3] - 1, 0))
            votes += int(len(head) > 0 and head[0] == eot_id)
            votes -= int(len(tail) > 0 and tail[-1] == eot_id)
        layout["boundary"] = "first" if votes > 0 else "last"  # a tie: nanoGPT's
    return layout


def against_items(path, encode):
    """A .txt file's non-empty lines, or a .jsonl file's "text" fields, as (tokens, offsets)."""
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

        return trained_tokenizer(Path(folder) / tokenizer["path"])[0].encode_ordinary
    stoi = {c: i for i, c in enumerate(tokenizer.get("chars", []))}
    return lambda text: [stoi.get(c, UNKNOWN_CHARACTER) for c in text]


def split_chunks(layout, folder, split):
    """A split's documents as (tokens, offsets) chunks, their boundary token left out: cut from
    the token files, or a nanochat split's rows encoded (without the <|bos|> it puts first)."""
    if "nanochat" in layout:
        from .nanochat import load, split_documents

        encoding = load(folder, layout["nanochat"])
        texts = split_documents(folder, layout["nanochat"], split)
        while batch := list(itertools.islice(texts, TEXTS_PER_CHUNK)):
            yield documents_of(encoding.encode_ordinary_batch(batch))
        return
    files = (token_file(path, layout["dtype"]) for path in layout[split])
    blocks = (read_tokens(f, i, BLOCK_TOKENS) for f in files for i in range(0, f[3], BLOCK_TOKENS))
    yield from stream_documents(blocks, layout["boundary_id"], layout["boundary"])


def count_by_boundary(report, layout):
    """report's document counts as meta.json's, by the boundary each document holds: a split of
    "first" boundaries opening mid-document (llm.c's train after val's shard 0) holds only the end
    of a document its boundary puts in the split before, checked there but not counted twice."""
    for split, count in report["documents"].items():
        if count > 1 and "nanochat" not in layout and layout["boundary"] == "first":
            head = read_tokens(token_file(layout[split][0], layout["dtype"]), 0, 1)
            report["documents"][split] -= int(len(head) > 0 and head[0] != layout["boundary_id"])
    return report


def say_overlap(folder):
    """Print overlap's two cheap figures (exact copies of val in train, train's repeats), which a
    document lesson prints at its end, and the command that tells more."""
    from tqdm import tqdm

    layout = folder_layout(folder)
    train = split_chunks(layout, folder, "train")
    train = tqdm(train, desc="hashing the documents", unit=" blocks", delay=1, leave=False)
    report = count_by_boundary(exact_report(split_chunks(layout, folder, "val"), train), layout)
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


def add_parser(commands):
    """The `overlap` command's options, on prepare_common's subcommands."""
    parser = commands.add_parser("overlap", help="what val shares with train, what train repeats")
    parser.add_argument("folder", help="a prepared folder, or one of llm.c's or nanochat's shards")
    parser.add_argument("--json", action="store_true", help="the figures as one JSON object")
    ngram_help = "the shared run's length in tokens (default: 13, GPT-3's)"
    parser.add_argument("--ngram", type=positive_int, default=13, metavar="N", help=ngram_help)
    against_help = "benchmark items: .txt (one a line) or .jsonl (a 'text' field)"
    parser.add_argument("--against", nargs="+", default=[], metavar="FILE", help=against_help)
    parser.add_argument(
        "--boundary-id",
        type=non_negative_int,
        metavar="ID",
        help="the token between documents (default: meta.json's end-of-text id; llm.c's shards: "
        "the one its fineweb.py puts first)",
    )
    where_help = "it comes before each document (llm.c, parameter-golf) or after (nanoGPT)"
    parser.add_argument("--boundary", choices=["first", "last"], help=where_help)
    parser.add_argument("--dtype", choices=["uint16", "uint32"], help="the ids' type in raw files")
    parser.add_argument("--train", metavar="GLOB", help="the train files (default: *train*)")
    parser.add_argument("--val", metavar="GLOB", help="the val files (default: *val*)")
    parser.set_defaults(usage_error=parser.error)
    return parser


def run(args):
    """Run the parsed `overlap` command: its layout first (a --boundary-id its ids cannot hold
    is a usage error, before any work), then the figures, plain lines or one JSON object."""
    folder = args.folder
    flags = {"train_glob": args.train, "val_glob": args.val, "boundary_id": args.boundary_id}
    layout = folder_layout(folder, boundary=args.boundary, dtype=args.dtype, **flags)
    if "nanochat" not in layout:
        path, _, dtype, _ = token_file(layout["val"][0], layout["dtype"])
        if not 0 <= layout["boundary_id"] <= (largest := np.iinfo(dtype).max):
            args.usage_error(
                f"--boundary-id {layout['boundary_id']:,} cannot occur in {path}'s "
                f"{dtype.name} ids (0 to {largest:,}): every split would be one document"
            )
    chunks, none = list(split_chunks(layout, folder, "val")), np.zeros(0, np.int64)  # held whole
    lengths = np.concatenate([none, *(np.diff(offsets) for _, offsets in chunks)])
    val = np.concatenate([none, *(tokens for tokens, _ in chunks)]), fast.offsets_of(lengths)
    encode = encoder_for(layout, folder) if args.against else None
    items = {str(path): against_items(path, encode) for path in args.against}
    report = overlap_report(val, split_chunks(layout, folder, "train"), args.ngram, against=items)
    count_by_boundary(report, layout)
    if args.json:
        print(json.dumps(report))
        return
    where = "before" if layout.get("boundary") == "first" else "after"
    rule = f"cut at token {layout.get('boundary_id')} (one {where} each document)"
    rule = "are its parquet rows, encoded with its tokenizer.pkl" if "nanochat" in layout else rule
    print(f"{folder}: documents {rule}", *overlap_lines(report), sep="\n")
