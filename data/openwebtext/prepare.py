"""
Prepare OpenWebText for GPT-2 pretraining, byte for byte as nanoGPT's data/openwebtext/prepare.py:
GPT-2's BPE, <|endoftext|> after each document, a random 0.05% (seed 2357) to val, uint16 ids.
Unlike nanoGPT's: the hub's parquet files at a pinned revision (or --data-files), a --tokenizer
of train_tokenizer.py, --format llmc for llm.c's shards, outputs that appear only when complete.

    python data/openwebtext/prepare.py --data-files 'my_docs/*.jsonl' --out-dir out
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
from formats.val_bytes import counted_figures
from hub import budgeted_documents, count_documents, document_tokens, token_budget
from inspection.overlap import say_overlap
from prepare_common import (
    bpe_encoding,
    dtype_for_vocab,
    id_batches,
    llmc_names,
    random_split,
    split_record,
    split_sizes,
    tokenize_dataset,
    write_bpe_meta_pkl,
    write_document_starts,
    write_memmap,
    write_meta,
    write_shards,
)
from safety import (
    ArgumentParser,
    default_num_proc,
    folder_outputs,
    fraction,
    output_folder,
    positive_int,
    random_seed,
    run_main,
    tokens_per_shard,
)

BUDGET_RULE = (
    "--max-tokens: the first ceil(val_fraction * n) documents of the source (n: all of its "
    "documents, by its parquet footers) are val, the next ones train"
)
# the hub's parquet files at a pinned revision (80 files, 8,013,769 documents): change it here
OPENWEBTEXT = HubDataset(
    "Skylion007/openwebtext",
    "79d93d786212f7344586290adb811d4ae6a1762c",
    "plain_text",
    "plain_text/*.parquet",
)


def main():
    parser = arguments()
    args = parser.parse_args()
    if args.max_tokens and args.data_files:
        parser.error("--max-tokens reads the hub's files: leave out --data-files")
    # 1. the tokenizer, and its end-of-text id that closes every document
    encoding, tokenizer = bpe_encoding(args.tokenizer, need_eot=True)
    vocab_size, eot_id = tokenizer["vocab_size"], tokenizer["eot_id"]
    dtype = dtype_for_vocab(vocab_size)  # uint16 for GPT-2; uint32 (with a warning) past 65,536
    print(f"tokenizer: {tokenizer['name']} ({vocab_size:,} tokens, end of text = {eot_id})")

    with output_folder(args.out_dir, schema) as out:  # staged in `out`, moved in together
        # 2. the documents: OpenWebText from the hub, or local files (--max-tokens: the first)
        source, budget = source_name(args.data_files, OPENWEBTEXT), None
        if args.max_tokens:
            dataset, budget = budget_documents(args, encoding, source)
        else:
            outputs = folder_outputs(schema, args.out_dir)  # a --data-files glob over the folder
            dataset = load_documents(
                OPENWEBTEXT, args.data_files, args.num_proc, args.cache_dir, outputs
            )
        print(f"{source}: {len(dataset):,} document{'s' * (len(dataset) != 1)}")

        # 3. --dedup: keep the first of each copy BEFORE the split, so none is in train and val
        kept, whole, dedup = np.arange(len(dataset)), None, None
        shared = (source, encoding, tokenizer, dtype, args.num_proc)  # tokenize's
        if args.dedup:
            whole = tokenize(dataset, None, *shared)
            kept, dedup = deduplicate(whole, args.dedup)

        # 4. split the (kept) documents at random, as nanoGPT's train_test_split ('test': val)
        if budget:  # --max-tokens: val its first documents, the same whatever the budget
            first = budget["first_documents"]
            train, val = kept[kept >= first], kept[kept < first]
        else:
            sides = random_split(len(kept), args.val_fraction, args.seed)
            train, val = kept[sides[0]], kept[sides[1]]

        # 5. tokenize every document, a batch at a time (nanoGPT's `process`): --dedup did already
        tokenized = {}
        for split, numbers in (("train", train), ("val", val)):
            if whole is not None:
                tokenized[split] = whole.select(numbers)
            else:
                tokenized[split] = tokenize(dataset.select(numbers), split, *shared)

        # 6. concatenate all the ids of each split into one large file, and where each starts
        split_tokens = {}
        for split, dset in tokenized.items():
            lengths = dset.with_format("arrow")["len"].to_numpy()
            split_tokens[split] = int(lengths.sum())
            print(
                f"{split} has {len(dset):,} document{'s' * (len(dset) != 1)}, "
                f"{split_tokens[split]:,} tokens"
            )
            if args.format == "bin":
                desc, ids = f"writing {args.out_dir / f'{split}.bin'}", id_batches(dset)
                write_memmap(out / f"{split}.bin", ids, split_tokens[split], dtype, desc)
                write_document_starts(out / f"{split}.docs.npy", lengths)
        shards = None if args.format == "bin" else []  # --format llmc: llm.c's shards, val first
        for split in ("val", "train") if shards is not None else ():
            names = llmc_names("openwebtext", split, first_index=len(shards))
            shards += write_shards(
                out, id_batches(tokenized[split]), names, args.shard_size, dtype, vocab_size, "llmc"
            )

        # 7. the metadata; meta.pkl only for a trained tokenizer (nanoGPT reads vocab_size from it)
        wrote_pkl = write_bpe_meta_pkl(out, tokenizer, encoding)
        sizes = {"train": len(train), "val": len(val)}
        meta = write_meta(
            out,
            script="data/openwebtext/prepare.py",
            tokenizer=tokenizer,
            dtype=dtype,
            split_tokens=split_tokens,
            shards=shards,
            shard_format=args.format,
            counted=counted_figures(tokenized),  # the byte figures, counted as each was encoded
            source=source_record(args.data_files, len(dataset), OPENWEBTEXT, budget),
            split=split_record(
                args.val_fraction, args.seed, sizes, dedup=dedup, rule=budget and BUDGET_RULE
            ),
            options={
                "tokenizer": args.tokenizer and str(args.tokenizer),
                "num_proc": args.num_proc,
            },
        )
    outputs = "train.bin, val.bin" if shards is None else f"{len(shards):,} llm.c shards"
    extras = [*schema.DOCUMENT_INDEXES] * (shards is None) + schema.sidecars(meta)
    extras += [schema.TOKEN_BYTES] + [schema.META_PKL] * wrote_pkl + [schema.RECORD_NAME]
    print(f"wrote {outputs} ({dtype.name}), {', '.join(extras)} to {args.out_dir}")
    say_overlap(args.out_dir)  # val's exact copies in train, train's repeats: a hash a document


def budget_documents(args, encoding, source):
    """--max-tokens N: (OpenWebText's first documents, val's as many as the random split draws
    from the whole and train's until N tokens, meta.json's budget record)."""
    first = split_sizes(count_documents(OPENWEBTEXT, source), args.val_fraction)[1]
    count = document_tokens(encoding)  # a document's ids and its end-of-text
    return budgeted_documents(OPENWEBTEXT, args.max_tokens, count, source, first_documents=first)


def tokenize(dset, split, source, encoding, tokenizer, dtype, num_proc):
    """nanoGPT's `process` on every document of `dset`: the documents of `split`, or (None) all."""
    where = f"{source}, {split} document" if split else f"{source}, document"
    return tokenize_dataset(
        dset, encoding, tokenizer, dtype, where, num_proc, f"tokenizing {split or ''}".strip()
    )


def arguments():
    """The options, which prepare_datatrove.py beside this script shares."""
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    add = parser.add_argument
    hub = f"{DATA_FILES_HELP} (default: the hub)"
    add("--data-files", nargs="+", metavar="PATH|GLOB", help=hub)
    add("--tokenizer", type=Path, help="a file written by train_tokenizer.py (default: GPT-2)")
    add("--out-dir", type=Path, default=Path(__file__).parent, help="default: beside the script")
    cpus = "default: CPUs, at most 8"
    add("--num-proc", type=positive_int, default=default_num_proc(), help=cpus)
    add("--val-fraction", type=fraction, default=0.0005, help="share of the documents in val")
    add("--seed", type=random_seed, default=2357, help="seed of the random split (nanoGPT's: 2357)")
    add("--cache-dir", type=Path, help="datasets' cache (default: $HF_DATASETS_CACHE)")
    formats = "nanoGPT's .bin (default) or llm.c's shards"
    add("--format", choices=["bin", "llmc"], default="bin", help=formats)
    shard = "tokens per llm.c shard (llm.c's: 10**8)"
    add("--shard-size", type=tokens_per_shard, default=10**8, help=shard)
    budget = "read only the first documents: val as many as the random split draws from the whole,"
    budget += " train the next ones until their tokens reach N (200M, 1.5B) (default: all)"
    add("--max-tokens", type=token_budget, metavar="N", help=budget)
    dedup = "drop each document repeating an earlier one, before the split: exact copies, or near"
    dedup += " copies (MinHash; docs/sound_data.md) (default: keep all)"
    add("--dedup", choices=["exact", "near"], help=dedup)
    return parser


if __name__ == "__main__":
    run_main(main)

# For OpenWebText at the pinned revision (nanoGPT's figures):
# tokenizer: gpt2 (50,257 tokens, end of text = 50256)
# Skylion007/openwebtext@79d93d786212: 8,013,769 documents
# train has 8,009,762 documents, ~9,035,582,198 tokens (train.bin ~17 GB)
# val has 4,007 documents, ~4,434,897 tokens (val.bin ~8.5 MB)
