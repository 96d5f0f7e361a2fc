"""inspection.packing and formats.shards.document_batch: their figures against brute force, and
document-aligned batches."""

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formats.shards import document_batch
from inspection.packing import (
    PackingError,
    best_fit_tokens_kept,
    packing_lines,
    packing_report,
    plot_lengths,
)
from safety import PrepareError


def starts_of(lengths):
    """[4, 1, 5] -> [0, 4, 5], as uint64 (the split's train.docs.npy)."""
    return np.array([0, *np.cumsum(lengths)[:-1]], dtype=np.uint64)


def brute_force(lengths, block_size):
    """Each field of packing_report, by its definition, with Python loops over every window."""
    T, N, n = block_size, sum(lengths), len(lengths)
    starts = {int(s) for s in starts_of(lengths)}
    windows = range(N - T)  # get_batch: torch.randint(len(data) - block_size)
    ordered = sorted(lengths)

    def nearest_rank(p):  # the smallest length that at least p% of the documents do not exceed
        return next(v for v in ordered if 100 * sum(length <= v for length in lengths) >= p * n)

    return {
        "documents": n,
        "tokens": N,
        "document_tokens": {
            "p50": nearest_rank(50),
            "p90": nearest_rank(90),
            "p99": nearest_rank(99),
            "max": max(lengths),
        },
        "windows_starting_mid_document": sum(i not in starts for i in windows) / len(windows),
        "windows_crossing_a_document_start": sum(
            any(p in starts for p in range(i + 1, i + T + 1)) for i in windows
        )
        / len(windows),
        "bos_aligned_tokens_kept": sum(min(length, T + 1) for length in lengths) / N,
    }


def nanochat_best_fit(lengths, block_size, buffer_size=1000, refill=128):
    """nanochat's loop (nanochat/dataloader.py, bos_bestfit), on lengths: the kept fraction.

    Its buffer scan and pop, line for line; the documents run out after one pass, leaving the
    last row part-filled.
    """
    documents, doc_buffer, cropped = list(lengths), [], 0
    row_capacity = block_size + 1
    while True:
        pos = 0
        while pos < row_capacity:
            while len(doc_buffer) < buffer_size and documents:
                doc_buffer += documents[:refill]
                del documents[:refill]
            if not doc_buffer:
                return 1 - cropped / sum(lengths)
            remaining = row_capacity - pos
            best_idx, best_len = -1, 0
            for i, doc_len in enumerate(doc_buffer):
                if doc_len <= remaining and doc_len > best_len:
                    best_idx, best_len = i, doc_len
            if best_idx >= 0:
                pos += doc_buffer.pop(best_idx)
            else:
                shortest_idx = min(range(len(doc_buffer)), key=lambda i: doc_buffer[i])
                cropped += doc_buffer.pop(shortest_idx) - remaining
                pos += remaining


def report_of(lengths, block_size):
    return packing_report(sum(lengths), starts_of(lengths), block_size)


def assert_equal_reports(actual, expected):
    assert actual.keys() == expected.keys()
    for key, value in expected.items():
        assert actual[key] == pytest.approx(value, rel=1e-12), key


# ---------------------------------------------------------------------------------------------
# packing_report


@pytest.mark.parametrize(
    "lengths",
    [
        [3, 12, 9, 1, 5, 9, 2],  # 12 > T, 9 = T + 1, 1: a lone EOT
        [20],  # a split of one document, longer than T
        [9],  # one document of exactly T + 1 tokens: one window
        [1, 1, 1, 1, 1, 1, 1, 1, 1, 1],  # documents of one token each
        [9, 9, 9],  # every document exactly a window
    ],
)
def test_report_equals_brute_force(lengths):
    assert_equal_reports(report_of(lengths, 8), brute_force(lengths, 8))
    best_fit = best_fit_tokens_kept(np.array(lengths), 8)
    assert best_fit == pytest.approx(nanochat_best_fit(lengths, 8), rel=1e-12)


def test_report_by_hand():
    """[4, 1, 5], T 3: 7 windows; starts 0, 4, 5 -> 4 mid-document; i = 1..4 cross."""
    assert report_of([4, 1, 5], 3) == {
        "documents": 3,
        "tokens": 10,
        "document_tokens": {"p50": 4, "p90": 5, "p99": 5, "max": 5},
        "windows_starting_mid_document": 4 / 7,
        "windows_crossing_a_document_start": 4 / 7,
        "bos_aligned_tokens_kept": 9 / 10,
    }
    assert best_fit_tokens_kept(np.array([4, 1, 5]), 3) == 8 / 10  # rows [4], [1 + 3 of the 5]


def test_one_document_longer_than_a_window():
    report = report_of([100], 9)
    assert report["windows_starting_mid_document"] == 90 / 91  # only i = 0 is a start
    assert report["windows_crossing_a_document_start"] == 0
    assert report["bos_aligned_tokens_kept"] == best_fit_tokens_kept(np.array([100]), 9) == 10 / 100


@pytest.mark.parametrize("lengths, block_size", [([8], 8), ([1], 1), ([3, 2], 9)])
def test_too_few_tokens_for_a_window(lengths, block_size):
    with pytest.raises(PackingError, match=r"need at least \d+") as caught:
        report_of(lengths, block_size)
    assert isinstance(caught.value, PrepareError)  # one line from any command


@pytest.mark.parametrize("starts", [[], [1, 4], [0, 4, 4], [0, 5, 4], [0, 10], [[0, 4]]], ids=repr)
def test_malformed_starts(starts):
    with pytest.raises(PackingError, match="document starts"):
        packing_report(10, np.array(starts, dtype=np.uint64), 3)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 40), min_size=1, max_size=40),
    st.integers(1, 30),
)
def test_report_property(lengths, block_size):
    if sum(lengths) <= block_size:
        with pytest.raises(PackingError):
            report_of(lengths, block_size)
    else:
        assert_equal_reports(report_of(lengths, block_size), brute_force(lengths, block_size))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 40), min_size=1, max_size=60),
    st.integers(1, 30),
    st.integers(1, 8),
    st.integers(1, 4),
)
def test_best_fit_with_a_small_buffer_is_nanochats(lengths, block_size, buffer_size, refill):
    """A buffer smaller than the split: the order of the documents counts."""
    assert best_fit_tokens_kept(
        np.array(lengths), block_size, buffer_size, refill
    ) == pytest.approx(nanochat_best_fit(lengths, block_size, buffer_size, refill), rel=1e-12)


def test_uint64_starts_of_a_large_split():
    """Offsets beyond 2**32 (a split of billions of tokens): no wrap-around, no float."""
    lengths = [2**33, 2**32 + 1]
    report = packing_report(sum(lengths), starts_of(lengths), 1024)
    assert report["documents"] == 2
    assert report["windows_crossing_a_document_start"] == 1024 / (sum(lengths) - 1024)


# ---------------------------------------------------------------------------------------------
# packing_lines and plot_lengths


def test_packing_lines():
    lines = packing_lines(report_of([4, 1, 5], 3), 3, best_fit=0.8)
    assert lines == [
        "3 documents, 10 tokens; a document's length in tokens (its EOT included): "
        "p50 4, p90 5, p99 5, max 5",
        "block_size 3: a window reads 4 tokens (x and its target y); "
        "10% to 50% of the documents are longer",
        "nanoGPT's get_batch: 57.1% of its windows start mid-document, and 57.1% read on from "
        "one document into the next (past its EOT)",
        "rows aligned to document starts: one per document, cut at 4 tokens (a shorter one "
        "padded), keep 90.0% of the tokens; nanochat's best-fit packing (full rows of whole "
        "documents, the longest that fits first, one cropped to fill the row) keeps 80.0%",
    ]


@pytest.mark.parametrize(
    "lengths, share",
    [([5, 5, 5], "more than half"), ([1] * 99 + [5], "under 1%"), ([4, 4], "none")],
)
def test_packing_lines_share_of_long_documents(lengths, share):
    assert f"{share} of the documents are longer" in packing_lines(report_of(lengths, 3), 3, 0.5)[1]


def test_plot_lengths(tmp_path):
    pytest.importorskip("matplotlib")
    plot_lengths(np.array([4, 1, 5, 2000]), 1024, tmp_path / "lengths.png")
    assert (tmp_path / "lengths.png").read_bytes().startswith(b"\x89PNG")


def test_plot_lengths_without_matplotlib(tmp_path, monkeypatch):
    for name in ("matplotlib", "matplotlib.figure"):
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    with pytest.raises(PrepareError, match=r'pip install -e "\.\[plot\]"'):
        plot_lengths([4, 1, 5], 3, tmp_path / "lengths.png")
    assert not (tmp_path / "lengths.png").exists()


# ---------------------------------------------------------------------------------------------
# document_batch


@pytest.fixture
def split(tmp_path):
    """A train.bin whose token at position p is p (so a value tells where a row began), as the
    np.memmap get_batch reads, and its document starts: documents of 5, 1, 12, 3, 7, 2 tokens."""
    lengths = [5, 1, 12, 3, 7, 2]
    np.arange(sum(lengths), dtype=np.uint16).tofile(tmp_path / "train.bin")
    return np.memmap(tmp_path / "train.bin", dtype=np.uint16, mode="r"), starts_of(lengths)


def test_document_batch_rows(split):
    data, starts = split
    x, y = document_batch(data, starts, 64, 4, np.random.default_rng(0))
    assert x.dtype == y.dtype == np.int64
    assert x.shape == y.shape == (64, 4)
    # every row begins at a start with T + 1 = 5 tokens left, of 30: not 28
    assert set(x[:, 0].tolist()) == {0, 5, 6, 18, 21}
    assert (x == x[:, :1] + np.arange(4)).all()  # the stream: rows cross into the next document
    assert (y == x + 1).all()  # y is x shifted by one token


def test_document_batch_is_deterministic(split):
    data, starts = split
    first = document_batch(data, starts, 8, 4, np.random.default_rng(1337))
    again = document_batch(data, starts, 8, 4, np.random.default_rng(1337))
    assert all((a == b).all() for a, b in zip(first, again))


def test_document_batch_last_possible_start():
    """A start with exactly block_size + 1 tokens left is drawn; one token later is not."""
    data = np.arange(10, dtype=np.uint16)
    x, y = document_batch(data, starts_of([6, 4]), 20, 3, np.random.default_rng(0))
    assert set(x[:, 0].tolist()) == {0, 6}
    x, _ = document_batch(data, starts_of([7, 3]), 20, 3, np.random.default_rng(0))
    assert set(x[:, 0].tolist()) == {0}


@pytest.mark.parametrize("num_tokens", [4, 2])
def test_document_batch_without_a_start(num_tokens):
    data = np.arange(num_tokens, dtype=np.uint16)
    with pytest.raises(PrepareError, match="no document start has block_size"):
        document_batch(data, starts_of([num_tokens]), 2, 4, np.random.default_rng(0))
