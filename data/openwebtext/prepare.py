"""
Prepare the OpenWebText dataset for GPT-2 pretraining, as nanoGPT's data/openwebtext/prepare.py:
every document is encoded with GPT-2's BPE (`encode_ordinary`) and ends with <|endoftext|>
(50256); a random 0.05% of the documents (seed 2357) become val, the rest train; each split is
one file of uint16 ids. Given the same documents in the same order, train.bin and val.bin are
byte for byte what nanoGPT's script writes.

What is different from nanoGPT's script, and why:
- datasets >= 4 refuses the old `openwebtext.py` loading script (nanoGPT issue #633), so the
  hub's parquet files are read instead, at one pinned revision;
- the ids are kept as uint16 in the datasets cache (nanoGPT's Python lists become int64: ~72 GB
  of cache for OpenWebText instead of ~18 GB);
- the writer streams the tokenized Arrow column into the file a batch of tokens at a time, in
  bounded memory, instead of 1,024 shards (slow with datasets 5, and a crash when a split has
  fewer documents than shards); the file appears under its name only when complete;
- --data-files reads local files, --tokenizer encodes with a BPE trained by train_tokenizer.py.

    python data/openwebtext/prepare.py [--data-files PATH|GLOB ...] [--tokenizer FILE]
        [--out-dir DIR] [--num-proc N] [--val-fraction 0.0005] [--seed 2357] [--cache-dir DIR]
"""

import argparse
import glob
import math
import os
from pathlib import Path

import numpy as np

from prepare_common import (
    PrepareError,
    bpe_encoding,
    dtype_for_vocab,
    prepare_out_dir,
    run_main,
    write_bin,
    write_bpe_meta_pkl,
    write_meta,
)

SCRIPT_DIR = Path(__file__).resolve().parent
HUB_REPO = "Skylion007/openwebtext"
HUB_REVISION = "79d93d786212f7344586290adb811d4ae6a1762c"  # pinned: change here to follow the hub
HUB_CONFIG = (
    "plain_text"  # the folder of parquet files at that revision: 80 files, 8,013,769 documents
)
VAL_FRACTION, SEED = 0.0005, 2357  # nanoGPT's split
EOT = "<|endoftext|>"
TOKENS_PER_WRITE = 1 << 22  # ids written per batch: 8 MB of uint16, whatever the corpus size
# Which datasets builder reads which local files; .txt files are one document each.
BUILDERS = {
    ".parquet": ("parquet", {}),
    ".jsonl": ("json", {}),
    ".json": ("json", {}),
    ".txt": ("text", {"sample_by": "document"}),
}


def parse_args():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data-files",
        nargs="+",
        metavar="PATH|GLOB",
        help="local .parquet, .jsonl/.json (a 'text' field) or .txt (one document per file) "
        "files instead of OpenWebText from the Hugging Face hub",
    )
    parser.add_argument(
        "--tokenizer",
        type=Path,
        help="a tokenizer file written by train_tokenizer.py (default: GPT-2)",
    )
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=SCRIPT_DIR,
        help="where the outputs go (default: beside this script)",
    )
    parser.add_argument(
        "--num-proc",
        type=int,
        default=default_num_proc(),
        help="processes that load and tokenize (default: the number of CPUs, at most 8)",
    )
    parser.add_argument(
        "--val-fraction", type=float, default=VAL_FRACTION, help="share of the documents in val"
    )
    parser.add_argument("--seed", type=int, default=SEED, help="seed of the random split")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        help="datasets' cache for the loaded and tokenized Arrow files "
        "(default: $HF_DATASETS_CACHE)",
    )
    args = parser.parse_args()
    if args.num_proc < 1:
        parser.error(f"--num-proc must be at least 1, got {args.num_proc}")
    return args


def default_num_proc():
    """The CPUs this process may use, at most 8 (nanoGPT's default): 2 on a 2-core machine."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(8, cpus or 1))


# ---------------------------------------------------------------------------------------------
# 1. loading the documents


def hub_load_arguments():
    """What `datasets.load_dataset` is called with for OpenWebText from the hub.

    The repo's parquet files, read by datasets' own parquet builder at the pinned revision:
    nothing of the repo's old loading script is involved.
    -> ("parquet", {"data_files": {"train": "hf://datasets/Skylion007/openwebtext@79d9.../plain_text/*.parquet"}})
    """
    return "parquet", {
        "data_files": {"train": f"hf://datasets/{HUB_REPO}@{HUB_REVISION}/{HUB_CONFIG}/*.parquet"}
    }


def expand_data_files(patterns):
    """Each PATH|GLOB -> its files, sorted; in the order given: ["b.txt", "a/*.txt"] -> b.txt, a/1.txt, a/2.txt.

    Sorting makes the row order, and so the split and the .bin files, independent of the file
    system's listing order.
    """
    files = {}  # a dict keeps the first place of a file named twice
    for pattern in patterns:
        matches = sorted(glob.glob(os.path.expanduser(pattern), recursive=True))
        if not matches:
            raise PrepareError(f"--data-files {pattern} matches no file; check the path")
        files.update((path, None) for path in matches if path not in files and Path(path).is_file())
    files = list(files)
    kinds = {Path(path).suffix.lower() for path in files}
    if not kinds or not kinds <= BUILDERS.keys():
        unknown = sorted(kinds - BUILDERS.keys()) or ["no files"]
        raise PrepareError(
            f"--data-files must name .parquet, .jsonl, .json or .txt files; found {', '.join(unknown)}"
        )
    if len({BUILDERS[kind][0] for kind in kinds}) > 1:
        raise PrepareError(
            f"--data-files mixes {', '.join(sorted(kinds))} files; give files of one kind"
        )
    if all(holds_nothing(path) for path in files):
        raise PrepareError(
            f"--data-files names only empty files ({files[0]}, ...); there is nothing to prepare"
        )
    return files


def holds_nothing(path):
    """True for an empty file, or a parquet file of 0 rows (datasets 5 fails on one with an obscure error)."""
    if Path(path).stat().st_size == 0:
        return True
    if Path(path).suffix.lower() != ".parquet":
        return False
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path).metadata.num_rows == 0
    except Exception:  # not a parquet file: datasets will say so
        return False


def load_documents(data_files, num_proc, cache_dir):
    """The documents as a datasets.Dataset, from the hub or from local files, in a stable order."""
    import datasets

    cache_dir = None if cache_dir is None else str(cache_dir)
    if data_files is None:
        builder, kwargs = hub_load_arguments()
        try:
            return datasets.load_dataset(
                builder, split="train", num_proc=num_proc, cache_dir=cache_dir, **kwargs
            )
        except (
            Exception
        ) as exc:  # offline, DNS, HTTP, a moved revision: all end the same way for the user
            raise PrepareError(
                f"cannot load {HUB_REPO}@{HUB_REVISION[:12]} from the Hugging Face hub "
                f"({type(exc).__name__}: {exc}); to use local files instead, pass --data-files 'DIR/*.parquet'"
            ) from None
    files = expand_data_files(data_files)
    builder, options = BUILDERS[Path(files[0]).suffix.lower()]
    try:
        return datasets.load_dataset(
            builder,
            data_files={"train": files},
            split="train",
            cache_dir=cache_dir,
            num_proc=min(num_proc, len(files)),
            **options,
        )
    except (
        Exception
    ) as exc:  # a corrupt parquet file, invalid JSON, files with different columns...
        cause = exc.__cause__ or exc  # datasets wraps the telling error in a generic one
        detail = " ".join(f"{type(cause).__name__}: {cause}".split())
        raise PrepareError(
            f"datasets could not read --data-files {' '.join(data_files)} ({detail})"
        ) from None


def check_texts(dataset, source):
    """Refuse a dataset without a `text` column of strings, naming what is wrong and where."""
    if "text" not in dataset.column_names:
        raise PrepareError(
            f"{source} has no 'text' column; its columns are: {', '.join(dataset.column_names)}"
        )
    if len(dataset) == 0:
        raise PrepareError(f"{source} holds no documents; there is nothing to prepare")
    feature = dataset.features["text"]
    if getattr(feature, "dtype", None) in ("string", "large_string"):
        # only missing values can be wrong, and Arrow counts those without reading the texts
        column = dataset.with_format("arrow")["text"]
        bad = column.null_count
        first = int(np.argmax(column.is_null().to_numpy(zero_copy_only=False))) if bad else None
    else:
        bad, first = 0, None
        for start in range(0, len(dataset), 10_000):
            for offset, text in enumerate(dataset[start : start + 10_000]["text"]):
                if not isinstance(text, str):
                    bad += 1
                    first = start + offset if first is None else first
    if bad:
        raise PrepareError(
            f"{source}: {bad:,} of {len(dataset):,} documents have a missing or non-string "
            f"'text' (the first at row {first:,}); fix or drop those rows"
        )


# ---------------------------------------------------------------------------------------------
# 2. splitting, tokenizing, writing


def split_sizes(num_documents, val_fraction):
    """(train, val) document counts of datasets' train_test_split(test_size=val_fraction).

    10,000 documents, 0.0005 -> (9995, 5): val gets ceil(fraction * n), train the rest.
    """
    num_val = math.ceil(val_fraction * num_documents)
    return num_documents - num_val, num_val


def tokenize(texts, encoding, eot_id, dtype):
    """A batch of documents -> each one's ids followed by the end-of-text id, and their lengths.

    ["Hello world", "Hi"] -> {"ids": [[15496, 995, 50256], [17250, 50256]], "len": [3, 2]} (GPT-2)
    nanoGPT's per-document `process`, a batch at a time, with the ids as `dtype` arrays rather
    than int64 lists. It depends only on its arguments, so any worker can run it.
    """
    ids = [np.array(encoding.encode_ordinary(text) + [eot_id], dtype=dtype) for text in texts]
    return {"ids": ids, "len": [len(doc) for doc in ids]}


def token_stream(dataset):
    """A tokenized split's ids in order, as one flat array per Arrow record batch.

    The same ids as np.concatenate(dataset["ids"]), but read batch by batch from the datasets
    cache files (streamed, not memory-mapped), so memory holds one batch whatever the corpus size.
    `dataset` must be the output of .map (its rows are in file order, with no indices mapping).
    """
    import pyarrow as pa

    if not dataset.cache_files:  # an in-memory dataset (no cache): its table is already loaded
        for batch in dataset.data.to_batches():
            yield batch.column("ids").flatten().to_numpy(zero_copy_only=False)
        return
    for cache_file in dataset.cache_files:
        with pa.OSFile(cache_file["filename"]) as f:
            for batch in pa.ipc.open_stream(f):
                yield batch.column("ids").flatten().to_numpy(zero_copy_only=False)


def rebatch(arrays, size):
    """Regroup a stream of 1-D arrays into arrays of `size` items (the last one may be shorter).

    [1, 2, 3], [4], [5, 6, 7, 8] with size 3 -> [1, 2, 3], [4, 5, 6], [7, 8]
    The same items as np.concatenate(arrays) cut every `size`, holding about one batch at a time.
    """
    pending, count = [], 0
    for array in arrays:
        while count + len(array) >= size:
            take = size - count
            pending.append(array[:take])
            yield np.concatenate(pending)
            array, pending, count = array[take:], [], 0
        if len(array):
            pending.append(array)
            count += len(array)
    if count:
        yield np.concatenate(pending)


def main():
    args = parse_args()
    out_dir = prepare_out_dir(args.out_dir)
    import datasets
    from datasets.fingerprint import Hasher

    # 1. the tokenizer, and its end-of-text id that closes every document
    encoding, tokenizer = bpe_encoding(args.tokenizer)
    eot_id = tokenizer["eot_id"]
    if eot_id is None:
        raise PrepareError(
            f"--tokenizer {args.tokenizer} has no {EOT} special token; train one with "
            f"train_tokenizer.py --special-tokens '{EOT}'"
        )
    vocab_size = tokenizer["vocab_size"]
    dtype = dtype_for_vocab(
        vocab_size
    )  # uint16 for GPT-2; uint32 (with a warning) beyond 65,536 ids
    print(f"tokenizer: {tokenizer['name']} ({vocab_size:,} tokens, end of text = {eot_id})")

    # 2. the documents: OpenWebText from the hub, or local files
    source = " ".join(args.data_files) if args.data_files else f"{HUB_REPO}@{HUB_REVISION[:12]}"
    dataset = load_documents(args.data_files, args.num_proc, args.cache_dir)
    check_texts(dataset, source)
    print(f"{source}: {len(dataset):,} documents")

    # 3. split the documents at random, as nanoGPT: train_test_split, then 'test' becomes 'val'
    num_train, num_val = split_sizes(len(dataset), args.val_fraction)
    if not 0 < args.val_fraction < 1 or num_train <= 0:
        empty = "val" if args.val_fraction <= 0 else "train"
        raise PrepareError(
            f"--val-fraction {args.val_fraction} of {len(dataset):,} documents leaves {empty} empty; "
            f"choose a fraction that leaves at least one document on each side"
        )
    split_dataset = dataset.train_test_split(
        test_size=args.val_fraction, seed=args.seed, shuffle=True
    )
    split_dataset["val"] = split_dataset.pop("test")

    # 4. tokenize every document; the ids are stored as `dtype` in the datasets cache. The cache
    #    key (fingerprint) is made from what decides the result, the input split, `tokenize` and
    #    the tokenizer's sha256: datasets' own would pickle the whole vocabulary (~1 s per split).
    features = datasets.Features(
        {"ids": datasets.List(datasets.Value(dtype.name)), "len": datasets.Value("int64")}
    )
    tokenized = {
        split: documents.map(
            tokenize,
            fn_kwargs={"encoding": encoding, "eot_id": eot_id, "dtype": dtype},
            input_columns="text",
            batched=True,
            remove_columns=documents.column_names,
            features=features,
            num_proc=args.num_proc,
            new_fingerprint=Hasher.hash(
                [documents._fingerprint, tokenize, tokenizer["sha256"], eot_id, dtype.name]
            ),
            desc=f"tokenizing {split}",
        )
        for split, documents in split_dataset.items()
    }

    # 5. stream each split's ids into its .bin file
    split_tokens = {}
    for split in ("train", "val"):
        split_dataset = tokenized[split]
        num_tokens = int(split_dataset.with_format("arrow")["len"].to_numpy().sum())
        print(f"{split} has {len(split_dataset):,} documents, {num_tokens:,} tokens")
        split_tokens[split] = write_bin(
            out_dir / f"{split}.bin",
            rebatch(token_stream(split_dataset), TOKENS_PER_WRITE),
            dtype,
            vocab_size,
            expected_tokens=num_tokens,
            desc=f"writing {out_dir / f'{split}.bin'}",
        )

    # 6. the metadata; meta.pkl only for a trained tokenizer (nanoGPT's train.py reads vocab_size
    #    from it; without one, train.py and sample.py assume GPT-2)
    write_meta(
        out_dir,
        script="data/openwebtext/prepare.py",
        tokenizer=tokenizer,
        dtype=dtype,
        split_tokens=split_tokens,
        source=(
            {"files": args.data_files, "documents": len(dataset)}
            if args.data_files
            else {
                "repo": HUB_REPO,
                "revision": HUB_REVISION,
                "config": HUB_CONFIG,
                "documents": len(dataset),
            }
        ),
        split={
            "rule": "datasets train_test_split(shuffle=True), 'test' renamed 'val'",
            "val_fraction": args.val_fraction,
            "seed": args.seed,
            "documents": {"train": num_train, "val": num_val},
        },
        options={
            "tokenizer": None if args.tokenizer is None else str(args.tokenizer),
            "num_proc": args.num_proc,
        },
    )
    wrote_pkl = write_bpe_meta_pkl(out_dir, tokenizer, encoding)
    print(
        f"wrote train.bin, val.bin ({dtype.name}), meta.json{', meta.pkl' if wrote_pkl else ''} to {out_dir}"
    )


if __name__ == "__main__":
    run_main(main)

# For OpenWebText at the pinned revision (nanoGPT's README):
# tokenizer: gpt2 (50,257 tokens, end of text = 50256)
# Skylion007/openwebtext@79d93d786212: 8,013,769 documents
# train has 8,009,762 documents, ~9,035,582,198 tokens (train.bin ~17 GB)
# val has 4,007 documents, ~4,434,897 tokens (val.bin ~8.5 MB)
