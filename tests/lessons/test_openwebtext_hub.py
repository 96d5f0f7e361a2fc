"""data/openwebtext/prepare.py's default path, OpenWebText from the Hugging Face hub, run for real.

The script, with no --data-files, loads hf://datasets/Skylion007/openwebtext@<HUB_REVISION>/...
from a local hub (tests/stand_ins/hub_server.py, the `openwebtext_hub` fixture) reached through
HF_ENDPOINT, as a user reaches a mirror of the hub, and must write what a --data-files run over
the same parquet files writes: with the datasets engine (datasets downloads the files) and with
the datatrove engine (its tasks read them through huggingface_hub's HfFileSystem). The hub
answers only the routes the libraries are known to call: any other request is logged in
`hub.unknown`, and every test here asserts that log is empty.
"""

import json

import pytest
from conftest import REPO, assert_clean_failure, run_python
from hub_server import unused_port_url

pytestmark = pytest.mark.usefixtures("downloads")  # Tiny Shakespeare, GPT-2's files

SCRIPT = REPO / "data" / "openwebtext" / "prepare.py"
DATATROVE_SCRIPT = REPO / "data" / "openwebtext" / "prepare_datatrove.py"


def repo_requests(hub):
    """The (method, path, status) of the requests about the repo (the CDN's are not)."""
    return [r for r in hub.requests if r[1].startswith(("/api/datasets/", "/datasets/"))]


@pytest.fixture(scope="module")
def data_files_run(openwebtext_repo, tmp_path_factory):
    """The reference: the default engine on the same parquet files, from disk (--data-files)."""
    out = tmp_path_factory.mktemp("data-files-run")
    result = run_python(
        SCRIPT,
        "--data-files",
        openwebtext_repo.local_files / "*.parquet",
        "--out-dir",
        out / "out",
        "--num-proc",
        2,
        env={"HF_DATASETS_CACHE": str(out / "cache")},
    )
    assert result.returncode == 0, result.stderr
    return out / "out"


def assert_same_as_data_files_run(out, reference, owt, gpt2_encoding):
    for name in ("train.bin", "val.bin"):
        assert (out / name).read_bytes() == (reference / name).read_bytes()
    meta = json.loads((out / "meta.json").read_text())
    assert meta["splits"] == json.loads((reference / "meta.json").read_text())["splits"]
    assert meta["split"]["documents"] == {"train": 599, "val": 1}
    assert meta["source"] == {
        "repo": owt.repo,
        "revision": owt.revision,
        "config": owt.config,
        "documents": 600,
    }
    # every document, once, with its end-of-text token: the runs agree on something real
    tokens = sum(len(gpt2_encoding.encode_ordinary(d)) + 1 for d in owt.documents)
    assert meta["splits"]["train"]["tokens"] + meta["splits"]["val"]["tokens"] == tokens


def assert_pinned_requests(owt):
    """Every request named the pinned commit (not `main`, which holds other files), every
    parquet file was resolved at it, and the hub knew every route the clients used."""
    assert owt.hub.unknown == []
    requests = repo_requests(owt.hub)
    assert requests and all(f"/{owt.revision}" in path for _, path, _ in requests), requests
    resolved = {
        path.split(f"/resolve/{owt.revision}/")[1]
        for _, path, status in requests
        if "/resolve/" in path and status == 302
    }
    assert resolved == {f"{owt.config}/{p.name}" for p in owt.local_files.glob("*.parquet")}


def test_hub_run_equals_data_files_run(openwebtext_hub, data_files_run, gpt2_encoding, tmp_path):
    owt = openwebtext_hub
    result = run_python(SCRIPT, "--out-dir", tmp_path / "out", "--num-proc", 2, env=owt.env)
    assert result.returncode == 0, result.stderr
    assert f"{owt.repo}@{owt.revision[:12]}: 600 documents" in result.stdout
    assert_same_as_data_files_run(tmp_path / "out", data_files_run, owt, gpt2_encoding)
    assert_pinned_requests(owt)
    # datasets downloads each file once (HEAD at the hub, then GET at the CDN) into its cache
    downloads = [r for r in owt.hub.requests if r[1].startswith("/lfs/")]
    assert len(downloads) == 3 and all(status == 200 for _, _, status in downloads)


def test_datatrove_engine_from_the_hub(openwebtext_hub, data_files_run, gpt2_encoding, tmp_path):
    """4 tasks over 3 files: each file downloaded once and checked against the sha256 the hub
    publishes for it, then read by the tasks, their slices crossing the files' bounds."""
    pytest.importorskip("datatrove", reason="needs datatrove: pip install -e '.[scale]'")
    owt = openwebtext_hub
    result = run_python(
        DATATROVE_SCRIPT,
        "--tasks",
        4,
        "--workers",
        2,
        "--out-dir",
        tmp_path / "out",
        env=owt.env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert_same_as_data_files_run(tmp_path / "out", data_files_run, owt, gpt2_encoding)
    assert_pinned_requests(owt)
    downloads = [r for r in owt.hub.requests if r[1].startswith("/lfs/")]
    assert len(downloads) == 3 and all(status == 200 for _, _, status in downloads)


def break_hub(case, owt):
    """Make the hub fail as `case` says; return the HF_ENDPOINT the script gets."""
    if case == "unreachable":
        return unused_port_url()
    if case == "revision gone":  # e.g. the repo's history was rewritten
        owt.hub.commits.pop(owt.revision)
    elif case == "file gone from the CDN":
        owt.hub.blobs.clear()
    return owt.hub.endpoint


@pytest.mark.parametrize(
    "case, cause",
    [
        pytest.param("unreachable", "(ConnectError: ", id="hub unreachable"),
        pytest.param(
            "revision gone",
            "(RevisionNotFoundError: 404 Client Error. Revision Not Found for url: ",
            id="pinned revision not on the hub",
        ),
        pytest.param(
            "file gone from the CDN",
            "(HfHubHTTPError: Client error '404 Not Found' for url ",
            id="file gone from the CDN",
        ),
    ],
)
def test_hub_failure_is_one_line_naming_data_files(case, cause, openwebtext_hub, tmp_path):
    owt = openwebtext_hub
    endpoint = break_hub(case, owt)
    result = run_python(
        SCRIPT, "--out-dir", tmp_path / "out", env={**owt.env, "HF_ENDPOINT": endpoint}
    )
    assert_clean_failure(
        result,
        f"error: cannot load {owt.repo}@{owt.revision[:12]} from the Hugging Face hub ",
        cause,
        "; to use local files instead, pass --data-files 'DIR/*.parquet'",
    )
    assert not (tmp_path / "out").exists()  # the failed run removed the folder it created
    assert owt.hub.unknown == []
