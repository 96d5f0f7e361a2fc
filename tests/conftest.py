"""What the test files share: the repo's path, running a script as a user would, checking a clean
one-line failure, and the real inputs (Tiny Shakespeare, GPT-2's encoding) fetched once per run.

Helpers are imported by name (`from conftest import REPO, run_python, assert_clean_failure`);
fixtures are found by pytest. The inputs come through the project's own `fetch`, so with
NANOGPT_DATA_MIRROR set (as CI does) no test touches the network.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import prepare_common

REPO = Path(__file__).resolve().parents[1]


def run_python(script, *args, cwd=None, env=None):
    """Run `python SCRIPT ARGS...` in a fresh process, as a user would; capture its output.

    `env` adds variables to this process's environment (e.g. {"HF_DATASETS_CACHE": ...}).
    """
    return subprocess.run(
        [sys.executable, str(script), *map(str, args)],
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
        capture_output=True,
        text=True,
    )


def assert_clean_failure(result, *fragments, logs_before=False):
    """Exit code 1 and one `error: ...` line on stderr holding each fragment; no traceback.

    The error line is the only line on stderr; with logs_before=True, progress bars and logs of a
    library (datasets) may come before it, but it is still the last line and the only error.
    """
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.rstrip("\n").split("\n")
    assert lines[-1].startswith("error: "), result.stderr
    assert sum(line.startswith("error: ") for line in lines) == 1, result.stderr
    if not logs_before:
        assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[-1], lines[-1]


def names_in(folder):
    """The sorted names in a folder: what a user would see with `ls` (temporary files included)."""
    return sorted(p.name for p in Path(folder).iterdir())


@pytest.fixture(scope="session")
def shakespeare_path(tmp_path_factory):
    """Tiny Shakespeare's input.txt (1,115,394 characters), fetched and checksummed once per run."""
    return prepare_common.fetch(
        prepare_common.TINY_SHAKESPEARE, tmp_path_factory.mktemp("ts") / "input.txt"
    )


@pytest.fixture(scope="session")
def shakespeare(shakespeare_path):
    """Tiny Shakespeare's text."""
    return shakespeare_path.read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def gpt2_encoding():
    """tiktoken's GPT-2 Encoding (50,257 ids), its files fetched through the project's `fetch`."""
    return prepare_common.gpt2_encoding()
