"""--max-tokens N: a hub dataset read by a token budget, through a real local hub.

The hub (tests/stand_ins/hub_server.py) serves FineWeb-Edu-shaped parquet files of 10 row groups
each over HTTP, range requests included, and counts what it sends; data/fineweb/prepare.py reads
them through huggingface_hub's HfFileSystem and pyarrow, as it reads the real hub.
"""

import hashlib
import json
import signal
import time

import pyarrow.parquet as pq
import pytest
from conftest import (
    REPO,
    assert_ok,
    assert_one_line,
    files_in,
    finish,
    kill_session,
    lesson,
    names_in,
    needs_datatrove,
    run,
    start,
)
from hub_server import LocalHub, fineweb_files, openwebtext_files, unused_port_url

from hub import token_budget

pytestmark = pytest.mark.usefixtures("downloads")  # Tiny Shakespeare, GPT-2's files

SCRIPT = REPO / "data" / "fineweb" / "prepare.py"
OPENWEBTEXT = REPO / "data" / "openwebtext" / "prepare.py"
SHARD_SIZE = 10_000  # val: shard 0, the first 10,000 tokens, whatever the budget
ROWS = 100  # documents a row group


@pytest.fixture(scope="module")
def repo(paragraphs):
    """FineWeb-Edu's sample/10BT at the pinned revision: 3,000 paragraphs in 3 files of 10 row
    groups of 100 documents."""
    name, revision = lesson("fineweb")["REPOS"]["edu"]
    files = fineweb_files("edu", {"10BT": (paragraphs[:3000], [1000] * 3)}, ROWS)
    return name, revision, files


@pytest.fixture
def hub(repo):
    name, revision, files = repo
    with LocalHub(name, {revision: files}) as served:
        yield served


def prepare(hub, home, out, *args, env=None):
    environment = {**hub.environment(home), **(env or {})}
    options = ("--shard-size", SHARD_SIZE, "--num-proc", 1, "--out-dir", out)
    return run(SCRIPT, *options, *args, env=environment)


def shards(out):
    return {path.name: path.read_bytes() for path in sorted(out.glob("*.bin"))}


def footer_bytes(data):
    return int.from_bytes(data[-8:-4], "little") + 8


@pytest.mark.parametrize(
    ("text", "value"),
    [
        pytest.param("12", 12, id="plain"),
        pytest.param("200M", 200_000_000, id="millions"),
        pytest.param("1.5B", 1_500_000_000, id="billions-fraction"),
        pytest.param("3k", 3_000, id="lower-case"),
        pytest.param("123456789.123456789B", 123_456_789_123_456_789, id="exact-decimal"),
    ],
)
def test_a_budget_is_a_number_with_a_suffix(text, value):
    """--max-tokens reads a count with an optional K, M or B."""
    assert token_budget(text) == value


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--max-tokens", "0"], id="zero"),
        pytest.param(["--max-tokens", "2X"], id="unknown-suffix"),
        pytest.param(["--max-tokens", "-5"], id="negative"),
        pytest.param(["--max-tokens", "1.0000000001k"], id="not-whole"),
        pytest.param(["--max-tokens", "1.5"], id="half-a-token"),
        pytest.param(["--max-tokens", "5", "--data-files", "a.parquet"], id="with-data-files"),
    ],
)
def test_a_wrong_budget_is_a_usage_error(args, tmp_path):
    """A budget that is no count of tokens, or one given with local files: exit 2, one line,
    before any work."""
    result = run(SCRIPT, *args, "--out-dir", tmp_path / "out")
    assert_one_line(result, "--max-tokens", code=2)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("lesson_name", ["fineweb", "openwebtext"])
def test_a_twin_refuses_a_budget_of_local_files(lesson_name, tmp_path):
    """prepare_datatrove.py --max-tokens with --data-files: prepare.py's usage error, before any
    work."""
    script = REPO / "data" / lesson_name / "prepare_datatrove.py"
    args = ("--max-tokens", 5, "--data-files", "a.parquet", "--out-dir", tmp_path / "out")
    assert_one_line(run(script, *args), "--max-tokens reads the hub's files", code=2)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "script", ["prepare.py", pytest.param("prepare_datatrove.py", marks=needs_datatrove)]
)
def test_a_budget_of_an_empty_dataset_is_one_line(script, tmp_path):
    """A hub sample of no document: prepare.py and its twin refuse it in one line naming it,
    before any folder is written."""
    name, revision = lesson("fineweb")["REPOS"]["edu"]
    with LocalHub(name, {revision: fineweb_files("edu", {"10BT": ([], [0])}, ROWS)}) as served:
        options = ("--max-tokens", 5_000, "--num-proc", 1, "--out-dir", tmp_path / "out")
        result = run(SCRIPT.with_name(script), *options, env=served.environment(tmp_path / "home"))
    assert_one_line(result, "fineweb-edu", "sample-10BT", "holds no document")
    assert not (tmp_path / "out").exists()


def lesson_and_twin(served, script, args, tmp_path):
    """prepare.py with `args`, then prepare_datatrove.py with them and --tasks 2, each with its
    own cache of the hub `served`, into tmp_path/"lesson" and tmp_path/"twin": their results,
    once the twin's folder is found to be the lesson's."""
    results = []
    for name, path in (("lesson", script), ("twin", script.with_name("prepare_datatrove.py"))):
        tasks = ("--tasks", 2) * (name == "twin")
        environment = served.environment(tmp_path / f"{name}-home")
        options = (*args, *tasks, "--num-proc", 1, "--out-dir", tmp_path / name)
        results.append(run(path, *options, env=environment))
        assert_ok(results[-1])
    assert_same_folders(tmp_path / "twin", tmp_path / "lesson")
    return results


def assert_same_folders(out, reference):
    """`out` (its work directory aside) holds the files of `reference`, byte for byte, and its
    meta.json but "options"."""
    names = names_in(reference)
    assert [name for name in names_in(out) if name != ".datatrove-work"] == names
    for name in names:
        if name != "meta.json":
            assert (out / name).read_bytes() == (reference / name).read_bytes(), name
    meta, expected = (json.loads((folder / "meta.json").read_text()) for folder in (out, reference))
    assert {**meta, "options": None} == {**expected, "options": None}


def source_line(stdout):
    """The line saying the documents read: "HuggingFaceFW/fineweb-edu@87f09149ef47 (...): 640
    documents"."""
    return next(line for line in stdout.splitlines() if line.endswith(" documents"))


@needs_datatrove
def test_the_fineweb_twin_takes_a_budget(hub, tmp_path):
    """prepare_datatrove.py --max-tokens N in 2 tasks: prepare.py's llm.c shards and meta.json
    (the hub's source and its budget record) from the row groups it reads itself, the source
    named as prepare.py names it; rerun with the hub unreachable, the budget comes from the
    cache and the run resumes in the same work directory, its token files kept."""
    args = ("--shard-size", SHARD_SIZE, "--max-tokens", 20_000)
    prepared, twin = lesson_and_twin(hub, SCRIPT, args, tmp_path)
    assert source_line(prepared.stdout).startswith(f"{hub.repo_id}@")
    assert source_line(prepared.stdout) in twin.stdout.splitlines()
    token_files = list((tmp_path / "twin" / ".datatrove-work").glob("*/tasks/tokens-*.bin"))
    written = {path: path.stat().st_mtime_ns for path in token_files}
    assert len(written) == 2
    offline = {"HF_HUB_OFFLINE": "1", "HF_ENDPOINT": unused_port_url()}
    environment = {**hub.environment(tmp_path / "twin-home"), **offline}
    options = (*args, "--tasks", 2, "--num-proc", 1, "--out-dir", tmp_path / "twin")
    assert_ok(run(SCRIPT.with_name("prepare_datatrove.py"), *options, env=environment))
    assert {path: path.stat().st_mtime_ns for path in token_files} == written
    assert_same_folders(tmp_path / "twin", tmp_path / "lesson")


@pytest.fixture
def openwebtext_copies_hub(paragraphs):
    """OpenWebText's pin holding 400 paragraphs in 2 files, with 3 copies: document 3 of
    document 1 (both in val with --val-fraction 0.02: its first 8), 50 of 2 (a val document's
    copy in train) and 60 of 55 (both in train)."""
    pin = lesson("openwebtext")["OPENWEBTEXT"]
    documents = paragraphs[:400]
    for copy, original in ((3, 1), (50, 2), (60, 55)):
        documents[copy] = documents[original]
    files = openwebtext_files(documents, [150, 250], config=pin.config)
    with LocalHub(pin.repo, {pin.revision: files}) as served:
        yield served


@needs_datatrove
def test_the_openwebtext_twin_takes_a_budget(openwebtext_hub, tmp_path):
    """prepare_datatrove.py --max-tokens N in 2 tasks: prepare.py's train.bin, val.bin and
    meta.json, val the first document (not a random draw), train the next ones."""
    args = ("--max-tokens", 12_000)
    lesson_and_twin(openwebtext_hub.hub, OPENWEBTEXT, args, tmp_path)
    meta = json.loads((tmp_path / "twin" / "meta.json").read_text())
    assert meta["split"]["documents"]["val"] == 1
    assert meta["split"]["rule"] == lesson("openwebtext")["BUDGET_RULE"]


@needs_datatrove
def test_the_openwebtext_twin_takes_a_budget_with_dedup(openwebtext_copies_hub, tmp_path):
    """prepare_datatrove.py --max-tokens N --dedup exact in 2 tasks: prepare.py's files and
    meta.json; the 3 copies dropped, val the first 8 documents but the copy among them."""
    args = ("--max-tokens", 12_000, "--val-fraction", 0.02, "--dedup", "exact")
    lesson_and_twin(openwebtext_copies_hub, OPENWEBTEXT, args, tmp_path)
    split = json.loads((tmp_path / "twin" / "meta.json").read_text())["split"]
    assert split["dedup"]["documents_dropped"] == 3
    assert split["documents"]["val"] == 7


def test_a_budget_reads_only_its_row_groups(hub, repo, gpt2_encoding, tmp_path):
    """Train holds at least N tokens and at most one row group's worth more; the hub sent at
    most 1.1 times the bytes of the row groups used plus the footers; val is the same bytes
    for two budgets; meta.json names every row group read with its sha256; verify calls the
    folder OK."""
    files = {path: data for path, data in repo[2].items() if path.startswith("sample/")}
    outs = {}
    for budget in (20_000, 45_000):
        sent_before = hub.bytes_sent
        out = tmp_path / f"out-{budget}"
        result = prepare(hub, tmp_path / f"home-{budget}", out, "--max-tokens", budget)
        assert_ok(result)
        whole = sum(map(len, files.values()))
        plan = f"{SHARD_SIZE + budget:,} tokens are about"  # shown before the download starts
        assert plan in result.stdout and f"of {whole:,} in 3 files" in result.stdout
        meta = json.loads((out / "meta.json").read_text())
        train = meta["splits"]["train"]["tokens"]
        group_tokens = [
            sum(len(ids) + 1 for ids in gpt2_encoding.encode_ordinary_batch(texts))
            for data in files.values()
            for texts in row_group_texts(data)
        ]
        assert budget <= train <= budget + max(group_tokens)
        record = meta["source"]["budget"]
        assert record["max_tokens"] == budget and record["first_tokens"] == SHARD_SIZE
        used = sum(end - start for f in record["files"] for start, end in ranges(f))
        footers = sum(footer_bytes(data) for data in files.values())
        assert hub.bytes_sent - sent_before <= 1.1 * (used + footers)
        assert used < whole / 2  # not the whole download
        for entry in record["files"]:
            data = files[entry["path"]]
            for group in entry["row_groups"]:
                start, end = group["bytes"]
                assert group["sha256"] == sha256(data[start:end])
        assert_ok(run(REPO / "prepare_common.py", "verify", out))
        outs[budget] = shards(out)
    val = "edu_fineweb_val_000000.bin"
    assert outs[20_000][val] == outs[45_000][val]
    assert hub.unknown == []
    assert len(outs[45_000]) > len(outs[20_000])


def test_killed_mid_download_the_rerun_goes_on(hub, tmp_path):
    """SIGKILL after 6 answers of the CDN: the rerun fetches none of the pieces already
    answered, writes what an uninterrupted run writes, and a third run from the cache alone,
    offline, writes it too."""
    home, out = tmp_path / "home", tmp_path / "out"
    hub.hold_after(6)
    environment = {**hub.environment(home)}
    options = ("--shard-size", SHARD_SIZE, "--num-proc", 1, "--max-tokens", 30_000)
    process = start(SCRIPT, *options, "--out-dir", out, env=environment)
    assert hub.held.wait(60), "the client never asked for a 7th piece"
    kill_session(process.pid)
    process.wait()
    finish(process, 10)
    answered = list(hub.served)
    assert process.returncode == -signal.SIGKILL
    hub.holding = None
    hub.release.set()
    deadline = time.monotonic() + 10
    while len(hub.served) == len(answered) and time.monotonic() < deadline:
        time.sleep(0.01)  # until the held answer, which reaches no one, is logged
    assert_ok(prepare(hub, home, out, "--max-tokens", 30_000))
    again = set(hub.served[len(answered) + 1 :])
    assert answered and not (set(answered) & again)

    reference = tmp_path / "reference"
    assert_ok(prepare(hub, tmp_path / "other-home", reference, "--max-tokens", 30_000))
    assert files_in(out) == files_in(reference)

    offline = {"HF_HUB_OFFLINE": "1", "HF_ENDPOINT": unused_port_url()}
    assert_ok(prepare(hub, home, tmp_path / "offline", "--max-tokens", 30_000, env=offline))
    assert files_in(tmp_path / "offline") == files_in(reference)


def test_an_unreachable_hub_is_one_line(tmp_path):
    """No hub and nothing cached: one error line saying to run again, not to pass --data-files
    (which --max-tokens refuses)."""
    environment = {"HF_ENDPOINT": unused_port_url(), "HF_HOME": str(tmp_path / "home")}
    options = ("--max-tokens", 5_000, "--out-dir", tmp_path / "out", "--num-proc", 1)
    result = run(SCRIPT, *options, env=environment)
    assert_one_line(result, "cannot load", "run again", absent=("--data-files",))


class OidOutsideHub(LocalHub):
    """A hub whose listing gives each parquet file's LFS sha256 as a path out of the cache."""

    def entry(self, sha, path):
        entry = super().entry(sha, path)
        if "lfs" in entry:
            entry["lfs"]["oid"] = "../../../../victim"
        return entry


def test_a_listed_sha256_that_is_not_one_is_refused(repo, tmp_path):
    """An LFS sha256 of "../../../../victim" in the hub's listing: one error line naming the
    repo and the file, before any file is opened: the file it points at, outside the cache,
    keeps its bytes."""
    name, revision, files = repo
    victim = tmp_path / "home" / "victim.parquet"  # where the cache's files/ would reach
    victim.parent.mkdir()
    victim.write_bytes(b"the user's own file")
    with OidOutsideHub(name, {revision: files}) as hub:
        result = prepare(hub, tmp_path / "home", tmp_path / "out", "--max-tokens", 5_000)
    assert_one_line(result, f"{name}@", "sample/10BT/000_00000.parquet", "64 hex digits")
    assert victim.read_bytes() == b"the user's own file"


@pytest.mark.parametrize(
    ("column", "times", "refusal"),
    [
        pytest.param("text", 1, None, id="once-then-fetched-again"),
        pytest.param("text", -1, "do not decode", id="always-a-row-group-refused"),
        pytest.param("url", -1, "do not have the sha256", id="always-the-whole-file-refused"),
    ],
)
def test_a_damaged_byte_is_fetched_again_then_refused(hub, repo, column, times, refusal, tmp_path):
    """A byte flipped on the way in a row group the budget reads: fetched again once; still
    wrong, one error line naming the file, and the folder keeps its previous complete set. In
    the text, its page's CRC fails; in a column not decoded (url), the LFS sha256 of the file,
    which the budget reads whole, does."""
    path = "sample/10BT/000_00000.parquet"
    data = repo[2][path]
    out = tmp_path / "out"
    assert_ok(prepare(hub, tmp_path / "first-home", out, "--max-tokens", 20_000))
    before = files_in(out)
    metadata = pq.read_metadata(pa_buffer(data))
    chunk = metadata.row_group(2).column(metadata.schema.names.index(column))
    first = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    hub.damage(path, first + chunk.total_compressed_size // 2, times)
    result = prepare(hub, tmp_path / "second-home", out, "--max-tokens", 60_000)
    if refusal:
        assert_one_line(result, f"{hub.repo_id}@", path, "fetched twice", refusal)
        assert files_in(out) == before
    else:
        assert_ok(result)
        reference = tmp_path / "reference"
        hub.damaged.clear()
        assert_ok(prepare(hub, tmp_path / "third-home", reference, "--max-tokens", 60_000))
        assert files_in(out) == files_in(reference)


def pa_buffer(data):
    import pyarrow as pa

    return pa.BufferReader(data)


def row_group_texts(data):
    parquet = pq.ParquetFile(pa_buffer(data))
    for number in range(parquet.num_row_groups):
        yield parquet.read_row_group(number, columns=["text"]).column(0).to_pylist()


def ranges(entry):
    return [group["bytes"] for group in entry["row_groups"]]


def sha256(data):
    return hashlib.sha256(data).hexdigest()


NANOCHAT = REPO / "data" / "nanochat" / "prepare.py"
CLIMBMIX = "karpathy/climbmix-400b-shuffle"


@pytest.fixture(scope="module")
def nanochat_shards(paragraphs, tmp_path_factory):
    """nanochat's own hub layout, made small: shard_00000 ... shard_00004.parquet, each 1,024
    paragraphs in one row group, as its repackaging script writes them; the last is val."""
    from formats.nanochat import write_text_shard

    folder = tmp_path_factory.mktemp("climbmix")
    files = {}
    for number in range(5):
        path = folder / f"shard_{number:05d}.parquet"
        write_text_shard(path, paragraphs[number * 1024 : (number + 1) * 1024])
        files[path.name] = path.read_bytes()
    return files


@pytest.fixture
def nanochat_hub(nanochat_shards):
    commit = sha256(b"climbmix")[:40]
    with LocalHub(CLIMBMIX, {commit: nanochat_shards}, refs={"main": commit}) as served:
        yield served


def from_hub(hub, home, out, *args):
    return run(NANOCHAT, "--from-hub", CLIMBMIX, "--out-dir", out, *args, env=hub.environment(home))


@pytest.mark.parametrize(
    ("args", "train"),
    [
        pytest.param(["--shards", "2"], 2, id="shard-count"),
        pytest.param(["--max-tokens", "1"], 1, id="one-token-one-shard"),
    ],
)
def test_nanochat_shards_from_the_hub(nanochat_hub, nanochat_shards, args, train, tmp_path):
    """--from-hub: the first train shards whole and the last, val, byte for byte the hub's (val
    numbered next, as nanochat's folder has no gap), each recorded with its name on the hub and
    the LFS sha256 the hub publishes; verify calls the folder OK."""
    out = tmp_path / "out"
    assert_ok(from_hub(nanochat_hub, tmp_path / "home", out, *args))
    served = [*sorted(nanochat_shards)[:train], "shard_00004.parquet"]
    folder = out / "base_data_climbmix"
    names = [f"shard_{index:05d}.parquet" for index in range(train + 1)]  # no gap before val
    assert sorted(p.name for p in folder.iterdir()) == names
    for name, hub_name in zip(names, served):
        assert (folder / name).read_bytes() == nanochat_shards[hub_name]
    meta = json.loads((out / "meta.json").read_text())
    assert [s["split"] for s in meta["shards"]] == ["train"] * train + ["val"]
    recorded = {f["path"]: f["sha256"] for f in meta["source"]["files"]}
    assert recorded == {name: sha256(nanochat_shards[name]) for name in served}
    assert_ok(run(REPO / "prepare_common.py", "verify", out))


def test_nanochat_max_tokens_counts_whole_shards(
    nanochat_hub, nanochat_shards, gpt2_encoding, tmp_path
):
    """--max-tokens N: as many train shards as N GPT-2 tokens need, one more than shard 0 when
    N is one token past it."""
    texts = next(row_group_texts(nanochat_shards["shard_00000.parquet"]))
    first = sum(len(ids) + 1 for ids in gpt2_encoding.encode_ordinary_batch(texts))
    out = tmp_path / "out"
    assert_ok(from_hub(nanochat_hub, tmp_path / "home", out, "--max-tokens", first + 1))
    meta = json.loads((out / "meta.json").read_text())
    assert [s["split"] for s in meta["shards"]] == ["train", "train", "val"]
    assert meta["split"]["gpt2_tokens"] >= first + 1


def test_nanochat_damaged_shard_is_refused(nanochat_hub, tmp_path):
    """A shard whose bytes, fetched twice, differ from the hub's LFS sha256: one error line
    naming it; no folder is left."""
    nanochat_hub.damage("shard_00001.parquet", 100)
    result = from_hub(nanochat_hub, tmp_path / "home", tmp_path / "out", "--shards", "2")
    assert_one_line(result, "shard_00001.parquet", "sha256")
    assert not (tmp_path / "out" / "meta.json").exists()


def test_nanochat_from_a_hub_of_one_shard_is_refused(nanochat_shards, tmp_path):
    """A repository of one shard holds val alone: one line saying so, and no folder; the run
    had exited 0 with a folder its own verify refused."""
    commit, one = (
        sha256(b"one shard")[:40],
        {"shard_00000.parquet": nanochat_shards["shard_00000.parquet"]},
    )
    with LocalHub(CLIMBMIX, {commit: one}, refs={"main": commit}) as hub:
        result = from_hub(hub, tmp_path / "home", tmp_path / "out", "--shards", "2")
    assert_one_line(result, "holds 1 shard_*.parquet file(s)", "two shards or more")
    assert not (tmp_path / "out" / "meta.json").exists()


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([], id="no-count"),
        pytest.param(["--shards", "1", "--max-tokens", "5"], id="both-counts"),
        pytest.param(["--shards", "1", "--data-files", "a.txt"], id="with-data-files"),
    ],
)
def test_nanochat_from_hub_usage_errors(args, tmp_path):
    """--from-hub without a count, with two, or with local files: exit 2, one line."""
    result = run(NANOCHAT, "--from-hub", CLIMBMIX, "--out-dir", tmp_path / "out", *args)
    assert_one_line(result, code=2)


def test_openwebtext_budget_val_is_the_same(openwebtext_hub, tmp_path):
    """OpenWebText with --max-tokens: val is the first ceil(0.0005 * 600) = 1 document (the
    whole's count read from the footers), the same bytes for two budgets; train holds N tokens
    or more, the documents after it; verify calls the folders OK."""
    script = REPO / "data" / "openwebtext" / "prepare.py"
    vals = []
    for budget in (2_000, 9_000):
        out = tmp_path / f"out-{budget}"
        args = ("--max-tokens", budget, "--num-proc", 1, "--out-dir", out)
        assert_ok(run(script, *args, env=openwebtext_hub.env))
        meta = json.loads((out / "meta.json").read_text())
        assert meta["split"]["documents"]["val"] == 1
        assert meta["splits"]["train"]["tokens"] >= budget
        assert meta["source"]["budget"]["first_documents"] == 1
        assert_ok(run(REPO / "prepare_common.py", "verify", out))
        vals.append((out / "val.bin").read_bytes())
    assert vals[0] == vals[1]


def test_a_budget_counts_the_folders_tokenizer(hub, trained, tmp_path):
    """With --tokenizer (1,000 ids: more tokens a document than GPT-2's), the budget is met in
    that tokenizer's tokens: its train holds N of them or more, from fewer documents than
    GPT-2's budget of the same N."""
    trained.save(tmp_path / "tok.json")
    documents = {}
    for name, extra in (("gpt2", ()), ("trained", ("--tokenizer", tmp_path / "tok.json"))):
        out = tmp_path / name
        assert_ok(prepare(hub, tmp_path / "home", out, "--max-tokens", 20_000, *extra))
        meta = json.loads((out / "meta.json").read_text())
        assert meta["splits"]["train"]["tokens"] >= 20_000
        documents[name] = meta["source"]["documents"]
    assert documents["trained"] < documents["gpt2"]
