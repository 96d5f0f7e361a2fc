"""--max-tokens on the lessons whose source is one file read front to back (hub/prefix.py):
TinyStories' .tar.gz and parameter-golf's docs_selected.jsonl, each fetched from a real HTTP
server on 127.0.0.1 (tests/stand_ins/hub_server.py) by Range requests, a piece at a time, as
far as the budget needs; the server counts what it sends.
"""

import gzip
import hashlib
import io
import json
import signal
import tarfile
import time

import numpy as np
import pytest
from conftest import (
    COMMON,
    REPO,
    assert_ok,
    assert_one_line,
    files_in,
    finish,
    kill_session,
    run,
    start,
)
from hub_server import LocalHub, unused_port_url

from hub.prefix import MIN_PIECE
from safety.gpt2 import tiktoken_cache

pytestmark = pytest.mark.usefixtures("gpt2_encoding")  # GPT-2's files in the tiktoken cache

TINYSTORIES = REPO / "data" / "tinystories" / "prepare.py"
GOLF = REPO / "data" / "parameter_golf" / "prepare.py"
MIRROR_PATH = "tinystories/TinyStories_all_data.tar.gz"
WORDS = 3000


def made_up_texts(count, words_each, seed):
    """`count` texts of `words_each` made-up words: English-like, compressing as text does."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("etaoinshrdlucmfwypvbgkqjxz"))
    words = ["".join(rng.choice(letters, size=rng.integers(2, 8))) for _ in range(WORDS)]
    return [
        " ".join(words[i] for i in rng.integers(0, WORDS, words_each)) + "." for _ in range(count)
    ]


@pytest.fixture(scope="module")
def members():
    """TinyStories' layout, made small: data00.json (val) ... data05.json, 120 stories each."""
    texts = made_up_texts(6 * 120, 300, seed=0)
    return {
        f"data{m:02d}.json": json.dumps(
            [{"story": story, "summary": story[:20]} for story in texts[m * 120 : (m + 1) * 120]]
        ).encode()
        for m in range(6)
    }


@pytest.fixture(scope="module")
def archive(members):
    """The members as one .tar.gz, in the order of their names (about 520 KB: 8 pieces)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buffer.getvalue(), mtime=0)


@pytest.fixture
def mirror(archive):
    with LocalHub("roneneldan/TinyStories", {}, mirror={MIRROR_PATH: archive}) as served:
        yield served


def environment(home, mirror_url):
    """A run's own caches, the mirror at `mirror_url`, GPT-2's files where this process has them."""
    return {
        "NANOGPT_DATA_MIRROR": mirror_url,
        "NANOGPT_DATA_CACHE": str(home / "cache"),
        "TIKTOKEN_CACHE_DIR": str(tiktoken_cache()[0]),
    }


def stories(out, home, max_tokens, mirror_url, *args):
    options = ("--max-tokens", max_tokens, "--num-proc", 1, "--out-dir", out, *args)
    return run(TINYSTORIES, *options, env=environment(home, mirror_url))


def member_tokens(members, encoding):
    """{member: its GPT-2 tokens as the lesson writes them: each story stripped, EOT first}."""
    return {
        name: sum(
            len(encoding.encode_ordinary(item["story"].strip())) + 1 for item in json.loads(data)
        )
        for name, data in members.items()
    }


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def test_tinystories_budget_reads_a_prefix(mirror, archive, members, gpt2_encoding, tmp_path):
    """Train holds the first train files whose tokens reach N, at most one file's worth past
    it; val is the same bytes for two budgets; the server sent the bytes read (meta.json's
    record, their sha256 the archive's prefix's) and at most one piece more; verify calls the
    folders OK."""
    tokens = member_tokens(members, gpt2_encoding)
    vals = []
    for budget in (tokens["data01.json"] - 1000, tokens["data01.json"] + 1000):
        sent, out = mirror.bytes_sent, tmp_path / f"out-{budget}"
        assert_ok(stories(out, tmp_path / f"home-{budget}", budget, mirror.mirror_url))
        meta = json.loads((out / "meta.json").read_text())
        train = meta["splits"]["train"]["tokens"]
        assert budget <= train <= budget + max(tokens.values())
        record = meta["source"]["budget"]
        assert record["max_tokens"] == budget and record["tokens"] == train
        assert record["sha256"] == sha256(archive[: record["bytes"]])
        assert record["size"] == len(archive) and record["whole"] is False
        assert mirror.bytes_sent - sent <= 1.1 * record["bytes"] + MIN_PIECE
        assert record["bytes"] < len(archive) * 0.7  # not the whole archive
        assert_ok(run(COMMON, "verify", out))
        vals.append((out / "val.bin").read_bytes())
    assert vals[0] == vals[1]
    assert mirror.unknown == []


def test_tinystories_killed_mid_download_the_rerun_goes_on(mirror, tmp_path):
    """SIGKILL while the 4th piece is on its way: the rerun fetches none of the pieces already
    answered, writes what an uninterrupted run writes; a third run, offline (the mirror gone),
    writes it from the cache alone."""
    home, out, budget = tmp_path / "home", tmp_path / "out", 250_000
    mirror.hold_after(3)
    options = ("--max-tokens", budget, "--num-proc", 1, "--out-dir", out)
    process = start(TINYSTORIES, *options, env=environment(home, mirror.mirror_url))
    assert mirror.held.wait(60), "the client never asked for a 4th piece"
    kill_session(process.pid)
    process.wait()
    finish(process, 10)
    assert process.returncode == -signal.SIGKILL
    answered = list(mirror.served)
    mirror.holding = None
    mirror.release.set()
    deadline = time.monotonic() + 10
    while len(mirror.served) == len(answered) and time.monotonic() < deadline:
        time.sleep(0.01)  # until the held answer, which reaches no one, is logged
    assert_ok(stories(out, home, budget, mirror.mirror_url))
    again = mirror.served[len(answered) + 1 :]
    assert len(answered) == 3 and not {start for _, start, _ in answered} & {s for _, s, _ in again}

    reference = tmp_path / "reference"
    assert_ok(stories(reference, tmp_path / "other-home", budget, mirror.mirror_url))
    assert files_in(out) == files_in(reference)
    offline = tmp_path / "offline"
    assert_ok(stories(offline, home, budget, unused_port_url()))
    assert files_in(offline) == files_in(reference)


def test_tinystories_two_runs_sharing_a_cache_both_write_the_set(mirror, tmp_path):
    """A second run started while the first waits for its 3rd piece, both of one cache: each
    writes what a run alone writes (the second waits for the first's copy, not appending to
    it, and says that it waits)."""
    home, budget = tmp_path / "home", 250_000
    mirror.hold_after(2)
    runs = []
    for name in ("first", "second"):
        options = ("--max-tokens", budget, "--num-proc", 1, "--out-dir", tmp_path / name)
        runs.append(start(TINYSTORIES, *options, env=environment(home, mirror.mirror_url)))
        assert mirror.held.wait(60), "the client never asked for a 3rd piece"
    time.sleep(1)  # the second run at its first piece, or waiting for the first
    mirror.holding = None
    mirror.release.set()
    first, second = (finish(process, 60) for process in runs)
    assert_ok(first)
    assert_ok(second)
    assert "waiting for another run reading" in second.stderr  # said, not a silent hang
    reference = tmp_path / "reference"
    assert_ok(stories(reference, tmp_path / "other-home", budget, mirror.mirror_url))
    assert files_in(tmp_path / "first") == files_in(tmp_path / "second") == files_in(reference)


@pytest.mark.parametrize(
    ("times", "refused"),
    [
        pytest.param(0, False, id="kept-copy-damaged-fetched-again"),
        pytest.param(-1, True, id="refused"),
    ],
)
def test_tinystories_a_damaged_prefix_is_fetched_again_then_refused(
    mirror, times, refused, tmp_path
):
    """A byte of the kept prefix changed on disk: the rerun fetches the prefix again and goes
    on; if the server's bytes differ from the record too, one error line naming the file, and
    the folder keeps its previous set."""
    home, out = tmp_path / "home", tmp_path / "out"
    assert_ok(stories(out, home, 100_000, mirror.mirror_url))
    before = files_in(out)
    (copy,) = (home / "cache" / "prefix").glob("*.tar.gz")
    data = bytearray(copy.read_bytes())
    data[1000] ^= 0xFF
    copy.write_bytes(bytes(data))
    if times:
        mirror.damage(MIRROR_PATH, 1000, times)
    result = stories(out, home, 100_000, mirror.mirror_url)
    if refused:
        assert_one_line(result, "TinyStories_all_data.tar.gz", "fetched twice", "delete")
        assert files_in(out) == before
    else:
        assert_ok(result)
        assert files_in(out) == before


def test_tinystories_a_kept_prefix_that_does_not_decode_names_the_copy(mirror, tmp_path):
    """The mirror's first byte damaged: the prefix kept in the cache is not a .tar.gz, and
    the error line names the cached copy to delete; deleted, the rerun fetches it again."""
    home, out = tmp_path / "home", tmp_path / "out"
    mirror.damage(MIRROR_PATH, 0)
    result = stories(out, home, 100_000, mirror.mirror_url)
    (copy,) = (home / "cache" / "prefix").glob("*.tar.gz")
    assert_one_line(result, "not a whole .tar.gz", f"delete {copy} and run again")
    mirror.damaged.clear()
    copy.unlink()
    assert_ok(stories(out, home, 100_000, mirror.mirror_url))


class RangeIgnoringMirror(LocalHub):
    """A mirror answering every request 200 with `body` (None: the whole file, as `python -m
    http.server` does; else an error page), whatever Range it asks for."""

    body = None

    def route_cdn(self, request):
        status, headers, body = super().route_cdn(request)
        headers.pop("Content-Range", None)
        return 200, headers, body if self.body is None else self.body


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(None, id="whole-file"),
        pytest.param(b"<html><body>Rate limited. Try later.</body></html>", id="error-page"),
    ],
)
def test_tinystories_a_mirror_ignoring_range_is_refused_keeping_nothing(archive, body, tmp_path):
    """A 200 answer to a Range request: one error line saying the server does not answer Range
    requests, and nothing of it kept: a rerun against a mirror that does writes what a fresh
    cache writes."""
    home, out = tmp_path / "home", tmp_path / "out"
    RangeIgnoringMirror.body = body
    with RangeIgnoringMirror("roneneldan/TinyStories", {}, mirror={MIRROR_PATH: archive}) as bad:
        result = stories(out, home, 100_000, bad.mirror_url)
    assert_one_line(result, MIRROR_PATH, "does not answer Range requests")
    with LocalHub("roneneldan/TinyStories", {}, mirror={MIRROR_PATH: archive}) as good:
        assert_ok(stories(out, home, 100_000, good.mirror_url))
        reference = tmp_path / "reference"
        assert_ok(stories(reference, tmp_path / "other-home", 100_000, good.mirror_url))
    assert files_in(out) == files_in(reference)


def test_tinystories_budget_of_a_local_archive_reads_fewer_bytes(archive, tmp_path):
    """--archive with --max-tokens: the local file's first bytes only, nothing fetched, the
    same bytes at --num-proc 1 and 2 (a worker's file read past the budget is not kept)."""
    path = tmp_path / "a.tar.gz"
    path.write_bytes(archive)
    env = environment(tmp_path / "home", unused_port_url())
    for num_proc in (1, 2):
        out = tmp_path / f"out-{num_proc}"
        args = ("--archive", path, "--max-tokens", 100_000, "--num-proc", num_proc)
        assert_ok(run(TINYSTORIES, *args, "--out-dir", out, env=env))
    record = json.loads((out / "meta.json").read_text())["source"]["budget"]
    assert record["file"] == str(path) and record["bytes"] < len(archive)
    assert record["sha256"] == sha256(archive[: record["bytes"]])
    assert files_in(tmp_path / "out-1") == files_in(tmp_path / "out-2")


def test_tinystories_budget_reads_on_to_val(members, gpt2_encoding, tmp_path):
    """An archive whose val (data00.json) comes last: train is the first train file in the
    archive's order, data05.json; the files after it are read for val, not kept."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name in sorted(members, reverse=True):
            info = tarfile.TarInfo(name)
            info.size = len(members[name])
            tar.addfile(info, io.BytesIO(members[name]))
    path = tmp_path / "reversed.tar.gz"
    path.write_bytes(gzip.compress(buffer.getvalue(), mtime=0))
    out, env = tmp_path / "out", environment(tmp_path / "home", unused_port_url())
    assert_ok(run(TINYSTORIES, "--archive", path, "--max-tokens", 1, "--out-dir", out, env=env))
    meta = json.loads((out / "meta.json").read_text())
    assert meta["source"]["budget"]["files"] == ["data00.json", "data05.json"]
    tokens = member_tokens(members, gpt2_encoding)
    assert meta["splits"]["train"]["tokens"] == tokens["data05.json"]
    assert meta["splits"]["val"]["tokens"] == tokens["data00.json"]
    assert_ok(run(COMMON, "verify", out))


def test_tinystories_budget_refuses_vocab_size(tmp_path):
    """--vocab-size trains on every train story, which a budget does not read: a usage error."""
    result = run(TINYSTORIES, "--max-tokens", 5, "--vocab-size", 512, "--out-dir", tmp_path / "o")
    assert_one_line(result, "--max-tokens", "--tokenizer", code=2)


# ---------------------------------------------------------------------------------------------
# parameter-golf: the hub's datasets/docs_selected.jsonl, an LFS file served by Range requests

GOLF_REPO, GOLF_COMMIT = "willdepueoai/parameter-golf", sha256(b"parameter-golf")[:40]
VAL_DOCS = 100


@pytest.fixture(scope="module")
def golf_files():
    """The hub's datasets/ folder, made small: 2,000 documents of about 400 characters (about
    800 KB: 13 pieces) and their sidecar (docs_val 100)."""
    data = "".join(json.dumps({"text": t}) + "\n" for t in made_up_texts(2000, 60, seed=1))
    data = data.encode()
    sidecar = {"num_docs": 2000, "docs_val": VAL_DOCS, "docs_sha256": sha256(data)}
    return {
        "datasets/docs_selected.jsonl": data,
        "datasets/docs_selected.source_manifest.json": json.dumps(sidecar).encode(),
    }


@pytest.fixture
def golf_hub(golf_files):
    commits, refs = {GOLF_COMMIT: golf_files}, {"main": GOLF_COMMIT}
    with LocalHub(GOLF_REPO, commits, refs, lfs_suffixes=(".jsonl",)) as served:
        yield served


def golf(hub, home, out, max_tokens, *args):
    env = {**hub.environment(home), **environment(home, unused_port_url())}
    return run(GOLF, "--max-tokens", max_tokens, "--out-dir", out, *args, env=env)


def split_tokens(meta, split):
    (dataset,) = meta["datasets"]
    return sum(shard["tokens"] for shard in dataset["shards"] if shard["split"] == split)


def test_golf_budget_reads_the_first_lines(golf_hub, golf_files, tmp_path):
    """byte260: train holds the first documents after val whose tokens reach N, at most one
    document's worth past it; docs_selected.jsonl is the hub file's first bytes, as meta.json
    records them; val is the same bytes for two budgets; the hub sent at most 1.1 times what
    the folder holds, plus a piece and the sidecar; verify calls the folders OK."""
    data = golf_files["datasets/docs_selected.jsonl"]
    longest = max(len(line) for line in data.splitlines())  # byte260: a token a byte
    vals = []
    for budget in (60_000, 150_000):
        sent, out = golf_hub.bytes_sent, tmp_path / f"out-{budget}"
        assert_ok(golf(golf_hub, tmp_path / f"home-{budget}", out, budget, "--variant", "byte260"))
        meta = json.loads((out / "meta.json").read_text())
        train = split_tokens(meta, "train")
        assert budget <= train <= budget + longest
        record = meta["source"]["budget"]
        assert record["tokens"] == train and record["val_docs"] == VAL_DOCS
        assert record["size"] == len(data) and record["whole"] is False
        kept = (out / "docs_selected.jsonl").read_bytes()
        assert kept == data[: record["bytes"]] and record["sha256"] == sha256(kept)
        assert record["documents"] == kept.count(b"\n")
        assert golf_hub.bytes_sent - sent <= 1.1 * len(kept) + MIN_PIECE + 1000
        assert_ok(run(COMMON, "verify", out))
        val = out / "datasets" / "fineweb10B_byte260" / "fineweb_val_000000.bin"
        vals.append(val.read_bytes())
    assert vals[0] == vals[1]
    assert golf_hub.unknown == []


def test_golf_budget_reads_the_commit_main_names_now(golf_files, tmp_path):
    """main moved, between two runs of one cache, to a commit whose docs_selected.jsonl is the
    same size but other bytes (its lines in reverse order): the second run, of a larger budget,
    writes what a fresh cache writes, that commit's first lines only; meta.json names the
    commit; verify calls the folder OK."""
    docs, sidecar = "datasets/docs_selected.jsonl", "datasets/docs_selected.source_manifest.json"
    moved = b"".join(reversed(golf_files[docs].splitlines(keepends=True)))
    record = {**json.loads(golf_files[sidecar]), "docs_sha256": sha256(moved)}
    commit = sha256(b"moved")[:40]
    commits = {GOLF_COMMIT: golf_files, commit: {docs: moved, sidecar: json.dumps(record).encode()}}
    home, out, fresh = tmp_path / "home", tmp_path / "out", tmp_path / "fresh"
    with LocalHub(GOLF_REPO, commits, {"main": GOLF_COMMIT}, lfs_suffixes=(".jsonl",)) as hub:
        assert_ok(golf(hub, home, tmp_path / "first", 60_000, "--variant", "byte260"))
        hub.refs["main"] = commit
        assert_ok(golf(hub, home, out, 150_000, "--variant", "byte260"))
        assert_ok(golf(hub, tmp_path / "other-home", fresh, 150_000, "--variant", "byte260"))
    assert files_in(out) == files_in(fresh)
    source = json.loads((out / "meta.json").read_text())["source"]
    assert source["revision"] == commit
    assert (out / "docs_selected.jsonl").read_bytes() == moved[: source["budget"]["bytes"]]
    assert_ok(run(COMMON, "verify", out))


@pytest.mark.parametrize(
    "kept, offline",
    [
        pytest.param(b"\xff\xfe", False, id="damaged-online"),
        pytest.param(GOLF_COMMIT.encode() + b"\n", True, id="with-a-line-end-offline"),
    ],
)
def test_golf_budget_reads_a_kept_commit_as_it_can(golf_hub, tmp_path, kept, offline):
    """The commit a run keeps for main: a damaged file is asked again of the hub, and one
    written with a line end is still that commit offline."""
    home = tmp_path / "home"
    assert_ok(golf(golf_hub, home, tmp_path / "first", 60_000, "--variant", "byte260"))
    (path,) = home.rglob("commit")
    path.write_bytes(kept)
    env = {"HF_HUB_OFFLINE": "1"} if offline else {}
    again = run(
        GOLF,
        "--max-tokens",
        60_000,
        "--out-dir",
        tmp_path / "again",
        "--variant",
        "byte260",
        env={**golf_hub.environment(home), **environment(home, unused_port_url()), **env},
    )
    assert_ok(again)
    assert json.loads((tmp_path / "again" / "meta.json").read_text())["source"]["revision"] == (
        GOLF_COMMIT
    )


class HubOfOddCommits(LocalHub):
    """A hub whose answer for a branch gives no commit, or a path for one."""

    sha = None

    def repo_info(self, sha):
        status, headers, body = super().repo_info(sha)
        info = {**json.loads(body), "sha": self.sha}
        return (
            status,
            {**headers, "Content-Length": str(len(json.dumps(info)))},
            json.dumps(info).encode(),
        )


@pytest.mark.parametrize("sha", [None, "../../x"])
def test_golf_budget_refuses_a_commit_that_is_not_one(golf_files, tmp_path, sha):
    """A hub answering main's commit with none or a path: one line, and nothing kept under it
    (it had been written to the cache and become part of its paths)."""
    refs = {"main": GOLF_COMMIT}
    with HubOfOddCommits(
        GOLF_REPO, {GOLF_COMMIT: golf_files}, refs, lfs_suffixes=(".jsonl",)
    ) as hub:
        hub.sha = sha
        result = golf(hub, tmp_path / "home", tmp_path / "out", 60_000, "--variant", "byte260")
    assert_one_line(result, "main's commit as", "not 40 hex digits")
    assert list((tmp_path / "home").rglob("commit")) == []


def test_golf_budget_offline_without_a_kept_commit_says_so(golf_hub, tmp_path):
    """Offline, with no commit of main read before (a cache of an older version): one line
    saying to run once online, not "run again when it can be reached"."""
    home = tmp_path / "home"
    env = {**golf_hub.environment(home), **environment(home, unused_port_url())}
    result = run(
        GOLF,
        "--max-tokens",
        60_000,
        "--out-dir",
        tmp_path / "out",
        "--variant",
        "byte260",
        env={**env, "HF_HUB_OFFLINE": "1"},
    )
    assert_one_line(result, "HF_HUB_OFFLINE is set", "names no commit read earlier")


def test_golf_budget_trains_sentencepiece_first(golf_hub, golf_files, tmp_path):
    """sp1024 with --tokenizer-train-docs 600: SentencePiece learns from the first 600
    documents, though the budget needs fewer; the folder keeps only those it needs, and a
    rerun offline, from the cache, writes the same documents and shards (the model records
    the folder it was trained in)."""
    pytest.importorskip("sentencepiece", reason="needs sentencepiece: pip install -e '.[golf]'")
    home, out = tmp_path / "home", tmp_path / "out"
    args = ("--variant", "sp1024", "--tokenizer-train-docs", 600)
    assert_ok(golf(golf_hub, home, out, 20_000, *args))
    meta = json.loads((out / "meta.json").read_text())
    record = meta["source"]["budget"]
    assert VAL_DOCS < record["documents"] < 600
    assert split_tokens(meta, "train") >= 20_000
    kept = (out / "docs_selected.jsonl").read_bytes()
    assert kept == golf_files["datasets/docs_selected.jsonl"][: record["bytes"]]
    assert kept.count(b"\n") == record["documents"]
    spec = json.loads((out / "tokenizer_config.export.json").read_text())["tokenizers"][0]
    assert spec["tokenizer_train_docs"] == 600
    offline = {"HF_HUB_OFFLINE": "1", "HF_ENDPOINT": unused_port_url()}
    again = tmp_path / "again"
    env = {**golf_hub.environment(home), **environment(home, unused_port_url()), **offline}
    assert_ok(run(GOLF, "--max-tokens", 20_000, *args, "--out-dir", again, env=env))
    written = [path for path in files_in(out) if path.suffix in (".jsonl", ".bin")]
    assert len(written) == 3
    assert all((again / path).read_bytes() == (out / path).read_bytes() for path in written)


def test_golf_budget_of_a_file_shorter_than_sentencepieces_documents(golf_hub, tmp_path):
    """--tokenizer-train-docs past the file's end: SentencePiece learns from the whole file, and
    train is still cut by the train documents' tokens, as meta.json and the print say."""
    pytest.importorskip("sentencepiece", reason="needs sentencepiece: pip install -e '.[golf]'")
    out = tmp_path / "out"
    args = ("--variant", "sp1024", "--tokenizer-train-docs", 5000)
    result = golf(golf_hub, tmp_path / "home", out, 20_000, *args)
    assert_ok(result)
    meta = json.loads((out / "meta.json").read_text())
    train, record = split_tokens(meta, "train"), meta["source"]["budget"]
    assert record["tokens"] == train >= 20_000
    assert f"budget: {record['documents'] - VAL_DOCS:,} train documents, {train:,}" in result.stdout


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        pytest.param(["--data-files", "a.jsonl"], "--data-files", id="with-data-files"),
        pytest.param(["--variant", "byte260", "sp1024"], "one tokenizer", id="two-tokenizers"),
        pytest.param(["--variant", "sp1024"], "--tokenizer-train-docs", id="sp-untrained"),
    ],
)
def test_golf_budget_usage_errors(args, fragment, tmp_path):
    """--max-tokens with local files, two tokenizers, or SentencePiece with no documents to
    learn from first: exit 2, one line, before any work."""
    result = run(GOLF, "--max-tokens", 5, *args, "--out-dir", tmp_path / "out")
    assert_one_line(result, "--max-tokens", fragment, code=2)
    assert not (tmp_path / "out").exists()


def test_golf_killed_mid_download_the_rerun_goes_on(golf_hub, tmp_path):
    """SIGKILL while the 4th piece of docs_selected.jsonl is on its way: the rerun fetches
    none of the pieces already answered and writes what an uninterrupted run writes."""
    home, out, budget = tmp_path / "home", tmp_path / "out", 400_000
    golf_hub.hold_after(3)
    env = {**golf_hub.environment(home), **environment(home, unused_port_url())}
    options = ("--max-tokens", budget, "--variant", "byte260", "--out-dir", out)
    process = start(GOLF, *options, env=env)
    assert golf_hub.held.wait(60), "the client never asked for a 4th piece"
    kill_session(process.pid)
    process.wait()
    finish(process, 10)
    assert process.returncode == -signal.SIGKILL
    answered = list(golf_hub.served)
    golf_hub.holding = None
    golf_hub.release.set()
    deadline = time.monotonic() + 10
    while len(golf_hub.served) == len(answered) and time.monotonic() < deadline:
        time.sleep(0.01)  # until the held answer, which reaches no one, is logged
    assert_ok(golf(golf_hub, home, out, budget, "--variant", "byte260"))
    again = golf_hub.served[len(answered) + 1 :]
    assert len(answered) == 3 and not {s for _, s, _ in answered} & {s for _, s, _ in again}
    reference = tmp_path / "reference"
    assert_ok(golf(golf_hub, tmp_path / "other-home", reference, budget, "--variant", "byte260"))
    assert files_in(out) == files_in(reference)


def test_golf_a_damaged_prefix_is_refused(golf_hub, tmp_path):
    """A byte of the kept prefix changed on disk, and the hub's bytes differ from the record
    too: one error line naming the hub's file, nothing written."""
    home = tmp_path / "home"
    assert_ok(golf(golf_hub, home, tmp_path / "first", 50_000, "--variant", "byte260"))
    (copy,) = (home / "hf-home" / "token-budget").glob("*/prefix/*.jsonl")
    data = bytearray(copy.read_bytes())
    data[500] ^= 0xFF
    copy.write_bytes(bytes(data))
    golf_hub.damage("datasets/docs_selected.jsonl", 500)
    result = golf(golf_hub, home, tmp_path / "out", 50_000, "--variant", "byte260")
    assert_one_line(result, f"{GOLF_REPO}@main/datasets/docs_selected.jsonl", "fetched twice")
    assert not (tmp_path / "out").exists()


def test_golf_budget_past_the_whole_file_reads_it_all(golf_hub, golf_files, tmp_path):
    """A budget the file cannot meet: all of it read, checked against the hub's LFS sha256 and
    the sidecar's docs_sha256, a note saying so, the folder's documents the hub's file."""
    out = tmp_path / "out"
    result = golf(golf_hub, tmp_path / "home", out, 10**9, "--variant", "byte260")
    assert_ok(result)
    assert "fewer than asked: all read" in result.stdout
    record = json.loads((out / "meta.json").read_text())["source"]["budget"]
    assert record["whole"] is True and record["documents"] == 2000
    data = golf_files["datasets/docs_selected.jsonl"]
    assert (out / "docs_selected.jsonl").read_bytes() == data
