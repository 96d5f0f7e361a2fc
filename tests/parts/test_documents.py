"""prepare_common.py's documents: loading and checking document collections, tokenizing them a
batch at a time, and streaming their ids back out (data/openwebtext's machinery, each piece on
its own)."""

import errno
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import lesson, write_files
from hypothesis import given, settings
from hypothesis import strategies as st

from documents.inputs import expand_data_files, load_documents
from prepare_common import (
    encode_document,
    random_split,
    split_sizes,
    tokenize_dataset,
    tokenize_documents,
)
from safety import PrepareError

GPT2_EOT = 50256
GPT2_RECORD = {"kind": "tiktoken", "sha256": "gpt2", "eot_id": GPT2_EOT}  # what the checks read
OPENWEBTEXT = lesson("openwebtext")["OPENWEBTEXT"]


def tokenize(texts, encoding, dtype):
    return tokenize_documents(texts, range(len(texts)), encoding, GPT2_RECORD, dtype, "document")


def test_tokenize_documents_is_nanogpts_process_a_batch_at_a_time(gpt2_encoding):
    texts = ["Hello world", "Hi", "", "a <|endoftext|> in the text is plain text", "lone \ud800 !"]
    out = tokenize(texts, gpt2_encoding, np.dtype(np.uint16))
    assert [ids.tolist() for ids in out["ids"][:2]] == [[15496, 995, 50256], [17250, 50256]]
    assert [ids.tolist() for ids in out["ids"]] == [
        gpt2_encoding.encode_ordinary(t) + [GPT2_EOT] for t in texts
    ]
    assert out["len"] == [len(gpt2_encoding.encode_ordinary(t)) + 1 for t in texts]
    assert all(ids.dtype == np.uint16 for ids in out["ids"])
    with pytest.raises(PrepareError, match="uint8 cannot hold the ids of tokenizer gpt2"):
        tokenize(texts, gpt2_encoding, np.dtype(np.uint8))


@pytest.mark.parametrize("eot_first", [False, True])
def test_tokenize_documents_counts_each_document_s_figures(gpt2_encoding, eot_first):
    """With figures, each document's row is document_figures' of its text (a lone surrogate made
    U+FFFD, as tiktoken encodes it) and its ids without the end-of-text, wherever that sits."""
    from formats.val_bytes import RecordTokens, document_figures

    texts = ["Hello world", "", "lone \ud800 !", "a <|endoftext|> b", "  spaces  \n\n"]
    dtype, tokens = np.dtype(np.uint16), RecordTokens(GPT2_RECORD, encoding=gpt2_encoding)
    out = tokenize_documents(
        texts, range(5), gpt2_encoding, GPT2_RECORD, dtype, "doc", eot_first, figures=True
    )
    fixed = [text.replace("\ud800", "\ufffd") for text in texts]
    expected = [document_figures(t, gpt2_encoding.encode_ordinary(t), tokens) for t in fixed]
    assert out["figures"].tolist() == [list(row) for row in expected]
    assert out["figures"][2].tolist() == [
        1,
        10,
        10,
        10,
        0,
        0,
        0,
    ]  # "lone \ufffd !": U+FFFD is 3 bytes


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_encode_document_is_encode_ordinary_then_eot(gpt2_encoding, text):
    for dtype in (np.uint16, np.uint32):
        ids = encode_document(text, gpt2_encoding, GPT2_EOT, np.dtype(dtype))
        assert ids.dtype == dtype
        assert ids.tolist() == gpt2_encoding.encode_ordinary(text) + [GPT2_EOT]
        first = encode_document(text, gpt2_encoding, GPT2_EOT, np.dtype(dtype), eot_first=True)
        assert first.tolist() == [GPT2_EOT] + gpt2_encoding.encode_ordinary(text)  # llm.c's


@pytest.fixture(scope="module")
def tokenized(corpus, tmp_path_factory, gpt2_encoding):
    """90% of the corpus, loaded by load_documents and mapped exactly as the script maps it."""
    folder, _ = corpus
    cache = tmp_path_factory.mktemp("cache")
    documents = load_documents(OPENWEBTEXT, [str(folder / "*.jsonl")], 1, cache)
    split = documents.train_test_split(test_size=0.1, seed=1)["train"]
    dtype = np.dtype(np.uint16)
    return tokenize_dataset(split, gpt2_encoding, GPT2_RECORD, dtype, "doc", 2, "tokenizing")


def lesson_batches(tokenized, batch_size):
    """data/openwebtext/prepare.py's step 5: each batch of documents' ids, one flat array."""
    for batch in tokenized.with_format("arrow").iter(batch_size=batch_size):
        yield batch["ids"].combine_chunks().flatten().to_numpy()


@pytest.mark.parametrize("batch_size", [1, 7, 10_000])
def test_the_lessons_write_loop_is_concatenate_of_the_ids_column(tokenized, batch_size):
    """The memmap loop copies the ids of every document, in order, as uint16, from the Arrow
    file beside the documents' cache; `len` adds up to them (the memmap's size)."""
    assert len(tokenized.cache_files) == 1
    expected = np.concatenate(tokenized.with_format("numpy")["ids"])
    batches = list(lesson_batches(tokenized, batch_size))
    assert np.concatenate(batches).tolist() == expected.tolist()
    assert {b.dtype for b in batches} == {np.dtype(np.uint16)}
    assert int(tokenized.with_format("arrow")["len"].to_numpy().sum()) == len(expected)


@pytest.mark.parametrize("num_proc", [1, 3])
def test_tokenize_dataset_is_tokenize_documents_in_order_at_any_number_of_processes(
    corpus, tmp_path, gpt2_encoding, num_proc
):
    """tokenize_dataset's rows are tokenize_documents' on all the documents, in their order, in
    batches of 1,000 rows over any number of processes (3,000 documents: a batch a worker);
    its Arrow file beside the documents is read again by the next call with the same inputs,
    and documents held in memory get their ids in memory."""
    import datasets

    folder, _ = corpus
    loaded = load_documents(OPENWEBTEXT, [str(folder / "*.jsonl")], 1, tmp_path)
    dtype = np.dtype(np.uint16)
    expected = tokenize(loaded["text"], gpt2_encoding, dtype)
    made = tokenize_dataset(loaded, gpt2_encoding, GPT2_RECORD, dtype, "doc", num_proc, "t")
    assert [ids.tolist() for ids in expected["ids"]] == made["ids"]
    assert made["len"] == expected["len"]
    [path] = {Path(f["filename"]) for f in made.cache_files}
    assert path.parent == Path(loaded.cache_files[0]["filename"]).parent
    again = tokenize_dataset(loaded, gpt2_encoding, GPT2_RECORD, dtype, "doc", num_proc, "t")
    assert {Path(f["filename"]) for f in again.cache_files} == {path}
    in_memory = datasets.Dataset.from_dict({"text": loaded["text"][:20]})
    held = tokenize_dataset(in_memory, gpt2_encoding, GPT2_RECORD, dtype, "doc", num_proc, "t")
    assert not held.cache_files and held["ids"] == made["ids"][:20]


def test_the_lessons_write_loop_reads_an_in_memory_dataset(tokenized):
    import datasets

    in_memory = datasets.Dataset.from_dict(tokenized[:50], features=tokenized.features)
    assert not in_memory.cache_files
    expected = np.concatenate(in_memory.with_format("numpy")["ids"])
    assert np.concatenate(list(lesson_batches(in_memory, 16))).tolist() == expected.tolist()


@pytest.mark.parametrize(
    "num_documents, val_fraction",
    [(n, f) for n in (5, 2000, 3000) for f in (0.0005, 0.1, 0.5, 0.9) if (n, f) != (5, 0.9)],
)
def test_split_sizes_are_datasets(num_documents, val_fraction):
    import datasets

    split = datasets.Dataset.from_dict({"i": list(range(num_documents))}).train_test_split(
        test_size=val_fraction, seed=2357
    )
    expected = (len(split["train"]), len(split["test"]))
    assert split_sizes(num_documents, val_fraction) == expected


@pytest.mark.parametrize(
    "val_fraction, expected",
    [
        pytest.param(0.0005, (8_009_762, 4_007), id="nanogpt"),
        pytest.param(0.1, (7_212_392, 801_377), id="0.1"),
        pytest.param(0.5, (4_006_884, 4_006_885), id="0.5"),
        pytest.param(0.9, (801_376, 7_212_393), id="0.9"),
    ],
)
def test_openwebtext_split_sizes(val_fraction, expected):
    # val gets ceil(fraction * 8,013,769) documents, as datasets' train_test_split
    assert split_sizes(8_013_769, val_fraction) == expected


@pytest.mark.parametrize(
    "num_documents, val_fraction, message",
    [
        pytest.param(1, 0.0005, "0.0005 of 1 documents leaves train empty", id="one-document"),
        pytest.param(1, 0.5, "0.5 of 1 documents leaves train empty", id="one-document-half"),
        pytest.param(5, 0.9, "0.9 of 5 documents leaves train empty", id="all-val"),
        pytest.param(5, 0.0, "0.0 of 5 documents leaves val empty", id="zero"),
        pytest.param(5, 1.5, "1.5 of 5 documents leaves train empty", id="above-one"),
    ],
)
def test_split_sizes_refuses_an_empty_side(num_documents, val_fraction, message):
    with pytest.raises(PrepareError, match=f"--val-fraction {message}"):
        split_sizes(num_documents, val_fraction)


@pytest.mark.parametrize("num_documents", [2, 10, 999, 3000])
@pytest.mark.parametrize("val_fraction", [0.0005, 0.01, 0.3])
def test_random_split_is_datasets_train_test_split(num_documents, val_fraction):
    import datasets

    train, val = random_split(num_documents, val_fraction, seed=2357)
    split = datasets.Dataset.from_dict({"i": list(range(num_documents))}).train_test_split(
        test_size=val_fraction, seed=2357, shuffle=True
    )
    assert train.tolist() == split["train"]["i"] and val.tolist() == split["test"]["i"]


def test_random_split_pins_numpys_stream_for_nanogpts_seed():
    # np.random.default_rng(2357).permutation(n): if numpy ever changes its generator stream, the
    # split (and every .bin file) changes; meta.json records numpy's version for that reason
    train, val = random_split(8_013_769, 0.0005, seed=2357)
    assert (len(train), len(val)) == (8_009_762, 4_007)
    assert val[:6].tolist() == [4327249, 4286500, 2184614, 4793011, 1709068, 2210533]
    assert random_split(10, 0.2, seed=2357)[1].tolist() == [8, 3]
    assert random_split(10, 0.2, seed=2357)[0].tolist() == [0, 9, 5, 6, 2, 7, 4, 1]


def test_data_files_order_is_sorted_per_pattern(tmp_path):
    for name in ("b.txt", "a.txt", "10.txt", "2.txt"):
        (tmp_path / name).write_text(name)
    files = expand_data_files([str(tmp_path / "b.txt"), str(tmp_path / "*.txt")])
    assert [Path(f).name for f in files] == ["b.txt", "10.txt", "2.txt", "a.txt"]  # b.txt only once


FIVE_DOCUMENTS = "".join(json.dumps({"text": f"Document {i}."}) + "\n" for i in range(5))


def jsonl_lines(*rows):
    return "".join(json.dumps(row) + "\n" for row in rows)


def parquet_bytes(table):
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


MISSING = "1 of 7 documents have a missing or non-string 'text' (the first at row 6)"


@pytest.mark.parametrize(
    "files, message",
    [
        *(
            pytest.param({"a.jsonl": FIVE_DOCUMENTS, "b.jsonl": later}, MISSING, id=name)
            for name, later in [
                ("a-later-number", jsonl_lines({"text": "ok"}, {"text": 5})),
                ("a-later-object", jsonl_lines({"text": "ok"}, {"text": {"x": 1}})),
                ("a-later-file-without-text", jsonl_lines({"text": "ok"}, {"body": "x"})),
            ]
        ),
        pytest.param(
            {"a.json": FIVE_DOCUMENTS, "b.json": json.dumps([{"text": "ok"}, {"text": 2}])},
            MISSING,
            id="a-later-json-array-of-mixed-types",  # was '"ok"' and "2"
        ),
        pytest.param(
            {"a.jsonl": FIVE_DOCUMENTS, "b.jsonl": jsonl_lines({"text": "ok", "meta": 1})},
            "b.jsonl holds the fields meta, text, a.jsonl text: datasets reads JSON files of",
            id="a-later-file-of-other-fields",
        ),
        pytest.param(
            {
                "a.parquet": parquet_bytes(pa.table({"text": ["a", "b"]})),
                "b.parquet": parquet_bytes(pa.table({"body": ["c"]})),
            },
            "b.parquet has no 'text' column; its columns are: body",
            id="a-later-parquet-without-text",
        ),
        pytest.param(
            {
                "a.parquet": parquet_bytes(pa.table({"text": ["a", "b"]})),
                "b.parquet": parquet_bytes(pa.table({"text": [b"c"]})),
            },
            "b.parquet's 'text' column holds binary, not strings",
            id="a-later-parquet-of-bytes",
        ),
    ],
)
def test_a_later_file_of_other_texts_is_refused(tmp_path, files, message):
    """A file listed after the first, whose texts are not strings or whose fields differ, is
    refused in one line, as the first is: datasets cast it to the first file's columns (a
    number became its digits, an object its JSON)."""
    write_files(tmp_path, files)
    paths = [str(tmp_path / name) for name in files]
    with pytest.raises(PrepareError) as caught:
        load_documents(OPENWEBTEXT, paths, 1, tmp_path / "cache")
    assert message in str(caught.value).replace(f"{tmp_path}/", "")


def test_a_full_hugging_face_cache_is_named_not_blamed_on_the_hub():
    """No space left while the hub's files download is said as such, naming the cache: it was
    "cannot load ... from the Hugging Face hub (OSError ...); run again when it can be
    reached"."""
    from huggingface_hub import constants

    from documents.inputs import hub_failures

    with pytest.raises(PrepareError) as caught, hub_failures("org/data@abc"):
        raise OSError(errno.ENOSPC, "No space left on device")
    assert str(caught.value) == (
        f"cannot download org/data@abc: no space left in the Hugging Face cache, "
        f"{constants.HF_HUB_CACHE}; free some space there, or set HF_HOME to a folder with room"
    )
