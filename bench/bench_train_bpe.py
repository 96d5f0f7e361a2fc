"""BPE training speed: our pure-Python bpe.train_bpe against Hugging Face `tokenizers` (Rust).

    pip install tokenizers            # the reference; used only here, never by the project
    export NANOGPT_DATA_MIRROR=../shared/mirror   # if offline
    python bench/bench_train_bpe.py [--runs 3] [--docs20 ../shared/bench/docs20.txt] [--quick]

Both train on the same file in this process, alternating, and the median of --runs is kept.
HF is set up as a byte-level BPE like ours: models.BPE, ByteLevel(add_prefix_space=False),
BpeTrainer(vocab_size, special_tokens=["<|endoftext|>"], initial_alphabet=ByteLevel.alphabet(),
min_frequency=0). The issue's targets: Tiny Shakespeare at vocab 4,096 within 1.5x HF's
time, the 20 MB docs20 corpus at vocab 32,000 within 3x. A growth series (the first 1x, 4x
and 16x Tiny Shakespeare's size of docs20, vocab 8,192) shows how time grows with the corpus.

Columns: HF and our wall seconds, ours / HF, our seconds spent pretokenizing (reading and
counting) and merging, and merges per second of the merge phase.
"""

import runpy
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bpe import EOT, train_bpe
from safety import ArgumentParser, fetch

TINY_SHAKESPEARE = runpy.run_path(
    str(Path(__file__).parents[1] / "data/shakespeare_char/prepare.py")
)["TINY_SHAKESPEARE"]  # the lesson's pin

REPO = Path(__file__).resolve().parents[1]
DOCS20 = REPO.parent / "shared" / "bench" / "docs20.txt"


def hf_train(path, vocab_size):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
        min_frequency=0,
    )
    start = time.perf_counter()
    tokenizer.train([str(path)], trainer)
    return time.perf_counter() - start


def ours_train(path, vocab_size):
    """-> (total seconds, seconds before the first merge, number of merges)."""
    first_merge = []

    def progress(stage, _done, _total):
        if stage == "merge" and not first_merge:
            first_merge.append(time.perf_counter())

    start = time.perf_counter()
    _, merges = train_bpe(path, vocab_size, [EOT], progress=progress)
    end = time.perf_counter()
    return end - start, (first_merge[0] if first_merge else end) - start, len(merges)


def measure(path, vocab_size, runs):
    hf, ours, pretok = [], [], []
    merges = 0
    for _ in range(runs):
        hf.append(hf_train(path, vocab_size))
        seconds, before_merges, merges = ours_train(path, vocab_size)
        ours.append(seconds)
        pretok.append(before_merges)
    return statistics.median(hf), statistics.median(ours), statistics.median(pretok), merges


def slice_of(text, size, folder):
    """The first `size` characters of text, cut at a newline, as a file."""
    cut = text.rfind("\n", 0, size) + 1 or size
    path = Path(folder) / f"docs20_{size // 1000}k.txt"
    path.write_text(text[:cut], encoding="utf-8")
    return path


def main():
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--docs20", default=str(DOCS20))
    parser.add_argument("--quick", action="store_true", help="Tiny Shakespeare only")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        shakespeare = fetch(TINY_SHAKESPEARE, Path(folder) / "input.txt")
        cases = [("tinyshakespeare", shakespeare, 4096, 1.5)]
        if not args.quick:
            docs20 = Path(args.docs20)
            text = docs20.read_text(encoding="utf-8")
            cases.append(("docs20 (20 MB)", docs20, 32000, 3.0))
            unit = shakespeare.stat().st_size
            for times in (1, 4, 16):
                cases.append(
                    (f"docs20 first {times}x TS", slice_of(text, times * unit, folder), 8192, None)
                )

        header = (
            f"{'corpus':<20} {'MB':>6} {'vocab':>6} {'HF s':>7} {'ours s':>7} {'ratio':>6} "
            f"{'target':>6} {'pretok s':>8} {'merge s':>7} {'merges/s':>9}"
        )
        print(header)
        print("-" * len(header))
        for name, path, vocab_size, target in cases:
            hf, ours, pretok, merges = measure(path, vocab_size, args.runs)
            target_text = f"{target:.1f}x" if target else "-"
            merge_seconds = ours - pretok
            print(
                f"{name:<20} {path.stat().st_size / 1e6:>6.1f} {vocab_size:>6} "
                f"{hf:>7.3f} {ours:>7.3f} "
                f"{ours / hf:>5.2f}x {target_text:>6} {pretok:>8.3f} {merge_seconds:>7.3f} "
                f"{merges / max(merge_seconds, 1e-9):>9,.0f}",
                flush=True,
            )


if __name__ == "__main__":
    sys.exit(main())
