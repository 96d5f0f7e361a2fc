"""
Prepare FineWeb-Edu (or FineWeb) as llm.c, modded-nanogpt and build-nanogpt read it: every
document is <|endoftext|> followed by its GPT-2 ids; the documents, in order, fill shards of
100M tokens (a document may straddle two); shard 0 is val, the others train. Byte for byte what
llm.c's dev/data/fineweb.py (--format llmc: a 256-int32 header, then uint16 ids) and
build-nanogpt's fineweb.py (--format npy: np.save) write from the same documents.
Unlike theirs: the hub's files at a pinned revision (or --data-files), a --tokenizer of
train_tokenizer.py (uint32 shards past 65,536 ids), a folder that changes as one transaction.
prepare_datatrove.py beside it: the same shards from datatrove's tasks (a cluster).

    python data/fineweb/prepare.py --data-files 'my_docs/*.parquet' --shard-size 1000000
"""

from pathlib import Path

import numpy as np

from prepare_common import (
    FINEWEB_PREFIXES,
    FINEWEB_SPLIT_RULE,
    bpe_encoding,
    fineweb_arguments,
    fineweb_hub,
    id_batches,
    ids_cache_options,
    llmc_names,
    load_documents,
    output_folder,
    run_main,
    shard_dtype,
    source_name,
    source_record,
    tokenize_documents,
    write_meta,
    write_shards,
)


def main():
    args = fineweb_arguments(__doc__, out_dir=Path(__file__).parent).parse_args()
    # 1. the tokenizer, and its end-of-text id that starts every document
    encoding, tokenizer = bpe_encoding(args.tokenizer, need_eot=True)
    vocab_size, eot_id = tokenizer["vocab_size"], tokenizer["eot_id"]
    dtype = shard_dtype(vocab_size)  # uint16 for GPT-2; llm.c's uint32 variant past 65,536
    print(f"tokenizer: {tokenizer['name']} ({vocab_size:,} tokens, end of text = {eot_id})")

    with output_folder(args.out_dir) as out:  # written in `out`, moved into out_dir together
        # 2. the documents, in order: FineWeb(-Edu)'s sample from the hub, or local files
        hub = fineweb_hub(args.type, args.sample)  # pinned (prepare_common.FINEWEB_REPOS)
        dataset = load_documents(args.data_files, args.num_proc, args.cache_dir, hub)
        print(
            f"{source_name(args.data_files, hub)}: {len(dataset):,} document{'s' * (len(dataset) != 1)}"
        )

        # 3. tokenize every document: <|endoftext|> first, then its ids (llm.c's `tokenize`)
        where = f"{source_name(args.data_files, hub)}, document"
        options = dict(encoding=encoding, tokenizer=tokenizer, dtype=dtype, where=where)
        tokenized = dataset.map(
            process, fn_kwargs=options, input_columns="text", with_indices=True, batched=True,
            remove_columns=dataset.column_names, desc="tokenizing",
            num_proc=min(args.num_proc, len(dataset)),  # datasets warns of more processes than rows
            **ids_cache_options(dataset, tokenizer, dtype, process),
        )  # fmt: skip
        num_tokens = int(tokenized.with_format("arrow")["len"].to_numpy().sum())
        count = -(-num_tokens // args.shard_size)
        print(f"{num_tokens:,} tokens: {count:,} shard{'s' * (count != 1)}")

        # 4. cut the stream of ids every shard_size tokens: shard 0 is val, the others train
        names = llmc_names(FINEWEB_PREFIXES[args.format][args.type])
        ids = id_batches(tokenized)
        shards = write_shards(out, ids, names, args.shard_size, dtype, vocab_size, args.format)

        # 5. the metadata, written last: meta.json lists every shard, its tokens and sha256
        write_meta(
            out,
            script="data/fineweb/prepare.py",
            tokenizer=tokenizer,
            dtype=dtype,
            shards=shards,
            shard_format=args.format,
            source=source_record(args.data_files, len(dataset), hub),
            split={"rule": FINEWEB_SPLIT_RULE, "shard_size": args.shard_size},
            options={"tokenizer": args.tokenizer and str(args.tokenizer), "num_proc": args.num_proc},
        )  # fmt: skip
    print(f"wrote {len(shards):,} shards ({dtype.name}) and meta.json to {args.out_dir}")


def process(texts, indices, encoding, tokenizer, dtype, where):
    """llm.c's `tokenize` for a batch: each document's ids with the end-of-text id FIRST (nanoGPT
    puts it last: the same ids, rolled by one); a trained tokenizer whose pattern leaves
    characters out is refused (naming the document)."""
    out = tokenize_documents(texts, indices, encoding, tokenizer, dtype, where)  # [ids..., eot]
    out["ids"] = [np.roll(ids, 1) for ids in out["ids"]]  # [eot, ids...]
    return out


if __name__ == "__main__":
    run_main(main)

# FineWeb-Edu sample-10BT at the pinned revision (not run here: 14 files, 28.5 GB of parquet):
# tokenizer: gpt2 (50,257 tokens, end of text = 50256)
# HuggingFaceFW/fineweb-edu@87f09149ef47 (sample-10BT): 9,672,101 documents
# about 10B tokens: about 100 shards (build-nanogpt's comment: "total of 100 shards")
# each full shard: 200,001,024 bytes (llmc) or 200,000,128 bytes (npy)
