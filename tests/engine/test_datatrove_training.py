"""engine/training.py and train_tokenizer.py --engine datatrove: counting as datatrove
tasks gives the one-machine tokenizer file, byte for byte, and resumes (needs the `scale` extra)."""

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import REPO, SLURM, assert_clean_failure, run_python

from bpe import EOT

pytest.importorskip("datatrove")

from engine.training import train_with_datatrove  # noqa: E402


def test_three_count_tasks_write_the_one_machine_tokenizer_file(tmp_path, shakespeare, paragraphs):
    (tmp_path / "a.txt").write_text(EOT.join(shakespeare[:150_000].split("\n\n")), "utf-8")
    rows = (json.dumps({"text": p}) + "\n" for p in paragraphs[2000:2600])
    (tmp_path / "b.jsonl").write_text("".join(rows), encoding="utf-8")
    inputs = [tmp_path / "a.txt", tmp_path / "b.jsonl"]
    one = run_python(
        REPO / "train_tokenizer.py",
        *["--input", *inputs, "--vocab-size", 700, "--special-tokens", EOT],
        *["--out", tmp_path / "one.json"],
    )
    assert one.returncode == 0, one.stderr
    train_with_datatrove(
        inputs,
        700,
        [EOT],
        out=tmp_path / "tasks.json",
        work_dir=tmp_path / "work",
        tasks=3,
        workers=2,
        piece_bytes=20_000,  # 8 pieces for 3 tasks
    )
    assert len(list((tmp_path / "work").glob("counts-*/counts/*.json"))) == 3
    assert (tmp_path / "tasks.json").read_bytes() == (tmp_path / "one.json").read_bytes()


@pytest.mark.slow
def test_slurm_executor_with_stand_in_sbatch(tmp_path, monkeypatch, paragraphs):
    """datatrove's real Slurm launch scripts, run here by the stand-in
    tests/stand_ins/slurm/sbatch."""
    stand_in = SLURM
    monkeypatch.setenv(
        "PATH",
        f"{stand_in}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    )
    monkeypatch.setenv("FAKE_SLURM_STATE", str(tmp_path / "slurm"))
    inputs = [tmp_path / "a.txt", tmp_path / "b.txt"]  # a piece each: one per task
    (tmp_path / "a.txt").write_text(EOT.join(paragraphs[:800]), encoding="utf-8")
    (tmp_path / "b.txt").write_text(EOT.join(paragraphs[800:1500]), encoding="utf-8")
    one = run_python(
        REPO / "train_tokenizer.py",
        *["--input", *inputs, "--vocab-size", 500, "--special-tokens", EOT],
        *["--out", tmp_path / "one.json"],
    )
    assert one.returncode == 0, one.stderr
    tasks = run_python(
        REPO / "train_tokenizer.py",
        *["--input", *inputs, "--vocab-size", 500, "--special-tokens", EOT],
        *["--out", tmp_path / "tasks.json", "--engine", "datatrove", "--executor", "slurm"],
        *["--slurm-partition", "test", "--tasks", 2, "--work-dir", tmp_path / "work"],
    )
    assert tasks.returncode == 0, tasks.stderr
    assert "submitted to Slurm" in tasks.stdout
    jobs = [
        json.loads(line) for line in (tmp_path / "slurm" / "jobs.jsonl").read_text().splitlines()
    ]
    stages = {job["name"]: job for job in jobs if "launch_pickled_pipeline" in job["command"]}
    assert list(stages) == ["tokenizer-count", "tokenizer-learn"]
    assert [job["array"] for job in stages.values()] == [2, 1]  # array ranks = tasks
    assert all(job["state"] == "COMPLETED" for job in jobs)
    assert (tmp_path / "tasks.json").read_bytes() == (tmp_path / "one.json").read_bytes()


def train_tokenizer(*args):
    return run_python(REPO / "train_tokenizer.py", *map(str, args))


@pytest.mark.slow
def test_command_line_resumes_and_keeps_other_runs_apart(tmp_path, paragraphs):
    """--engine datatrove with --max-chars: the one-machine file; a rerun after a removed output
    and a lost count table recounts that table only; other inputs count in their own folder.
    --max-chars keeps all of a.txt and the start of b.txt: a piece each, one per task."""
    for name, part in (("a.txt", paragraphs[:300]), ("b.txt", paragraphs[300:1100])):
        (tmp_path / name).write_text(EOT.join(part), encoding="utf-8")
    common = ["--vocab-size", 600, "--special-tokens", EOT, "--max-chars", 60_000]
    inputs = ["--input", tmp_path / "a.txt", tmp_path / "b.txt"]
    one = train_tokenizer(*inputs, *common, "--out", tmp_path / "one.json")
    assert one.returncode == 0, one.stderr
    engine = ["--engine", "datatrove", "--tasks", 2, "--workers", 2]
    first = train_tokenizer(*inputs, *common, *engine, "--out", tmp_path / "tasks.json")
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "tasks.json").read_bytes() == (tmp_path / "one.json").read_bytes()

    (folder,) = (tmp_path / ".datatrove-work").glob("counts-*")
    tables = sorted((folder / "counts").glob("*.json"))
    assert len(tables) == 2
    kept = tables[0].stat().st_mtime_ns
    (tmp_path / "tasks.json").unlink()
    tables[1].unlink()  # its task is marked completed: it must run again all the same
    again = train_tokenizer(*inputs, *common, *engine, "--out", tmp_path / "tasks.json")
    assert again.returncode == 0, again.stderr
    assert tables[0].stat().st_mtime_ns == kept  # skipped: completed before
    assert tables[1].exists()
    assert (tmp_path / "tasks.json").read_bytes() == (tmp_path / "one.json").read_bytes()

    other = train_tokenizer(
        "--input", tmp_path / "a.txt", *common, *engine, "--out", tmp_path / "other.json"
    )
    assert other.returncode == 0, other.stderr
    assert len(list((tmp_path / ".datatrove-work").glob("counts-*"))) == 2

    run_json = folder / "run.json"
    run_json.write_text(run_json.read_text().replace('"tasks": 2', '"tasks": 3'))
    refused = train_tokenizer(*inputs, *common, *engine, "--out", tmp_path / "tasks.json")
    assert_clean_failure(refused, str(folder), "another run", logs_before=True)


def test_tasks_are_capped_at_the_pieces_of_the_input(tmp_path, paragraphs):
    """--tasks 40 on a text of one piece: one count task, not 40 (39 with nothing to count)."""
    (tmp_path / "a.txt").write_text(EOT.join(paragraphs[:300]), encoding="utf-8")
    common = ["--input", tmp_path / "a.txt", "--vocab-size", 400, "--special-tokens", EOT]
    one = train_tokenizer(*common, "--out", tmp_path / "one.json")
    assert one.returncode == 0, one.stderr
    engine = ["--engine", "datatrove", "--tasks", 40, "--workers", 1]
    tasks = train_tokenizer(*common, *engine, "--out", tmp_path / "tasks.json")
    assert tasks.returncode == 0, tasks.stderr
    assert "note: --tasks 40 capped at 1, the input's pieces" in tasks.stdout.splitlines()
    assert len(list((tmp_path / ".datatrove-work").glob("counts-*/counts/*.json"))) == 1
    assert (tmp_path / "tasks.json").read_bytes() == (tmp_path / "one.json").read_bytes()


@pytest.mark.slow
@pytest.mark.ray
def test_ray_executor(tmp_path, paragraphs):
    pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")
    (tmp_path / "a.txt").write_text(EOT.join(paragraphs[:600]), encoding="utf-8")
    common = ["--input", tmp_path / "a.txt", "--vocab-size", 400, "--special-tokens", EOT]
    one = train_tokenizer(*common, "--out", tmp_path / "one.json")
    assert one.returncode == 0, one.stderr
    ray_run = train_tokenizer(
        *common, "--out", tmp_path / "ray.json", "--engine", "datatrove", "--executor", "ray"
    )
    assert ray_run.returncode == 0, ray_run.stderr[-3000:]
    assert (tmp_path / "ray.json").read_bytes() == (tmp_path / "one.json").read_bytes()


TEXT = b"hello world\n"


@pytest.mark.parametrize(
    "options, content, message",
    [
        pytest.param(
            ["--tasks", 2], TEXT, "--tasks needs --engine datatrove", id="tasks-without-engine"
        ),
        pytest.param(
            ["--engine", "datatrove", "--executor", "slurm"],
            TEXT,
            "--executor slurm needs --slurm-partition",
            id="slurm-without-partition",
        ),
        pytest.param(
            ["--engine", "datatrove", "--executor", "slurm", "--slurm-partition", "cpu"],
            TEXT,
            "--executor slurm needs Slurm's sbatch, not found on PATH",
            id="slurm-without-sbatch",
        ),
        pytest.param(
            ["--engine", "datatrove", "--eval", "a.txt"],
            TEXT,
            "--eval needs the corpus in this process",
            id="eval-with-tasks",
        ),
        pytest.param(
            ["--engine", "datatrove", "--tasks", 2],
            TEXT * 100 + b"\xff bad\n",
            "a.txt is not valid UTF-8: byte offset 1,200",
            id="not-utf8-found-by-a-count-task",
        ),
        pytest.param(
            ["--engine", "datatrove", "--tasks", 2],
            b"",
            "a.txt: no text to train on (no character outside the special tokens)",
            id="empty-input-found-by-the-learn-task",
        ),
        pytest.param(
            ["--engine", "datatrove", "--tasks", 2, "--max-chars", 1],
            TEXT,
            "a.txt: no text to train on within --max-chars 1",
            id="max-chars-left-out-every-document",
        ),
    ],
)
def test_command_line_refusals(tmp_path, options, content, message):
    (tmp_path / "a.txt").write_bytes(content)
    result = run_python(
        REPO / "train_tokenizer.py",
        *["--input", "a.txt", "--vocab-size", 300, "--out", "t.json", *options],
        cwd=tmp_path,
    )
    assert result.returncode != 0
    assert message in result.stderr.splitlines()[-1]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "t.json").exists()
