"""What the test files share, imported by name (`from conftest import REPO, run_python`) or, for
fixtures, found by pytest.

Paths: REPO (the repo's folder), REFERENCES (tests/references: the other projects' scripts the
tests run as oracles), SLURM and WINDOWS_LIKE (tests/stand_ins: a stand-in sbatch/scontrol/srun,
and a sitecustomize.py hiding what Windows lacks); COMMON, TRAIN_TOKENIZER, CHAR, BPE, OWT and
OWT_DATATROVE (the scripts many files run). pyproject.toml puts tests/references and
tests/stand_ins on sys.path, so their modules import by name (`from hub_server import LocalHub`).

Helpers: run_python (a script in a fresh process, as a user runs it);
assert_clean_failure (exit 1, one `error:` line, no traceback); assert_refused (a bad-input case:
lay out files, run, a clean failure, the folder untouched); names_in, files_in, write_files,
write_jsonl (folders and files of a case); send (an answer of the HTTP server); run, start,
finish, assert_one_line, assert_ok (a command in a session of its own, and what it left running);
hand_made_tokenizer (a bpe.Tokenizer from merges written by hand).

Fixtures: shakespeare_path, shakespeare (Tiny Shakespeare), paragraphs and corpus (documents made
of its paragraphs), gpt2_encoding (tiktoken's GPT-2), gpt2_files (GPT-2's own two files), server
(a real HTTP server on 127.0.0.1), trained (a 1,000-id BPE trained on Tiny Shakespeare),
openwebtext_hub (a local Hugging Face hub, tests/stand_ins/hub_server.py, holding a small
OpenWebText), tmpfs and small_tmpfs (real 1 MB and 64 KB tmpfs mounts, for a disk that fills up);
tokenizer_file (a byte-level tokenizer file with a given pattern). The
inputs come through the project's own `fetch`, so with NANOGPT_DATA_MIRROR set (as CI does) no
test touches the network.
"""

import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import re
import runpy
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
from hub_server import LocalHub, openwebtext_files

import formats.tokenizers
from formats.tokenizers import GPT2_ENCODER_JSON, GPT2_VOCAB_BPE
from safety import fetch

REPO = Path(__file__).resolve().parents[1]
REFERENCES = REPO / "tests" / "references"
SLURM = REPO / "tests" / "stand_ins" / "slurm"
WINDOWS_LIKE = REPO / "tests" / "stand_ins" / "windows_like"
PAUSED = REPO / "tests" / "stand_ins" / "paused.py"  # a run that stops itself mid-commit
# The scripts many test files run: the shared commands and the lessons' own.
COMMON = REPO / "prepare_common.py"
TRAIN_TOKENIZER = REPO / "train_tokenizer.py"
CHAR = REPO / "data" / "shakespeare_char" / "prepare.py"
BPE = REPO / "data" / "shakespeare" / "prepare.py"
OWT = REPO / "data" / "openwebtext" / "prepare.py"
OWT_DATATROVE = REPO / "data" / "openwebtext" / "prepare_datatrove.py"


def paused_command(step, script, *args):
    """The command that runs `script` with `args`, stopping itself (SIGSTOP) at `step` of its
    folder commit: "staged", "uncommitted", "replaced" or "committed"
    (tests/stand_ins/paused.py)."""
    return [sys.executable, str(PAUSED), step, str(script), *map(str, args)]


# A test of the datatrove engine, an optional extra: skipped, saying why, where it is not installed.
needs_datatrove = pytest.mark.skipif(
    importlib.util.find_spec("datatrove") is None,
    reason="needs datatrove: pip install -e '.[scale]'",
)


@pytest.hookimpl(trylast=True)  # after pytest's own tmp_path_factory is made
def pytest_configure(config):
    """The suite writes only under pytest's temporary folders: HOME is one of them, so every
    cache a library keeps there (datasets', the hub's, Ray's, matplotlib's, our downloads'
    ~/.cache/nanogpt-data unless NANOGPT_DATA_CACHE names another) starts empty and stays there.
    Set before the test files are collected: `datasets` reads its cache folder at import."""
    home = config._tmp_path_factory.mktemp("home", numbered=False)
    os.environ["HOME"] = os.environ["USERPROFILE"] = str(home)
    for variable in ("HF_HOME", "HF_DATASETS_CACHE", "HF_HUB_CACHE", "XDG_CACHE_HOME"):
        os.environ.pop(variable, None)  # each defaults to a folder under HOME


@functools.cache
def lesson(name):
    """The names a lesson defines (its pins, its options), its file run as a module, not as a
    script: lesson("shakespeare_char")["TINY_SHAKESPEARE"]."""
    return runpy.run_path(str(REPO / "data" / name / "prepare.py"))


TINY_SHAKESPEARE = lesson("shakespeare_char")["TINY_SHAKESPEARE"]


def run_python(script, *args, cwd=None, env=None):
    """Run `python SCRIPT ARGS...` in a fresh process, as a user would; capture its output.

    `env` adds variables to this process's environment (e.g. {"HF_DATASETS_CACHE": ...}).
    """
    return subprocess.run(
        [sys.executable, str(script), *map(str, args)],
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
        capture_output=True,
        text=True,
    )


def assert_clean_failure(result, *fragments, logs_before=False):
    """Exit code 1 and one `error: ...` line on stderr holding each fragment; no traceback.

    The error line is the only line on stderr; with logs_before=True, progress bars and logs of a
    library (datasets) may come before it, but it is still the last line and the only error.
    """
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.rstrip("\n").split("\n")
    assert lines[-1].startswith("error: "), result.stderr
    assert sum(line.startswith("error: ") for line in lines) == 1, result.stderr
    if not logs_before:
        assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[-1], lines[-1]


def assert_refused(script, folder, files, args, fragments, env=None, logs_before=False):
    """Lay out `files` in `folder`, run the script there with `args` (a bad-input case): it must
    fail cleanly (`assert_clean_failure`) and leave every file in `folder` as it was."""
    write_files(folder, files)
    before = files_in(folder)
    result = run_python(script, *args, cwd=folder, env=env)
    assert_clean_failure(result, *fragments, logs_before=logs_before)
    assert files_in(folder) == before


def names_in(folder):
    """The sorted names in a folder: what a user would see with `ls` (temporary files included)."""
    return sorted(p.name for p in Path(folder).iterdir())


def files_in(folder):
    """Every file under `folder` and its bytes, and every folder: {Path("out/train.bin"): b"...",
    Path("out"): None, ...}. A failed run leaves it as it was: no output, no lock file, and no
    folder it created (see safety.commit's folder_lock)."""
    return {
        p.relative_to(folder): p.read_bytes() if p.is_file() else None
        for p in Path(folder).rglob("*")
    }


def write_files(folder, files):
    """Lay out a bad-input case: {"x.jsonl": text or bytes, "tok.json": a function(path)}."""
    for name, content in files.items():
        path = Path(folder) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if callable(content):
            content(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Downloads (Tiny Shakespeare, GPT-2's files) come from NANOGPT_DATA_MIRROR or the network. With
# neither, what needs them skips with one reason, found once; NANOGPT_REQUIRE_DATA=1 (CI) turns
# that skip into a failure, so a run can never pass by skipping them.

REQUIRE_DATA_ENV = "NANOGPT_REQUIRE_DATA"


@functools.cache
def downloads_unavailable():
    """Why the downloads cannot work here, or None: a mirror is set, or the origin answers."""
    if os.environ.get("NANOGPT_DATA_MIRROR", "").strip():
        return None
    try:
        requests.head(TINY_SHAKESPEARE.url, timeout=5)
    except requests.RequestException:
        host = urlsplit(TINY_SHAKESPEARE.url).hostname
        return f"no network ({host} unreachable) and no NANOGPT_DATA_MIRROR (docs/offline.md)"
    return None


def require_downloads():
    """Call first in a test or fixture that downloads: skip it when the downloads cannot work
    here, or fail it under NANOGPT_REQUIRE_DATA=1."""
    reason = downloads_unavailable()
    if reason is not None:
        if os.environ.get(REQUIRE_DATA_ENV) == "1":
            pytest.fail(f"{REQUIRE_DATA_ENV}=1, but {reason}", pytrace=False)
        pytest.skip(reason)


@pytest.fixture(scope="session")
def downloads():
    """A test module whose tests download says
    `pytestmark = pytest.mark.usefixtures("downloads")`."""
    require_downloads()


@pytest.fixture(scope="session")
def shakespeare_path(tmp_path_factory):
    """Tiny Shakespeare's input.txt (1,115,394 characters), fetched and checksummed once per run."""
    require_downloads()
    return fetch(TINY_SHAKESPEARE, tmp_path_factory.mktemp("ts") / "input.txt")


@pytest.fixture(scope="session")
def shakespeare(shakespeare_path):
    """Tiny Shakespeare's text."""
    return shakespeare_path.read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def gpt2_encoding():
    """tiktoken's GPT-2 Encoding (50,257 ids), its files fetched through the project's `fetch`."""
    require_downloads()
    return formats.tokenizers.gpt2_encoding()


@pytest.fixture(scope="session")
def gpt2_files(tmp_path_factory):
    """GPT-2's own (encoder.json, vocab.bpe), fetched and checksummed: for
    Tokenizer.from_gpt2_files."""
    require_downloads()
    folder = tmp_path_factory.mktemp("gpt2")
    return fetch(GPT2_ENCODER_JSON, folder / "encoder.json"), fetch(
        GPT2_VOCAB_BPE, folder / "vocab.bpe"
    )


def write_jsonl(path, documents):
    """Documents as a .jsonl file, one {"text": ...} per line, as --data-files reads them."""
    with open(path, "w", encoding="utf-8") as f:
        for document in documents:
            f.write(json.dumps({"text": document}) + "\n")
    return path


@pytest.fixture(scope="session")
def paragraphs(shakespeare):
    """Tiny Shakespeare's paragraphs (7,222 of them): real text for real documents."""
    return [p for p in shakespeare.split("\n\n") if p.strip()]


@pytest.fixture(scope="session")
def corpus(paragraphs, tmp_path_factory):
    """A folder of 3 .jsonl files holding the first 3,000 paragraphs, and those documents."""
    folder = tmp_path_factory.mktemp("corpus")
    documents = paragraphs[:3000]
    for i in range(3):
        write_jsonl(folder / f"part-{i}.jsonl", documents[i * 1000 : (i + 1) * 1000])
    return folder, documents


# ---------------------------------------------------------------------------------------------
# A real HTTP server on 127.0.0.1 whose paths each have a behaviour: server.routes[path] is a
# function (handler, attempt) that answers; any other path gets a 404.


class _Handler(BaseHTTPRequestHandler):
    """Looks up `self.path` in the server's routes; counts every request per path."""

    def do_GET(self):
        with self.server.lock:
            self.server.hits[self.path] += 1
            attempt = self.server.hits[self.path]
        route = self.server.routes.get(self.path)
        if route is None:
            send(self, 404, b"<html>404 Not Found</html>")
        else:
            route(self, attempt)

    def log_message(self, *args):
        pass  # keep pytest's output clean


def send(handler, status, body, headers=()):
    handler.send_response(status)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in headers:
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.routes = {}
    httpd.hits = Counter()
    httpd.lock = threading.Lock()
    httpd.release = threading.Event()  # lets stalled handlers finish at teardown
    httpd.base = f"http://127.0.0.1:{httpd.server_port}"
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
    )
    thread.start()
    yield httpd
    httpd.release.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def hand_made_tokenizer(merges, special_tokens=None, pattern="gpt2"):
    """A bpe.Tokenizer from merges written by hand:
    [(b"h", b"e"), (b"he", b"l")] -> ids 256, 257."""
    from bpe import Tokenizer

    vocab = {b: bytes([b]) for b in range(256)}
    for i, (a, b) in enumerate(merges):
        vocab[256 + i] = a + b
    return Tokenizer(vocab, merges, special_tokens, pattern)


@pytest.fixture(scope="session")
def trained(shakespeare):
    """A bpe.Tokenizer of 1,000 ids learned from Tiny Shakespeare's first 200,000 characters,
    with <|endoftext|> as the last id (999)."""
    from bpe import EOT, Tokenizer, train_bpe_from_iterator

    vocab, merges = train_bpe_from_iterator([shakespeare[:200_000]], 1000, special_tokens=[EOT])
    return Tokenizer(vocab, merges, special_tokens=[EOT])


# ---------------------------------------------------------------------------------------------
# A local Hugging Face hub holding a small OpenWebText (tests/stand_ins/hub_server.py)


@dataclass
class OpenWebTextRepo:
    commits: dict  # {commit sha: {path: bytes}}
    refs: dict  # {"main": sha}
    local_files: Path  # the pinned commit's parquet files on disk, for --data-files
    documents: list  # every document of the pinned commit, in file order
    repo: str
    revision: str  # the pinned HUB_REVISION
    config: str


@dataclass
class OpenWebTextHub(OpenWebTextRepo):
    # always given; the defaults only let these fields follow the repo's (Python 3.9 dataclasses)
    hub: LocalHub = None  # the server; hub.requests and hub.unknown log what the clients asked
    env: dict = None  # HF_ENDPOINT and fresh caches, for run_python(..., env=env)


@pytest.fixture(scope="session")
def openwebtext_repo(paragraphs, tmp_path_factory):
    """OpenWebText's repo at the pinned revision of data/openwebtext/prepare.py, made small.

    600 Tiny Shakespeare paragraphs in 3 parquet files of 150, 250 and 200 documents, laid out as
    the real repo's (plain_text/train-0000N-of-00080.parquet); `main` is another commit holding
    the documents in reverse order, so a run that does not follow the pin writes other bytes.
    """
    pin = lesson("openwebtext")["OPENWEBTEXT"]
    repo, revision, config = pin.repo, pin.revision, pin.config
    documents = paragraphs[:600]
    files = openwebtext_files(documents, [150, 250, 200], config=config)
    main_commit = hashlib.sha1(b"another commit").hexdigest()
    commits = {
        revision: files,
        main_commit: openwebtext_files(documents[::-1], [200, 250, 150], config=config),
    }
    local = tmp_path_factory.mktemp("openwebtext-repo")
    for path, data in files.items():
        (local / path).parent.mkdir(parents=True, exist_ok=True)
        (local / path).write_bytes(data)
    return OpenWebTextRepo(
        commits, {"main": main_commit}, local / config, documents, repo, revision, config
    )


@pytest.fixture
def openwebtext_hub(openwebtext_repo, tmp_path):
    """A local hub serving `openwebtext_repo`, and a client environment with empty caches.

    Clients reach it through HF_ENDPOINT, as they would reach a mirror of the hub. A test may
    break this hub (hub.commits.pop(revision), hub.blobs.clear()): each test gets its own.
    """
    owt = openwebtext_repo
    with LocalHub(owt.repo, dict(owt.commits), refs=owt.refs) as hub:
        yield OpenWebTextHub(**vars(owt), hub=hub, env=hub.environment(tmp_path / "hub-client"))


@contextlib.contextmanager
def mounted_tmpfs(mount_point, options):
    """A real tmpfs mounted at `mount_point` for the block, with mount `options` ("size=1m",
    "size=1m,nr_inodes=4"); the test skips where mounting is not permitted (not root)."""
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=True)


@pytest.fixture
def tmpfs(tmp_path):
    """A real 1 MB tmpfs: a disk that fills up."""
    with mounted_tmpfs(tmp_path / "tmpfs", "size=1m") as mount:
        yield mount


@pytest.fixture
def small_tmpfs(tmp_path):
    """A real 64 KB tmpfs: a disk that fills up at once."""
    with mounted_tmpfs(tmp_path / "tmpfs", "size=64k") as mount:
        yield mount


def tokenizer_file(path, pattern):
    """A byte-level tokenizer file (no merges, <|endoftext|> = 256) with the given pattern."""
    from bpe.io import render_token

    path.write_text(
        json.dumps(
            {
                "format": "nanogpt-bpe-tokenizer",
                "version": 1,
                "pattern": pattern,
                "special_tokens": {"<|endoftext|>": 256},
                "single_bytes": "".join(render_token(bytes([i])) for i in range(256)),
                "merges": [],
            }
        ),
        encoding="utf-8",
    )
    return path


# ---------------------------------------------------------------------------------------------
# running a command as a user does, and finding what it left running


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    left: list  # [(pid, command line)] of the processes of its session still alive after it


def run(*command, timeout=120, env=None, preexec_fn=None, cwd=None):
    """`python COMMAND...` in a session of its own (its pid is the group's); a hang fails.

    `command` holds paths, strings or bytes (a non-UTF-8 argument). Output goes to files, not
    pipes, so that a process left behind holding them cannot block the test.
    """
    process = start(*command, env=env, preexec_fn=preexec_fn, cwd=cwd)
    return finish(process, timeout)


def start(*command, env=None, preexec_fn=None, cwd=None):
    def child():
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # as from a terminal
        if preexec_fn:
            preexec_fn()

    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # noqa: SIM115 (closed by read)
    process = subprocess.Popen(
        [sys.executable, *(a if isinstance(a, bytes) else str(a) for a in command)],
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=err,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        start_new_session=True,
        preexec_fn=child,
    )
    process.files = out, err
    return process


def finish(process, timeout):
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        kill_session(process.pid)
        process.wait()
        pytest.fail(f"still running after {timeout} s (a hang): {read(process.files[1])[-2000:]}")
    left = session_processes(process.pid, grace=3)
    kill_session(process.pid)
    return Run(process.returncode, read(process.files[0]), read(process.files[1]), left)


def read(file):
    file.seek(0)
    text = file.read().decode(errors="replace")
    file.close()
    return text


def session_processes(session, grace=0.0):
    """[(pid, command)] of the live processes of `session` (from /proc), after up to `grace` s."""
    deadline = time.monotonic() + grace
    while True:
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat_line = Path(f"/proc/{entry}/stat").read_text()
                command = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            fields = stat_line.rsplit(")", 1)[1].split()  # state ppid pgrp session ...
            if int(fields[3]) == session and fields[0] != "Z":
                found.append((int(entry), command.replace(b"\0", b" ").decode(errors="replace")))
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def kill_session(session):
    for pid, _ in session_processes(session):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def assert_one_line(result, *fragments, code=1, alone=True, absent=(), limit=None):
    """Exit `code` (or one of a tuple), one `error:` line (the last; `alone`: the only line)
    holding each fragment and none of `absent`, at most `limit` characters long; no traceback,
    no process left behind. Returns the line."""
    codes = code if isinstance(code, tuple) else (code,)
    assert result.returncode in codes, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    lines = result.stderr.rstrip("\n").split("\n")
    assert lines[-1].startswith("error: "), result.stderr[-3000:]
    assert sum(line.startswith("error: ") for line in lines) == 1, result.stderr[-3000:]
    if alone:
        assert len(lines) == 1, result.stderr[-3000:]
    for fragment in fragments:
        assert str(fragment) in lines[-1], lines[-1]
    for fragment in absent:
        assert fragment not in lines[-1], lines[-1]
    if limit is not None:
        assert len(lines[-1]) < limit, f"{len(lines[-1]):,} characters: {lines[-1][:300]}"
    assert result.left == [], result.left
    return lines[-1]


def assert_ok(result):
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.left == [], result.left


def tree(folder):
    """Every path under `folder` -> its bytes (a file), its target (a link) or None (a folder)."""
    found = {}
    for path in sorted(Path(folder).rglob("*")):
        if path.is_symlink():
            found[path] = ("link", os.readlink(path))
        else:
            found[path] = path.read_bytes() if path.is_file() else None
    return found


def documented_replacements(doc):
    """A doc's ```python blocks, in pairs: (what to replace, what replaces it), as
    docs/bos_batches.md and docs/bits_per_byte.md give their changes to nanoGPT's train.py."""
    text = (REPO / "docs" / doc).read_text(encoding="utf-8")
    found = re.findall(r"^```python\n(.*?)^```$", text, flags=re.M | re.S)
    assert found and len(found) % 2 == 0, "the doc's python blocks come in pairs"
    return list(zip(found[0::2], found[1::2]))
