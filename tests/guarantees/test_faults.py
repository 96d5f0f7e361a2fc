"""Faults, run for real: full and read-only file systems, SIGKILL at each step of a commit,
concurrent runs into one folder, and a table of hostile inputs for every script.

Each one drives the real scripts in fresh processes and then asks `verify` about the folder.
The promise checked everywhere: a folder is the old complete set, the new complete set, or a
folder `verify` reports as incomplete in one line; every failure is one `error:` line.
"""

import ctypes
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import (
    BPE,
    CHAR,
    COMMON,
    OWT,
    OWT_DATATROVE,
    REPO,
    TRAIN_TOKENIZER,
    assert_clean_failure,
    paused_command,
    tokenizer_file,
)

from formats import schema
from prepare_common import random_split
from safety import output_folder
from safety.commit import STAGING_MARKER, leftover_temporaries

# SIGKILL, SIGSTOP, process groups, file size limits: POSIX's faults (not on Windows)
resource = pytest.importorskip("resource", reason="these faults are POSIX's (not on Windows)")

pytestmark = pytest.mark.usefixtures("downloads")  # Tiny Shakespeare, GPT-2's files

PR_CAPBSET_DROP = 24  # prctl option, from <linux/prctl.h>


def run_script(script, *args, env=None, preexec_fn=None):
    """`python SCRIPT ARGS...` in a fresh process, with extra environment variables."""
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        preexec_fn=preexec_fn,
    )


def verify(folder):
    return run_script(COMMON, "verify", str(folder))


def words_text(characters, seed):
    """Deterministic text of about `characters` characters; each seed has its own alphabet."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"[: 10 + seed % 10]
    words = ["".join(rng.choices(letters, k=rng.randint(1, 8))) for _ in range(500)]
    out, size = [], 0
    while size < characters:
        line = " ".join(rng.choices(words, k=12)) + ".\n"
        out.append(line)
        size += len(line)
    return "".join(out)[:characters]


def write_text(path, characters, seed):
    path.write_text(words_text(characters, seed), encoding="utf-8")
    return path


OUTPUT_NAMES = ("train.bin", "val.bin", "meta.pkl", "meta.json")  # what nanoGPT's lessons write


def outputs(folder):
    """{name: sha256} of the outputs in `folder`: the set a run left there."""
    return {
        name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
        for name in OUTPUT_NAMES
        if (folder / name).is_file()
    }


def state_of(folder, old, new):
    """ "old", "new" or "incomplete"; fails if verify passes a mixed set or fails a whole one."""
    result = verify(folder)
    found = outputs(folder)
    assert "Traceback" not in result.stderr, result.stderr
    if found in (old, new):
        assert result.returncode == 0, result.stderr
        return "old" if found == old else "new"
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.returncode == 1 and len(errors) == 1, (found, result.stderr)
    assert "incomplete" in errors[0], errors[0]
    return "incomplete"


def start_paused(script, *args, step):
    """Start a run that stops itself (SIGSTOP) at `step` of its commit; wait until it has."""
    process = subprocess.Popen(
        paused_command(step, script, *args),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status = os.waitpid(process.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), f"the run ended before reaching {step!r}"
    return process


def sigkill(process):
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL


def remount_read_only(mount_point):
    subprocess.run(["mount", "-o", "remount,ro", str(mount_point)], check=True)


@pytest.fixture(scope="module")
def new_reference(tmp_path_factory):
    """The text of the "new" run, and the outputs it gives in a folder of its own."""
    folder = tmp_path_factory.mktemp("reference")
    new_text = write_text(folder / "new.txt", 60_000, seed=2)
    result = run_script(CHAR, "--input", str(new_text), "--out-dir", str(folder / "out"))
    assert result.returncode == 0, result.stderr
    return new_text, outputs(folder / "out")


@pytest.fixture
def two_runs(tmp_path, new_reference):
    """A folder holding a small prepared set ("old"), and the arguments of a bigger "new" run.

    -> (folder, old outputs, new_args, new outputs): the new outputs are what the new run
    writes in a folder of its own, so a test can tell old, new and mixed apart.
    """
    folder = tmp_path / "out"
    old_text = write_text(tmp_path / "old.txt", 20_000, seed=1)
    new_text, new = new_reference
    new_args = ["--input", str(new_text), "--out-dir", str(folder)]
    assert run_script(CHAR, "--input", str(old_text), "--out-dir", str(folder)).returncode == 0
    old = outputs(folder)
    assert set(old) == set(new) == {"train.bin", "val.bin", "meta.pkl", "meta.json"}
    assert all(old[name] != new[name] for name in old)
    return folder, old, new_args, new


# ---------------------------------------------------------------------------------------------
# SIGKILL at each step of a run


@pytest.mark.parametrize(
    "step, expected",
    [
        pytest.param("staged", "old", id="staged-old-meta-still-there"),
        pytest.param("uncommitted", "incomplete", id="old-meta-removed"),
        pytest.param("replaced", "incomplete", id="first-data-file-replaced"),
        pytest.param("committed", "new", id="new-meta-in-place"),
    ],
)
def test_sigkill_at_each_commit_step_leaves_old_new_or_incomplete(two_runs, step, expected):
    folder, old, new_args, new = two_runs
    sigkill(start_paused(CHAR, *new_args, step=step))
    assert state_of(folder, old, new) == expected
    if expected == "incomplete":
        assert "interrupted" in verify(folder).stderr
    # the next run cleans what the killed one left, and completes
    rerun = run_script(CHAR, *new_args)
    assert rerun.returncode == 0, rerun.stderr
    assert outputs(folder) == new
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []
    checked = verify(folder)
    assert checked.returncode == 0 and "warning" not in checked.stderr, checked.stderr


def test_sigkill_while_writing_leaves_the_old_set_and_verify_warns(two_runs):
    """Killed while the staging folder fills: old set intact, leftovers reported, then cleaned."""
    folder, old, new_args, new = two_runs
    process = subprocess.Popen(
        [sys.executable, str(CHAR), *new_args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while process.poll() is None and not any(folder.glob(".prepare.*.tmp/*")):
        pass  # poll: kill as soon as the first output appears in the staging folder
    sigkill(process)
    state = state_of(folder, old, new)
    assert state == "old"
    checked = verify(folder)
    assert "warning: " in checked.stderr and "leftover" in checked.stderr, checked.stderr
    assert run_script(CHAR, *new_args).returncode == 0
    assert outputs(folder) == new and not list(folder.glob(".*.tmp"))


STRACE = shutil.which("strace")


@pytest.mark.skipif(STRACE is None, reason="needs strace, to kill a run at its nth file removal")
@pytest.mark.parametrize("nth", [1, 2, 3, 4, 5])
def test_a_run_killed_removing_a_leftover_leaves_the_rest_a_leftover(two_runs, nth):
    """A run killed while it removed a killed run's staging folder had removed the marker first:
    the rest was no longer a leftover, never removed, and verify said OK. Killed at each removal,
    what remains is still a leftover (verify warns), and the next run removes it."""
    folder, old, new_args, new = two_runs
    leftover = folder / ".prepare.999999.tmp"
    leftover.mkdir()
    (leftover / STAGING_MARKER).touch()
    for name in ("train.bin", "val.bin", "meta.pkl", "meta.json"):
        (leftover / name).write_bytes(b"left")
    removals = "unlink,unlinkat,rmdir"
    killed = subprocess.run(
        [STRACE, "-f", "-qq", "-o", os.devnull, "-e", f"trace={removals}"]
        + ["-e", f"inject={removals}:signal=KILL:when={nth}", sys.executable, CHAR, *new_args],
        capture_output=True,
    )
    assert killed.returncode != 0, killed.stderr
    assert state_of(folder, old, new) == "old"
    staging = sorted(p.name for p in folder.glob(".prepare.*.tmp"))
    assert staging == [name for name in leftover_temporaries(folder) if name in staging]
    if staging:
        assert "leftover" in verify(folder).stderr
    assert run_script(CHAR, *new_args).returncode == 0
    assert outputs(folder) == new and not list(folder.glob(".*.tmp"))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_says_what_was_left(two_runs, signum):
    folder, old, new_args, new = two_runs
    process = subprocess.Popen(
        paused_command("staged", CHAR, *new_args),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal: a shell's background job (nohup, &) starts with Ctrl-C ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    _, status = os.waitpid(process.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status)
    process.send_signal(signum)  # delivered when the run continues: before anything is replaced
    process.send_signal(signal.SIGCONT)
    stderr = process.communicate()[1]
    assert process.returncode == 128 + signum, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "nothing was replaced" in lines[0]
    assert outputs(folder) == old and not list(folder.glob(".*.tmp"))


class Abort(Exception):
    pass


def test_workers_forked_during_a_run_die_of_sigterm_at_once(tmp_path):
    """While a run stages its outputs, SIGTERM raises Terminated in it; a worker it forks (a
    datasets map worker) keeps SIGTERM's default action. A Python handler there could miss the
    signal (one landing just before the worker blocks in its pool's queue lock is never
    handled), and datasets' Pool.terminate, after a worker raised, then waited for it forever."""
    with pytest.raises(Abort), output_folder(tmp_path / "out", schema):
        assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None)
        pid = os.fork()
        if pid == 0:  # the worker: report its SIGTERM action and leave at once
            os._exit(0 if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL else 1)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
        raise Abort  # nothing to commit
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # restored after the run


FORK_WITH_SIGTERM_IN_THE_WINDOW = """
import os, signal, sys
from safety.signals import sigterm_raises_terminated
# runs in the child before the project's own after-fork handler: a SIGTERM there, as
# Pool.terminate sends one to a worker forked an instant before
os.register_at_fork(after_in_child=lambda: os.kill(os.getpid(), signal.SIGTERM))
with sigterm_raises_terminated():
    pid = os.fork()
    if pid == 0:
        os._exit(0)  # the worker lived on: the SIGTERM was lost
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def test_a_sigterm_sent_while_a_worker_is_forked_ends_it():
    """CPython drops a signal that reaches a forked child before its after-fork handlers have run,
    and one that lands while they run is raised inside them, where it is ignored: the worker lived
    on, and datasets' Pool.terminate, which SIGTERMs workers right after a short map, waited for
    it forever. SIGTERM is blocked across the fork, so the worker dies of it."""
    run = subprocess.run(
        [sys.executable, "-c", FORK_WITH_SIGTERM_IN_THE_WINDOW],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.stdout.strip() == str(-signal.SIGTERM), run.stderr


# ---------------------------------------------------------------------------------------------
# two runs into one folder


def test_second_run_into_a_busy_folder_stops_naming_the_first(two_runs, tmp_path):
    folder, old, new_args, new = two_runs
    first = start_paused(CHAR, *new_args, step="staged")
    other = write_text(tmp_path / "other.txt", 5_000, seed=3)
    try:
        second = run_script(CHAR, "--input", str(other), "--out-dir", str(folder))
        assert_clean_failure(second, f"pid {first.pid}", str(CHAR), "another run")
        assert outputs(folder) == old
    finally:
        sigkill(first)  # the OS releases its lock
    assert run_script(CHAR, *new_args).returncode == 0
    assert outputs(folder) == new


def test_concurrent_runs_leave_one_complete_set(tmp_path):
    folder = tmp_path / "out"
    inputs = [write_text(tmp_path / f"{seed}.txt", 100_000, seed=seed) for seed in (4, 5)]
    expected = []
    for path in inputs:
        reference = tmp_path / f"reference-{path.stem}"
        run_script(CHAR, "--input", str(path), "--out-dir", str(reference))
        expected.append(outputs(reference))
    for _ in range(2):
        runs = [
            subprocess.Popen(
                [sys.executable, str(CHAR), "--input", str(path), "--out-dir", str(folder)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for path in inputs
        ]
        results = [(run.wait(), run.stderr.read()) for run in runs]
        for run in runs:
            run.stderr.close()
        assert any(code == 0 for code, _ in results)
        for code, stderr in results:
            assert code == 0 or ("another run" in stderr and stderr.count("\n") == 1), stderr
        assert verify(folder).returncode == 0
        assert outputs(folder) in expected


# ---------------------------------------------------------------------------------------------
# full and read-only file systems


def rlimit_file_size(limit):
    """Make the child's writes beyond `limit` bytes fail with EFBIG (Python ignores SIGXFSZ)."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.parametrize("fault", ["tmpfs-full", "rlimit-fsize"])
def test_no_space_fails_in_one_line_and_keeps_the_old_set(tmp_path, fault, request):
    if fault == "tmpfs-full":
        folder = request.getfixturevalue("tmpfs") / "out"
        preexec_fn, message = None, "No space left on device"
    else:
        folder = tmp_path / "out"
        preexec_fn, message = rlimit_file_size(300_000), "File too large"
    old_text = write_text(tmp_path / "old.txt", 20_000, seed=1)
    big_text = write_text(tmp_path / "big.txt", 550_000, seed=2)
    assert run_script(CHAR, "--input", str(old_text), "--out-dir", str(folder)).returncode == 0
    old = outputs(folder)
    result = run_script(
        CHAR, "--input", str(big_text), "--out-dir", str(folder), preexec_fn=preexec_fn
    )
    assert_clean_failure(result, message, str(folder))
    assert outputs(folder) == old and not list(folder.glob(".*.tmp"))
    assert verify(folder).returncode == 0


def test_read_only_folder_fails_in_one_line(tmpfs, tmp_path):
    folder = tmpfs / "out"
    text = write_text(tmp_path / "old.txt", 20_000, seed=1)
    assert run_script(CHAR, "--input", str(text), "--out-dir", str(folder)).returncode == 0
    old = outputs(folder)
    remount_read_only(tmpfs)
    result = run_script(CHAR, "--input", str(text), "--out-dir", str(folder))
    assert_clean_failure(result, "Read-only file system", str(folder))
    assert outputs(folder) == old and verify(folder).returncode == 0


def without_root_file_powers():
    """preexec_fn: drop CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER from the bounding set,
    so that the child, though root, meets file permissions as any user does."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2, 3):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_permission_denied_fails_in_one_line(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir(mode=0o555)
    text = write_text(tmp_path / "in.txt", 20_000, seed=1)
    if os.geteuid() == 0:
        try:
            subprocess.run(["true"], preexec_fn=without_root_file_powers, check=True)
        except subprocess.SubprocessError:
            pytest.skip("running as root without the right to drop capabilities (CAP_SETPCAP)")
        preexec_fn = without_root_file_powers
    else:
        preexec_fn = None
    result = run_script(CHAR, "--input", str(text), "--out-dir", str(folder), preexec_fn=preexec_fn)
    assert_clean_failure(result, "Permission denied", str(folder))
    assert list(folder.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# hostile inputs, for every script


def fifo(tmp):
    path = tmp / "fifo.txt"
    os.mkfifo(path)
    return path


def non_utf8_name(tmp):
    path = Path(os.fsdecode(bytes(tmp) + b"/caf\xe9.txt"))
    write_text(path, 2_000, seed=1)
    return path


def text(tmp, characters=2_000):
    return write_text(tmp / "in.txt", characters, seed=1)


def a_file(tmp):
    path = tmp / "a-file"
    path.write_text("x")
    return path


def folder_with_directory(tmp, name):
    folder = tmp / "out"
    (folder / name).mkdir(parents=True)
    return folder


def strict_vocab_empty_val(tmp):
    path = tmp / "in.txt"
    path.write_text("a" * 90 + "b" * 10)  # val is all "b", never seen in train
    return path


def docs(tmp):
    folder = tmp / "docs"
    folder.mkdir()
    for i in range(4):
        write_text(folder / f"{i}.txt", 500, seed=i)
    return str(folder / "*.txt")


MALFORMED_MIRROR = {"NANOGPT_DATA_MIRROR": "http://[::1"}


# (script, arguments made from tmp_path, extra environment, exit code, fragments of the line)
HOSTILE = [
    pytest.param(
        CHAR, lambda t: ["--input", fifo(t)], {}, 1, ["not a regular file"], id="char-input-fifo"
    ),
    pytest.param(
        CHAR,
        lambda _: ["--input", "/dev/fd/57"],
        {},
        1,
        ["/dev/fd/57"],
        id="char-input-closed-dev-fd",
    ),
    pytest.param(CHAR, lambda t: ["--input", t], {}, 1, ["is a folder"], id="char-input-folder"),
    pytest.param(
        CHAR,
        lambda t: ["--input", non_utf8_name(t)],
        {},
        1,
        ["not valid UTF-8", "caf"],
        id="char-input-non-utf8-name",
    ),
    pytest.param(
        CHAR,
        lambda t: ["--input", text(t), "--out-dir", a_file(t)],
        {},
        1,
        ["is a file"],
        id="char-out-dir-is-a-file",
    ),
    pytest.param(
        CHAR,
        lambda t: ["--input", text(t), "--out-dir", a_file(t) / "sub"],
        {},
        1,
        ["cannot create"],
        id="char-out-dir-under-a-file",
    ),
    pytest.param(
        CHAR,
        lambda t: ["--input", text(t), "--out-dir", folder_with_directory(t, "val.bin")],
        {},
        1,
        ["val.bin is a folder"],
        id="char-val-bin-is-a-folder",
    ),
    pytest.param(
        CHAR,
        lambda t: ["--input", text(t), "--out-dir", folder_with_directory(t, "meta.pkl")],
        {},
        1,
        ["meta.pkl is a folder"],
        id="char-meta-pkl-is-a-folder",
    ),
    pytest.param(
        CHAR,
        lambda t: [
            "--input",
            strict_vocab_empty_val(t),
            "--vocab-from",
            "train",
            "--unseen-in-val",
            "drop",
        ],
        {},
        1,
        ["val", "empty"],
        id="char-strict-vocab-leaves-val-empty",
    ),
    pytest.param(
        CHAR,
        lambda t: ["--out-dir", t / "out"],
        MALFORMED_MIRROR,
        1,
        ["NANOGPT_DATA_MIRROR", "http://[::1"],
        id="char-malformed-mirror-url",
    ),
    pytest.param(
        BPE,
        lambda t: ["--input", text(t)],
        {"NANOGPT_DATA_CACHE": "/etc/hostname", "TIKTOKEN_CACHE_DIR": ""},
        1,
        ["/etc/hostname", "NANOGPT_DATA_CACHE"],
        id="bpe-cache-dir-is-a-file",
    ),
    pytest.param(
        BPE,
        lambda t: ["--input", text(t)],
        {"TIKTOKEN_CACHE_DIR": "/etc/hostname"},
        1,
        ["/etc/hostname", "TIKTOKEN_CACHE_DIR"],
        id="bpe-tiktoken-cache-is-a-file",
    ),
    pytest.param(
        BPE,
        lambda t: ["--input", text(t), "--tokenizer", tokenizer_file(t / "tok.json", "(")],
        {},
        1,
        ["tok.json", "pattern"],
        id="bpe-pattern-does-not-compile",
    ),
    pytest.param(
        BPE,
        lambda t: ["--input", text(t), "--tokenizer", tokenizer_file(t / "tok.json", r"\w+")],
        {},
        1,
        ["in.txt: character 5 (' ') is in no pretoken", "tok.json", "would be lost"],
        id="bpe-pattern-does-not-cover-the-text",
    ),
    pytest.param(
        BPE, lambda t: ["--input", fifo(t)], {}, 1, ["not a regular file"], id="bpe-input-fifo"
    ),
    pytest.param(
        OWT,
        lambda _: ["--val-fraction", "nan"],
        {},
        2,
        ["--val-fraction", "nan"],
        id="owt-val-fraction-nan",
    ),
    pytest.param(
        OWT,
        lambda _: ["--val-fraction", "inf"],
        {},
        2,
        ["--val-fraction", "inf"],
        id="owt-val-fraction-inf",
    ),
    pytest.param(
        OWT,
        lambda _: ["--val-fraction", "-0.1"],
        {},
        2,
        ["--val-fraction"],
        id="owt-val-fraction-negative",
    ),
    pytest.param(OWT, lambda _: ["--seed", "-1"], {}, 2, ["--seed", "-1"], id="owt-seed-negative"),
    pytest.param(OWT, lambda _: ["--seed", str(2**32)], {}, 2, ["--seed"], id="owt-seed-too-large"),
    pytest.param(OWT, lambda _: ["--num-proc", "0"], {}, 2, ["--num-proc"], id="owt-num-proc-zero"),
    pytest.param(
        OWT,
        lambda t: ["--data-files", docs(t), "--cache-dir", a_file(t)],
        {},
        1,
        ["a-file", "--cache-dir"],
        id="owt-cache-dir-is-a-file",
    ),
    pytest.param(
        OWT,
        lambda t: ["--data-files", docs(t), "--out-dir", folder_with_directory(t, "val.bin")],
        {},
        1,
        ["val.bin is a folder"],
        id="owt-val-bin-is-a-folder",
    ),
    pytest.param(
        TRAIN_TOKENIZER,
        lambda t: ["--input", fifo(t), "--vocab-size", "300", "--out", t / "tok.json"],
        {},
        1,
        ["fifo.txt", "not a file"],
        id="train-tokenizer-input-fifo",
    ),
    pytest.param(
        TRAIN_TOKENIZER,
        lambda t: ["--input", text(t), "--vocab-size", "-5", "--out", t / "tok.json"],
        {},
        2,
        ["--vocab-size"],
        id="train-tokenizer-negative-vocab",
    ),
    pytest.param(
        TRAIN_TOKENIZER,
        lambda t: [
            "--input",
            text(t),
            "--vocab-size",
            "300",
            "--out",
            folder_with_directory(t, "x") / "x",
        ],
        {},
        1,
        ["is a folder"],
        id="train-tokenizer-out-is-a-folder",
    ),
]


# ---------------------------------------------------------------------------------------------
# nothing lost silently: a trained tokenizer's own pattern must keep every character


def has_datatrove():
    try:
        import datatrove  # noqa: F401
    except ImportError:
        return False
    return True


LOSSY_ROW = 13  # the first document with characters that r"\w+" leaves out


@pytest.mark.parametrize(
    "engine",
    [
        pytest.param("datasets", id="datasets-engine"),
        pytest.param(
            "datatrove",
            id="datatrove-engine",
            marks=pytest.mark.skipif(not has_datatrove(), reason="needs datatrove"),
        ),
    ],
)
def test_openwebtext_refuses_a_pattern_that_leaves_characters_out(tmp_path, engine):
    r"""A pattern that matches every character prepares the documents whole; r"\w+" (no spaces,
    no punctuation) is refused in one line naming the document, the character and the
    tokenizer file, and the previous outputs stay as they were."""
    documents = [f"word{i}" for i in range(LOSSY_ROW)] + ["a b, c!", "d e", "last"]
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"text": text}) + "\n" for text in documents))
    out = tmp_path / "out"
    args = ["--data-files", str(docs), "--out-dir", str(out), "--val-fraction", "0.2"]
    args += ["--tasks", "2", "--workers", "2"] if engine == "datatrove" else []
    env = {"HF_DATASETS_CACHE": str(tmp_path / "hf-cache")}

    covering = tokenizer_file(tmp_path / "covering.json", r"\w+|\W+")
    script = OWT_DATATROVE if engine == "datatrove" else OWT
    result = run_script(script, *args, "--tokenizer", str(covering), env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    old = outputs(out)
    ids = [np.fromfile(out / f"{split}.bin", dtype=np.uint16) for split in ("train", "val")]
    texts = bytes(np.concatenate(ids).astype(np.uint8)).split(bytes([0]))  # eot 256 -> 0
    assert sorted(texts[:-1]) == sorted(text.encode() for text in documents)

    lossy = tokenizer_file(tmp_path / "lossy.json", r"\w+")
    result = run_script(script, *args, "--tokenizer", str(lossy), env=env)
    if engine == "datasets":  # either lossy document may be met first: name its split and number
        splits = dict(zip(("train", "val"), random_split(len(documents), 0.2, 2357)))
        lossy_rows = (LOSSY_ROW, LOSSY_ROW + 1)
        wheres = [
            f"{docs}, {split} document {list(rows).index(row):,}"
            for split, rows in splits.items()
            for row in lossy_rows
            if row in rows
        ]
        where = next(w for w in wheres if w in result.stderr)
    else:
        where = (
            f"{docs}, the line at byte "
            f"{len(''.join(docs.read_text().splitlines(True)[:LOSSY_ROW]))}"
        )
    assert_clean_failure(
        result,
        f"{where}: character 1 (' ') is in no pretoken",
        str(lossy),
        "would be lost",
        logs_before=True,
    )
    assert outputs(out) == old and not leftover_temporaries(out)


@pytest.mark.parametrize("script, make_args, env, exit_code, fragments", HOSTILE)
def test_hostile_input_is_one_line(tmp_path, script, make_args, env, exit_code, fragments):
    args = [str(arg) for arg in make_args(tmp_path)]
    if script != TRAIN_TOKENIZER and "--out-dir" not in args:
        args += ["--out-dir", str(tmp_path / "out")]  # never the default, beside the script
    result = run_script(script, *args, env=env)
    assert result.returncode == exit_code, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    # datasets' progress bars may come first (openwebtext); the error is the one last line
    assert errors == lines[-1:] and (script == OWT or len(lines) == 1), result.stderr
    for fragment in fragments:
        assert fragment in lines[-1], lines[-1]
    for folder in (tmp_path / "out", tmp_path):  # nothing half-written, nothing left behind
        leftovers = [p.name for p in folder.glob("*") if p.suffix in (".bin", ".tmp")]
        assert not [name for name in leftovers if not (tmp_path / "out" / name).is_dir()]
