"""train_tokenizer.py as a user runs it: real text in, a tokenizer file out, one-line errors."""

import pytest
from conftest import REPO, assert_clean_failure, run_python

from bpe import Tokenizer
from bpe.train import train_bpe_from_iterator
from prep.downloads import TINY_SHAKESPEARE, fetch

SCRIPT = REPO / "train_tokenizer.py"
EOT = "<|endoftext|>"


def run_cli(*args, cwd=None):
    return run_python(SCRIPT, *args, cwd=cwd)


@pytest.fixture(scope="module")
def shakespeare_50k(tmp_path_factory):
    """The first 50 KB of Tiny Shakespeare (from the mirror) as train.txt, the next 20 KB as eval.txt."""
    folder = tmp_path_factory.mktemp("cli")
    text = fetch(TINY_SHAKESPEARE, folder / "input.txt").read_text("utf-8")
    (folder / "train.txt").write_text(text[:50_000], encoding="utf-8")
    (folder / "eval.txt").write_text(text[50_000:70_000], encoding="utf-8")
    return folder


def test_trains_saves_and_reports(shakespeare_50k, tmp_path):
    out = tmp_path / "tok.json"
    result = run_cli(
        "--input",
        shakespeare_50k / "train.txt",
        "--vocab-size",
        600,
        "--out",
        out,
        "--special-tokens",
        EOT,
        "--eval",
        shakespeare_50k / "eval.txt",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    text = (shakespeare_50k / "train.txt").read_text("utf-8")
    vocab, merges = train_bpe_from_iterator([text], 600, [EOT])
    assert f"learned {len(merges)} merges" in result.stdout
    assert "256: Ġ + t -> Ġt" in result.stdout  # first merges rendered in GPT-2's alphabet
    assert "first 10 merges:" in result.stdout and "last 10 merges:" in result.stdout
    assert "compression on the training text:" in result.stdout
    assert f"compression on {shakespeare_50k / 'eval.txt'}:" in result.stdout
    tok = Tokenizer.load(out)
    assert tok.merges == merges and tok.vocab == vocab
    assert tok.special_tokens == {EOT: 599}
    sample = "ROMEO: what light through yonder window breaks?" + EOT
    assert tok.decode(tok.encode(sample)) == sample and tok.encode(sample)[-1] == 599


def test_several_inputs_and_gpt4_pattern(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("hello hello hello 12345\n", encoding="utf-8")
    b.write_text("world world hello\n", encoding="utf-8")
    out = tmp_path / "tok.json"
    result = run_cli(
        "--input", a, b, "--vocab-size", 268, "--out", out, "--pattern", "gpt4", "--workers", 1
    )
    assert result.returncode == 0, result.stderr
    expected = train_bpe_from_iterator([a.read_text(), b.read_text()], 268, pattern="gpt4")
    tok = Tokenizer.load(out)
    assert (tok.vocab, tok.merges) == expected
    assert tok.pattern_name == "gpt4"


def test_small_corpus_says_it_stopped_early(tmp_path):
    text = tmp_path / "tiny.txt"
    text.write_text("Hello world. Hello there, hello!", encoding="utf-8")
    result = run_cli("--input", text, "--vocab-size", 300, "--out", tmp_path / "tok.json")
    assert result.returncode == 0, result.stderr
    assert "asked for vocab_size 300, got 273" in result.stdout
    assert Tokenizer.load(tmp_path / "tok.json").vocab_size == 273


@pytest.mark.parametrize(
    "case, fragments",
    [
        ("missing", ["missing.txt", "does not exist"]),
        ("non-utf8", ["bad.txt", "not valid UTF-8", "byte offset 6"]),
        ("vocab-too-small", ["--vocab-size 256 is too small", "257"]),
        ("out-folder-missing", ["no_such_folder", "does not exist"]),
        ("duplicate-special", ["--special-tokens must be distinct"]),
        ("empty", ["empty.txt", "no text to train on"]),
    ],
)
def test_errors_are_one_line_and_write_nothing(tmp_path, case, fragments):
    good = tmp_path / "good.txt"
    good.write_text("some ordinary text " * 10, encoding="utf-8")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"hello \xff world")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    out = tmp_path / "tok.json"
    args = {
        "missing": ["--input", tmp_path / "missing.txt", "--vocab-size", 300, "--out", out],
        "non-utf8": ["--input", good, bad, "--vocab-size", 300, "--out", out],
        "vocab-too-small": [
            "--input",
            good,
            "--vocab-size",
            256,
            "--out",
            out,
            "--special-tokens",
            EOT,
        ],
        "out-folder-missing": [
            "--input",
            good,
            "--vocab-size",
            300,
            "--out",
            tmp_path / "no_such_folder" / "t.json",
        ],
        "duplicate-special": [
            "--input",
            good,
            "--vocab-size",
            300,
            "--out",
            out,
            "--special-tokens",
            EOT,
            EOT,
        ],
        "empty": ["--input", empty, "--vocab-size", 300, "--out", out],
    }[case]
    before = sorted(p.name for p in tmp_path.iterdir())
    assert_clean_failure(run_cli(*args), *fragments)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
