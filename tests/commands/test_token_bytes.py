"""Bits per byte, for every lesson's folder: token_bytes.npy (each id's UTF-8 byte length, 0 for a
special token) and meta.json's bytes per split, against the text each split encodes.

For each lesson: token_bytes[ids].sum() over a split is the bytes meta.json records, which are
the UTF-8 length of the split's text (the documents', the end-of-text ids standing for none).
"""

import gzip
import io
import json
import math
import tarfile

import numpy as np
import pytest
from conftest import REPO, run_python

from formats.shards import read_shard
from formats.tokenizers import token_byte_lengths

ENV = {"PYTHONPATH": str(REPO)}


def run(lesson, out, *args):
    result = run_python(REPO / "data" / lesson / "prepare.py", "--out-dir", out, *args, env=ENV)
    assert result.returncode == 0, result.stderr
    return json.loads((out / "meta.json").read_text(encoding="utf-8"))


def split_ids(folder, meta):
    """{split: its ids, one array}, from train.bin/val.bin or from the shards."""
    dtype = np.dtype(meta["dtype"])
    if "shards" not in meta:
        return {s: np.fromfile(folder / f"{s}.bin", dtype) for s in meta["splits"]}
    shards = {s: [x for x in meta["shards"] if x["split"] == s] for s in meta["splits"]}
    return {
        s: np.concatenate([read_shard(folder / x["file"], meta["format"], dtype) for x in xs])
        for s, xs in shards.items()
    }


def check_folder(folder, meta, lengths):
    """token_bytes.npy is `lengths`, listed; each split's ids stand for its recorded bytes."""
    assert meta["token_bytes"]["file"] == "token_bytes.npy"
    saved = np.load(folder / "token_bytes.npy")
    assert saved.dtype == np.int32 and saved.tolist() == list(lengths)
    for split, ids in split_ids(folder, meta).items():
        assert int(saved[ids].sum()) == meta["token_bytes"]["bytes"][split], split
    return meta["token_bytes"]["bytes"]


def utf8(texts):
    return sum(len(t.encode("utf-8")) for t in texts)


def test_shakespeare_char(shakespeare_path, tmp_path):
    meta = run("shakespeare_char", tmp_path, "--input", shakespeare_path)
    text = shakespeare_path.read_text(encoding="utf-8")
    boundary = int(len(text) * 0.9)
    lengths = [len(c.encode()) for c in meta["tokenizer"]["chars"]]
    recorded = check_folder(tmp_path, meta, lengths)
    assert recorded == {"train": utf8([text[:boundary]]), "val": utf8([text[boundary:]])}
    assert recorded == {"train": 1_003_854, "val": 111_540}  # ASCII: one byte a character


def test_a_non_ascii_character_counts_its_bytes(tmp_path):
    (tmp_path / "in.txt").write_text("héllo wörld, ça va? " * 50, encoding="utf-8")
    meta = run("shakespeare_char", tmp_path / "out", "--input", tmp_path / "in.txt")
    lengths = [len(c.encode()) for c in meta["tokenizer"]["chars"]]
    assert sorted(set(lengths)) == [1, 2]
    text = (tmp_path / "in.txt").read_text(encoding="utf-8")
    assert check_folder(tmp_path / "out", meta, lengths)["val"] == utf8(
        [text[int(len(text) * 0.9) :]]
    )


@pytest.mark.parametrize("tokenizer", ["gpt2", "trained"])
def test_shakespeare(tokenizer, shakespeare_path, trained, gpt2_encoding, tmp_path):
    args = ["--input", shakespeare_path]
    encoding = gpt2_encoding
    if tokenizer == "trained":
        trained.save(tmp_path / "tok.json")
        args += ["--tokenizer", tmp_path / "tok.json"]
        encoding = trained.to_tiktoken()
    meta = run("shakespeare", tmp_path, *args)
    text = shakespeare_path.read_text(encoding="utf-8")
    boundary = int(len(text) * 0.9)
    recorded = check_folder(tmp_path, meta, token_byte_lengths(encoding))
    assert recorded == {"train": utf8([text[:boundary]]), "val": utf8([text[boundary:]])}


@pytest.mark.parametrize("fmt", ["bin", "llmc"])
def test_openwebtext(fmt, corpus, gpt2_encoding, tmp_path):
    folder, documents = corpus
    meta = run(
        "openwebtext",
        tmp_path,
        "--data-files",
        folder / "*.jsonl",
        "--format",
        fmt,
        "--cache-dir",
        tmp_path / "cache",
    )
    recorded = check_folder(tmp_path, meta, token_byte_lengths(gpt2_encoding))
    from prepare_common import random_split

    train, val = random_split(len(documents), 0.0005, 2357)
    expected = {"train": utf8(documents[i] for i in train), "val": utf8(documents[i] for i in val)}
    assert recorded == expected  # each <|endoftext|> stands for no byte


@pytest.mark.parametrize("fmt", ["llmc", "npy"])
def test_fineweb(fmt, corpus, gpt2_encoding, tmp_path):
    folder, documents = corpus
    meta = run(
        "fineweb",
        tmp_path,
        "--data-files",
        folder / "*.jsonl",
        "--format",
        fmt,
        "--shard-size",
        50_000,
        "--cache-dir",
        tmp_path / "cache",
    )
    recorded = check_folder(tmp_path, meta, token_byte_lengths(gpt2_encoding))
    assert recorded["train"] + recorded["val"] == utf8(documents)  # a document may straddle two


def test_tinystories(paragraphs, gpt2_encoding, tmp_path):
    """Two members of stories (data00.json is val): each story stripped, as llm.c does."""
    stories = {
        f"data0{i}.json": [f"  {p}\n" for p in paragraphs[i * 50 : (i + 1) * 50]] for i in range(2)
    }
    entries = io.BytesIO()
    with tarfile.open(fileobj=entries, mode="w") as tar:
        for name, items in stories.items():
            data = json.dumps([{"story": s} for s in items]).encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    archive = tmp_path / "TinyStories_all_data.tar.gz"
    archive.write_bytes(gzip.compress(entries.getvalue(), mtime=0))
    meta = run("tinystories", tmp_path / "out", "--archive", archive)
    recorded = check_folder(tmp_path / "out", meta, token_byte_lengths(gpt2_encoding))
    assert recorded == {
        "val": utf8(s.strip() for s in stories["data00.json"]),
        "train": utf8(s.strip() for s in stories["data01.json"]),
    }


def test_nanochat(shakespeare_path, tmp_path):
    """nanochat's folder: the bytes of its documents, which its tokenizer's ids stand for."""
    import shutil

    from formats import nanochat

    shutil.copyfile(shakespeare_path, tmp_path / "input.txt")
    meta = run("nanochat", tmp_path, "--vocab-size", "512")
    encoding = nanochat.load_encoding(tmp_path / "tokenizer" / "tokenizer.pkl")
    saved = np.load(tmp_path / "token_bytes.npy")
    assert saved.tolist() == nanochat.token_byte_lengths(encoding).tolist()
    bos = encoding.encode_single_token("<|bos|>")
    for split in ("train", "val"):
        texts = [
            t for s in meta["shards"] if s["split"] == split for t in _texts(tmp_path / s["file"])
        ]
        ids = np.array([i for t in texts for i in [bos, *encoding.encode_ordinary(t)]])
        assert int(saved[ids].sum()) == meta["token_bytes"]["bytes"][split] == utf8(texts)


def _texts(path):
    import pyarrow.parquet as pq

    return pq.read_table(path).column("text").to_pylist()


def test_bits_per_byte_of_a_char_model_is_its_loss_over_ln_2():
    """The definition, on numbers: 1,000 ASCII targets at 1.47 nats each -> 2.12 bits per byte;
    the same text in 300 GPT-2 tokens at 4.9 nats each -> the same 2.12."""
    lengths = np.ones(65, np.int32)
    nats = 1.47 * 1000
    assert round(nats / math.log(2) / int(lengths[np.zeros(1000, int)].sum()), 2) == 2.12
    assert round(300 * 4.9 / math.log(2) / 1000, 2) == 2.12
