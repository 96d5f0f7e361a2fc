"""Issue 32, run for real: what a tampered record, a damaged archive and a full disk can still do.

Four causes, one section each, every item a test that drives the real commands in fresh
processes, with a victim file outside the folder that must stay as it was:

1. a record is input: every name a meta.json (or a commit's journal) lists is checked before
   anything is read, replaced or removed through it, and `verify` names the field;
2. an archive is read whole or refused: a damaged header, data before the end-of-archive
   blocks, extension headers bounded like members (memory flat on a 128 MB long name);
3. out of space is an error, never a signal: a lesson filling a real tmpfs stops in one line
   naming the file, the old set, the lock and no staging folder left;
4. small things: a closed stdout, numpy's warnings, an unlisted document index, --num-proc
   past the archive's members, --plot given a folder.
"""

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import REPO, assert_ok, assert_one_line, run

CHAR = REPO / "data" / "shakespeare_char" / "prepare.py"
OWT = REPO / "data" / "openwebtext" / "prepare.py"
TINYSTORIES = REPO / "data" / "tinystories" / "prepare.py"
COMMON = REPO / "prepare_common.py"
VICTIM = b"a file of the user's, outside the prepared folder\n"


def tree(folder):
    """Every path under `folder` -> its bytes (a file), its target (a link) or None (a folder)."""
    found = {}
    for path in sorted(Path(folder).rglob("*")):
        if path.is_symlink():
            found[path] = ("link", os.readlink(path))
        else:
            found[path] = path.read_bytes() if path.is_file() else None
    return found


def words(count, seed):
    import random

    rng = random.Random(seed)
    vocabulary = ["the", "king", "and", "queen", "of", "a", "land", "far", "away", "said"]
    return " ".join(rng.choice(vocabulary) for _ in range(count)) + "\n"


@pytest.fixture(scope="module")
def char_set(tmp_path_factory):
    """A character folder prepared from a small text, never changed."""
    base = tmp_path_factory.mktemp("char-set")
    text = base / "input.txt"
    text.write_text(words(4_000, 1), encoding="utf-8")
    assert_ok(run(CHAR, "--input", text, "--out-dir", base / "out"))
    return base / "out", text


@pytest.fixture
def work(char_set, tmp_path):
    """(a copy of the character folder, its input, the victim outside it)."""
    folder = tmp_path / "work" / "out"
    shutil.copytree(char_set[0], folder)
    victim = tmp_path / "work" / "victim.bin"
    victim.write_bytes(VICTIM)
    return folder, char_set[1], victim


def edit_meta(folder, change):
    meta = json.loads((folder / "meta.json").read_text())
    change(meta)
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))


# =============================================================================================
# 1. A record is input


def split_named(key):
    """A split record whose key makes its file name: "../victim" -> "../victim.bin"."""
    record = {"file": f"{key}.bin", "tokens": 10, "sha256": "0" * 64}
    return lambda meta, _victim: meta["splits"].update({key: record})


def relative_key(meta, victim):
    split_named("../victim")(meta, victim)


def absolute_key(meta, victim):
    split_named(str(victim.with_suffix("")))(meta, victim)


def absolute_index(meta, victim):
    meta["splits"]["train"]["index"] = {"file": str(victim), "documents": 1, "sha256": "0" * 64}


def separator(meta, _victim):
    meta["meta_pkl"]["file"] = "elsewhere/victim.bin"  # elsewhere: a link to the victim's folder


def nul(meta, victim):
    split_named("notes\u0000/../../victim")(meta, victim)


def wrong_suffix(meta, _victim):
    meta["format"] = "llmc"  # a shard set whose shard is the user's notes
    shard = {"split": "val", "tokens": 1, "sha256": "0" * 64}
    meta["shards"] = [
        {**shard, "file": "notes.txt"},
        {**shard, "file": "a_train_1.bin", "split": "train"},
    ]


RECORD_CASES = [
    pytest.param(relative_key, 'splits["../victim"].file', id="dot-dot"),
    pytest.param(absolute_key, "splits[", id="absolute-split"),
    pytest.param(absolute_index, "splits.train.index.file", id="absolute-index"),
    pytest.param(separator, "meta_pkl", id="separator"),
    pytest.param(nul, "splits[", id="nul"),
    pytest.param(wrong_suffix, "shards[0].file", id="wrong-suffix"),
]


@pytest.mark.parametrize("tamper, field", RECORD_CASES)
def test_a_tampered_record_is_refused_and_nothing_is_removed_through_it(work, tamper, field):
    """A meta.json written by hand naming a file outside the folder (or one of another form)
    made the next run delete it ("removed ../victim.bin, left by an earlier run"). Now the
    run and `verify` refuse the record in one line naming the field; every file, in the
    folder and out, stays as it was."""
    folder, text, victim = work
    (folder / "elsewhere").symlink_to(victim.parent)
    (folder / "notes.txt").write_bytes(b"my notes\n")
    edit_meta(folder, lambda meta: tamper(meta, victim))
    before = tree(folder.parent)
    result = run(CHAR, "--input", text, "--out-dir", folder)
    assert_one_line(result, folder / "meta.json", field, "nothing was read, replaced or removed")
    assert tree(folder.parent) == before
    assert victim.read_bytes() == VICTIM
    assert_one_line(run(COMMON, "verify", folder), field)
    assert tree(folder.parent) == before


@pytest.mark.parametrize(
    "owned",
    [
        pytest.param("../victim.bin", id="dot-dot"),
        pytest.param("{victim}", id="absolute"),
        pytest.param("elsewhere/victim.bin", id="separator"),
        pytest.param("victim\u0000.bin", id="nul"),
        pytest.param(".hidden", id="hidden"),
    ],
)
def test_a_tampered_journal_is_refused_and_nothing_is_removed_through_it(work, owned):
    """A folder whose commit was cut short has no meta.json, and its journal lists what it
    owns: a journal naming a file outside the folder is refused as meta.json is."""
    folder, text, victim = work
    (folder / "elsewhere").symlink_to(victim.parent)
    (folder / "meta.json").unlink()
    journal = {"owned": ["train.bin", owned.format(victim=victim)]}
    (folder / ".prepare.journal").write_text(json.dumps(journal))
    before = tree(folder.parent)
    result = run(CHAR, "--input", text, "--out-dir", folder)
    assert_one_line(result, folder / ".prepare.journal", "owned[1]", "nothing was read")
    assert tree(folder.parent) == before


def test_the_forms_a_record_allows_still_run(work):
    """A tokenizer or a source outside the folder is recorded by its absolute path: read, never
    owned; such a record and a rerun over it pass."""
    folder, text, victim = work
    edit_meta(folder, lambda meta: meta["source"].update(path=str(text)))
    assert_ok(run(COMMON, "verify", folder))
    assert_ok(run(CHAR, "--input", text, "--out-dir", folder))
    assert_ok(run(COMMON, "verify", folder))
    assert victim.read_bytes() == VICTIM and text.is_file()
