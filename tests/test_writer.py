"""prepare_common's outputs: dtype choice, id checks, the atomic .bin writer, read_text, meta + verify."""

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import prepare_common
from prepare_common import (
    PrepareError,
    atomic_path,
    check_ids,
    dtype_for_vocab,
    read_text,
    write_bin,
)

REPO_ROOT = Path(__file__).resolve().parent.parent


def names_in(folder):
    return sorted(p.name for p in Path(folder).iterdir())


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


CHUNKS = [np.array([0, 1, 2]), np.array([], dtype=np.int64), np.array([64, 63]), [5, 6, 7]]


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32])
def test_write_bin_writes_exactly_the_concatenation(tmp_path, dtype):
    path = tmp_path / "train.bin"
    count = write_bin(path, CHUNKS, dtype, 65)
    expected = (
        np.concatenate([np.asarray(c, dtype=np.int64) for c in CHUNKS]).astype(dtype).tobytes()
    )
    assert path.read_bytes() == expected
    assert count == 8 and type(count) is int
    assert np.array_equal(np.memmap(path, dtype=dtype, mode="r"), [0, 1, 2, 64, 63, 5, 6, 7])
    assert names_in(tmp_path) == ["train.bin"]


def test_write_bin_streams_a_generator_of_chunks(tmp_path):
    rng = np.random.default_rng(0)
    chunks = [rng.integers(0, 50_257, size=n) for n in (1000, 1, 0, 4096)]
    count = write_bin(tmp_path / "val.bin", iter(chunks), np.uint16, 50_257)
    assert count == 5097
    assert (tmp_path / "val.bin").read_bytes() == np.concatenate(chunks).astype(np.uint16).tobytes()


@settings(max_examples=50, deadline=None)
@given(chunks=st.lists(st.lists(st.integers(0, 65_535), max_size=50), max_size=6))
def test_write_bin_file_is_the_concatenation_property(chunks):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "train.bin"
        count = write_bin(path, [np.array(c, dtype=np.int64) for c in chunks], np.uint16, 65_536)
        flat = [x for c in chunks for x in c]
        assert count == len(flat)
        assert path.read_bytes() == np.array(flat, dtype=np.uint16).tobytes()
        assert names_in(folder) == ["train.bin"]


@pytest.mark.parametrize("chunks", [[], [np.array([], dtype=np.int64)], [[], []]])
def test_write_bin_empty_split_gives_an_empty_file(tmp_path, chunks):
    path = tmp_path / "val.bin"
    assert write_bin(path, chunks, np.uint16, 65) == 0
    assert path.is_file() and path.stat().st_size == 0
    assert names_in(tmp_path) == ["val.bin"]


def test_write_bin_checks_the_expected_count(tmp_path):
    path = tmp_path / "train.bin"
    with pytest.raises(PrepareError, match="wrote 3 tokens, expected 4"):
        write_bin(path, [[1, 2, 3]], np.uint16, 65, expected_tokens=4)
    assert names_in(tmp_path) == []


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


def chunks_then_crash(n_good):
    for i in range(n_good):
        yield np.full(1000, i % 65)
    raise RuntimeError("tokenizer crashed")


@pytest.mark.parametrize("n_good", [0, 3])
def test_write_bin_crash_midway_leaves_the_previous_file(tmp_path, n_good):
    path = tmp_path / "train.bin"
    write_bin(path, [[7, 8, 9]], np.uint16, 65)
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="tokenizer crashed"):
        write_bin(path, chunks_then_crash(n_good), np.uint16, 65)
    assert path.read_bytes() == before
    assert names_in(tmp_path) == ["train.bin"]


def test_write_bin_crash_midway_leaves_no_file(tmp_path):
    with pytest.raises(RuntimeError):
        write_bin(tmp_path / "train.bin", chunks_then_crash(3), np.uint16, 65)
    assert names_in(tmp_path) == []


def test_write_bin_ctrl_c_midway_leaves_no_file(tmp_path):
    def interrupted():
        yield np.arange(10)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_bin(tmp_path / "train.bin", interrupted(), np.uint16, 65)
    assert names_in(tmp_path) == []


# ---------------------------------------------------------------------------------------------
# atomic_path


def test_atomic_path_renames_into_place_on_success(tmp_path):
    path = tmp_path / "out.txt"
    with atomic_path(path) as tmp:
        assert tmp.parent == tmp_path  # same folder, so the rename is atomic
        assert tmp.name.startswith(".") and tmp.name.endswith(".tmp")  # never looks finished
        tmp.write_text("new")
        assert not path.exists()  # nothing under the real name until the block succeeds
    assert path.read_text() == "new"
    assert names_in(tmp_path) == ["out.txt"]


def test_atomic_path_replaces_the_previous_file_on_success(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    with atomic_path(path) as tmp:
        tmp.write_text("new")
        assert path.read_text() == "old"
    assert path.read_text() == "new"
    assert names_in(tmp_path) == ["out.txt"]


@pytest.mark.parametrize("error", [ValueError("boom"), KeyboardInterrupt()])
def test_atomic_path_keeps_the_previous_file_on_error(tmp_path, error):
    path = tmp_path / "out.txt"
    path.write_text("old")
    with pytest.raises(type(error)), atomic_path(path) as tmp:
        tmp.write_text("half")
        raise error
    assert path.read_text() == "old"
    assert names_in(tmp_path) == ["out.txt"]


def test_atomic_path_leaves_nothing_on_error_without_a_previous_file(tmp_path):
    with pytest.raises(ValueError), atomic_path(tmp_path / "out.txt") as tmp:
        tmp.write_text("half")
        raise ValueError("boom")
    assert names_in(tmp_path) == []


# ---------------------------------------------------------------------------------------------
# read_text


def test_read_text_reads_strict_utf8(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes("héllo\n世界".encode())
    assert read_text(path) == "héllo\n世界"


def test_read_text_missing_file(tmp_path):
    with pytest.raises(PrepareError, match="does not exist") as excinfo:
        read_text(tmp_path / "nope.txt")
    assert str(tmp_path / "nope.txt") in str(excinfo.value)


def test_read_text_folder(tmp_path):
    with pytest.raises(PrepareError, match="is a folder") as excinfo:
        read_text(tmp_path)
    assert str(tmp_path) in str(excinfo.value)


def test_read_text_invalid_utf8_gives_the_byte_offset(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("naïve".encode() + b" caf\xe9\n")  # 'naïve' is 6 bytes, then ' caf'
    with pytest.raises(PrepareError) as excinfo:
        read_text(path)
    message = str(excinfo.value)
    assert str(path) in message and "UTF-8" in message
    assert "byte offset 10 " in message and r"b'\xe9'" in message


def test_read_text_invalid_utf8_offset_has_thousands_separators(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"a" * 12_345 + b"\xff")
    with pytest.raises(PrepareError, match="byte offset 12,345 "):
        read_text(path)


# ---------------------------------------------------------------------------------------------
# write_meta and verify


def test_write_meta_then_verify_in_process(tmp_path, capsys):
    chars = "\n abc"
    train = np.array([2, 3, 4, 1, 0])
    val = np.array([4, 3, 2])
    write_bin(tmp_path / "train.bin", [train], np.uint16, len(chars))
    write_bin(tmp_path / "val.bin", [val], np.uint16, len(chars))
    meta = prepare_common.write_meta(
        tmp_path,
        script="tests/test_writer.py",
        tokenizer={
            "kind": "char",
            "name": "char",
            "vocab_size": len(chars),
            "eot_id": None,
            "chars": chars,
        },
        dtype=np.uint16,
        split_tokens={"train": 5, "val": 3},
        source={"path": None},
        split={"rule": "by hand"},
        options={},
    )
    on_disk = json.loads((tmp_path / "meta.json").read_text(encoding="utf-8"))
    assert on_disk == meta
    assert meta["format_version"] == prepare_common.META_FORMAT_VERSION
    assert meta["dtype"] == "uint16"
    assert meta["splits"]["val"] == {
        "file": "val.bin",
        "tokens": 3,
        "sha256": prepare_common.sha256_file(tmp_path / "val.bin"),
    }
    assert names_in(tmp_path) == ["meta.json", "train.bin", "val.bin"]
    assert prepare_common.verify(tmp_path) == []
    assert "'cba'" in capsys.readouterr().out  # the start of val, decoded


def run_verify(folder):
    return subprocess.run(
        [sys.executable, "prepare_common.py", "verify", str(folder)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def shakespeare_char_folder(tmp_path_factory):
    """A folder written by the real data/shakespeare_char/prepare.py (input through the mirror)."""
    out_dir = tmp_path_factory.mktemp("shakespeare_char")
    result = subprocess.run(
        [sys.executable, "data/shakespeare_char/prepare.py", "--out-dir", str(out_dir)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert names_in(out_dir) == ["input.txt", "meta.json", "meta.pkl", "train.bin", "val.bin"]
    return out_dir


@pytest.fixture
def prepared(shakespeare_char_folder, tmp_path):
    folder = tmp_path / "prepared"
    shutil.copytree(shakespeare_char_folder, folder)
    return folder


def test_verify_ok_on_a_prepared_folder(prepared):
    result = run_verify(prepared)
    assert result.returncode == 0, result.stderr
    assert f"{prepared}: OK" in result.stdout
    assert "train: 1,003,854 tokens, uint16" in result.stdout
    assert "val: 111,540 tokens, uint16" in result.stdout
    assert "start of val:" in result.stdout
    assert result.stderr == ""


def test_verify_reports_a_truncated_bin(prepared):
    train = prepared / "train.bin"
    data = train.read_bytes()
    train.write_bytes(data[:-2])
    result = run_verify(prepared)
    assert result.returncode == 1
    assert result.stderr.startswith("error: ")
    assert str(train) in result.stderr
    assert (
        f"{len(data) - 2:,} bytes" in result.stderr and "1,003,854 uint16 tokens" in result.stderr
    )
    assert "Traceback" not in result.stderr


def test_verify_reports_a_flipped_byte(prepared):
    val = prepared / "val.bin"
    data = bytearray(val.read_bytes())
    data[100] ^= 0x01  # keeps the id below 65 or not: either way the sha256 no longer matches
    val.write_bytes(bytes(data))
    result = run_verify(prepared)
    assert result.returncode == 1
    assert str(val) in result.stderr and "sha256" in result.stderr
    assert "Traceback" not in result.stderr


def test_verify_reports_an_id_beyond_the_vocabulary(prepared):
    val = prepared / "val.bin"
    ids = np.fromfile(val, dtype=np.uint16)
    ids[5] = 65
    ids.tofile(val)
    result = run_verify(prepared)
    assert result.returncode == 1
    assert "token id 65 >= vocab_size 65" in result.stderr


def test_verify_reports_a_missing_bin(prepared):
    (prepared / "val.bin").unlink()
    result = run_verify(prepared)
    assert result.returncode == 1
    assert f"{prepared / 'val.bin'} is missing" in result.stderr


def test_verify_reports_a_missing_meta_json(prepared):
    (prepared / "meta.json").unlink()
    result = run_verify(prepared)
    assert result.returncode == 1
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1
    assert str(prepared / "meta.json") in result.stderr and "does not exist" in result.stderr
    assert "prepare.py" in result.stderr


def test_verify_reports_a_changed_source(prepared):
    source = prepared / "input.txt"
    source.write_bytes(source.read_bytes() + b"\n")
    result = run_verify(prepared)
    assert result.returncode == 1
    assert str(source) in result.stderr and "source sha256" in result.stderr


def test_verify_reports_invalid_meta_json(prepared):
    (prepared / "meta.json").write_text('{"format_version": 1,', encoding="utf-8")
    result = run_verify(prepared)
    assert result.returncode == 1
    assert str(prepared / "meta.json") in result.stderr and "not valid JSON" in result.stderr
    assert "Traceback" not in result.stderr


def test_verify_reports_an_unknown_format_version(prepared):
    meta = json.loads((prepared / "meta.json").read_text(encoding="utf-8"))
    meta["format_version"] = 99
    (prepared / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    result = run_verify(prepared)
    assert result.returncode == 1
    assert "format_version 99" in result.stderr
