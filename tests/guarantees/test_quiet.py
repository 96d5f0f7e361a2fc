"""Quiet by default: the datatrove path prints what the datasets path prints.

datatrove's own logs (loguru, ~40 lines a stage, with emoji) go to the work directory's
datatrove.log, and to the terminal only with --verbose; progress bars name the final files, never
a hidden staging path; no third-party warning that misleads (datasets' "num_proc must be <= 1"
when a split has fewer documents than processes); "1 document", not "1 documents".
"""

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, needs_datatrove

pytestmark = needs_datatrove  # every test here runs the datatrove path

EOT = "<|endoftext|>"
LOGURU = (" | INFO ", " | SUCCESS ", "📉", "🛠")


@pytest.fixture(scope="module")
def docs(shakespeare, gpt2_encoding, tmp_path_factory):  # noqa: ARG001 (GPT-2's files fetched)
    """docs.jsonl: 300 paragraphs of Tiny Shakespeare; with --val-fraction 0.001, 1 in val."""
    folder = tmp_path_factory.mktemp("docs")
    paragraphs = [p for p in shakespeare.split("\n\n") if p.strip()][:300]
    with open(folder / "docs.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"text": p}) + "\n" for p in paragraphs)
    return folder


def run(script, *args, cwd):
    env = {**os.environ, "HF_DATASETS_CACHE": str(cwd / "hf-cache")}
    return subprocess.run(
        [sys.executable, str(REPO / script), *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )


def stderr_lines(result):
    """stderr's lines, progress bars' redraws (\\r) split too."""
    return [line for line in result.stderr.replace("\r", "\n").splitlines() if line.strip()]


def test_datatrove_prints_what_datasets_prints(docs):
    options = ["--data-files", "docs.jsonl", "--num-proc", 2, "--val-fraction", "0.001"]
    datasets = run("data/openwebtext/prepare.py", *options, "--out-dir", "a", cwd=docs)
    assert datasets.returncode == 0, datasets.stderr
    datatrove = run("data/openwebtext/prepare_datatrove.py", *options, "--out-dir", "b", cwd=docs)
    assert datatrove.returncode == 0, datatrove.stderr
    assert "val has 1 document, " in datasets.stdout
    # the same lines, but the work directory's (where the logs and the resumable work are)
    work_line = "docs.jsonl: 1 file, 2 tasks; work directory "
    lines = (
        datatrove.stdout.replace("to b\n", "to a\n")
        .replace("overlap b;", "overlap a;")
        .splitlines()
    )
    assert [
        line for line in lines if not line.startswith(work_line)
    ] == datasets.stdout.splitlines()
    assert len(lines) == len(datasets.stdout.splitlines()) + 1
    for result in (datasets, datatrove):
        for line in stderr_lines(result):
            assert not any(mark in line for mark in LOGURU), line
            assert "num_proc must be" not in line and ".prepare." not in line, line
    bars = {line.split(":")[0] for line in stderr_lines(datasets)} - {"Generating train split"}
    assert bars == {
        "tokenizing train (num_proc=2)",
        "tokenizing val (num_proc=1)",  # one document: one process
        "writing a/train.bin",
        "writing a/val.bin",
    }
    assert {line.split(":")[0] for line in stderr_lines(datatrove)} == {
        "tokenize (2 tasks)",
        "write (2 tasks)",
    }
    logs = list((docs / "b" / ".datatrove-work").glob("*/split-*/logs/datatrove.log"))
    assert len(logs) == 1
    assert "Launching pipeline for rank=" in logs[0].read_text(encoding="utf-8")


def test_verbose_shows_datatrove_logs(docs):
    options = ["--data-files", "docs.jsonl", "--tasks", 2, "--val-fraction", "0.001"]
    result = run(
        "data/openwebtext/prepare_datatrove.py", *options, "--out-dir", "c", "--verbose", cwd=docs
    )
    assert result.returncode == 0, result.stderr
    assert "Launching pipeline for rank=" in result.stderr


def test_train_tokenizer_with_datatrove_is_quiet(docs, tmp_path):
    (tmp_path / "in.txt").write_text(
        (docs / "docs.jsonl").read_text(encoding="utf-8"), encoding="utf-8"
    )
    options = [
        "--input",
        "in.txt",
        "--vocab-size",
        300,
        "--special-tokens",
        EOT,
        "--out",
        "tok.json",
    ]
    quiet = run(
        "train_tokenizer.py", *options, "--engine", "datatrove", "--workers", 2, cwd=tmp_path
    )
    assert quiet.returncode == 0, quiet.stderr
    # one file, one piece: --tasks is capped at 1 (a note on stdout), one bar on stderr
    assert {line.split(":")[0] for line in stderr_lines(quiet)} == {"count (1 task)"}
    logs = list((tmp_path / ".datatrove-work").glob("*/logs/datatrove.log"))
    assert len(logs) == 1 and "Launching pipeline for rank=" in logs[0].read_text(encoding="utf-8")
    verbose = run(
        "train_tokenizer.py", *options, "--engine", "datatrove", "--verbose", cwd=tmp_path
    )
    assert verbose.returncode == 0, verbose.stderr
    assert "Launching pipeline" in verbose.stderr
    refused = run("train_tokenizer.py", *options, "--verbose", cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.startswith("error: --verbose needs --engine datatrove")


def test_fineweb_datatrove_prints_what_datasets_prints(docs):
    options = ["--data-files", "docs.jsonl", "--shard-size", 5000]
    datasets = run(
        "data/fineweb/prepare.py", *options, "--num-proc", 2, "--out-dir", "fa", cwd=docs
    )
    assert datasets.returncode == 0, datasets.stderr
    datatrove = run(
        "data/fineweb/prepare_datatrove.py", *options, "--tasks", 2, "--out-dir", "fb", cwd=docs
    )
    assert datatrove.returncode == 0, datatrove.stderr
    lines = (
        datatrove.stdout.replace(" to fb\n", " to fa\n")
        .replace("overlap fb;", "overlap fa;")
        .splitlines()
    )
    work_line = "docs.jsonl: 1 file, 2 tasks; work directory "
    assert [
        line for line in lines if not line.startswith(work_line)
    ] == datasets.stdout.splitlines()
    for line in stderr_lines(datatrove):
        assert not any(mark in line for mark in LOGURU), line
