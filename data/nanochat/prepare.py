"""
Prepare a corpus for nanochat, nanoGPT's successor: base_data_climbmix/shard_*.parquet (whole
documents, the last shard val) and, with --vocab-size N, tokenizer/ trained by our BPE in place of
rustbpe. As nanochat's dev/repackage_data_reference.py writes them: shuffled (seed 42), row groups
of 1,024 documents, about 250M characters a shard. Set NANOCHAT_BASE_DIR to the folder.

    python data/nanochat/prepare.py --vocab-size 4096 --out-dir base
    cd nanochat && NANOCHAT_BASE_DIR=../base python -m scripts.base_train --depth=4 ...
"""

import shutil
from argparse import ArgumentTypeError, RawDescriptionHelpFormatter
from pathlib import Path

import numpy as np
from tqdm import tqdm

from documents.inputs import (
    DATA_FILES_HELP,
    HubDataset,
    checked_download,
    hub_entries,
    hub_failures,
    load_documents,
    source_name,
)
from formats import nanochat, schema
from formats.shards import write_npy
from formats.tokenizers import encoding_sha256
from formats.val_bytes import RecordTokens, text_figures
from hub import token_budget
from prepare_common import bpe_encoding, text_source, write_record
from safety import (
    ArgumentParser,
    PrepareError,
    RemoteFile,
    default_num_proc,
    fetch,
    folder_outputs,
    output_folder,
    positive_int,
    random_seed,
    read_text,
    run_main,
)
from safety.files import atomic_path, sha256_file

TINY_SHAKESPEARE = RemoteFile(  # Karpathy's char-rnn copy, pinned by its sha256
    url="https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt",
    sha256="86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
    mirror_path="tinyshakespeare/input.txt",
)
HUB_RULE = "nanochat's shards, whole, in the hub's order: the first train, the last always val"
NANOCHAT_HUB = ("karpathy/fineweb-edu-100b-shuffle", "karpathy/climbmix-400b-shuffle")
RANKS = 8  # nanochat's speedrun: 8 GPUs, and rank r reads the row groups r, r + 8, ... of val
SPLIT_RULE = (
    "the documents in the order of np.random.default_rng(seed).permutation(n) (the reference's "
    "datasets shuffle(seed=42)); the last val_docs are the val shard, the others the train "
    "shards before it"
)


def main():
    args = parse_args()
    with output_folder(args.out_dir, schema) as out:  # staged in `out`, moved in together
        # 1 to 3. the shards: cut here from the documents, or --from-hub nanochat's own
        shards, source, split = from_hub(out, args) if args.from_hub else cut(out, args)

        # 4. the tokenizer, trained on the train shards; each split's byte figures
        tokenizer, files, token_bytes, figures = None, [], None, None
        if args.vocab_size:
            tokenizer, files, token_bytes = write_tokenizer(out, shards, args)
            figures = byte_figures(out, shards, tokenizer)

        # 5. meta.json, last: every file with its sha256, each split's documents and bytes
        options = ("shard_chars", "vocab_size", "doc_cap", "max_chars")
        write_record(
            out,
            {
                "format_version": 1,
                "created_by": "data/nanochat/prepare.py",
                "format": "nanochat",
                "tokenizer": tokenizer,
                "tokenizer_files": files,
                "token_bytes": token_bytes,
                "bytes": figures,
                "splits": split_totals(shards),
                "shards": shards,
                "source": source,
                "split": split,
                "options": {option: getattr(args, option) for option in options},
            },
        )
    print(
        f"wrote {len(shards)} shards{', tokenizer/' if tokenizer else ''} and meta.json to "
        f"{args.out_dir}: NANOCHAT_BASE_DIR={args.out_dir.resolve()}"
    )


def cut(out, args):
    """Steps 1 to 3: the documents shuffled and cut into shards -> (records, "source", "split")."""
    # 1. the documents: --data-files, or Tiny Shakespeare's 7,222 speeches (blank-line apart)
    documents, source = load(args)
    val_docs = args.val_docs or (8 if args.data_files else 1) * nanochat.ROW_GROUP_SIZE
    name = source_name(args.data_files, None) if args.data_files else "Tiny Shakespeare"
    print(f"{name}: {len(documents):,} documents")
    if val_docs >= len(documents):  # train would be empty
        fix = "choose a smaller multiple of 1,024"  # val is whole row groups of 1,024 documents
        if len(documents) <= nanochat.ROW_GROUP_SIZE:
            fix = "give more than 1,024 documents (val is 1,024 or more)"
        raise PrepareError(
            f"--val-docs {val_docs:,} leaves no document of the {len(documents):,} for train; {fix}"
        )
    groups = val_docs // nanochat.ROW_GROUP_SIZE
    if groups < RANKS:
        print(
            f"note: val holds {groups} row group(s): run nanochat on at most {groups} "
            "rank(s) (a rank with no val row group waits forever); --val-docs "
            f"{RANKS * 1024:,} serves {RANKS}"
        )

    # 2. shuffle them (the same order for the same --seed), the last val_docs for val
    order = np.random.default_rng(args.seed).permutation(len(documents))
    train, val = order[: len(order) - val_docs], order[len(order) - val_docs :]
    print(f"train: {len(train):,} documents, val: {len(val):,} ({groups} row group(s) of 1,024)")

    # 3. the shards: train cut as the reference cuts, its last partial shard kept; val last
    cuts = [*nanochat.cut_shards(texts(documents, train), args.shard_chars)]
    shards = [write_shard(out, i, "train", docs) for i, docs in enumerate(cuts)]
    shards.append(write_shard(out, len(shards), "val", list(texts(documents, val))))
    split = {"rule": SPLIT_RULE, "seed": args.seed, "val_docs": val_docs, "numpy": np.__version__}
    return shards, source, split


def from_hub(out, args):
    """nanochat's own shards of --from-hub, checked by their LFS sha256: the first --shards (or
    --max-tokens GPT-2 tokens), and val, the last -> (records, "source", "split")."""
    from huggingface_hub import HfApi

    where, again = f"{args.from_hub} (--from-hub)", "run again when it can be reached"
    with hub_failures(where, again):
        revision = HfApi().dataset_info(args.from_hub, revision="main").sha  # pinned from here on
    hub = HubDataset(args.from_hub, revision, None, "shard_*.parquet")
    entries = hub_entries(hub, where, again)
    if len(entries) < 2:  # the last is val: nothing would be left to train on
        raise PrepareError(
            f"{where} holds {len(entries)} shard_*.parquet file(s); nanochat reads the last as "
            "val and the others as train, so give a repository of two shards or more"
        )
    encoding, tokens, used = bpe_encoding()[0], 0, []
    with hub_failures(where, again):
        for entry in entries[:-1]:
            if len(used) == args.shards or (args.max_tokens and tokens >= args.max_tokens):
                break
            used.append(entry)
            batches = nanochat.shard_texts(copy_shard(out, hub, entry, len(used) - 1))
            tokens += sum(
                len(ids) + 1 for b in batches for ids in encoding.encode_ordinary_batch(b)
            )
        copy_shard(out, hub, entries[-1], len(used))
        used.append(entries[-1])
    splits = ["train"] * (len(used) - 1) + ["val"]
    shards = [shard_record(out, index, split) for index, split in enumerate(splits)]
    print(f"{where}: {len(used) - 1} train shards of {len(entries) - 1} ({tokens:,} GPT-2 tokens)")
    files = [{"path": e.path, "sha256": e.lfs.sha256} for e in used]
    source = {"repo": hub.repo, "revision": revision, "files": files}
    split = {"rule": HUB_RULE, "shards": args.shards, "max_tokens": args.max_tokens}
    return shards, source, {**split, "gpt2_tokens": tokens}


def copy_shard(out, hub, entry, index):
    """One shard of the hub, checked, copied in as shard `index` (the hub's names skip to val)."""
    path = Path(out) / schema.nanochat_shard_name(index)
    path.parent.mkdir(exist_ok=True)
    shutil.copyfile(checked_download(hub, entry)[0], path)
    return path


def load(args):
    """(a datasets.Dataset of `text`, meta.json's "source"): --data-files, or Tiny Shakespeare
    cut at its blank lines."""
    import datasets

    if args.data_files:
        outputs = folder_outputs(schema, args.out_dir)  # a --data-files glob over the folder
        dataset = load_documents(None, args.data_files, args.num_proc, args.cache_dir, outputs)
        return dataset, {"files": args.data_files, "documents": len(dataset)}
    path = fetch(TINY_SHAKESPEARE, args.out_dir / "input.txt")
    text = read_text(path)
    source = text_source(path, args.out_dir, characters=len(text), url=TINY_SHAKESPEARE.url)
    return datasets.Dataset.from_dict({"text": text.split("\n\n")}), source


def texts(documents, order):
    """The documents' texts in `order`, 1,024 at a time read through Arrow."""
    for batch in documents.select(order).iter(batch_size=nanochat.ROW_GROUP_SIZE):
        yield from batch["text"]


def write_shard(out, index, split, docs):
    path = Path(out) / schema.nanochat_shard_name(index)
    path.parent.mkdir(exist_ok=True)
    nanochat.write_text_shard(path, docs)
    return shard_record(out, index, split)


def shard_record(out, index, split):
    """Shard `index`'s meta.json record: file, split, documents, characters, bytes, sha256."""
    name = schema.nanochat_shard_name(index)
    path = Path(out) / name
    docs = [text for batch in nanochat.shard_texts(path) for text in batch]
    characters, size = sum(map(len, docs)), sum(len(t.encode()) for t in docs)
    print(f"wrote {name} ({split}): {len(docs):,} documents, {characters:,} characters")
    record = {"file": name, "split": split, "documents": len(docs), "characters": characters}
    return {**record, "bytes": size, "sha256": sha256_file(path)}


def write_tokenizer(out, shards, args):
    """Train on the train shards, write tokenizer/ and token_bytes.npy -> their records."""
    train = [Path(out) / shard["file"] for shard in shards if shard["split"] == "train"]
    documents = (text for path in train for batch in nanochat.shard_texts(path) for text in batch)
    encoding = nanochat.nanochat_encoding(
        nanochat.train_tokenizer(documents, args.vocab_size, args.doc_cap, args.max_chars)
    )
    names = nanochat.write_tokenizer_dir(Path(out) / schema.NANOCHAT_TOKENIZER_DIR, encoding)
    files = [f"{schema.NANOCHAT_TOKENIZER_DIR}/{name}" for name in names]
    n, bos = encoding.n_vocab, encoding._special_tokens[nanochat.BOS]
    print(f"tokenizer: {n:,} ids (<|bos|> = {bos:,}); wrote {', '.join(files)}")
    if files[-1].endswith(".npy"):
        print(nanochat.torch_note(args.out_dir / files[-1]))
    path = Path(out) / schema.TOKEN_BYTES
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        write_npy(f, nanochat.token_byte_lengths(encoding))
    record = {"kind": "nanochat", "name": f"nanochat-{n}", "path": files[0], "vocab_size": n}
    record.update(bos_id=bos, eot_id=None, sha256=sha256_file(Path(out) / files[0]))
    record.update(encoding_sha256=encoding_sha256(encoding), pattern="nanochat")
    tokenizer_files = [{"file": f, "sha256": sha256_file(Path(out) / f)} for f in files]
    splits = {s: sum(x["bytes"] for x in shards if x["split"] == s) for s in ("train", "val")}
    token_bytes = {"file": path.name, "sha256": sha256_file(path), "bytes": splits}
    return record, tokenizer_files, token_bytes


def byte_figures(out, shards, tokenizer):
    """Each split's byte figures: its documents encoded by tokenizer.pkl as written."""
    tokens, figures = RecordTokens(tokenizer, out), {}
    for split in ("train", "val"):
        ours = [shard for shard in shards if shard["split"] == split]
        groups = sum(-(-shard["documents"] // nanochat.ROW_GROUP_SIZE) for shard in ours)
        batches = nanochat.split_batches(out, ours, split)
        bar = tqdm(batches, total=groups, desc=f"{split}'s bytes", unit=" row groups", delay=1)
        figures[split] = text_figures(bar, tokens)
    return figures


def split_totals(shards):
    """meta.json's "splits": each split's shards, documents, characters and UTF-8 bytes."""
    totals, sums = {}, ("documents", "characters", "bytes")
    for shard in shards:
        split = totals.setdefault(shard["split"], dict.fromkeys(("shards", *sums), 0))
        split["shards"] += 1
        split.update({key: split[key] + shard[key] for key in sums})
    return totals


def nanochat_vocab_size(text):
    """--vocab-size: "4096" -> 4096; "265" -> error (no room for a merge and nine specials)."""
    try:
        return nanochat.check_vocab_size(positive_int(text))
    except PrepareError as exc:
        raise ArgumentTypeError(str(exc)) from None


def whole_row_groups(text):
    """--val-docs: a multiple of 1,024 (whole row groups): "2048" -> 2048; "1000" -> error."""
    value = positive_int(text)
    if value % nanochat.ROW_GROUP_SIZE:
        raise ArgumentTypeError(f"{text} is not a multiple of 1,024 (a whole number of row groups)")
    return value


def parse_args():
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    add = parser.add_argument
    default = "(default: Tiny Shakespeare, cut at its blank lines)"
    add("--data-files", nargs="+", metavar="PATH|GLOB", help=f"{DATA_FILES_HELP} {default}")
    here = Path(__file__).parent
    add("--out-dir", type=Path, default=here, help="NANOCHAT_BASE_DIR (default: beside the script)")
    add("--seed", type=random_seed, default=42, help="seed of the shuffle (the reference's: 42)")
    val = "documents in the val shard, a multiple of 1,024 (default: 8,192, a row group for each of"
    val += " 8 ranks; 1,024 for Tiny Shakespeare)"
    add("--val-docs", type=whole_row_groups, metavar="N", help=val)
    chars = "characters a train shard holds at least (default: 250,000,000)"
    add("--shard-chars", type=positive_int, default=nanochat.SHARD_CHARS, help=chars)
    vocab = "train nanochat's tokenizer too (nanochat's: 32,768)"
    add("--vocab-size", type=nanochat_vocab_size, metavar="N", help=vocab)
    cap = "train it on each document's first N characters (default: 10,000)"
    add("--doc-cap", type=positive_int, default=nanochat.DOC_CAP, help=cap)
    chars = "and on N characters in all (default: 2,000,000,000)"
    add("--max-chars", type=positive_int, default=nanochat.MAX_CHARS, help=chars)
    cpus = "default: CPUs, at most 8"
    add("--num-proc", type=positive_int, default=default_num_proc(), help=cpus)
    add("--cache-dir", type=Path, help="datasets' cache (default: $HF_DATASETS_CACHE)")
    repos = " or ".join(NANOCHAT_HUB)
    add("--from-hub", choices=NANOCHAT_HUB, metavar="REPO", help=f"nanochat's shards: {repos}")
    budget = parser.add_mutually_exclusive_group()
    shards = "--from-hub: K train shards"
    budget.add_argument("--shards", type=positive_int, metavar="K", help=shards)
    tokens = "--from-hub: the first train shards whose GPT-2 tokens reach N (200M, 1.5B)"
    budget.add_argument("--max-tokens", type=token_budget, metavar="N", help=tokens)
    args = parser.parse_args()
    if args.from_hub and (args.data_files or args.val_docs):
        parser.error(
            "--from-hub takes nanochat's own shards: leave out --data-files and --val-docs"
        )
    if args.from_hub and not (args.shards or args.max_tokens):
        parser.error("--from-hub needs --shards K or --max-tokens N (the hub holds 100B tokens)")
    if not args.from_hub and (args.shards or args.max_tokens):
        parser.error("--shards and --max-tokens take nanochat's own shards: add --from-hub REPO")
    return args


if __name__ == "__main__":
    run_main(main)

# Tiny Shakespeare, --vocab-size 4096 (the train shards' 931,635 characters: a few seconds):
# Tiny Shakespeare: 7,222 documents
# note: val holds 1 row group(s): run nanochat on at most 1 rank(s) (...)
# train: 6,198 documents, val: 1,024 (1 row group(s) of 1,024)
# wrote base_data_climbmix/shard_00000.parquet (train): 6,198 documents, 931,635 characters
# wrote base_data_climbmix/shard_00001.parquet (val): 1,024 documents, 169,317 characters
# tokenizer: 4,096 ids (<|bos|> = 4,087); wrote tokenizer/tokenizer.pkl, tokenizer/token_bytes.pt
# nanochat's own ClimbMix, for scale: shard_00000 ... shard_06542, about 250M characters each
