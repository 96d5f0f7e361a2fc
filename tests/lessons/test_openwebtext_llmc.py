"""data/openwebtext/prepare.py --format llmc: the same train and val token streams as
its nanoGPT train.bin / val.bin, written as llm.c shards that llm.c and modded-nanogpt read; and
prepare_datatrove.py --format llmc, the same shards byte for byte from datatrove's tasks.
"""

import json

import numpy as np
import pytest
from conftest import COMMON, REPO, run_python
from llmc_fineweb import llmc_check_shard
from modded_nanogpt_loader import load_data_shard

pytestmark = pytest.mark.usefixtures("downloads")  # Tiny Shakespeare, GPT-2's files

SCRIPT = REPO / "data" / "openwebtext" / "prepare.py"
CLUSTER_SCRIPT = REPO / "data" / "openwebtext" / "prepare_datatrove.py"
OPTIONS = ["--num-proc", 2, "--val-fraction", 0.01, "--shard-size", 20_000]


@pytest.fixture(scope="module")
def runs(corpus, tmp_path_factory):
    """The corpus prepared as nanoGPT's .bin files and as llm.c shards."""
    folder, _ = corpus
    tmp = tmp_path_factory.mktemp("openwebtext-llmc")
    env = {"HF_DATASETS_CACHE": str(tmp / "cache")}
    for name, extra in (("bin", []), ("llmc", ["--format", "llmc"])):
        result = run_python(
            SCRIPT,
            "--data-files",
            folder / "*.jsonl",
            *OPTIONS,
            *extra,
            "--out-dir",
            tmp / name,
            env=env,
        )
        assert result.returncode == 0, result.stderr[-3000:]
    return tmp / "bin", tmp / "llmc"


def test_llmc_shards_hold_the_nanogpt_streams(runs):
    bins, llmc = runs
    meta = json.loads((llmc / "meta.json").read_text())
    assert meta["format"] == "llmc"
    names = [shard["file"] for shard in meta["shards"]]
    assert names[0] == "openwebtext_val_000000.bin"
    assert names[1:] == [f"openwebtext_train_{i:06d}.bin" for i in range(1, len(names))]
    assert len(names) >= 4
    for split in ("train", "val"):
        stream = np.fromfile(bins / f"{split}.bin", dtype=np.uint16)
        shards = [load_data_shard(llmc / s["file"]) for s in meta["shards"] if s["split"] == split]
        assert np.array_equal(np.concatenate(shards), stream), split
        assert all(len(s) == 20_000 for s in shards[:-1])
    for name in names:
        llmc_check_shard(llmc / name)
    verify = run_python(COMMON, "verify", llmc)
    assert verify.returncode == 0, verify.stderr


def test_the_cluster_script_writes_the_same_shards(runs, corpus, tmp_path):
    pytest.importorskip("datatrove", reason="needs datatrove: pip install -e '.[scale]'")
    folder, _ = corpus
    _, llmc = runs
    result = run_python(
        CLUSTER_SCRIPT,
        "--data-files",
        folder / "*.jsonl",
        *OPTIONS,
        "--format",
        "llmc",
        "--tasks",
        3,
        "--workers",
        2,
        "--out-dir",
        tmp_path / "out",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    expected = json.loads((llmc / "meta.json").read_text())["shards"]
    assert json.loads((tmp_path / "out" / "meta.json").read_text())["shards"] == expected
    for shard in expected:
        assert (tmp_path / "out" / shard["file"]).read_bytes() == (
            llmc / shard["file"]
        ).read_bytes()
