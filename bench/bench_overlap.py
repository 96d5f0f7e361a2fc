"""Benchmark: `python prepare_common.py overlap` at two train sizes (10x apart), val fixed, against
the code of another checkout (`--reference DIR`: the code before, e.g. from `git worktree add
/tmp/before COMMIT`) on the same folders, and against reading the train files with np.fromfile.

The folder: raw uint16 files without meta.json (read with --boundary-id 50256 --boundary last
--dtype uint16), random ids in documents of about 1,000 tokens (geometric lengths), the EOT after
each; val of `--val-tokens`; train of `--train-tokens` and 10x that, each holding 1% of val's
documents again. Each run is a process of its own: its wall and CPU time, its peak memory (its
maximum resident set, from os.wait4), train tokens per wall second; the reference's the same,
the ratios, and whether every figure of the two JSON reports is the same (the near rule's
description aside); np.fromfile's tokens per second read in the same 1M-token blocks.

Whether ours runs compiled (dedup/compiled.py, numba installed: the fast-dedup extra) is printed.

    python bench/bench_overlap.py [--val-tokens 1000000] [--train-tokens 10000000] [--reference DIR]
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dedup.compiled import KERNELS  # noqa: E402
from inspection.overlap import BLOCK_TOKENS  # noqa: E402
from safety import ArgumentParser  # noqa: E402

EOT = 50256


def documents(rng, num_tokens, mean_length=1000):
    """Random uint16 ids, an EOT after each document of geometric length: about num_tokens."""
    lengths = rng.geometric(1 / mean_length, size=2 * num_tokens // mean_length + 10)
    lengths = lengths[: np.searchsorted(np.cumsum(lengths + 1), num_tokens)]
    ids = rng.integers(0, EOT, size=int(lengths.sum() + len(lengths)), dtype=np.uint16)
    ids[np.cumsum(lengths + 1) - 1] = EOT
    return ids


def write_folder(folder, val, train_tokens, rng):
    """val.bin, and train_000N.bin files of 10M tokens (1% of val's documents among them)."""
    folder.mkdir()
    val.tofile(folder / "val.bin")
    val_docs = np.split(val, np.flatnonzero(val == EOT) + 1)[:-1]
    written, shard = 0, 0
    while train_tokens - written >= 10_000:  # documents of about 1,000 tokens: stop near the size
        ids = documents(rng, min(10_000_000, train_tokens - written))
        copies = [val_docs[i] for i in rng.choice(len(val_docs), len(val_docs) // 100)]
        np.concatenate([ids, *copies]).tofile(folder / f"train_{shard:04d}.bin")
        written, shard = written + len(ids), shard + 1
    return sum(f.stat().st_size // 2 for f in folder.glob("train_*.bin"))


def run_overlap(folder, repo=REPO):
    """(wall seconds, CPU seconds, peak resident bytes, the JSON report) of one overlap process
    of the code in `repo`."""
    command = [sys.executable, str(repo / "prepare_common.py"), "overlap", str(folder), "--json"]
    command += ["--boundary-id", str(EOT), "--boundary", "last", "--dtype", "uint16"]
    paths = [str(repo), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(command, stdout=out, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        assert os.waitstatus_to_exitcode(status) == 0
        out.seek(0)
        report = json.loads(out.read())
    report["val_near_duplicates_in_train"].pop("rule")  # its description, not a figure
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, report  # Linux: KiB


def fromfile_seconds(folder):
    """Read every train file with np.fromfile, BLOCK_TOKENS at a time (what overlap's blocks do)."""
    start = time.perf_counter()
    for path in sorted(folder.glob("train_*.bin")):
        with open(path, "rb") as f:
            while len(np.fromfile(f, np.uint16, count=BLOCK_TOKENS)):
                pass
    return time.perf_counter() - start


def main():
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("--val-tokens", type=int, default=1_000_000)
    parser.add_argument("--train-tokens", type=int, default=10_000_000)
    parser.add_argument("--reference", type=Path, help="a checkout whose overlap to compare with")
    args = parser.parse_args()
    print(f"ours: {'compiled (numba)' if KERNELS is not None else 'numpy (numba not installed)'}")
    rng = np.random.default_rng(0)
    val = documents(rng, args.val_tokens)
    peaks = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in (args.train_tokens, 10 * args.train_tokens):
            folder = Path(tmp) / f"train{size}"
            tokens = write_folder(folder, val, size, rng)
            wall, cpu, memory, report = run_overlap(folder)
            peaks.append(memory)
            read = fromfile_seconds(folder)
            print(
                f"val {len(val):,} tokens, train {tokens:,} tokens: ours {wall:.1f} s "
                f"(CPU {cpu:.1f} s), {tokens / wall / 1e6:.2f}M train tokens/s, peak "
                f"{memory / 1e6:.0f} MB; np.fromfile {tokens / read / 1e6:,.0f}M tokens/s"
            )
            if args.reference:
                ref_wall, ref_cpu, ref_memory, ref_report = run_overlap(folder, args.reference)
                print(
                    f"  reference {ref_wall:.1f} s (CPU {ref_cpu:.1f} s), "
                    f"{tokens / ref_wall / 1e6:.2f}M train tokens/s, peak "
                    f"{ref_memory / 1e6:.0f} MB; ours / reference: wall {wall / ref_wall:.2f}x, "
                    f"CPU {cpu / ref_cpu:.2f}x, peak {memory / ref_memory:.2f}x; figures "
                    f"{'identical' if report == ref_report else 'DIFFERENT'}"
                )
        print(f"ours: peak memory at 10x the train tokens: {peaks[1] / peaks[0]:.2f}x")


if __name__ == "__main__":
    main()
