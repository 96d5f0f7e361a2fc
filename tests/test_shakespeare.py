"""data/shakespeare/prepare.py: nanoGPT's GPT-2 figures and bytes, the --tokenizer path, meta files, bad input."""

import json
import pickle

import numpy as np
import pytest
from conftest import REPO, run_python

import prepare_common
from bpe import Tokenizer

SCRIPT = REPO / "data" / "shakespeare" / "prepare.py"
EOT = "<|endoftext|>"
# sha256 of nanoGPT's train.bin / val.bin for Tiny Shakespeare (its shakespeare/prepare.py, run on the
# mirror's input.txt: tiktoken gpt2, encode_ordinary, 90/10 split on characters, np.uint16 tofile)
TRAIN_SHA256 = "502a2bdc8210d1ac5d5674867cb74467dd31db575d25cf6dbb08c8bdbea8680f"
VAL_SHA256 = "68a53422394c26a655ebe641f5c6f49888e8f4e45fe5d6f02abda63ba3ebd65b"


def run_script(*args, cwd=None):
    return run_python(SCRIPT, *args, cwd=cwd)


def nanogpt_bins(text):
    """nanoGPT's shakespeare/prepare.py, from the text on: the bytes of its train.bin and val.bin."""
    enc = (
        prepare_common.gpt2_encoding()
    )  # tiktoken.get_encoding("gpt2"), offline through the mirror
    n = len(text)
    train_data, val_data = text[: int(n * 0.9)], text[int(n * 0.9) :]
    train_ids, val_ids = enc.encode_ordinary(train_data), enc.encode_ordinary(val_data)
    return np.array(train_ids, dtype=np.uint16).tobytes(), np.array(
        val_ids, dtype=np.uint16
    ).tobytes()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """The default pipeline on the real Tiny Shakespeare (via the mirror when NANOGPT_DATA_MIRROR is set)."""
    out_dir = tmp_path_factory.mktemp("shakespeare")
    (out_dir / "meta.pkl").write_bytes(
        pickle.dumps({"vocab_size": 400})
    )  # left by an earlier --tokenizer run
    result = run_script("--out-dir", out_dir, cwd=tmp_path_factory.mktemp("elsewhere"))
    assert result.returncode == 0, result.stderr
    return out_dir, result.stdout


@pytest.fixture(scope="module")
def small_tokenizer(tmp_path_factory):
    """A 400-token BPE with <|endoftext|>, trained by train_tokenizer.py on the first 200,000 characters."""
    folder = tmp_path_factory.mktemp("tokenizer")
    text = prepare_common.read_text(
        prepare_common.fetch(prepare_common.TINY_SHAKESPEARE, folder / "input.txt")
    )
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
    assert prepare_common.sha256_file(out_dir / "train.bin") == TRAIN_SHA256
    assert prepare_common.sha256_file(out_dir / "val.bin") == VAL_SHA256


def test_bins_are_nanogpts_bytes(prepared):
    out_dir, _ = prepared
    train_bytes, val_bytes = nanogpt_bins((out_dir / "input.txt").read_text(encoding="utf-8"))
    assert (out_dir / "train.bin").read_bytes() == train_bytes
    assert (out_dir / "val.bin").read_bytes() == val_bytes


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
    assert meta["source"]["sha256"] == prepare_common.TINY_SHAKESPEARE.sha256
    assert meta["split"]["boundary_character"] == 1_003_854
    assert prepare_common.verify(out_dir) == []


def test_tokenizer_path(small_tokenizer, tmp_path):
    tokenizer_path, text = small_tokenizer
    input_path = tmp_path / "input.txt"
    input_path.write_text(text[:100_000], encoding="utf-8")
    result = run_script(
        "--input", input_path, "--out-dir", tmp_path / "out", "--tokenizer", tokenizer_path
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
    assert meta_pkl["tokenizer"]["sha256"] == prepare_common.sha256_file(tokenizer_path)
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
    assert prepare_common.verify(out) == []


@pytest.mark.parametrize(
    "case",
    ["missing tokenizer", "not a tokenizer", "missing input", "too short", "out-dir is a file"],
)
def test_bad_input_is_one_line_and_writes_nothing(case, tmp_path):
    out = tmp_path / "out"
    args = ["--out-dir", out, "--input", tmp_path / "input.txt"]
    (tmp_path / "input.txt").write_text(
        "To be, or not to be: that is the question.\n", encoding="utf-8"
    )
    if case == "missing tokenizer":
        args += ["--tokenizer", tmp_path / "nope.json"]
    elif case == "not a tokenizer":
        (tmp_path / "bad.json").write_text('{"merges": 3}', encoding="utf-8")
        args += ["--tokenizer", tmp_path / "bad.json"]
    elif case == "missing input":
        args[3] = tmp_path / "nope.txt"
    elif case == "too short":
        (tmp_path / "input.txt").write_text("T", encoding="utf-8")
    else:
        out.write_text("a file")
    result = run_script(*args)
    assert result.returncode == 1
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    if out.is_dir():
        assert list(out.iterdir()) == []
