"""prep/datatrove_training.py: counting as datatrove tasks gives train_tokenizer.py's file, byte
for byte (local executor; needs the `scale` extra)."""

import json

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
