"""A new document lesson needs no edit of shared code: its dataset pin (repository, revision,
config, files, split) is its own, and `load_documents` takes all of it from the lesson."""

import hashlib
import json

from conftest import run_python
from hub_server import LocalHub, parquet_bytes

# A lesson as a learner would add it: data/stories/prepare.py, importing prepare_common only.
NEW_LESSON = """
import json
from prepare_common import HubDataset, load_documents
from safety import run_main

STORIES = HubDataset("someone/stories", "{revision}", "tiny", "tiny/*.parquet", split="validation")


def main():
    dataset = load_documents(STORIES, None, num_proc=1, cache_dir=None)
    print(json.dumps(list(dataset["text"])))


if __name__ == "__main__":
    run_main(main)
"""


def test_a_new_lesson_pins_its_own_repository_revision_config_and_split(tmp_path):
    revision = hashlib.sha1(b"the pinned commit").hexdigest()
    pinned = ["once upon a time", "the end"]
    other = ["a commit the lesson does not pin"]
    commits = {
        revision: {"tiny/validation-0.parquet": parquet_bytes(pinned)},
        hashlib.sha1(b"main").hexdigest(): {"tiny/validation-0.parquet": parquet_bytes(other)},
    }
    script = tmp_path / "data" / "stories" / "prepare.py"
    script.parent.mkdir(parents=True)
    script.write_text(NEW_LESSON.format(revision=revision), encoding="utf-8")
    with LocalHub("someone/stories", commits, refs={"main": list(commits)[1]}) as hub:
        result = run_python(script, env=hub.environment(tmp_path / "client"))
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout.splitlines()[-1]) == pinned
        asked = {path for _, path, _ in hub.requests}
    assert any(f"someone/stories/resolve/{revision}/tiny/" in path for path in asked)
    assert not hub.unknown
