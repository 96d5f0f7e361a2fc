"""Benchmark: what repeated boilerplate costs `--dedup near` and `overlap`, against a corpus of the
same size with no repeats, in one run; and what `overlap --ngram N` costs at N = 13 and 10,000.

Three corpora of `--documents` documents each (40 to 80 random words, about 100 GPT-2 tokens):
"distinct", every document its own; "one boilerplate x 100,000", half of them a copy of one
document; "1,000 boilerplates x 100", half of them 100 copies each of 1,000 documents. For each:

- `data/openwebtext/prepare.py --dedup near` on them as a .jsonl file (one process);
- `prepare_common.py overlap` on the same documents' ids as raw uint16 files (val the first 10%
  of the shuffled documents, train the rest, the EOT after each).

Each run is a process of its own: its CPU time and peak memory (maximum resident set, from
os.wait4), and the ratio against the distinct corpus's run. Then `overlap --ngram 13` and
`--ngram 10000` on the distinct folder, CPU time and the ratio.

    NANOGPT_DATA_MIRROR=... python bench/bench_dedup_memory.py [--documents 200000]
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from formats.tokenizers import gpt2_encoding  # noqa: E402
from safety import ArgumentParser  # noqa: E402

EOT = 50256


def corpora(documents, rng):
    """{name: list of texts}: the three corpora, each `documents` long, shuffled."""
    letters = list("abcdefghijklmnopqrstuvwxyz")
    words = ["".join(rng.choice(letters, rng.integers(3, 9))) for _ in range(5000)]

    def texts(count):
        return [" ".join(rng.choice(words, rng.integers(40, 81))) for _ in range(count)]

    half = documents // 2
    shapes = {
        "distinct": texts(documents),
        f"one boilerplate x {half:,}": texts(documents - half) + texts(1) * half,
        f"1,000 boilerplates x {half // 1000:,}": texts(documents - half)
        + texts(1000) * (half // 1000),
    }
    return {name: [found[i] for i in rng.permutation(len(found))] for name, found in shapes.items()}


def run(command):
    """(CPU seconds, peak resident bytes) of one process, which must succeed."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        stderr.seek(0)
        assert os.waitstatus_to_exitcode(status) == 0, stderr.read().decode()
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024  # Linux: kilobytes


def dedup_run(texts, folder):
    """`prepare.py --dedup near` on the texts, one process."""
    data = folder / "docs.jsonl"
    data.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    lesson = REPO / "data" / "openwebtext" / "prepare.py"
    command = [sys.executable, str(lesson), "--data-files", str(data), "--dedup", "near"]
    command += ["--out-dir", str(folder / "out"), "--num-proc", "1"]
    command += ["--cache-dir", str(folder / "cache")]
    return run(command)


def overlap_folder(texts, folder, encoding):
    """The texts' ids as raw uint16 val.bin (the first 10%) and train.bin, the EOT after each."""
    folder.mkdir()
    ids = [np.array(encoding.encode_ordinary(t) + [EOT], np.uint16) for t in texts]
    cut = len(ids) // 10
    np.concatenate(ids[:cut]).tofile(folder / "val.bin")
    np.concatenate(ids[cut:]).tofile(folder / "train.bin")
    return folder


def overlap_run(folder, ngram=13):
    command = [sys.executable, str(REPO / "prepare_common.py"), "overlap", str(folder), "--json"]
    command += ["--boundary-id", str(EOT), "--boundary", "last", "--dtype", "uint16"]
    return run([*command, "--ngram", str(ngram)])


def main():
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("--documents", type=int, default=200_000, help="documents a corpus")
    args = parser.parse_args()
    encoding = gpt2_encoding()
    with tempfile.TemporaryDirectory() as tmp:
        base = {}
        shapes = corpora(args.documents, np.random.default_rng(0))
        for number, (name, texts) in enumerate(shapes.items()):
            folder = Path(tmp) / str(number)
            folder.mkdir()
            for command, (cpu, peak) in (
                ("--dedup near", dedup_run(texts, folder)),
                ("overlap", overlap_run(overlap_folder(texts, folder / "ids", encoding))),
            ):
                base.setdefault(command, peak)
                print(
                    f"{command:>12} on {name:<26} ({len(texts):,} documents): CPU {cpu:6.1f} s, "
                    f"peak {peak / 2**20:6.0f} MiB, {peak / base[command]:.2f}x "
                    "the distinct corpus's"
                )
        times = {n: overlap_run(Path(tmp) / "0" / "ids", n)[0] for n in (13, 10_000)}
        print(
            f"overlap --ngram 13: CPU {times[13]:.1f} s; --ngram 10000: {times[10_000]:.1f} s "
            f"({times[10_000] / times[13]:.2f}x)"
        )


if __name__ == "__main__":
    main()
