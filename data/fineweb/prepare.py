"""
Prepare FineWeb-Edu (or FineWeb) as llm.c, modded-nanogpt and build-nanogpt read it: each
document <|endoftext|> then its GPT-2 ids, in order, filling shards of 100M tokens; shard 0 is
val. Byte for byte what llm.c's dev/data/fineweb.py (--format llmc) and build-nanogpt's
fineweb.py (--format npy) write. Unlike theirs: a pinned revision, --tokenizer, --shuffle SEED.

    python data/fineweb/prepare.py --data-files 'my_docs/*.parquet' --shard-size 1000000
"""

from argparse import RawDescriptionHelpFormatter
from pathlib import Path

import numpy as np

from dedup.tokenized import deduplicate
from documents.inputs import (
    DATA_FILES_HELP,
    HubDataset,
    load_documents,
    source_name,
    source_record,
)
from formats import schema
from formats.shards import check_train_shard
from formats.val_bytes import shard_figures
from hub import budgeted_documents, document_tokens, token_budget
from inspection.overlap import say_overlap
from prepare_common import (
    LLMC_READS,
    bpe_encoding,
    dtype_for_vocab,
    id_batches,
    llmc_names,
    tokenize_dataset,
    write_meta,
    write_shards,
)
from safety import (
    ArgumentParser,
    default_num_proc,
    folder_outputs,
    output_folder,
    positive_int,
    random_seed,
    run_main,
    tokens_per_shard,
)

# The revisions public projects pin for the samples (not checked from here: docs/fineweb.md)
REPOS = {
    "edu": ("HuggingFaceFW/fineweb-edu", "87f09149ef4734204d70ed1d046ddc9ca3f2b8f9"),
    "classic": ("HuggingFaceFW/fineweb", "9bb295ddab0e05d785b879661af7260fed5140fc"),
}
PREFIXES = {  # the shards' names: llm.c's, and build-nanogpt's (which knows FineWeb-Edu only)
    "llmc": {"edu": "edu_fineweb", "classic": "fineweb"},
    "npy": {"edu": "edufineweb", "classic": "fineweb"},
}
SPLIT_RULE = "llm.c's: the documents in order, cut every shard_size tokens; shard 0 is val"
SHUFFLED_RULE = SPLIT_RULE.replace(
    "in order", "in the order of np.random.default_rng(shuffle_seed).permutation(n)"
)


def main():
    parser = arguments()
    args = parser.parse_args()
    if args.max_tokens and args.data_files:
        parser.error("--max-tokens reads the hub's files: leave out --data-files")
    # 1. the tokenizer, and its end-of-text id that starts every document
    encoding, tokenizer = bpe_encoding(args.tokenizer, need_eot=True)
    vocab_size, eot_id = tokenizer["vocab_size"], tokenizer["eot_id"]
    dtype = dtype_for_vocab(vocab_size, LLMC_READS)  # uint16 for GPT-2; llm.c's uint32 past 65,536
    print(f"tokenizer: {tokenizer['name']} ({vocab_size:,} tokens, end of text = {eot_id})")

    with output_folder(args.out_dir, schema) as out:  # staged in `out`, moved in together
        # 2. the documents, in order: the hub's sample or local files (--max-tokens: the first)
        hub, budget = fineweb(args.type, args.sample), None
        source = source_name(args.data_files, hub)
        if args.max_tokens:
            dataset, budget = budget_documents(args, encoding, source)
        else:
            outputs = folder_outputs(schema, args.out_dir)  # a --data-files glob over the folder
            dataset = load_documents(hub, args.data_files, args.num_proc, args.cache_dir, outputs)
        print(f"{source}: {len(dataset):,} document{'s' * (len(dataset) != 1)}")

        # 3. tokenize every document: <|endoftext|> first, then its ids (llm.c's `tokenize`)
        where = f"{source}, document"
        tokenized = tokenize_dataset(
            dataset, encoding, tokenizer, dtype, where, args.num_proc, "tokenizing", eot_first=True
        )

        # 4. --dedup: keep the first of each copy BEFORE the cut, so none is in val and train
        split = {"rule": SPLIT_RULE, "shard_size": args.shard_size}
        if args.dedup:
            kept, split["dedup"] = deduplicate(tokenized, args.dedup, eot_first=True)
            tokenized = tokenized.select(kept)
        num_tokens = int(tokenized.with_format("arrow")["len"].to_numpy().sum())
        count = -(-num_tokens // args.shard_size)
        print(f"{num_tokens:,} tokens: {count:,} shard{'s' * (count != 1)}")
        check_train_shard(num_tokens, args.shard_size)  # shard 0 is val: one more for train

        # 5. cut the stream of ids every shard_size tokens: shard 0 is val, the others train
        if args.shuffle is not None:  # the hub's order gives a periodic loss (docs/fineweb.md)
            order = np.random.default_rng(args.shuffle).permutation(len(tokenized))
            tokenized = tokenized.select(order)
            split.update(rule=SHUFFLED_RULE, shuffle_seed=args.shuffle, numpy=np.__version__)
        names, ids = llmc_names(PREFIXES[args.format][args.type]), id_batches(tokenized)
        shards = write_shards(out, ids, names, args.shard_size, dtype, vocab_size, args.format)

        # 6. the metadata, written last: meta.json lists every shard, its tokens and sha256
        meta = write_meta(
            out,
            script="data/fineweb/prepare.py",
            tokenizer=tokenizer,
            dtype=dtype,
            shards=shards,
            shard_format=args.format,
            counted=shard_figures(tokenized, args.shard_size),  # counted as each was encoded
            eot_first=True,
            source=source_record(args.data_files, len(dataset), hub, budget),
            split=split,
            options={
                "tokenizer": args.tokenizer and str(args.tokenizer),
                "num_proc": args.num_proc,
            },
        )
    extras = [*schema.sidecars(meta), schema.TOKEN_BYTES, schema.RECORD_NAME]
    print(f"wrote {len(shards):,} shards ({dtype.name}), {', '.join(extras)} to {args.out_dir}")
    say_overlap(args.out_dir)  # val's exact copies in train, train's repeats: a hash a document


def budget_documents(args, encoding, source):
    """--max-tokens N: (the sample's first documents whose tokens past shard 0 reach N,
    meta.json's budget record)."""
    first = args.shard_size  # shard 0, val: the same first documents whatever the budget
    count = document_tokens(encoding)  # a document's ids and its end-of-text
    hub = fineweb(args.type, args.sample)
    return budgeted_documents(hub, args.max_tokens, count, source, first_tokens=first)


def fineweb(kind, sample):
    """FineWeb-Edu ("edu") or FineWeb ("classic"), sample "10BT" or "100BT", pinned."""
    repo, revision = REPOS[kind]
    return HubDataset(repo, revision, f"sample-{sample}", f"sample/{sample}/*.parquet")


def arguments():
    """The options, which prepare_datatrove.py beside this script shares."""
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    add = parser.add_argument
    kinds = "FineWeb-Edu (default) or FineWeb"
    add("--type", choices=["edu", "classic"], default="edu", help=kinds)
    add("--sample", choices=["10BT", "100BT"], default="10BT", help="the hub sample (default 10BT)")
    hub = f"{DATA_FILES_HELP} (default: the hub)"
    add("--data-files", nargs="+", metavar="PATH|GLOB", help=hub)
    add("--tokenizer", type=Path, help="a file written by train_tokenizer.py (default: GPT-2)")
    budget = "read only the first documents whose tokens past shard 0 (val) reach N (200M, 1.5B):"
    budget += " the row groups of the hub's files they are in (default: all)"
    add("--max-tokens", type=token_budget, metavar="N", help=budget)
    shard = "tokens per shard (llm.c's: 10**8)"
    add("--shard-size", type=tokens_per_shard, default=10**8, help=shard)
    add("--format", choices=["llmc", "npy"], default="llmc", help="llm.c's .bin (default) or .npy")
    shuffle = "shuffle the documents (the same order for the same seed) before cutting the shards:"
    shuffle += " in the hub's order, FineWeb-Edu's training loss goes up and down periodically"
    add("--shuffle", type=random_seed, metavar="SEED", help=shuffle + " (default: in order)")
    dedup = "drop each document repeating an earlier one, before the shards are cut: exact copies,"
    dedup += " or near copies (MinHash; docs/sound_data.md) (default: keep all)"
    add("--dedup", choices=["exact", "near"], help=dedup)
    add("--out-dir", type=Path, default=Path(__file__).parent, help="default: beside the script")
    cpus = "default: CPUs, at most 8"
    add("--num-proc", type=positive_int, default=default_num_proc(), help=cpus)
    add("--cache-dir", type=Path, help="datasets' cache (default: $HF_DATASETS_CACHE)")
    return parser


if __name__ == "__main__":
    run_main(main)

# FineWeb-Edu sample-10BT at the pinned revision (not run here: 14 files, 28.5 GB of parquet):
# tokenizer: gpt2 (50,257 tokens, end of text = 50256)
# HuggingFaceFW/fineweb-edu@87f09149ef47 (sample-10BT): 9,672,101 documents
# about 10B tokens: about 100 shards (build-nanogpt's comment: "total of 100 shards")
# each full shard: 200,001,024 bytes (llmc) or 200,000,128 bytes (npy)
