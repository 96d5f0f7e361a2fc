"""The lessons run on Windows and macOS: proved here by hiding what those systems lack.

Each command runs twice in a fresh process, in the same folder on the same inputs: once as it
is, once with tests/stand_ins/windows_like/sitecustomize.py started first in every Python process
(the command's and its workers'): no fcntl (the folder commit then locks with msvcrt.locking,
emulated on this machine's POSIX locks), no signal.pthread_sigmask, no os.sched_getaffinity, and
every process pool (multiprocessing, and the `multiprocess` of datasets and datatrove) starting its
workers with spawn, as on macOS and Windows, not fork. The outputs and stdout must be the same
bytes.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CHAR, REPO, WINDOWS_LIKE, needs_datatrove, paused_command

# on Windows itself the lessons run as they are (CI); the stand-in builds msvcrt on fcntl
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Windows runs the real thing")
EOT = "<|endoftext|>"

CASES = [
    pytest.param(["data/shakespeare_char/prepare.py", "--out-dir", "out"], id="shakespeare_char"),
    pytest.param(
        ["data/shakespeare/prepare.py", "--input", "small.txt", "--out-dir", "out"],
        id="shakespeare",
    ),
    pytest.param(
        ["data/openwebtext/prepare.py", "--data-files", "docs.jsonl", "--num-proc", "2"]
        + ["--val-fraction", "0.01", "--out-dir", "out"],
        id="openwebtext",
    ),
    pytest.param(
        ["data/openwebtext/prepare_datatrove.py", "--data-files", "docs.jsonl", "--tasks", "2"]
        + ["--workers", "2", "--val-fraction", "0.01", "--out-dir", "out"],
        id="openwebtext-datatrove",
        marks=needs_datatrove,
    ),
    pytest.param(
        ["data/fineweb/prepare.py", "--data-files", "docs.jsonl", "--num-proc", "2"]
        + ["--shard-size", "10000", "--out-dir", "out"],
        id="fineweb",
    ),
    pytest.param(
        ["data/fineweb/prepare_datatrove.py", "--data-files", "docs.jsonl", "--tasks", "2"]
        + ["--workers", "2", "--shard-size", "10000", "--out-dir", "out"],
        id="fineweb-datatrove",
        marks=needs_datatrove,
    ),
    pytest.param(
        ["train_tokenizer.py", "--input", "small.txt", "--workers", "2", "--vocab-size", "400"]
        + ["--special-tokens", EOT, "--out", "tok.json"],
        id="train_tokenizer",
    ),
    pytest.param(
        ["train_tokenizer.py", "--input", "small.txt", "--workers", "2", "--vocab-size", "400"]
        + ["--special-tokens", EOT, "--out", "tok.json", "--engine", "datatrove"],
        id="train_tokenizer-datatrove",
        marks=needs_datatrove,
    ),
]
# not compared: the lock file records the pid, the work folders datatrove's timed logs
NOT_COMPARED = {".prepare.lock", ".datatrove-work"}


@pytest.fixture(scope="module")
def inputs(shakespeare, gpt2_encoding, tmp_path_factory):  # noqa: ARG001 (GPT-2's files fetched)
    """small.txt (100 KB of Tiny Shakespeare) and docs.jsonl (600 of its paragraphs)."""
    folder = tmp_path_factory.mktemp("inputs")
    (folder / "small.txt").write_text(shakespeare[:100_000], encoding="utf-8")
    paragraphs = [p for p in shakespeare.split("\n\n") if p.strip()][:600]
    with open(folder / "docs.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"text": p}) + "\n" for p in paragraphs)
    return folder


def run(args, cwd, windows_like, hf_cache):
    """Run the command in `cwd`; -> (stdout, {path: bytes} of every file it wrote), all removed."""
    before = set(os.listdir(cwd))
    paths = [str(WINDOWS_LIKE)] if windows_like else []
    paths += [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "HF_DATASETS_CACHE": str(hf_cache)}
    result = subprocess.run(
        [sys.executable, str(REPO / args[0]), *args[1:]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    written = {}
    for name in set(os.listdir(cwd)) - before:
        path = cwd / name
        walk = os.walk(path) if path.is_dir() else [(cwd, [], [name])]
        for root, folders, files in [] if name in NOT_COMPARED else walk:
            folders[:] = [f for f in folders if f not in NOT_COMPARED]
            for file in set(files) - NOT_COMPARED:
                written[str(Path(root, file).relative_to(cwd))] = Path(root, file).read_bytes()
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    # the training's time, and nothing else, may differ
    stdout = re.sub(r"merges in \S+ s \(\S+ merges/s\)", "merges in T", result.stdout)
    return stdout, written


@pytest.mark.slow
@pytest.mark.parametrize("args", CASES)
def test_same_bytes_without_fcntl_sigmask_affinity_and_fork(args, inputs, tmp_path):
    cwd = tmp_path / "run"
    shutil.copytree(inputs, cwd)
    stdout, written = run(args, cwd, windows_like=False, hf_cache=tmp_path / "hf-posix")
    assert written, stdout
    windows_stdout, windows_written = run(
        args, cwd, windows_like=True, hf_cache=tmp_path / "hf-windows"
    )
    assert windows_stdout == stdout
    assert sorted(windows_written) == sorted(written)
    for name, data in written.items():
        assert windows_written[name] == data, name


def test_the_windows_like_processes_lack_what_windows_lacks(tmp_path):
    """The wrapper does hide them; a second process sees the folder's lock through msvcrt."""
    check = """
import multiprocessing, os, signal, subprocess, sys
import safety.commit
try:
    import fcntl
except ImportError:
    pass
else:
    sys.exit("fcntl is importable")
assert not hasattr(signal, "pthread_sigmask") and not hasattr(os, "sched_getaffinity")
assert multiprocessing.get_start_method() == "spawn"
with safety.commit.folder_lock(sys.argv[1]):
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            "import safety.commit, sys; print(safety.commit.lock_holder(sys.argv[1]))",
            sys.argv[1],
        ],
        capture_output=True, text=True, check=True,
    )
    print(other.stdout, end="")
print(safety.commit.lock_holder(sys.argv[1]))
"""
    paths = [str(WINDOWS_LIKE), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    result = subprocess.run(
        [sys.executable, "-c", check, str(tmp_path / "out")],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    holder, after = result.stdout.splitlines()
    assert re.fullmatch(r"pid \d+: python\S* -c .*out", holder), holder
    assert after == "None"


@pytest.mark.parametrize("windows_like", [True, False], ids=["windows-like", "posix"])
def test_ctrl_c_during_the_renames_is_held_back(tmp_path, windows_like):
    """Ctrl-C while the old meta.json is gone and the new files are being renamed in: handlers
    that note it hold it back; it is raised once the new set is complete. A signal mask would
    not do on POSIX: the kernel may hand the signal to one of numpy's BLAS threads, which do not
    block it, and Python then runs the handler in the main thread at once."""
    import signal

    (tmp_path / "abba.txt").write_text("ABBA" * 10, encoding="utf-8")
    paths = [str(WINDOWS_LIKE)] if windows_like else []
    paths += [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    process = subprocess.Popen(
        paused_command("uncommitted", CHAR, "--input", tmp_path / "abba.txt")
        + ["--out-dir", str(tmp_path / "out")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal
    )
    _, status = os.waitpid(process.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), "the run ended before its renames"
    process.send_signal(signal.SIGINT)  # delivered when it continues, mid-commit
    process.send_signal(signal.SIGCONT)
    stderr = process.communicate(timeout=120)[1]
    assert process.returncode == 130, stderr
    assert (
        stderr == f"error: interrupted after the new outputs in {tmp_path / 'out'} were complete\n"
    )
    verify = subprocess.run(
        [sys.executable, str(REPO / "prepare_common.py"), "verify", str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert verify.returncode == 0, verify.stderr
