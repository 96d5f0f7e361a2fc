"""Benchmark: tiktoken against the fast encoder (formats/encoders.py), GPT-2, on the same texts.

Each run is a fresh process that loads the texts and the encoder before its clock starts, then
encodes every document with `encode_to_numpy(text, disallowed_special=())` (what the pipelines
call) and reports CPU time (its own: the machine is shared), wall time and a sha256 of the ids.
With 2 processes each takes every other document; wall is from the first start to the last
end, CPU the sum. Runs alternate tiktoken / fast, `--repeats` times; medians are printed, with
the ratio, and the bench stops if any ids differ.

Texts: each FILE given (split into documents at "<|endoftext|>", else at blank lines), Tiny
Shakespeare (through the project's checked download or $NANOGPT_DATA_MIRROR) and 3,000
generated Unicode stress documents (every plane, combining marks, NUL, the special token as text).

    NANOGPT_DATA_MIRROR=../shared/mirror python bench/bench_encoders.py [FILE ...] [--repeats 3]
"""

import hashlib
import json
import os
import random
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from safety import ArgumentParser, fetch  # noqa: E402

LESSON = ROOT / "data" / "shakespeare_char" / "prepare.py"
TINY_SHAKESPEARE = runpy.run_path(str(LESSON))["TINY_SHAKESPEARE"]  # the lesson's pin

EDGES = ["<|endoftext|>", "'s", "\u180e", "e\u0301", "\x00", "\u3000", "\r\n", " the", "12345"]


def unicode_documents(count=3000, seed=0):
    """Seeded stress documents: random code points of every plane mixed with edge pieces."""
    rng = random.Random(seed)
    planes = [(0x20, 0x7F), (0xA0, 0x2FFF), (0x3000, 0xD7FF), (0xE000, 0xFFFD), (0x10000, 0x3FFFF)]
    documents = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(20, 400)):
            if rng.random() < 0.3:
                parts.append(rng.choice(EDGES))
            else:
                low, high = rng.choice(planes)
                parts.append("".join(chr(rng.randint(low, high)) for _ in range(rng.randint(1, 8))))
            parts.append(" " if rng.random() < 0.5 else "")
        documents.append("".join(parts))
    return documents


def file_documents(path):
    text = Path(path).read_text(encoding="utf-8")
    separator = "<|endoftext|>" if "<|endoftext|>" in text else "\n\n"
    return [doc for doc in text.split(separator) if doc]


def child(texts_path, encoder, half, halves):
    """One timed run (in its own process): -> one JSON line of cpu, start, end, sha256, tokens."""
    os.environ["NANOGPT_FAST_ENCODER"] = "1" if encoder == "fast" else "0"
    import numpy as np

    from formats.tokenizers import gpt2_encoding

    documents = json.loads(Path(texts_path).read_text(encoding="utf-8"))[half::halves]
    encoding = gpt2_encoding()
    encoding.encode_to_numpy("warm up: build the encoder before the clock", disallowed_special=())
    cpu, start = time.process_time(), time.time()
    ids = [encoding.encode_to_numpy(text, disallowed_special=()) for text in documents]
    cpu, end = time.process_time() - cpu, time.time()
    digest = hashlib.sha256(b"".join(np.asarray(a, np.uint32).tobytes() for a in ids)).hexdigest()
    tokens = sum(map(len, ids))
    print(json.dumps(dict(cpu=cpu, start=start, end=end, sha256=digest, tokens=tokens)))


def timed_run(texts_path, encoder, processes):
    """(wall, cpu, [sha256 per half], tokens) of `processes` children started together."""
    command = [sys.executable, __file__, "--child", str(texts_path), encoder]
    children = [
        subprocess.Popen([*command, str(half), str(processes)], stdout=subprocess.PIPE, text=True)
        for half in range(processes)
    ]
    reports = [json.loads(p.communicate()[0]) for p in children]
    wall = max(r["end"] for r in reports) - min(r["start"] for r in reports)
    cpu = sum(r["cpu"] for r in reports)
    return wall, cpu, [r["sha256"] for r in reports], sum(r["tokens"] for r in reports)


def bench(name, documents, repeats):
    megabytes = sum(len(d.encode("utf-8", "surrogatepass")) for d in documents) / 1e6
    print(f"== {name}: {len(documents):,} documents, {megabytes:.1f} MB")
    with tempfile.TemporaryDirectory() as folder:
        texts_path = Path(folder) / "texts.json"
        texts_path.write_text(json.dumps(documents), encoding="utf-8")
        for processes in (1, 2):
            runs = {"tiktoken": [], "fast": []}
            for _ in range(repeats):
                for encoder in runs:
                    runs[encoder].append(timed_run(texts_path, encoder, processes))
            digests = {tuple(r[2]) for rs in runs.values() for r in rs}
            if len(digests) != 1:
                sys.exit(f"error: {name}: the fast encoder's ids differ from tiktoken's")
            medians = {
                encoder: [statistics.median(run[i] for run in encoder_runs) for i in (0, 1)]
                for encoder, encoder_runs in runs.items()
            }
            tokens = runs["tiktoken"][0][3]
            for encoder, (wall, cpu) in medians.items():
                print(
                    f"  {processes} process(es) {encoder:8s} wall {wall:6.2f} s  CPU {cpu:6.2f} s  "
                    f"{megabytes / cpu:6.1f} MB/s a core  "
                    f"{tokens / cpu / 1e6:5.2f}M tokens/s a core"
                )
            (tw, tc), (fw, fc) = medians["tiktoken"], medians["fast"]
            print(
                f"  {processes} process(es) fast against tiktoken: {tc / fc:.1f}x less CPU, "
                f"{tw / fw:.1f}x less wall; ids identical: yes ({tokens:,} tokens)"
            )


def main():
    if sys.argv[1:2] == ["--child"]:
        texts_path, encoder, half, halves = sys.argv[2:6]
        return child(texts_path, encoder, int(half), int(halves))
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help="texts to encode (UTF-8)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for path in args.files:
        bench(path.name, file_documents(path), args.repeats)
    with tempfile.TemporaryDirectory() as folder:
        shakespeare = fetch(TINY_SHAKESPEARE, Path(folder) / "input.txt")
        bench("Tiny Shakespeare", file_documents(shakespeare), args.repeats)
    bench("Unicode stress", unicode_documents(), args.repeats)


if __name__ == "__main__":
    main()
