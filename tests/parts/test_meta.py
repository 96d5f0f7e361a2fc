"""prepare_common.py, metadata: meta.json written beside the .bin files, and `verify` re-checking
a folder (in process, and as `python prepare_common.py verify DIR` on a real prepared folder)."""

import hashlib
import json
import shutil

import numpy as np
import pytest
from conftest import REPO, assert_clean_failure, names_in, run_python

from formats.schema import META_FORMAT_VERSION
from inspection import verify
from prepare_common import write_bin, write_meta
from safety.commit import STAGING_MARKER
from safety.files import sha256_file

pytestmark = pytest.mark.usefixtures("downloads")  # Tiny Shakespeare, GPT-2's files


def test_write_meta_then_verify_in_process(tmp_path, capsys):
    chars = "\n abc"
    train = np.array([2, 3, 4, 1, 0])
    val = np.array([4, 3, 2])
    write_bin(tmp_path / "train.bin", [train], np.uint16, len(chars))
    write_bin(tmp_path / "val.bin", [val], np.uint16, len(chars))
    meta = write_meta(
        tmp_path,
        script="tests/parts/test_meta.py",
        tokenizer={
            "kind": "char",
            "name": "char",
            "vocab_size": len(chars),
            "eot_id": None,
            "sha256": hashlib.sha256(chars.encode()).hexdigest(),
            "chars": chars,
        },
        dtype=np.uint16,
        split_tokens={"train": 5, "val": 3},
        source={"path": None},
        split={"rule": "by hand"},
        options={},
    )
    on_disk = json.loads((tmp_path / "meta.json").read_text(encoding="utf-8"))
    assert on_disk == meta
    assert meta["format_version"] == META_FORMAT_VERSION
    assert meta["dtype"] == "uint16"
    assert meta["splits"]["val"] == {
        "file": "val.bin",
        "tokens": 3,
        "sha256": sha256_file(tmp_path / "val.bin"),
    }
    assert names_in(tmp_path) == ["meta.json", "token_bytes.npy", "train.bin", "val.bin"]
    assert np.load(tmp_path / "token_bytes.npy").tolist() == [1, 1, 1, 1, 1]  # "\n abc"
    assert meta["token_bytes"]["bytes"] == {"train": 5, "val": 3}
    assert verify(tmp_path) == []
    assert "'cba'" in capsys.readouterr().out  # the start of val, decoded


def run_verify(folder):
    return run_python("prepare_common.py", "verify", folder, cwd=REPO)


@pytest.fixture(scope="module")
def shakespeare_char_folder(tmp_path_factory):
    """A folder written by the real data/shakespeare_char/prepare.py (input through the mirror)."""
    out_dir = tmp_path_factory.mktemp("shakespeare_char")
    result = run_python("data/shakespeare_char/prepare.py", "--out-dir", out_dir, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert names_in(out_dir) == [  # and no lock file: the run removed it as it ended
        "input.txt",
        "meta.json",
        "meta.pkl",
        "token_bytes.npy",
        "train.bin",
        "val.bin",
        "val_bytes.bin",
    ]
    return out_dir


@pytest.fixture
def prepared(shakespeare_char_folder, tmp_path):
    folder = tmp_path / "prepared"
    shutil.copytree(shakespeare_char_folder, folder)
    return folder


def test_verify_ok_on_a_prepared_folder(prepared):
    result = run_verify(prepared)
    assert result.returncode == 0, result.stderr
    assert f"{prepared}: OK" in result.stdout
    assert "train: 1,003,854 tokens, uint16" in result.stdout
    assert "val: 111,540 tokens, uint16" in result.stdout
    assert "start of val:" in result.stdout
    assert result.stderr == ""


def truncate_train(folder):
    train = folder / "train.bin"
    train.write_bytes(train.read_bytes()[:-2])


def flip_a_val_byte(folder):
    # whether the id stays below 65 or not, the sha256 no longer matches
    val = folder / "val.bin"
    data = bytearray(val.read_bytes())
    data[100] ^= 0x01
    val.write_bytes(bytes(data))


def put_id_65_in_val(folder):
    """An id beyond the vocabulary, with meta.json's sha256 updated to match: only the id is
    wrong."""
    ids = np.fromfile(folder / "val.bin", dtype=np.uint16)
    ids[5] = 65
    ids.tofile(folder / "val.bin")
    edit_meta(
        folder, lambda meta: meta["splits"]["val"].update(sha256=sha256_file(folder / "val.bin"))
    )


def edit_meta(folder, change):
    """Load meta.json, apply `change(meta)` to it, write it back."""
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    change(meta)
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


def leave_a_killed_runs_files(folder):
    """What a SIGKILL between the commit's renames leaves: new train.bin, no meta.json, staging."""
    (folder / ".prepare.99999.tmp").mkdir()
    (folder / ".prepare.99999.tmp" / STAGING_MARKER).touch()
    (folder / "train.bin").write_bytes(b"\x00\x00")
    (folder / "meta.json").unlink()


def change_the_source(folder):
    source = folder / "input.txt"
    source.write_bytes(source.read_bytes() + b"\n")


def set_format_version_99(folder):
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    meta["format_version"] = 99
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


@pytest.mark.parametrize(
    "damage, fragments",
    [
        pytest.param(
            truncate_train,
            ["train.bin", "2,007,706 bytes", "1,003,854 uint16 tokens"],
            id="truncated-bin",
        ),
        pytest.param(flip_a_val_byte, ["val.bin", "sha256"], id="flipped-byte"),
        pytest.param(put_id_65_in_val, ["token id 65 >= vocab_size 65"], id="id-beyond-vocab"),
        pytest.param(lambda f: (f / "val.bin").unlink(), ["val.bin is missing"], id="missing-bin"),
        pytest.param(
            lambda f: (f / "meta.json").unlink(),
            ["meta.json", "does not exist", "prepare.py"],
            id="missing-meta-json",
        ),
        pytest.param(change_the_source, ["input.txt", "source sha256"], id="changed-source"),
        pytest.param(
            lambda f: (f / "meta.json").write_text('{"format_version": 1,', encoding="utf-8"),
            ["meta.json", "not valid JSON"],
            id="invalid-meta-json",
        ),
        pytest.param(
            lambda f: (f / "meta.json").write_text('{"format_version": ' + "1" * 5000 + "}"),
            ["meta.json", "holds a number of over 4,300 digits"],
            id="a-number-int-refuses",
        ),
        pytest.param(set_format_version_99, ["format_version 99"], id="unknown-format-version"),
        pytest.param(
            leave_a_killed_runs_files,
            ["meta.json does not exist", "incomplete", "interrupted", "prepare.py"],
            id="killed-mid-commit",
        ),
        pytest.param(
            lambda f: (f / "meta.json").write_text("[1, 2]", encoding="utf-8"),
            ["meta.json holds a JSON array, not an object"],
            id="meta-json-is-a-list",
        ),
        pytest.param(
            lambda f: edit_meta(f, lambda m: m.pop("dtype")),
            ['"dtype" is missing'],
            id="missing-dtype",
        ),
        pytest.param(
            lambda f: edit_meta(f, lambda m: m["tokenizer"].pop("vocab_size")),
            ['tokenizer "vocab_size" is missing'],
            id="missing-vocab-size",
        ),
        pytest.param(
            lambda f: edit_meta(f, lambda m: m["splits"]["train"].update(tokens="1003854")),
            ['splits.train.tokens is "1003854", expected a count of tokens'],
            id="tokens-as-a-string",
        ),
        pytest.param(
            lambda f: edit_meta(f, lambda m: m.update(dtype="float32")),
            ['dtype is "float32", expected uint16 or uint32'],
            id="unknown-dtype",
        ),
        pytest.param(
            lambda f: edit_meta(f, lambda m: m.update(splits={})),
            ["splits has no train and no val", "needs both"],
            id="empty-splits",
        ),
        pytest.param(
            lambda f: edit_meta(f, lambda m: m["splits"].pop("val")),
            ["splits has no val"],
            id="no-val-split",
        ),
        pytest.param(
            lambda f: edit_meta(f, lambda m: m["splits"]["val"].update(file="../val.bin")),
            ['splits.val.file is "../val.bin", expected a file name in the folder'],
            id="split-file-outside-the-folder",
        ),
        pytest.param(
            lambda f: edit_meta(f, lambda m: m["splits"].update(train=[])),
            ["splits.train is [], expected a JSON object"],
            id="split-not-an-object",
        ),
        pytest.param(
            lambda f: edit_meta(
                f, lambda m: m["tokenizer"].update(chars="abc" + m["tokenizer"]["chars"][3:])
            ),
            ["tokenizer sha256 does not match its recorded characters"],
            id="char-vocabulary-changed",
        ),
        pytest.param(
            lambda f: edit_meta(f, lambda m: m["tokenizer"].update(kind="sentencepiece")),
            ['tokenizer.kind is "sentencepiece"'],
            id="unknown-tokenizer-kind",
        ),
    ],
)
def test_verify_reports_a_damaged_folder_in_one_line(prepared, damage, fragments):
    damage(prepared)
    assert_clean_failure(run_verify(prepared), str(prepared), *fragments)


@pytest.mark.parametrize(
    "target, fragments",
    [
        pytest.param("meta.json", ["meta.json is a file", "give the folder"], id="a-file"),
        pytest.param("no-such-folder", ["no-such-folder is missing"], id="missing-folder"),
    ],
)
def test_verify_on_something_that_is_not_a_folder(prepared, target, fragments):
    assert_clean_failure(run_verify(prepared / target), *fragments)


def test_verify_warns_about_leftovers_but_passes_a_whole_folder(prepared):
    (prepared / ".prepare.4242.tmp").mkdir()
    (prepared / ".prepare.4242.tmp" / STAGING_MARKER).touch()  # what makes it provably ours
    (prepared / ".input.txt.4242.nanogpt-k3j9x_q2.tmp").write_text("half a download")
    result = run_verify(prepared)
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("warning: ") and len(result.stderr.splitlines()) == 1
    assert ".input.txt.4242.nanogpt-k3j9x_q2.tmp, .prepare.4242.tmp" in result.stderr
    assert "the next run into this folder removes them" in result.stderr
