"""nanochat's tokenizer job: train_tokenizer.py against rustbpe (nanochat's trainer), time and
memory.

    pip install rustbpe    # the reference; used only here, never by the project
    python bench/bench_train_nanochat.py linux20.txt linux200.txt linux.txt [--runs 3]

The files are text whose documents are joined by <|endoftext|> (the Linux source corpus: each
file of the tree a document, 20 MB, 200 MB and 1.44 GB). Both learn nanochat's 32,503 merges
(its vocabulary of 32,768 less the 256 bytes and its 9 special tokens) with nanochat's pattern,
on every document whole (neither cuts a document at nanochat's 10,000 characters: our
train_tokenizer.py has no such option, so rustbpe is not given it either):

- ours: `python train_tokenizer.py --input FILE --pattern nanochat --vocab-size 32760
  --special-tokens "<|endoftext|>" --out TOKENIZER`, as a user runs it (the file split into
  documents at <|endoftext|>, which takes the last id; the tokenizer file written);
- rustbpe: `rustbpe.Tokenizer().train_from_iterator(documents, 32759, pattern=SPLIT_PATTERN)`, as
  nanochat's tok_train.py calls it (its vocab_size counts no special token), the documents read
  from the file in 1 MB blocks and cut at <|endoftext|>.

Each run is a fresh process under /usr/bin/time, ours and rustbpe alternating, --runs times per
file; the medians and the ratios ours / rustbpe are printed (below 1: ours is faster or smaller).
Memory is the peak of the whole process tree, sampled from /proc every 20 ms: its PSS (a page
the workers share with their parent, forked, is counted once, split between them) and its RSS
summed over the processes (a shared page counted in each); and /usr/bin/time's max RSS of the
largest single process. The ratio is taken on the tree's PSS. The CPU seconds (user and
system, all processes) are printed too: on a shared machine they move less than wall time.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from safety import ArgumentParser

REPO = Path(__file__).resolve().parents[1]
MERGES = 32768 - 256 - 9  # nanochat's vocabulary, less the bytes and its 9 special tokens

RUSTBPE = """
import sys
import rustbpe
from bpe import NANOCHAT_PATTERN

def documents(path, eot="<|endoftext|>"):
    rest = ""
    with open(path, encoding="utf-8") as file:
        while block := file.read(1 << 20):
            *done, rest = (rest + block).split(eot)
            yield from done
    if rest:
        yield rest

tokenizer = rustbpe.Tokenizer()
tokenizer.train_from_iterator(
    documents(sys.argv[1]), 256 + int(sys.argv[2]), pattern=NANOCHAT_PATTERN
)
assert len(tokenizer.get_mergeable_ranks()) == 256 + int(sys.argv[2])
"""


def ours(path, out):
    return [sys.executable, str(REPO / "train_tokenizer.py"), "--input", str(path)] + [
        "--pattern",
        "nanochat",
        "--vocab-size",
        str(256 + MERGES + 1),
        "--special-tokens",
        "<|endoftext|>",
        "--out",
        str(out),
    ]


def rustbpe(path, _):
    return [sys.executable, "-c", RUSTBPE, str(path), str(MERGES)]


def tree_memory(root):
    """(PSS, RSS) in bytes of `root` and its descendants now, summed, from /proc."""
    children = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    pss = rss = 0
    stack = [root]
    while stack:
        pid = stack.pop()
        stack += children.get(pid, [])
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1]) * 1024
                elif line.startswith("Rss:"):
                    rss += int(line.split()[1]) * 1024
        except OSError:
            pass
    return pss, rss


def measure(command):
    """Run `command` -> (wall s, peak tree PSS, peak tree RSS, max RSS of its largest process,
    CPU s: user and system, of all its processes).

    Under /usr/bin/time, which starts the command from its own small process: a child forked
    from this one would start with this process's peak RSS as its own (Linux keeps it across exec).
    """
    report = Path(tempfile.mkstemp(suffix=".time")[1])
    timed = ["/usr/bin/time", "-f", "%M %U %S", "-o", str(report), *command]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    start = time.perf_counter()
    process = subprocess.Popen(
        timed, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=REPO
    )
    peak, done = [0, 0], threading.Event()

    def sample():
        while not done.is_set():
            pss, rss = tree_memory(process.pid)
            peak[:] = max(peak[0], pss), max(peak[1], rss)
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stderr = process.communicate()[1].decode(errors="replace")
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    if process.returncode != 0:
        sys.exit(f"error: {' '.join(command[:3])} failed:\n{stderr[-3000:]}")
    max_rss, user, system = report.read_text().split()[-3:]
    report.unlink()
    return wall, peak[0], peak[1], int(max_rss) * 1024, float(user) + float(system)


def main():
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "files", nargs="+", type=Path, help="text, documents joined by <|endoftext|>"
    )
    parser.add_argument("--runs", type=int, default=3, help="runs of each trainer per file")
    args = parser.parse_args()
    for path in args.files:
        if not path.is_file():
            parser.error(f"{path} is not a file")
    trainers = {"ours": ours, "rustbpe": rustbpe}
    header = (
        f"{'corpus':<14}{'MB':>7}{'load':>6}{'ours s':>8}{'rust s':>8}{'time':>7}"
        f"{'ours MB':>9}{'rust MB':>9}{'memory':>8}   ours / rust: RSS sum, largest RSS (MB); CPU"
    )
    print(header, flush=True)
    with tempfile.TemporaryDirectory() as folder:
        for path in args.files:
            load = os.getloadavg()[0]
            runs = {name: [] for name in trainers}
            for run in range(args.runs):
                for name, command in trainers.items():
                    figures = measure(command(path, Path(folder) / "tokenizer.json"))
                    runs[name].append(figures)
                    wall, pss, rss, largest, cpu = figures
                    print(
                        f"  {path.name} run {run + 1} {name}: {wall:.2f} s (CPU {cpu:.2f} s), PSS "
                        f"{pss / 1e6:.0f} MB, RSS sum {rss / 1e6:.0f} MB, "
                        f"largest {largest / 1e6:.0f} MB",
                        file=sys.stderr,
                        flush=True,
                    )
            med = {
                name: [statistics.median(column) for column in zip(*figures)]
                for name, figures in runs.items()
            }
            (our_s, our_pss, our_rss, our_max, our_cpu) = med["ours"]
            (rust_s, rust_pss, rust_rss, rust_max, rust_cpu) = med["rustbpe"]
            print(
                f"{path.name:<14}{path.stat().st_size / 1e6:>7.0f}{load:>6.2f}{our_s:>8.2f}"
                f"{rust_s:>8.2f}{our_s / rust_s:>6.2f}x{our_pss / 1e6:>9.0f}{rust_pss / 1e6:>9.0f}"
                f"{our_pss / rust_pss:>7.2f}x   {our_rss / 1e6:.0f} / {rust_rss / 1e6:.0f}, "
                f"{our_max / 1e6:.0f} / {rust_max / 1e6:.0f}; CPU s {our_cpu:.1f} / {rust_cpu:.1f}",
                flush=True,
            )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
