"""Benchmark: data/openwebtext/prepare.py against nanoGPT's method, side by side, on a local corpus.

The corpus: ../shared/bench/docs20.txt (~20 MB) cut at line ends into 20,000 documents, written
as 4 .jsonl files in a temporary folder. Both scripts run as subprocesses with 2 processes and a
fresh datasets cache each:

- reference: tests/references/nanogpt_openwebtext.py, nanoGPT's code (int64 lists in the datasets
  cache, the 1,024-shard concatenate loop into a memmap);
- ours: data/openwebtext/prepare.py --data-files ...

Printed: wall time of each whole script, the ratio ours/reference, peak RSS, the size of each
datasets cache, and whether the .bin files are byte-identical. Then the writers alone, at a quarter
of the corpus and at the whole corpus, each in a fresh process: the growth of peak RSS while
writing (VmHWM, reset through /proc/self/clear_refs) shows whether the writer's memory depends on
the corpus size.

The split uses --val-fraction 0.06 (1,200 val documents) for both: with nanoGPT's 0.0005 the val
split has 10 documents, fewer than its 1,024 shards, and nanoGPT's loop crashes on it.

    NANOGPT_DATA_MIRROR=../shared/mirror python bench/bench_openwebtext.py

Nothing to install beyond the project's dependencies: the reference is nanoGPT's own code on
the same `datasets` and `tiktoken`.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bpe import EOT
from safety import ArgumentParser

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "bench" / "docs20.txt"
NUM_DOCUMENTS, NUM_FILES, NUM_PROC, VAL_FRACTION = 20_000, 4, 2, 0.06

# Run in a fresh process: write one split's .bin with one writer, report the RSS growth meanwhile.
WRITER_PROBE = r"""
import sys, numpy as np, datasets
from functools import partial
from prepare_common import tokenize_documents
from formats.tokenizers import gpt2_encoding
writer, out, files = sys.argv[1], sys.argv[2], sys.argv[3:]
datasets.disable_progress_bars()
enc = gpt2_encoding()
docs = datasets.load_dataset("json", data_files=files, split="train")
if writer == "ours":
    features = datasets.Features(
        {"ids": datasets.List(datasets.Value("uint16")), "len": datasets.Value("int64")}
    )
    dset = docs.map(
        partial(
            tokenize_documents,
            encoding=enc,
            tokenizer={"kind": "tiktoken", "eot_id": 50256},
            dtype=np.dtype("uint16"),
            where="document",
        ),
        input_columns="text", with_indices=True,
        batched=True, remove_columns=["text"], features=features, num_proc=2,
    )
else:
    def process(example):
        ids = enc.encode_ordinary(example["text"]); ids.append(enc.eot_token)
        return {"ids": ids, "len": len(ids)}
    dset = docs.map(process, remove_columns=["text"], num_proc=2)

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024

open("/proc/self/clear_refs", "w").write("5")  # reset VmHWM to the current RSS
before = status("VmRSS")
if writer == "ours":  # data/openwebtext/prepare.py's loop: a batch of documents at a time
    arr = np.memmap(
        out, dtype=np.uint16, mode="w+",
        shape=(int(dset.with_format("arrow")["len"].to_numpy().sum()),),
    )
    n = 0
    for batch in dset.with_format("arrow").iter(batch_size=10_000):
        arr_batch = batch["ids"].combine_chunks().flatten().to_numpy()
        arr[n : n + len(arr_batch)] = arr_batch
        n += len(arr_batch)
    arr.flush()
else:
    arr_len = np.sum(dset["len"], dtype=np.uint64)
    arr = np.memmap(out, dtype=np.uint16, mode="w+", shape=(arr_len,))
    idx = 0
    for batch_idx in range(1024):
        batch = dset.shard(num_shards=1024, index=batch_idx, contiguous=True).with_format("numpy")
        arr_batch = np.concatenate(batch["ids"])
        arr[idx : idx + len(arr_batch)] = arr_batch
        idx += len(arr_batch)
    arr.flush()
    n = idx
print(n, status("VmHWM") - before)
"""


def build_corpus(folder, num_documents=NUM_DOCUMENTS, num_files=NUM_FILES):
    """Cut docs20.txt at the line ends nearest to equal steps into documents; write them
    as .jsonl."""
    text = CORPUS.read_text(encoding="utf-8").replace(EOT, "\n")
    cuts = [0]
    for k in range(1, num_documents):
        cut = text.find("\n", k * len(text) // num_documents) + 1
        if cut > cuts[-1]:
            cuts.append(cut)
    cuts.append(len(text))
    documents = [text[a:b] for a, b in zip(cuts, cuts[1:]) if a < b]
    files = []
    per_file = -(-len(documents) // num_files)
    for i in range(num_files):
        path = Path(folder) / f"docs-{i:02d}.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for document in documents[i * per_file : (i + 1) * per_file]:
                f.write(json.dumps({"text": document}) + "\n")
        files.append(str(path))
    return files, len(documents), len(text.encode())


def run(command, cache_dir):
    """Run a command with its own datasets cache; return (seconds, peak RSS bytes of its largest
    process)."""
    env = dict(os.environ, HF_DATASETS_CACHE=str(cache_dir))
    start = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    stderr = process.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{command[1]} failed:\n{stderr[-3000:]}")
    return seconds, usage.ru_maxrss * 1024


def folder_bytes(folder):
    return sum(path.stat().st_size for path in Path(folder).rglob("*") if path.is_file())


def tokenized_bytes(folder):
    """The size of .map's output files (named cache-*.arrow by datasets), without the loaded
    text."""
    return sum(path.stat().st_size for path in Path(folder).rglob("cache-*.arrow"))


def writer_growth(writer, files, out, cache_dir):
    env = dict(os.environ, HF_DATASETS_CACHE=str(cache_dir))
    result = subprocess.run(
        [sys.executable, "-c", WRITER_PROBE, writer, str(out), *files],
        env=env,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        sys.exit(f"writer probe {writer} failed:\n{result.stderr[-3000:]}")
    tokens, growth = map(int, result.stdout.split()[-2:])
    return tokens, growth


def main():
    ArgumentParser(description=__doc__.split("\n")[0]).parse_args()  # --help, and no options
    if not CORPUS.is_file():
        sys.exit(f"{CORPUS} is missing (see ../shared/README.md)")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "corpus").mkdir()
        files, num_documents, num_bytes = build_corpus(tmp / "corpus")
        print(
            f"corpus: {num_documents:,} documents, {num_bytes / 1e6:.1f} MB "
            f"in {len(files)} .jsonl files; "
            f"num_proc {NUM_PROC}, val fraction {VAL_FRACTION}"
        )
        (tmp / "ref").mkdir()
        ref_seconds, ref_rss = run(
            [
                sys.executable,
                str(ROOT / "tests" / "references" / "nanogpt_openwebtext.py"),
                "--out-dir",
                str(tmp / "ref"),
                "--test-size",
                str(VAL_FRACTION),
                "--num-proc",
                str(NUM_PROC),
                *files,
            ],
            tmp / "cache-ref",
        )
        our_seconds, our_rss = run(
            [
                sys.executable,
                str(ROOT / "data" / "openwebtext" / "prepare.py"),
                "--data-files",
                *files,
                "--out-dir",
                str(tmp / "ours"),
                "--val-fraction",
                str(VAL_FRACTION),
                "--num-proc",
                str(NUM_PROC),
            ],
            tmp / "cache-ours",
        )
        identical = all(
            (tmp / "ref" / name).read_bytes() == (tmp / "ours" / name).read_bytes()
            for name in ("train.bin", "val.bin")
        )
        print(f"{'':28}{'nanoGPT':>12}{'ours':>12}{'ours/nanoGPT':>14}")
        print(
            f"{'whole script, wall (s)':28}{ref_seconds:12.2f}{our_seconds:12.2f}"
            f"{our_seconds / ref_seconds:14.2f}"
        )
        print(
            f"{'peak RSS, largest proc (MB)':28}{ref_rss / 1e6:12.0f}{our_rss / 1e6:12.0f}"
            f"{our_rss / ref_rss:14.2f}"
        )
        ref_cache, our_cache = folder_bytes(tmp / "cache-ref"), folder_bytes(tmp / "cache-ours")
        print(
            f"{'datasets cache, all (MB)':28}{ref_cache / 1e6:12.1f}{our_cache / 1e6:12.1f}"
            f"{our_cache / ref_cache:14.2f}"
        )
        ref_ids, our_ids = tokenized_bytes(tmp / "cache-ref"), tokenized_bytes(tmp / "cache-ours")
        print(
            f"{'  of it tokenized ids (MB)':28}{ref_ids / 1e6:12.1f}{our_ids / 1e6:12.1f}"
            f"{our_ids / ref_ids:14.2f}"
        )
        print(f"train.bin and val.bin byte-identical: {identical}")

        # the writers alone: does their memory grow with the corpus?
        quarter = files[:1]
        print("\nwriter alone, peak RSS growth while writing one .bin of all documents (MB):")
        print(f"{'':28}{'nanoGPT':>12}{'ours':>12}")
        for label, subset in ((f"1/{len(files)} corpus", quarter), ("whole corpus", files)):
            row = []
            for writer in ("nanogpt", "ours"):
                tokens, growth = writer_growth(
                    writer, subset, tmp / f"probe-{writer}.bin", tmp / f"cache-probe-{writer}"
                )
                row.append(growth)
            print(
                f"{label + f' ({tokens / 1e6:.1f}M tokens)':28}"
                f"{row[0] / 1e6:12.1f}{row[1] / 1e6:12.1f}"
            )


if __name__ == "__main__":
    main()
