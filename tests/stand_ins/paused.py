"""Run a script that stops itself (SIGSTOP) at one step of its folder commit, so that a test can
kill it exactly there:

    python tests/stand_ins/paused.py STEP SCRIPT [ARG ...]

The script runs unchanged, as `python SCRIPT ARG ...` would run it; an audit hook (sys.addaudithook,
which sees every os.remove, os.rename and open) watches the commit's file operations in the main
thread and stops the process at STEP of safety/commit.py's order:

- "staged": the journal is in place, nothing else in the folder has changed;
- "uncommitted": the old meta.json is gone, no new file is in place yet;
- "replaced": the first new file is in place;
- "committed": the new meta.json is in place and the journal gone.
"""

import os
import re
import runpy
import signal
import sys
import threading
from pathlib import Path

STEPS = ("staged", "uncommitted", "replaced", "committed")
STAGING = re.compile(r"^\.prepare\.\d+\.tmp$")  # safety/commit.py's staging folder


def in_staging(path):
    return any(STAGING.match(part) for part in Path(path).parts)


def pause_at(step):
    """An audit hook that stops this process at `step` (see STEPS)."""
    main, seen = threading.main_thread().ident, []  # seen: the steps passed so far

    def hook(event, args):
        if threading.get_ident() != main or not args or not isinstance(args[0], (str, Path)):
            return
        path = Path(args[0])
        if seen and seen[-1] in ("journal", "first rename", "journal removed"):
            reached = {"journal": "staged", "first rename": "replaced"}.get(seen[-1], "committed")
            seen.append(reached)
            if reached == step:
                os.kill(os.getpid(), signal.SIGSTOP)
        elif event == "os.rename" and Path(args[1]).name == ".prepare.journal" and not seen:
            seen.append("journal")  # stop at the next operation, once the rename is done
        elif event == "os.remove" and path.name == "meta.json" and not in_staging(path):
            seen.append("old record removed")
        elif event == "os.rename" and in_staging(path) and seen[-1:] == ["old record removed"]:
            seen.append("uncommitted")
            if step == "uncommitted":
                os.kill(os.getpid(), signal.SIGSTOP)
            seen.append("first rename")
        elif event == "os.remove" and path.name == ".prepare.journal" and "replaced" in seen:
            seen.append("journal removed")

    return hook


if __name__ == "__main__":
    step, script = sys.argv[1], sys.argv[2]
    assert step in STEPS, f"{step!r} is none of {STEPS}"
    sys.argv = sys.argv[2:]
    sys.path.insert(0, str(Path(script).resolve().parent))  # as python SCRIPT puts its folder
    sys.addaudithook(pause_at(step))
    runpy.run_path(script, run_name="__main__")
