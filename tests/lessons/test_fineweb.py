"""data/fineweb/prepare.py run as a user runs it.

- on local parquet files (--data-files), its shards are the bytes llm.c's dev/data/fineweb.py
  (--format llmc) and build-nanogpt's fineweb.py (--format npy) write from the same documents,
  names included (tests/references/llmc_fineweb.py, tests/references/buildnanogpt_fineweb.py); every
  shard passes modded-nanogpt's and llm.c's readers; meta.json lists every shard; a rerun writes
  the same;
- from the local hub (tests/stand_ins/hub_server.py) with no --data-files: the same bytes as the
  --data-files run on the same parquet files, every request at the pinned revision;
- `prepare_common.py verify` audits the shard folder and finds what is wrong with it, `show`
  shows a shard's x/y block; bad input is one `error:` line;
- --shuffle SEED: the documents of the shards are those of the unshuffled run, in the order of
  np.random.default_rng(SEED).permutation(n), the bytes llm.c's script writes from them in that
  order; a rerun, and prepare_datatrove.py, write the same bytes; another seed, another order.
"""

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from buildnanogpt_fineweb import write_npy_shards
from conftest import COMMON, REPO, SLURM, assert_clean_failure, files_in, lesson, run_python
from hub_server import LocalHub, fineweb_files
from llmc_fineweb import llmc_check_shard, write_llmc_shards
from modded_nanogpt_loader import load_data_shard

pytestmark = pytest.mark.usefixtures("downloads")  # Tiny Shakespeare, GPT-2's files

SCRIPT = REPO / "data" / "fineweb" / "prepare.py"
SHARD_SIZE = 5_000  # 400 paragraphs of Tiny Shakespeare, about 19,000 tokens: 4 shards


@pytest.fixture(scope="module")
def fineweb_repo(paragraphs, tmp_path_factory):
    """FineWeb-Edu at the pinned revision, made small: sample/10BT is 400 paragraphs in 3 files
    (000_00000.parquet ...), sample/100BT others; `main` holds the 10BT documents reversed."""
    repo, revision = lesson("fineweb")["REPOS"]["edu"]
    documents = paragraphs[:400]
    files = fineweb_files(
        "edu", {"10BT": (documents, [100, 180, 120]), "100BT": (paragraphs[400:500], [100])}
    )
    other = fineweb_files("edu", {"10BT": (documents[::-1], [400])})
    local = tmp_path_factory.mktemp("fineweb-edu")
    for path, data in files.items():
        (local / path).parent.mkdir(parents=True, exist_ok=True)
        (local / path).write_bytes(data)
    main = hashlib.sha1(b"another commit").hexdigest()
    return {
        "repo": repo,
        "revision": revision,
        "commits": {revision: files, main: other},
        "refs": {"main": main},
        "local": local / "sample" / "10BT",
        "documents": documents,
    }


def prepare(out, *args, env=None):
    result = run_python(SCRIPT, *args, "--out-dir", out, "--num-proc", 2, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def data_files_run(fineweb_repo, tmp_path_factory):
    """The reference run: --data-files on the sample's parquet files, llm.c shards."""
    out = tmp_path_factory.mktemp("data-files-run") / "out"
    env = {"HF_DATASETS_CACHE": str(out.parent / "cache")}
    result = prepare(
        out,
        "--data-files",
        fineweb_repo["local"] / "*.parquet",
        "--shard-size",
        SHARD_SIZE,
        env=env,
    )
    return out, result


def shard_files(folder, suffix=".bin"):
    """The shards in `folder`: its files of `suffix` but the tokenizer's token_bytes.npy and the
    val bytes sidecars (edu_fineweb_bytes_000000.bin)."""
    return sorted(
        p.name
        for p in folder.iterdir()
        if p.suffix == suffix and p.name != "token_bytes.npy" and "_bytes_" not in p.name
    )


def test_llmc_shards_are_llmc_bytes(fineweb_repo, data_files_run, gpt2_encoding, tmp_path):
    out, result = data_files_run
    expected = write_llmc_shards(
        fineweb_repo["documents"], gpt2_encoding, tmp_path, SHARD_SIZE, type="edu"
    )
    assert len(expected) >= 3
    assert shard_files(out) == sorted(p.name for p in expected)
    for path in expected:
        assert (out / path.name).read_bytes() == path.read_bytes(), path.name
        assert len(load_data_shard(out / path.name)) == llmc_check_shard(out / path.name)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["format"] == "llmc" and meta["dtype"] == "uint16"
    assert meta["shards"] == [
        {
            "file": p.name,
            "split": "val" if i == 0 else "train",
            "tokens": llmc_check_shard(p),
            "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
        }
        for i, p in enumerate(expected)
    ]
    assert "400 documents" in result.stdout


def test_npy_shards_are_build_nanogpts_bytes(fineweb_repo, gpt2_encoding, tmp_path):
    out = tmp_path / "out"
    prepare(
        out,
        "--data-files",
        fineweb_repo["local"] / "*.parquet",
        "--shard-size",
        SHARD_SIZE,
        "--format",
        "npy",
        env={"HF_DATASETS_CACHE": str(tmp_path / "cache")},
    )
    (tmp_path / "ref").mkdir()
    expected = write_npy_shards(
        fineweb_repo["documents"], gpt2_encoding, tmp_path / "ref", SHARD_SIZE
    )
    assert shard_files(out, ".npy") == sorted(p.name for p in expected)
    for path in expected:
        assert (out / path.name).read_bytes() == path.read_bytes(), path.name
    assert run_python(COMMON, "verify", out).returncode == 0


def test_a_rerun_writes_the_same_bytes(fineweb_repo, data_files_run, tmp_path):
    out, _ = data_files_run
    before = files_in(out)
    prepare(
        out,
        "--data-files",
        fineweb_repo["local"] / "*.parquet",
        "--shard-size",
        SHARD_SIZE,
        env={"HF_DATASETS_CACHE": str(tmp_path / "cache")},
    )
    assert files_in(out) == before


def test_hub_run_equals_data_files_run(fineweb_repo, data_files_run, tmp_path):
    repo = fineweb_repo
    with LocalHub(repo["repo"], dict(repo["commits"]), refs=repo["refs"]) as hub:
        env = hub.environment(tmp_path / "client")
        result = prepare(tmp_path / "out", "--shard-size", SHARD_SIZE, env=env)
        assert hub.unknown == []
        requests = [r for r in hub.requests if r[1].startswith(("/api/", "/datasets/"))]
        assert requests and all(repo["revision"] in path for _, path, _ in requests), requests
    assert f"{repo['repo']}@{repo['revision'][:12]}" in result.stdout
    reference, _ = data_files_run
    assert shard_files(tmp_path / "out") == shard_files(reference)
    for name in shard_files(reference):
        assert (tmp_path / "out" / name).read_bytes() == (reference / name).read_bytes()
    meta = json.loads((tmp_path / "out" / "meta.json").read_text())
    assert meta["source"] == {
        "repo": repo["repo"],
        "revision": repo["revision"],
        "config": "sample-10BT",
        "documents": 400,
    }


def test_sample_100bt_is_its_own_folder(fineweb_repo, tmp_path):
    repo = fineweb_repo
    with LocalHub(repo["repo"], dict(repo["commits"]), refs=repo["refs"]) as hub:
        env = hub.environment(tmp_path / "client")
        result = prepare(tmp_path / "out", "--sample", "100BT", "--shard-size", 1000, env=env)
        assert hub.unknown == []
    assert f"{repo['repo']}@{repo['revision'][:12]} (sample-100BT): 100 documents" in result.stdout


def test_verify_and_show_a_shard_folder(data_files_run):
    out, _ = data_files_run
    result = run_python(COMMON, "verify", out)
    assert result.returncode == 0, result.stderr
    assert "edu_fineweb_val_000000.bin" in result.stdout and f"{out}: OK" in result.stdout
    shown = run_python(COMMON, "show", out, "--split", "val", "--block-size", 4)
    assert shown.returncode == 0, shown.stderr
    assert "x = data[0:4] = [50256," in shown.stdout  # val starts with the first document's eot


@pytest.mark.parametrize(
    "damage, fragment",
    [
        pytest.param(
            lambda b: b[:-2], "has 11,022 bytes; its header says 5,000 tokens", id="truncated"
        ),
        pytest.param(
            lambda b: b[:1000] + b"\xff" + b[1001:],
            "does not match the sha256",
            id="a byte changed",
        ),
        pytest.param(lambda b: b"\x00" + b[1:], "starts with magic", id="bad magic"),
    ],
)
def test_verify_finds_a_damaged_shard(damage, fragment, data_files_run, tmp_path):
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(data_files_run[0], out)
    shard = out / "edu_fineweb_train_000001.bin"
    shard.write_bytes(damage(shard.read_bytes()))
    result = run_python(COMMON, "verify", out)
    assert result.returncode == 1
    assert fragment in result.stderr, result.stderr


@pytest.mark.parametrize(
    "args, fragments, code",
    [
        pytest.param(["--shard-size", "0"], ["--shard-size", "less than 1"], 2, id="shard size 0"),
        pytest.param(["--shard-size", "-5"], ["--shard-size", "less than 1"], 2, id="negative"),
        pytest.param(["--type", "nope"], ["--type", "invalid choice"], 2, id="unknown type"),
        pytest.param(["--data-files", "EMPTY"], ["only empty files"], 1, id="empty data files"),
    ],
)
def test_bad_input_is_one_line(args, fragments, code, tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    args = [str(tmp_path / "empty.jsonl") if a == "EMPTY" else a for a in args]
    result = run_python(SCRIPT, *args, "--out-dir", tmp_path / "out")
    if code == 1:
        assert_clean_failure(result, *fragments)
    else:
        assert result.returncode == 2 and "Traceback" not in result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        assert all(f in lines[0] for f in fragments), lines[0]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").glob("*.bin"))


def test_a_tokenizer_past_65536_ids_writes_llmcs_uint32_shards(fineweb_repo, tmp_path):
    """A tokenizer of 65,793 ids (every pair of bytes merged, and <|endoftext|>): llm.c's uint32
    variant (magic 20240801, version 7), as its llama-3 files, byte for byte."""
    from bpe import EOT, Tokenizer

    vocab = {b: bytes([b]) for b in range(256)}
    merges = [(bytes([a]), bytes([b])) for a in range(256) for b in range(256)]
    vocab.update({256 + i: a + b for i, (a, b) in enumerate(merges)})
    Tokenizer(vocab, merges, special_tokens=[EOT]).save(tmp_path / "big.json")
    out = tmp_path / "out"
    result = prepare(
        out,
        "--data-files",
        fineweb_repo["local"] / "000_00000.parquet",
        "--shard-size",
        5000,
        "--tokenizer",
        tmp_path / "big.json",
        env={"HF_DATASETS_CACHE": str(tmp_path / "cache")},
    )
    assert "llm.c's uint32 variant" in result.stderr
    encoding = Tokenizer.load(tmp_path / "big.json").to_tiktoken()
    (tmp_path / "ref").mkdir()
    expected = write_llmc_shards(
        fineweb_repo["documents"][:100], encoding, tmp_path / "ref", 5000, "edu", "llama-3"
    )
    assert len(expected) >= 2 and shard_files(out) == sorted(p.name for p in expected)
    for path in expected:
        assert (out / path.name).read_bytes() == path.read_bytes(), path.name
    assert run_python(COMMON, "verify", out).returncode == 0


def test_a_rerun_with_bigger_shards_replaces_the_whole_set(fineweb_repo, data_files_run, tmp_path):
    """The shard set commits as one: shards of the earlier run that this one does not write go."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(data_files_run[0], out)
    assert len(shard_files(out)) == 4
    result = prepare(
        out,
        "--data-files",
        fineweb_repo["local"] / "*.parquet",
        "--shard-size",
        12_000,
        env={"HF_DATASETS_CACHE": str(tmp_path / "cache")},
    )
    assert shard_files(out) == ["edu_fineweb_train_000001.bin", "edu_fineweb_val_000000.bin"]
    assert "removed" in result.stdout and "edu_fineweb_train_000003.bin" in result.stdout
    assert run_python(COMMON, "verify", out).returncode == 0


# ---------------------------------------------------------------------------------------------
# data/fineweb/prepare_datatrove.py: the same shards from datatrove's tasks

DATATROVE_SCRIPT = REPO / "data" / "fineweb" / "prepare_datatrove.py"


@pytest.mark.parametrize(
    "shard_format, shard_size, tasks",
    [
        pytest.param("llmc", SHARD_SIZE, 3, id="llmc"),
        pytest.param("npy", SHARD_SIZE, 3, id="npy"),
        pytest.param("llmc", 10_000, 3, id="two shards, three tasks"),
        pytest.param("llmc", 1_000, 2, id="twenty shards, two tasks"),
    ],
)
def test_datatrove_writes_the_same_shards(
    shard_format, shard_size, tasks, fineweb_repo, gpt2_encoding, tmp_path
):
    """The write tasks share out the shards (the tasks' slices of the input cross the files'
    bounds); the commit task links them in (the work directory is in out: no copy)."""
    pytest.importorskip("datatrove", reason="needs datatrove: pip install -e '.[scale]'")
    out = tmp_path / "out"
    result = run_python(
        DATATROVE_SCRIPT,
        "--data-files",
        fineweb_repo["local"] / "*.parquet",
        "--shard-size",
        shard_size,
        "--format",
        shard_format,
        "--tasks",
        tasks,
        "--workers",
        2,
        "--out-dir",
        out,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (tmp_path / "ref").mkdir()
    documents = fineweb_repo["documents"]
    if shard_format == "llmc":
        expected = write_llmc_shards(documents, gpt2_encoding, tmp_path / "ref", shard_size, "edu")
    else:
        expected = write_npy_shards(documents, gpt2_encoding, tmp_path / "ref", shard_size)
    suffix = ".bin" if shard_format == "llmc" else ".npy"
    assert shard_files(out, suffix) == sorted(p.name for p in expected)
    for path in expected:
        assert (out / path.name).read_bytes() == path.read_bytes(), path.name
        assert (out / path.name).stat().st_nlink == 2, path.name  # and the work directory's part
    assert run_python(COMMON, "verify", out).returncode == 0


def test_datatrove_from_the_hub_equals_data_files_run(fineweb_repo, data_files_run, tmp_path):
    """The tasks read the pinned revision's sample/10BT files through HfFileSystem."""
    pytest.importorskip("datatrove", reason="needs datatrove: pip install -e '.[scale]'")
    repo = fineweb_repo
    with LocalHub(repo["repo"], dict(repo["commits"]), refs=repo["refs"]) as hub:
        env = hub.environment(tmp_path / "client")
        result = run_python(
            DATATROVE_SCRIPT,
            "--shard-size",
            SHARD_SIZE,
            "--tasks",
            2,
            "--workers",
            2,
            "--out-dir",
            tmp_path / "out",
            env=env,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert hub.unknown == []
        requests = [r for r in hub.requests if r[1].startswith(("/api/", "/datasets/"))]
        assert requests and all(repo["revision"] in path for _, path, _ in requests), requests
    reference, _ = data_files_run
    assert shard_files(tmp_path / "out") == shard_files(reference)
    for name in shard_files(reference):
        assert (tmp_path / "out" / name).read_bytes() == (reference / name).read_bytes()
    meta = json.loads((tmp_path / "out" / "meta.json").read_text())
    assert meta["shards"] == json.loads((reference / "meta.json").read_text())["shards"]
    assert meta["source"]["revision"] == repo["revision"] and meta["source"]["documents"] == 400


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["slurm", pytest.param("ray", marks=pytest.mark.ray)])
def test_datatrove_on_a_cluster_writes_the_same_shards(
    executor, fineweb_repo, data_files_run, tmp_path
):
    """Slurm: datatrove's real launch scripts run by the stand-in sbatch of tests/stand_ins/slurm/;
    Ray: a local Ray cluster, when Ray is installed."""
    pytest.importorskip("datatrove", reason="needs datatrove: pip install -e '.[scale]'")
    env, options = {}, ["--tasks", 2]
    if executor == "slurm":
        env = {
            "PATH": f"{SLURM}{os.pathsep}{Path(sys.executable).parent}"
            f"{os.pathsep}{os.environ['PATH']}",
            "FAKE_SLURM_STATE": str(tmp_path / "slurm"),
        }
        options += ["--slurm-partition", "test"]
    else:
        pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")
        options += ["--workers", 2]
    out = tmp_path / "out"
    result = run_python(
        DATATROVE_SCRIPT,
        "--data-files",
        fineweb_repo["local"] / "*.parquet",
        "--shard-size",
        SHARD_SIZE,
        "--executor",
        executor,
        *options,
        "--out-dir",
        out,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    reference, _ = data_files_run
    assert shard_files(out) == shard_files(reference)
    for name in shard_files(reference):
        assert (out / name).read_bytes() == (reference / name).read_bytes()


# ---------------------------------------------------------------------------------------------
# --shuffle SEED: the same documents in the order of np.random.default_rng(SEED).permutation(n)


def documents_in(folder):
    """The documents of a folder's llm.c shards, in order: the stream (shard 0 first) cut before
    each end of text, each document its ids after it (llm.c's rule: [EOT] + ids)."""
    names = sorted(shard_files(folder), key=lambda name: name[-10:])  # by index: val_000000 first
    stream = np.concatenate([load_data_shard(folder / name) for name in names])
    starts = np.flatnonzero(stream == 50256)
    assert starts[0] == 0
    return [tuple(d[1:].tolist()) for d in np.split(stream, starts[1:])]


@pytest.fixture(scope="module")
def shuffle_run(fineweb_repo, tmp_path_factory):
    """prepare.py --shuffle 7 on the reference run's files."""
    out = tmp_path_factory.mktemp("shuffle-run") / "out"
    result = prepare(
        out,
        "--data-files",
        fineweb_repo["local"] / "*.parquet",
        "--shard-size",
        SHARD_SIZE,
        "--shuffle",
        7,
        env={"HF_DATASETS_CACHE": str(out.parent / "cache")},
    )
    return out, result


def test_shuffle_puts_the_documents_in_the_permutations_order(
    fineweb_repo, data_files_run, shuffle_run, gpt2_encoding, tmp_path
):
    """The same multiset of documents, in the order of permutation(400), cut by llm.c's rule:
    the bytes llm.c's script writes from the documents in that order (val: shard 0 of it)."""
    out, result = shuffle_run
    unshuffled, documents = documents_in(data_files_run[0]), documents_in(out)
    permutation = np.random.default_rng(7).permutation(400)
    assert documents == [unshuffled[i] for i in permutation]
    assert sorted(documents) == sorted(unshuffled) and documents != unshuffled
    texts = [fineweb_repo["documents"][i] for i in permutation]
    expected = write_llmc_shards(texts, gpt2_encoding, tmp_path, SHARD_SIZE, type="edu")
    assert shard_files(out) == sorted(p.name for p in expected)
    for path in expected:
        assert (out / path.name).read_bytes() == path.read_bytes(), path.name
    meta = json.loads((out / "meta.json").read_text())
    rules = lesson("fineweb")
    assert meta["split"] == {
        "rule": rules["SHUFFLED_RULE"],
        "shard_size": SHARD_SIZE,
        "shuffle_seed": 7,
        "numpy": np.__version__,
    }
    assert "permutation(n)" in meta["split"]["rule"] and "400 documents" in result.stdout
    reference = json.loads((data_files_run[0] / "meta.json").read_text())
    assert reference["split"] == {"rule": rules["SPLIT_RULE"], "shard_size": SHARD_SIZE}
    assert run_python(COMMON, "verify", out).returncode == 0


def test_a_shuffled_rerun_writes_the_same_bytes(fineweb_repo, shuffle_run, tmp_path):
    import shutil

    out = tmp_path / "out"
    shutil.copytree(shuffle_run[0], out)
    before = files_in(out)
    prepare(
        out,
        "--data-files",
        fineweb_repo["local"] / "*.parquet",
        "--shard-size",
        SHARD_SIZE,
        "--shuffle",
        7,
        env={"HF_DATASETS_CACHE": str(tmp_path / "cache")},
    )
    assert files_in(out) == before


def test_another_seed_gives_another_order(fineweb_repo, data_files_run, shuffle_run, tmp_path):
    out = tmp_path / "out"
    prepare(
        out,
        "--data-files",
        fineweb_repo["local"] / "*.parquet",
        "--shard-size",
        SHARD_SIZE,
        "--shuffle",
        8,
        env={"HF_DATASETS_CACHE": str(tmp_path / "cache")},
    )
    unshuffled, documents = documents_in(data_files_run[0]), documents_in(out)
    assert documents == [unshuffled[i] for i in np.random.default_rng(8).permutation(400)]
    assert documents != documents_in(shuffle_run[0])
    assert json.loads((out / "meta.json").read_text())["split"]["shuffle_seed"] == 8


def test_datatrove_shuffle_writes_the_same_shards(
    fineweb_repo, data_files_run, shuffle_run, tmp_path
):
    """prepare_datatrove.py --shuffle 7: the shards and meta.json's records of prepare.py's; then
    the same folder without --shuffle: the unshuffled shards (the runs share no plan)."""
    pytest.importorskip("datatrove", reason="needs datatrove: pip install -e '.[scale]'")
    out = tmp_path / "out"
    for seed, reference in ((["--shuffle", 7], shuffle_run[0]), ([], data_files_run[0])):
        result = run_python(
            DATATROVE_SCRIPT,
            "--data-files",
            fineweb_repo["local"] / "*.parquet",
            "--shard-size",
            SHARD_SIZE,
            *seed,
            "--tasks",
            3,
            "--workers",
            2,
            "--out-dir",
            out,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert shard_files(out) == shard_files(reference)
        for name in shard_files(reference):
            assert (out / name).read_bytes() == (reference / name).read_bytes(), (seed, name)
        meta = json.loads((out / "meta.json").read_text())
        expected = json.loads((reference / "meta.json").read_text())
        assert [meta[k] for k in ("split", "splits", "shards")] == [
            expected[k] for k in ("split", "splits", "shards")
        ]
    assert len(list((out / ".datatrove-work").glob("*/split-*"))) == 2


def test_datatrove_rerun_with_other_shards_in_the_same_folder(
    fineweb_repo, gpt2_encoding, tmp_path
):
    """Another --shard-size or --format is another split work directory: the write tasks of
    the first run are not taken for this one's."""
    pytest.importorskip("datatrove", reason="needs datatrove: pip install -e '.[scale]'")
    out, documents = tmp_path / "out", fineweb_repo["documents"]
    for shard_size, shard_format in ((SHARD_SIZE, "llmc"), (12_000, "llmc"), (12_000, "npy")):
        result = run_python(
            DATATROVE_SCRIPT,
            "--data-files",
            fineweb_repo["local"] / "*.parquet",
            "--shard-size",
            shard_size,
            "--format",
            shard_format,
            "--tasks",
            2,
            "--out-dir",
            out,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        ref = tmp_path / f"ref-{shard_size}-{shard_format}"
        ref.mkdir()
        write = write_llmc_shards if shard_format == "llmc" else write_npy_shards
        options = {"type": "edu"} if shard_format == "llmc" else {}
        expected = write(documents, gpt2_encoding, ref, shard_size, **options)
        assert shard_files(out, expected[0].suffix) == sorted(p.name for p in expected)
        for path in expected:
            assert (out / path.name).read_bytes() == path.read_bytes(), path.name
