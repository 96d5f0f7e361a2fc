"""data/openwebtext/prepare.py on local corpora made of Tiny Shakespeare's paragraphs (one
document each), run as a user runs it; the pieces it is made of are in test_documents.py.

Offline: the hub is only checked for its one-line error without network (test_openwebtext_hub.py
runs the hub path against a local hub). Each run gets its own datasets cache (HF_DATASETS_CACHE
in tmp_path).
"""

import json
import pickle

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import REFERENCES, REPO, assert_refused, run_python, write_jsonl

from bpe import EOT, Tokenizer
from inspection import verify
from safety.files import sha256_file

pytestmark = pytest.mark.usefixtures("downloads")  # Tiny Shakespeare, GPT-2's files

SCRIPT = REPO / "data" / "openwebtext" / "prepare.py"
NANOGPT_SCRIPT = REFERENCES / "nanogpt_openwebtext.py"  # nanoGPT's code, run as the oracle
GPT2_EOT = 50256


def prepare(tmp_path, *args, name="out", cache=None):
    """Run our script with its own cache (or run `cache`'s); return the output folder."""
    out = tmp_path / name
    cache_dir = tmp_path / f"cache-{cache or name}"
    result = run_python(SCRIPT, *args, "--out-dir", out, env={"HF_DATASETS_CACHE": str(cache_dir)})
    assert result.returncode == 0, result.stderr
    return out


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
# whole runs


def test_five_documents(paragraphs, tmp_path, gpt2_encoding):
    documents = paragraphs[100:105]
    write_jsonl(tmp_path / "five.jsonl", documents)
    out = prepare(tmp_path, "--data-files", tmp_path / "five.jsonl")
    expected = expected_splits(documents)
    assert (len(expected["train"]), len(expected["val"])) == (4, 1)
    meta = json.loads((out / "meta.json").read_text())
    for split in ("train", "val"):
        tokens = sum(len(gpt2_encoding.encode_ordinary(d)) for d in expected[split]) + len(
            expected[split]
        )
        assert (out / f"{split}.bin").stat().st_size == 2 * tokens
        assert meta["splits"][split]["tokens"] == tokens
        assert documents_in(out / f"{split}.bin", gpt2_encoding.decode) == expected[split]
    assert not (out / "meta.pkl").exists()
    assert verify(out) == []


def test_few_thousand_documents(prepared, gpt2_encoding):
    outs, documents = prepared
    out = outs["two"]
    expected = expected_splits(documents)
    assert (len(expected["train"]), len(expected["val"])) == (2998, 2)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["tokenizer"]["name"] == "gpt2" and meta["dtype"] == "uint16"
    assert meta["split"]["documents"] == {"train": 2998, "val": 2} and meta["split"]["seed"] == 2357
    for split in ("train", "val"):
        tokens = sum(len(gpt2_encoding.encode_ordinary(d)) for d in expected[split]) + len(
            expected[split]
        )
        assert meta["splits"][split]["tokens"] == tokens
        assert documents_in(out / f"{split}.bin", gpt2_encoding.decode) == expected[split]
    assert verify(out) == []


def test_identical_across_runs_and_num_proc(prepared):
    outs, _ = prepared
    for split in ("train.bin", "val.bin"):
        assert (
            (outs["one"] / split).read_bytes()
            == (outs["two"] / split).read_bytes()
            == (outs["again"] / split).read_bytes()
        )


@pytest.mark.slow
def test_byte_identical_to_nanogpts_script(corpus, tmp_path):
    # nanoGPT's 1,024-shard loop needs >= 1,024 documents in each split: 40% val of 3,000 documents
    folder, _ = corpus
    files = sorted(folder.glob("*.jsonl"))
    (tmp_path / "ref").mkdir()
    result = run_python(
        NANOGPT_SCRIPT,
        "--out-dir",
        tmp_path / "ref",
        "--test-size",
        0.4,
        "--num-proc",
        2,
        *files,
        env={"HF_DATASETS_CACHE": str(tmp_path / "cache-ref")},
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
    trained = run_python(
        REPO / "train_tokenizer.py",
        *("--input", tmp_path / "train.txt", "--vocab-size", 300, "--out", tmp_path / "tok.json"),
        *("--special-tokens", EOT),
    )
    assert trained.returncode == 0, trained.stderr
    tokenizer = Tokenizer.load(tmp_path / "tok.json")
    eot_id = tokenizer.special_tokens[EOT]
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
    assert meta_pkl["tokenizer"]["sha256"] == sha256_file(tmp_path / "tok.json")
    assert verify(out) == []


def big_tokenizer(path):
    """A tokenizer of 65,557 ids (past uint16): 256 bytes, 65,300 two-byte merges, <|endoftext|>."""
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(bytes([a]), bytes([b])) for a in range(256) for b in range(256)][:65_300]
    vocab.update({256 + i: a + b for i, (a, b) in enumerate(merges)})
    Tokenizer(vocab, merges, special_tokens=[EOT]).save(path)
    return Tokenizer.load(path)


def test_vocabulary_beyond_uint16_writes_uint32_with_a_warning(paragraphs, tmp_path):
    tokenizer = big_tokenizer(tmp_path / "big.json")
    assert tokenizer.vocab_size == 65_557
    documents = paragraphs[:20]
    write_jsonl(tmp_path / "docs.jsonl", documents)
    result = run_python(
        SCRIPT,
        "--data-files",
        tmp_path / "docs.jsonl",
        "--tokenizer",
        tmp_path / "big.json",
        "--val-fraction",
        0.1,
        "--out-dir",
        tmp_path / "out",
        env={"HF_DATASETS_CACHE": str(tmp_path / "cache")},
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
    assert verify(tmp_path / "out") == []


# ---------------------------------------------------------------------------------------------
# bad input: one clear line, exit 1, nothing written

FIVE_DOCUMENTS = "".join(json.dumps({"text": f"Document {i}."}) + "\n" for i in range(5))


def parquet_bytes(table):
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def save_tokenizer_without_eot(path):
    Tokenizer({i: bytes([i]) for i in range(256)}, []).save(path)


def jsonl_lines(*rows):
    return "".join(json.dumps(row) + "\n" for row in rows)


@pytest.mark.parametrize("script", ["prepare.py", "prepare_datatrove.py"])
def test_a_data_files_glob_over_the_output_folder_is_refused(paragraphs, tmp_path, script):
    """--data-files 'out/*.json' --out-dir out: a rerun read the folder's own meta.json as
    documents (datasets' traceback in the line). One line naming it, the folder as it was."""
    out = tmp_path / "out"
    out.mkdir()
    write_jsonl(out / "docs.json", paragraphs[:50])
    args = ["--data-files", out / "*.json", "--out-dir", out]
    env = {"HF_DATASETS_CACHE": str(tmp_path / "cache")}
    if script == "prepare_datatrove.py":
        pytest.importorskip("datatrove", reason="the datatrove engine is an optional extra")
    script = SCRIPT.with_name(script)
    assert run_python(script, *args, env=env).returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    result = run_python(script, *args, env=env)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"{out / 'meta.json'} is a file of the output folder" in result.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


@pytest.mark.parametrize(
    "name, data",
    [
        pytest.param("a.jsonl", "\n  \n\n", id="blank-lines"),
        pytest.param("a.json", "[\n ]\n", id="an-empty-array"),
        pytest.param(
            "a.parquet", parquet_bytes(pa.table({"text": pa.array([], pa.string())})), id="no-rows"
        ),
    ],
)
def test_a_file_of_no_documents_listed_first_is_read_as_none(paragraphs, tmp_path, name, data):
    """datasets takes the columns from the first file and failed on one of no documents ("could
    not read ... RemoteTraceback"); it is read as no documents, as the datatrove engine reads it."""
    suffix = name.rsplit(".", 1)[1]
    real = tmp_path / f"b.{suffix}"
    if suffix in ("jsonl", "json"):
        write_jsonl(real, paragraphs[:50])
    else:
        pq.write_table(pa.table({"text": paragraphs[:50]}), real)
    (tmp_path / name).write_bytes(data.encode() if isinstance(data, str) else data)
    alone = prepare(tmp_path, "--data-files", real, name="alone")
    out = prepare(tmp_path, "--data-files", tmp_path / name, real)
    for split in ("train.bin", "val.bin"):
        assert (out / split).read_bytes() == (alone / split).read_bytes()
    assert verify(out) == []


def test_parquet_files_whose_other_columns_differ_are_read(paragraphs, tmp_path):
    """Only the text column is read: files whose other columns differ give the same bytes as
    one file of the same texts (datasets refused them: the columns must agree)."""
    first, second = paragraphs[:40], paragraphs[40:80]
    pq.write_table(pa.table({"text": first, "url": ["u"] * 40}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"text": second, "score": [1.5] * 40}), tmp_path / "b.parquet")
    pq.write_table(pa.table({"text": first + second}), tmp_path / "whole.parquet")
    files = prepare(tmp_path, "--data-files", tmp_path / "a.parquet", tmp_path / "b.parquet")
    whole = prepare(tmp_path, "--data-files", tmp_path / "whole.parquet", name="whole")
    for split in ("train.bin", "val.bin"):
        assert (files / split).read_bytes() == (whole / split).read_bytes()


@pytest.mark.parametrize(
    "files, args, message",
    [
        pytest.param(
            {"x.parquet": parquet_bytes(pa.table({"body": ["a", "b"], "url": ["u", "v"]}))},
            ["--data-files", "x.parquet"],
            "has no 'text' column; its columns are: body, url",
            id="no-text-column",
        ),
        pytest.param(
            {"x.jsonl": ""}, ["--data-files", "x.jsonl"], "only empty files", id="empty-file"
        ),
        pytest.param(
            {"x.parquet": parquet_bytes(pa.table({"text": pa.array([], type=pa.string())}))},
            ["--data-files", "x.parquet"],
            "only empty files",
            id="no-rows",
        ),
        pytest.param(
            {"x.json": "[ ]"}, ["--data-files", "x.json"], "only empty files", id="empty-array"
        ),
        pytest.param(
            {"x.jsonl": jsonl_lines({"text": "a"}, {"text": "b"}, {"text": None}, {"url": "u"})},
            ["--data-files", "x.jsonl"],
            "2 of 4 documents have a missing or non-string 'text' (the first at row 2)",
            id="missing-texts",
        ),
        pytest.param(
            {"x.jsonl": jsonl_lines({"text": "a"}, {"text": "b"}, {"text": 5}, {"text": ["x"]})},
            ["--data-files", "x.jsonl"],
            "2 of 4 documents have a missing or non-string 'text' (the first at row 2)",
            id="non-string-texts",
        ),
        pytest.param(
            {"x.jsonl": FIVE_DOCUMENTS},
            ["--data-files", "x.jsonl", "--val-fraction", "0.9"],
            "--val-fraction 0.9 of 5 documents leaves train empty",
            id="train-empty",
        ),
        pytest.param(
            {}, ["--data-files", "nothing-*.jsonl"], "nor matches any file", id="no-match"
        ),
        pytest.param(
            {"x.jsonl": FIVE_DOCUMENTS, "y.txt": "doc"},
            ["--data-files", "x.jsonl", "y.txt"],
            "mixes .jsonl, .txt files",
            id="mixed-kinds",
        ),
        pytest.param(
            {"x.jsonl": FIVE_DOCUMENTS, "notes": "doc"},
            ["--data-files", "x.jsonl", "notes"],
            "files; found notes (no suffix)",
            id="no-suffix",
        ),
        pytest.param(
            {"x.csv": "text\ndoc\n"}, ["--data-files", "x.csv"], "found x.csv (.csv)", id="csv"
        ),
        pytest.param(
            {"x.jsonl": FIVE_DOCUMENTS + "{bad\n"},
            ["--data-files", "x.jsonl"],
            "x.jsonl line 6: not valid JSON",
            id="bad-json-line-named-as-the-engine-names-it",
        ),
        pytest.param(
            {"x.parquet": b"PAR1 not really"},
            ["--data-files", "x.parquet"],
            "datasets could not read",
            id="corrupt-parquet",
        ),
        pytest.param(  # the rest of the later files' cases: tests/parts/test_documents.py
            {"a.jsonl": FIVE_DOCUMENTS, "b.jsonl": jsonl_lines({"text": "ok"}, {"text": 1.5})},
            ["--data-files", "a.jsonl", "b.jsonl"],
            "1 of 7 documents have a missing or non-string 'text' (the first at row 6)",
            id="a-later-file-of-mixed-types",  # was '"ok"', '1.5'
        ),
        pytest.param(
            {"x.jsonl": FIVE_DOCUMENTS, "tok.json": save_tokenizer_without_eot},
            ["--data-files", "x.jsonl", "--tokenizer", "tok.json"],
            "has no <|endoftext|> special token",
            id="no-end-of-text",
        ),
        pytest.param(
            {},
            [],
            "cannot load Skylion007/openwebtext@79d93d786212 from the Hugging Face hub",
            id="hub-unreachable",
        ),
    ],
)
def test_bad_input(tmp_path, files, args, message):
    """Bad files (the first or a later one), options and tokenizers: one line each."""
    env = {"HF_DATASETS_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    (tmp_path / "work").mkdir()
    args = [*args, "--out-dir", "out"]
    assert_refused(SCRIPT, tmp_path / "work", files, args, [message], env=env, logs_before=True)
