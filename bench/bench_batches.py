"""Time per batch of document_batch against the numpy part of nanoGPT's get_batch.

    python bench/bench_batches.py [--tokens 50000000] [--batches 2000]

A synthetic train split: random GPT-2 ids (uint16) in documents of log-normal lengths, about
1,000 tokens on average, each ending with EOT; batch 12 x block 1024, nanoGPT's defaults. Each
batch opens train.bin as train.py does (a fresh np.memmap); docs/bos_batches.md's change reads
train.docs.npy once, before the first batch. nanoGPT's
torch.randint is rng.integers, torch.stack np.stack: what is left is the numpy work both share.
The two alternate, batch by batch; prints the median of each and document_batch / get_batch, then
packing_report's figures for the split and the time it takes.
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from formats.shards import document_batch
from inspection.packing import best_fit_tokens_kept, document_lengths, packing_lines, packing_report
from safety import ArgumentParser

EOT, VOCAB_SIZE = 50256, 50257  # GPT-2's
BATCH_SIZE, BLOCK_SIZE = 12, 1024  # nanoGPT's train.py defaults


def write_split(folder, num_tokens, mean_length=1000, seed=0):
    """train.bin and train.docs.npy: random ids, documents of log-normal lengths (mean ~1,000)."""
    rng = np.random.default_rng(seed)
    lengths = rng.lognormal(mean=6.6, sigma=0.8, size=2 * num_tokens // mean_length)
    lengths = np.maximum(lengths * (mean_length / lengths.mean()), 2).astype(np.int64)
    ends = np.cumsum(lengths)
    ends = np.append(ends[ends < num_tokens], num_tokens)  # the last document is cut to fit
    data = rng.integers(EOT, size=num_tokens, dtype=np.uint16)
    data[ends - 1] = EOT  # nanoGPT's rule: each document ends with EOT
    data.tofile(folder / "train.bin")
    np.save(folder / "train.docs.npy", np.append(0, ends[:-1]).astype(np.uint64))


def nanogpt_batch(folder, rng):
    """nanoGPT's get_batch('train'), torch taken out (torch.randint -> rng.integers)."""
    data = np.memmap(folder / "train.bin", dtype=np.uint16, mode="r")
    ix = rng.integers(len(data) - BLOCK_SIZE, size=BATCH_SIZE)
    x = np.stack([(data[i : i + BLOCK_SIZE]).astype(np.int64) for i in ix])
    y = np.stack([(data[i + 1 : i + 1 + BLOCK_SIZE]).astype(np.int64) for i in ix])
    return x, y


def aligned_batch(folder, starts, rng):
    """docs/bos_batches.md's get_batch('train'), torch taken out."""
    data = np.memmap(folder / "train.bin", dtype=np.uint16, mode="r")
    return document_batch(data, starts, BATCH_SIZE, BLOCK_SIZE, rng)


def seconds(function, *args):
    start = time.perf_counter()
    function(*args)
    return time.perf_counter() - start


def main():
    parser = ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tokens", type=int, default=50_000_000)
    parser.add_argument("--batches", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_split(folder, args.tokens)
        starts = np.load(folder / "train.docs.npy")
        runs = {
            "get_batch": (nanogpt_batch, folder),
            "document_batch": (aligned_batch, folder, starts),
        }
        for function, *inputs in runs.values():  # warm up: the page cache, numpy's first calls
            for _ in range(20):
                function(*inputs, np.random.default_rng(0))
        times = {name: [] for name in runs}
        rngs = {name: np.random.default_rng(seed) for seed, name in enumerate(runs)}
        for _ in range(args.batches):
            for name, (function, *inputs) in runs.items():
                times[name].append(seconds(function, *inputs, rngs[name]))
        theirs, ours = (statistics.median(times[name]) * 1e6 for name in runs)
        print(f"split: {args.tokens:,} tokens, {len(starts):,} documents; batch 12 x block 1024")
        print(f"nanoGPT get_batch (numpy part): {theirs:,.0f} us per batch (median)")
        print(f"document_batch:                 {ours:,.0f} us per batch (median)")
        print(f"document_batch / get_batch:     {ours / theirs:.2f}")
        start = time.perf_counter()
        report = packing_report(args.tokens, starts, BLOCK_SIZE)
        print(f"packing_report: {time.perf_counter() - start:.2f} s")
        best_fit = best_fit_tokens_kept(document_lengths(args.tokens, starts), BLOCK_SIZE)
        print(*packing_lines(report, BLOCK_SIZE, best_fit), sep="\n")


if __name__ == "__main__":
    main()
