"""Whole-script wall time of data/shakespeare_char/prepare.py against nanoGPT's original method.

    python bench/bench_shakespeare_char.py [--runs 9]

Both run as fresh processes (start-up and imports count: that is most of the time) on the same
Tiny Shakespeare, alternating, with input.txt already in place. nanoGPT's method is its
prepare.py verbatim (tests/references/nanogpt_shakespeare_char.py): read, sorted(set(data)),
list-comprehension encode, np.array, tofile, pickle. Prints the median of each, and ours / nanoGPT's
(the target: at most 1.0, no slower than nanoGPT's script).
"""

import argparse
import runpy
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from safety import ArgumentParser, fetch

TINY_SHAKESPEARE = runpy.run_path(
    str(Path(__file__).parents[1] / "data/shakespeare_char/prepare.py")
)["TINY_SHAKESPEARE"]  # the lesson's pin

REPO = Path(__file__).resolve().parents[1]

# nanoGPT's prepare.py, verbatim
NANOGPT_SCRIPT = REPO / "tests" / "references" / "nanogpt_shakespeare_char.py"


def wall_time(command):
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    parser = ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        nanogpt_dir, ours_dir = Path(tmp, "nanogpt"), Path(tmp, "ours")
        nanogpt_dir.mkdir()
        ours_dir.mkdir()
        fetch(TINY_SHAKESPEARE, ours_dir / "input.txt")
        shutil.copy(ours_dir / "input.txt", nanogpt_dir / "input.txt")
        nanogpt_cmd = [sys.executable, str(NANOGPT_SCRIPT), str(nanogpt_dir)]
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
    print(f"ratio ours / nanoGPT (median): {ours_median / nanogpt_median:.2f}  (target <= 1.0)")


if __name__ == "__main__":
    main()
