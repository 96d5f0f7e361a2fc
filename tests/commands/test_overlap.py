"""`python prepare_common.py overlap`: its figures against a count by definition (Python sets of
documents), on our folders, on llm.c's FineWeb shards (tests/references/llmc_fineweb.py) and on a
BOS-first folder without meta.json (parameter-golf's leak, scaled down); benchmark files; bad
inputs."""

import json
import os
import resource
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, assert_clean_failure, assert_one_line, run, run_python, write_jsonl
from llmc_fineweb import write_llmc_shards

from dedup import simple

PREPARE_COMMON = REPO / "prepare_common.py"
LESSONS = REPO / "data"
OPENWEBTEXT = LESSONS / "openwebtext" / "prepare.py"


def overlap_json(folder, *flags):
    result = run_python(PREPARE_COMMON, "overlap", folder, "--json", *flags)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def by_definition(train_documents, val_documents, n=13):
    """The exact figures overlap reports, counted with Python sets of the documents' id tuples."""
    train = [tuple(d) for d in train_documents]
    val = [tuple(d) for d in val_documents]
    seen, repeats, repeated_tokens = set(), 0, 0
    for document in train:
        if document in seen:
            repeats, repeated_tokens = repeats + 1, repeated_tokens + len(document)
        seen.add(document)
    in_train = sum(document in seen for document in val)
    grams = {d[i : i + n] for d in train for i in range(len(d) - n + 1)}
    covered = sum(simple.shared_ngram_tokens(d, grams, n) for d in val)
    train_tokens, val_tokens = sum(map(len, train)), sum(map(len, val))
    return {
        "documents": {"train": len(train), "val": len(val)},
        "tokens": {"train": train_tokens, "val": val_tokens},
        "train_repeated_documents": {
            "documents": repeats,
            "tokens": repeated_tokens,
            "token_fraction": repeated_tokens / train_tokens,
        },
        "val_documents_in_train": {"documents": in_train, "fraction": in_train / len(val)},
        "val_tokens_in_shared_ngrams": {
            "ngram": n,
            "tokens": covered,
            "fraction": covered / val_tokens,
        },
    }


def assert_figures(report, expected):
    for key, value in expected.items():
        assert report[key] == pytest.approx(value), key
    near = report["val_near_duplicates_in_train"]
    assert near["documents"] >= report["val_documents_in_train"]["documents"]
    assert near["rule"] == {"shingle_tokens": 5, "bands": 14, "rows": 8}


def split_documents(data, eot, first):
    """The documents of a stream of ids, the boundary token removed: EOT first or EOT last."""
    cuts = np.flatnonzero(data == eot)
    if first:  # a head before the first EOT is a document (the end of one cut off)
        head, *pieces = np.split(data, cuts)
        return ([head.tolist()] if len(head) else []) + [p[1:].tolist() for p in pieces]
    *pieces, tail = np.split(data, cuts + 1)
    return [p[:-1].tolist() for p in pieces] + ([tail.tolist()] if len(tail) else [])


@pytest.fixture(scope="module")
def repeating_corpus(paragraphs, tmp_path_factory):
    """A .jsonl corpus of 600 paragraphs, 60 of them given twice and 3 four times."""
    documents = list(dict.fromkeys(paragraphs))[:600]
    documents += documents[100:160] + documents[:3] * 3
    folder = tmp_path_factory.mktemp("repeating")
    write_jsonl(folder / "docs.jsonl", documents)
    return folder / "docs.jsonl"


@pytest.mark.parametrize("fmt", ["bin", "llmc"])
def test_our_folder(repeating_corpus, tmp_path, fmt):
    """OpenWebText's lesson on a corpus with repeats: val holds some, train repeats some."""
    out = tmp_path / "out"
    args = ["--data-files", repeating_corpus, "--out-dir", out, "--val-fraction", "0.1"]
    args += ["--num-proc", "1", "--cache-dir", tmp_path / "cache", "--format", fmt]
    result = run_python(OPENWEBTEXT, *args)
    assert result.returncode == 0, result.stderr
    meta = json.loads((out / "meta.json").read_text())
    eot = meta["tokenizer"]["eot_id"]
    if fmt == "bin":
        streams = {s: np.fromfile(out / f"{s}.bin", np.uint16) for s in ("train", "val")}
    else:
        from formats.shards import read_shard

        streams = {
            split: np.concatenate(
                [
                    read_shard(out / s["file"], "llmc", np.dtype(np.uint16))
                    for s in meta["shards"]
                    if s["split"] == split
                ]
            )
            for split in ("train", "val")
        }
    documents = {s: split_documents(data, eot, first=False) for s, data in streams.items()}
    expected = by_definition(documents["train"], documents["val"])
    assert expected["val_documents_in_train"]["documents"] > 0  # the corpus plants some
    assert expected["train_repeated_documents"]["documents"] > 0
    assert_figures(overlap_json(out), expected)
    assert_figures(
        overlap_json(out, "--ngram", "8"), by_definition(documents["train"], documents["val"], 8)
    )


def test_our_folder_without_the_document_index(repeating_corpus, tmp_path):
    """A folder whose meta.json lists no SPLIT.docs.npy (an older one) reads the same."""
    out = tmp_path / "out"
    args = ["--data-files", repeating_corpus, "--out-dir", out, "--val-fraction", "0.1"]
    assert (
        run_python(OPENWEBTEXT, *args, "--num-proc", "1", "--cache-dir", tmp_path / "c").returncode
        == 0
    )
    before = overlap_json(out)
    meta = json.loads((out / "meta.json").read_text())
    for split in ("train", "val"):
        del meta["splits"][split]["index"]
        (out / f"{split}.docs.npy").unlink()
    (out / "meta.json").write_text(json.dumps(meta))
    assert overlap_json(out) == before


@pytest.mark.parametrize("damaged", ["train.docs.npy", "val.bin"])
def test_a_damaged_folder_is_named_before_it_is_read(repeating_corpus, tmp_path, damaged):
    """overlap checks a prepared folder's files as show does: a changed byte is one line naming
    the file (an index pointing past its split was an IndexError naming nothing)."""
    out = tmp_path / "out"
    args = ["--data-files", repeating_corpus, "--out-dir", out, "--num-proc", "1"]
    assert run_python(OPENWEBTEXT, *args, "--cache-dir", tmp_path / "c").returncode == 0
    data = bytearray((out / damaged).read_bytes())
    data[-3] ^= 0x40
    (out / damaged).write_bytes(bytes(data))
    result = run_python(PREPARE_COMMON, "overlap", out)
    assert_clean_failure(result, f"{out / damaged} does not match the sha256")


def test_llmc_fineweb_shards(paragraphs, gpt2_encoding, tmp_path):
    """A folder of llm.c's fineweb.py shards (no meta.json): the end-of-text token first, shard 0
    val; some val documents repeated later in the stream, so in train."""
    documents = list(dict.fromkeys(paragraphs))[:800]
    documents += documents[10:40]  # 30 of val's first documents again, at the end: in train
    write_llmc_shards(documents, gpt2_encoding, tmp_path, shard_size=8000)
    ids = {}
    for split in ("train", "val"):
        files = sorted(tmp_path.glob(f"fineweb_{split}_*.bin"))
        ids[split] = np.concatenate([np.fromfile(f, np.uint16, offset=1024) for f in files])
    eot = gpt2_encoding.eot_token
    expected = by_definition(*(split_documents(ids[s], eot, first=True) for s in ("train", "val")))
    expected["documents"] = {split: int((ids[split] == eot).sum()) for split in ids}
    assert expected["val_documents_in_train"]["documents"] >= 30
    assert_figures(overlap_json(tmp_path), expected)  # llm.c's header says: 50256 first
    result = run_python(PREPARE_COMMON, "overlap", tmp_path)
    assert f"documents cut at token {eot} (one before each document)" in result.stdout


def test_bos_first_folder_without_meta_parameter_golf_leak(paragraphs, gpt2_encoding, tmp_path):
    """parameter-golf's leak, scaled down: val is documents 0-499 of a BOS-first stream, train
    starts at document 100: 400 of 500 val documents (80%) in train. Raw uint32 files."""
    bos = 1
    texts = list(dict.fromkeys(paragraphs))[:1500]
    documents = [[bos] + [t + 2 for t in gpt2_encoding.encode_ordinary(text)] for text in texts]
    np.concatenate([np.array(d, np.uint32) for d in documents[:500]]).tofile(
        tmp_path / "fineweb_val_000000.bin"
    )
    for shard, first in enumerate(range(100, 1500, 700)):
        train = np.concatenate([np.array(d, np.uint32) for d in documents[first : first + 700]])
        train.tofile(tmp_path / f"fineweb_train_{shard:06d}.bin")
    report = overlap_json(tmp_path, "--boundary-id", bos, "--dtype", "uint32")
    assert report["documents"] == {"train": 1400, "val": 500}
    assert report["val_documents_in_train"] == {"documents": 400, "fraction": 0.8}
    assert report["val_near_duplicates_in_train"]["documents"] >= 400
    result = run_python(
        PREPARE_COMMON, "overlap", tmp_path, "--boundary-id", bos, "--dtype", "uint32"
    )
    assert result.returncode == 0, result.stderr
    assert "val documents with an exact copy in train: 400 (80.0%)" in result.stdout


def test_against_benchmark_files(repeating_corpus, tmp_path):
    """Items sharing a 13-gram with train are counted, with the train documents holding one."""
    out = tmp_path / "out"
    args = ["--data-files", repeating_corpus, "--out-dir", out, "--val-fraction", "0.1"]
    assert (
        run_python(OPENWEBTEXT, *args, "--num-proc", "1", "--cache-dir", tmp_path / "c").returncode
        == 0
    )
    texts = [json.loads(line)["text"] for line in repeating_corpus.read_text().splitlines()]
    quiz = tmp_path / "quiz.txt"
    words = [t.replace("\n", " ") for t in texts[:600] if len(t.split()) > 30]
    quiz.write_text(
        "\n".join(
            words[:5]
            + ["Nothing of this sentence is in the corpus at all, not a word of it."]
            + ["short"]
        )
        + "\n"
    )
    write_jsonl(tmp_path / "quiz.jsonl", words[:2])
    report = overlap_json(out, "--against", quiz, tmp_path / "quiz.jsonl")
    txt, jsonl = report["against"]
    assert (txt["file"], txt["items"], txt["items_shorter_than_ngram"]) == (str(quiz), 7, 1)
    assert 3 <= txt["items_with_ngram_in_train"] <= 5  # a paragraph may sit in val only
    assert txt["train_documents_holding_one"] >= txt["items_with_ngram_in_train"]
    assert jsonl["items"] == 2


@pytest.mark.parametrize(
    "files, flags, fragments",
    [
        pytest.param(
            {"train.bin": b"\0" * 8, "val.bin": b"\0" * 8},
            [],
            ["--boundary-id"],
            id="no-meta-no-boundary",
        ),
        pytest.param(
            {"train.bin": b"\0" * 8, "val.bin": b"\0" * 8},
            ["--boundary-id", "0"],
            ["--dtype"],
            id="raw-without-dtype",
        ),
        pytest.param(
            {"train.bin": b"\0" * 7, "val.bin": b"\0" * 8},
            ["--boundary-id", "0", "--dtype", "uint16"],
            ["whole number"],
            id="odd-size",
        ),
        pytest.param(
            {"val.bin": b"\0" * 8}, ["--boundary-id", "0"], ["no train file"], id="no-train"
        ),
        pytest.param(
            {"a_train.bin": b"\0" * 8, "a_val.bin": b"\0" * 8, "q.csv": b"x"},
            ["--boundary-id", "0", "--dtype", "uint16", "--against", "q.csv"],
            [".txt"],
            id="against-kind",
        ),
        pytest.param(
            {"a_train.bin": b"\0" * 8, "a_val.bin": b"\0" * 8, "q.jsonl": b'{"t": 1}\n'},
            ["--boundary-id", "0", "--dtype", "uint16", "--against", "q.jsonl"],
            ["'text'"],
            id="against-no-text",
        ),
    ],
)
def test_refused(tmp_path, files, flags, fragments):
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    flags = [str(tmp_path / f) if f.startswith("q.") else f for f in flags]
    result = run_python(PREPARE_COMMON, "overlap", tmp_path, *flags)
    assert_clean_failure(result, *fragments)


RAW = {"a_train.bin": b"\0" * 8, "a_val.bin": b"\0" * 8}


@pytest.mark.parametrize(
    "flags, fragments",
    [
        pytest.param(["--boundary-id", "0", "--ngram", "0"], ["--ngram"], id="ngram-zero"),
        pytest.param(["--boundary-id", "-1"], ["--boundary-id", "-1"], id="boundary-negative"),
        pytest.param(
            ["--boundary-id", "70000", "--dtype", "uint16"],
            ["--boundary-id 70,000", "uint16", "0 to 65,535"],
            id="boundary-past-the-dtype",
        ),
    ],
)
def test_usage_errors(tmp_path, flags, fragments):
    """A flag that cannot be right is a usage error (exit 2, one line), before any work."""
    for name, data in RAW.items():
        (tmp_path / name).write_bytes(data)
    result = run_python(PREPARE_COMMON, "overlap", tmp_path, *flags)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    lines = result.stderr.rstrip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert all(fragment in lines[0] for fragment in fragments), lines[0]


def fifo(tmp_path):
    path = tmp_path / "quiz.txt"
    os.mkfifo(path)
    return path


def memory_limit():
    """A bound, so that a read without one fails instead of eating the machine's memory."""
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


@pytest.mark.parametrize(
    "make_against",
    [
        pytest.param(fifo, id="fifo"),
        pytest.param(lambda _: Path("/dev/zero"), id="dev-zero"),
    ],
)
def test_an_against_that_is_not_a_regular_file_is_refused(tmp_path, make_against):
    """An --against FIFO was waited on forever, and /dev/zero read until memory ran out: each
    is now refused in one line naming it, without a wait or a read."""
    for name, data in RAW.items():
        (tmp_path / name).write_bytes(data)
    against = make_against(tmp_path)
    flags = ["--boundary-id", "0", "--dtype", "uint16", "--against", against]
    result = run(PREPARE_COMMON, "overlap", tmp_path, *flags, timeout=60, preexec_fn=memory_limit)
    assert_one_line(result, f"--against: {against} is not a regular file")


def char_folder(tmp_path, shakespeare_path):
    """Tiny Shakespeare as characters (data/shakespeare_char), 65 of them."""
    out = tmp_path / "char"
    result = run_python(
        LESSONS / "shakespeare_char" / "prepare.py", "--input", shakespeare_path, "--out-dir", out
    )
    assert result.returncode == 0, result.stderr
    return out


def nanochat_folder(tmp_path, shakespeare_path):
    """Tiny Shakespeare for nanochat: parquet rows of text and a 1,024-id tokenizer.pkl."""
    out = tmp_path / "nanochat"
    out.mkdir()
    (out / "input.txt").write_bytes(shakespeare_path.read_bytes())
    args = ["--out-dir", out, "--vocab-size", 1024, "--shard-chars", 300_000]
    result = run_python(LESSONS / "nanochat" / "prepare.py", *args)
    assert result.returncode == 0, result.stderr
    return out


def test_nanochat_folder(shakespeare_path, tmp_path):
    """Its documents are its parquet rows, encoded with its tokenizer.pkl: counted as by
    definition (Python sets of the texts: the tokenizer is lossless, equal ids are equal texts)."""
    import pyarrow.parquet as pq

    out = nanochat_folder(tmp_path, shakespeare_path)
    meta = json.loads((out / "meta.json").read_text())
    texts = {split: [] for split in ("train", "val")}
    for shard in meta["shards"]:
        texts[shard["split"]] += pq.read_table(out / shard["file"]).column("text").to_pylist()
    report = overlap_json(out)
    assert report["documents"] == {split: len(t) for split, t in texts.items()}
    train = set(texts["train"])
    in_train = sum(text in train for text in texts["val"])
    assert report["val_documents_in_train"]["documents"] == in_train
    result = run_python(PREPARE_COMMON, "overlap", out)
    assert result.returncode == 0, result.stderr
    assert "documents are its parquet rows, encoded with its tokenizer.pkl" in result.stdout


def test_fineweb_lesson_folder_is_bos_first(paragraphs, tmp_path):
    """FineWeb's shards put the end-of-text token before each document: overlap and the lesson's
    end-of-run line count val's documents so (every one of them, the first included)."""
    documents = list(dict.fromkeys(paragraphs))[:400]
    documents += documents[5:25]  # 20 of val's documents again at the end: in train
    data = write_jsonl(tmp_path / "docs.jsonl", documents)
    out = tmp_path / "out"
    args = ["--data-files", data, "--shard-size", 8000, "--out-dir", out, "--num-proc", 1]
    lesson = run_python(LESSONS / "fineweb" / "prepare.py", *args, "--cache-dir", tmp_path / "c")
    assert lesson.returncode == 0, lesson.stderr
    meta = json.loads((out / "meta.json").read_text())
    eot = meta["tokenizer"]["eot_id"]
    ids = {
        split: np.concatenate(
            [
                np.fromfile(out / s["file"], np.uint16, offset=1024)
                for s in meta["shards"]
                if s["split"] == split
            ]
        )
        for split in ("train", "val")
    }
    expected = by_definition(*(split_documents(ids[s], eot, first=True) for s in ("train", "val")))
    assert ids["train"][0] != eot  # a document straddles val's shard and train's first
    expected["documents"] = {split: int((ids[split] == eot).sum()) for split in ids}
    assert sum(expected["documents"].values()) == meta["source"]["documents"]
    assert_figures(overlap_json(out), expected)  # the straddling document counted once, in val
    val = expected["documents"]["val"]
    in_train = expected["val_documents_in_train"]["documents"]
    assert f"val documents with an exact copy in train: {in_train:,} of {val:,} " in lesson.stdout
    result = run_python(PREPARE_COMMON, "overlap", out)
    assert f"documents cut at token {eot} (one before each document)" in result.stdout


def test_char_folder(shakespeare_path, tmp_path):
    """A character folder's meta.json names no boundary token: the error says so, and with one
    given, an --against item's character the vocabulary lacks splits its runs (never joins the
    text around it into a run train holds)."""
    out = char_folder(tmp_path, shakespeare_path)
    result = run_python(PREPARE_COMMON, "overlap", out)
    assert_clean_failure(result, "meta.json's tokenizer has no end-of-text token", "--boundary-id")
    quiz = tmp_path / "quiz.txt"
    quiz.write_text("Before w\u2603e proceed\nBefore we proceed any further\n", encoding="utf-8")
    report = overlap_json(out, "--boundary-id", "0", "--against", quiz)
    (record,) = report["against"]
    assert (record["items"], record["items_with_ngram_in_train"]) == (2, 1)


def test_help():
    result = run_python(PREPARE_COMMON, "overlap", "--help")
    assert result.returncode == 0 and "--boundary-id" in result.stdout
