"""docs/bits_per_byte.md's change to nanoGPT's train.py, made and run: a few iterations on the CPU
on the character lesson's folder, where every target is one ASCII byte, so the val bits per byte
printed must be the val loss divided by ln 2.

Needs PyTorch and a nanoGPT checkout (NANOGPT_REPO=/path/to/nanoGPT); skipped without either.
train.py, model.py and configurator.py are copied into a temporary folder, never changed in the
checkout.
"""

import importlib.util
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, documented_replacements, run_python

NANOGPT_FILES = ("train.py", "model.py", "configurator.py")
TINY_RUN = {  # nanoGPT's own --key=value overrides: a model of one layer, on the CPU, in seconds
    "dataset": "shakespeare_char",
    "device": "cpu",
    "compile": False,
    "dtype": "float32",
    "batch_size": 4,
    "block_size": 32,
    "n_layer": 1,
    "n_head": 2,
    "n_embd": 32,
    "max_iters": 2,
    "lr_decay_iters": 2,
    "warmup_iters": 1,
    "eval_interval": 2,
    "eval_iters": 2,
    "log_interval": 1,
    "always_save_checkpoint": False,
}


def test_the_change_sums_nats_and_bytes_as_nanochat_does():
    """Checked without nanoGPT: nanochat's evaluate_bpb, in nanoGPT's estimate_loss."""
    nanogpt_changes = documented_replacements("bits_per_byte.md")[:3]  # parameter-golf's follow
    (old_dir, new_dir), (old_loop, new_loop), (old_print, new_print) = nanogpt_changes
    assert new_dir.startswith(old_dir) and "token_bytes.npy" in new_dir
    assert "reduction='none'" in new_loop and "(target_bytes > 0)" in new_loop
    assert "nats / math.log(2) / nbytes" in new_loop
    assert "val bpb {losses['val_bpb']:.4f}" in new_print


@pytest.fixture
def nanogpt(shakespeare_path, tmp_path):
    """nanoGPT's three files, train.py changed as the doc says, and data/shakespeare_char."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("needs PyTorch (pip install torch)")
    checkout = os.environ.get("NANOGPT_REPO")
    if not checkout:
        pytest.skip("set NANOGPT_REPO to a nanoGPT checkout to run its train.py")
    for name in NANOGPT_FILES:
        shutil.copy(Path(checkout) / name, tmp_path / name)
    source = (tmp_path / "train.py").read_text(encoding="utf-8")
    for old, new in documented_replacements("bits_per_byte.md")[:3]:  # nanoGPT's three
        assert source.count(old) == 1, f"train.py does not hold, exactly once:\n{old}"
        source = source.replace(old, new)
    (tmp_path / "train.py").write_text(source, encoding="utf-8")
    data = tmp_path / "data" / "shakespeare_char"
    lesson = REPO / "data" / "shakespeare_char" / "prepare.py"
    result = run_python(
        lesson, "--input", shakespeare_path, "--out-dir", data, env={"PYTHONPATH": str(REPO)}
    )
    assert result.returncode == 0, result.stderr
    return tmp_path


def test_val_bits_per_byte_of_the_char_lesson(nanogpt):
    args = [f"--{key}={value}" for key, value in TINY_RUN.items()]
    result = subprocess.run(
        [sys.executable, "train.py", *args],
        cwd=nanogpt,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    found = re.findall(
        r"^step \d+: train loss \S+, val loss (\S+), val bpb (\S+)$", result.stdout, re.M
    )
    assert len(found) == 2  # steps 0 and 2
    for loss, bpb in found:
        assert math.isclose(float(bpb), float(loss) / math.log(2), abs_tol=2e-4)
