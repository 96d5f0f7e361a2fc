"""Leave nothing behind: a failed run leaves the folder as it found it, a clean one no lock file.

The lock file goes while its run still holds it; a run that locked a file no longer at the path
(removed so just after it opened it) locks the file there now instead (safety/commit.py's
`lock_file`): the stress test below runs two processes through the lock a thousand times each
and checks that no two ever hold it at once. train_tokenizer.py without --out writes into
data/tokenizers/, which git ignores.
"""

import os
import shutil
import subprocess
import sys

import pytest
from conftest import (
    OWT_DATATROVE,
    REPO,
    assert_clean_failure,
    files_in,
    hand_made_tokenizer,
    names_in,
    needs_datatrove,
    run_python,
    write_files,
)

import train_tokenizer
from safety import PrepareError
from safety.commit import LOCK_NAME, folder_lock

SCRIPT = REPO / "data" / "shakespeare_char" / "prepare.py"


def test_a_failed_first_run_removes_the_folders_it_created(tmp_path):
    out = tmp_path / "new" / "nested" / "out"
    result = run_python(SCRIPT, "--input", tmp_path / "missing.txt", "--out-dir", out)
    assert_clean_failure(result, "missing.txt", "does not exist")
    assert names_in(tmp_path) == []


def test_a_failed_run_leaves_an_existing_folder_as_it_was(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine\n", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    for folder in ("out", "empty"):
        result = run_python(
            SCRIPT, "--input", tmp_path / "missing.txt", "--out-dir", tmp_path / folder
        )
        assert_clean_failure(result, "does not exist")
    assert names_in(tmp_path / "out") == ["notes.txt"]
    assert names_in(tmp_path / "empty") == []


@needs_datatrove
@pytest.mark.parametrize(
    "before",
    [
        pytest.param(None, id="new-folder"),
        pytest.param({}, id="empty-folder"),
        pytest.param({"notes.txt": "mine\n"}, id="folder-with-a-file"),
    ],
)
def test_a_failed_datatrove_run_leaves_the_folder_as_it_found_it(tmp_path, before):
    """The datatrove twin refusing its input in the plan stage, once its tokenize task wrote its
    work: the work directory it made goes, with the folders it made; a folder that was there is
    left as it was."""
    hand_made_tokenizer([(b"t", b"h")], ["<|endoftext|>"]).save(tmp_path / "tok.json")
    (tmp_path / "docs.jsonl").write_text('{"text": "the first"}\n{"url": "u"}\n')
    out = tmp_path / "new" / "out"
    if before is not None:
        out.mkdir(parents=True)
        write_files(out, before)
    found = files_in(tmp_path)
    args = ["--data-files", tmp_path / "docs.jsonl", "--tokenizer", tmp_path / "tok.json"]
    result = run_python(OWT_DATATROVE, *args, "--out-dir", out, env={"PYTHONPATH": str(REPO)})
    assert_clean_failure(result, "documents have a missing or non-string 'text'", logs_before=True)
    assert files_in(tmp_path) == found


def test_a_clean_run_leaves_no_lock_file(tmp_path):
    (tmp_path / "abba.txt").write_text("ABBA" * 10, encoding="utf-8")
    result = run_python(SCRIPT, "--input", tmp_path / "abba.txt", "--out-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert names_in(tmp_path / "out") == [
        "meta.json",
        "meta.pkl",
        "token_bytes.npy",
        "train.bin",
        "val.bin",
        "val_bytes.bin",
    ]
    assert run_python("prepare_common.py", "verify", tmp_path / "out", cwd=REPO).returncode == 0


def test_a_block_that_fails_in_process_removes_the_folder_it_created(tmp_path):
    with pytest.raises(PrepareError), folder_lock(tmp_path / "a" / "b") as folder:
        assert names_in(folder) == [LOCK_NAME]
        raise PrepareError("stop")
    assert names_in(tmp_path) == []
    with folder_lock(tmp_path / "a" / "b") as folder:  # a clean end keeps the folder, not the lock
        pass
    assert names_in(folder) == []


STRESS = """
import os, sys, time
from safety.commit import FolderBusy, folder_lock
folder, me, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
held = 0
for _ in range(rounds):
    try:
        with folder_lock(folder):
            # exclusive creation: it fails if the other process holds the lock too
            fd = os.open(os.path.join(folder, "holder"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            os.write(fd, me.encode())
            time.sleep(0.0002)
            os.close(fd)
            os.unlink(os.path.join(folder, "holder"))
            held += 1
    except FolderBusy:
        pass
print(held)
"""


def test_two_runs_never_hold_the_lock_at_once(tmp_path):
    """Each round a process locks, removes the lock file as it ends, and the other locks again:
    without the check that the file locked is still the one at the path, a process that opened
    the old file locks it after its removal while the other locks the new one."""
    (tmp_path / "out").mkdir()
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", STRESS, str(tmp_path / "out"), name, "1500"],
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    results = [run.communicate(timeout=300) for run in runs]
    for run, (stdout, stderr) in zip(runs, results):
        assert run.returncode == 0, stderr  # FileExistsError: both held the lock
        assert int(stdout) > 0
    assert names_in(tmp_path / "out") == []


@pytest.mark.parametrize(
    "inputs, name",
    [
        pytest.param(
            ["data/shakespeare_char/input.txt"], "shakespeare_char-4096.json", id="input.txt"
        ),
        pytest.param(["notes/corpus.txt"], "corpus-4096.json", id="a-text"),
    ],
)
def test_train_tokenizer_writes_into_an_ignored_folder_by_default(inputs, name):
    args = train_tokenizer.parse_args(["--input", *inputs, "--vocab-size", "4096"])
    assert (
        train_tokenizer.default_out(args.input, args.vocab_size)
        == REPO / "data" / "tokenizers" / name
    )
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", f"data/tokenizers/{name}"], cwd=REPO, check=False
    )
    assert ignored.returncode == 0  # git ignores it


def test_train_tokenizer_without_out(tmp_path):
    (tmp_path / "input.txt").write_text("some ordinary text " * 20, encoding="utf-8")
    script = tmp_path / "repo" / "train_tokenizer.py"  # a copy: the data/tokenizers/ beside it
    script.parent.mkdir()  # is the test's, not the work tree's
    shutil.copy(REPO / "train_tokenizer.py", script)
    out = script.parent / "data" / "tokenizers" / f"{tmp_path.name}-300.json"
    result = run_python(
        script,
        "--input",
        tmp_path / "input.txt",
        "--vocab-size",
        300,
        env={"PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == f"wrote {out}"
    assert out.is_file()
