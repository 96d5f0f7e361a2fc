"""prepare_common.py show: one (x, y) block of a prepared folder, read as nanoGPT's get_batch."""

import numpy as np
import pytest
from conftest import REPO, assert_clean_failure, run_python

import prepare_common
from bpe import Tokenizer, train_bpe_from_iterator
from inspection.show import block_lines
from safety import PrepareError

pytestmark = pytest.mark.usefixtures("downloads")  # Tiny Shakespeare, GPT-2's files

# The book's corpus, one word a line (low 5 times, lower 2, lowest 1, widest 3).
BOOK_CORPUS = "low\n" * 5 + "lower\n" * 2 + "lowest\n" + "widest\n" * 3


@pytest.fixture(scope="module")
def abba(tmp_path_factory):
    """The lecture's "ABBA" (ten times) prepared by the character pipeline: A = 0, B = 1."""
    folder = tmp_path_factory.mktemp("abba")
    (folder / "abba.txt").write_text("ABBA" * 10, encoding="utf-8")
    result = run_python(
        REPO / "data/shakespeare_char/prepare.py",
        "--input",
        folder / "abba.txt",
        "--out-dir",
        folder / "prepared",
    )
    assert result.returncode == 0, result.stderr
    return folder / "prepared"


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory, shakespeare):
    """The start of Tiny Shakespeare prepared with GPT-2's tokenizer."""
    folder = tmp_path_factory.mktemp("gpt2")
    (folder / "small.txt").write_text(shakespeare[:2_000], encoding="utf-8")
    result = run_python(
        REPO / "data/shakespeare/prepare.py",
        "--input",
        folder / "small.txt",
        "--out-dir",
        folder / "prepared",
    )
    assert result.returncode == 0, result.stderr
    return folder / "prepared"


@pytest.fixture(scope="module")
def book_folder(tmp_path_factory):
    """The book's corpus prepared with a 260-token BPE trained on it (lowest = low + est)."""
    folder = tmp_path_factory.mktemp("book")
    (folder / "book.txt").write_text(BOOK_CORPUS, encoding="utf-8")
    Tokenizer(*train_bpe_from_iterator([BOOK_CORPUS], 260)).save(folder / "book.json")
    result = run_python(
        REPO / "data/shakespeare/prepare.py",
        "--input",
        folder / "book.txt",
        "--tokenizer",
        folder / "book.json",
        "--out-dir",
        folder / "prepared",
    )
    assert result.returncode == 0, result.stderr
    return folder / "prepared"


def test_abba_shift_by_one(abba):
    result = run_python(REPO / "prepare_common.py", "show", abba, "--block-size", 3)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "train: 36 tokens; at position t the model has read x[0..t] and must predict y[t]\n"
        "x = data[0:3] = [0, 1, 1]\n"
        "y = data[1:4] = [1, 1, 0]\n"
        "    t  x[t]   y[t]\n"
        "    0  0 'A'  1 'B'\n"
        "    1  1 'B'  1 'B'\n"
        "    2  1 'B'  0 'A'\n"
        "train: 36 bytes of text in 36 tokens: 1.00 bytes per token\n"
    )


def test_gpt2_tokens_decoded_one_by_one(gpt2_folder):
    assert block_lines(gpt2_folder, "train", block_size=5, offset=0) == [
        "train: 502 tokens; at position t the model has read x[0..t] and must predict y[t]",
        "x = data[0:5] = [5962, 22307, 25, 198, 8421]",
        "y = data[1:6] = [22307, 25, 198, 8421, 356]",
        "    t  x[t]              y[t]",
        "    0   5962 'First'     22307 ' Citizen'",
        "    1  22307 ' Citizen'     25 ':'",
        "    2     25 ':'           198 '\\n'",
        "    3    198 '\\n'         8421 'Before'",
        "    4   8421 'Before'      356 ' we'",
    ]


def test_trained_bpe_tokens_decoded_one_by_one(book_folder):
    assert block_lines(book_folder, "train", block_size=5, offset=16) == [
        "train: 32 tokens; at position t the model has read x[0..t] and must predict y[t]",
        "x = data[16:21] = [114, 10, 257, 259, 10]",
        "y = data[17:22] = [10, 257, 259, 10, 119]",
        "    t  x[t]       y[t]",
        "    0  114 'r'     10 '\\n'",
        "    1   10 '\\n'   257 'low'",
        "    2  257 'low'  259 'est'",
        "    3  259 'est'   10 '\\n'",
        "    4   10 '\\n'   119 'w'",
    ]


def test_a_block_of_a_whole_split_shows_every_token(tmp_path, shakespeare_path):
    """A block as long as Tiny Shakespeare's val (111,539 tokens): every row is data[t] and
    data[t + 1], in one pass over the block (it took minutes, the rows' width recomputed a row)."""
    out = tmp_path / "char"
    char = REPO / "data/shakespeare_char/prepare.py"
    assert run_python(char, "--input", shakespeare_path, "--out-dir", out).returncode == 0
    data = np.fromfile(out / "val.bin", dtype=np.uint16).tolist()
    lines = block_lines(out, "val", block_size=len(data) - 1, offset=0)
    rows = [line.split() for line in lines[4:]]
    assert len(rows) == len(data) - 1
    assert [int(row[1]) for row in rows] == data[:-1]
    assert int(rows[-1][-2]) == data[-1]


def test_seed_draws_the_offset_like_get_batch(abba, capsys):
    prepare_common.main(["show", str(abba), "--block-size", "5", "--seed", "7"])
    offset = int(np.random.default_rng(7).integers(36 - 5))
    data = np.memmap(abba / "train.bin", dtype=np.uint16, mode="r")
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == f"x = data[{offset}:{offset + 5}] = {data[offset : offset + 5].tolist()}"
    assert (
        lines[2]
        == f"y = data[{offset + 1}:{offset + 6}] = {data[offset + 1 : offset + 6].tolist()}"
    )


@pytest.mark.parametrize(
    "args, fragment",
    [
        pytest.param(["--offset", "33"], "an offset from 0 to 27, not 33", id="offset-too-far"),
        pytest.param(["--split", "test"], "has no split 'test'", id="unknown-split"),
    ],
)
def test_bad_input_is_a_prepare_error(abba, args, fragment):
    with pytest.raises(PrepareError, match=fragment):
        prepare_common.main(["show", str(abba), *args])


@pytest.mark.parametrize(
    "meta_json, fragment",
    [
        pytest.param("{", "is not valid JSON", id="not-json"),
        pytest.param("[]", "holds a JSON array, not an object", id="a-list"),
        pytest.param('{"tokenizer": {}, "splits": {}}', "has format_version None", id="old-format"),
    ],
)
def test_bad_meta_json_is_a_prepare_error(tmp_path, meta_json, fragment):
    (tmp_path / "meta.json").write_text(meta_json, encoding="utf-8")
    with pytest.raises(PrepareError, match=fragment):
        prepare_common.main(["show", str(tmp_path)])


def test_cli_bad_input_is_one_error_line(tmp_path):
    result = run_python(REPO / "prepare_common.py", "show", tmp_path)
    assert_clean_failure(result, f"{tmp_path / 'meta.json'} does not exist")
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    with pytest.raises(PrepareError, match="a-file is a file: give the folder a prepare.py wrote"):
        prepare_common.main(["show", str(tmp_path / "a-file")])
