"""data/shakespeare/prepare.py: nanoGPT's GPT-2 figures and bytes, the --tokenizer path, meta
files, bad input."""

import hashlib
import json
import pickle

import numpy as np
import pytest
from conftest import REFERENCES, REPO, TINY_SHAKESPEARE, assert_refused, run_python

from bpe import EOT, Tokenizer
from inspection import verify
from safety.files import sha256_file

pytestmark = pytest.mark.usefixtures("downloads")  # Tiny Shakespeare, GPT-2's files

SCRIPT = REPO / "data" / "shakespeare" / "prepare.py"
# sha256 of nanoGPT's train.bin / val.bin for Tiny Shakespeare (its shakespeare/prepare.py, run
# on the mirror's input.txt: tiktoken gpt2, encode_ordinary, 90/10 split on characters, np.uint16
# tofile)
TRAIN_SHA256 = "502a2bdc8210d1ac5d5674867cb74467dd31db575d25cf6dbb08c8bdbea8680f"
VAL_SHA256 = "68a53422394c26a655ebe641f5c6f49888e8f4e45fe5d6f02abda63ba3ebd65b"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """The default pipeline on the real Tiny Shakespeare (via the mirror when NANOGPT_DATA_MIRROR
    is set)."""
    out_dir = tmp_path_factory.mktemp("shakespeare")
    stale = pickle.dumps({"vocab_size": 400})  # left by an earlier --tokenizer run, whose
    (out_dir / "meta.pkl").write_bytes(stale)  # meta.json lists it
    record = {"meta_pkl": {"file": "meta.pkl", "sha256": hashlib.sha256(stale).hexdigest()}}
    (out_dir / "meta.json").write_text(json.dumps(record), encoding="utf-8")
    result = run_python(SCRIPT, "--out-dir", out_dir, cwd=tmp_path_factory.mktemp("elsewhere"))
    assert result.returncode == 0, result.stderr
    return out_dir, result.stdout


@pytest.fixture(scope="module")
def small_tokenizer(tmp_path_factory, shakespeare):
    """A 400-token BPE with <|endoftext|>, trained by train_tokenizer.py on the first 200,000
    characters."""
    folder = tmp_path_factory.mktemp("tokenizer")
    text = shakespeare
    (folder / "head.txt").write_text(text[:200_000], encoding="utf-8")
    result = run_python(
        REPO / "train_tokenizer.py",
        "--input",
        folder / "head.txt",
        "--vocab-size",
        "400",
        "--out",
        folder / "tok400.json",
        "--special-tokens",
        EOT,
    )
    assert result.returncode == 0, result.stderr
    return folder / "tok400.json", text


def test_golden_figures(prepared):
    out_dir, stdout = prepared
    assert "length of dataset in characters: 1,115,394" in stdout
    assert "train has 301,966 tokens (3.32 characters per token)" in stdout
    assert "val has 36,059 tokens (3.09 characters per token)" in stdout
    assert sha256_file(out_dir / "train.bin") == TRAIN_SHA256
    assert sha256_file(out_dir / "val.bin") == VAL_SHA256


def test_bins_are_nanogpts_bytes(prepared, tmp_path):
    out_dir, stdout = prepared
    (tmp_path / "input.txt").write_bytes((out_dir / "input.txt").read_bytes())
    oracle = run_python(REFERENCES / "nanogpt_shakespeare.py", tmp_path)
    assert oracle.returncode == 0, oracle.stderr
    for name in ("train.bin", "val.bin"):
        assert (out_dir / name).read_bytes() == (tmp_path / name).read_bytes(), name
    assert "train has 301,966 tokens" in oracle.stdout and "val has 36,059 tokens" in oracle.stdout


def test_the_lesson_keeps_nanogpts_lines():
    """The encoding is nanoGPT's own lines, character for character: the reference script
    holds each, and so does the lesson."""
    quoted = [
        "train_ids = enc.encode_ordinary(train_data)",
        "val_ids = enc.encode_ordinary(val_data)",
    ]
    for path in (REFERENCES / "nanogpt_shakespeare.py", SCRIPT):
        lines = {line.strip() for line in path.read_text().splitlines()}
        assert [line for line in quoted if line not in lines] == [], path.name


def test_gpt2_meta_files(prepared):
    out_dir, stdout = prepared
    assert not (
        out_dir / "meta.pkl"
    ).exists()  # the stale one is gone: sample.py keeps its GPT-2 default
    assert "removed" in stdout
    meta = json.loads((out_dir / "meta.json").read_text())
    assert meta["dtype"] == "uint16"
    assert meta["tokenizer"]["kind"] == "tiktoken" and meta["tokenizer"]["name"] == "gpt2"
    assert meta["tokenizer"]["vocab_size"] == 50257 and meta["tokenizer"]["eot_id"] == 50256
    assert meta["splits"]["train"] == {
        "file": "train.bin",
        "tokens": 301_966,
        "sha256": TRAIN_SHA256,
    }
    assert meta["splits"]["val"] == {"file": "val.bin", "tokens": 36_059, "sha256": VAL_SHA256}
    assert meta["source"]["sha256"] == TINY_SHAKESPEARE.sha256
    assert meta["split"]["boundary_character"] == 1_003_854
    assert verify(out_dir) == []


def test_tokenizer_path(small_tokenizer, tmp_path):
    tokenizer_path, text = small_tokenizer
    input_path = tmp_path / "input.txt"
    input_path.write_text(text[:100_000], encoding="utf-8")
    result = run_python(
        SCRIPT, "--input", input_path, "--out-dir", tmp_path / "out", "--tokenizer", tokenizer_path
    )
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"

    # the ids are the tokenizer's own (its pure-Python encoder, not only the tiktoken export)
    tokenizer = Tokenizer.load(tokenizer_path)
    train_text, val_text = text[:90_000], text[90_000:100_000]
    train_ids = np.fromfile(out / "train.bin", dtype=np.uint16)
    val_ids = np.fromfile(out / "val.bin", dtype=np.uint16)
    assert train_ids.tolist() == tokenizer.encode_ordinary(train_text)
    assert val_ids.tolist() == tokenizer.encode_ordinary(val_text)
    assert tokenizer.decode(train_ids.tolist()) == train_text
    assert (
        f"train has {len(train_ids):,} tokens ({90_000 / len(train_ids):.2f} characters per token)"
        in result.stdout
    )

    # meta.pkl: nanoGPT's train.py reads vocab_size; the identity names the tokenizer file
    meta_pkl = pickle.loads((out / "meta.pkl").read_bytes())
    assert meta_pkl["vocab_size"] == tokenizer.vocab_size == 400
    assert meta_pkl["tokenizer"]["sha256"] == sha256_file(tokenizer_path)
    assert meta_pkl["tokenizer"]["path"] == str(tokenizer_path.resolve())
    # nanoGPT's sample.py reads stoi/itos from any meta.pkl: its own lambdas must work on it
    stoi, itos = meta_pkl["stoi"], meta_pkl["itos"]
    encode = lambda s: [stoi[c] for c in s]  # noqa: E731  (sample.py, verbatim)
    decode = lambda l: "".join([itos[i] for i in l])  # noqa: E731, E741
    assert decode(train_ids.tolist()) == train_text  # ASCII text: every token decodes whole
    assert decode(encode("\nROMEO:")) == "\nROMEO:"
    assert encode("\n") == [tokenizer.encode_ordinary("\n")[0]]
    meta = json.loads((out / "meta.json").read_text())
    assert meta["tokenizer"] == meta_pkl["tokenizer"]
    assert (
        meta["tokenizer"]["kind"] == "bpe"
        and meta["tokenizer"]["eot_id"] == tokenizer.special_tokens[EOT]
    )
    assert meta["source"]["path"] == str(input_path.resolve())
    assert verify(out) == []


HAMLET = "To be, or not to be: that is the question.\n"


@pytest.mark.parametrize(
    "files, args, fragments",
    [
        pytest.param(
            {"input.txt": HAMLET},
            ["--tokenizer", "nope.json"],
            ["--tokenizer nope.json does not exist"],
            id="missing-tokenizer",
        ),
        pytest.param(
            {"input.txt": HAMLET, "bad.json": '{"merges": 3}'},
            ["--tokenizer", "bad.json"],
            ["bad.json is not a tokenizer file"],
            id="not-a-tokenizer",
        ),
        pytest.param({}, [], ["input.txt does not exist"], id="missing-input"),
        pytest.param({"input.txt": "T"}, [], ["too short"], id="too-short"),
        pytest.param(
            {"input.txt": HAMLET, "out": "a file"}, [], ["is a file"], id="out-dir-is-a-file"
        ),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, files, args, fragments):
    args = ["--input", "input.txt", "--out-dir", "out", *args]
    assert_refused(SCRIPT, tmp_path, files, args, fragments)
