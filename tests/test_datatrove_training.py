"""prep/datatrove_training.py: counting as datatrove tasks gives train_tokenizer.py's file, byte
for byte (local executor; needs the `scale` extra)."""

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import REPO, run_python

from bpe import EOT

pytest.importorskip("datatrove")

from prep.datatrove_training import train_with_datatrove  # noqa: E402


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
        slice_bytes=20_000,  # 8 slices for 3 tasks
    )
    assert len(list((tmp_path / "work" / "counts").glob("*.json"))) == 3
    assert (tmp_path / "tasks.json").read_bytes() == (tmp_path / "one.json").read_bytes()


def test_slurm_executor_with_stand_in_sbatch(tmp_path, monkeypatch, paragraphs):
    """datatrove's real Slurm launch scripts, run here by the stand-in tests/slurm/sbatch."""
    stand_in = REPO / "tests" / "slurm"
    monkeypatch.setenv(
        "PATH",
        f"{stand_in}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    )
    monkeypatch.setenv("FAKE_SLURM_STATE", str(tmp_path / "slurm"))
    (tmp_path / "a.txt").write_text(EOT.join(paragraphs[:1500]), encoding="utf-8")
    one = run_python(
        REPO / "train_tokenizer.py",
        *["--input", tmp_path / "a.txt", "--vocab-size", 500, "--special-tokens", EOT],
        *["--out", tmp_path / "one.json"],
    )
    assert one.returncode == 0, one.stderr
    train_with_datatrove(
        [tmp_path / "a.txt"],
        500,
        [EOT],
        out=tmp_path / "tasks.json",
        work_dir=tmp_path / "work",
        tasks=2,
        workers=2,
        executor="slurm",
        slurm_partition="test",
        slice_bytes=30_000,
    )
    jobs = [
        json.loads(line) for line in (tmp_path / "slurm" / "jobs.jsonl").read_text().splitlines()
    ]
    stages = {job["name"]: job for job in jobs if "launch_pickled_pipeline" in job["command"]}
    assert list(stages) == ["tokenizer-count", "tokenizer-learn"]
    assert [job["array"] for job in stages.values()] == [2, 1]  # array ranks = tasks
    assert all(job["state"] == "COMPLETED" for job in jobs)
    assert (tmp_path / "tasks.json").read_bytes() == (tmp_path / "one.json").read_bytes()
