"""train_tokenizer.py as a user runs it: real text in, a tokenizer file out, one-line errors."""

import contextlib
import hashlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow
import pyarrow.parquet
import pytest
from conftest import (
    REPO,
    assert_clean_failure,
    mounted_tmpfs,
    needs_datatrove,
    run_python,
    write_files,
)

import train_tokenizer
from bpe import EOT, Tokenizer, simple, train_bpe_from_iterator
from bpe.checks import check_pattern
from bpe.table import PretokenTable
from formats import golf

SCRIPT = REPO / "train_tokenizer.py"
needs_sentencepiece = pytest.mark.skipif(
    importlib.util.find_spec("sentencepiece") is None, reason="needs sentencepiece"
)


def run_cli(*args, cwd=None):
    return run_python(SCRIPT, *args, cwd=cwd)


@pytest.fixture(scope="module")
def shakespeare_50k(tmp_path_factory, shakespeare):
    """The first 50 KB of Tiny Shakespeare as train.txt, the next 20 KB as eval.txt."""
    folder = tmp_path_factory.mktemp("cli")
    (folder / "train.txt").write_text(shakespeare[:50_000], encoding="utf-8")
    (folder / "eval.txt").write_text(shakespeare[50_000:70_000], encoding="utf-8")
    return folder


def test_trains_saves_and_reports(shakespeare_50k, tmp_path):
    out = tmp_path / "tok.json"
    result = run_cli(
        "--input",
        shakespeare_50k / "train.txt",
        "--vocab-size",
        600,
        "--out",
        out,
        "--special-tokens",
        EOT,
        "--eval",
        shakespeare_50k / "eval.txt",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    text = (shakespeare_50k / "train.txt").read_text("utf-8")
    vocab, merges = train_bpe_from_iterator([text], 600, [EOT])
    assert f"learned {len(merges)} merges" in result.stdout
    assert "256: Ġ + t -> Ġt" in result.stdout  # first merges rendered in GPT-2's alphabet
    assert "first 10 merges:" in result.stdout and "last 10 merges:" in result.stdout
    assert "compression on the training text:" in result.stdout
    assert f"compression on {shakespeare_50k / 'eval.txt'}:" in result.stdout
    tok = Tokenizer.load(out)
    assert tok.merges == merges and tok.vocab == vocab
    assert tok.special_tokens == {EOT: 599}
    sample = "ROMEO: what light through yonder window breaks?" + EOT
    assert tok.decode(tok.encode(sample)) == sample and tok.encode(sample)[-1] == 599


@pytest.mark.parametrize("pattern", ["gpt4", "nanochat"])
def test_several_inputs_and_a_named_pattern(tmp_path, pattern):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("hello hello hello 12345\n", encoding="utf-8")
    b.write_text("world world hello\n", encoding="utf-8")
    out = tmp_path / "tok.json"
    result = run_cli(
        "--input", a, b, "--vocab-size", 268, "--out", out, "--pattern", pattern, "--workers", 1
    )
    assert result.returncode == 0, result.stderr
    expected = train_bpe_from_iterator([a.read_text(), b.read_text()], 268, pattern=pattern)
    tok = Tokenizer.load(out)
    assert (tok.vocab, tok.merges) == expected
    assert tok.pattern_name == pattern


def test_small_corpus_says_it_stopped_early(tmp_path):
    text = tmp_path / "tiny.txt"
    text.write_text("Hello world. Hello there, hello!", encoding="utf-8")
    result = run_cli("--input", text, "--vocab-size", 300, "--out", tmp_path / "tok.json")
    assert result.returncode == 0, result.stderr
    assert "asked for vocab_size 300, got 273" in result.stdout
    assert Tokenizer.load(tmp_path / "tok.json").vocab_size == 273


@pytest.mark.parametrize(
    "args, fragments",
    [
        pytest.param(
            ["--input", "missing.txt", "--vocab-size", 300],
            ["missing.txt", "does not exist"],
            id="missing",
        ),
        pytest.param(
            ["--input", "good.txt", "bad.txt", "--vocab-size", 300],
            ["bad.txt", "not valid UTF-8", "byte offset 6"],
            id="non-utf8",
        ),
        pytest.param(
            ["--input", "empty.txt", "--vocab-size", 300],
            ["empty.txt", "no text to train on"],
            id="empty",
        ),
    ],
)
def test_errors_are_one_line_and_write_nothing(tmp_path, args, fragments):
    (tmp_path / "good.txt").write_text("some ordinary text " * 10, encoding="utf-8")
    (tmp_path / "bad.txt").write_bytes(b"hello \xff world")
    (tmp_path / "empty.txt").write_bytes(b"")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert_clean_failure(run_cli(*args, "--out", "tok.json", cwd=tmp_path), *fragments)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def assert_usage_error(result, *fragments):
    """Exit code 2 and one line, `error: ... (see ...train_tokenizer.py --help)`, as argparse's."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert lines[0].endswith("train_tokenizer.py --help)"), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize(
    "args, fragments",
    [
        pytest.param(["--vocab-size", 10], ["vocab_size 10 is too small"], id="vocab-size-10"),
        pytest.param(
            ["--vocab-size", 256, "--special-tokens", EOT],
            ["vocab_size 256 is too small", "257", "--vocab-size"],
            id="vocab-too-small",
        ),
        pytest.param([], ["give --vocab-size N"], id="no-vocab-size"),
        pytest.param(
            ["--vocab-size", 300, "--special-tokens", EOT, EOT],
            ["special tokens must be distinct", "--special-tokens"],
            id="duplicate-special",
        ),
        pytest.param(
            ["--vocab-size", 300, "--special-tokens", "<|a|>", "<|a|>b"],
            ["special token '<|a|>' is a prefix of '<|a|>b'", "--special-tokens"],
            id="special-prefix-of-another",
        ),
        pytest.param(
            ["--vocab-size", 300, "--max-chars", 0],
            ["--max-chars must be at least 1"],
            id="max-chars-0",
        ),
        pytest.param(["--vocab-size", 300, "--workers", 0], ["--workers must be"], id="workers-0"),
        pytest.param(
            ["--vocab-size", 10**16],
            ["is too large", "at most 2,147,483,647"],
            id="vocab-size-10**16",
        ),
        pytest.param(["--sweep", f"300,{10**16}"], ["is too large", "--sweep"], id="sweep-10**16"),
        pytest.param(
            ["--vocab-size", 300, "--workers", 10**16], ["from 1 to 1,024"], id="workers-10**16"
        ),
        pytest.param(
            ["--vocab-size", 300, "--engine", "datatrove", "--workers", 5000],
            ["from 1 to 1,024"],
            id="datatrove-local-workers-5000",
            marks=needs_datatrove,  # without datatrove: the one line that says to install it
        ),
        pytest.param(["--sweep", "300", "--vocab-size", 400], ["largest --sweep"], id="sweep"),
        pytest.param(["--vocab-size", 300, "--plot", "a.png"], ["give --sweep"], id="plot"),
        pytest.param(
            ["--vocab-size", 300, "--special-tokens", "\udcff"],
            ["special token '\\udcff' is not valid Unicode text"],
            id="special-token-of-no-utf8",
        ),
        *(
            pytest.param(
                ["--vocab-size", 300, "--kind", "sentencepiece", option, value],
                [f"{option} does not go with --kind sentencepiece"],
                id=f"sentencepiece-{option[2:]}",
            )
            for option, value in [("--max-chars", 100), ("--pattern", "gpt4"), ("--workers", 2)]
        ),
        pytest.param(
            ["--vocab-size", 300, "--kind", "sentencepiece", "--format", "nanochat"],
            ["--kind does not go with --format nanochat"],
            id="sentencepiece-nanochat",
        ),
        pytest.param(
            ["--vocab-size", 300, "--engine", "datatrove", "--trace", 2],
            ["--trace needs the corpus in this process"],
            id="trace-with-tasks",
            marks=needs_datatrove,
        ),
    ],
)
def test_a_bad_option_value_is_a_usage_error_and_writes_nothing(tmp_path, args, fragments):
    """docs/guarantees.md: a bad option value is a usage error, exit code 2, as argparse's own."""
    (tmp_path / "good.txt").write_text("some ordinary text " * 10, encoding="utf-8")
    result = run_cli("--input", "good.txt", *args, "--out", "tok.json", cwd=tmp_path)
    assert_usage_error(result, *fragments)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.txt"]


def test_an_out_folder_that_does_not_exist_is_one_line(tmp_path):
    (tmp_path / "good.txt").write_text("some ordinary text " * 10, encoding="utf-8")
    out = tmp_path / "no_such_folder" / "t.json"
    result = run_cli("--input", "good.txt", "--vocab-size", 300, "--out", out, cwd=tmp_path)
    assert_clean_failure(result, "no_such_folder", "does not exist")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.txt"]


def write_body_rows(path, documents):
    """Rows {"id": i, "body": document}: a .jsonl or a .parquet file (row groups of 50)."""
    if path.suffix == ".jsonl":
        rows = (json.dumps({"id": i, "body": d}) for i, d in enumerate(documents))
        path.write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    else:
        table = pyarrow.table({"id": list(range(len(documents))), "body": documents})
        pyarrow.parquet.write_table(table, path, row_group_size=50)


def test_globs_of_row_files_a_text_column_and_max_chars(tmp_path, paragraphs):
    """The documents of the files in order (a glob sorted), the first up to --max-chars."""
    write_body_rows(tmp_path / "part-1.jsonl", paragraphs[300:600])
    write_body_rows(tmp_path / "part-0.jsonl", paragraphs[:300])
    write_body_rows(tmp_path / "rest.parquet", paragraphs[600:900])
    documents = paragraphs[:900]
    max_chars = sum(map(len, documents[:750])) + 5  # stops inside the parquet file
    out = tmp_path / "tok.json"
    args = ["--input", "part-*.jsonl", "rest.parquet", "--text-column", "body"]
    args += ["--max-chars", max_chars, "--vocab-size", 500, "--special-tokens", EOT]
    result = run_cli(*args, "--workers", 2, "--out", out, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    tokenizer = Tokenizer.load(out)
    expected = train_bpe_from_iterator(documents[:750], 500, [EOT])
    assert (tokenizer.vocab, tokenizer.merges) == expected


def test_a_line_of_200000_x_trains_as_simple_train_on_a_shorter_line(tmp_path):
    """A run of one character doubles its longest token at each merge; the merges
    before the run's length stops them are those simple.train learns on a shorter line."""
    (tmp_path / "x.txt").write_text("x" * 200_000 + "\n", encoding="utf-8")
    result = run_cli("--input", "x.txt", "--vocab-size", 300, "--out", "tok.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    merges = Tokenizer.load(tmp_path / "tok.json").merges
    assert merges[:11] == train_bpe_from_iterator(["x" * 4096], 267)[1]
    assert merges[:11] == simple.train("x" * 4096, 267)[1]
    assert merges[:17] == [(b"x" * 2**i, b"x" * 2**i) for i in range(17)]  # up to 131,072
    assert "... (131,072 bytes)" in result.stdout  # long tokens are shown cut


@pytest.mark.parametrize(
    "out, fragment",
    [
        pytest.param("", "--out is empty", id="empty"),  # it trained, exited 0, wrote nothing
        pytest.param("new.json/", "--out new.json/ names a folder", id="a-trailing-slash"),
    ],
)
def test_an_empty_or_folder_out_is_a_usage_error(tmp_path, out, fragment):
    """--out "" wrote nothing; "new.json/" wrote the file new.json: both refused before work."""
    (tmp_path / "good.txt").write_text("some ordinary text " * 10, encoding="utf-8")
    result = run_cli("--input", "good.txt", "--vocab-size", 300, "--out", out, cwd=tmp_path)
    assert_usage_error(result, fragment)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.txt"]


@pytest.mark.parametrize(
    "out, args",
    [
        pytest.param("tok.json", [], id="bpe-file"),
        pytest.param("tokenizer", ["--format", "nanochat"], id="nanochat-folder"),
        pytest.param(
            "sp",
            ["--kind", "sentencepiece"],
            id="sentencepiece-prefix",
            marks=needs_sentencepiece,
        ),
    ],
)
def test_an_out_on_a_read_only_mount_is_refused_before_training(tmp_path, out, args):
    """--out on a read-only file system failed only after the training, naming a temporary file."""
    (tmp_path / "good.txt").write_text("some ordinary text " * 10, encoding="utf-8")
    with mounted_tmpfs(tmp_path / "ro", "size=1m,ro") as mount:
        command = ["--input", "good.txt", "--vocab-size", 300, *args, "--out", mount / out]
        result = run_cli(*command, cwd=tmp_path)
        assert_clean_failure(result, f"--out {mount / out}", "cannot be written")
    assert not result.stdout  # refused before reading the corpus


def test_compression_from_counts_equals_encoding_the_text(shakespeare, gpt2_encoding):
    counts = simple.count_pretokens(shakespeare, check_pattern("gpt2"))
    expected = len(shakespeare.encode("utf-8")) / len(gpt2_encoding.encode_ordinary(shakespeare))
    table = PretokenTable.from_counts(counts)
    assert train_tokenizer.compression_of_counts(gpt2_encoding, table) == pytest.approx(expected)


@pytest.mark.parametrize(
    "files, args, fragments",
    [
        pytest.param(
            {},
            ["--input", "shards/*.jsonl"],
            ["shards/*.jsonl", "does not exist"],
            id="glob-matches-nothing",
        ),
        pytest.param(
            {"d.parquet": lambda p: write_body_rows(p, ["a b c"])},
            ["--input", "d.parquet"],
            ["d.parquet", "has no 'text' column", "--text-column"],
            id="missing-column",
        ),
        pytest.param(
            {"d.parquet": b"PAR1 not really PAR1"},
            ["--input", "d.parquet"],
            ["error: d.parquet: cannot be read as parquet"],
            id="corrupt-parquet",
        ),
        pytest.param(
            {"d.parquet": lambda p: write_body_rows(p, [])},
            ["--input", "d.parquet", "--text-column", "body"],
            ["d.parquet: no text to train on (no character outside the special tokens)"],
            id="zero-row-parquet",
        ),
        pytest.param(
            {"d.jsonl": '{"text": "a"}\n{"text": null}\n'},
            ["--input", "d.jsonl"],
            ["d.jsonl line 2", "'text' is null"],
            id="null-text",
        ),
        pytest.param(
            {"d.jsonl": '{"text": "some words"}\n'},
            ["--input", "d.jsonl", "--max-chars", 3],
            ["d.jsonl", "no text to train on within --max-chars 3", "raise --max-chars"],
            id="max-chars-below-the-first-document",
        ),
        pytest.param(
            {"d/a.txt": "hello world\n"},
            ["--input", "d"],
            ["d is a folder", "d/*.txt"],
            id="folder",
        ),
        pytest.param(
            {"d/a.txt": "hello world\n", "d/sub/b.txt": "more\n"},
            ["--input", "d/*"],
            ["d/sub is a folder"],
            id="a-glob-matching-a-folder",
        ),
        pytest.param(
            {"a.txt": "hello world\n", "d/b.txt": "held out\n"},
            ["--input", "a.txt", "--eval", "d"],
            ["--eval d is a folder; give a text file"],
            id="eval-folder",
        ),
        pytest.param(
            {"a.txt": "hello world\n", "empty.txt": ""},
            ["--input", "a.txt", "--eval", "empty.txt"],
            ["--eval empty.txt is empty"],
            id="eval-empty",
        ),
        pytest.param(
            {"a.txt": "hello world\n"},
            ["--input", "a.txt", "--eval", "missing.txt"],
            ["--eval missing.txt does not exist"],
            id="eval-missing",
        ),
        pytest.param(
            {"a.txt": "hello world\n"},
            ["--input", "a.txt", "--max-chars", 1],
            ["a.txt: no text to train on within --max-chars 1"],
            id="max-chars-1-on-a-text-file",
        ),
        pytest.param(
            {"d.jsonl": '{"text": ""}\n'},
            ["--input", "d.jsonl", "--max-chars", 3],
            ["d.jsonl: no text to train on (no character outside the special tokens)"],
            id="max-chars-on-documents-with-no-text",
        ),
        pytest.param(
            {"a.txt": "<|endoftext|><|endoftext|>"},
            ["--input", "a.txt", "--special-tokens", "<|endoftext|>"],
            ["a.txt: no text to train on (no character outside the special tokens)"],
            id="only-special-tokens",
        ),
    ],
)
def test_bad_corpus_is_one_line_and_writes_nothing(tmp_path, files, args, fragments):
    write_files(tmp_path, files)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = run_cli(*args, "--vocab-size", 300, "--out", "tok.json", cwd=tmp_path)
    assert_clean_failure(result, *fragments)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@needs_sentencepiece
@pytest.mark.parametrize(
    "files, args, fragments",
    [
        pytest.param(
            {"tiny.txt": "some ordinary text\n"},
            ["--input", "tiny.txt", "--vocab-size", 10],
            ["tiny.txt: sentencepiece refused to train 10 pieces", "a vocabulary of 260 pieces"],
            id="vocab-size-below-the-characters",
        ),
        pytest.param(
            {"empty.txt": b""},
            ["--input", "empty.txt", "--vocab-size", 300],
            ["empty.txt: sentencepiece refused", "text of one line or more"],
            id="no-line-of-text",
        ),
        pytest.param(
            {"d.jsonl": '{"text": "a"}\n{"text": null}\n'},
            ["--input", "d.jsonl", "--vocab-size", 300],
            ["error: d.jsonl line 2", "'text' is null"],
            id="a-bad-document-read-by-the-trainer",
        ),
        pytest.param(
            {"long.txt": "x" * 4193 + "\n"},
            ["--input", "long.txt", "--vocab-size", 300],
            ["long.txt: sentencepiece had nothing to train on", "longer than 4,192 bytes"],
            id="every-line-over-the-length-limit",
        ),
        pytest.param(
            {"d.jsonl": json.dumps({"text": "é" * 2100}) + "\n"},  # 2,100 characters, 4,200 bytes
            ["--input", "d.jsonl", "--vocab-size", 300],
            ["d.jsonl: sentencepiece had nothing to train on", "longer than 4,192 bytes"],
            id="every-document-over-the-length-limit",
        ),
    ],
)
def test_sentencepiece_refusals_are_one_line_and_write_nothing(tmp_path, files, args, fragments):
    """What SentencePiece's trainer refuses (a vocabulary too small for the text's characters, a
    text of no line, texts all over its length limit, which it skips), and a bad document it
    reads, are one line naming the input and saying what to do, not a RuntimeError; no file is
    written."""
    write_files(tmp_path, files)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = run_cli(*args, "--kind", "sentencepiece", "--out", "sp", cwd=tmp_path)
    assert_clean_failure(result, *fragments)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@needs_sentencepiece
def test_sentencepiece_on_a_full_disk_says_so(shakespeare_50k, small_tmpfs):
    """Its writer failing on a full disk was blamed on the text ("give text of one line")."""
    args = ["--vocab-size", 400, "--kind", "sentencepiece", "--out", small_tmpfs / "sp"]
    result = run_cli("--input", shakespeare_50k / "train.txt", *args)
    assert_clean_failure(result, f"cannot write sp.model and .vocab in {small_tmpfs}", "disk full")
    assert list(small_tmpfs.iterdir()) == []


@needs_sentencepiece
def test_sentencepiece_trains_on_a_txt_a_line_a_sentence(shakespeare_50k, tmp_path):
    """--kind sentencepiece on a .txt of 50 KB trains on its lines, as spm_train reads a file: it
    failed, the whole text one sentence, which SentencePiece skips as over 4,192 bytes."""
    train = shakespeare_50k / "train.txt"
    result = run_cli(
        "--input", train, "--vocab-size", 400, "--kind", "sentencepiece", "--out", tmp_path / "sp"
    )
    assert result.returncode == 0, result.stderr
    lines = train.read_text(encoding="utf-8").splitlines()
    golf.train_sentencepiece(lines, 400, tmp_path / "lines", "the lines")
    assert (tmp_path / "sp.vocab").read_bytes() == (tmp_path / "lines.vocab").read_bytes()


@needs_sentencepiece
def test_sentencepiece_reads_a_txt_as_its_own_trainer_reads_a_file(shakespeare_50k, tmp_path):
    """A .txt is cut at "\n" only, as SentencePiece's trainer reads an input file: U+2028 and a
    form feed inside a line made two sentences of it (str.splitlines), another model; so did a
    lone "\r" (read as a newline), beside CRLF line ends."""
    import sentencepiece as spm

    text = (shakespeare_50k / "train.txt").read_text(encoding="utf-8")
    text = text.replace("First", "First\u2028").replace("Citizen", "Citi\x0czen")
    text = text.replace(":\n", ":\r\n").replace(",\n", ",\r").replace("you", "y\rou")
    (tmp_path / "odd.txt").write_bytes(text.encode())
    args = ["--input", tmp_path / "odd.txt", "--vocab-size", 400, "--kind", "sentencepiece"]
    assert run_cli(*args, "--out", tmp_path / "ours").returncode == 0
    options = {**golf.SENTENCEPIECE_OPTIONS, "minloglevel": 2}
    spm.SentencePieceTrainer.train(
        input=str(tmp_path / "odd.txt"),
        model_prefix=str(tmp_path / "spm"),
        vocab_size=400,
        **options,
    )
    assert (tmp_path / "ours.vocab").read_bytes() == (tmp_path / "spm.vocab").read_bytes()


@needs_sentencepiece
def test_sentencepiece_says_how_many_texts_it_skipped(shakespeare_50k, tmp_path, capsys):
    """SentencePiece skips each text over 4,192 bytes, its log hidden: the count is said."""
    lines = (shakespeare_50k / "train.txt").read_text(encoding="utf-8").splitlines()
    golf.train_sentencepiece([*lines, "é" * 2100, "x" * 5000], 400, tmp_path / "sp", "the lines")
    skipped = f"the lines: sentencepiece skipped 2 of {len([t for t in lines if t.strip()]) + 2:,}"
    assert skipped in capsys.readouterr().out


def test_a_sweep_whose_sizes_the_text_cannot_reach_says_so(tmp_path):
    """A text of a few words has 14 merges: neither 300 nor 400 is reached (it crashed)."""
    (tmp_path / "tiny.txt").write_text("hello world hello there\n", encoding="utf-8")
    result = run_cli("--input", "tiny.txt", "--sweep", "300,400", "--out", "tok.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "not reached (no pair left to merge): [300, 400]" in result.stdout


def full_pipe():
    """(read end, write end) of a pipe already full: a process writing to it blocks at once."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    with contextlib.suppress(BlockingIOError):
        while True:
            os.write(write_end, b"." * 4096)
    os.set_blocking(write_end, True)
    return read_end, write_end


def wait_until_blocked_writing(process, timeout=120):
    """Until the process sleeps in a write to a pipe (Linux: /proc/PID/wchan names pipe_write)."""
    deadline = time.monotonic() + timeout
    while "pipe_write" not in Path(f"/proc/{process.pid}/wchan").read_text():
        assert process.poll() is None, "it ended before it blocked"
        assert time.monotonic() < deadline, "it never blocked writing"
        time.sleep(0.05)


def drain(read_end):
    with os.fdopen(read_end, "rb") as pipe:
        while pipe.read(1 << 16):
            pass


@pytest.mark.skipif(not Path("/proc/self/wchan").exists(), reason="needs Linux's /proc/PID/wchan")
@pytest.mark.parametrize(
    "engine, when",
    [
        pytest.param([], "before", id="bpe-stopped-at-its-first-line"),
        pytest.param(
            ["--engine", "datatrove", "--tasks", 1, "--workers", 1],
            "after",
            id="datatrove-stopped-after-the-learn-task-wrote-it",
            marks=pytest.mark.skipif(
                importlib.util.find_spec("datatrove") is None, reason="needs datatrove"
            ),
        ),
    ],
)
def test_ctrl_c_says_whether_the_tokenizer_file_was_written(tmp_path, engine, when):
    """Its stdout a full pipe, the run stops at its first print: before writing the file on one
    machine (the results come first), after the learn task wrote it with datatrove. Ctrl-C then
    says which, not "before any output folder was changed"."""
    (tmp_path / "a.txt").write_text("some ordinary text, and more of it\n" * 200, "utf-8")
    read_end, write_end = full_pipe()
    args = ["--input", "a.txt", "--vocab-size", 300, "--out", "tok.json", *engine]
    process = subprocess.Popen(
        [sys.executable, SCRIPT, *map(str, args)],
        cwd=tmp_path,
        stdout=write_end,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal
    )
    os.close(write_end)
    try:
        wait_until_blocked_writing(process)
        assert (tmp_path / "tok.json").exists() == (when == "after")
        process.send_signal(signal.SIGINT)
    finally:
        threading.Thread(target=drain, args=(read_end,), daemon=True).start()
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert stderr.splitlines()[-1] == f"error: interrupted {when} tok.json was written", stderr


@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "cr-only"])
def test_newlines_are_read_as_nanogpt_reads_them(newline, shakespeare, tmp_path):
    """open(path, "r").read(): "\\r\\n" and a lone "\\r" are "\\n", so the same tokenizer file."""
    text = shakespeare[:100_000]
    (tmp_path / "lf.txt").write_bytes(text.encode())
    (tmp_path / "other.txt").write_bytes(text.replace("\n", newline).encode())
    for name in ("lf", "other"):
        result = run_python(
            SCRIPT,
            "--input",
            tmp_path / f"{name}.txt",
            "--vocab-size",
            300,
            "--out",
            tmp_path / f"{name}.json",
        )
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "other.json").read_bytes() == (tmp_path / "lf.json").read_bytes()


def test_nanochat_pattern_tokenizer_file_is_pinned(shakespeare_path, tmp_path):
    """The file train_tokenizer.py writes for Tiny Shakespeare under nanochat's pattern, counted
    by two workers, byte for byte: its sha256 as the trainer wrote it before its count tables
    and its waiting pairs were made compact."""
    out = tmp_path / "tok.json"
    result = run_cli(
        "--input",
        shakespeare_path,
        "--pattern",
        "nanochat",
        "--vocab-size",
        4096,
        "--special-tokens",
        EOT,
        "--workers",
        2,
        "--out",
        out,
    )
    assert result.returncode == 0, result.stderr
    assert hashlib.sha256(out.read_bytes()).hexdigest() == (
        "e7ae5581e8d10df6eb74bfed5af6fa749dc002c64f407913051e64c0d2ee117c"
    )
