"""How nanoGPT's random windows fall on a split's documents, and what document-aligned rows keep,
from the document starts alone (never the tokens).

    (10 tokens, starts [0, 4, 5], block_size 3) -> documents of 4, 1 and 5 tokens; of the 7
    windows get_batch draws, 4 start mid-document and 4 read on into the next document
"""

import json
import os
import sys
from bisect import bisect_right, insort
from pathlib import Path

import numpy as np

from formats.schema import RECORD_NAME, index_name
from formats.shards import open_npy
from safety.errors import PrepareError
from safety.files import atomic_path

from .folder import open_split
from .token_bytes import bytes_per_token, bytes_per_token_lines

# nanochat's BOS best-fit (nanochat/dataloader.py): it chooses among a buffer of at least
# buffer_size=1000 documents, topped up tokenizer_batch_size=128 documents at a time
BEST_FIT_BUFFER = 1000
BEST_FIT_REFILL = 128


class PackingError(PrepareError):
    """A split these figures cannot be computed for (too short for a window, malformed starts)."""


def document_lengths(num_tokens, starts):
    """Each document's length in tokens, its EOT included: (10, [0, 4, 5]) -> [4, 1, 5]."""
    starts = np.asarray(starts)
    if starts.ndim != 1 or len(starts) == 0 or starts[0] != 0:
        raise PackingError("the document starts must be a 1-D array beginning with 0")
    lengths = np.diff(starts.astype(np.int64), append=num_tokens)  # int64: uint64 - uint64 wraps
    if lengths.min() < 1:
        raise PackingError(
            f"the document starts must increase and stay below the split's {num_tokens:,} tokens"
        )
    return lengths


def length_figures(lengths):
    """Nearest-rank percentiles (the ceil(p/100 * n)-th smallest) and the largest:
    [3, 1, 4] -> {"p50": 3, "p90": 4, "p99": 4, "max": 4}."""
    ranks = [-(-p * len(lengths) // 100) - 1 for p in (50, 90, 99)]  # ceil in integers, 0-based
    p50, p90, p99 = np.partition(lengths, ranks)[ranks].tolist()  # O(n): no full sort
    return {"p50": p50, "p90": p90, "p99": p99, "max": int(lengths.max())}


def packing_report(num_tokens, starts, block_size):
    """The packing figures for one split and block_size T, as a dict (see packing_lines).

    (10, [0, 4, 5], 3) -> documents 3, tokens 10, p50 4, windows_starting_mid_document 4/7,
    windows_crossing_a_document_start 4/7, bos_aligned_tokens_kept 9/10
    """
    if block_size < 1:
        raise PackingError(f"block_size must be at least 1, got {block_size}")
    if num_tokens <= block_size:
        raise PackingError(
            f"the split holds {num_tokens:,} tokens: a window of block_size {block_size:,} and "
            f"its target need at least {block_size + 1:,}"
        )
    windows = num_tokens - block_size  # get_batch's torch.randint(len(data) - block_size)
    lengths = document_lengths(num_tokens, starts)
    offsets = np.asarray(starts).astype(np.int64)  # uint64 - int would be float64
    window_starts = int(np.searchsorted(offsets, windows))  # the document starts below `windows`
    # window i crosses into document k + 1 (at p) if max(starts[k], p - T) <= i < min(p, windows)
    ends = offsets[:-1] + lengths[:-1]
    first = np.maximum(offsets[:-1], ends - block_size)
    crossing = int(np.clip(np.minimum(ends, windows) - first, 0, None).sum())
    return {
        "documents": len(lengths),
        "tokens": int(num_tokens),
        "document_tokens": length_figures(lengths),
        "windows_starting_mid_document": (windows - window_starts) / windows,
        "windows_crossing_a_document_start": crossing / windows,
        "bos_aligned_tokens_kept": int(np.minimum(lengths, block_size + 1).sum()) / num_tokens,
    }


def best_fit_tokens_kept(lengths, block_size, buffer_size=BEST_FIT_BUFFER, refill=BEST_FIT_REFILL):
    """The fraction of the tokens nanochat's BOS best-fit packing keeps.

    Each row of T + 1 takes the longest buffered document that fits, else the shortest cropped
    (the rest lost); the last row stays part-filled (the next epoch fills it).
    [4, 1, 5], T 3 -> rows [4], [1 + 3 of the 5]: 2 of 10 cropped, 0.8
    """
    capacity = block_size + 1
    pending = lengths.tolist()  # Python ints: a bisect on numpy scalars is several times slower
    buffer, taken, cropped, space = [], 0, 0, capacity
    while True:
        while len(buffer) < buffer_size and taken < len(pending):
            for length in pending[taken : taken + refill]:
                insort(buffer, length)
            taken += refill
        if not buffer:
            return (sum(pending) - cropped) / sum(pending)
        fits = bisect_right(buffer, space) - 1  # the longest length <= space
        if fits >= 0:
            space -= buffer.pop(fits)
        else:
            cropped += buffer.pop(0) - space
            space = 0
        space = space or capacity  # a full row: the next one starts


def packing_lines(report, block_size, best_fit):
    """packing_report's figures, and best_fit_tokens_kept's, as plain lines:
    {"documents": 3, "tokens": 10, ...}, 3 -> ["3 documents, 10 tokens; a document's length ..."]
    """
    lengths, window = report["document_tokens"], block_size + 1
    shares = {"p50": "more than half", "p90": "10% to 50%", "p99": "1% to 10%", "max": "under 1%"}
    longer = next((share for key, share in shares.items() if lengths[key] > window), "none")
    return [
        f"{report['documents']:,} documents, {report['tokens']:,} tokens; a document's length in "
        f"tokens (its EOT included): p50 {lengths['p50']:,}, p90 {lengths['p90']:,}, "
        f"p99 {lengths['p99']:,}, max {lengths['max']:,}",
        f"block_size {block_size:,}: a window reads {window:,} tokens (x and its target y); "
        f"{longer} of the documents are longer",
        f"nanoGPT's get_batch: {report['windows_starting_mid_document']:.1%} of its windows start "
        f"mid-document, and {report['windows_crossing_a_document_start']:.1%} read on from one "
        f"document into the next (past its EOT)",
        f"rows aligned to document starts: one per document, cut at {window:,} tokens (a shorter "
        f"one padded), keep {report['bos_aligned_tokens_kept']:.1%} of the tokens; nanochat's "
        f"best-fit packing (full rows of whole documents, the longest that fits first, one "
        f"cropped to fill the row) keeps {best_fit:.1%}",
    ]


def picture_kind(path):
    """The image format a --plot file's suffix names, one matplotlib writes: "a.PNG" -> "png".
    savefig is told it: the picture is drawn under a temporary name (.tmp), then renamed."""
    try:
        from matplotlib.figure import Figure  # no pyplot: no window, no global state
    except ImportError:
        raise PrepareError(
            '--plot needs matplotlib: pip install -e ".[plot]" (or pip install matplotlib)'
        ) from None
    kinds = Figure().canvas.get_supported_filetypes()
    kind = Path(path).suffix.lower().lstrip(".")
    if kind not in kinds:
        raise PrepareError(
            f"--plot {path}: matplotlib writes no {Path(path).suffix or 'suffix-less'} file; "
            f"name it .png, or one of .{', .'.join(sorted(kinds))}"
        )
    return kind


def plot_lengths(lengths, block_size, path):
    """Draw the histogram of the documents' lengths (log scale) with T marked, into an image file:
    ([4, 1, 5], 3, "lengths.png") -> lengths.png: three bars, a line at 3"""
    kind = picture_kind(path)
    from matplotlib.figure import Figure

    lengths = np.asarray(lengths)
    figure = Figure(figsize=(6, 4))
    ax = figure.subplots()
    bins = np.geomspace(1, max(int(lengths.max()), block_size) + 1, 60)
    ax.hist(lengths, bins=bins)
    ax.axvline(block_size, color="red", label=f"block_size T = {block_size:,}")
    ax.set_xscale("log")
    ax.set_xlabel("document length in tokens (EOT included)")
    ax.set_ylabel("documents")
    ax.legend()
    # drawn beside it, then renamed: a full disk leaves the old picture, and names it
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format=kind, dpi=120, bbox_inches="tight")


def packing(folder, meta, split, block_size, as_json=False, plot=None):
    """Print what nanoGPT's get_batch draws from `split` of a verified folder (`meta` its record),
    from its document index: a few plain lines, or one JSON object; plot: the lengths' histogram."""
    open_split(folder, split, meta)  # the split's file is there, not empty
    record = meta.get("splits", {}).get(split, {})
    if "shards" in meta:
        raise PrepareError(
            f"{Path(folder) / RECORD_NAME} lists shards, which have no document index: packing "
            f"reads a .bin folder's {index_name(split)}, which openwebtext and tinystories write "
            "with --format bin"
        )
    if "index" not in record:
        raise PrepareError(
            f"{Path(folder) / RECORD_NAME} lists no document index for {split!r} (a "
            f"{index_name(split)}): only the document lessons (openwebtext, tinystories) write "
            f"one beside their .bin files; a character folder has no documents"
        )
    starts = open_npy(Path(folder) / record["index"]["file"])
    report = packing_report(record["tokens"], starts, block_size)
    lengths = document_lengths(record["tokens"], starts)
    if plot is not None:
        plot_lengths(lengths, block_size, plot := picture_path(plot))
    best_fit = best_fit_tokens_kept(lengths, block_size)
    if as_json:  # every figure of the lines, named as in a nanochat folder's object
        figures = {"block_size": block_size, "best_fit_tokens_kept": best_fit}
        print(json.dumps({**report, **figures, **bytes_per_token(meta, split)}))
    else:
        lines = [*packing_lines(report, block_size, best_fit), *bytes_per_token_lines(meta, split)]
        print(f"{split} of {folder}:", *lines, sep="\n")
    if plot is not None:  # beside the JSON object, on stderr: stdout stays one object
        wrote = f"wrote {plot}: the document lengths of {split}"
        print(wrote, file=sys.stderr if as_json else sys.stdout)


def picture_path(plot):
    """--plot's file, not a folder, device or FIFO; without a suffix, matplotlib's ".png":
    "lengths" -> lengths.png; "data/openwebtext" -> an error."""
    path = Path(plot)
    if path.is_dir() or str(plot).endswith(("/", os.sep)):
        raise PrepareError(
            f"--plot {plot} is a folder; give the picture's file name, e.g. "
            f"--plot {path / 'lengths.png'}"
        )
    if path.exists() and not path.is_file():  # /dev/null, a FIFO: no picture goes there
        raise PrepareError(f"--plot {plot} is not a regular file; give the picture's file name")
    return path if path.suffix else path.with_name(path.name + ".png")
