"""The shard writer of prepare_common against llm.c's and build-nanogpt's rules.

Hand-made documents, each case a row: the shards our writer makes from the documents' ids must
be the bytes llm.c's dev/data/fineweb.py (tests/references/llmc_fineweb.py) and build-nanogpt's
fineweb.py (tests/references/buildnanogpt_fineweb.py) write from the same documents, file names
included, and every shard must pass modded-nanogpt's reader and llm.c's dataloader checks. Where the
references crash (see their docstrings), ours must write the stream cut every shard_size tokens,
which is what their rule means.
"""

import numpy as np
import pytest
from buildnanogpt_fineweb import write_npy_shards
from llmc_fineweb import ReferenceCrash, llmc_check_shard, llmc_python_load, write_llmc_shards
from modded_nanogpt_loader import load_data_shard

from formats.shards import read_shard
from prepare_common import llmc_names, write_shards
from safety import PrepareError


def doc(n):
    """A document of n GPT-2 tokens with its end of text: doc(4) = "a b c" (eot, a, b, c)."""
    return " ".join("abcdefghijklmnopqrstuvwxyz"[: n - 1]) if n > 1 else ""


CASES = [
    # (documents, shard_size, the shards' token counts)
    pytest.param([doc(3), doc(7)], 10, [10], id="a document exactly fills the shard"),
    pytest.param([doc(3), doc(7), doc(2)], 10, [10, 2], id="exact fill, then the next shard"),
    pytest.param([doc(3), doc(9)], 10, [10, 2], id="a document straddles two shards"),
    pytest.param([doc(4), doc(5), doc(2)], 100, [11], id="a corpus smaller than one shard"),
    pytest.param([doc(3), "", doc(3)], 100, [7], id="an empty document is its end of text"),
    pytest.param([doc(2), "", doc(2), doc(3)], 3, [3, 3, 2], id="an empty document on a boundary"),
    pytest.param(
        [doc(5)] * 6, 10, [10, 10, 10], id="the corpus ends on a boundary: no empty shard"
    ),
]
REFERENCE_CRASHES = [  # llm.c and build-nanogpt stop with a traceback; the rule still says what
    pytest.param([doc(10), doc(3)], 10, [10, 3], id="the first document fills shard 0"),
    pytest.param([doc(2), doc(5), doc(5)], 5, [5, 5, 2], id="two documents cross in a row"),
    pytest.param([doc(2), doc(23)], 5, [5, 5, 5, 5, 5], id="a document longer than two shards"),
]


def document_ids(documents, encoding, dtype=np.uint16):
    return [np.array([encoding.eot_token, *encoding.encode_ordinary(d)], dtype) for d in documents]


def ours(documents, encoding, out, shard_size, shard_format, dtype=np.uint16):
    prefix = "edu_fineweb" if shard_format == "llmc" else "edufineweb"
    dtype = np.dtype(dtype)
    ids = document_ids(documents, encoding, dtype)
    return write_shards(
        out, ids, llmc_names(prefix), shard_size, dtype, encoding.n_vocab, shard_format
    )


@pytest.mark.parametrize("documents, shard_size, counts", CASES)
@pytest.mark.parametrize("shard_format", ["llmc", "npy"])
def test_same_bytes_as_the_references(
    shard_format, documents, shard_size, counts, gpt2_encoding, tmp_path
):
    reference = {"llmc": write_llmc_shards, "npy": write_npy_shards}[shard_format]
    options = {"type": "edu"} if shard_format == "llmc" else {}
    (tmp_path / "ref").mkdir()
    (tmp_path / "ours").mkdir()
    expected = reference(documents, gpt2_encoding, tmp_path / "ref", shard_size, **options)
    shards = ours(documents, gpt2_encoding, tmp_path / "ours", shard_size, shard_format)
    assert [s["file"] for s in shards] == [p.name for p in expected]
    assert [s["tokens"] for s in shards] == counts
    assert [s["split"] for s in shards] == ["val"] + ["train"] * (len(counts) - 1)
    for path in expected:
        assert (tmp_path / "ours" / path.name).read_bytes() == path.read_bytes()
        if shard_format == "llmc":
            assert len(load_data_shard(path)) == llmc_check_shard(path)


@pytest.mark.parametrize("documents, shard_size, counts", REFERENCE_CRASHES)
def test_where_the_references_crash_the_stream_is_still_cut(
    documents, shard_size, counts, gpt2_encoding, tmp_path
):
    with pytest.raises(ReferenceCrash):
        write_llmc_shards(documents, gpt2_encoding, tmp_path, shard_size)
    shards = ours(documents, gpt2_encoding, tmp_path, shard_size, "llmc")
    assert [s["tokens"] for s in shards] == counts
    tokens = np.concatenate([load_data_shard(tmp_path / s["file"]) for s in shards])
    assert np.array_equal(tokens, np.concatenate(document_ids(documents, gpt2_encoding)))


def test_uint32_variant_for_a_vocabulary_past_65536(paragraphs, gpt2_encoding, tmp_path):
    """llm.c's llama-3 files: magic 20240801, version 7, uint32 ids, read by train_llama3.py."""
    documents = paragraphs[:60]
    (tmp_path / "ref").mkdir()
    expected = write_llmc_shards(
        documents, gpt2_encoding, tmp_path / "ref", 1000, type="edu", model_desc="llama-3"
    )
    shards = ours(documents, gpt2_encoding, tmp_path, 1000, "llmc", np.uint32)
    assert len(shards) == len(expected) > 2
    for path in expected:
        assert (tmp_path / path.name).read_bytes() == path.read_bytes()
        assert llmc_python_load(path).dtype == np.uint32
        assert len(read_shard(tmp_path / path.name, "llmc", np.dtype(np.uint32))) == len(
            llmc_python_load(path)
        )


def test_an_id_past_the_vocabulary_is_refused_before_writing(tmp_path):
    with pytest.raises(PrepareError, match="token id 70 at position 1 is >= vocab_size 65"):
        write_shards(
            tmp_path,
            [np.array([3, 70], np.uint16)],
            llmc_names("x"),
            10,
            np.dtype(np.uint16),
            65,
            "llmc",
        )
    assert list(tmp_path.iterdir()) == []
