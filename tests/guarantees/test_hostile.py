"""Run for real: what a hostile file system, a hostile input or a signal can do to a run.

Five causes, one section each, every item a test that drives the real commands in fresh
processes (each in a session of its own, so that a test can signal its process group and find
every process it left behind):

1. paths trusted as found: a symlinked lock or temporary name, a device or a FIFO as an output,
   an output that is an input, files of the user that look like leftovers;
2. the commit record does not cover everything nanoGPT reads: meta.pkl, the fixed file names,
   inputs edited in place, damaged datatrove work reused;
3. exceptions that escape the one-line handler: deeply nested JSON, lone surrogates, FIFOs and
   /dev/zero as metadata, `show` without verify's checks, datatrove work directory faults;
4. worker pools and signals: Ctrl-C and SIGTERM, ROUNDS times each;
5. absurd scale and small messages.

Every failing run must be one `error:` line (exit 1, no traceback) naming the file, leave no
process behind and leave the folder's previous complete set as it was; a hang fails by timeout.
"""

import hashlib
import json
import os
import pickle
import random
import resource
import shutil
import signal
import stat
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import (
    BPE,
    CHAR,
    COMMON,
    OWT,
    OWT_DATATROVE,
    TRAIN_TOKENIZER,
    assert_ok,
    assert_one_line,
    finish,
    run,
    session_processes,
    start,
    tokenizer_file,
    write_jsonl,
)

BPE_SHOW = ["-m", "bpe", "show"]
LOCK = ".prepare.lock"
OUTPUTS = ("train.bin", "val.bin", "meta.pkl", "meta.json")
EOT = 50256  # GPT-2's <|endoftext|>
DEEP = "[" * 20_000 + "]" * 20_000  # nested past any recursion limit
# A thorough run is 20 rounds of each signal test; NANOGPT_SIGNAL_ROUNDS=20 runs them all.
ROUNDS = int(os.environ.get("NANOGPT_SIGNAL_ROUNDS", "3"))

needs_datatrove = pytest.mark.skipif(
    __import__("importlib").util.find_spec("datatrove") is None, reason="needs datatrove"
)


def owt_datatrove(*args):
    """The OpenWebText datatrove path's command."""
    return [OWT_DATATROVE, *args]


def tree(folder):
    """Every path under `folder` (links not followed) -> its bytes, link target or kind."""
    found = {}
    for path in sorted(Path(folder).rglob("*")):
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            found[path] = ("link", os.readlink(path))
        elif stat.S_ISREG(mode):
            found[path] = path.read_bytes()
        else:
            found[path] = stat.S_IFMT(mode)
    return found


# ---------------------------------------------------------------------------------------------
# inputs and prepared folders


def words(characters, seed):
    """Deterministic text of `characters` characters; each seed has its own alphabet."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"[: 10 + seed % 10]
    vocabulary = ["".join(rng.choices(letters, k=rng.randint(1, 8))) for _ in range(300)]
    text = ""
    while len(text) < characters:
        text += " ".join(rng.choices(vocabulary, k=12)) + ".\n"
    return text[:characters]


def text_file(path, characters=5_000, seed=1):
    path.write_text(words(characters, seed), encoding="utf-8")
    return path


def digests(folder):
    return {
        name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
        for name in OUTPUTS
        if (folder / name).is_file()
    }


@pytest.fixture(scope="module")
def char_sets(tmp_path_factory):
    """Two character folders prepared from different texts: (first, second), never changed."""
    base = tmp_path_factory.mktemp("char-sets")
    folders = []
    for seed in (1, 2):
        text = text_file(base / f"{seed}.txt", 20_000, seed)
        folder = base / f"set-{seed}"
        assert_ok(run(CHAR, "--input", text, "--out-dir", folder))
        folders.append(folder)
    return folders


@pytest.fixture
def char_folder(char_sets, tmp_path):
    """A copy of a complete character folder, for this test to damage."""
    folder = tmp_path / "out"
    shutil.copytree(char_sets[0], folder, symlinks=True)
    return folder


def edit_meta(folder, change):
    meta = json.loads((folder / "meta.json").read_text())
    change(meta)
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))


@pytest.fixture(scope="module")
def documents(paragraphs):
    """300 real documents, and one that says where an edit in place lands ("the" -> "qzq")."""
    return paragraphs[:300]


def decoded_documents(folder, encoding):
    """The documents a prepared GPT-2 folder holds, sorted (train and val, split on the EOT)."""
    ids = np.concatenate(
        [np.fromfile(folder / f"{s}.bin", dtype=np.uint16) for s in ("train", "val")]
    )
    ends = np.flatnonzero(ids == EOT)
    texts, start = [], 0
    for end in ends:
        texts.append(encoding.decode(ids[start:end].tolist()))
        start = end + 1
    assert start == len(ids)
    return sorted(texts)


def edit_in_place(path, old, new):
    """Replace bytes with as many others, and put the size and times back (cp -p, rsync -t)."""
    assert len(old) == len(new)
    before = path.stat()
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    assert path.stat().st_mtime_ns == before.st_mtime_ns


def owt_args(files, out, *extra):
    return ["--data-files", *files, "--out-dir", out, "--val-fraction", "0.1", *extra]


# =============================================================================================
# 1. Paths are trusted as they are found


@pytest.mark.parametrize("dangling", [False, True], ids=["link-to-a-file", "dangling-link"])
def test_lock_that_is_a_symlink_is_refused(tmp_path, dangling):
    """A planted .prepare.lock symlink: the run must not truncate (or create) its target."""
    folder, victim = tmp_path / "out", tmp_path / "victim.txt"
    folder.mkdir()
    if not dangling:
        victim.write_text("precious")
    (folder / LOCK).symlink_to(victim)
    text = text_file(tmp_path / "in.txt")
    before = tree(tmp_path)
    result = run(CHAR, "--input", text, "--out-dir", folder)
    assert_one_line(result, LOCK, folder)
    assert tree(tmp_path) == before  # the victim as it was (or still absent), no outputs


PLANT = (  # plant a symlink at a name holding this process's pid, then become the command
    "import os, sys; os.symlink(sys.argv[1], sys.argv[2].format(pid=os.getpid())); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[3:]])"
)


@pytest.mark.parametrize(
    "command, temporary",
    [
        pytest.param([TRAIN_TOKENIZER], "{out}/.tok.json.{{pid}}.tmp", id="train-tokenizer"),
        pytest.param(
            [TRAIN_TOKENIZER, "--engine", "datatrove", "--tasks", "1", "--workers", "1"],
            "{out}/.tok.json.{{pid}}.tmp",
            id="train-tokenizer-datatrove",
            marks=needs_datatrove,
        ),
        pytest.param([CHAR], "{out}/.prepare.{{pid}}.tmp", id="char-staging-folder"),
    ],
)
def test_symlink_at_the_temporary_name_is_not_written_through(tmp_path, command, temporary):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious")
    text = text_file(tmp_path / "in.txt")
    if command[0] == CHAR:
        args = ["--input", text, "--out-dir", out]
    else:
        args = ["--input", text, "--vocab-size", "300", "--out", out / "tok.json"]
    planted = temporary.format(out=out)
    result = run("-c", PLANT, victim, planted, *command, *args)
    assert victim.read_text() == "precious"
    assert victim.is_file() and not victim.is_symlink()
    if result.returncode == 0:  # an unpredictable name: the link is not ours, and stays
        assert result.left == []
    else:  # refused to write through it
        assert_one_line(result, out, alone=command[0] == CHAR)


def character_device(tmp):
    """A real device node (/dev/null's numbers) beside the test: replacing it harms nothing."""
    path = tmp / "null-device"
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return path


def fifo(tmp, name="fifo"):
    path = tmp / name
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "make_out, engine",
    [
        pytest.param(character_device, [], id="device"),
        pytest.param(fifo, [], id="fifo"),
        pytest.param(
            character_device,
            ["--engine", "datatrove", "--tasks", "1", "--workers", "1"],
            id="device-datatrove",
            marks=needs_datatrove,
        ),
    ],
)
def test_train_tokenizer_refuses_an_output_that_is_not_a_regular_file(tmp_path, make_out, engine):
    """`--out /dev/null` as root replaced the device with a regular file."""
    out = make_out(tmp_path)
    kind = stat.S_IFMT(out.lstat().st_mode)
    text = text_file(tmp_path / "in.txt")
    result = run(
        TRAIN_TOKENIZER, "--input", text, "--vocab-size", "300", "--out", out, *engine, timeout=30
    )
    assert_one_line(result, out, "not a regular file", alone=False)
    assert stat.S_IFMT(out.lstat().st_mode) == kind


def hard_link(tmp):
    link = tmp / "corpus-link.txt"
    os.link(tmp / "corpus.txt", link)
    return link


@pytest.mark.parametrize(
    "make_args",
    [
        pytest.param(
            lambda t: ["--input", t / "corpus.txt", "--out", t / "corpus.txt"], id="out-is-input"
        ),
        pytest.param(
            lambda t: ["--input", t / "corpus.txt", "--out", hard_link(t)],
            id="out-is-input-hard-link",
        ),
        pytest.param(
            lambda t: [
                "--input",
                t / "other.txt",
                "--eval",
                t / "corpus.txt",
                "--out",
                t / "corpus.txt",
            ],
            id="out-is-eval",
        ),
        pytest.param(
            lambda t: [
                "--input",
                t / "corpus.txt",
                "--out",
                t / "corpus.txt",
                "--engine",
                "datatrove",
                "--tasks",
                "1",
                "--workers",
                "1",
            ],
            id="out-is-input-datatrove",
            marks=needs_datatrove,
        ),
    ],
)
def test_train_tokenizer_refuses_an_output_that_is_an_input(tmp_path, make_args):
    """`--input c.txt --out c.txt` overwrote the training corpus and exited 0."""
    text_file(tmp_path / "corpus.txt", seed=1)
    text_file(tmp_path / "other.txt", seed=2)
    args = make_args(tmp_path)
    before = tree(tmp_path)
    result = run(TRAIN_TOKENIZER, *args, "--vocab-size", "300")
    assert_one_line(result, "corpus", "--out", alone=False)
    assert tree(tmp_path) == before  # refused before anything was read or written


@pytest.mark.parametrize("command", ["rerun", "verify"])
def test_files_of_the_user_named_like_leftovers_are_kept(char_folder, tmp_path, command):
    """Only what a run of ours provably left is a leftover: not a user's `.X.<digits>.tmp`."""
    (char_folder / ".notes.123.tmp").write_text("mine")
    drafts = char_folder / ".drafts.7.tmp"
    drafts.mkdir()
    (drafts / "a.txt").write_text("mine too")
    before = tree(char_folder)
    if command == "rerun":
        result = run(CHAR, "--input", text_file(tmp_path / "in.txt"), "--out-dir", char_folder)
    else:
        result = run(COMMON, "verify", char_folder)
    assert_ok(result)
    assert "leftover" not in result.stderr and "removed" not in result.stdout, result.stderr
    for path in (char_folder / ".notes.123.tmp", drafts, drafts / "a.txt"):
        assert tree(char_folder)[path] == before[path]


# =============================================================================================
# 2. The commit record covers everything nanoGPT reads


class Planted:
    """Unpickling this makes a folder: a meta.pkl that runs code in whoever calls pickle.load."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return os.mkdir, (str(self.path),)


def other_runs_pickle(folder, others):
    shutil.copy(others[1] / "meta.pkl", folder / "meta.pkl")


def malicious_pickle(folder, _):
    (folder / "meta.pkl").write_bytes(pickle.dumps(Planted(folder.parent / "pwned")))


def other_vocab_size(folder, _):
    with open(folder / "meta.pkl", "rb") as f:
        meta = pickle.load(f)  # our own file, in a test
    meta["vocab_size"] += 1
    (folder / "meta.pkl").write_bytes(pickle.dumps(meta))


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(other_runs_pickle, id="another-runs-meta-pkl"),
        pytest.param(lambda folder, _: (folder / "meta.pkl").unlink(), id="meta-pkl-missing"),
        pytest.param(malicious_pickle, id="malicious-meta-pkl"),
        pytest.param(other_vocab_size, id="meta-pkl-vocab-size-differs"),
    ],
)
def test_verify_checks_meta_pkl(char_folder, char_sets, damage):
    """nanoGPT's train.py and sample.py pickle.load meta.pkl: verify must vouch for it, without
    running it."""
    damage(char_folder, char_sets)
    result = run(COMMON, "verify", char_folder)
    assert_one_line(result, "meta.pkl")
    assert not (char_folder.parent / "pwned").exists()


def test_verify_checks_the_file_names_nanogpt_reads(char_folder):
    """meta.json naming val.bin as train must not hide a train.bin of garbage."""
    edit_meta(char_folder, lambda meta: meta["splits"].update(train=meta["splits"]["val"]))
    size = (char_folder / "train.bin").stat().st_size
    (char_folder / "train.bin").write_bytes(
        bytes(range(256)) * (size // 256) + b"\0" * (size % 256)
    )
    result = run(COMMON, "verify", char_folder)
    assert result.returncode == 1, result.stderr
    assert "train.bin" in result.stderr and "Traceback" not in result.stderr, result.stderr


def train_tokenizer_reference(tmp, corpus):
    """The tokenizer file the one-machine engine trains on `corpus` (the same bytes)."""
    out = tmp / "reference-tok.json"
    assert_ok(run(TRAIN_TOKENIZER, "--input", corpus, "--vocab-size", "300", "--out", out))
    return out.read_bytes()


@pytest.mark.parametrize(
    "engine",
    [
        pytest.param("datasets", id="openwebtext-datasets"),
        pytest.param("datatrove", id="openwebtext-datatrove", marks=needs_datatrove),
        pytest.param("tokenizer", id="train-tokenizer-datatrove", marks=needs_datatrove),
    ],
)
def test_input_edited_in_place_is_read_again(tmp_path, documents, gpt2_encoding, engine):
    """Same size, mtime put back: the work and caches must know the input by its content."""
    corpus = write_jsonl(tmp_path / "docs.jsonl", documents)
    out = tmp_path / "out"
    env = {"HF_DATASETS_CACHE": str(tmp_path / "hf-cache")}
    if engine == "tokenizer":
        args = [TRAIN_TOKENIZER, "--input", corpus, "--vocab-size", "300", "--out", out]
        args += ["--engine", "datatrove", "--tasks", "2", "--workers", "2"]
    elif engine == "datatrove":
        args = owt_datatrove(*owt_args([corpus], out, "--tasks", "2", "--workers", "2"))
    else:
        args = [OWT, *owt_args([corpus], out, "--num-proc", "1")]
    assert_ok(run(*args, env=env))
    edit_in_place(corpus, b"the", b"qzq")
    assert_ok(run(*args, env=env))
    if engine == "tokenizer":
        assert out.read_bytes() == train_tokenizer_reference(tmp_path, corpus)
    else:
        edited = [text.replace("the", "qzq") for text in documents]
        assert decoded_documents(out, gpt2_encoding) == sorted(edited)


def rewrite_token_shard(work):
    (shard,) = work.glob("*/tasks/tokens-00000.bin")
    ids = np.fromfile(shard, dtype=np.uint16)
    np.full_like(ids, 0x20).tofile(shard)  # the same size, other tokens


def remove_token_shard(work):
    (shard,) = work.glob("*/tasks/tokens-00000.bin")
    shard.unlink()


def change_count_table(work):
    (table,) = work.glob("counts-*/counts/00000.json")
    text = table.read_text()
    table.write_text(text.replace("1", "7"))  # the same size, other counts


def break_count_table(work):
    (table,) = work.glob("counts-*/counts/00000.json")
    size = table.stat().st_size
    table.write_bytes(b"{" * size)


@pytest.mark.parametrize(
    "engine, damage",
    [
        pytest.param("openwebtext", rewrite_token_shard, id="token-shard-rewritten-same-size"),
        pytest.param("openwebtext", remove_token_shard, id="token-shard-removed"),
        pytest.param("tokenizer", change_count_table, id="count-table-changed-same-size"),
        pytest.param("tokenizer", break_count_table, id="count-table-not-json"),
    ],
)
@needs_datatrove
def test_damaged_datatrove_work_is_redone(tmp_path, documents, gpt2_encoding, engine, damage):
    """A token shard or count table is checked against its recorded hash before it is reused."""
    corpus = write_jsonl(tmp_path / "docs.jsonl", documents)
    work, out = tmp_path / "work", tmp_path / "out"
    common = ["--work-dir", work, "--tasks", "2", "--workers", "2"]
    if engine == "tokenizer":
        args = [TRAIN_TOKENIZER, "--input", corpus, "--vocab-size", "300", "--out", out]
        args += ["--engine", "datatrove", *common]
        rerun = args
    else:
        args = owt_datatrove(*owt_args([corpus], out, *common))
        rerun = [*args, "--seed", "7"]  # a new split: the plan reads the token shards again
    assert_ok(run(*args))
    first = out.read_bytes() if engine == "tokenizer" else None
    damage(work)
    assert_ok(run(*rerun))
    if engine == "tokenizer":
        assert out.read_bytes() == first
    else:
        assert decoded_documents(out, gpt2_encoding) == sorted(documents)


# =============================================================================================
# 3. Every exception reaches the one-line handler


def deep_jsonl(tmp):
    path = tmp / "deep.jsonl"
    path.write_text('{"text": "fine"}\n{"text": "a", "deep": ' + DEEP + "}\n")
    return path


def deep_json_array(tmp):
    path = tmp / "deep.json"
    path.write_text('[{"text": "fine"}, {"text": "a", "deep": ' + DEEP + "}]")
    return path


def deep_file(tmp, name="deep.json"):
    path = tmp / name
    path.write_text(DEEP)
    return path


def deep_meta(folder):
    (folder / "meta.json").write_text(DEEP)
    return folder


DT = ["--tasks", "1", "--workers", "1"]

DEEP_CASES = [
    pytest.param(lambda _t, f: [COMMON, "verify", deep_meta(f)], "meta.json", True, id="verify"),
    pytest.param(lambda _t, f: [COMMON, "show", deep_meta(f)], "meta.json", True, id="show"),
    pytest.param(
        lambda t, _f: [
            BPE,
            "--input",
            text_file(t / "in.txt"),
            "--tokenizer",
            deep_file(t),
            "--out-dir",
            t / "o",
        ],
        "deep.json",
        True,
        id="shakespeare-tokenizer",
    ),
    pytest.param(
        lambda t, _f: [*BPE_SHOW, "--tokenizer", deep_file(t), "hello"],
        "deep.json",
        True,
        id="bpe-show-tokenizer",
    ),
    pytest.param(
        lambda t, _f: [
            TRAIN_TOKENIZER,
            "--input",
            deep_jsonl(t),
            "--vocab-size",
            "300",
            "--out",
            t / "tok.json",
        ],
        "deep.jsonl",
        False,
        id="train-tokenizer-jsonl",
    ),
    pytest.param(
        lambda t, _f: [
            TRAIN_TOKENIZER,
            "--input",
            deep_json_array(t),
            "--vocab-size",
            "300",
            "--out",
            t / "tok.json",
        ],
        "deep.json",
        False,
        id="train-tokenizer-json-array",
    ),
    pytest.param(
        lambda t, _f: [
            TRAIN_TOKENIZER,
            "--input",
            deep_jsonl(t),
            "--vocab-size",
            "300",
            "--out",
            t / "tok.json",
            "--engine",
            "datatrove",
            *DT,
        ],
        "deep.jsonl",
        False,
        id="train-tokenizer-datatrove",
        marks=needs_datatrove,
    ),
    pytest.param(
        lambda t, _f: owt_datatrove(*owt_args([deep_jsonl(t)], t / "o", *DT)),
        "deep.jsonl",
        False,
        id="openwebtext-datatrove-reader",
        marks=needs_datatrove,
    ),
    pytest.param(
        lambda t, _f: [OWT, *owt_args([deep_jsonl(t)], t / "o", "--num-proc", "1")],
        "deep.jsonl",
        False,
        id="openwebtext-datasets",
    ),
]


@pytest.mark.parametrize("make_command, names, alone", DEEP_CASES)
def test_deeply_nested_json_is_one_line(char_folder, tmp_path, make_command, names, alone):
    """20,000 levels of nesting: RecursionError tracebacks, and a segfault inside pyarrow."""
    command = make_command(tmp_path, char_folder)
    result = run(*command, env={"HF_DATASETS_CACHE": str(tmp_path / "hf-cache")})
    assert_one_line(result, names, alone=alone)


def surrogate_jsonl(tmp):
    path = tmp / "lone.jsonl"
    path.write_text(
        '{"text": "fine"}\n{"text": "a\\ud800b"}\n'
    )  # JSON's escape of a lone surrogate
    return path


SURROGATE_CASES = [
    pytest.param(
        lambda t: [
            TRAIN_TOKENIZER,
            "--input",
            surrogate_jsonl(t),
            "--vocab-size",
            "300",
            "--out",
            t / "tok.json",
            "--workers",
            "1",
        ],
        id="train-tokenizer",
    ),
    pytest.param(
        lambda t: [
            TRAIN_TOKENIZER,
            "--input",
            surrogate_jsonl(t),
            "--vocab-size",
            "300",
            "--out",
            t / "tok.json",
            "--engine",
            "datatrove",
            *DT,
        ],
        id="train-tokenizer-datatrove",
        marks=needs_datatrove,
    ),
    pytest.param(
        lambda t: [OWT, *owt_args([surrogate_jsonl(t)], t / "o", "--num-proc", "1")],
        id="openwebtext-datasets",
    ),
    pytest.param(
        lambda t: owt_datatrove(*owt_args([surrogate_jsonl(t)], t / "o", *DT)),
        id="openwebtext-datatrove",
        marks=needs_datatrove,
    ),
]


@pytest.mark.parametrize("make_command", SURROGATE_CASES)
def test_lone_surrogate_is_one_line(tmp_path, make_command):
    result = run(*make_command(tmp_path), env={"HF_DATASETS_CACHE": str(tmp_path / "hf-cache")})
    assert_one_line(result, "lone.jsonl", alone=False)
    assert not (tmp_path / "tok.json").exists() and not (tmp_path / "o" / "train.bin").exists()


def latin1_file(tmp, name):
    path = tmp / name
    text = '{"text": "fine"}\n{"text": "caf\xe9"}\n' if name.endswith(".jsonl") else "caf\xe9\n"
    path.write_bytes(text.encode("latin-1"))
    return path


NOT_UTF8_CASES = [
    pytest.param(
        lambda t: [OWT, *owt_args([latin1_file(t, "latin1.jsonl")], t / "o", "--num-proc", "1")],
        "latin1.jsonl",
        id="openwebtext-jsonl",
    ),
    pytest.param(
        lambda t: [OWT, *owt_args([latin1_file(t, "latin1.txt")], t / "o", "--num-proc", "1")],
        "latin1.txt",
        id="openwebtext-txt",
    ),
    pytest.param(
        lambda t: owt_datatrove(*owt_args([latin1_file(t, "latin1.jsonl")], t / "o", *DT)),
        "latin1.jsonl",
        id="openwebtext-datatrove",
        marks=needs_datatrove,
    ),
    pytest.param(
        lambda t: [
            TRAIN_TOKENIZER,
            "--input",
            latin1_file(t, "latin1.jsonl"),
            "--vocab-size",
            "300",
            "--out",
            t / "tok.json",
        ],
        "latin1.jsonl",
        id="train-tokenizer",
    ),
]


@pytest.mark.parametrize("make_command, name", NOT_UTF8_CASES)
def test_a_file_not_in_utf8_is_one_line_naming_it(tmp_path, make_command, name):
    """A document file with a Latin-1 byte: refused before any token is written, naming it."""
    result = run(*make_command(tmp_path), env={"HF_DATASETS_CACHE": str(tmp_path / "hf-cache")})
    assert_one_line(result, name, "not valid UTF-8", alone=False)
    assert not (tmp_path / "tok.json").exists() and not (tmp_path / "o" / "train.bin").exists()


@pytest.mark.parametrize(
    "make_tokenizer", [pytest.param(fifo, id="fifo"), pytest.param(character_device, id="device")]
)
def test_a_tokenizer_that_is_not_a_regular_file_is_one_line_naming_it(tmp_path, make_tokenizer):
    """--tokenizer naming a FIFO (reading it waits for a writer for good) or a device: refused
    in one line saying what it is, not that it does not exist."""
    docs = write_jsonl(tmp_path / "docs.jsonl", ["a document", "another document"])
    tokenizer = make_tokenizer(tmp_path)
    result = run(OWT, "--data-files", docs, "--tokenizer", tokenizer, "--out-dir", tmp_path / "o")
    assert_one_line(result, f"--tokenizer {tokenizer} is not a regular file", alone=False)
    result = run(*BPE_SHOW, "--tokenizer", tokenizer, "--", "hello")
    assert_one_line(result, f"--tokenizer {tokenizer} is not a regular file")


def meta_is_fifo(folder):
    (folder / "meta.json").unlink()
    os.mkfifo(folder / "meta.json")


def lock_is_fifo(folder):
    (folder / LOCK).unlink(missing_ok=True)
    os.mkfifo(folder / LOCK)


def meta_is_dev_zero(folder):
    (folder / "meta.json").unlink()
    (folder / "meta.json").symlink_to("/dev/zero")


def meta_is_folder(folder):
    (folder / "meta.json").unlink()
    (folder / "meta.json").mkdir()


def memory_limit():
    """A bound, so that a read without one fails instead of eating the machine's memory."""
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


@pytest.mark.parametrize(
    "command, damage, name",
    [
        pytest.param("verify", meta_is_fifo, "meta.json", id="verify-meta-json-fifo"),
        pytest.param("verify", lock_is_fifo, LOCK, id="verify-lock-fifo"),
        pytest.param("verify", meta_is_dev_zero, "meta.json", id="verify-meta-json-dev-zero"),
        pytest.param("show", meta_is_fifo, "meta.json", id="show-meta-json-fifo"),
        pytest.param("show", meta_is_dev_zero, "meta.json", id="show-meta-json-dev-zero"),
        pytest.param(
            "verify",
            meta_is_folder,
            "meta.json is not a regular file",
            id="verify-meta-json-folder",
        ),
        pytest.param(
            "show", meta_is_folder, "meta.json is not a regular file", id="show-meta-json-folder"
        ),
    ],
)
def test_metadata_that_is_not_a_regular_file_is_refused(char_folder, command, damage, name):
    """A FIFO made verify hang forever; /dev/zero was read without limit; a folder was named
    by its descriptor."""
    damage(char_folder)
    result = run(COMMON, command, char_folder, timeout=20, preexec_fn=memory_limit)
    assert_one_line(result, name)


def odd_sized_bin(folder):
    with open(folder / "train.bin", "ab") as f:
        f.write(b"\0")


def chars_missing(folder):
    edit_meta(folder, lambda meta: meta["tokenizer"].pop("chars"))


def vocab_beyond_chars(folder):
    """vocab_size 10 more than the characters, and an id between them first in train.bin (its
    sha256 and size recorded, so that only the tokenizer is wrong)."""
    meta = json.loads((folder / "meta.json").read_text())
    chars = len(meta["tokenizer"]["chars"])
    ids = np.fromfile(folder / "train.bin", dtype=np.uint16)
    ids[0] = chars + 5
    ids.tofile(folder / "train.bin")
    meta["tokenizer"]["vocab_size"] = chars + 10
    meta["splits"]["train"]["sha256"] = hashlib.sha256(ids.tobytes()).hexdigest()
    (folder / "meta.json").write_text(json.dumps(meta))


def unknown_tiktoken(folder):
    edit_meta(folder, lambda meta: meta["tokenizer"].update(kind="tiktoken", name="nope"))


@pytest.mark.parametrize(
    "damage, args, code, fragments",
    [
        pytest.param(None, ["--seed", "-1"], 2, ["--seed"], id="negative-seed"),
        pytest.param(odd_sized_bin, [], 1, ["train.bin"], id="odd-sized-bin"),
        pytest.param(chars_missing, [], 1, ["chars"], id="chars-missing"),
        pytest.param(vocab_beyond_chars, [], 1, ["vocab_size"], id="vocab-size-beyond-chars"),
        pytest.param(unknown_tiktoken, [], 1, ["nope"], id="unknown-tiktoken-name"),
    ],
)
def test_show_makes_verifys_checks(char_folder, damage, args, code, fragments):
    """A bad option value is exit 2, as every script's; a folder verify refuses, exit 1."""
    if damage:
        damage(char_folder)
    result = run(COMMON, "show", char_folder, *args)
    assert_one_line(result, *fragments, code=code)


@pytest.mark.parametrize(
    "make_args, fragments",
    [
        pytest.param(
            lambda t: ["--tokenizer", tokenizer_file(t / "tok.json", "gpt2"), b"caf\xe9"],
            ["UTF-8"],
            id="non-utf8-argument",
        ),
        pytest.param(
            lambda t: ["--tokenizer", tokenizer_file(t / "lossy.json", r"\w+"), "a b"],
            ["lossy.json"],
            id="pattern-drops-text",
        ),
    ],
)
def test_bpe_show_is_one_line(tmp_path, make_args, fragments):
    result = run(*BPE_SHOW, *make_args(tmp_path))
    assert_one_line(result, *fragments)


def file_size_limit(limit):
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@needs_datatrove
@pytest.mark.parametrize("fault", ["disk-full", "file-too-large"])
def test_datatrove_work_directory_full_is_one_line_naming_it(tmp_path, paragraphs, fault, request):
    corpus = write_jsonl(tmp_path / "docs.jsonl", paragraphs[:2000])
    if fault == "disk-full":
        work, limit, cause = request.getfixturevalue("small_tmpfs") / "work", None, "No space left"
    else:
        work, limit, cause = tmp_path / "work", file_size_limit(40_000), "File too large"
    out = tmp_path / "out"
    args = owt_datatrove(*owt_args([corpus], out, "--work-dir", work, *DT))
    result = run(*args, preexec_fn=limit)
    assert_one_line(result, cause, work, alone=False)
    assert digests(out) == {}


@needs_datatrove
@pytest.mark.parametrize("engine", ["openwebtext", "tokenizer"])
def test_datatrove_corrupt_run_json_is_one_line_naming_it(tmp_path, documents, engine):
    corpus = write_jsonl(tmp_path / "docs.jsonl", documents)
    work, out = tmp_path / "work", tmp_path / "out"
    if engine == "tokenizer":
        args = [TRAIN_TOKENIZER, "--input", corpus, "--vocab-size", "300", "--out", out]
        args += ["--engine", "datatrove", "--work-dir", work, *DT]
    else:
        args = owt_datatrove(*owt_args([corpus], out, "--work-dir", work, *DT))
    assert_ok(run(*args))
    before = digests(out) if engine == "openwebtext" else out.read_bytes()
    for run_json in work.rglob("run.json"):
        run_json.write_text("{")
    result = run(*args)
    assert_one_line(result, "run.json", alone=False)
    assert before == (digests(out) if engine == "openwebtext" else out.read_bytes())


# =============================================================================================
# 4. Worker pools and signals: Ctrl-C (SIGINT to the group) and SIGTERM (to the process, as
# `kill PID` sends it), ROUNDS times: one line, exit 130 / 143, no process left behind


@pytest.fixture(scope="module")
def big_jsonl(paragraphs, tmp_path_factory):
    """Tiny Shakespeare's paragraphs, three times: a few seconds of counting or tokenizing."""
    return write_jsonl(tmp_path_factory.mktemp("big") / "big.jsonl", paragraphs * 3)


SIGNAL_CASES = [
    pytest.param("tokenizer", signal.SIGINT, True, id="train-tokenizer-ctrl-c"),
    pytest.param("tokenizer", signal.SIGTERM, False, id="train-tokenizer-sigterm"),
    pytest.param(
        "openwebtext", signal.SIGINT, True, id="openwebtext-datatrove-ctrl-c", marks=needs_datatrove
    ),
    pytest.param(
        "openwebtext",
        signal.SIGTERM,
        False,
        id="openwebtext-datatrove-sigterm",
        marks=needs_datatrove,
    ),
]


@pytest.mark.parametrize("engine, signum, to_group", SIGNAL_CASES)
def test_signal_while_workers_run_is_one_line_and_leaves_no_process(
    tmp_path, big_jsonl, engine, signum, to_group
):
    rng = random.Random(16)
    out = tmp_path / "out"
    if engine == "tokenizer":
        args = [TRAIN_TOKENIZER, "--input", big_jsonl, "--vocab-size", "300", "--out", out]
        args += ["--workers", "2"]
        busy = 3  # the parent and its 2 pool workers
    else:
        args = owt_datatrove(*owt_args([big_jsonl], out, "--tasks", "4", "--workers", "2"))
        busy = 2
    for round_ in range(ROUNDS):
        shutil.rmtree(tmp_path / "out", ignore_errors=True)
        process = start(*args)
        while process.poll() is None and len(session_processes(process.pid)) < busy:
            time.sleep(0.01)
        assert process.poll() is None, f"round {round_}: the run ended before its workers ran"
        time.sleep(rng.uniform(0, 0.3))  # somewhere in the counting
        if to_group:
            os.killpg(process.pid, signum)
        else:
            os.kill(process.pid, signum)
        result = finish(process, timeout=30)
        where = f"round {round_}: "
        assert result.returncode == 128 + signum, where + result.stderr[-3000:]
        assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, (
            where + result.stderr[-3000:]
        )
        lines = result.stderr.rstrip("\n").split("\n")
        assert lines[-1].startswith("error: "), where + result.stderr[-3000:]
        assert sum(line.startswith("error: ") for line in lines) == 1, where + result.stderr
        assert result.left == [], where + str(result.left)
        if "were complete" in lines[-1]:  # it landed in the commit, held back until the end
            assert run(COMMON, "verify", out).returncode == 0, where + lines[-1]
        else:
            assert digests(out) == {}, where + lines[-1]


# =============================================================================================
# 5. Absurd scale and small messages


@needs_datatrove
def test_datatrove_tasks_are_capped_at_the_pieces_of_input(
    tmp_path, openwebtext_repo, gpt2_encoding
):
    """--tasks 100000 on 3 files of 600 documents: capped (or refused), not 33 hours."""
    files = sorted(str(p) for p in Path(openwebtext_repo.local_files).glob("*.parquet"))
    out = tmp_path / "out"
    result = run(
        *owt_datatrove(*owt_args(files, out, "--tasks", "100000", "--workers", "2")), timeout=60
    )
    if result.returncode == 0:
        assert result.left == []
        assert decoded_documents(out, gpt2_encoding) == sorted(openwebtext_repo.documents)
    else:
        assert_one_line(result, "--tasks", alone=False)


def parquet_of(path, texts, kind):
    if kind == "dictionary":
        column = pa.array(texts, pa.string()).dictionary_encode()
    else:
        column = pa.array(texts, pa.string_view())
    pq.write_table(pa.table({"text": column}), path)
    assert pq.read_schema(path).field("text").type != pa.string()
    return path


@pytest.mark.parametrize("kind", ["dictionary", "string_view"])
@pytest.mark.parametrize(
    "engine",
    [pytest.param("datasets"), pytest.param("datatrove", marks=needs_datatrove)],
)
def test_parquet_text_column_encodings_are_read(tmp_path, documents, gpt2_encoding, kind, engine):
    """A dictionary-encoded or string_view `text` column holds strings: both engines read it."""
    files = [str(parquet_of(tmp_path / f"{i}.parquet", documents[i::2], kind)) for i in range(2)]
    out = tmp_path / "out"
    if engine == "datatrove":
        command = owt_datatrove(*owt_args(files, out, *DT))
    else:
        command = [OWT, *owt_args(files, out, "--num-proc", "1")]
    assert_ok(run(*command, env={"HF_DATASETS_CACHE": str(tmp_path / "hf-cache")}))
    assert decoded_documents(out, gpt2_encoding) == sorted(documents)


def test_json_array_with_a_bom_is_a_json_array(tmp_path, documents):
    rows = json.dumps([{"text": text} for text in documents[:50]])
    plain, bom = tmp_path / "plain.json", tmp_path / "bom.json"
    plain.write_text(rows, encoding="utf-8")
    bom.write_bytes(b"\xef\xbb\xbf" + rows.encode())
    for path in (plain, bom):
        out = path.with_suffix(".tok")
        assert_ok(run(TRAIN_TOKENIZER, "--input", path, "--vocab-size", "300", "--out", out))
    assert bom.with_suffix(".tok").read_bytes() == plain.with_suffix(".tok").read_bytes()


def duplicate_text_key(tmp):
    path = tmp / "dup.jsonl"
    path.write_text('{"text": "fine"}\n{"text": "one", "text": "two"}\n')
    return path


def lock_fifo_folder(tmp):
    folder = tmp / "fifo-lock-out"
    folder.mkdir()
    os.mkfifo(folder / LOCK)
    return folder


def meta_null(folder):
    (folder / "meta.json").write_text("null")
    return folder


@pytest.mark.parametrize(
    "make_command, code, fragments, absent",
    [
        pytest.param(
            lambda t, _f: [
                TRAIN_TOKENIZER,
                "--input",
                duplicate_text_key(t),
                "--vocab-size",
                "300",
                "--out",
                t / "tok.json",
            ],
            1,
            ["dup.jsonl", "text"],
            [],
            id="train-tokenizer-duplicate-text-key",
        ),
        pytest.param(
            lambda t, _f: [
                TRAIN_TOKENIZER,
                "--input",
                text_file(t / "in.txt"),
                "--vocab-size",
                "300",
                "--out",
                t / "tok.json",
                "--trace",
                "-1",
            ],
            (1, 2),
            ["--trace"],
            [],
            id="trace-negative",
        ),
        pytest.param(
            lambda t, _f: [
                CHAR,
                "--input",
                text_file(t / "in.txt"),
                "--out-dir",
                lock_fifo_folder(t),
            ],
            1,
            [LOCK],
            ["Invalid argument"],
            id="lock-fifo",
        ),
        pytest.param(
            lambda _t, f: [COMMON, "verify", meta_null(f)],
            1,
            ["meta.json", "null"],
            ["NoneType"],
            id="verify-meta-json-null",
        ),
        pytest.param(
            lambda _t, f: [COMMON, "show", f, "--block-size", str(10**12)],
            1,
            ["--block-size"],
            ["-1", "to -"],
            id="show-huge-block-size",
        ),
        pytest.param(
            lambda t, _f: [*BPE_SHOW, "--tokenizer", t, "hello"],
            1,
            ["folder"],
            ["does not exist"],
            id="bpe-show-tokenizer-folder",
        ),
    ],
)
def test_small_messages(char_folder, tmp_path, make_command, code, fragments, absent):
    result = run(*make_command(tmp_path, char_folder), timeout=30)
    assert_one_line(result, *fragments, code=code, absent=absent)
    assert not (tmp_path / "tok.json").exists()
