"""python -m bpe show: tokens in color (a real pseudo-terminal) or |-separated, and --explain."""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, assert_clean_failure

from bpe import Tokenizer
from bpe.patterns import Pretokenizer
from bpe.show import GPT2_FILES, ShowError, explain, merge_steps, show_tokens, token_text
from bpe.show import main as show_main
from bpe.train import train_bpe_from_iterator

# The book's corpus, one word a line, with Sennrich's counts (low 5, lower 2, widest 3).
BOOK_CORPUS = "low\n" * 5 + "lower\n" * 2 + "lowest\n" + "widest\n" * 3


def run_show(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "bpe", "show", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
    )


def run_show_in_terminal(*args, no_color=False):
    """Run `python -m bpe show` with its stdout on a real pseudo-terminal; return its output."""
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    if no_color:
        env["NO_COLOR"] = "1"
    pty = pytest.importorskip("pty", reason="a pseudo-terminal is POSIX's (not on Windows)")
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "bpe", "show", *map(str, args)], cwd=REPO, stdout=follower, env=env
    )
    os.close(follower)
    output = b""
    while True:
        try:
            block = os.read(leader, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not block:
            break
        output += block
    os.close(leader)
    assert process.wait() == 0
    return output.decode("utf-8").replace("\r\n", "\n")  # the terminal writes \n as \r\n


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    """Tokenizer files: "cat" trained on "the cat in the hat", "book" on the book's corpus."""
    folder = tmp_path_factory.mktemp("tokenizers")
    for name, text, vocab_size in [("cat", "the cat in the hat", 266), ("book", BOOK_CORPUS, 260)]:
        vocab, merges = train_bpe_from_iterator([text], vocab_size)
        Tokenizer(vocab, merges).save(folder / f"{name}.json")
    return folder


@pytest.fixture(scope="module")
def gpt2(gpt2_files):
    return Tokenizer.from_gpt2_files(*gpt2_files)


@pytest.mark.parametrize(
    "token, shown",
    [
        pytest.param(b" hat", " hat", id="text"),
        pytest.param(b"\n\t", "\\n\\t", id="controls-escaped"),
        pytest.param("你".encode()[:2], "<e4 bd>", id="part-of-a-character"),
        pytest.param("你".encode() + b"\xe5", "你<e5>", id="a-character-and-a-part"),
    ],
)
def test_token_text(token, shown):
    assert token_text(token) == shown


def test_gpt2_tokens_without_color(gpt2):
    assert show_tokens(gpt2, "the cat in the hat", color=False) == [
        "the| cat| in| the| hat",
        "ids: [1169, 3797, 287, 262, 6877]",
        "5 tokens, 18 bytes: 3.60 bytes/token",
    ]
    # "你" is 3 bytes, GPT-2 cuts it in two tokens; "好" too.
    assert show_tokens(gpt2, "你好", color=False) == [
        "<e4 bd>|<a0>|<e5 a5>|<bd>",
        "ids: [19526, 254, 25001, 121]",
        "4 tokens, 6 bytes: 1.50 bytes/token",
    ]


@pytest.mark.usefixtures("gpt2_encoding")
def test_cli_colors_gpt2_tokens_on_a_terminal():
    """GPT-2's files come through tiktoken's cache: the gpt2_encoding fixture put them there
    (from NANOGPT_DATA_MIRROR when set) and set TIKTOKEN_CACHE_DIR, which the command inherits."""
    assert run_show_in_terminal("--gpt2", "the cat in the hat") == (
        "\x1b[30;48;5;153mthe\x1b[0m\x1b[30;48;5;194m cat\x1b[0m\x1b[30;48;5;224m in\x1b[0m"
        "\x1b[30;48;5;230m the\x1b[0m\x1b[30;48;5;153m hat\x1b[0m\n"
        "ids: [1169, 3797, 287, 262, 6877]\n"
        "5 tokens, 18 bytes: 3.60 bytes/token\n"
    )


def test_cli_no_color_with_no_color_or_through_a_pipe(tokenizers):
    expected = (
        "the| cat| in| the| hat\nids: [257, 265, 263, 262, 264]\n"
        "5 tokens, 18 bytes: 3.60 bytes/token\n"
    )
    tokenizer = tokenizers / "cat.json"
    assert run_show_in_terminal("--tokenizer", tokenizer, "the cat in the hat", no_color=True) == (
        expected
    )
    result = run_show("--tokenizer", tokenizer, "the cat in the hat")
    assert (result.returncode, result.stdout) == (0, expected), result.stderr


def test_explain_lowest_on_the_book_corpus(tokenizers):
    result = run_show("--tokenizer", tokenizers / "book.json", "--explain", "lowest")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "pretoken 'lowest': 6 bytes: 6c 6f 77 65 73 74\n"
        "  l o w e s t\n"
        "  l ow e s t   256: o + w -> ow\n"
        "  low e s t    257: l + ow -> low\n"
        "  low e st     258: s + t -> st\n"
        "  low est      259: e + st -> est\n"
        "  no merge applies: ids [257, 259]\n"
    )


def test_explain_gpt2_cuts_a_character(gpt2):
    assert explain(gpt2, " 你好") == [
        "pretoken ' 你好': 7 bytes: 20 e4 bd a0 e5 a5 bd",
        "  Ġ <e4> <bd> <a0> <e5> <a5> <bd>",
        "  Ġ <e4 bd> <a0> <e5> <a5> <bd>    19526: <e4> + <bd> -> <e4 bd>",
        "  Ġ <e4 bd> <a0> <e5 a5> <bd>      25001: <e5> + <a5> -> <e5 a5>",
        "  no merge applies: ids [220, 19526, 254, 25001, 121]",
    ]


def test_merge_steps_end_where_encoding_ends(gpt2, shakespeare):
    """The steps shown are the encoder's: their last parts are the ids encode gives."""
    ranks = {token: token_id for token_id, token in gpt2.vocab.items() if token_id < 50256}
    text = shakespeare[:30_000] + " naïve café 東京 🤗 Ελλάδα"
    pretokens = set(Pretokenizer("gpt2").findall(text))
    assert len(pretokens) > 1_000  # every distinct pretoken of the text, not a handful
    for pretoken in pretokens:
        data = pretoken.encode("utf-8")
        steps = list(merge_steps(data, ranks))
        parts = steps[-1][0] if steps else [bytes([b]) for b in data]
        assert [ranks[part] for part in parts] == gpt2.encode_ordinary(pretoken), pretoken


@pytest.mark.parametrize(
    "args, fragment",
    [
        pytest.param(["--file", "missing.txt"], "missing.txt does not exist", id="missing-file"),
        pytest.param(["--file", "latin1.txt"], "latin1.txt is not valid UTF-8", id="not-utf8"),
        pytest.param(["--file", "empty.txt"], "empty.txt is empty", id="empty-file"),
        pytest.param(["--tokenizer", "none.json", "x"], "none.json does not exist", id="no-tok"),
        pytest.param(["--tokenizer", "latin1.txt", "x"], "latin1.txt is not a tokenizer", id="bad"),
    ],
)
def test_bad_input_is_a_show_error(tmp_path, args, fragment):
    """A ShowError is what `python -m bpe` prints as one line (the CLI case below shows it)."""
    (tmp_path / "latin1.txt").write_bytes("café".encode("latin-1"))
    (tmp_path / "empty.txt").write_bytes(b"")
    args = [str(tmp_path / a) if a.endswith((".txt", ".json")) else a for a in args]
    with pytest.raises(ShowError, match=fragment):
        show_main(args)


def test_cli_bad_input_is_one_error_line():
    assert_clean_failure(run_show(""), "the text is empty")


def run_bpe(*args):
    return subprocess.run(
        [sys.executable, "-m", "bpe", *args], cwd=REPO, capture_output=True, text=True
    )


@pytest.mark.parametrize("option", ["--help", "-h"])
def test_python_m_bpe_help_prints_the_usage(option):
    result = run_bpe(option)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert result.stdout.startswith("usage: python -m bpe show [-h] [--tokenizer FILE | --gpt2]")
    assert "show  how a text is cut into tokens" in result.stdout


@pytest.mark.parametrize(
    "args, fragment",
    [
        pytest.param([], "give a command; usage: python -m bpe show [-h]", id="no-command"),
        pytest.param(["shwo"], "'shwo' is not a command; the one command is show", id="other"),
    ],
)
def test_python_m_bpe_without_its_command_is_a_usage_error_holding_the_usage(args, fragment):
    result = run_bpe(*args)
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    (line,) = result.stderr.splitlines()
    assert fragment in line and "usage: python -m bpe show" in line, line
    assert line.startswith("error: ") and line.endswith("(see python -m bpe show --help)"), line


def offline_env(tmp_path, **variables):
    """This environment without tiktoken's cache, with its temporary folder (tiktoken's default
    cache) in tmp_path and every download refused at once (a proxy on a closed port)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TIKTOKEN_CACHE_DIR", "NANOGPT_DATA_MIRROR")
    }
    (tmp_path / "tmp").mkdir()
    closed = "http://127.0.0.1:9"
    return {
        **env,
        "TMPDIR": str(tmp_path / "tmp"),
        "HTTPS_PROXY": closed,
        "HTTP_PROXY": closed,
        **variables,
    }


def filled_cache(folder, gpt2_files):
    """A tiktoken cache as the lessons leave it: <sha1 of the url> for each of GPT-2's files."""
    folder.mkdir(parents=True)
    for path in gpt2_files:
        url = GPT2_FILES[Path(path).name][0]
        shutil.copy(path, folder / hashlib.sha1(url.encode()).hexdigest())
    return folder


def test_gpt2_comes_from_tiktokens_cache_offline(tmp_path, gpt2_files):
    """Offline, python -m bpe show reads GPT-2's files where tiktoken keeps them."""
    env = offline_env(tmp_path, TIKTOKEN_CACHE_DIR=str(filled_cache(tmp_path / "c", gpt2_files)))
    result = run_show("the cat in the hat", env=env)
    assert result.returncode == 0, result.stderr
    assert "ids: [1169, 3797, 287, 262, 6877]" in result.stdout


def test_gpt2_not_in_tiktokens_cache_offline_is_one_line(tmp_path):
    env = offline_env(tmp_path, TIKTOKEN_CACHE_DIR=str(tmp_path / "empty-cache"))
    result = run_show("the cat", env=env)
    assert_clean_failure(result, "cannot fetch GPT-2's encoder.json", "TIKTOKEN_CACHE_DIR")
