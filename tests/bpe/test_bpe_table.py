"""bpe/table.py: a PretokenTable holds what a {pretoken: count} dict holds; `total` adds tables
up as Counter.update adds dicts, in the same order."""

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from bpe import table as table_module
from bpe.table import PretokenTable

# Pretokens of every length class: one uint64 word, several, rows of bytes; zero bytes and
# multi-byte characters, whose padding must not make two pretokens equal.
pretokens = st.text(st.sampled_from("ab\x00é "), max_size=80)
count_dicts = st.dictionaries(pretokens, st.integers(1, 2**40), max_size=30)


@settings(max_examples=300, deadline=None)
@given(st.lists(count_dicts, max_size=5), st.sampled_from([64, 8, 0]))
def test_total_equals_counter_update_order_included(dicts, words_max_bytes):
    """Compared as uint64 words (up to 64 bytes), or every length as rows of bytes (0)."""
    expected = Counter()
    for counts in dicts:
        expected.update(counts)
    saved = table_module.WORDS_MAX_BYTES
    table_module.WORDS_MAX_BYTES = words_max_bytes
    try:
        got = PretokenTable.total([PretokenTable.from_counts(counts) for counts in dicts])
    finally:
        table_module.WORDS_MAX_BYTES = saved
    assert list(got.items()) == list(expected.items())
    assert got.to_counter() == expected


def test_pretokens_of_65535_bytes_and_more_are_told_apart():
    long_a, long_b = "a" * 70_000, "a" * 69_999 + "b"
    tables = [{long_a: 1, "x": 2}, {long_b: 3, long_a: 4, "a" * 0xFFFF: 5}]
    got = PretokenTable.total([PretokenTable.from_counts(counts) for counts in tables])
    assert dict(got.items()) == {long_a: 5, "x": 2, long_b: 3, "a" * 0xFFFF: 5}


def test_real_text_in_pieces(shakespeare):
    from bpe.train import count_pretokens

    pieces = [shakespeare[start : start + 50_000] for start in range(0, 400_000, 50_000)]
    counts = [count_pretokens(piece, "gpt4") for piece in pieces]
    expected = Counter()
    for piece_counts in counts:
        expected.update(piece_counts)
    got = PretokenTable.total([PretokenTable.from_counts(c) for c in counts])
    assert list(got.items()) == list(expected.items())
    assert got.data == "".join(expected).encode("utf-8")
