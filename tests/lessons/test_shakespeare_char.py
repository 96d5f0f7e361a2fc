"""data/shakespeare_char/prepare.py: nanoGPT's figures and bytes (its own script as the oracle),
the lecture notes' examples, the strict vocabulary, bad input."""

import importlib.util
import json
import pickle

import numpy as np
import pytest
from conftest import (
    COMMON,
    REFERENCES,
    REPO,
    TINY_SHAKESPEARE,
    assert_clean_failure,
    assert_refused,
    names_in,
    run_python,
)
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from safety.downloads import MIRROR_ENV
from safety.files import sha256_file

pytestmark = pytest.mark.usefixtures("downloads")  # Tiny Shakespeare, GPT-2's files

SCRIPT = REPO / "data" / "shakespeare_char" / "prepare.py"


def load_script_module():
    spec = importlib.util.spec_from_file_location("shakespeare_char_prepare", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # safe: the script does its work only under __main__
    return module


script = load_script_module()


def get_batch(bin_path, i, block_size):
    """nanoGPT train.py's get_batch for one row at offset i, in numpy (no torch needed)."""
    data = np.memmap(bin_path, dtype=np.uint16, mode="r")
    x = data[i : i + block_size].astype(np.int64)
    y = data[i + 1 : i + 1 + block_size].astype(np.int64)
    return x.tolist(), y.tolist()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """The real pipeline on the real Tiny Shakespeare (via the mirror when NANOGPT_DATA_MIRROR is
    set)."""
    out_dir = tmp_path_factory.mktemp("shakespeare_char")
    other_cwd = tmp_path_factory.mktemp("elsewhere")  # works from any folder, no PYTHONPATH
    result = run_python(SCRIPT, "--out-dir", out_dir, cwd=other_cwd)
    assert result.returncode == 0, result.stderr
    return out_dir, result.stdout


def test_golden_figures(prepared):
    out_dir, stdout = prepared
    assert "length of dataset in characters: 1,115,394" in stdout
    assert "vocab size: 65" in stdout
    assert "train has 1,003,854 tokens" in stdout
    assert "val has 111,540 tokens" in stdout
    assert sha256_file(out_dir / "input.txt") == TINY_SHAKESPEARE.sha256
    assert (out_dir / "train.bin").stat().st_size == 1_003_854 * 2
    assert (out_dir / "val.bin").stat().st_size == 111_540 * 2


def test_outputs_equal_nanogpts_script(prepared, tmp_path):
    out_dir, stdout = prepared
    (tmp_path / "input.txt").write_bytes((out_dir / "input.txt").read_bytes())
    oracle = run_python(REFERENCES / "nanogpt_shakespeare_char.py", tmp_path)
    assert oracle.returncode == 0, oracle.stderr
    for name in ("train.bin", "val.bin", "meta.pkl"):
        assert (out_dir / name).read_bytes() == (tmp_path / name).read_bytes(), name
    assert oracle.stdout in stdout  # the same five lines of figures


NANOGPT_LINES = [  # what the lecture notes quote and readers compare with nanoGPT's script
    "chars = sorted(list(set(data)))",
    "vocab_size = len(chars)",
    'print(f"vocab size: {vocab_size:,}")',
    "stoi = { ch:i for i,ch in enumerate(chars) }",
    "itos = { i:ch for i,ch in enumerate(chars) }",
    "return [stoi[c] for c in s] # encoder: take a string, output a list of integers",
    "return ''.join([itos[i] for i in l]) # decoder: take a list of integers, output a string",
    "train_ids = encode(train_data)",
    "val_ids = encode(val_data)",
    'print(f"train has {len(train_ids):,} tokens")',
]


def test_the_lesson_keeps_nanogpts_lines():
    """The vocabulary, the maps and the encoding are nanoGPT's own lines, character for
    character: the reference script holds each, and so does the lesson."""
    for path in (REFERENCES / "nanogpt_shakespeare_char.py", SCRIPT):
        lines = {line.strip() for line in path.read_text().splitlines()}
        assert [line for line in NANOGPT_LINES if line not in lines] == [], path.name


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
    assert meta["splits"]["val"]["sha256"] == sha256_file(out_dir / "val.bin")
    assert meta["source"]["sha256"] == TINY_SHAKESPEARE.sha256
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
    result = run_python(SCRIPT, "--out-dir", out_dir)
    assert result.returncode == 0, result.stderr
    assert {name: (out_dir / name).read_bytes() for name in before} == before


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1), st.sets(st.characters(), min_size=1))
def test_drop_unseen_keeps_exactly_the_seen_characters(val_data, unseen):
    kept = "".join(c for c in val_data if c not in unseen)
    assume(kept)  # dropping everything is an error: see test_bad_input_is_one_line_...
    dropped = {"characters": len(val_data) - len(kept)}
    dropped["bytes"] = len(val_data.encode()) - len(kept.encode())
    assert script.drop_unseen(val_data, unseen, "drop") == (kept, dropped)


def test_lecture_example_encode_decode(tmp_path):
    # chars of "\n abc" sorted: ["\n", " ", "a", "b", "c"]; "ab c" -> [2, 3, 1, 4]
    text_path = tmp_path / "text.txt"
    text_path.write_text("ab c\n" * 10, encoding="utf-8")
    result = run_python(SCRIPT, "--input", text_path, "--out-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    ids = np.fromfile(tmp_path / "out" / "train.bin", dtype=np.uint16).tolist()
    assert ids[:5] == [2, 3, 1, 4, 0]
    meta = pickle.loads((tmp_path / "out" / "meta.pkl").read_bytes())
    assert "".join(meta["itos"][i] for i in ids[:4]) == "ab c"
    assert [meta["stoi"][c] for c in "ab c"] == [2, 3, 1, 4]


def test_lecture_example_abba_inputs_and_targets(tmp_path):
    text_path = tmp_path / "abba.txt"
    text_path.write_text("ABBAABBAAB", encoding="utf-8")  # train "ABBAABBAA", val "B"
    result = run_python(SCRIPT, "--input", text_path, "--out-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert get_batch(tmp_path / "out" / "train.bin", 0, 3) == ([0, 1, 1], [1, 1, 0])
    assert (tmp_path / "out" / "val.bin").read_bytes() == np.array([1], dtype=np.uint16).tobytes()


def test_non_ascii_input_and_recorded_hash(tmp_path):
    text = "Grüße, 世界! 🙂\n" * 20
    text_path = tmp_path / "text.txt"
    text_path.write_text(text, encoding="utf-8")
    result = run_python(SCRIPT, "--input", text_path, "--out-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    meta = json.loads((tmp_path / "out" / "meta.json").read_text(encoding="utf-8"))
    chars = sorted(set(text))
    assert meta["tokenizer"]["chars"] == "".join(chars)
    assert meta["source"]["sha256"] == sha256_file(text_path)
    ids = np.fromfile(tmp_path / "out" / "train.bin", dtype=np.uint16)
    assert "".join(chars[i] for i in ids) == text[: int(len(text) * 0.9)]
    assert not (tmp_path / "out" / "input.txt").exists()  # a local --input is not copied


def test_strict_vocab_from_train_drops_unseen_val_characters(tmp_path):
    text_path = tmp_path / "text.txt"
    text_path.write_text("ab" * 10 + "aXYb", encoding="utf-8")  # train "abab...a", val "XYb"
    out_dir = tmp_path / "out"
    args = ["--vocab-from", "train", "--unseen-in-val", "drop"]
    result = run_python(SCRIPT, "--input", text_path, "--out-dir", out_dir, *args)
    assert result.returncode == 0, result.stderr
    assert "vocab size: 2" in result.stdout
    assert "dropped 2 val characters never seen in train: 'XY'" in result.stdout
    assert "val has 1 tokens" in result.stdout
    assert np.fromfile(out_dir / "val.bin", dtype=np.uint16).tolist() == [1]  # "b"
    bpb = run_python(COMMON, "bpb", out_dir)
    assert bpb.returncode == 0, bpb.stderr
    assert "val.bin leaves out 2 characters train never had (2 bytes of the text)" in bpb.stdout


def test_many_unseen_characters_make_one_short_line(tmp_path):
    """20,000 distinct characters in val that train never had: one line, its list cut short."""
    unseen = "".join(map(chr, range(0x4E00, 0x4E00 + 20_000)))
    text_path = tmp_path / "text.txt"
    text_path.write_text("ab" * 90_000 + unseen, encoding="utf-8")
    args = ["--input", text_path, "--out-dir", tmp_path / "out", "--vocab-from", "train"]
    result = run_python(SCRIPT, *args)
    assert_clean_failure(result, "val has 20,000 characters never seen", "(20,000 characters)")
    assert len(result.stderr) < 1_000, result.stderr[:2_000]


PREVIOUS = {  # an earlier output, listed by its meta.json: it must survive untouched
    "out/train.bin": b"previous",
    "out/meta.json": '{"splits": {"train": {"file": "train.bin"}}}',
}


@pytest.mark.parametrize(
    "files, args, fragments",
    [
        pytest.param(PREVIOUS, [], ["input.txt", "does not exist"], id="missing"),
        pytest.param({"input.txt": b"", **PREVIOUS}, [], ["input.txt", "is empty"], id="empty"),
        pytest.param(
            {"input.txt": b"hello \xff world, more text", **PREVIOUS},
            [],
            ["input.txt", "not valid UTF-8", "byte offset 6"],
            id="invalid-utf8",
        ),
        pytest.param(
            {"input.txt": b"x", **PREVIOUS},
            [],
            ["input.txt", "too short for non-empty train and val splits"],
            id="too-short",
        ),
        pytest.param(
            {"input.txt": "some text long enough", "out": "a file"},
            [],
            ["--out-dir out is a file"],
            id="out-dir-is-a-file",
        ),
        pytest.param(
            {"input.txt": "abababababababababXY", **PREVIOUS},
            ["--vocab-from", "train"],
            ["val has 2 characters never seen in train ('XY', first at val offset 0)"],
            id="unseen-in-val",
        ),
        pytest.param(
            {"input.txt": "abababababababababXY", **PREVIOUS},
            ["--vocab-from", "train", "--unseen-in-val", "drop"],
            ["('XY')", "leaves val empty"],
            id="unseen-in-val-dropped-leaves-val-empty",
        ),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, files, args, fragments):
    args = ["--input", "input.txt", "--out-dir", "out", *args]
    assert_refused(SCRIPT, tmp_path, files, args, fragments)


def test_unseen_in_val_drop_without_a_train_vocabulary_is_a_usage_error():
    """With the vocabulary from all the text no character is unseen: drop would do nothing."""
    result = run_python(SCRIPT, "--unseen-in-val", "drop")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "--unseen-in-val drop goes with --vocab-from train" in result.stderr


def test_download_failure_through_the_script(tmp_path, monkeypatch):
    monkeypatch.setenv(MIRROR_ENV, str(tmp_path / "empty-mirror"))
    out_dir = tmp_path / "out"
    assert_clean_failure(run_python(SCRIPT, "--out-dir", out_dir), "mirror file", "does not exist")
    assert not out_dir.exists()  # the failed run removed the folder it created


def test_tampered_download_is_not_trusted(tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "input.txt").write_text("not Shakespeare at all\n" * 10, encoding="utf-8")
    result = run_python(SCRIPT, "--out-dir", out_dir)
    assert_clean_failure(result, "input.txt", "sha256", "delete it")
    assert names_in(out_dir) == ["input.txt"]
