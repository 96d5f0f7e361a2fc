"""Benchmark: a lesson's `--dedup exact` and `--dedup near` step (dedup/tokenized.deduplicate, the
call the lessons make after tokenizing) at two sizes 10x apart, compiled (dedup/compiled.py,
numba: the fast-dedup extra) against fast.py's numpy code (the reference it equals), in one run.

The documents: random GPT-2 ids in documents of about 1,000 tokens (geometric lengths), the EOT
after each, as a lesson's tokenized Dataset ("ids", "len"), memory-mapped from an Arrow file in
a temporary folder as the lessons' are; 1% of them a copy of an earlier one, another 1% such a
copy with one token in 100 changed (a near copy). Each run is a process of its own: wall and
CPU time of the call alone, the process's peak memory (maximum resident set, from os.wait4),
train tokens per wall second; then the ratios, and whether the two kept the same documents
(they must: the same signatures).

    python bench/bench_dedup.py [--tokens 10000000 100000000]
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from safety import ArgumentParser  # noqa: E402

EOT = 50256


def write_documents(path, num_tokens, seed=0):
    """A lesson's tokenized documents, about num_tokens, as an Arrow file: (ids, EOT last; len)."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    lengths = rng.geometric(1 / 1000, size=num_tokens // 1000 + 10) + 1
    lengths = lengths[: max(1, np.searchsorted(np.cumsum(lengths), num_tokens))]
    ids = rng.integers(0, EOT, size=int(lengths.sum()), dtype=np.uint16)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    documents = [ids[offsets[i] : offsets[i + 1]] for i in range(len(lengths))]
    for i in rng.choice(np.arange(1, len(documents)), size=len(documents) // 50, replace=False):
        copy = documents[rng.integers(0, i)].copy()
        if i % 2:  # a near copy: one token in 100 changed, the EOT kept
            changed = rng.random(len(copy) - 1) < 0.01
            copy[:-1][changed] = rng.integers(0, EOT, size=int(changed.sum()))
        documents[i] = copy
    for document in documents:
        document[-1] = EOT
    column = pa.ListArray.from_arrays(
        pa.array(np.concatenate([[0], np.cumsum([len(d) for d in documents])]).astype(np.int32)),
        pa.array(np.concatenate(documents)),
    )
    table = pa.table({"ids": column, "len": pa.array([len(d) for d in documents], pa.int64())})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)


def child(rule, compiled, path):
    """One run: the documents mapped, then deduplicate timed alone; prints a JSON line."""
    import datasets

    import dedup.fast
    from dedup.tokenized import deduplicate

    if not compiled:
        dedup.fast.kernels = lambda: None  # fast.py's numpy code
    elif dedup.fast.kernels() is None:
        print(json.dumps({"skipped": "numba is not installed (the fast-dedup extra)"}))
        return
    tokenized = datasets.Dataset.from_file(path)
    tokens = int(tokenized.with_format("arrow")["len"].to_numpy().sum())
    if compiled:  # numba compiles or loads its cache before the clock starts
        deduplicate(tokenized.select(range(2)), rule)
    cpu, wall = time.process_time(), time.perf_counter()
    kept, _ = deduplicate(tokenized, rule)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    record = {"tokens": tokens, "cpu": cpu, "wall": wall, "kept": kept.tolist()}
    print(json.dumps(record))


def run(rule, compiled, path):
    """child() in a process of its own: its record, with its peak memory in MB."""
    command = [sys.executable, __file__, "--child", rule, str(int(compiled)), str(path)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if status:
        sys.exit(f"{' '.join(command)} failed")
    record = json.loads(output.decode().strip().splitlines()[-1])
    return {**record, "peak_mb": usage.ru_maxrss / 1024}


def main():
    if sys.argv[1:2] == ["--child"]:
        rule, compiled, path = sys.argv[2:5]
        child(rule, compiled == "1", path)
        return
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    sizes = [10_000_000, 100_000_000]
    parser.add_argument("--tokens", type=int, nargs="+", default=sizes, help="train tokens")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for num_tokens in args.tokens:
            path = Path(tmp) / f"tokenized-{num_tokens}.arrow"
            write_documents(path, num_tokens)
            for rule in ("exact", "near"):
                compare(rule, path)


def compare(rule, path):
    """The compiled and numpy runs of one rule on one file: their lines and the ratios."""
    runs = {name: run(rule, name == "compiled", path) for name in ("compiled", "numpy")}
    for name, record in runs.items():
        if "skipped" in record:
            print(f"--dedup {rule} {name}: skipped, {record['skipped']}")
            continue
        rate = record["tokens"] / record["wall"] / 1e6
        print(
            f"--dedup {rule} {name}: {record['tokens']:,} tokens, {record['wall']:.2f} s wall, "
            f"{record['cpu']:.2f} s CPU, {record['peak_mb']:,.0f} MB peak, {rate:.1f}M tokens/s; "
            f"{len(record['kept']):,} documents kept"
        )
    compiled, numpy = runs["compiled"], runs["numpy"]
    if "skipped" in compiled:
        return
    same = compiled["kept"] == numpy["kept"]
    print(
        f"--dedup {rule} compiled/numpy: {compiled['wall'] / numpy['wall']:.3f}x wall, "
        f"{compiled['cpu'] / numpy['cpu']:.3f}x CPU; the same documents kept: {same}"
    )
    if not same:
        sys.exit("the compiled and numpy runs kept other documents")


if __name__ == "__main__":
    main()
