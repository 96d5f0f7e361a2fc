"""prepare_common.py, bin files: the dtype for a vocabulary, the id checks before a cast, the .bin
writer."""

import tempfile
from pathlib import Path

import numpy as np
import pytest
from conftest import names_in
from hypothesis import given, settings
from hypothesis import strategies as st

from formats.shards import check_ids
from prepare_common import dtype_for_vocab, write_bin
from safety import PrepareError

# ---------------------------------------------------------------------------------------------
# dtype_for_vocab


@pytest.mark.parametrize("vocab_size", [65, 50_257, 65_536])
def test_dtype_for_vocab_uint16_up_to_65536_ids(vocab_size, capsys):
    assert dtype_for_vocab(vocab_size) == np.uint16
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("vocab_size", [65_537, 100_277, 2**32])
def test_dtype_for_vocab_uint32_above_with_a_warning_naming_train_py(vocab_size, capsys):
    assert dtype_for_vocab(vocab_size) == np.uint32
    err = capsys.readouterr().err
    assert f"{vocab_size:,}" in err and "uint32" in err and "train.py" in err


def test_dtype_for_vocab_refuses_beyond_uint32():
    with pytest.raises(PrepareError, match="4,294,967,297"):
        dtype_for_vocab(2**32 + 1)


# ---------------------------------------------------------------------------------------------
# check_ids


def test_the_silent_wrap_check_ids_prevents():
    assert np.array([65536]).astype(np.uint16)[0] == 0
    assert np.array([-1]).astype(np.uint16)[0] == 65535
    with pytest.raises(PrepareError):
        check_ids(np.array([65536]), 70_000, np.uint16)
    with pytest.raises(PrepareError):
        check_ids(np.array([-1]), 70_000, np.uint16)


def test_check_ids_accepts_the_full_range():
    check_ids(np.array([0, 64, 3]), 65, np.uint16)
    check_ids(np.array([0, 65_535], dtype=np.int64), 65_536, np.uint16)
    check_ids(np.array([65_536], dtype=np.uint32), 65_537, np.uint32)
    check_ids(np.array([], dtype=np.int64), 65, np.uint16)
    check_ids([], 65, np.uint16)


def test_check_ids_refuses_negative_naming_id_and_position():
    with pytest.raises(PrepareError) as excinfo:
        check_ids(np.array([3, 4, -7, 5, -1]), 65, np.uint16, where="train.bin")
    message = str(excinfo.value)
    assert (
        "train.bin" in message
        and "-7" in message
        and "position 2" in message
        and "negative" in message
    )


def test_check_ids_refuses_ids_at_or_above_vocab_size():
    with pytest.raises(PrepareError) as excinfo:
        check_ids(np.array([0, 1, 64, 65, 70]), 65, np.uint16)
    message = str(excinfo.value)
    assert "token id 65 " in message and "position 3" in message and ">= vocab_size 65" in message


def test_check_ids_refuses_ids_beyond_the_dtype():
    # a vocabulary bigger than uint16, but the caller asked for uint16: 65,536 would become 0
    with pytest.raises(PrepareError) as excinfo:
        check_ids(np.array([1, 65_535, 65_536]), 70_000, np.uint16)
    message = str(excinfo.value)
    assert "65,536" in message and "position 2" in message and "uint16" in message


def test_check_ids_handles_huge_unsigned_ids():
    with pytest.raises(PrepareError, match=f"{2**64 - 1:,}"):
        check_ids(np.array([2**64 - 1], dtype=np.uint64), 65, np.uint16)


@settings(max_examples=200, deadline=None)
@given(
    ids=st.lists(st.integers(-(2**40), 2**40), max_size=30),
    vocab_size=st.integers(1, 2**17),
    dtype=st.sampled_from([np.uint16, np.uint32]),
)
def test_check_ids_refuses_exactly_the_ids_a_cast_would_corrupt(ids, vocab_size, dtype):
    limit = min(vocab_size, 2 ** (8 * np.dtype(dtype).itemsize))
    bad = [i for i, x in enumerate(ids) if not 0 <= x < limit]
    if not bad:
        check_ids(np.array(ids, dtype=np.int64), vocab_size, dtype)
        assert np.array_equal(np.array(ids, dtype=np.int64).astype(dtype), ids)  # the cast is exact
        return
    with pytest.raises(PrepareError) as excinfo:
        check_ids(np.array(ids, dtype=np.int64), vocab_size, dtype)
    assert f"token id {ids[bad[0]]:,} at position {bad[0]:,} " in str(
        excinfo.value
    )  # the first bad one


def test_check_ids_refuses_non_integers():
    with pytest.raises(PrepareError, match="integers"):
        check_ids(np.array([1.0, 2.0]), 65, np.uint16)


# ---------------------------------------------------------------------------------------------
# write_bin


BATCHES = [np.array([0, 1, 2]), np.array([], dtype=np.int64), np.array([64, 63]), [5, 6, 7]]


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32])
def test_write_bin_writes_exactly_the_concatenation(tmp_path, dtype):
    path = tmp_path / "train.bin"
    count = write_bin(path, BATCHES, dtype, 65)
    expected = (
        np.concatenate([np.asarray(c, dtype=np.int64) for c in BATCHES]).astype(dtype).tobytes()
    )
    assert path.read_bytes() == expected
    assert count == 8 and type(count) is int
    assert np.array_equal(np.memmap(path, dtype=dtype, mode="r"), [0, 1, 2, 64, 63, 5, 6, 7])
    assert names_in(tmp_path) == ["train.bin"]


def test_write_bin_streams_a_generator_of_batches(tmp_path):
    rng = np.random.default_rng(0)
    batches = [rng.integers(0, 50_257, size=n) for n in (1000, 1, 0, 4096)]
    count = write_bin(tmp_path / "val.bin", iter(batches), np.uint16, 50_257)
    assert count == 5097
    assert (tmp_path / "val.bin").read_bytes() == np.concatenate(batches).astype(
        np.uint16
    ).tobytes()


@settings(max_examples=50, deadline=None)
@given(batches=st.lists(st.lists(st.integers(0, 65_535), max_size=50), max_size=6))
def test_write_bin_file_is_the_concatenation_property(batches):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "train.bin"
        count = write_bin(path, [np.array(c, dtype=np.int64) for c in batches], np.uint16, 65_536)
        flat = [x for c in batches for x in c]
        assert count == len(flat)
        assert path.read_bytes() == np.array(flat, dtype=np.uint16).tobytes()
        assert names_in(folder) == ["train.bin"]


@pytest.mark.parametrize("batches", [[], [np.array([], dtype=np.int64)], [[], []]])
def test_write_bin_empty_split_gives_an_empty_file(tmp_path, batches):
    path = tmp_path / "val.bin"
    assert write_bin(path, batches, np.uint16, 65) == 0
    assert path.is_file() and path.stat().st_size == 0
    assert names_in(tmp_path) == ["val.bin"]


def test_write_bin_refuses_a_bad_id_and_creates_nothing(tmp_path):
    path = tmp_path / "train.bin"
    with pytest.raises(PrepareError) as excinfo:
        write_bin(path, [np.array([1, 2]), np.array([3, 65, 4])], np.uint16, 65)
    message = str(excinfo.value)
    assert "train.bin" in message and "token id 65 " in message and "position 1" in message
    assert names_in(tmp_path) == []


def test_write_bin_refuses_a_bad_id_and_keeps_the_previous_file(tmp_path):
    path = tmp_path / "train.bin"
    write_bin(path, [[10, 20, 30]], np.uint16, 65)
    before = path.read_bytes()
    with pytest.raises(PrepareError, match="negative"):
        write_bin(path, [[1, 2, 3, 4, 5], [-1]], np.uint16, 65)
    assert path.read_bytes() == before
    assert names_in(tmp_path) == ["train.bin"]


def test_write_bin_refuses_a_uint16_overflow_instead_of_wrapping(tmp_path):
    path = tmp_path / "train.bin"
    with pytest.raises(PrepareError, match="65,536"):
        write_bin(path, [np.array([65_535, 65_536])], np.uint16, 100_000)
    assert names_in(tmp_path) == []


def batches_then_crash(n_good):
    for i in range(n_good):
        yield np.full(1000, i % 65)
    raise RuntimeError("tokenizer crashed")


@pytest.mark.parametrize("n_good", [0, 3])
def test_write_bin_crash_midway_leaves_the_previous_file(tmp_path, n_good):
    path = tmp_path / "train.bin"
    write_bin(path, [[7, 8, 9]], np.uint16, 65)
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="tokenizer crashed"):
        write_bin(path, batches_then_crash(n_good), np.uint16, 65)
    assert path.read_bytes() == before
    assert names_in(tmp_path) == ["train.bin"]


def test_write_bin_crash_midway_leaves_no_file(tmp_path):
    with pytest.raises(RuntimeError):
        write_bin(tmp_path / "train.bin", batches_then_crash(3), np.uint16, 65)
    assert names_in(tmp_path) == []


def test_write_bin_ctrl_c_midway_leaves_no_file(tmp_path):
    def interrupted():
        yield np.arange(10)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_bin(tmp_path / "train.bin", interrupted(), np.uint16, 65)
    assert names_in(tmp_path) == []
