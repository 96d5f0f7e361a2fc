"""What the model sees: the document index beside every document split (train.docs.npy,
val.docs.npy), `python prepare_common.py packing`, and the document starts `show` marks.

The documents are made by hand so that their lengths are known: "a" and k - 2 times " a" are
k - 1 GPT-2 tokens, so with its end-of-text id a document of k tokens."""

import hashlib
import json
import os
import pty
import subprocess
import sys

import numpy as np
import pytest
from conftest import (
    COMMON,
    OWT,
    OWT_DATATROVE,
    REPO,
    assert_clean_failure,
    run_python,
    write_jsonl,
)

from inspection import main as inspect_folder

EOT = "<|endoftext|>"
T = 8
# longer than T, exactly T + 1, a single token (an empty text), and others; 0.2 of 10 go to val
LENGTHS = [20, T + 1, 1, 5, 3, 14, 2, 9, 30, 4]

pytestmark = pytest.mark.usefixtures("downloads")  # GPT-2's files


def text_of(length):
    """A text GPT-2 encodes to length - 1 tokens: with the end-of-text id, `length` tokens."""
    return "" if length == 1 else "a" + " a" * (length - 2)


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    folder = tmp_path_factory.mktemp("documents")
    write_jsonl(folder / "docs.jsonl", [text_of(n) for n in LENGTHS])
    return folder / "docs.jsonl"


def prepare(script, documents, out, *args):
    result = run_python(
        script,
        "--data-files",
        documents,
        "--out-dir",
        out,
        "--val-fraction",
        0.2,
        *args,
        env={"HF_DATASETS_CACHE": str(out.parent / f"cache-{out.name}")},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def gpt2_run(documents, tmp_path_factory):
    return prepare(OWT, documents, tmp_path_factory.mktemp("gpt2") / "out")


def scanned_starts(data, eot_id):
    """Where each document starts, found by reading the stream: after every end-of-text id."""
    ends = np.flatnonzero(data == eot_id)
    return np.concatenate([[0], ends[:-1] + 1]).astype(np.uint64)


def assert_index_is_the_scan(out, dtype, eot_id):
    meta = json.loads((out / "meta.json").read_text(encoding="utf-8"))
    for split in ("train", "val"):
        data = np.fromfile(out / f"{split}.bin", dtype=dtype)
        starts = np.load(out / f"{split}.docs.npy")
        assert starts.dtype == np.uint64 and starts.ndim == 1
        assert starts.tolist() == scanned_starts(data, eot_id).tolist()
        record = meta["splits"][split]["index"]
        sha256 = hashlib.sha256((out / f"{split}.docs.npy").read_bytes()).hexdigest()
        assert record == {"file": f"{split}.docs.npy", "documents": len(starts), "sha256": sha256}
    assert run_python(COMMON, "verify", out).returncode == 0


def test_the_index_is_an_independent_scan_of_the_gpt2_stream(gpt2_run):
    assert_index_is_the_scan(gpt2_run, np.uint16, 50256)
    assert len(np.load(gpt2_run / "val.docs.npy")) == 2  # ceil(0.2 * 10)


def test_the_index_of_a_trained_tokenizer_whose_eot_is_not_50256(
    documents, shakespeare_path, tmp_path
):
    tokenizer = tmp_path / "tok.json"
    trained = run_python(
        REPO / "train_tokenizer.py",
        "--input",
        shakespeare_path,
        "--vocab-size",
        300,
        "--special-tokens",
        EOT,
        "--max-chars",
        200_000,
        "--out",
        tokenizer,
    )
    assert trained.returncode == 0, trained.stderr
    eot_id = json.loads(tokenizer.read_text(encoding="utf-8"))["special_tokens"][EOT]
    assert eot_id != 50256
    out = prepare(OWT, documents, tmp_path / "out", "--tokenizer", tokenizer)
    assert_index_is_the_scan(out, np.uint16, eot_id)


def test_the_datatrove_index_equals_the_datasets_engines(documents, gpt2_run, tmp_path):
    pytest.importorskip("datatrove", reason="needs datatrove: pip install -e '.[scale]'")
    out = prepare(OWT_DATATROVE, documents, tmp_path / "out", "--tasks", 2)
    for name in ("train.docs.npy", "val.docs.npy", "train.bin", "val.bin"):
        assert (out / name).read_bytes() == (gpt2_run / name).read_bytes(), name


def tampered(starts):
    u64 = lambda values: np.array(values, dtype=np.uint64)  # noqa: E731
    starts = starts.tolist()
    return {
        "not increasing": u64([0, *starts[1:][::-1]]),
        "past the end": u64([*starts[:-1], 10**6]),
        "off a boundary": u64([0, *(s + 1 for s in starts[1:])]),
        "first not 0": u64([s + 1 for s in starts]),
        "int64": np.array(starts, dtype=np.int64),
        "one document short": u64(starts[:-1]),
    }


@pytest.mark.parametrize(
    "case, fragment",
    [
        pytest.param("not increasing", "do not strictly increase", id="not-increasing"),
        pytest.param("past the end", "past the split's", id="past-the-end"),
        pytest.param("off a boundary", "end-of-text id 50256", id="off-a-document-boundary"),
        pytest.param("first not 0", "start at token 0", id="first-not-0"),
        pytest.param("int64", "not the", id="wrong-dtype"),
        pytest.param("one document short", "not the", id="a-document-missing"),
    ],
)
def test_verify_names_a_tampered_index(case, fragment, gpt2_run, tmp_path):
    index = with_train_index(gpt2_run, tmp_path / "out", lambda starts: tampered(starts)[case])
    result = run_python(COMMON, "verify", index.parent)
    assert_clean_failure(result, str(index), fragment, logs_before=True)


def with_train_index(gpt2_run, out, change, count=False):
    """A copy of the folder whose train.docs.npy is change(its starts), its sha256 recorded (and
    with `count`, its count of documents): the record agrees, only the starts can tell."""
    out.mkdir()
    for name in os.listdir(gpt2_run):
        (out / name).write_bytes((gpt2_run / name).read_bytes())
    index = out / "train.docs.npy"
    starts = change(np.load(index))
    np.save(index, starts)
    meta = json.loads((out / "meta.json").read_text(encoding="utf-8"))
    record = meta["splits"]["train"]["index"]
    record["sha256"] = hashlib.sha256(index.read_bytes()).hexdigest()
    record["documents"] = len(starts) if count else record["documents"]
    (out / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return index


@pytest.mark.parametrize(
    "dropped",
    [
        pytest.param(1, id="the-second-start"),
        pytest.param(4, id="a-middle-start"),
        pytest.param(-1, id="the-last-start"),
    ],
)
def test_verify_names_an_index_missing_a_document_start(dropped, gpt2_run, tmp_path):
    """An index with one start left out, the record's count and sha256 agreeing, joins two
    documents into one that still ends with the end-of-text id: verify names the file and the
    first token where a document starts that the index leaves out."""
    left_out = int(np.load(gpt2_run / "train.docs.npy")[dropped])
    index = with_train_index(
        gpt2_run, tmp_path / "out", lambda starts: np.delete(starts, dropped), count=True
    )
    result = run_python(COMMON, "verify", index.parent)
    assert_clean_failure(
        result, str(index), f"no document starts at token {left_out:,}", logs_before=True
    )


def test_verify_names_an_index_changed_behind_the_record(gpt2_run, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    for name in os.listdir(gpt2_run):
        (out / name).write_bytes((gpt2_run / name).read_bytes())
    starts = np.load(out / "val.docs.npy")
    np.save(out / "val.docs.npy", starts[::-1].copy())
    result = run_python(COMMON, "verify", out)
    assert_clean_failure(result, "val.docs.npy does not match the sha256", logs_before=True)


def brute_force_report(data, eot_id, block_size):
    """The packing figures, counted one window and one document at a time from the stream."""
    starts = scanned_starts(data, eot_id).tolist()
    n = len(data)
    lengths = [b - a for a, b in zip(starts, starts[1:] + [n])]
    ordered = sorted(lengths)

    def nearest_rank(p):
        return ordered[-(-p * len(lengths) // 100) - 1]

    windows = range(n - block_size)
    return {
        "documents": len(starts),
        "tokens": n,
        "document_tokens": {
            "p50": nearest_rank(50),
            "p90": nearest_rank(90),
            "p99": nearest_rank(99),
            "max": max(lengths),
        },
        "windows_starting_mid_document": sum(i not in starts for i in windows) / len(windows),
        "windows_crossing_a_document_start": sum(
            any(p in starts for p in range(i + 1, i + block_size + 1)) for i in windows
        )
        / len(windows),
        "bos_aligned_tokens_kept": sum(min(k, block_size + 1) for k in lengths) / n,
    }


@pytest.mark.parametrize("split", ["train", "val"])
def test_packing_json_equals_an_independent_count(split, gpt2_run):
    result = run_python(COMMON, "packing", gpt2_run, "--block-size", T, "--split", split, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    data = np.fromfile(gpt2_run / f"{split}.bin", dtype=np.uint16)
    expected = brute_force_report(data, 50256, T)
    assert report.keys() >= expected.keys()
    for key, value in expected.items():
        assert report[key] == pytest.approx(value), key


def test_packing_of_a_split_of_one_document(tmp_path):
    documents = tmp_path / "docs.jsonl"
    write_jsonl(documents, [text_of(n) for n in (25, 3)])  # val gets one document
    out = prepare(OWT, documents, tmp_path / "out")
    result = run_python(COMMON, "packing", out, "--block-size", 2, "--split", "val", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    val = np.fromfile(out / "val.bin", dtype=np.uint16)
    expected = brute_force_report(val, 50256, 2)
    assert report.pop("document_tokens") == expected.pop("document_tokens")
    assert {key: report[key] for key in expected} == pytest.approx(expected)
    assert expected["documents"] == 1 and expected["windows_crossing_a_document_start"] == 0


def test_packing_prints_plain_lines_with_best_fit(gpt2_run):
    result = run_python(COMMON, "packing", gpt2_run, "--block-size", T)
    assert result.returncode == 0, result.stderr
    assert "start mid-document" in result.stdout and "best-fit" in result.stdout


def test_packing_json_holds_every_figure_the_lines_print(gpt2_run, capsys):
    """--json holds each figure the plain lines print, the best-fit one, block_size and bytes
    per token included, under the names a nanochat folder's object uses for its figures."""
    args = ["packing", str(gpt2_run), "--block-size", str(T)]
    inspect_folder(args)
    printed = capsys.readouterr().out
    inspect_folder([*args, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report.keys() == {
        *("documents", "tokens", "document_tokens", "block_size", "bos_aligned_tokens_kept"),
        *("windows_starting_mid_document", "windows_crossing_a_document_start"),
        *("best_fit_tokens_kept", "bytes", "bytes_per_token"),
    }
    lengths = report["document_tokens"]
    for figure in [
        f"{report['documents']:,} documents, {report['tokens']:,} tokens;",
        f"p50 {lengths['p50']:,}, p90 {lengths['p90']:,}, p99 {lengths['p99']:,}, "
        f"max {lengths['max']:,}\n",
        f"block_size {report['block_size']:,}: a window reads {T + 1:,} tokens",
        f"get_batch: {report['windows_starting_mid_document']:.1%} of its windows",
        f"and {report['windows_crossing_a_document_start']:.1%} read on",
        f"keep {report['bos_aligned_tokens_kept']:.1%} of the tokens",
        f"keeps {report['best_fit_tokens_kept']:.1%}\n",
        f"{report['bytes']:,} bytes of text in {report['tokens']:,} tokens: "
        f"{report['bytes_per_token']:.2f} bytes per token",
    ]:
        assert figure in printed


def test_packing_plots_the_lengths(gpt2_run, tmp_path):
    pytest.importorskip("matplotlib", reason="needs the plot extra: pip install -e '.[plot]'")
    plot = tmp_path / "lengths.png"
    result = run_python(COMMON, "packing", gpt2_run, "--block-size", T, "--plot", plot)
    assert result.returncode == 0, result.stderr
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "args, fragment",
    [
        pytest.param(["--block-size", 8], "lists no document index", id="a-folder-without-index"),
        pytest.param(["--block-size", 0], "is less than 1", id="block-size-0"),
    ],
)
def test_packing_refuses_in_one_line(args, fragment, tmp_path, shakespeare_path):
    out = tmp_path / "char"
    made = run_python(
        REPO / "data/shakespeare_char/prepare.py", "--input", shakespeare_path, "--out-dir", out
    )
    assert made.returncode == 0, made.stderr
    result = run_python(COMMON, "packing", out, *args)
    assert fragment in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert result.returncode in (1, 2) and len(result.stderr.strip().splitlines()) == 1


def test_packing_of_a_shard_folder_says_which_format_has_an_index(documents, tmp_path):
    out = prepare(OWT, documents, tmp_path / "llmc", "--format", "llmc")
    result = run_python(COMMON, "packing", out, "--block-size", T)
    assert_clean_failure(result, "lists shards, which have no document index", "--format bin")


def first_start_after(out, low):
    starts = np.load(out / "train.docs.npy")
    return int(starts[np.searchsorted(starts, low + 1)])


def test_show_marks_where_a_document_starts_through_a_pipe(gpt2_run):
    start = first_start_after(gpt2_run, 0)
    result = run_python(COMMON, "show", gpt2_run, "--offset", start - 2, "--block-size", 4)
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line[:5].strip().isdigit()]
    assert [row.endswith("<- a document starts") for row in rows] == [False, False, True, False]
    assert "<|endoftext|>" in rows[1] and "\033[" not in result.stdout


def test_show_colours_a_document_start_on_a_terminal(gpt2_run):
    start = first_start_after(gpt2_run, 0)
    controller, terminal = pty.openpty()
    env = {key: value for key, value in os.environ.items() if key != "NO_COLOR"}
    command = [sys.executable, str(COMMON), "show", str(gpt2_run), "--offset", str(start - 1)]
    process = subprocess.run([*command, "--block-size", "3"], stdout=terminal, env=env, timeout=60)
    os.close(terminal)
    output = os.read(controller, 1 << 16).decode()
    os.close(controller)
    assert process.returncode == 0
    assert "\033[1;36m" in output and "<- a document starts" not in output
    with_no_color = run_python(
        COMMON, "show", gpt2_run, "--offset", start - 1, "--block-size", 3, env={"NO_COLOR": "1"}
    )
    assert "<- a document starts" in with_no_color.stdout
