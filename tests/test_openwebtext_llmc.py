"""data/openwebtext/prepare.py --format llmc (issue 18): the same train and val token streams as
its nanoGPT train.bin / val.bin, written as llm.c shards that llm.c and modded-nanogpt read.
"""

import json

import numpy as np
from conftest import REPO, run_python
from llmc_fineweb import llmc_check_shard
from modded_nanogpt_loader import load_data_shard

SCRIPT = REPO / "data" / "openwebtext" / "prepare.py"
COMMON = REPO / "prepare_common.py"


def test_llmc_shards_hold_the_nanogpt_streams(corpus, tmp_path):
    folder, _ = corpus
    common = ["--data-files", folder / "*.jsonl", "--num-proc", 2, "--val-fraction", 0.01]
    env = {"HF_DATASETS_CACHE": str(tmp_path / "cache")}
    bins = run_python(SCRIPT, *common, "--out-dir", tmp_path / "bin", env=env)
    assert bins.returncode == 0, bins.stderr[-3000:]
    llmc = run_python(
        SCRIPT, *common, "--format", "llmc", "--shard-size", 20_000, "--out-dir", tmp_path / "llmc",
        env=env,
    )  # fmt: skip
    assert llmc.returncode == 0, llmc.stderr[-3000:]
    meta = json.loads((tmp_path / "llmc" / "meta.json").read_text())
    assert meta["format"] == "llmc"
    names = [shard["file"] for shard in meta["shards"]]
    assert names[0] == "openwebtext_val_000000.bin"
    assert names[1:] == [f"openwebtext_train_{i:06d}.bin" for i in range(1, len(names))]
    assert len(names) >= 4
    for split in ("train", "val"):
        stream = np.fromfile(tmp_path / "bin" / f"{split}.bin", dtype=np.uint16)
        shards = [load_data_shard(tmp_path / "llmc" / s["file"]) for s in meta["shards"]
                  if s["split"] == split]  # fmt: skip
        assert np.array_equal(np.concatenate(shards), stream), split
        assert all(len(s) == 20_000 for s in shards[:-1])
    for name in names:
        llmc_check_shard(tmp_path / "llmc" / name)
    verify = run_python(COMMON, "verify", tmp_path / "llmc")
    assert verify.returncode == 0, verify.stderr
