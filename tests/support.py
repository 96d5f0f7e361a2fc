"""Helpers the test files share: run a script as a user would, and check a clean failure."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_python(script, *args, cwd=None):
    """Run `python SCRIPT ARGS...` in a fresh process, as a user would; capture its output."""
    return subprocess.run(
        [sys.executable, str(script), *map(str, args)], cwd=cwd, capture_output=True, text=True
    )


def assert_clean_failure(result, *fragments):
    """Exit code 1 and one `error: ...` line on stderr holding each fragment; no traceback."""
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
