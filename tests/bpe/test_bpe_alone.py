"""bpe/ copied alone into an empty folder works: `python -m bpe show` and a train, encode, decode
round trip, with none of the project importable (numpy, regex and tiktoken are all it needs)."""

import os
import shutil
import subprocess
import sys

import pytest
from conftest import REPO

# Runs `code` with the project's editable install taken off the import path, so that importing
# any other package of the project fails; then names what of the project was imported.
DRIVER = """
import sys
sys.meta_path = [finder for finder in sys.meta_path if "editable" not in repr(finder)]
try:
    exec(compile(sys.argv[1], "<test>", "exec"))
finally:
    import bpe
    project = {"safety", "documents", "formats", "inspection", "engine", "dedup", "prepare_common"}
    print("bpe from", bpe.__file__, file=sys.stderr)
    print(
        "project modules:",
        sorted(project & {m.split(".")[0] for m in sys.modules}),
        file=sys.stderr,
    )
"""

SHOW = """
import runpy
sys.argv = ["bpe", "show", "hello"]
runpy.run_module("bpe", run_name="__main__", alter_sys=True)
"""

ROUND_TRIP = """
from pathlib import Path
from bpe import EOT, Tokenizer, train_bpe
text = "".join(f"the {n} cats sat on {n * 7} mats\\n" for n in range(400)) + EOT + "a hat\\n"
Path("corpus.txt").write_text(text, encoding="utf-8")
vocab, merges = train_bpe("corpus.txt", 300, [EOT])
tokenizer = Tokenizer(vocab, merges, special_tokens={EOT: len(vocab) - 1})
tokenizer.save("tok.json")
again = Tokenizer.load("tok.json")
ids = again.encode(text)
assert again.decode(ids) == text and len(ids) < len(text) / 2, len(ids)
print("round trip:", len(ids), "ids")
"""


@pytest.fixture
def alone(tmp_path):
    """An empty folder holding a copy of bpe/ and nothing else of the project."""
    shutil.copytree(REPO / "bpe", tmp_path / "bpe", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def run_alone(folder, code):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NANOGPT_DATA_MIRROR")}
    return subprocess.run(
        [sys.executable, "-c", DRIVER, code], cwd=folder, env=env, capture_output=True, text=True
    )


def assert_alone(result, folder):
    assert result.returncode == 0, result.stderr
    assert f"bpe from {folder / 'bpe' / '__init__.py'}" in result.stderr, result.stderr
    assert "project modules: []" in result.stderr, result.stderr


@pytest.mark.usefixtures("gpt2_encoding")  # GPT-2's files in tiktoken's cache (TIKTOKEN_CACHE_DIR)
def test_python_m_bpe_show_works_from_a_copy_of_bpe_alone(alone):
    result = run_alone(alone, SHOW)
    assert_alone(result, alone)
    assert "hello\nids: [31373]\n1 tokens, 5 bytes: 5.00 bytes/token" in result.stdout, (
        result.stdout
    )


def test_train_encode_decode_works_from_a_copy_of_bpe_alone(alone):
    result = run_alone(alone, ROUND_TRIP)
    assert_alone(result, alone)
    assert "round trip:" in result.stdout
