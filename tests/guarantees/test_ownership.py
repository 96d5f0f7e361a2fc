"""Run for real: "Own by the record, trust by content".

Five causes, one section each, every item a test that drives the real commands in fresh
processes, as a user reproduced it by hand:

1. a file-name pattern stood in for ownership: a run deleted files of other trainers and of the
   user because their names looked like shards; `verify` let files a trainer reads go unnoticed
   because their names did not; a shard set without a train shard was written;
2. reuse trusted names, not contents: a parquet file damaged on the way from the hub, or in the
   hub's cache, was read; an output shard changed in place (the datatrove engine hard-links it
   to its work directory's part) was linked again;
3. the commit and its paths: inodes running out, a path near PATH_MAX, a long file name, a folder
   moved, copied, or named with spaces and non-ASCII characters;
4. text read the way nanoGPT reads it: CRLF, CR-only and mixed newlines;
5. bounded: absurd numbers for `show`, a 10 MB string in a tokenizer file.

A failing run is one `error:` line (exit 1, no traceback) naming the file, and leaves every
file as it was; a run that succeeds leaves a folder that `verify` passes.
"""

import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from conftest import (
    CHAR,
    COMMON,
    OWT,
    REFERENCES,
    REPO,
    TRAIN_TOKENIZER,
    assert_ok,
    assert_one_line,
    mounted_tmpfs,
    run,
    tree,
    write_jsonl,
)

pytestmark = pytest.mark.usefixtures("downloads")  # Tiny Shakespeare, GPT-2's files

GPT2 = REPO / "data" / "shakespeare" / "prepare.py"
FINEWEB = REPO / "data" / "fineweb" / "prepare.py"
FINEWEB_DATATROVE = REPO / "data" / "fineweb" / "prepare_datatrove.py"
CHAR_ORACLE = REFERENCES / "nanogpt_shakespeare_char.py"
GPT2_ORACLE = REFERENCES / "nanogpt_shakespeare.py"
EOT = "<|endoftext|>"
SHARD_SIZE = 3_000  # 300 paragraphs of Tiny Shakespeare are 12,695 tokens: 5 shards

needs_datatrove = pytest.mark.skipif(
    __import__("importlib").util.find_spec("datatrove") is None, reason="needs datatrove"
)


def assert_verifies(folder):
    result = run(COMMON, "verify", folder)
    assert_ok(result)
    assert result.stdout.rstrip("\n").endswith(": OK"), result.stdout[-1000:]
    assert "error" not in result.stderr, result.stderr


def sha256(data):
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------------
# inputs and prepared folders


@pytest.fixture(scope="module")
def docs(paragraphs, tmp_path_factory):
    """300 paragraphs of Tiny Shakespeare as a .jsonl file (12,695 GPT-2 tokens in llm.c's rule)."""
    return write_jsonl(tmp_path_factory.mktemp("docs") / "docs.jsonl", paragraphs[:300])


def fineweb(docs, out, *args, shard_size=SHARD_SIZE, cwd=None, env=None):
    """data/fineweb/prepare.py on `docs` into `out`: its Run."""
    command = [FINEWEB, "--data-files", docs, "--shard-size", shard_size, "--num-proc", 1]
    return run(*command, "--out-dir", out, *args, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def shard_sets(docs, tmp_path_factory):
    """FineWeb shard folders of `docs` ("llmc" and "npy": 5 shards each), never changed."""
    base = tmp_path_factory.mktemp("shard-sets")
    env = {"HF_DATASETS_CACHE": str(base / "hf-cache")}
    folders = {}
    for shard_format in ("llmc", "npy"):
        folders[shard_format] = base / shard_format
        assert_ok(fineweb(docs, folders[shard_format], "--format", shard_format, env=env))
    return folders


def hf_cache(tmp_path):
    return {"HF_DATASETS_CACHE": str(tmp_path / "hf-cache")}


def llmc_shard(tokens):
    """An llm.c shard (as modded-nanogpt downloads them): its 1,024-byte header, uint16 tokens."""
    header = np.zeros(256, dtype="<i4")
    header[:3] = 20240520, 1, len(tokens)
    return header.tobytes() + np.asarray(tokens, dtype="<u2").tobytes()


def npy_bytes(array):
    path = Path(tempfile.mkdtemp()) / "a.npy"
    np.save(path, array)
    data = path.read_bytes()
    shutil.rmtree(path.parent)
    return data


MODDED_SHARD = llmc_shard([50256, 464, 2068, 7586, 21831])  # "<|endoftext|>The quick brown fox"
NOTES_NPY = npy_bytes(np.arange(10, dtype=np.uint16))  # the user's, named like a val shard
NOTES = b"my notes about this run\n"
NANOGPT_BIN = np.arange(100, dtype=np.uint16).tobytes()


# =============================================================================================
# 1. A file-name pattern stood in for ownership


OWNERSHIP_CASES = [
    pytest.param(
        {"fineweb_train_000001.bin": MODDED_SHARD, "my_notes_val_000001.npy": NOTES_NPY},
        [],
        "fineweb_train_000001.bin",
        id="modded-nanogpt-shard-and-notes",
    ),
    pytest.param({"train.bin": NANOGPT_BIN}, [], "train.bin", id="nanogpt-train-bin"),
    pytest.param(
        {"edufineweb_val_000000.npy": NOTES_NPY},
        ["--format", "npy"],
        "edufineweb_val_000000.npy",
        id="npy-output-name-taken",
    ),
    pytest.param(
        {"my_notes_val_000001.npy": NOTES_NPY},
        ["--format", "npy"],
        "my_notes_val_000001.npy",
        id="npy-notes-build-nanogpt-reads",
    ),
    pytest.param({"my_notes_val_000001.npy": NOTES_NPY}, [], None, id="notes-named-like-a-shard"),
    pytest.param({"notes.txt": NOTES}, [], None, id="notes-txt"),
]


@pytest.mark.parametrize("files, args, refused", OWNERSHIP_CASES)
def test_a_run_never_touches_a_file_no_record_lists(docs, tmp_path, files, args, refused):
    """A FineWeb run into a folder holding modded-nanogpt's fineweb_train_000001.bin and the
    user's my_notes_val_000001.npy deleted both ("left by an earlier run"). A file no meta.json
    lists is never replaced or removed: one a trainer would read with this run's outputs, or
    one an output would replace, is refused in one line naming it, nothing changed; any other
    stays, and the folder verifies."""
    out = tmp_path / "out"
    out.mkdir()
    for name, data in files.items():
        (out / name).write_bytes(data)
    before = tree(out)
    result = fineweb(docs, out, *args, env=hf_cache(tmp_path))
    if refused is not None:
        assert_one_line(result, out / refused, alone=False)
        assert tree(out) == before  # every file byte for byte, nothing added
        return
    assert_ok(result)
    for name, data in files.items():
        assert (out / name).read_bytes() == data, name
    assert "removed" not in result.stdout, result.stdout
    assert_verifies(out)


@pytest.mark.parametrize("script", [CHAR, GPT2], ids=["char", "gpt2"])
@pytest.mark.parametrize("name", ["meta.json", "train.bin"])
def test_a_lesson_refuses_its_own_output_as_its_input(tmp_path, script, name):
    """--input out/meta.json into out was prepared, and the folder then failed to verify (its
    source replaced by the run): refused in one line naming it, the folder as it was."""
    out = tmp_path / "out"
    text = tmp_path / "in.txt"
    text.write_text("To be, or not to be, that is the question.\n" * 40)
    assert_ok(run(CHAR, "--input", text, "--out-dir", out))
    before = tree(out)
    result = run(script, "--input", out / name, "--out-dir", out)
    assert_one_line(result, f"{out / name} is the folder's own {name}", alone=False)
    assert tree(out) == before
    assert_verifies(out)


def test_a_rerun_replaces_what_its_record_lists_and_nothing_else(shard_sets, docs, tmp_path):
    """A rerun into a folder it made replaces its own files, removes the stale ones its meta.json
    listed (5 shards rerun at a larger --shard-size make 3: the 2 extra go), leaves the rest."""
    out, clean = tmp_path / "out", tmp_path / "clean"
    shutil.copytree(shard_sets["llmc"], out)  # what a run with the default --shard-size made
    shards = ["edu_fineweb_val_000000.bin"] + [
        f"edu_fineweb_train_{i:06d}.bin" for i in range(1, 5)
    ]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*shards, "edu_fineweb_bytes_000000.bin", "meta.json", "token_bytes.npy"]
    )
    mine = {"notes.txt": NOTES, "my_notes_val_000001.npy": NOTES_NPY}
    for name, data in mine.items():
        (out / name).write_bytes(data)
    env = hf_cache(tmp_path)
    result = fineweb(docs, out, shard_size=5_000, env=env)
    assert_ok(result)
    for stale in shards[3:]:
        assert f"removed {out / stale}" in result.stdout, result.stdout
    assert_ok(fineweb(docs, clean, shard_size=5_000, env=env))
    expected = {p.name: p.read_bytes() for p in clean.iterdir()}
    assert sorted(expected) == sorted(
        [*shards[:3], "edu_fineweb_bytes_000000.bin", "meta.json", "token_bytes.npy"]
    )
    assert {p.name: p.read_bytes() for p in out.iterdir()} == {**expected, **mine}
    assert_verifies(out)


def copy_of_shard(name):
    return lambda folder: shutil.copyfile(folder / "edu_fineweb_train_000002.bin", folder / name)


def tokens_as_train_bin(folder):
    ids = np.fromfile(folder / "edu_fineweb_train_000002.bin", dtype="<u2", offset=1024)
    ids.tofile(folder / "train.bin")


def val_notes(folder):
    (folder / "val_notes.txt").write_bytes(NOTES)


def notes(folder):
    (folder / "notes.txt").write_bytes(NOTES)


def unrecorded(key, name):
    """meta.json's record of a bits-per-byte file gone, and the file's bytes made wrong."""

    def plant(folder):
        meta = json.loads((folder / "meta.json").read_text())
        del meta[key]
        (folder / "meta.json").write_text(json.dumps(meta))
        (folder / name).write_bytes(bytes((folder / name).stat().st_size))

    return plant


@pytest.mark.parametrize(
    "shard_format, plant, names",
    [
        pytest.param(
            "llmc",
            copy_of_shard("edu_fineweb_train_000002 (1).bin"),
            ["edu_fineweb_train_000002 (1).bin"],
            id="copy-named-by-a-file-manager",
        ),
        pytest.param(
            "llmc",
            copy_of_shard("edu_fineweb_train_000002.bak.bin"),
            ["edu_fineweb_train_000002.bak.bin"],
            id="backup-copy",
        ),
        pytest.param(
            "llmc",
            lambda f: [
                copy_of_shard(n)(f)
                for n in ("edu_fineweb_train_000002 (1).bin", "edu_fineweb_train_000002.bak.bin")
            ],
            ["edu_fineweb_train_000002 (1).bin", "edu_fineweb_train_000002.bak.bin"],
            id="both-copies",
        ),
        pytest.param(
            "llmc", tokens_as_train_bin, ["train.bin"], id="nanogpt-train-bin-in-a-shard-folder"
        ),
        pytest.param("npy", val_notes, ["val_notes.txt"], id="npy-folder-val-notes"),
        pytest.param("llmc", notes, None, id="notes-no-trainer-reads"),
        pytest.param(
            "llmc",
            unrecorded("token_bytes", "token_bytes.npy"),
            ["token_bytes.npy"],
            id="token-bytes-no-record-lists",
        ),
        pytest.param(
            "npy",
            unrecorded("val_bytes", "edufineweb_bytes_000000.npy"),
            ["edufineweb_bytes_000000.npy"],
            id="val-bytes-sidecar-no-record-lists",
        ),
        pytest.param(
            "llmc",
            copy_of_shard(".edu_fineweb_val_000000.bin"),
            None,
            id="hidden-copy-no-trainer-reads",
        ),
    ],
)
def test_verify_flags_unlisted_files_a_trainer_reads(
    shard_sets, tmp_path, shard_format, plant, names
):
    """llm.c and modded-nanogpt read every `*_train_*.bin` of the folder, build-nanogpt every
    name holding "train" or "val": a file meta.json does not list that they read is one line."""
    folder = tmp_path / "shards"
    shutil.copytree(shard_sets[shard_format], folder)
    plant(folder)
    result = run(COMMON, "verify", folder)
    if names is None:
        assert_ok(result)
        assert result.stdout.rstrip("\n").endswith(": OK"), result.stdout
        return
    assert_one_line(result, folder, *names)


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(FINEWEB, id="fineweb"),
        pytest.param(FINEWEB_DATATROVE, id="fineweb-datatrove", marks=needs_datatrove),
    ],
)
def test_a_shard_set_without_a_train_shard_is_refused(shard_sets, docs, tmp_path, script):
    """--shard-size past the corpus: every token in shard 0, which is val, and no train shard
    for llm.c or modded-nanogpt to read. One line saying to choose a smaller --shard-size, no
    "wrote" line before it; the folder's previous set as it was."""
    out = tmp_path / "out"
    shutil.copytree(shard_sets["llmc"], out)
    before = tree(tmp_path)
    command = [script, "--data-files", docs, "--shard-size", 10**6, "--out-dir", out]
    if script == FINEWEB_DATATROVE:
        command += ["--tasks", 2, "--workers", 2, "--work-dir", tmp_path / "work"]
    else:
        command += ["--num-proc", 1]
    result = run(*command, env={"HF_DATASETS_CACHE": str(tmp_path / "work" / "hf")})
    assert_one_line(result, "--shard-size", "no train shard", alone=False)
    assert "wrote" not in result.stdout  # refused before a shard is written
    after = {
        p: data for p, data in tree(tmp_path).items() if not p.is_relative_to(tmp_path / "work")
    }
    assert after == before


# =============================================================================================
# 2. Reuse trusted names, not contents


def hub_parquet(owt):
    """(path in the repo, bytes, sha256) of the pinned commit's first parquet file."""
    path = sorted(owt.commits[owt.revision])[0]
    data = owt.commits[owt.revision][path]
    return path, data, sha256(data)


def damaged_in_one_byte(data, text=b"Citizen"):
    """The same bytes but one, inside the text of a document (a parquet reader still reads it)."""
    at = data.index(text)
    return data[:at] + b"K" + data[at + 1 :]


def owt_run(owt, out, env=None):
    return run(OWT, "--out-dir", out, "--num-proc", 1, env={**owt.env, **(env or {})})


def test_a_parquet_file_damaged_on_the_way_is_refused_and_not_reused(openwebtext_hub, tmp_path):
    """The CDN serves a parquet file with one byte changed (same size), the hub still publishes
    its true sha256: one line naming the file, no output. A rerun against a healthy hub, with the
    same caches, fetches the file again: the bytes of a clean run."""
    owt = openwebtext_hub
    path, data, digest = hub_parquet(owt)
    owt.hub.blobs[digest] = damaged_in_one_byte(data)
    out = tmp_path / "out"
    result = owt_run(owt, out)
    assert_one_line(result, path, "sha256", alone=False)
    assert not out.exists()
    owt.hub.blobs[digest] = data
    assert_ok(owt_run(owt, out))
    clean = tmp_path / "clean"
    assert_ok(owt_run(owt, clean, env=owt.hub.environment(tmp_path / "clean-client")))
    assert tree(out) == {out / p.relative_to(clean): data for p, data in tree(clean).items()}
    assert owt.hub.unknown == []


def cached_copies(roots, digest):
    """Every regular file under `roots` holding the bytes of sha256 `digest`."""
    return [
        path
        for root in roots
        for path in Path(root).rglob("*")
        if path.is_file() and not path.is_symlink() and sha256(path.read_bytes()) == digest
    ]


def test_a_damaged_parquet_file_in_the_hub_cache_is_fetched_again(openwebtext_hub, tmp_path):
    """After a good run, the footer of the cached copy of a parquet file is damaged: the next
    run, whose datasets cache must read the file again, fetches it again and writes the same
    bytes; no damaged copy stays in the cache."""
    owt = openwebtext_hub
    _, data, digest = hub_parquet(owt)
    out = tmp_path / "out"
    assert_ok(owt_run(owt, out))
    first = tree(out)
    roots = [owt.env["HF_HOME"], owt.env["HF_DATASETS_CACHE"]]
    copies = cached_copies(roots, digest)
    assert copies, f"no cached copy of the file under {roots}"
    for copy in copies:
        copy.write_bytes(data[:-4] + b"XXXX")  # parquet's magic, "PAR1", ends the footer
    result = owt_run(owt, out, env={"HF_DATASETS_CACHE": str(tmp_path / "datasets-again")})
    assert_ok(result)
    assert tree(out) == first
    for copy in copies:
        assert not copy.exists() or copy.read_bytes() == data, copy


@needs_datatrove
def test_a_datatrove_shard_changed_in_place_is_made_again(docs, tmp_path):
    """The datatrove engine hard-links each output shard to its work directory's part: one byte
    of an output changed in place (open r+b, write) changed the part, which the rerun linked
    again as it was. Now the rerun makes it again: the folder verifies, the first run's bytes."""
    out = tmp_path / "out"
    command = [FINEWEB_DATATROVE, "--data-files", docs, "--shard-size", SHARD_SIZE, "--tasks", 2]
    command += ["--workers", 2, "--out-dir", out, "--work-dir", tmp_path / "work"]
    assert_ok(run(*command))
    first = tree(out)
    with open(out / "edu_fineweb_train_000002.bin", "r+b") as shard:
        shard.seek(2_000)
        byte = shard.read(1)
        shard.seek(2_000)
        shard.write(bytes([byte[0] ^ 0xFF]))
    assert tree(out) != first
    assert_ok(run(*command))
    assert_verifies(out)
    assert tree(out) == first


# =============================================================================================
# 3. The commit and paths


@pytest.fixture
def small_text(tmp_path):
    path = tmp_path / "small.txt"
    path.write_text("First Citizen:\nBefore we proceed any further, hear me speak.\n" * 200)
    return path


def test_inodes_running_out_leave_nothing_behind(tmp_path, small_text):
    """A tmpfs of N inodes, for every N from "the output folder cannot be made" to "enough":
    each failing run is one line, leaves no .prepare.*.tmp, and removes the folder it created
    (it holds nothing); N = 4 lets the staging folder be made, but not its marker file."""
    outcomes = {}
    for inodes in range(2, 14):  # enough: the 8 outputs, the folder, the staging folder, ...
        mount = tmp_path / f"inodes-{inodes}"
        with mounted_tmpfs(mount, f"size=1m,nr_inodes={inodes}"):
            result = run(CHAR, "--input", small_text, "--out-dir", mount / "out")
            left = sorted(str(p.relative_to(mount)) for p in mount.rglob("*"))
        outcomes[inodes] = result.returncode
        if result.returncode == 0:
            assert result.left == []
            continue
        line = assert_one_line(result, mount / "out")
        assert left == [], f"nr_inodes={inodes}: {line}; left {left}"
    assert 1 in outcomes.values() and 0 in outcomes.values(), outcomes


def test_inodes_running_out_in_a_rerun_keep_the_previous_set(tmp_path, small_text):
    """A rerun over a complete set, on a tmpfs of a few inodes more than that set holds: each
    rerun that fails is one line saying truthfully what it left, and it left the previous set
    whole (verify passes), with nothing beside it."""
    other = tmp_path / "other.txt"
    other.write_text(small_text.read_text()[:5_000])
    outcomes = {}
    for inodes in range(12, 20):
        mount = tmp_path / f"inodes-{inodes}"
        out = mount / "out"
        with mounted_tmpfs(mount, f"size=1m,nr_inodes={inodes}"):
            assert_ok(run(CHAR, "--input", small_text, "--out-dir", out))
            first = tree(out)
            result = run(CHAR, "--input", other, "--out-dir", out)
            after = tree(out)
            verified = run(COMMON, "verify", out)
        outcomes[inodes] = result.returncode
        if result.returncode == 0:
            assert result.left == []
            continue
        line = assert_one_line(result, out)
        assert after == first, f"nr_inodes={inodes}: {line}"
        assert verified.returncode == 0, verified.stderr
        assert "nothing was replaced" in line and "incomplete" not in line, (
            f"nr_inodes={inodes}: {line}"
        )
    assert 1 in outcomes.values() and 0 in outcomes.values(), outcomes


def long_path(base, length):
    """A path of `length` characters under `base`, made of folder names of at most 250."""
    path = str(base)
    while len(path) < length:
        room = length - len(path) - 1
        path += "/" + "d" * min(250, max(room, 1))
    assert len(path) == length
    return Path(path)


def test_an_out_dir_of_4070_characters_is_one_line_and_leaves_no_folder(tmp_path, small_text):
    """PATH_MAX is 4,096: the folder can be made, what the run writes inside it cannot. One line;
    no folder the run created is left behind."""
    base = tmp_path / "base"
    base.mkdir()
    out = long_path(base, 4070)
    result = run(CHAR, "--input", small_text, "--out-dir", out)
    assert_one_line(result)
    assert list(base.iterdir()) == []


def test_train_tokenizer_writes_a_file_of_240_characters(tmp_path, small_text):
    """--out <240-character name>.json: its temporary name must fit in 255 bytes too."""
    name = "t" * 235 + ".json"
    assert len(name) == 240
    args = ["--input", small_text, "--vocab-size", 300]
    assert_ok(run(TRAIN_TOKENIZER, *args, "--out", tmp_path / name))
    assert_ok(run(TRAIN_TOKENIZER, *args, "--out", tmp_path / "short.json"))
    assert (tmp_path / name).read_bytes() == (tmp_path / "short.json").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, "short.json", "small.txt"])


def char_lesson(folder):
    return [CHAR, "--input", "small.txt", "--out-dir", folder]


def gpt2_lesson(folder):
    return [GPT2, "--input", "small.txt", "--out-dir", folder]


def trained_tokenizer_lesson(folder):
    if not (folder / "tok.json").exists():  # trained into the folder, as a user does first
        command = [TRAIN_TOKENIZER, "--input", "small.txt", "--vocab-size", 300]
        assert_ok(run(*command, "--special-tokens", EOT, "--out", "tok.json", cwd=folder))
    return [GPT2, "--input", "small.txt", "--tokenizer", "tok.json", "--out-dir", folder]


def test_a_rerun_leaves_the_users_tokenizer_in_the_folder(shakespeare, tmp_path):
    """A tokenizer the user trained into the folder and passed as --tokenizer is read where it
    is and stays theirs: a rerun with GPT-2's removed it ("left by an earlier run")."""
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "small.txt").write_text(shakespeare[:30_000], encoding="utf-8")
    lesson = trained_tokenizer_lesson(folder)
    trained = (folder / "tok.json").read_bytes()
    assert_ok(run(*lesson, cwd=folder))
    assert_verifies(folder)
    result = run(*gpt2_lesson(folder), cwd=folder)
    assert_ok(result)
    assert "tok.json" not in result.stdout, result.stdout
    assert (folder / "tok.json").read_bytes() == trained
    assert_verifies(folder)


def shard_lesson(folder):
    return [
        FINEWEB,
        "--data-files",
        "docs.jsonl",
        "--shard-size",
        SHARD_SIZE,
        "--num-proc",
        1,
        "--out-dir",
        folder,
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    "lesson",
    [
        pytest.param(char_lesson, id="shakespeare_char"),
        pytest.param(gpt2_lesson, id="shakespeare-gpt2"),
        pytest.param(trained_tokenizer_lesson, id="shakespeare-tokenizer-in-the-folder"),
        pytest.param(shard_lesson, id="fineweb-shards"),
    ],
)
def test_a_folder_moved_or_copied_verifies(shakespeare, docs, tmp_path, lesson):
    """A folder prepared under a path with spaces and non-ASCII characters, moved with `mv` and
    copied with `cp -r`, verifies at both places; a rerun in the moved folder writes the bytes
    of a clean run. The inputs sit in the folder, named relative to it."""
    base = tmp_path / "my data ü é"
    folders = {name: base / name for name in ("run one ñ", "moved ö", "copy 字", "clean ß")}
    for folder in (folders["run one ñ"], folders["clean ß"]):
        folder.mkdir(parents=True)
        (folder / "small.txt").write_text(shakespeare[:30_000], encoding="utf-8")
        shutil.copyfile(docs, folder / "docs.jsonl")
    env = hf_cache(tmp_path)
    first = folders["run one ñ"]
    assert_ok(run(*lesson(first), cwd=first, env=env))
    subprocess.run(["mv", first, folders["moved ö"]], check=True)
    subprocess.run(["cp", "-r", folders["moved ö"], folders["copy 字"]], check=True)
    for name in ("moved ö", "copy 字"):
        assert_verifies(folders[name])
    moved, clean = folders["moved ö"], folders["clean ß"]
    assert_ok(run(*lesson(moved), cwd=moved, env=env))
    assert_ok(run(*lesson(clean), cwd=clean, env=env))
    assert_verifies(moved)
    assert {p.name: p.read_bytes() for p in moved.iterdir()} == {
        p.name: p.read_bytes() for p in clean.iterdir()
    }


# =============================================================================================
# 4. Text read the way nanoGPT reads it: open(path).read(), Python's universal newlines


def with_newlines(text, kind):
    """`text` with its "\\n" written as CRLF, CR, or each of "\\r\\n", "\\r", "\\n" in turn."""
    lines = text.split("\n")
    if kind == "mixed":
        ends = ["\r\n", "\r", "\n"]
        return "".join(line + ends[i % 3] for i, line in enumerate(lines[:-1])) + lines[-1]
    return {"crlf": "\r\n", "cr": "\r"}[kind].join(lines)


@pytest.mark.parametrize("kind", ["crlf", "cr", "mixed"])
@pytest.mark.parametrize(
    "script, oracle, outputs",
    [
        pytest.param(
            CHAR, CHAR_ORACLE, ("train.bin", "val.bin", "meta.pkl"), id="shakespeare_char"
        ),
        pytest.param(GPT2, GPT2_ORACLE, ("train.bin", "val.bin"), id="shakespeare-gpt2"),
    ],
)
def test_newlines_are_read_as_nanogpt_reads_them(
    shakespeare, tmp_path, kind, script, oracle, outputs
):
    """nanoGPT reads "\\r\\n" and a lone "\\r" as "\\n": its vocabulary has no "\\r", and its
    train.bin, val.bin and meta.pkl are what the lesson must write from the same file."""
    data = with_newlines(shakespeare[:50_000], kind).encode("ascii")
    assert b"\r" in data
    nanogpt, out = tmp_path / "nanogpt", tmp_path / "out"
    nanogpt.mkdir()
    (nanogpt / "input.txt").write_bytes(data)
    (tmp_path / "input.txt").write_bytes(data)
    expected = run(oracle, nanogpt)
    assert_ok(expected)
    result = run(script, "--input", tmp_path / "input.txt", "--out-dir", out)
    assert_ok(result)
    for name in outputs:
        assert (out / name).read_bytes() == (nanogpt / name).read_bytes(), name
    if script == CHAR:
        assert expected.stdout in result.stdout  # nanoGPT's figures, its vocabulary: no "\r"
        assert "\r" not in json.loads((out / "meta.json").read_text())["tokenizer"]["chars"]
    assert_verifies(out)


# =============================================================================================
# 5. Bounded


@pytest.fixture(scope="module")
def char_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("char")
    (folder / "in.txt").write_text("First Citizen:\nBefore we proceed any further.\n" * 100)
    assert_ok(run(CHAR, "--input", folder / "in.txt", "--out-dir", folder / "out"))
    return folder / "out"


@pytest.mark.parametrize(
    "args, fragments, code",
    [
        pytest.param(
            ["--block-size", str(10**30)], ["--block-size"], 1, id="block-size-10-to-the-30"
        ),
        pytest.param(["--offset", "-5"], ["--offset: -5 is less than 0"], 2, id="negative-offset"),
        pytest.param(["--offset", str(10**30)], ["offset"], 1, id="offset-10-to-the-30"),
    ],
)
def test_show_with_absurd_numbers_is_one_line(char_folder, args, fragments, code):
    """A negative offset is a usage error (exit 2); numbers past the folder's, one line (exit 1)."""
    result = run(COMMON, "show", char_folder, *args)
    assert_one_line(result, *fragments, code=code, limit=1_000)


def bpe_file(path, merges):
    """A tokenizer file of train_tokenizer.py's format with these merges (its "a b" strings)."""
    from bpe.io import render_token

    document = {
        "format": "nanogpt-bpe-tokenizer",
        "version": 1,
        "pattern": "gpt2",
        "special_tokens": {EOT: 256},
        "single_bytes": "".join(render_token(bytes([i])) for i in range(256)),
        "merges": merges,
    }
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "merge",
    [
        pytest.param("x" * 10**7, id="merge-without-a-space"),
        pytest.param("a" * 10**7 + " b", id="merge-of-an-unknown-token"),
    ],
)
@pytest.mark.parametrize("command", ["shakespeare", "bpe-show"])
def test_a_10_mb_merge_makes_a_short_error_line(tmp_path, small_text, merge, command):
    tokenizer = bpe_file(tmp_path / "bad.json", [merge])
    if command == "shakespeare":
        args = [GPT2, "--input", small_text, "--tokenizer", tokenizer, "--out-dir", tmp_path / "o"]
    else:
        args = ["-m", "bpe", "show", "--tokenizer", tokenizer, "hello"]
    result = run(*args)
    assert_one_line(result, "bad.json", limit=1_000)
    assert not (tmp_path / "o").exists()
