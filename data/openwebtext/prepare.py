"""
Prepare the OpenWebText dataset for GPT-2 pretraining, as nanoGPT's data/openwebtext/prepare.py:
every document is encoded with GPT-2's BPE and ends with <|endoftext|> (50256); a random 0.05% of
the documents (seed 2357) become val, the rest train; each split is one file of uint16 ids,
byte for byte what nanoGPT's script writes from the same documents.

What is different from nanoGPT's script (loading, checking and streaming: prep/documents.py):
- the hub's parquet files are read at one pinned revision (datasets >= 4 refuses the old
  `openwebtext.py` loading script); --data-files reads local files instead;
- the ids are kept as uint16 in the datasets cache (nanoGPT's int64 lists take 4x the disk);
- each .bin file is streamed from the cache in bounded memory and appears only when complete;
- --tokenizer encodes with a BPE trained by train_tokenizer.py.

    python data/openwebtext/prepare.py [--data-files PATH|GLOB ...] [--tokenizer FILE]
        [--out-dir DIR] [--num-proc N] [--val-fraction 0.0005] [--seed 2357] [--cache-dir DIR]
        [--engine datatrove [--executor local|slurm|ray] [--tasks N] [--workers N] ...]
"""

import os
from argparse import RawDescriptionHelpFormatter
from pathlib import Path

import numpy as np

from prep.arguments import ArgumentParser, fraction, positive_int, seed
from prep.binfiles import dtype_for_vocab, write_bin
from prep.datatrove_engine import (
    add_datatrove_arguments,
    check_datatrove_arguments,
    prepare_with_datatrove,
)
from prep.documents import (
    SPLIT_RULE,
    TextCoverage,
    count_tokens,
    ids_cache_options,
    load_documents,
    random_split,
    source_name,
    source_record,
    stream_ids,
    tokenize,
)
from prep.errors import run_main
from prep.folder import output_folder
from prep.meta import write_bpe_meta_pkl, write_meta
from prep.tokenizers import bpe_encoding

VAL_FRACTION, SEED = 0.0005, 2357  # nanoGPT's split


def main():
    args = parse_args()
    # 1. the tokenizer, and its end-of-text id that closes every document
    encoding, tokenizer = bpe_encoding(args.tokenizer, need_eot=True)
    vocab_size, eot_id = tokenizer["vocab_size"], tokenizer["eot_id"]
    dtype = dtype_for_vocab(vocab_size)  # uint16 for GPT-2; uint32 (with a warning) past 65,536
    print(f"tokenizer: {tokenizer['name']} ({vocab_size:,} tokens, end of text = {eot_id})")
    if args.engine == "datatrove":  # the same files from N tasks, here or on a cluster
        return prepare_with_datatrove(args, encoding, tokenizer, dtype)  # its last task commits

    out_dir = args.out_dir
    with output_folder(out_dir) as out:  # written in `out`, moved into out_dir together
        # 2. the documents: OpenWebText from the hub, or local files
        dataset = load_documents(args.data_files, args.num_proc, args.cache_dir)
        print(f"{source_name(args.data_files)}: {len(dataset):,} documents")

        # 3. split the documents at random, as nanoGPT's train_test_split (its 'test' is our 'val')
        train, val = random_split(len(dataset), args.val_fraction, args.seed)
        split_rows = {"train": train, "val": val}  # row numbers in `dataset`, in the split's order
        split_dataset = {split: dataset.select(rows) for split, rows in split_rows.items()}

        # 4. tokenize every document, a batch at a time (nanoGPT's `process`)
        tokenized = {
            split: documents.map(
                tokenize,
                fn_kwargs={"encoding": encoding, "eot_id": eot_id, "dtype": dtype},
                input_columns="text",
                batched=True,
                remove_columns=documents.column_names,
                num_proc=args.num_proc,
                desc=f"tokenizing {split}",
                **ids_cache_options(documents, tokenizer, dtype),
            )
            for split, documents in split_dataset.items()
        }

        # 5. stream each split's ids into its .bin file, checking on the way that they stand for
        #    every byte of the texts (a trained tokenizer's own pattern may leave characters out)
        coverage = TextCoverage(dataset, encoding, tokenizer, source_name(args.data_files))
        split_tokens = {}
        for split, documents in tokenized.items():
            num_tokens = count_tokens(documents)
            print(f"{split} has {len(documents):,} documents, {num_tokens:,} tokens")
            bin_path = out / f"{split}.bin"
            split_tokens[split] = write_bin(
                bin_path,
                coverage.checked(stream_ids(documents), documents, split_rows[split]),
                dtype,
                vocab_size,
                num_tokens,
                f"writing {bin_path}",
            )

        # 6. the metadata; meta.pkl only for a trained tokenizer (nanoGPT reads vocab_size from it)
        write_meta(
            out,
            script="data/openwebtext/prepare.py",
            tokenizer=tokenizer,
            dtype=dtype,
            split_tokens=split_tokens,
            source=source_record(args.data_files, len(dataset)),
            split={
                "rule": SPLIT_RULE,
                "val_fraction": args.val_fraction,
                "seed": args.seed,
                "numpy": np.__version__,  # the permutation is numpy's generator stream
                "documents": {"train": len(train), "val": len(val)},
            },
            options={
                "tokenizer": None if args.tokenizer is None else str(args.tokenizer),
                "num_proc": args.num_proc,
            },
        )
        wrote_pkl = write_bpe_meta_pkl(out, tokenizer, encoding)
        meta_files = "meta.json, meta.pkl" if wrote_pkl else "meta.json"
    print(f"wrote train.bin, val.bin ({dtype.name}), {meta_files} to {out_dir}")


def parse_args():
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    add = parser.add_argument
    files_help = "local .parquet, .jsonl/.json ('text' field) or .txt (one document each) files"
    add("--data-files", nargs="+", metavar="PATH|GLOB", help=f"{files_help} (default: the hub)")
    add("--tokenizer", type=Path, help="a file written by train_tokenizer.py (default: GPT-2)")
    add("--out-dir", type=Path, default=Path(__file__).parent, help="default: beside this script")
    add(
        "--num-proc", type=positive_int, default=default_num_proc(), help="default: CPUs, at most 8"
    )
    add("--val-fraction", type=fraction, default=VAL_FRACTION, help="share of the documents in val")
    add("--seed", type=seed, default=SEED, help="seed of the random split")
    add("--cache-dir", type=Path, help="datasets' cache (default: $HF_DATASETS_CACHE)")
    add_datatrove_arguments(parser)  # --engine datatrove, --executor, --tasks, --workers...
    args = parser.parse_args()
    check_datatrove_arguments(parser, args)
    return args


def default_num_proc():
    """The CPUs this process may use, at most 8 (nanoGPT's default): 2 on a 2-core machine."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(8, cpus or 1))


if __name__ == "__main__":
    run_main(main)

# For OpenWebText at the pinned revision (nanoGPT's figures):
# tokenizer: gpt2 (50,257 tokens, end of text = 50256)
# Skylion007/openwebtext@79d93d786212: 8,013,769 documents
# train has 8,009,762 documents, ~9,035,582,198 tokens (train.bin ~17 GB)
# val has 4,007 documents, ~4,434,897 tokens (val.bin ~8.5 MB)
