"""docs/bos_batches.md's change to nanoGPT's train.py, made and run: a few iterations on the CPU.

Needs PyTorch and a nanoGPT checkout (NANOGPT_REPO=/path/to/nanoGPT); skipped without either.
train.py, model.py and configurator.py are copied into a temporary folder, never changed in the
checkout, and train on a tiny prepared folder made here by hand.
"""

import importlib.util
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, documented_replacements

NANOGPT_FILES = ("train.py", "model.py", "configurator.py")
VOCAB_SIZE, EOT = 64, 63
TINY_RUN = {  # nanoGPT's own --key=value overrides: a model of one layer, on the CPU, in seconds
    "dataset": "bos",
    "device": "cpu",
    "compile": False,
    "dtype": "float32",
    "batch_size": 4,
    "block_size": 32,
    "gradient_accumulation_steps": 1,
    "n_layer": 1,
    "n_head": 2,
    "n_embd": 32,
    "max_iters": 4,
    "lr_decay_iters": 4,
    "warmup_iters": 1,
    "eval_interval": 2,
    "eval_iters": 2,
    "log_interval": 1,
    "always_save_checkpoint": False,
}


def patched_train_py(source):
    for old, new in documented_replacements("bos_batches.md"):
        assert source.count(old) == 1, f"train.py does not hold, exactly once:\n{old}"
        source = source.replace(old, new)
    return source


def write_split(folder, name, lengths, rng):
    """A split of documents of random ids, each ending with EOT: NAME.bin and NAME.docs.npy."""
    documents = [np.append(rng.integers(EOT, size=n - 1), EOT) for n in lengths]
    np.concatenate(documents).astype(np.uint16).tofile(folder / f"{name}.bin")
    np.save(folder / f"{name}.docs.npy", np.cumsum([0, *lengths[:-1]]).astype(np.uint64))


@pytest.fixture
def nanogpt(tmp_path):
    """A folder holding nanoGPT's three files, train.py changed as the doc says, and data/bos."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("needs PyTorch (pip install torch)")
    checkout = os.environ.get("NANOGPT_REPO")
    if not checkout:
        pytest.skip("set NANOGPT_REPO to a nanoGPT checkout to run its train.py")
    for name in NANOGPT_FILES:
        shutil.copy(Path(checkout) / name, tmp_path / name)
    train = tmp_path / "train.py"
    train.write_text(patched_train_py(train.read_text(encoding="utf-8")), encoding="utf-8")
    data = tmp_path / "data" / "bos"
    data.mkdir(parents=True)
    rng = np.random.default_rng(0)
    write_split(data, "train", rng.integers(5, 80, size=200).tolist(), rng)
    write_split(data, "val", rng.integers(5, 80, size=40).tolist(), rng)
    with open(data / "meta.pkl", "wb") as f:
        pickle.dump({"vocab_size": VOCAB_SIZE}, f)
    return tmp_path


def run_train_py(folder):
    return subprocess.run(
        [sys.executable, "train.py", *(f"--{key}={value}" for key, value in TINY_RUN.items())],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(REPO)},  # this checkout's hardening package
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_train_py_trains_on_bos_aligned_batches(nanogpt):
    result = run_train_py(nanogpt)
    assert result.returncode == 0, result.stderr[-3000:]
    print(result.stdout, result.stderr)  # shown with pytest -s: the run's losses
    losses = [float(x) for x in re.findall(r"^iter \d+: loss (\d+\.\d+)", result.stdout, re.M)]
    assert len(losses) == TINY_RUN["max_iters"] + 1  # iterations 0 .. max_iters
    assert all(0 < loss < 2 * np.log(VOCAB_SIZE) for loss in losses)
    assert re.search(r"^step 4: train loss \d+\.\d+, val loss \d+\.\d+$", result.stdout, re.M)


def test_train_py_reads_the_document_starts(nanogpt):
    """Without train.docs.npy the changed get_batch fails: the rows come from document_batch."""
    (nanogpt / "data" / "bos" / "train.docs.npy").unlink()
    result = run_train_py(nanogpt)
    assert result.returncode != 0
    assert "train.docs.npy" in result.stderr.splitlines()[-1]


def test_the_change_replaces_get_batchs_random_windows():
    """Checked without nanoGPT: the doc's lines are nanoGPT's, and the new ones use the starts."""
    (old_loader, new_loader), (old_rows, new_rows) = documented_replacements("bos_batches.md")
    assert new_loader.startswith(old_loader)  # the data folder line stays
    assert "torch.randint(len(data) - block_size" in old_rows
    assert "np.load(os.path.join(data_dir, f'{split}.docs.npy'))" in new_loader
    assert "document_batch(data, doc_starts[split], batch_size, block_size, rng)" in new_rows
