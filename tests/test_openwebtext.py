"""data/openwebtext/prepare.py on local corpora made of Tiny Shakespeare's paragraphs (one document each).

Offline: the hub loader is checked through the arguments it would pass and its error without network.
Each run gets its own datasets cache (--cache-dir or HF_DATASETS_CACHE in tmp_path).
"""

import importlib.util
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import prepare_common
from bpe import Tokenizer

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "data" / "openwebtext" / "prepare.py"
NANOGPT_SCRIPT = REPO / "bench" / "nanogpt_openwebtext.py"  # nanoGPT's code, run as the reference
GPT2_EOT = 50256


def load_script_module():
    spec = importlib.util.spec_from_file_location("openwebtext_prepare", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # safe: the script does its work only under __main__
    return module


owt = load_script_module()


def run(script, *args, cache_dir, env=None):
    env = dict(os.environ, HF_DATASETS_CACHE=str(cache_dir), **(env or {}))
    return subprocess.run(
        [sys.executable, str(script), *map(str, args)], capture_output=True, text=True, env=env
    )


def prepare(tmp_path, *args, name="out", cache=None):
    """Run our script with its own cache (or run `cache`'s); return the output folder."""
    out = tmp_path / name
    result = run(SCRIPT, *args, "--out-dir", out, cache_dir=tmp_path / f"cache-{cache or name}")
    assert result.returncode == 0, result.stderr
    return out


def assert_one_error_line(stderr, message):
    """The script's answer is its last line: one `error: ...` line (datasets' own bars and logs may precede it)."""
    lines = stderr.rstrip("\n").split("\n")
    assert lines[-1].startswith("error: ") and message in lines[-1], stderr
    assert sum(line.startswith("error: ") for line in lines) == 1, stderr


def write_jsonl(path, documents):
    with open(path, "w", encoding="utf-8") as f:
        for document in documents:
            f.write(json.dumps({"text": document}) + "\n")
    return path


def expected_splits(documents, val_fraction=0.0005, seed=2357):
    """The documents of each split, in order, as datasets' train_test_split picks them."""
    import datasets

    split = datasets.Dataset.from_dict({"text": documents}).train_test_split(
        test_size=val_fraction, seed=seed, shuffle=True
    )
    return {"train": split["train"]["text"], "val": split["test"]["text"]}


def documents_in(bin_path, decode, eot_id=GPT2_EOT, dtype=np.uint16):
    """Decode a .bin file and split it on the end-of-text id; every document must end with one."""
    ids = np.fromfile(bin_path, dtype=dtype).tolist()
    assert ids and ids[-1] == eot_id
    documents, start = [], 0
    for i, token in enumerate(ids):
        if token == eot_id:
            documents.append(decode(ids[start:i]))
            start = i + 1
    return documents


@pytest.fixture(scope="module")
def paragraphs(tmp_path_factory):
    """Tiny Shakespeare's paragraphs (7,222 of them), real text for real documents."""
    path = prepare_common.fetch(
        prepare_common.TINY_SHAKESPEARE, tmp_path_factory.mktemp("ts") / "input.txt"
    )
    return [p for p in prepare_common.read_text(path).split("\n\n") if p.strip()]


@pytest.fixture(scope="module")
def gpt2():
    return prepare_common.gpt2_encoding()


@pytest.fixture(scope="module")
def corpus(paragraphs, tmp_path_factory):
    """3,000 documents in 3 .jsonl files."""
    folder = tmp_path_factory.mktemp("corpus")
    documents = paragraphs[:3000]
    for i in range(3):
        write_jsonl(folder / f"part-{i}.jsonl", documents[i * 1000 : (i + 1) * 1000])
    return folder, documents


@pytest.fixture(scope="module")
def prepared(corpus, tmp_path_factory):
    """The corpus prepared with 1 and with 2 processes, and again with 2 from the datasets cache."""
    folder, documents = corpus
    tmp = tmp_path_factory.mktemp("prepared")
    outs = {}
    for name, num_proc in (("one", 1), ("two", 2)):
        outs[name] = prepare(
            tmp, "--data-files", folder / "*.jsonl", "--num-proc", num_proc, name=name
        )
    outs["again"] = prepare(
        tmp, "--data-files", folder / "*.jsonl", "--num-proc", 2, name="again", cache="two"
    )
    return outs, documents


# ---------------------------------------------------------------------------------------------
# the pieces


def test_tokenize_is_nanogpts_process_a_batch_at_a_time(gpt2):
    texts = ["Hello world", "Hi", "", "a <|endoftext|> in the text is plain text"]
    out = owt.tokenize(texts, encoding=gpt2, eot_id=GPT2_EOT, dtype=np.dtype(np.uint16))
    assert [ids.tolist() for ids in out["ids"][:2]] == [[15496, 995, 50256], [17250, 50256]]
    assert [ids.tolist() for ids in out["ids"]] == [
        gpt2.encode_ordinary(t) + [GPT2_EOT] for t in texts
    ]
    assert out["len"] == [len(gpt2.encode_ordinary(t)) + 1 for t in texts]
    assert all(ids.dtype == np.uint16 for ids in out["ids"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 65535), max_size=20), max_size=12), st.integers(1, 25))
def test_rebatch_is_concatenate_cut_every_size(arrays, size):
    arrays = [np.array(a, dtype=np.uint16) for a in arrays]
    batches = list(owt.rebatch(iter(arrays), size))
    flat = np.concatenate(arrays) if arrays else np.array([], dtype=np.uint16)
    assert np.concatenate(batches).tolist() == flat.tolist() if batches else flat.size == 0
    assert all(len(b) == size for b in batches[:-1]) and all(0 < len(b) <= size for b in batches)


def test_token_stream_is_concatenate_of_the_ids_column(corpus, tmp_path, gpt2):
    import datasets

    folder, documents = corpus
    docs = datasets.load_dataset(
        "json",
        data_files=sorted(map(str, folder.glob("*.jsonl"))),
        split="train",
        cache_dir=str(tmp_path),
    )
    split = docs.train_test_split(test_size=0.1, seed=1)["train"]
    features = datasets.Features(
        {"ids": datasets.List(datasets.Value("uint16")), "len": datasets.Value("int64")}
    )
    tokenized = split.map(
        owt.tokenize,
        fn_kwargs={"encoding": gpt2, "eot_id": GPT2_EOT, "dtype": np.dtype(np.uint16)},
        input_columns="text",
        batched=True,
        remove_columns=["text"],
        features=features,
        num_proc=2,
    )
    assert len(tokenized.cache_files) == 2
    expected = np.concatenate(tokenized.with_format("numpy")["ids"])
    assert np.concatenate(list(owt.token_stream(tokenized))).tolist() == expected.tolist()
    in_memory = datasets.Dataset.from_dict(tokenized[:50], features=features)
    assert not in_memory.cache_files
    assert (
        np.concatenate(list(owt.token_stream(in_memory))).tolist()
        == np.concatenate(in_memory.with_format("numpy")["ids"]).tolist()
    )


@pytest.mark.parametrize("num_documents", [1, 5, 2000, 3000, 8_013_769])
@pytest.mark.parametrize("val_fraction", [0.0005, 0.1, 0.5, 0.9])
def test_split_sizes_are_datasets(num_documents, val_fraction):
    import datasets

    num_train, num_val = owt.split_sizes(num_documents, val_fraction)
    assert num_train + num_val == num_documents
    if num_documents > 5000 or num_train == 0 or num_val == 0:
        return
    split = datasets.Dataset.from_dict({"i": list(range(num_documents))}).train_test_split(
        test_size=val_fraction, seed=2357
    )
    assert (len(split["train"]), len(split["test"])) == (num_train, num_val)


def test_openwebtext_split_sizes():
    assert owt.split_sizes(8_013_769, owt.VAL_FRACTION) == (8_009_762, 4_007)


def test_hub_loader_arguments():
    builder, kwargs = owt.hub_load_arguments()
    assert builder == "parquet"  # datasets' own builder: the repo's old loading script is never run
    assert kwargs == {
        "data_files": {
            "train": "hf://datasets/Skylion007/openwebtext@"
            "79d93d786212f7344586290adb811d4ae6a1762c/plain_text/*.parquet"
        }
    }
    assert owt.HUB_REVISION in kwargs["data_files"]["train"]  # one constant to change


def test_hub_unreachable_is_one_clear_line(tmp_path):
    result = run(
        SCRIPT,
        "--out-dir",
        tmp_path / "out",
        cache_dir=tmp_path / "cache",
        env={"HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 1
    assert_one_error_line(
        result.stderr,
        "error: cannot load Skylion007/openwebtext@79d93d786212 from the Hugging Face hub",
    )
    assert "pass --data-files" in result.stderr
    assert list((tmp_path / "out").iterdir()) == []


def test_data_files_order_is_sorted_per_pattern(tmp_path):
    for name in ("b.txt", "a.txt", "10.txt", "2.txt"):
        (tmp_path / name).write_text(name)
    files = owt.expand_data_files([str(tmp_path / "b.txt"), str(tmp_path / "*.txt")])
    assert [Path(f).name for f in files] == ["b.txt", "10.txt", "2.txt", "a.txt"]  # b.txt only once


# ---------------------------------------------------------------------------------------------
# whole runs


def test_five_documents(paragraphs, tmp_path, gpt2):
    documents = paragraphs[100:105]
    write_jsonl(tmp_path / "five.jsonl", documents)
    out = prepare(tmp_path, "--data-files", tmp_path / "five.jsonl")
    expected = expected_splits(documents)
    assert (len(expected["train"]), len(expected["val"])) == (4, 1)
    meta = json.loads((out / "meta.json").read_text())
    for split in ("train", "val"):
        tokens = sum(len(gpt2.encode_ordinary(d)) for d in expected[split]) + len(expected[split])
        assert (out / f"{split}.bin").stat().st_size == 2 * tokens
        assert meta["splits"][split]["tokens"] == tokens
        assert documents_in(out / f"{split}.bin", gpt2.decode) == expected[split]
    assert not (out / "meta.pkl").exists()
    assert prepare_common.verify(out) == []


def test_few_thousand_documents(prepared, gpt2):
    outs, documents = prepared
    out = outs["two"]
    expected = expected_splits(documents)
    assert (len(expected["train"]), len(expected["val"])) == (2998, 2)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["tokenizer"]["name"] == "gpt2" and meta["dtype"] == "uint16"
    assert meta["split"]["documents"] == {"train": 2998, "val": 2} and meta["split"]["seed"] == 2357
    for split in ("train", "val"):
        tokens = sum(len(gpt2.encode_ordinary(d)) for d in expected[split]) + len(expected[split])
        assert meta["splits"][split]["tokens"] == tokens
        assert documents_in(out / f"{split}.bin", gpt2.decode) == expected[split]
    assert prepare_common.verify(out) == []


def test_identical_across_runs_and_num_proc(prepared):
    outs, _ = prepared
    for split in ("train.bin", "val.bin"):
        assert (
            (outs["one"] / split).read_bytes()
            == (outs["two"] / split).read_bytes()
            == (outs["again"] / split).read_bytes()
        )


def test_byte_identical_to_nanogpts_script(corpus, tmp_path):
    # nanoGPT's 1,024-shard loop needs >= 1,024 documents in each split: 40% val of 3,000 documents
    folder, _ = corpus
    files = sorted(folder.glob("*.jsonl"))
    (tmp_path / "ref").mkdir()
    result = run(
        NANOGPT_SCRIPT,
        "--out-dir",
        tmp_path / "ref",
        "--test-size",
        0.4,
        "--num-proc",
        2,
        *files,
        cache_dir=tmp_path / "cache-ref",
    )
    assert result.returncode == 0, result.stderr
    out = prepare(tmp_path, "--data-files", *files, "--val-fraction", 0.4, "--num-proc", 2)
    for split in ("train.bin", "val.bin"):
        assert (out / split).read_bytes() == (tmp_path / "ref" / split).read_bytes()


def test_txt_and_parquet_give_the_same_files_as_jsonl(paragraphs, tmp_path):
    documents = paragraphs[:40]
    write_jsonl(tmp_path / "docs.jsonl", documents)
    (tmp_path / "txt").mkdir()
    for i, document in enumerate(documents):  # zero-padded names: sorted order is document order
        (tmp_path / "txt" / f"{i:03d}.txt").write_text(document, encoding="utf-8")
    pq.write_table(pa.table({"text": documents[:25]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"text": documents[25:]}), tmp_path / "b.parquet")
    outs = [
        prepare(tmp_path, "--data-files", *files, "--val-fraction", 0.1, name=name)
        for name, files in (
            ("jsonl", [tmp_path / "docs.jsonl"]),
            ("txt", [tmp_path / "txt" / "*.txt"]),
            ("parquet", [tmp_path / "*.parquet"]),
        )
    ]
    for split in ("train.bin", "val.bin"):
        assert len({(out / split).read_bytes() for out in outs}) == 1


def test_tokenizer_path(paragraphs, tmp_path):
    (tmp_path / "train.txt").write_text("\n\n".join(paragraphs[:1500]), encoding="utf-8")
    subprocess.run(
        [
            sys.executable,
            str(REPO / "train_tokenizer.py"),
            "--input",
            str(tmp_path / "train.txt"),
            "--vocab-size",
            "300",
            "--out",
            str(tmp_path / "tok.json"),
            "--special-tokens",
            "<|endoftext|>",
        ],
        check=True,
        capture_output=True,
    )
    tokenizer = Tokenizer.load(tmp_path / "tok.json")
    eot_id = tokenizer.special_tokens["<|endoftext|>"]
    documents = paragraphs[:200]
    write_jsonl(tmp_path / "docs.jsonl", documents)
    out = prepare(
        tmp_path,
        "--data-files",
        tmp_path / "docs.jsonl",
        "--tokenizer",
        tmp_path / "tok.json",
        "--val-fraction",
        0.05,
    )
    expected = expected_splits(documents, val_fraction=0.05)
    for split in ("train", "val"):
        assert (
            documents_in(out / f"{split}.bin", tokenizer.decode, eot_id=eot_id) == expected[split]
        )
        ids = np.fromfile(out / f"{split}.bin", dtype=np.uint16).tolist()
        assert ids == [i for d in expected[split] for i in tokenizer.encode_ordinary(d) + [eot_id]]
    meta_pkl = pickle.loads((out / "meta.pkl").read_bytes())
    assert meta_pkl["vocab_size"] == tokenizer.vocab_size == 300
    assert meta_pkl["tokenizer"]["sha256"] == prepare_common.sha256_file(tmp_path / "tok.json")
    assert prepare_common.verify(out) == []


def big_tokenizer(path):
    """A tokenizer of 65,557 ids (past uint16): 256 bytes, 65,300 two-byte merges, <|endoftext|>."""
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(bytes([a]), bytes([b])) for a in range(256) for b in range(256)][:65_300]
    vocab.update({256 + i: a + b for i, (a, b) in enumerate(merges)})
    Tokenizer(vocab, merges, special_tokens=["<|endoftext|>"]).save(path)
    return Tokenizer.load(path)


def test_vocabulary_beyond_uint16_writes_uint32_with_a_warning(paragraphs, tmp_path):
    tokenizer = big_tokenizer(tmp_path / "big.json")
    assert tokenizer.vocab_size == 65_557
    documents = paragraphs[:20]
    write_jsonl(tmp_path / "docs.jsonl", documents)
    result = run(
        SCRIPT,
        "--data-files",
        tmp_path / "docs.jsonl",
        "--tokenizer",
        tmp_path / "big.json",
        "--val-fraction",
        0.1,
        "--out-dir",
        tmp_path / "out",
        cache_dir=tmp_path / "cache",
    )
    assert result.returncode == 0, result.stderr
    assert (
        "warning: vocab_size 65,557 does not fit uint16, so the .bin files are uint32"
        in result.stderr
    )
    meta = json.loads((tmp_path / "out" / "meta.json").read_text())
    assert meta["dtype"] == "uint32"
    expected = expected_splits(documents, val_fraction=0.1)
    for split in ("train", "val"):
        assert (
            documents_in(
                tmp_path / "out" / f"{split}.bin", tokenizer.decode, eot_id=65_556, dtype=np.uint32
            )
            == expected[split]
        )
    assert prepare_common.verify(tmp_path / "out") == []


# ---------------------------------------------------------------------------------------------
# bad input: one clear line, exit 1, nothing written


def bad_corpus(case, folder, paragraphs):
    """The --data-files (and other options) of each bad case, and a piece of its expected message."""
    if case == "no text column":
        pq.write_table(pa.table({"body": ["a", "b"], "url": ["u", "v"]}), folder / "x.parquet")
        return [folder / "x.parquet"], "has no 'text' column; its columns are: body, url"
    if case == "empty file":
        (folder / "x.jsonl").write_text("")
        return [folder / "x.jsonl"], "only empty files"
    if case == "no rows":  # a parquet file with a text column and no row
        pq.write_table(pa.table({"text": pa.array([], type=pa.string())}), folder / "x.parquet")
        return [folder / "x.parquet"], "only empty files"
    if case == "missing texts":
        lines = [{"text": "a"}, {"text": "b"}, {"text": None}, {"url": "u"}, {"text": "c"}]
        (folder / "x.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        return [
            folder / "x.jsonl"
        ], "2 of 5 documents have a missing or non-string 'text' (the first at row 2)"
    if case == "non-string texts":
        lines = [{"text": "a"}, {"text": "b"}, {"text": "c"}, {"text": 5}, {"text": ["x"]}]
        (folder / "x.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        return [
            folder / "x.jsonl"
        ], "2 of 5 documents have a missing or non-string 'text' (the first at row 3)"
    if case == "val empty":
        write_jsonl(folder / "x.jsonl", paragraphs[:5])
        return [
            folder / "x.jsonl",
            "--val-fraction",
            "0",
        ], "--val-fraction 0.0 of 5 documents leaves val empty"
    if case == "train empty":
        write_jsonl(folder / "x.jsonl", paragraphs[:5])
        return [
            folder / "x.jsonl",
            "--val-fraction",
            "0.9",
        ], "--val-fraction 0.9 of 5 documents leaves train empty"
    if case == "all val":
        write_jsonl(folder / "x.jsonl", paragraphs[:5])
        return [
            folder / "x.jsonl",
            "--val-fraction",
            "1.5",
        ], "--val-fraction 1.5 of 5 documents leaves train empty"
    if case == "no match":
        return [folder / "nothing-*.jsonl"], "matches no file"
    if case == "mixed kinds":
        write_jsonl(folder / "x.jsonl", paragraphs[:5])
        (folder / "y.txt").write_text("doc")
        return [folder / "x.jsonl", folder / "y.txt"], "mixes .jsonl, .txt files"
    if case == "corrupt parquet":
        (folder / "x.parquet").write_bytes(b"PAR1 not really")
        return [folder / "x.parquet"], "datasets could not read"
    if case == "no end-of-text":
        write_jsonl(folder / "x.jsonl", paragraphs[:5])
        vocab = {i: bytes([i]) for i in range(256)}
        Tokenizer(vocab, []).save(folder / "tok.json")
        return [
            folder / "x.jsonl",
            "--tokenizer",
            folder / "tok.json",
        ], "has no <|endoftext|> special token"
    raise AssertionError(case)


@pytest.mark.parametrize(
    "case",
    [
        "no text column",
        "empty file",
        "no rows",
        "missing texts",
        "non-string texts",
        "val empty",
        "train empty",
        "all val",
        "no match",
        "mixed kinds",
        "corrupt parquet",
        "no end-of-text",
    ],
)
def test_bad_input(case, paragraphs, tmp_path):
    args, message = bad_corpus(case, tmp_path, paragraphs)
    out = tmp_path / "out"
    result = run(SCRIPT, "--data-files", *args, "--out-dir", out, cache_dir=tmp_path / "cache")
    assert result.returncode == 1, result.stderr
    assert_one_error_line(result.stderr, message)
    assert list(out.iterdir()) == []
