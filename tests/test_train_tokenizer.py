"""train_tokenizer.py as a user runs it: real text in, a tokenizer file out, one-line errors."""

import pytest
from conftest import REPO, assert_clean_failure, run_python

from bpe import EOT, Tokenizer, train_bpe_from_iterator

SCRIPT = REPO / "train_tokenizer.py"


def run_cli(*args, cwd=None):
    return run_python(SCRIPT, *args, cwd=cwd)


@pytest.fixture(scope="module")
def shakespeare_50k(tmp_path_factory, shakespeare):
    """The first 50 KB of Tiny Shakespeare as train.txt, the next 20 KB as eval.txt."""
    folder = tmp_path_factory.mktemp("cli")
    (folder / "train.txt").write_text(shakespeare[:50_000], encoding="utf-8")
    (folder / "eval.txt").write_text(shakespeare[50_000:70_000], encoding="utf-8")
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
    "args, fragments",
    [
        pytest.param(
            ["--input", "missing.txt", "--vocab-size", 300],
            ["missing.txt", "does not exist"],
            id="missing",
        ),
        pytest.param(
            ["--input", "good.txt", "bad.txt", "--vocab-size", 300],
            ["bad.txt", "not valid UTF-8", "byte offset 6"],
            id="non-utf8",
        ),
        pytest.param(
            ["--input", "good.txt", "--vocab-size", 256, "--special-tokens", EOT],
            ["vocab_size 256 is too small", "257", "--vocab-size"],
            id="vocab-too-small",
        ),
        pytest.param(
            ["--input", "good.txt", "--vocab-size", 300, "--special-tokens", EOT, EOT],
            ["special tokens must be distinct", "--special-tokens"],
            id="duplicate-special",
        ),
        pytest.param(
            ["--input", "good.txt", "--vocab-size", 300, "--special-tokens", "<|a|>", "<|a|>b"],
            ["special token '<|a|>' is a prefix of '<|a|>b'", "--special-tokens"],
            id="special-prefix-of-another",
        ),
        pytest.param(
            ["--input", "empty.txt", "--vocab-size", 300],
            ["empty.txt", "no text to train on"],
            id="empty",
        ),
    ],
)
def test_errors_are_one_line_and_write_nothing(tmp_path, args, fragments):
    (tmp_path / "good.txt").write_text("some ordinary text " * 10, encoding="utf-8")
    (tmp_path / "bad.txt").write_bytes(b"hello \xff world")
    (tmp_path / "empty.txt").write_bytes(b"")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert_clean_failure(run_cli(*args, "--out", "tok.json", cwd=tmp_path), *fragments)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_an_out_folder_that_does_not_exist_is_one_line(tmp_path):
    (tmp_path / "good.txt").write_text("some ordinary text " * 10, encoding="utf-8")
    out = tmp_path / "no_such_folder" / "t.json"
    result = run_cli("--input", "good.txt", "--vocab-size", 300, "--out", out, cwd=tmp_path)
    assert_clean_failure(result, "no_such_folder", "does not exist")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.txt"]
