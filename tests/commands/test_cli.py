"""Every command's usage errors: one line, `error: ... (see PROG --help)`, exit code 2.

A misspelled option gets "did you mean"; nanoGPT's underscore spellings (--out_dir, --vocab_size)
and the --option=value form are accepted everywhere, and the underscore spellings are not shown
in --help. Each case runs the command in a fresh process, as a user types it.
"""

import os
import subprocess
import sys

import pytest
from conftest import REPO

COMMANDS = {
    "shakespeare_char": ["data/shakespeare_char/prepare.py"],
    "shakespeare": ["data/shakespeare/prepare.py"],
    "openwebtext": ["data/openwebtext/prepare.py"],
    "openwebtext_datatrove": ["data/openwebtext/prepare_datatrove.py"],
    "fineweb": ["data/fineweb/prepare.py"],
    "fineweb_datatrove": ["data/fineweb/prepare_datatrove.py"],
    "parameter_golf": ["data/parameter_golf/prepare.py"],
    "train_tokenizer": ["train_tokenizer.py"],
    "nanochat": ["data/nanochat/prepare.py"],
    "verify": ["prepare_common.py", "verify"],
    "show": ["prepare_common.py", "show"],
    "bpb": ["prepare_common.py", "bpb"],
    "overlap": ["prepare_common.py", "overlap"],
    "bpe_show": ["-m", "bpe", "show"],
    **{path.stem: [f"bench/{path.name}"] for path in sorted((REPO / "bench").glob("bench_*.py"))},
}


def run(command, *args, cwd=REPO):
    return subprocess.run(
        [sys.executable, *COMMANDS[command], *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
    )


def assert_usage_error(result, *fragments):
    """Exit code 2, nothing on stdout, one line on stderr: error: ... (see ... --help)."""
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and lines[0].endswith(" --help)"), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize(
    "command, args, fragments",
    [
        pytest.param(
            "shakespeare_char",
            ["--out-dri", "x"],
            ["unrecognized option --out-dri; did you mean --out-dir?"],
            id="shakespeare_char-misspelled",
        ),
        pytest.param(
            "fineweb",
            ["--shard_size=0"],
            ["argument --shard-size: 0 is less than 1"],
            id="fineweb-llmc-spelling-shard-size-0",
        ),
        pytest.param(
            "fineweb",
            ["--type", "edu10"],
            ["argument --type: invalid choice: 'edu10'"],
            id="fineweb-unknown-type",
        ),
        pytest.param(
            "shakespeare_char",
            ["--vocab_from=some"],
            ["argument --vocab-from: invalid choice: 'some'"],
            id="shakespeare_char-underscore-equals",
        ),
        pytest.param(
            "shakespeare",
            ["--tokenizr", "t.json"],
            ["did you mean --tokenizer?", "(see data/shakespeare/prepare.py --help)"],
            id="shakespeare-misspelled",
        ),
        pytest.param(
            "shakespeare",
            ["--out_dir"],
            ["--out-dir: expected one argument"],
            id="shakespeare-underscore",
        ),
        pytest.param(
            "openwebtext",
            ["--num_proc=0"],
            ["argument --num-proc: 0 is less than 1"],
            id="openwebtext-underscore-equals",
        ),
        pytest.param(
            "openwebtext",
            ["--val_fraction", "1"],
            ["argument --val-fraction: 1 is not a number strictly between 0 and 1"],
            id="openwebtext-underscore",
        ),
        pytest.param(
            "openwebtext",
            ["--data-file", "x.jsonl"],
            ["unrecognized option --data-file; did you mean --data-files?"],
            id="openwebtext-no-abbreviation",
        ),
        pytest.param(
            "openwebtext_datatrove",
            ["--taks", "3"],
            ["did you mean --tasks?"],
            id="datatrove-misspelled",
        ),
        pytest.param(
            "openwebtext_datatrove",
            ["--work_dir=w", "--tasks=0"],
            ["--tasks and --workers must be at least 1"],
            id="datatrove-checked-after-parsing",
        ),
        pytest.param(
            "fineweb_datatrove",
            ["--sampel", "10BT"],
            ["unrecognized option --sampel; did you mean --sample?"],
            id="fineweb_datatrove-misspelled",
        ),
        pytest.param(
            "train_tokenizer",
            ["--inptu", "a.txt"],
            ["unrecognized option --inptu; did you mean --input?"],
            id="train_tokenizer-misspelled-before-required",
        ),
        pytest.param(
            "train_tokenizer",
            ["--input", "a.txt", "--vocab_size=x"],
            ["argument --vocab-size: invalid int value: 'x'"],
            id="train_tokenizer-underscore-equals",
        ),
        pytest.param(
            "train_tokenizer",
            ["--input", "a.txt", "--trace", "-1"],
            ["argument --trace: -1 is less than 0"],
            id="train_tokenizer-trace-negative",
        ),
        pytest.param(
            "train_tokenizer",
            ["--input", "a.txt", "--trace", "9" * 10_000],
            ["argument --trace: '999", "... (10,000 characters)' is not a whole number"],
            id="train_tokenizer-trace-huge-shortened",
        ),
        pytest.param(
            "show",
            ["folder", "--block-size", "0"],
            ["argument --block-size: 0 is less than 1"],
            id="show-block-size-0-as-packing",
        ),
        pytest.param(
            "overlap",
            ["folder", "--boundary-id", "-1"],
            ["argument --boundary-id: -1 is less than 0"],
            id="overlap-boundary-id-negative",
        ),
        pytest.param(
            "overlap",
            ["folder", "--boundary-id", "x"],
            ["argument --boundary-id: 'x' is not a whole number"],
            id="overlap-boundary-id-not-a-number",
        ),
        pytest.param(
            "train_tokenizer",
            ["--input", "a.txt", "--vocab_sise", "300"],
            ["unrecognized option --vocab_sise; did you mean --vocab-size?"],
            id="train_tokenizer-misspelled-underscore",
        ),
        pytest.param(
            "nanochat",
            ["--vocab-size", "265"],
            ["--vocab-size", "at least 266"],
            id="nanochat-vocab-size-265",
        ),
        pytest.param(
            "train_tokenizer",
            ["--input", "a.txt", "--format", "nanochat", "--vocab-size", "265", "--out", "d"],
            ["--vocab-size", "at least 266"],
            id="train_tokenizer-nanochat-vocab-size-265",
        ),
        pytest.param(
            "nanochat",
            ["--vocab-size", "2147483657"],
            ["--vocab-size", "at most 2,147,483,647"],
            id="nanochat-vocab-size-2147483657",
        ),
        pytest.param(
            "train_tokenizer",
            [
                "--input",
                "a.txt",
                "--format",
                "nanochat",
                "--vocab-size",
                "2147483657",
                "--out",
                "d",
            ],
            ["--vocab-size", "at most 2,147,483,647"],
            id="train_tokenizer-nanochat-vocab-size-2147483657",
        ),
        pytest.param(
            "train_tokenizer",
            ["--input", "a.txt", "--tasks", "2"],
            ["--tasks needs --engine datatrove"],
            id="train_tokenizer-engine-option",
        ),
        pytest.param(
            "train_tokenizer",
            [],
            ["the following arguments are required: --input"],
            id="train_tokenizer-required",
        ),
        pytest.param(
            "parameter_golf",
            ["--varaint", "sp1024"],
            ["unrecognized option --varaint; did you mean --variant?"],
            id="parameter_golf-misspelled",
        ),
        pytest.param(
            "parameter_golf",
            ["--variant", "sp1024", "bytes"],
            ["'bytes' is not byte260 nor sp<N>"],
            id="parameter_golf-variant",
        ),
        pytest.param(
            "parameter_golf",
            ["--tokenizer", "my tok.json"],
            ["'my tok.json': its copy is named tokenizers/<its name>.json"],
            id="parameter_golf-tokenizer-name-its-folder-cannot-hold",
        ),
        pytest.param(
            "parameter_golf",
            ["--variant", "byte260", "--tokenizer", "t/fineweb_pure_byte_260.json"],
            ["and not fineweb_pure_byte_260.json"],
            id="parameter_golf-tokenizer-named-as-byte260s",
        ),
        pytest.param(
            "train_tokenizer",
            ["--input", "x.txt", "--vocab-size", "1024", "--kind", "sentencepiece"],
            ["--kind sentencepiece: give --out PREFIX"],
            id="train_tokenizer-sentencepiece-out",
        ),
        pytest.param(
            "verify",
            [],
            ["the following arguments are required: folder", "prepare_common.py verify --help"],
            id="verify-required",
        ),
        pytest.param(
            "show",
            ["data/x", "--block_size=x"],
            ["argument --block-size: 'x' is not a whole number"],
            id="show-underscore-equals",
        ),
        pytest.param(
            "show",
            ["data/x", "--sed", "1"],
            ["did you mean --seed?", "(see prepare_common.py show --help)"],
            id="show-misspelled",
        ),
        pytest.param(
            "bpe_show",
            ["--tokenzier", "x.json", "hi"],
            ["unrecognized option --tokenzier; did you mean --tokenizer?"],
            id="bpe_show-misspelled-not-taken-as-text",
        ),
        pytest.param(
            "bpe_show",
            ["--tokenizer=x.json", "--gpt2", "hi"],
            ["argument --gpt2: not allowed with argument --tokenizer"],
            id="bpe_show-equals",
        ),
        pytest.param(
            "bpe_show",
            [],
            ["one of the arguments text --file --explain is required", "python -m bpe show --help"],
            id="bpe_show-required",
        ),
    ],
)
def test_a_usage_error_is_one_line(command, args, fragments):
    assert_usage_error(run(command, *args), *fragments)


LESSONS = [name for name, argv in COMMANDS.items() if argv[0].startswith("data/")]


@pytest.mark.parametrize("command", LESSONS)
def test_an_empty_out_dir_is_a_usage_error(command):
    """Path("") is the current folder: an empty --out-dir wrote the outputs there."""
    assert_usage_error(run(command, "--out-dir", ""), "argument --out-dir: an empty path")


@pytest.mark.parametrize("command", [name for name in COMMANDS if name.startswith("bench_")])
def test_the_benchmarks_too(command):
    assert_usage_error(run(command, "--rnus", "2"), "unrecognized option --rnus")


def test_python_m_bpe_without_show_is_one_line():
    result = subprocess.run(
        [sys.executable, "-m", "bpe", "shwo"], cwd=REPO, capture_output=True, text=True
    )
    assert_usage_error(result, "'shwo' is not a command; the one command is show")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_shows_one_spelling(command):
    result = run(command, "--help")
    assert result.returncode == 0, result.stderr
    options = [word for word in result.stdout.split() if word.startswith("--")]
    assert options, result.stdout
    assert not [option for option in options if "_" in option.split("=")[0]], result.stdout


def test_nanogpt_spellings_run_a_lesson(tmp_path):
    """--out_dir=DIR and --input=FILE, nanoGPT's way of writing options, prepare a folder."""
    text = tmp_path / "abba.txt"
    text.write_text("ABBA" * 10, encoding="utf-8")
    result = run("shakespeare_char", f"--input={text}", f"--out_dir={tmp_path / 'out'}")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "meta.json").is_file()


def test_the_text_after_double_dash_may_look_like_an_option():
    result = subprocess.run(
        [sys.executable, "-m", "bpe", "show", "--tokenizer", "missing.json", "--", "--tokenzier"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert (
        result.stderr
        == "error: --tokenizer missing.json does not exist; write one with train_tokenizer.py\n"
    )


# `python SCRIPT ARGS...` in a Python where `import datatrove` fails as it does when datatrove is
# not installed (None in sys.modules: what `import` sees when a module is absent); checked by
# hand in a venv holding `pip install -e .` only, with the same results
WITHOUT_DATATROVE = """
import os, runpy, sys
sys.modules["datatrove"] = None
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
runpy.run_path(sys.argv[0], run_name="__main__")
"""
DATATROVE_COMMANDS = {
    "openwebtext": ["data/openwebtext/prepare_datatrove.py"],
    "fineweb": ["data/fineweb/prepare_datatrove.py"],
    "train_tokenizer": ["train_tokenizer.py", "--vocab-size", "300", "--engine", "datatrove"],
}


@pytest.mark.parametrize("command", list(DATATROVE_COMMANDS))
def test_without_datatrove_help_works_and_a_run_says_what_to_install(command, tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"text": "hello"}\n', encoding="utf-8")
    script, *options = DATATROVE_COMMANDS[command]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    without = [sys.executable, "-c", WITHOUT_DATATROVE, script]
    help_ = subprocess.run([*without, "--help"], cwd=REPO, env=env, capture_output=True, text=True)
    assert help_.returncode == 0, help_.stderr
    assert "--tasks" in help_.stdout
    data = ["--input" if command == "train_tokenizer" else "--data-files", docs]
    out = (
        ["--out", tmp_path / "tok.json"]
        if command == "train_tokenizer"
        else ["--out-dir", tmp_path / "out"]
    )
    result = subprocess.run(
        [*without, *options, *data, *out], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr == (
        'error: this needs datatrove, which is not installed: pip install -e ".[scale]" '
        "(the scale extra)\n"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["docs.jsonl"]
