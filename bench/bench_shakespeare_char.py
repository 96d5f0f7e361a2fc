"""Whole-script wall time of data/shakespeare_char/prepare.py against nanoGPT's original method.

    python bench/bench_shakespeare_char.py [--runs 9]

Both run as fresh processes (start-up and imports count: that is most of the time) on the same
Tiny Shakespeare, alternating, with input.txt already in place. nanoGPT's method is its
prepare.py verbatim: read, sorted(set(data)), list-comprehension encode, np.array, tofile, pickle.
Prints the median of each, and ours / nanoGPT's (the issue's target: at most 0.6).
"""

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import prepare_common

REPO = Path(__file__).resolve().parents[1]

NANOGPT_PREPARE = """
import os
import pickle
import requests
import numpy as np

input_file_path = os.path.join(os.path.dirname(__file__), 'input.txt')
with open(input_file_path, 'r') as f:
    data = f.read()
print(f"length of dataset in characters: {len(data):,}")
chars = sorted(list(set(data)))
vocab_size = len(chars)
print("all the unique characters:", ''.join(chars))
print(f"vocab size: {vocab_size:,}")
stoi = { ch:i for i,ch in enumerate(chars) }
itos = { i:ch for i,ch in enumerate(chars) }
def encode(s):
    return [stoi[c] for c in s]
n = len(data)
train_data = data[:int(n*0.9)]
val_data = data[int(n*0.9):]
train_ids = encode(train_data)
val_ids = encode(val_data)
print(f"train has {len(train_ids):,} tokens")
print(f"val has {len(val_ids):,} tokens")
train_ids = np.array(train_ids, dtype=np.uint16)
val_ids = np.array(val_ids, dtype=np.uint16)
train_ids.tofile(os.path.join(os.path.dirname(__file__), 'train.bin'))
val_ids.tofile(os.path.join(os.path.dirname(__file__), 'val.bin'))
meta = {'vocab_size': vocab_size, 'itos': itos, 'stoi': stoi}
with open(os.path.join(os.path.dirname(__file__), 'meta.pkl'), 'wb') as f:
    pickle.dump(meta, f)
"""


def wall_time(command):
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        nanogpt_dir, ours_dir = Path(tmp, "nanogpt"), Path(tmp, "ours")
        nanogpt_dir.mkdir()
        ours_dir.mkdir()
        prepare_common.fetch(prepare_common.TINY_SHAKESPEARE, ours_dir / "input.txt")
        shutil.copy(ours_dir / "input.txt", nanogpt_dir / "input.txt")
        (nanogpt_dir / "prepare.py").write_text(NANOGPT_PREPARE)
        nanogpt_cmd = [sys.executable, str(nanogpt_dir / "prepare.py")]
        ours_cmd = [
            sys.executable,
            str(REPO / "data" / "shakespeare_char" / "prepare.py"),
            "--out-dir",
            str(ours_dir),
        ]
        wall_time(nanogpt_cmd), wall_time(ours_cmd)  # warm the file cache
        nanogpt_times, ours_times = [], []
        for _ in range(args.runs):
            nanogpt_times.append(wall_time(nanogpt_cmd))
            ours_times.append(wall_time(ours_cmd))
        for name in ("train.bin", "val.bin"):
            same = (nanogpt_dir / name).read_bytes() == (ours_dir / name).read_bytes()
            print(f"{name} byte-identical to nanoGPT's: {same}")
    nanogpt_median, ours_median = statistics.median(nanogpt_times), statistics.median(ours_times)
    print(f"{'':24}{'median s':>10}{'min s':>10}")
    print(f"{'nanoGPT prepare.py':24}{nanogpt_median:10.3f}{min(nanogpt_times):10.3f}")
    print(f"{'ours':24}{ours_median:10.3f}{min(ours_times):10.3f}")
    print(f"ratio ours / nanoGPT (median): {ours_median / nanogpt_median:.2f}  (target <= 0.60)")


if __name__ == "__main__":
    main()
