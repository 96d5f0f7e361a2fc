"""nanoGPT's data/openwebtext/prepare.py, as the reference for tests and benchmarks (not product
code).

The code is nanoGPT's, changed only where it must be to run here: the documents come from local
files (nanoGPT's `load_dataset("openwebtext")` needs the hub and a loading script that datasets
>= 4 refuses), the .bin files go to --out-dir, and GPT-2's files come through
formats.tokenizers.gpt2_encoding (the same encoding, offline). Everything else is as in nanoGPT:
Python lists of ids (int64 in the datasets cache) and the fixed 1,024-shard writing loop, which
crashes on a split with fewer documents than shards.

    python tests/references/nanogpt_openwebtext.py --out-dir DIR [--test-size 0.0005]
        [--num-proc 8] FILE ...
"""

import argparse
import os
from pathlib import Path

import numpy as np
from datasets import load_dataset
from tqdm import tqdm

from formats.tokenizers import gpt2_encoding

BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".txt": "text"}

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--test-size", type=float, default=0.0005)
    parser.add_argument("--num-proc", type=int, default=8)
    args = parser.parse_args()
    num_proc = args.num_proc
    num_proc_load_dataset = num_proc

    enc = gpt2_encoding()  # nanoGPT: tiktoken.get_encoding("gpt2")
    builder = BUILDERS[Path(args.files[0]).suffix]
    options = {"sample_by": "document"} if builder == "text" else {}
    # nanoGPT: dataset = load_dataset("openwebtext", num_proc=num_proc_load_dataset)
    dataset = load_dataset(
        builder,
        data_files={"train": args.files},
        num_proc=min(num_proc_load_dataset, len(args.files)),
        **options,
    )

    # --- from here on, nanoGPT's code ---
    split_dataset = dataset["train"].train_test_split(
        test_size=args.test_size, seed=2357, shuffle=True
    )
    split_dataset["val"] = split_dataset.pop("test")

    def process(example):
        ids = enc.encode_ordinary(example["text"])
        ids.append(enc.eot_token)
        out = {"ids": ids, "len": len(ids)}
        return out

    tokenized = split_dataset.map(
        process,
        remove_columns=["text"],
        desc="tokenizing the splits",
        num_proc=num_proc,
    )

    for split, dset in tokenized.items():
        arr_len = np.sum(dset["len"], dtype=np.uint64)
        filename = os.path.join(args.out_dir, f"{split}.bin")  # nanoGPT: os.path.dirname(__file__)
        dtype = np.uint16
        arr = np.memmap(filename, dtype=dtype, mode="w+", shape=(arr_len,))
        total_batches = 1024

        idx = 0
        for batch_idx in tqdm(range(total_batches), desc=f"writing {filename}"):
            batch = dset.shard(
                num_shards=total_batches, index=batch_idx, contiguous=True
            ).with_format("numpy")
            arr_batch = np.concatenate(batch["ids"])
            arr[idx : idx + len(arr_batch)] = arr_batch
            idx += len(arr_batch)
        arr.flush()
