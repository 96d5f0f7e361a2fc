"""data/shakespeare_char/prepare.py: nanoGPT's figures and bytes, the lecture notes' examples, bad input."""

import importlib.util
import json
import pickle

import numpy as np
import pytest
from conftest import REPO, assert_clean_failure, run_python
from hypothesis import given, settings
from hypothesis import strategies as st

import prepare_common

SCRIPT = REPO / "data" / "shakespeare_char" / "prepare.py"


def run_script(*args, cwd=None):
    return run_python(SCRIPT, *args, cwd=cwd)


def load_script_module():
    spec = importlib.util.spec_from_file_location("shakespeare_char_prepare", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # safe: the script does its work only under __main__
    return module


def get_batch(bin_path, i, block_size):
    """nanoGPT train.py's get_batch for one row at offset i, in numpy (no torch needed)."""
    data = np.memmap(bin_path, dtype=np.uint16, mode="r")
    x = data[i : i + block_size].astype(np.int64)
    y = data[i + 1 : i + 1 + block_size].astype(np.int64)
    return x.tolist(), y.tolist()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """The real pipeline on the real Tiny Shakespeare (via the mirror when NANOGPT_DATA_MIRROR is set)."""
    out_dir = tmp_path_factory.mktemp("shakespeare_char")
    other_cwd = tmp_path_factory.mktemp("elsewhere")  # works from any folder, no PYTHONPATH
    result = run_script("--out-dir", out_dir, cwd=other_cwd)
    assert result.returncode == 0, result.stderr
    return out_dir, result.stdout


def test_golden_figures(prepared):
    out_dir, stdout = prepared
    assert "length of dataset in characters: 1,115,394" in stdout
    assert "vocab size: 65" in stdout
    assert "train has 1,003,854 tokens" in stdout
    assert "val has 111,540 tokens" in stdout
    assert (
        prepare_common.sha256_file(out_dir / "input.txt") == prepare_common.TINY_SHAKESPEARE.sha256
    )
    assert (out_dir / "train.bin").stat().st_size == 1_003_854 * 2
    assert (out_dir / "val.bin").stat().st_size == 111_540 * 2


def test_bins_equal_nanogpt_reference_encoding(prepared):
    out_dir, _ = prepared
    data = (out_dir / "input.txt").read_text(encoding="utf-8")
    # nanoGPT's own method, verbatim in spirit: sorted set, dict lookups, np.array(uint16).tofile
    chars = sorted(list(set(data)))
    stoi = {ch: i for i, ch in enumerate(chars)}
    n = len(data)
    train_ids = np.array([stoi[c] for c in data[: int(n * 0.9)]], dtype=np.uint16)
    val_ids = np.array([stoi[c] for c in data[int(n * 0.9) :]], dtype=np.uint16)
    assert (out_dir / "train.bin").read_bytes() == train_ids.tobytes()
    assert (out_dir / "val.bin").read_bytes() == val_ids.tobytes()


def test_meta_pkl_keeps_nanogpt_contract(prepared):
    out_dir, _ = prepared
    with open(out_dir / "meta.pkl", "rb") as f:
        meta = pickle.load(f)
    # what train.py and sample.py read from it
    assert meta["vocab_size"] == 65
    stoi, itos = meta["stoi"], meta["itos"]
    encode = lambda s: [stoi[c] for c in s]  # noqa: E731  (sample.py's own lambdas)
    decode = lambda l: "".join([itos[i] for i in l])  # noqa: E731, E741
    assert encode("\n") == [0] and decode(encode("First Citizen:")) == "First Citizen:"
    x, y = get_batch(out_dir / "train.bin", 0, 14)
    assert decode(x) == "First Citizen:" and decode(y) == "irst Citizen:\n"


def test_meta_json(prepared):
    out_dir, _ = prepared
    meta = json.loads((out_dir / "meta.json").read_text(encoding="utf-8"))
    assert meta["format_version"] == 1
    assert meta["dtype"] == "uint16"
    assert meta["tokenizer"]["kind"] == "char" and meta["tokenizer"]["vocab_size"] == 65
    assert (
        meta["tokenizer"]["chars"]
        == "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    )
    assert (
        meta["splits"]["train"]["tokens"] == 1_003_854
        and meta["splits"]["val"]["tokens"] == 111_540
    )
    assert meta["splits"]["val"]["sha256"] == prepare_common.sha256_file(out_dir / "val.bin")
    assert meta["source"]["sha256"] == prepare_common.TINY_SHAKESPEARE.sha256
    assert meta["source"]["path"] == "input.txt"
    assert meta["split"]["train_fraction"] == 0.9
    assert meta["options"] == {"vocab_from": "all", "unseen_in_val": "error"}


def test_verify_command_accepts_the_output(prepared):
    out_dir, _ = prepared
    result = run_python(REPO / "prepare_common.py", "verify", out_dir)
    assert result.returncode == 0, result.stderr
    assert "start of val: " in result.stdout and "?\\n\\nGREMIO:" in result.stdout


def test_rerun_reuses_download_and_gives_same_bytes(prepared):
    out_dir, _ = prepared
    before = {name: (out_dir / name).read_bytes() for name in ("train.bin", "val.bin", "meta.pkl")}
    result = run_script("--out-dir", out_dir)
    assert result.returncode == 0, result.stderr
    assert {name: (out_dir / name).read_bytes() for name in before} == before


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_distinct_chars_is_sorted_set(text):
    module = load_script_module()
    assert module.distinct_chars(text) == sorted(set(text))


def test_lecture_example_encode_decode():
    module = load_script_module()
    chars = sorted(set("\n abc"))
    assert list(module.encode("ab c", chars)) == [2, 3, 1, 4]
    assert module.decode([2, 3, 1, 4], chars) == "ab c"
    assert list(module.encode("", chars)) == []


def test_lecture_example_abba_inputs_and_targets(tmp_path):
    text_path = tmp_path / "abba.txt"
    text_path.write_text("ABBAABBAAB", encoding="utf-8")  # train "ABBAABBAA", val "B"
    result = run_script("--input", text_path, "--out-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert get_batch(tmp_path / "out" / "train.bin", 0, 3) == ([0, 1, 1], [1, 1, 0])
    assert (tmp_path / "out" / "val.bin").read_bytes() == np.array([1], dtype=np.uint16).tobytes()


def test_non_ascii_input_and_recorded_hash(tmp_path):
    text = "Grüße, 世界! 🙂\n" * 20
    text_path = tmp_path / "text.txt"
    text_path.write_text(text, encoding="utf-8")
    result = run_script("--input", text_path, "--out-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    meta = json.loads((tmp_path / "out" / "meta.json").read_text(encoding="utf-8"))
    chars = sorted(set(text))
    assert meta["tokenizer"]["chars"] == "".join(chars)
    assert meta["source"]["sha256"] == prepare_common.sha256_file(text_path)
    ids = np.fromfile(tmp_path / "out" / "train.bin", dtype=np.uint16)
    assert "".join(chars[i] for i in ids) == text[: int(len(text) * 0.9)]
    assert not (tmp_path / "out" / "input.txt").exists()  # a local --input is not copied


def test_strict_vocab_from_train(tmp_path):
    text_path = tmp_path / "text.txt"
    text_path.write_text("abababababababababXY", encoding="utf-8")  # val "XY" never seen in train
    out_dir = tmp_path / "out"
    refused = run_script("--input", text_path, "--out-dir", out_dir, "--vocab-from", "train")
    assert refused.returncode == 1
    assert "never seen in train" in refused.stderr and "'XY'" in refused.stderr
    assert sorted(p.name for p in out_dir.iterdir()) == []
    dropped = run_script(
        "--input",
        text_path,
        "--out-dir",
        out_dir,
        "--vocab-from",
        "train",
        "--unseen-in-val",
        "drop",
    )
    assert dropped.returncode == 0, dropped.stderr
    assert "vocab size: 2" in dropped.stdout and "val has 0 tokens" in dropped.stdout
    assert (out_dir / "val.bin").stat().st_size == 0


@pytest.mark.parametrize(
    "content, fragments",
    [
        (None, ["does not exist"]),
        (b"", ["is empty"]),
        (b"hello \xff world, more text", ["not valid UTF-8", "byte offset 6"]),
        (b"x", ["too short for non-empty train and val splits"]),
    ],
    ids=["missing", "empty", "invalid-utf8", "too-short"],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, content, fragments):
    text_path = tmp_path / "input.txt"
    if content is not None:
        text_path.write_bytes(content)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "train.bin").write_bytes(b"previous")  # an earlier output must survive untouched
    result = run_script("--input", text_path, "--out-dir", out_dir)
    assert_clean_failure(result, str(text_path), *fragments)
    assert sorted(p.name for p in out_dir.iterdir()) == ["train.bin"]
    assert (out_dir / "train.bin").read_bytes() == b"previous"


def test_out_dir_that_is_a_file(tmp_path):
    text_path = tmp_path / "input.txt"
    text_path.write_text("some text long enough", encoding="utf-8")
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    assert_clean_failure(run_script("--input", text_path, "--out-dir", not_a_dir), "is a file")


def test_download_failure_through_the_script(tmp_path, monkeypatch):
    monkeypatch.setenv(prepare_common.MIRROR_ENV, str(tmp_path / "empty-mirror"))
    out_dir = tmp_path / "out"
    assert_clean_failure(run_script("--out-dir", out_dir), "mirror file", "does not exist")
    assert list(out_dir.iterdir()) == []


def test_tampered_download_is_not_trusted(tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "input.txt").write_text("not Shakespeare at all\n" * 10, encoding="utf-8")
    result = run_script("--out-dir", out_dir)
    assert_clean_failure(result, "input.txt", "sha256", "delete it")
    assert sorted(p.name for p in out_dir.iterdir()) == ["input.txt"]
