"""The documentation's shell blocks run when pasted: README.md, docs/*.md and bench/README.md.

Each document's ```bash blocks run in order, in one bash process (`set -e`: the first failing
command fails the test), from the root of a fresh copy of the repository (the files git tracks,
plus new ones it does not ignore), with this Python first on PATH and the copy's code imported.
The downloads come from NANOGPT_DATA_MIRROR, or from the network.

The convention for a block that cannot run here: the line just before its opening fence is

    <!-- no-test: REASON -->

(it needs the network beyond the mirror, a cluster, nanoGPT, or installs packages); the reason
is required, and shows in the rendered page's source. Usage synopses (`[--flag]`, `a|b`, `...`)
go in ```text blocks, never in ```bash ones: pasted, they run as commands.

A ```text block right after a block that runs is that block's output, and is checked against it:
each stretch of its lines between lines of `...` must appear in what the block printed, in order
(`/path/to/this/repo` standing for the repository's folder). A block showing a run's time (such
as `0.37 s`) is not compared: times vary.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, require_downloads

DOCS = sorted([REPO / "README.md", REPO / "bench" / "README.md", *(REPO / "docs").glob("*.md")])
LANGUAGES = {"bash", "text", "python"}  # a fence names one of these
NO_TEST = re.compile(r"<!-- no-test: (?P<reason>\S.*?) -->")
SYNOPSIS = re.compile(r"\[--?\w|\w\|\w|\.\.\.")  # [--flag], gpt2|gpt4, FILE ...
TIMING = re.compile(r"\d s\b|/s\)")  # "in 0.37 s", "(10,280 merges/s)"
OUTPUT_MARK = "=== the output of the next block ==="


@dataclass
class Block:
    doc: Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    no_test: str  # the reason, or "" if the block runs


def blocks(doc):
    """The fenced blocks of a Markdown file, in order."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j] == "```")
        before = next((line for line in reversed(lines[:i]) if line.strip()), "")
        mark = NO_TEST.fullmatch(before.strip())
        found.append(
            Block(
                doc,
                i + 1,
                lines[i][3:].strip(),
                "\n".join(lines[i + 1 : end]) + "\n",
                mark["reason"] if mark else "",
            )
        )
        i = end + 1
    return found


def where(block):
    return f"{block.doc.relative_to(REPO)}:{block.line}"


ALL_BLOCKS = [block for doc in DOCS for block in blocks(doc)]
RUNNABLE = {doc: [b for b in blocks(doc) if b.language == "bash" and not b.no_test] for doc in DOCS}


def test_every_fence_names_its_language():
    wrong = [f"{where(b)}: {b.language!r}" for b in ALL_BLOCKS if b.language not in LANGUAGES]
    assert not wrong, f"name each block's language, one of {sorted(LANGUAGES)}: {wrong}"


def test_no_usage_synopsis_in_a_bash_block():
    found = [
        f"{where(b)}: {line}"
        for b in ALL_BLOCKS
        if b.language == "bash"
        for line in b.code.splitlines()
        if SYNOPSIS.search(line.split("#")[0])  # a comment may say "..."
    ]
    assert not found, f"a usage synopsis goes in a ```text block: {found}"


def test_no_test_marks_only_bash_blocks():
    text_marked = [where(b) for b in ALL_BLOCKS if b.no_test and b.language != "bash"]
    assert not text_marked, f"only a ```bash block is ever run; drop the mark: {text_marked}"


def expected_outputs(doc):
    """{the index of a block that runs: the ```text block right after it}, timings left out."""
    found, runnable = blocks(doc), RUNNABLE[doc]
    return {
        runnable.index(block): after.code
        for block, after in zip(found, found[1:])
        if block in runnable and after.language == "text" and not TIMING.search(after.code)
    }


def assert_output_shown(expected, printed, repo, block):
    expected = expected.replace("/path/to/this/repo", str(repo))
    stretches = [s.strip("\n") for s in re.split(r"^\.\.\.$", expected, flags=re.M)]
    position = 0
    for stretch in filter(None, stretches):
        found = printed.find(stretch, position)
        assert found >= 0, (
            f"{where(block)} did not print, as its doc shows:\n{stretch}\n---\n{printed}"
        )
        position = found + len(stretch)


def fresh_copy(dest):
    """The repository's files as a fresh clone would have them, plus new files not ignored."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():  # a file deleted but not yet committed is not listed again
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="the blocks are bash; Windows has no bash")
@pytest.mark.parametrize(
    "doc",
    [doc for doc in DOCS if RUNNABLE[doc]],
    ids=lambda doc: str(doc.relative_to(REPO)),
)
def test_shell_blocks_run_in_order(doc, tmp_path):
    require_downloads()
    extras = {
        "datatrove": ("prepare_datatrove.py", "--engine datatrove"),
        "matplotlib": ("--plot",),
        "sentencepiece": ("--variant sp", "--kind sentencepiece"),
    }
    for module, marks in extras.items():
        runs = any(mark in block.code for block in RUNNABLE[doc] for mark in marks)
        if runs and importlib.util.find_spec(module) is None:
            pytest.skip(f"its commands need {module}, an optional extra: pip install -e '.[test]'")
    repo = tmp_path / "repo"  # its parent holds what a block writes beside it (../nanoGPT)
    fresh_copy(repo)
    # the marker on stderr names the block that was running when a command failed; the one on
    # stdout cuts what each block printed
    script = "".join(
        f"echo '>>> {where(b)}' >&2\necho '{OUTPUT_MARK}'\n{b.code}" for b in RUNNABLE[doc]
    )
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        "PYTHONPATH": str(repo),  # the copy's code, not the installed one
        "HF_HOME": str(tmp_path / "hf"),  # datasets' cache: not the user's
        # GPT-2's files: the scripts fill it (from the mirror), python -m bpe show reads it
        "TIKTOKEN_CACHE_DIR": str(tmp_path / "tiktoken"),
        "NO_COLOR": "1",
    }
    result = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stderr[-3000:]}"
    printed = result.stdout.split(OUTPUT_MARK + "\n")[1:]
    for index, expected in expected_outputs(doc).items():
        assert_output_shown(expected, printed[index], repo, RUNNABLE[doc][index])


def test_ci_runs_the_readmes_test_command():
    """.ci/run and the GitHub workflow run the tests exactly as the README tells a contributor."""
    readme = [b for b in blocks(REPO / "README.md") if "pytest" in b.code and b.language == "bash"]
    assert len(readme) == 1, "the README has one block with the test command"
    lines = readme[0].code.splitlines()
    commands = [part.strip() for line in lines for part in line.split("&&") if "pytest" in part]
    ci = [line.split("#")[0].strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    workflow = (REPO / ".github" / "workflows" / "tests.yml").read_text()
    for command in commands:
        assert command in ci, f".ci/run does not run the README's {command!r}"
        assert f"- run: {command}\n" in workflow, f"the workflow does not run {command!r}"
