"""
Prepare OpenWebText for GPT-2 pretraining, byte for byte as nanoGPT's data/openwebtext/prepare.py:
GPT-2's BPE, <|endoftext|> after each document, a random 0.05% (seed 2357) to val, uint16 ids.
Unlike nanoGPT's: the hub's parquet files at a pinned revision (or --data-files), a --tokenizer
of train_tokenizer.py, --format llmc for llm.c's shards, outputs that appear only when complete.

    python data/openwebtext/prepare.py --data-files 'my_docs/*.jsonl' --out-dir out
"""

from pathlib import Path

import numpy as np
from tqdm import tqdm

from prepare_common import (
    bpe_encoding,
    dtype_for_vocab,
    id_batches,
    ids_cache_options,
    load_documents,
    openwebtext_arguments,
    output_folder,
    random_split,
    run_main,
    source_name,
    source_record,
    split_record,
    tokenize_documents,
    write_bpe_meta_pkl,
    write_meta,
    write_split_shards,
)


def main():
    args = openwebtext_arguments(__doc__, out_dir=Path(__file__).parent).parse_args()
    # 1. the tokenizer, and its end-of-text id that closes every document
    encoding, tokenizer = bpe_encoding(args.tokenizer, need_eot=True)
    vocab_size, eot_id = tokenizer["vocab_size"], tokenizer["eot_id"]
    dtype = dtype_for_vocab(vocab_size)  # uint16 for GPT-2; uint32 (with a warning) past 65,536
    print(f"tokenizer: {tokenizer['name']} ({vocab_size:,} tokens, end of text = {eot_id})")

    with output_folder(args.out_dir) as out:  # written in `out`, moved into out_dir together
        # 2. the documents: OpenWebText from the hub, or local files
        dataset = load_documents(args.data_files, args.num_proc, args.cache_dir)
        print(
            f"{source_name(args.data_files)}: {len(dataset):,} document{'s' * (len(dataset) != 1)}"
        )

        # 3. split the documents at random, as nanoGPT's train_test_split (its 'test' is our 'val')
        train, val = random_split(len(dataset), args.val_fraction, args.seed)
        split_dataset = {"train": dataset.select(train), "val": dataset.select(val)}

        # 4. tokenize every document, a batch at a time (nanoGPT's `process`)
        tokenized = {}
        for split, dset in split_dataset.items():
            where = f"{source_name(args.data_files)}, {split} document"
            options = dict(encoding=encoding, tokenizer=tokenizer, dtype=dtype, where=where)
            tokenized[split] = dset.map(
                tokenize_documents, fn_kwargs=options, input_columns="text", with_indices=True, batched=True,
                remove_columns=dset.column_names, desc=f"tokenizing {split}",
                num_proc=min(args.num_proc, len(dset)),  # datasets warns of more processes than rows
                **ids_cache_options(dset, tokenizer, dtype),
            )  # fmt: skip

        # 5. concatenate all the ids of each split into one large file we can use for training
        #    (--format llmc: the same two streams cut into llm.c's shards instead, val first)
        split_tokens = {}
        for split, dset in tokenized.items():
            split_tokens[split] = int(dset.with_format("arrow")["len"].to_numpy().sum())
            documents = f"{len(dset):,} document{'s' * (len(dset) != 1)}"
            print(f"{split} has {documents}, {split_tokens[split]:,} tokens")
            if args.format == "bin":
                desc = f"writing {args.out_dir / f'{split}.bin'}"
                write_split(out / f"{split}.bin", dset, split_tokens[split], dtype, desc)
        shards = None
        if args.format == "llmc":
            ids = {split: id_batches(dset) for split, dset in tokenized.items()}
            shards = write_split_shards(out, "openwebtext", ids, args.shard_size, dtype, vocab_size)

        # 6. the metadata; meta.pkl only for a trained tokenizer (nanoGPT reads vocab_size from it)
        wrote_pkl = write_bpe_meta_pkl(out, tokenizer, encoding)
        write_meta(
            out,
            script="data/openwebtext/prepare.py",
            tokenizer=tokenizer,
            dtype=dtype,
            split_tokens=split_tokens,
            shards=shards,
            shard_format=args.format,
            source=source_record(args.data_files, len(dataset)),
            split=split_record(args.val_fraction, args.seed, {"train": len(train), "val": len(val)}),
            options={"tokenizer": args.tokenizer and str(args.tokenizer), "num_proc": args.num_proc},
        )  # fmt: skip
    meta_files = "meta.json, meta.pkl" if wrote_pkl else "meta.json"
    outputs = "train.bin, val.bin" if shards is None else f"{len(shards):,} llm.c shards"
    print(f"wrote {outputs} ({dtype.name}), {meta_files} to {args.out_dir}")


def write_split(filename, dset, arr_len, dtype, desc):
    """nanoGPT's loop: a split's ids into one file; each batch through a map of its own range."""
    np.memmap(filename, dtype=dtype, mode="w+", shape=(arr_len,)).flush()  # the file, full size
    idx = 0
    for arr_batch in tqdm(id_batches(dset), total=-(-len(dset) // 10_000), desc=desc):
        arr = np.memmap(filename, dtype, "r+", offset=idx * dtype.itemsize, shape=arr_batch.shape)
        arr[:] = arr_batch  # memory stays flat: only this batch's range is mapped
        idx += len(arr_batch)
    arr.flush()
    del arr  # closes the file before the commit renames it


if __name__ == "__main__":
    run_main(main)

# For OpenWebText at the pinned revision (nanoGPT's figures):
# tokenizer: gpt2 (50,257 tokens, end of text = 50256)
# Skylion007/openwebtext@79d93d786212: 8,013,769 documents
# train has 8,009,762 documents, ~9,035,582,198 tokens (train.bin ~17 GB)
# val has 4,007 documents, ~4,434,897 tokens (val.bin ~8.5 MB)
