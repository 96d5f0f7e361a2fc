"""See training at work: the first merges replayed on the corpus, and compression by vocab size.

    python train_tokenizer.py --input tiny.txt --vocab-size 300 --out tok.json --trace 3
    python train_tokenizer.py --input input.txt --sweep 256,512,1024,2048 --eval val.txt

`trace_lines` replays the merges the trainer learned with the two functions BPE is made of
(simple.get_pair_counts, simple.merge_pair): each round counts the adjacent pairs, shows the one
merged and its count, replaces it everywhere and, on a small corpus, prints the corpus again.
It works on the pretoken counts training made, so any corpus can be traced.

`prefix_encodings` needs one training only: training is greedy, merge k is chosen from the corpus as
merges 1..k-1 left it, whatever vocab_size was asked for. So the merges of a smaller vocabulary
are exactly the first merges of a larger one, and each size is a prefix of the largest.
"""

import regex

from .checks import check_pattern
from .show import spaced
from .simple import get_pair_counts, merge_pair, split_on_special_tokens
from .tokenizer import Tokenizer

TRACE_CORPUS_BYTES = 300  # the corpus is printed after each merge only up to this size
TIES_SHOWN = 3  # other pairs with the same count, listed to show the tie rule at work
BAR_WIDTH = 40  # characters of the longest bar in the terminal chart


def corpus_pretokens(texts, pattern="gpt2", special_tokens=()):
    """A small corpus as its pretokens in order: ["the cat"] -> ["the", " cat"]."""
    pattern = check_pattern(pattern)
    return [
        pretoken
        for text in texts
        for segment in split_on_special_tokens(text, special_tokens)[::2]
        for pretoken in regex.findall(pattern, segment)
    ]


def trace_lines(counts, merges, rounds, corpus=None):
    """The first `rounds` merges: pair, count, ties and (given `corpus`) the corpus after it.

    counts: {pretoken: how often}, what training counted; corpus: the pretokens in order, for
    a text small enough to print. The counts and corpus of "the cat in the hat", 2 ->
        corpus: t h e / Ġ c a t / Ġ i n / Ġ t h e / Ġ h a t
        merge 1: t + h -> th (id 256), count 2; also 2: h + e, a + t (ties go to the greatest pair)
          th e / Ġ c a t / Ġ i n / Ġ th e / Ġ h a t
        merge 2: th + e -> the (id 257), count 2; also 2: a + t (ties go to the greatest pair)
          the / Ġ c a t / Ġ i n / Ġ the / Ġ h a t
    """
    # Each distinct pretoken is merged once, and its pairs count as often as it occurs.
    parts = {pretoken: [bytes([b]) for b in pretoken.encode("utf-8")] for pretoken in counts}

    def shown():
        return " / ".join(" ".join(map(spaced, parts[pretoken])) for pretoken in corpus)

    lines = [f"corpus: {shown()}"] if corpus else []
    for i, (left, right) in enumerate(merges[:rounds]):
        pair_counts = {}
        for pretoken, count in counts.items():
            get_pair_counts(parts[pretoken], pair_counts, weight=count)
        count = pair_counts[left, right]
        ties = [pair for pair, n in pair_counts.items() if n == count and pair != (left, right)]
        line = f"merge {i + 1}: {spaced(left)} + {spaced(right)} -> {spaced(left + right)}"
        line += f" (id {256 + i}), count {count}"
        if ties:
            ties.sort(reverse=True)
            listed = ", ".join(f"{spaced(a)} + {spaced(b)}" for a, b in ties[:TIES_SHOWN])
            more = ", ..." if len(ties) > TIES_SHOWN else ""
            line += f"; also {count}: {listed}{more} (ties go to the greatest pair)"
        lines.append(line)
        for pretoken in parts:
            parts[pretoken] = merge_pair(parts[pretoken], (left, right), left + right)
        if corpus:
            lines.append(f"  {shown()}")
    return lines


def prefix_encodings(vocab, merges, sizes, special_tokens=(), pattern="gpt2"):
    """(size, tiktoken Encoding) for each vocab size, from the merges of the largest: the
    tokenizer that training to that size gives is the first merges of the largest.

    Sizes that training did not reach (it stopped early: no pair left) are left out.
    """
    for size in sizes:
        num_merges = size - 256 - len(special_tokens)
        if num_merges > len(merges):
            return
        base = {token_id: vocab[token_id] for token_id in range(256 + num_merges)}
        tokenizer = Tokenizer(base, merges[:num_merges], list(special_tokens), pattern)
        yield size, tokenizer.to_tiktoken()


def sweep_table(rows, names):
    """The figures as a table, one row per vocab size, one column per text."""
    widths = [max(len(name), 10) for name in names]
    header = "vocab_size  " + "  ".join(f"{n:>{w}}" for n, w in zip(names, widths))
    lines = [header]
    for size, figures in rows:
        cells = "  ".join(f"{figure:>{w}.3f}" for figure, w in zip(figures, widths))
        lines.append(f"{size:>10,}  {cells}")
    return lines


BAR_MARKS = "█░"  # one mark per text: the training text, then the held-out one


def sweep_bars(rows, names):
    """The same figures as a terminal bar chart, one bar per text and vocab size."""
    largest = max(figure for _, figures in rows for figure in figures)
    legend = ", ".join(f"{mark} {name}" for mark, name in zip(BAR_MARKS, names))
    lines = [f"bytes/token ({legend}):"]
    for size, figures in rows:
        for j, (mark, figure) in enumerate(zip(BAR_MARKS, figures)):
            label = f"{size:>10,}" if j == 0 else " " * 10
            bar = mark * round(BAR_WIDTH * figure / largest)
            lines.append(f"{label} {bar:<{BAR_WIDTH}} {figure:.2f}")
    return lines


def plot_sweep(rows, names, path, kind=None):
    """Draw bytes/token against vocab size (log scale) into an image file with matplotlib; `kind`
    ("png", "svg"): the file's format, for a path whose suffix does not say it (None: it does)."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no window
    import matplotlib.pyplot as plt

    sizes = [size for size, _ in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    for j, name in enumerate(names):
        ax.plot(sizes, [figures[j] for _, figures in rows], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [f"{size:,}" for size in sizes])
    ax.set_xlabel("vocab_size")
    ax.set_ylabel("bytes per token")
    ax.set_title("BPE compression by vocabulary size")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100, format=kind)
    plt.close(fig)
