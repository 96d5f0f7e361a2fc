"""BPE training at corpus scale: time and peak memory of ours against Hugging Face tokenizers.

    pip install tokenizers            # the reference; used only here, never by the project
    python bench/bench_train_scale.py [--runs 3] [--docs20 ../shared/bench/docs20.txt]
        [--only docs20,x5,x15,zipf,runs] [--work-dir /tmp/bench_scale]
    python bench/bench_train_scale.py --only issue11     # issue 11's rows: docs20, x5, x15, zipf

Each trainer runs in a fresh process (ours: bpe.train_bpe_from_files, which streams the
files through worker processes; HF: models.BPE + ByteLevel(add_prefix_space=False) +
BpeTrainer, vocab_size, special_tokens=["<|endoftext|>"], min_frequency=0, training from the
files). Peak memory is the largest sum of the resident sizes of the process and all its
children, sampled every 20 ms from /proc. Ours and HF alternate, --runs times; medians and
ratios (ours / HF) are printed. The corpora are built in --work-dir (never committed):

- docs20: ../shared/bench/docs20.txt (20.9 MB), vocab 32,000; x5 and x15: the same file
  concatenated 5 and 15 times (105 MB, 314 MB): no new pretokens, so memory should stay flat.
- zipf 20 MB / 60 MB: generated text whose words are drawn from Zipf(1.3) over an unbounded
  set of made-up words (about as many distinct words as docs20 at 20 MB): new pretokens keep
  coming, so memory grows with the table. (Zipf(1.1) gives 720,000 distinct random-letter words
  in 20 MB, where every letter pair is in a large share of them: our pure-Python merge loop then
  takes minutes where HF's Rust takes seconds.)
- runs: one line of 200,000 and of 2,000,000 "x", vocab 300 (issue 8: training is linear in
  the length of a pretoken). HF takes minutes on the 2,000,000 case: --timeout stops it.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

EOT = "<|endoftext|>"
REPO = Path(__file__).resolve().parents[1]
DOCS20 = REPO.parent / "shared" / "bench" / "docs20.txt"

OURS = """
import sys
from bpe import train_bpe_from_files
train_bpe_from_files([sys.argv[1]], int(sys.argv[2]), ["<|endoftext|>"])
"""

HF = """
import sys
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
tokenizer = Tokenizer(models.BPE())
tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
trainer = trainers.BpeTrainer(
    vocab_size=int(sys.argv[2]), special_tokens=["<|endoftext|>"],
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False, min_frequency=0)
tokenizer.train([sys.argv[1]], trainer)
"""


def tree_rss(pid):
    """Resident bytes of the process `pid` and all its descendants (0 once it is gone)."""
    total = 0
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    todo += [int(child) for child in children.read().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def measure(program, path, vocab_size, timeout):
    """-> (wall seconds, peak resident bytes of the process tree) of one fresh run; a run
    still going after `timeout` seconds is stopped and counted as taking `timeout`."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", program, str(path), str(vocab_size)], env=env, cwd=REPO
    )
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss(process.pid))
        time.sleep(0.02)
        if time.perf_counter() - start > timeout:
            process.kill()
            process.wait()
            return float(timeout), peak
    seconds = time.perf_counter() - start
    if process.returncode != 0:
        raise SystemExit(f"error: the run on {path} failed (exit code {process.returncode})")
    return seconds, peak


def concatenated(source, times, folder):
    path = folder / f"{source.stem}_x{times}.txt"
    if not path.exists():
        partial = path.with_suffix(".partial")
        with open(partial, "wb") as out:
            for _ in range(times):
                with open(source, "rb") as part:
                    shutil.copyfileobj(part, out)
        partial.rename(path)
    return path


def zipf_corpus(megabytes, folder, seed=0):
    """Lines of 12 words drawn from Zipf(1.3) over made-up words, a document every 40 lines."""
    path = folder / f"zipf13_{megabytes}mb.txt"
    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    words = {}

    def word(rank):
        if rank not in words:  # a made-up word per rank: 2 to 11 letters from a hash of it
            code = (rank * 0x9E3779B97F4A7C15) % (1 << 64)
            words[rank] = "".join(letters[(code >> (5 * i)) % 26] for i in range(2 + rank % 10))
        return words[rank]

    written = 0
    partial = path.with_suffix(".partial")
    with open(partial, "w", encoding="utf-8") as out:
        while written < megabytes * 1_000_000:
            ranks = rng.zipf(1.3, size=12 * 40)
            lines = [
                " ".join(word(int(rank)) for rank in ranks[i : i + 12]).capitalize() + "."
                for i in range(0, len(ranks), 12)
            ]
            document = "\n".join(lines) + "\n" + EOT
            out.write(document)
            written += len(document)
    partial.rename(path)
    return path


def run_of_x(length, folder):
    path = folder / f"x_{length}.txt"
    if not path.exists():
        path.write_text("x" * length + "\n", encoding="utf-8")
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--docs20", default=str(DOCS20))
    parser.add_argument("--only", default="docs20,x5,x15,zipf,runs")
    parser.add_argument("--work-dir", default="/tmp/bench_train_scale")
    parser.add_argument(
        "--timeout", type=float, default=300, help="seconds before a run is stopped (shown >)"
    )
    args = parser.parse_args()
    folder = Path(args.work_dir)
    folder.mkdir(parents=True, exist_ok=True)
    docs20 = Path(args.docs20)
    wanted = set(args.only.replace("issue11", "docs20,x5,x15,zipf").split(","))
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    cases = []
    if "docs20" in wanted:
        cases.append(("docs20", docs20, 32000))
    if "x5" in wanted:
        cases.append(("docs20 x5", concatenated(docs20, 5, folder), 32000))
    if "x15" in wanted:
        cases.append(("docs20 x15", concatenated(docs20, 15, folder), 32000))
    if "zipf" in wanted:
        cases += [(f"zipf {mb} MB", zipf_corpus(mb, folder), 32000) for mb in (20, 60)]
    if "runs" in wanted:
        cases += [(f"{n:,} x", run_of_x(n, folder), 300) for n in (200_000, 2_000_000)]

    header = (
        f"{'corpus':<16} {'MB':>6} {'vocab':>6} {'HF s':>7} {'ours s':>7} {'time':>6} "
        f"{'HF MB':>7} {'ours MB':>8} {'memory':>7}"
    )
    print(header)
    print("-" * len(header), flush=True)
    for name, path, vocab_size in cases:
        hf_runs, our_runs = [], []
        for _ in range(args.runs):
            hf_runs.append(measure(HF, path, vocab_size, args.timeout))
            our_runs.append(measure(OURS, path, vocab_size, args.timeout))
        hf_s = statistics.median(s for s, _ in hf_runs)
        our_s = statistics.median(s for s, _ in our_runs)
        hf_mb = statistics.median(m for _, m in hf_runs) / 1e6
        our_mb = statistics.median(m for _, m in our_runs) / 1e6
        hf_text = f">{hf_s:.0f}" if hf_s >= args.timeout else f"{hf_s:.2f}"
        our_text = f">{our_s:.0f}" if our_s >= args.timeout else f"{our_s:.2f}"
        print(
            f"{name:<16} {path.stat().st_size / 1e6:>6.1f} {vocab_size:>6} {hf_text:>7} "
            f"{our_text:>7} {our_s / hf_s:>5.2f}x {hf_mb:>7.0f} {our_mb:>8.0f} "
            f"{our_mb / hf_mb:>6.2f}x",
            flush=True,
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
