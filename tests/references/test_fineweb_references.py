"""The test oracles of the FineWeb lesson checked against what their sources say, and the local
hub's FineWeb layout checked against datasets' own loader.

- tests/references/llmc_fineweb.py (llm.c's fineweb.py) and tests/references/buildnanogpt_fineweb.py
  (build-nanogpt's): their shards are the document stream (end of text first) cut every
  shard_size tokens, the last one partial and never empty, named and headed as the references name
  and head them; every shard passes llm.c's and modded-nanogpt's readers; they crash where the
  scripts crash.
- tests/stand_ins/hub_server.py's fineweb_files: datasets.load_dataset("HuggingFaceFW/fineweb-edu",
  name="sample-10BT") reads the card's `configs:` and returns the sample's documents in order.
"""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from buildnanogpt_fineweb import load_tokens, write_npy_shards
from hub_server import FINEWEB_COLUMNS, FINEWEB_REPOS, LocalHub, fineweb_files
from llmc_fineweb import (
    ReferenceCrash,
    llmc_check_shard,
    llmc_python_load,
    write_llmc_shards,
)
from modded_nanogpt_loader import load_data_shard


def stream(documents, encoding):
    """Every document's ids, end of text first, one after another."""
    return np.array(
        [i for d in documents for i in [encoding.eot_token, *encoding.encode_ordinary(d)]]
    )


@pytest.mark.parametrize("type_, prefix", [("edu", "edu_fineweb"), ("classic", "fineweb")])
def test_llmc_shards_cut_the_stream_every_shard_size_tokens(
    type_, prefix, paragraphs, gpt2_encoding, tmp_path
):
    documents = paragraphs[:300]
    expected = stream(documents, gpt2_encoding)
    paths = write_llmc_shards(documents, gpt2_encoding, tmp_path, shard_size=5000, type=type_)
    assert [p.name for p in paths] == [f"{prefix}_val_000000.bin"] + [
        f"{prefix}_train_{i:06d}.bin" for i in range(1, len(paths))
    ]
    shards = [load_data_shard(p) for p in paths]  # modded-nanogpt reads every one
    assert [len(s) for s in shards[:-1]] == [5000] * (len(paths) - 1)
    assert 0 < len(shards[-1]) <= 5000
    assert np.array_equal(np.concatenate(shards), expected)
    for path, shard in zip(paths, shards):
        assert llmc_check_shard(path) == len(shard)  # llm.c's dataloader.h checks
        header = np.frombuffer(path.read_bytes()[:1024], dtype=np.int32)
        assert list(header[:3]) == [20240520, 1, len(shard)] and not header[3:].any()


def test_npy_shards_hold_the_same_stream(paragraphs, gpt2_encoding, tmp_path):
    documents = paragraphs[:300]
    bins = write_llmc_shards(documents, gpt2_encoding, tmp_path, shard_size=5000, type="edu")
    npys = write_npy_shards(documents, gpt2_encoding, tmp_path, shard_size=5000)
    assert [p.name for p in npys] == ["edufineweb_val_000000.npy"] + [
        f"edufineweb_train_{i:06d}.npy" for i in range(1, len(npys))
    ]
    for bin_path, npy_path in zip(bins, npys, strict=True):
        assert np.load(npy_path).dtype == np.uint16
        assert np.array_equal(load_tokens(npy_path), load_data_shard(bin_path))


def test_uint32_variant(paragraphs, gpt2_encoding, tmp_path):
    """llm.c's llama-3 format: magic 20240801, version 7, uint32 ids (read by train_llama3.py)."""
    documents = paragraphs[:50]
    paths = write_llmc_shards(documents, gpt2_encoding, tmp_path, 1000, model_desc="llama-3")
    header = np.frombuffer(paths[0].read_bytes()[:1024], dtype=np.int32)
    assert list(header[:3]) == [20240801, 7, 1000] and len(paths) == 3
    assert paths[0].stat().st_size == 1024 + 4 * 1000
    tokens = np.concatenate([llmc_python_load(p) for p in paths])
    assert tokens.dtype == np.uint32
    assert np.array_equal(tokens, stream(documents, gpt2_encoding))


def test_a_corpus_ending_on_a_boundary_has_no_empty_shard(gpt2_encoding, tmp_path):
    documents = ["hello world", "a b c"]  # 3 + 4 tokens with their end of text
    assert len(stream(documents, gpt2_encoding)) == 7
    paths = write_llmc_shards(documents, gpt2_encoding, tmp_path, shard_size=7)
    assert [p.name for p in paths] == ["fineweb_val_000000.bin"]


@pytest.mark.parametrize(
    "documents, shard_size",
    [
        pytest.param(["a b c d e f"], 7, id="the first document fills shard 0"),
        pytest.param(["a", "b c d e f g h", "i j k l m n"], 6, id="two crossing in a row"),
        pytest.param(["a", "b c d e f g h i j k l m n o p"], 4, id="a document past two shards"),
    ],
)
@pytest.mark.parametrize("writer", [write_llmc_shards, write_npy_shards])
def test_where_the_references_crash(writer, documents, shard_size, gpt2_encoding, tmp_path):
    """The scripts' progress bar exists only after an append, and their buffer holds one shard."""
    with pytest.raises(ReferenceCrash):
        writer(documents, gpt2_encoding, tmp_path, shard_size=shard_size)


@pytest.mark.parametrize("kind", ["edu", "classic"])
def test_local_hub_serves_fineweb_configs(kind, paragraphs, tmp_path):
    """datasets reads the card: sample-10BT and sample-100BT are their own folders' files."""
    repo = FINEWEB_REPOS[kind]
    ten, hundred = paragraphs[:40], paragraphs[40:100]
    files = fineweb_files(kind, {"10BT": (ten, [15, 25]), "100BT": (hundred, [60])})
    assert "sample/10BT/001_00000.parquet" in files
    revision = hashlib.sha1(b"fineweb").hexdigest()
    code = (
        "import datasets, json, sys\n"
        "for name in ('sample-10BT', 'sample-100BT'):\n"
        f"    d = datasets.load_dataset({repo!r}, name=name, split='train', "
        f"revision={revision!r})\n"
        "    print(json.dumps({'columns': d.column_names, 'texts': list(d['text'])}))\n"
    )
    with LocalHub(repo, {revision: files}, refs={"main": revision}) as hub:
        result = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, **hub.environment(tmp_path)},
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert hub.unknown == []
    loaded = [json.loads(line) for line in result.stdout.splitlines()]
    assert [x["texts"] for x in loaded] == [ten, hundred]
    assert loaded[0]["columns"] == list(FINEWEB_COLUMNS[kind])
