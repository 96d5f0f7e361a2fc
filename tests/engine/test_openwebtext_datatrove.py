"""data/openwebtext/prepare_datatrove.py: byte for byte the files of prepare.py (the datasets
engine).

Real datatrove executors on local files: the local one (forked processes), Slurm's through
stand-in sbatch/scontrol/srun (tests/stand_ins/slurm/) that run datatrove's own launch scripts here,
and Ray's when Ray is installed. Each comparison is against a run of the default (datasets) engine
on the same files. The hub path of this engine is tested in test_openwebtext_hub.py.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import (
    REPO,
    SLURM,
    hand_made_tokenizer,
    kill_session,
    paused_command,
    session_processes,
)
from conftest import start as start_in_session
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import executors, readers
from inspection import verify
from safety import PrepareError
from safety.commit import leftover_temporaries

pytestmark = pytest.mark.usefixtures("downloads")  # Tiny Shakespeare, GPT-2's files

pytest.importorskip("datatrove", reason="needs datatrove: pip install -e '.[scale]'")

SCRIPT = REPO / "data" / "openwebtext" / "prepare_datatrove.py"
DATASETS_SCRIPT = REPO / "data" / "openwebtext" / "prepare.py"  # the reference
VAL_FRACTION = "0.01"


def run(*args, tmp_path, env=None, script=SCRIPT, paused_at=None, **popen):
    env = dict(os.environ, HF_DATASETS_CACHE=str(tmp_path / "hf-cache"), **(env or {}))
    if paused_at:  # it stops itself at that step of its commit
        command = paused_command(paused_at, script, *args)
    else:
        command = [sys.executable, str(script), *map(str, args)]
    if popen:
        return subprocess.Popen(command, env=env, **popen)
    return subprocess.run(command, capture_output=True, text=True, env=env)


def prepare(out, *args, tmp_path, env=None, script=SCRIPT):
    result = run(*args, "--out-dir", out, tmp_path=tmp_path, env=env, script=script)
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def datatrove(out, files, *args, tmp_path, env=None):
    """Our engine on `files`; returns the output folder."""
    return prepare(
        out,
        "--data-files",
        *files,
        "--val-fraction",
        VAL_FRACTION,
        *args,
        tmp_path=tmp_path,
        env=env,
    )


def assert_same_files(out, reference):
    for name in ("train.bin", "val.bin"):
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name
    assert verify(out) == []


def assert_one_error_line(stderr, message):
    lines = stderr.rstrip("\n").split("\n")
    assert lines[-1].startswith("error: ") and message in lines[-1], stderr[-3000:]
    assert sum(line.startswith("error: ") for line in lines) == 1, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]


@pytest.fixture(scope="module")
def jsonl(paragraphs, tmp_path_factory):
    """3,000 documents in 3 JSON Lines files, with what a reader can get wrong: empty texts (kept),
    blank lines (skipped), a byte order mark opening the second file, CRLF line ends, non-ASCII."""
    folder = tmp_path_factory.mktemp("jsonl")
    documents = paragraphs[:3000]
    documents[5] = documents[1500] = ""
    documents[7] = "caf\u00e9 \U0001f600 \u4e2d\u6587 <|endoftext|> \r\n tab\t"
    files = []
    for i in range(3):
        lines = [json.dumps({"text": d, "id": n}) for n, d in enumerate(documents[i::3])]
        lines[10:10] = ["", "   "]  # blank lines: not documents
        data = "\n".join(lines) + "\n"
        if i == 1:
            data = "\ufeff" + data.replace("\n", "\r\n")
        files.append(folder / f"part-{i}.jsonl")
        files[-1].write_bytes(data.encode("utf-8"))
    return files


@pytest.fixture(scope="module")
def jsonl_reference(jsonl, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("jsonl-reference")
    return prepare(
        tmp / "out",
        "--data-files",
        *jsonl,
        "--val-fraction",
        VAL_FRACTION,
        tmp_path=tmp,
        script=DATASETS_SCRIPT,
    )


@pytest.fixture(scope="module")
def work_root(tmp_path_factory):
    """One --work-dir shared by the runs with different --tasks: each gets its own folder."""
    return tmp_path_factory.mktemp("work")


# ---------------------------------------------------------------------------------------------
# the pieces


def test_task_slices():
    assert readers.task_slices([3, 5], 3) == [
        [(0, 0, 2)],
        [(0, 2, 3), (1, 0, 2)],
        [(1, 2, 5)],
    ]
    assert readers.task_slices([1, 1], 4) == [[], [(0, 0, 1)], [], [(1, 0, 1)]]


def parquet_rows(path, rows, row_group_size):
    pq.write_table(pa.table({"text": ["x"] * rows}), path, row_group_size=row_group_size)
    return [str(path)], "parquet", [rows]


def text_files(folder, sizes):
    files = [folder / f"{i}.txt" for i in range(len(sizes))]
    for path, size in zip(files, sizes):
        path.write_bytes(b"x" * size)
    return [str(path) for path in files], "text", [1] * len(files)


@pytest.mark.parametrize(
    "make_input, most",
    [
        pytest.param(
            lambda t: jsonl_lines(t / "a.jsonl", 600), (6, "600 lines, 0.0 MB"), id="600-lines"
        ),
        pytest.param(
            lambda t: jsonl_lines(t / "a.jsonl", 99), (1, "99 lines, 0.0 MB"), id="99-lines"
        ),
        pytest.param(lambda t: jsonl_lines(t / "a.jsonl", 0), (1, "0 lines, 0.0 MB"), id="empty"),
        pytest.param(
            lambda t: parquet_rows(t / "a.parquet", 3000, 100),
            (30, "3,000 rows, 0.0 MB"),
            id="30-row-groups",
        ),
        pytest.param(
            lambda t: parquet_rows(t / "a.parquet", 3000, 3000),
            (1, "3,000 rows, 0.0 MB"),
            id="one-row-group",
        ),
        pytest.param(
            lambda t: text_files(t, [3 << 20, 1, 1]), (3, "3 files, 3.1 MB"), id="3-text-files"
        ),
        pytest.param(
            lambda t: text_files(t, [1] * 250), (2, "250 files, 0.0 MB"), id="250-text-files"
        ),
    ],
)
def test_tasks_are_capped_at_the_work_there_is(tmp_path, make_input, most):
    """A task gets 100 documents or 1 MB at least, and a piece no task splits (a line, a row
    group, a .txt file): more tasks would each cost more to start than they do."""
    files, kind, lengths = make_input(tmp_path)
    assert readers.most_tasks(files, kind, lengths) == most


def jsonl_lines(path, count):
    path.write_text("".join(f'{{"text": "{i}"}}\n' for i in range(count)), encoding="utf-8")
    return [str(path)], "json", [path.stat().st_size]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "", "b c", "\u00e9", "x" * 40, None]), min_size=1, max_size=30),
    st.lists(st.integers(0, 2000), max_size=6),
    st.booleans(),
)
def test_json_pieces_read_every_line_once(tmp_path_factory, texts, cuts, bom):
    """Cut a JSON Lines file anywhere: the pieces together read each document once, in order."""
    path = tmp_path_factory.mktemp("pieces") / "x.jsonl"
    lines = [json.dumps({"text": t}) if t is not None else "" for t in texts]
    data = ("\ufeff" if bom else "") + "\n".join(lines)
    path.write_bytes(data.encode("utf-8"))
    size = path.stat().st_size
    bounds = sorted({0, size, *(min(c, size) for c in cuts)})
    read, end = [], 0
    for start, stop in zip(bounds, bounds[1:]):
        reader = readers.PieceReader(str(path), "json", start, stop)
        read += [text for _, text in reader]
        assert reader.begin == end  # contiguous spans: what the plan checks
        end = reader.end
    assert end == size
    assert read == [t for t in texts if t is not None]


def test_work_directory_is_named_by_its_inputs(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "a"}\n')
    identity = readers.file_identity(str(tmp_path / "a.jsonl"))
    config = {"files": [identity], "tasks": 2}
    work = executors.Work(tmp_path / "work", config, {"seed": 1})
    work.claim()
    assert executors.Work(tmp_path / "work", dict(config, tasks=3), {}).tokens != work.tokens
    with open(tmp_path / "a.jsonl", "a") as f:
        f.write('{"text": "b"}\n')  # the same file with one more document: another folder
    changed = {"files": [readers.file_identity(str(tmp_path / "a.jsonl"))], "tasks": 2}
    assert executors.Work(tmp_path / "work", changed, {}).tokens != work.tokens
    (work.tokens / "run.json").write_text(json.dumps(dict(config, tasks=5)))  # foreign files
    with pytest.raises(PrepareError, match="was made by another run"):
        work.claim()


# ---------------------------------------------------------------------------------------------
# whole runs: the same bytes as the datasets engine


@pytest.mark.parametrize(
    "tasks, workers",
    [
        pytest.param(1, 1, id="1-task"),
        pytest.param(2, 2, id="2-tasks-2-workers"),
        pytest.param(7, 2, id="more-tasks-than-files"),
    ],
)
def test_jsonl_same_bytes_as_datasets_engine(
    jsonl, jsonl_reference, work_root, tmp_path, tasks, workers
):
    out = datatrove(
        tmp_path / "out",
        jsonl,
        "--tasks",
        tasks,
        "--workers",
        workers,
        "--work-dir",
        work_root,
        tmp_path=tmp_path,
    )
    assert_same_files(out, jsonl_reference)
    meta = json.loads((out / "meta.json").read_text())
    reference = json.loads((jsonl_reference / "meta.json").read_text())
    assert meta["splits"] == reference["splits"]
    assert (
        meta["split"]["documents"] == reference["split"]["documents"] == {"train": 2970, "val": 30}
    )
    assert meta["split"]["numpy"] == np.__version__
    assert meta["options"]["engine"] == "datatrove" and meta["options"]["tasks"] == tasks
    # runs with other --tasks never share token files: one folder per set of options
    assert len(list(work_root.glob("*/tasks/tokens-00000.bin"))) >= 1
    assert all(
        json.loads((folder.parent.parent / "run.json").read_text())["tasks"]
        == len(list(folder.parent.glob("tokens-*.bin")))
        for folder in work_root.glob("*/tasks/tokens-00000.bin")
    )


def test_parquet_same_bytes_as_datasets_engine(jsonl, jsonl_reference, tmp_path):
    """The JSON Lines corpus's documents, in the same order, as 2 parquet files (the datasets
    engine gives the same files for both, see test_openwebtext.py)."""
    documents = [
        json.loads(line)["text"]
        for path in jsonl
        for line in path.read_text(encoding="utf-8-sig").splitlines()
        if line.strip()
    ]
    assert len(documents) == 3000
    # row groups of 100: the tasks' rows start and end inside row groups and files
    for name, part in (("a", documents[:1700]), ("b", documents[1700:])):
        pq.write_table(pa.table({"text": part}), tmp_path / f"{name}.parquet", row_group_size=100)
    files = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    out = datatrove(tmp_path / "out", files, "--tasks", 5, "--workers", 2, tmp_path=tmp_path)
    assert_same_files(out, jsonl_reference)


def test_json_arrays_same_bytes_as_datasets_engine(jsonl, jsonl_reference, tmp_path):
    """The corpus as .json files, the first an indented JSON array, the second JSON Lines:
    `datasets` reads both kinds by the one suffix, and so does the engine (the array's lines
    were read as JSON Lines: "line 2: not valid JSON")."""
    documents = [
        json.loads(line)["text"]
        for path in jsonl
        for line in path.read_text(encoding="utf-8-sig").splitlines()
        if line.strip()
    ]
    rows = [{"text": text} for text in documents]
    (tmp_path / "a.json").write_text(json.dumps(rows[:1700], indent=2), encoding="utf-8")
    lines = "".join(json.dumps(row) + "\n" for row in rows[1700:])
    (tmp_path / "b.json").write_text(lines, encoding="utf-8")
    files = [tmp_path / "a.json", tmp_path / "b.json"]
    out = datatrove(tmp_path / "out", files, "--tasks", 3, "--workers", 2, tmp_path=tmp_path)
    assert_same_files(out, jsonl_reference)
    args = ["--data-files", *files, "--val-fraction", VAL_FRACTION]
    local = prepare(tmp_path / "local", *args, tmp_path=tmp_path, script=DATASETS_SCRIPT)
    assert_same_files(local, jsonl_reference)


def test_tasks_capped_at_the_work_there_is(jsonl, jsonl_reference, tmp_path):
    """--tasks 100000 on 3,000 documents (3,006 lines with the blank ones): 30 tasks, in a few
    seconds, not 100,000 processes started in turn; the same files."""
    out = tmp_path / "out"
    args = ["--data-files", *jsonl, "--val-fraction", VAL_FRACTION, "--out-dir", out]
    result = run(*args, "--tasks", 100_000, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        "note: --tasks 100,000 capped at 30 for 3,006 lines, 0.6 MB (at least 100 documents or "
        "1 MB a task)" in result.stdout.splitlines()
    )
    assert_same_files(out, jsonl_reference)
    assert json.loads((out / "meta.json").read_text())["options"]["tasks"] == 30


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL of a process group is POSIX's")
def test_crash_and_resume(jsonl, jsonl_reference, tmp_path):
    """SIGKILL the whole run as soon as one task is done; the same command then resumes it."""
    args = ["--data-files", *jsonl, "--val-fraction", VAL_FRACTION]
    args += ["--tasks", 8, "--work-dir", tmp_path / "work", "--out-dir", tmp_path / "out"]
    first = run(
        *args,
        "--workers",
        1,
        tmp_path=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not list((tmp_path / "work").glob("*/logs/tokenize/completions/*")):
        assert first.poll() is None and time.monotonic() < deadline, "the run ended too soon"
        time.sleep(0.01)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    done = len(list((tmp_path / "work").glob("*/logs/tokenize/completions/*")))
    assert 1 <= done < 8 and not (tmp_path / "out" / "meta.json").exists()
    second = run(*args, "--workers", 2, "--verbose", tmp_path=tmp_path)  # datatrove's logs shown
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"Skipping {done} already completed tasks" in second.stderr
    assert_same_files(tmp_path / "out", jsonl_reference)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX's")
def test_sigkill_of_the_run_alone_leaves_no_process(jsonl, tmp_path):
    """SIGKILL of the run's process alone, while its pool's workers run: they and datatrove's
    Manager process, all its children, exit too; none is left running for no one."""
    args = ["--data-files", *jsonl, "--val-fraction", VAL_FRACTION, "--tasks", 8, "--workers", 2]
    process = start_in_session(
        SCRIPT, *args, "--out-dir", tmp_path / "out", env={"HF_DATASETS_CACHE": str(tmp_path)}
    )
    try:
        # the run, the Manager and the 2 workers
        while process.poll() is None and len(session_processes(process.pid)) < 4:
            time.sleep(0.01)
        assert process.poll() is None, "the run ended before its workers ran"
        process.kill()
        process.wait()
        assert session_processes(process.pid, grace=60) == []
    finally:
        kill_session(process.pid)
        for file in process.files:
            file.close()


@pytest.mark.slow
def test_slurm_executor_with_stand_in_sbatch(jsonl, jsonl_reference, tmp_path):
    """datatrove's real Slurm launch scripts, array ranks and dependencies, run by
    tests/stand_ins/slurm/."""
    env = {
        "PATH": f"{SLURM}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
        + os.environ["PATH"],
        "FAKE_SLURM_STATE": str(tmp_path / "slurm"),
    }
    out = datatrove(
        tmp_path / "out",
        jsonl,
        "--executor",
        "slurm",
        "--slurm-partition",
        "test",
        "--tasks",
        2,
        tmp_path=tmp_path,
        env=env,
    )
    assert_same_files(out, jsonl_reference)
    jobs = [
        json.loads(line) for line in (tmp_path / "slurm" / "jobs.jsonl").read_text().splitlines()
    ]
    assert [job["state"] for job in jobs] == ["COMPLETED"] * 8  # 4 stages, 4 datatrove stats merges
    stages = {job["name"]: job for job in jobs if "launch_pickled_pipeline" in job["command"]}
    assert list(stages) == ["nanogpt-tokenize", "nanogpt-plan", "nanogpt-write", "nanogpt-commit"]
    assert [job["array"] for job in stages.values()] == [2, 1, 2, 1]  # array ranks = tasks
    for before, after in zip(list(stages.values()), list(stages.values())[1:]):
        assert after["dependencies"] == [["afterok", before["id"]]]
    # the commit job took the folder's lock itself (the submitting process only checked it),
    # and removed the lock file as it ended
    assert not (out / ".prepare.lock").exists()


@pytest.fixture(scope="module")
def old_set_with_meta_pkl(tmp_path_factory):
    """A folder the datatrove engine prepared with a trained tokenizer: it holds a meta.pkl,
    which a GPT-2 run does not write."""
    tmp = tmp_path_factory.mktemp("old-set")
    hand_made_tokenizer([(b"t", b"h")], special_tokens=["<|endoftext|>"]).save(tmp / "tok.json")
    (tmp / "old.jsonl").write_text(lines_of(*({"text": f"the old set {i}"} for i in range(40))))
    out = datatrove(
        tmp / "out",
        [tmp / "old.jsonl"],
        "--tokenizer",
        tmp / "tok.json",
        "--tasks",
        1,
        "--work-dir",
        tmp / "work",
        tmp_path=tmp,
    )
    assert (out / "meta.pkl").is_file() and verify(out) == []
    return out


@pytest.mark.parametrize("step", ["uncommitted", "replaced"])
def test_sigkill_in_the_commit_leaves_an_incomplete_folder_and_a_rerun_completes(
    jsonl, jsonl_reference, old_set_with_meta_pkl, work_root, tmp_path, step
):
    """The commit task commits with prepare_common's folder commit, under the lock of the run's
    process: killed between its renames, the folder is reported incomplete; the same command
    then completes it, and the old run's meta.pkl (GPT-2 writes none) is gone."""
    out = tmp_path / "out"
    shutil.copytree(old_set_with_meta_pkl, out, ignore=shutil.ignore_patterns(".*"))
    args = ["--data-files", *jsonl, "--val-fraction", VAL_FRACTION]
    args += ["--tasks", 2, "--work-dir", work_root, "--out-dir", out]
    paused = run(
        *args,
        tmp_path=tmp_path,
        paused_at=step,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _, status = os.waitpid(paused.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), f"the run ended before reaching {step!r}"
        busy = run(*args, tmp_path=tmp_path)  # the paused run's process still holds the lock
        assert busy.returncode == 1
        assert_one_error_line(busy.stderr, f"is being prepared by another run (pid {paused.pid}")
    finally:
        os.killpg(paused.pid, signal.SIGKILL)  # the run and datatrove's manager process
        paused.wait()
    problems = verify(out)
    assert len(problems) == 1 and "incomplete" in problems[0], problems
    assert (out / "meta.pkl").is_file() and leftover_temporaries(out)
    rerun = run(*args, tmp_path=tmp_path)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert_same_files(out, jsonl_reference)
    assert not (out / "meta.pkl").exists() and leftover_temporaries(out) == []


@pytest.mark.slow
@pytest.mark.ray
def test_ray_executor(jsonl, jsonl_reference, tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")
    out = datatrove(
        tmp_path / "out",
        jsonl,
        "--executor",
        "ray",
        "--tasks",
        3,
        "--workers",
        2,
        tmp_path=tmp_path,
    )
    assert_same_files(out, jsonl_reference)


@pytest.mark.slow
@pytest.mark.ray
def test_ray_executor_fails_in_one_line_when_a_task_fails(jsonl, tmp_path):
    """A bad line in the last file fails one of 3 tokenize tasks on Ray: one line naming it,
    exit 1, nothing written. datatrove's Ray executor logs the failure and returns, so the run
    said nothing and exited 0, or the next stage waited for the failed task for good."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(Path(jsonl[-1]).read_text(encoding="utf-8") + '{"text": broken\n')
    out = tmp_path / "out"
    args = ["--data-files", *jsonl[:-1], bad, "--executor", "ray", "--tasks", 3, "--workers", 2]
    result = run(*args, "--out-dir", out, tmp_path=tmp_path)
    assert result.returncode == 1, result.stderr[-3000:]
    # Ray may forward a worker's log line after ours: the one `error:` line is the run's
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {bad} line "), result.stderr
    assert "not valid JSON" in errors[0] and "Traceback" not in result.stderr, result.stderr
    assert not (out / "meta.json").exists()


# ---------------------------------------------------------------------------------------------
# bad input: what the datasets engine gives, one line, no outputs


def lines_of(*objects):
    return "".join(json.dumps(o) + "\n" for o in objects)


BAD_JSONL = {
    # null, missing and non-string texts: 3 bad documents, as the datasets engine counts them
    "missing-text": lines_of(
        {"text": "a"}, {"text": "b"}, {"text": None}, {"url": "u"}, {"text": 5}
    ),
    # no object has a text field: the lessons' missing column; one null text is a bad row
    "no-text-field": lines_of({"body": "a", "url": "u"}, {"body": "b"}, {"id": 3}),
    "null-texts": lines_of({"text": None, "url": "u"}, {"url": "v"}),
    "invalid-json-line": '{"text": "a"}\n{"text": "b\n{"text": "c"}\n',
    "duplicate-key": '{"text": "a"}\n{"text": "b", "text": "c"}\n',
}


@pytest.mark.parametrize(
    "case, extra, message",
    [
        pytest.param(
            "missing-text",
            [],
            "3 of 5 documents have a missing or non-string 'text' (the first at row 2)",
            id="missing-text",
        ),
        pytest.param(
            "no-text-field",
            [],
            "has no 'text' column; its columns are: body, url, id",
            id="no-text-field",
        ),
        pytest.param(
            "null-texts",
            [],
            "2 of 2 documents have a missing or non-string 'text' (the first at row 0)",
            id="null-texts",
        ),
        pytest.param("invalid-json-line", [], "line 2: not valid JSON", id="bad-json"),
        pytest.param("duplicate-key", [], "the key 'text' appears twice", id="duplicate-key"),
        pytest.param("corrupt.parquet", [], "as a parquet file", id="corrupt-parquet"),
        pytest.param(
            "no-text.parquet",
            [],
            "has no 'text' column; its columns are: body, url",
            id="no-text-column",
        ),
    ],
)
def test_bad_input_is_one_line_and_no_output(tmp_path, case, extra, message):
    if case == "corrupt.parquet":
        (tmp_path / case).write_bytes(b"PAR1 not really")
    elif case == "no-text.parquet":
        pq.write_table(pa.table({"body": ["a"], "url": ["u"]}), tmp_path / case)
    else:
        case = f"{case}.jsonl"
        (tmp_path / case).write_text(BAD_JSONL[case[:-6]])
    out = tmp_path / "out"
    result = run(
        "--data-files",
        tmp_path / case,
        "--tasks",
        2,
        *extra,
        "--out-dir",
        out,
        tmp_path=tmp_path,
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert_one_error_line(result.stderr, message)
    assert str(tmp_path / case) in result.stderr.splitlines()[-1]
    assert not out.exists()  # the folder the run created is gone, its work directory too
