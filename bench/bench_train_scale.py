r"""BPE training at corpus scale: time and peak memory of ours against HF tokenizers and rustbpe.

    pip install tokenizers rustbpe    # the references; used only here, never by the project
    python bench/bench_train_scale.py [--runs 3] [--docs20 ../shared/bench/docs20.txt]
        [--only docs20,x5,x15,zipf,runs,nanochat] [--patterns gpt2,gpt4,nanochat]
        [--trainers ours,hf,rustbpe] [--work-dir /tmp/bench_scale]
    python bench/bench_train_scale.py --only issue11     # issue 11's rows: docs20, x5, x15, zipf
    python bench/bench_train_scale.py --only issue19     # issue 19's: docs20, x15, zipf20, nanochat
    python bench/bench_train_scale.py --quick            # docs20, three patterns, one run

Each trainer runs in a fresh process, --runs times, the trainers alternating; medians and the
ratios ours / HF and ours / rustbpe are printed, with the load average at the start of each row.

- ours: documents.corpus.train_bpe_from_files (the files streamed through worker processes),
  special token <|endoftext|>, vocab_size in all.
- HF: models.BPE + BpeTrainer(vocab_size, special_tokens=["<|endoftext|>"], min_frequency=0,
  the 256 bytes as initial alphabet), training from the files. GPT-2's pattern is ByteLevel's
  own regex; another pattern is Split(Regex(pattern), "isolated") then ByteLevel without its
  regex, with GPT-4's `\p{N}{1,3}+` written `\p{N}{1,3}` (Oniguruma reads `{1,3}+` as a repeat
  of the group, not as possessive; the two are the same in Python's regex).
- rustbpe (nanochat's trainer): Tokenizer.train_from_iterator(documents, vocab_size - 1,
  pattern=...), the documents read from the file in 1 MB blocks and cut at <|endoftext|> (which
  rustbpe does not know; nanochat also feeds it documents), <|endoftext|> the last id after.

Peak memory is the largest sum of the resident sizes of the process and all its children
(workers, threads are in their process), sampled every 20 ms from /proc. The corpora are built
in --work-dir (never committed):

- docs20: ../shared/bench/docs20.txt (20.9 MB), vocab 32,000; x5 and x15: the same file
  concatenated 5 and 15 times (105 MB, 314 MB): no new pretokens, so memory should stay flat.
- zipf 20 MB / 60 MB (zipf20 alone: the 20 MB one): generated text whose words are drawn from
  Zipf(1.3) over an unbounded set of made-up words (about as many distinct words as docs20 at
  20 MB): new pretokens keep coming, so memory grows with the table. (Zipf(1.1) gives 720,000
  distinct random-letter words in 20 MB, where every letter pair is in a large share of them:
  our pure-Python merge loop then takes minutes where HF's Rust takes seconds.)
- runs: one line of 200,000 and of 2,000,000 "x", vocab 300 (issue 8: training is linear in
  the length of a pretoken). HF takes minutes on the 2,000,000 case: --timeout stops it.
- nanochat: nanochat's size, vocab 65,536 with <|endoftext|> (ids 0..65535 fit uint16), on
  docs20 x15 with nanochat's pattern.
"""

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from safety import ArgumentParser

EOT = "<|endoftext|>"
REPO = Path(__file__).resolve().parents[1]
DOCS20 = REPO.parent / "shared" / "bench" / "docs20.txt"

OURS = """
import sys
from documents.corpus import train_bpe_from_files
vocab, _ = train_bpe_from_files(
    [sys.argv[1]], int(sys.argv[2]), ["<|endoftext|>"], pattern=sys.argv[3]
)
assert len(vocab) == int(sys.argv[2]) and vocab[max(vocab)] == b"<|endoftext|>"  # ids 0..vocab-1
"""

HF = """
import sys
from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers
from bpe.patterns import GPT2_PATTERN, PATTERNS
pattern = PATTERNS[sys.argv[3]].replace(r"\\p{N}{1,3}+", r"\\p{N}{1,3}")
byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=pattern == GPT2_PATTERN)
tokenizer = Tokenizer(models.BPE())
if pattern == GPT2_PATTERN:
    tokenizer.pre_tokenizer = byte_level
else:
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(pattern), behavior="isolated"), byte_level])
trainer = trainers.BpeTrainer(
    vocab_size=int(sys.argv[2]), special_tokens=["<|endoftext|>"],
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False, min_frequency=0)
tokenizer.train([sys.argv[1]], trainer)
"""

RUSTBPE = """
import sys
import rustbpe
from bpe.patterns import PATTERNS

def documents(path, eot="<|endoftext|>"):
    rest = ""
    with open(path, encoding="utf-8") as file:
        while block := file.read(1 << 20):
            *done, rest = (rest + block).split(eot)
            yield from done
    yield rest

tokenizer = rustbpe.Tokenizer()
tokenizer.train_from_iterator(
    documents(sys.argv[1]), int(sys.argv[2]) - 1, pattern=PATTERNS[sys.argv[3]]
)
assert len(tokenizer.get_mergeable_ranks()) == int(sys.argv[2]) - 1
"""

TRAINERS = {"ours": OURS, "hf": HF, "rustbpe": RUSTBPE}


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


def measure(program, path, vocab_size, pattern, timeout):
    """-> (wall seconds, peak resident bytes of the process tree) of one fresh run; a run
    still going after `timeout` seconds is stopped and counted as taking `timeout`."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", program, str(path), str(vocab_size), pattern], env=env, cwd=REPO
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


ROWS = {
    "issue11": "docs20,x5,x15,zipf",
    "issue19": "docs20,x15,zipf20,nanochat",
}


def cases_for(wanted, patterns, docs20, folder):
    """(name, path, vocab_size, pattern) of each row asked for."""
    cases = []
    for name, make, vocab_size in [
        ("docs20", lambda: docs20, 32000),
        ("docs20 x5", lambda: concatenated(docs20, 5, folder), 32000),
        ("docs20 x15", lambda: concatenated(docs20, 15, folder), 32000),
        ("zipf 20 MB", lambda: zipf_corpus(20, folder), 32000),
        ("zipf 60 MB", lambda: zipf_corpus(60, folder), 32000),
    ]:
        key = {"docs20 x5": "x5", "docs20 x15": "x15", "zipf 20 MB": "zipf20"}.get(name, name)
        zipf = name.startswith("zipf") and "zipf" in wanted
        if key in wanted or zipf:
            cases += [(name, make(), vocab_size, pattern) for pattern in patterns]
    if "runs" in wanted:
        cases += [(f"{n:,} x", run_of_x(n, folder), 300, "gpt2") for n in (200_000, 2_000_000)]
    if "nanochat" in wanted:
        cases.append(("nanochat x15", concatenated(docs20, 15, folder), 65536, "nanochat"))
    return cases


def time_text(seconds, timeout):
    return "-" if seconds is None else f">{seconds:.0f}" if seconds >= timeout else f"{seconds:.2f}"


def ratio(ours, other):
    return f"{ours / other:.2f}x" if ours and other else "-"


def main():
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--docs20", default=str(DOCS20))
    parser.add_argument(
        "--only", default="docs20,x5,x15,zipf,runs", help="rows: " + ", ".join(ROWS) + " or a list"
    )
    parser.add_argument("--patterns", default="gpt2", help="e.g. gpt2,gpt4,nanochat")
    parser.add_argument("--trainers", default="ours,hf,rustbpe", help="ours, hf, rustbpe")
    parser.add_argument("--quick", action="store_true", help="docs20, three patterns, one run")
    parser.add_argument("--work-dir", default="/tmp/bench_train_scale")
    parser.add_argument(
        "--timeout", type=float, default=300, help="seconds before a run is stopped (shown >)"
    )
    args = parser.parse_args()
    if args.quick:
        args.only, args.patterns, args.runs = "docs20", "gpt2,gpt4,nanochat", 1
    folder = Path(args.work_dir)
    folder.mkdir(parents=True, exist_ok=True)
    wanted = set(ROWS.get(args.only, args.only).split(","))
    trainers = args.trainers.split(",")
    cases = cases_for(wanted, args.patterns.split(","), Path(args.docs20), folder)

    header = (
        f"{'corpus':<13} {'pattern':<8} {'MB':>5} {'vocab':>6} {'load':>5} {'ours s':>7} "
        f"{'HF s':>7} {'rust s':>7} {'/HF':>6} {'/rust':>6} {'ours MB':>7} {'HF MB':>6} "
        f"{'rust MB':>7} {'/HF':>6} {'/rust':>6}"
    )
    print(header)
    print("-" * len(header), flush=True)
    for name, path, vocab_size, pattern in cases:
        load = os.getloadavg()[0]
        runs = {trainer: [] for trainer in trainers}
        for _ in range(args.runs):
            for trainer in trainers:
                runs[trainer].append(
                    measure(TRAINERS[trainer], path, vocab_size, pattern, args.timeout)
                )
        seconds = {
            t: statistics.median(s for s, _ in runs.get(t, [])) if t in runs else None
            for t in TRAINERS
        }
        megabytes = {
            t: statistics.median(m for _, m in runs[t]) / 1e6 if t in runs else None
            for t in TRAINERS
        }
        memory = [f"{megabytes[t]:.0f}" if megabytes[t] else "-" for t in TRAINERS]
        print(
            f"{name:<13} {pattern:<8} {path.stat().st_size / 1e6:>5.1f} {vocab_size:>6} "
            f"{load:>5.2f} {time_text(seconds['ours'], args.timeout):>7} "
            f"{time_text(seconds['hf'], args.timeout):>7} "
            f"{time_text(seconds['rustbpe'], args.timeout):>7} "
            f"{ratio(seconds['ours'], seconds['hf']):>6} "
            f"{ratio(seconds['ours'], seconds['rustbpe']):>6} {memory[0]:>7} {memory[1]:>6} "
            f"{memory[2]:>7} {ratio(megabytes['ours'], megabytes['hf']):>6} "
            f"{ratio(megabytes['ours'], megabytes['rustbpe']):>6}",
            flush=True,
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
