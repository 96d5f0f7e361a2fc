"""Benchmark: the two engines of data/openwebtext/prepare.py at 100,000 documents, and the plan
step of the datatrove engine at OpenWebText's 8,013,769 documents.

The corpus: ../shared/bench/docs20.txt (~20 MB) cut at line ends into 100,000 documents, as 4
.jsonl files in a temporary folder (nothing is committed). Three runs, alternated `--repeats`
times (other work on the machine shifts single timings; medians are printed):

- datasets: prepare.py --num-proc 2 (the default, single-machine engine; a fresh datasets cache);
- datatrove: prepare.py --engine datatrove --tasks 2 --workers 2 (local executor; a fresh work
  directory);
- floor: tiktoken alone, `encode_ordinary` on the same texts already in memory, split over 2
  forked processes: the time no pipeline on these 2 cores can beat.

Printed per run: wall time, peak memory of the whole process tree (the sum of the RSS of the
script and its workers, sampled every 20 ms) and disk used besides the outputs; then the ratios
the targets are about. Then the plan step alone (`datatrove_stages.make_plan`) on a synthetic
OpenWebText: 8,013,769 document lengths (log-normal around nanoGPT's 1,128 tokens per
document) in 64 task indexes, timed in a fresh process with its peak RSS (VmHWM).

    NANOGPT_DATA_MIRROR=../shared/mirror python bench/bench_openwebtext_scale.py [--repeats 3] [--corpus docs20.txt]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "bench" / "docs20.txt"
SCRIPT = ROOT / "data" / "openwebtext" / "prepare.py"
NUM_DOCUMENTS, NUM_FILES, CORES = 100_000, 4, 2
OPENWEBTEXT_DOCUMENTS, OPENWEBTEXT_TOKENS = (
    8_013_769,
    9_040_017_095,
)  # nanoGPT: 9,035,582,198 + 4,434,897

FLOOR = r"""
import json, sys, time, multiprocessing as mp
from prep.tokenizers import gpt2_encoding
files = sys.argv[1:]
texts = [json.loads(line)["text"] for path in files for line in open(path, encoding="utf-8")]
encoding = gpt2_encoding()
def encode(part):
    return sum(len(encoding.encode_ordinary(text)) + 1 for text in part)
halves = [texts[i::2] for i in range(2)]
with mp.get_context("fork").Pool(2) as pool:
    pool.map(encode, [["warm up"], ["warm up"]])
    start = time.perf_counter()
    tokens = sum(pool.map(encode, halves))
    print(json.dumps({"seconds": time.perf_counter() - start, "tokens": tokens}))
"""

PLAN = r"""
import json, resource, sys, time
import numpy as np
from pathlib import Path
from prep import datatrove_engine, datatrove_stages
work_dir, tasks = Path(sys.argv[1]), int(sys.argv[2])
work = datatrove_engine.Work(work_dir, {"synthetic": True}, {"seed": 2357})
summaries = json.loads((work.tokens / "summaries.json").read_text())
job = json.loads((work.tokens / "job.json").read_text())
def peak():
    return next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM"))
before = peak()
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
start, cpu_start = time.perf_counter(), cpu()
index = np.concatenate([np.load(work.index_file(r)) for r in range(tasks)])
plan = datatrove_stages.make_plan(index, summaries, job, work)
print(json.dumps({"seconds": time.perf_counter() - start, "cpu": cpu() - cpu_start,
                  "peak": peak(), "before": before,
                  "plan": plan["splits"]}))
"""


def make_corpus(corpus, folder):
    """docs20.txt cut at line ends into NUM_DOCUMENTS documents, in NUM_FILES .jsonl files."""
    lines = corpus.read_text(encoding="utf-8").splitlines(keepends=True)
    per_document = len(lines) / NUM_DOCUMENTS
    documents = [
        "".join(lines[round(i * per_document) : round((i + 1) * per_document)])
        for i in range(NUM_DOCUMENTS)
    ]
    files = []
    for f in range(NUM_FILES):
        path = folder / f"part-{f}.jsonl"
        with open(path, "w", encoding="utf-8") as out:
            for document in documents[f::NUM_FILES]:
                out.write(json.dumps({"text": document}) + "\n")
        files.append(path)
    return files


def tree_rss(root_pid):
    """The summed RSS (bytes) of a process and all its descendants, from /proc."""
    children, rss = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def timed(command, env):
    """Run a command; return (wall seconds, peak tree RSS bytes, stdout)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss(process.pid))
        time.sleep(0.02)
    wall = time.perf_counter() - start
    out, err = process.communicate()
    if process.returncode:
        sys.exit(f"{' '.join(map(str, command))} failed:\n{err.decode()[-3000:]}")
    return wall, peak, out.decode()


def disk_usage(path):
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def run_engines(files, tmp, repeats, env):
    results = {"datasets": [], "datatrove": [], "floor": []}
    outputs = {}
    for repeat in range(repeats):
        for name in ("datasets", "datatrove", "floor"):
            out, scratch = tmp / f"{name}-{repeat}", tmp / f"scratch-{name}-{repeat}"
            if name == "floor":
                wall, peak, stdout = timed([sys.executable, "-c", FLOOR, *map(str, files)], env)
                results[name].append((json.loads(stdout)["seconds"], peak, 0))
                continue
            command = [sys.executable, str(SCRIPT), "--data-files", *map(str, files)]
            command += ["--out-dir", str(out)]
            if name == "datasets":
                command += ["--num-proc", str(CORES), "--cache-dir", str(scratch)]
            else:
                command += ["--engine", "datatrove", "--tasks", str(CORES)]
                command += ["--workers", str(CORES), "--work-dir", str(scratch)]
            wall, peak, _ = timed(command, env)
            results[name].append((wall, peak, disk_usage(scratch)))
            outputs[name] = out
            print(
                f"  {name:9s} run {repeat + 1}: {wall:6.2f} s, {peak / 2**20:7.0f} MB", flush=True
            )
            shutil.rmtree(scratch)
    same = all(
        (outputs["datasets"] / f).read_bytes() == (outputs["datatrove"] / f).read_bytes()
        for f in ("train.bin", "val.bin")
    )
    tokens = json.loads((outputs["datasets"] / "meta.json").read_text())["splits"]
    return results, same, sum(split["tokens"] for split in tokens.values())


def synthetic_plan(tmp, tasks=64):
    """Write 64 task indexes of OpenWebText's size (lengths only) and time the plan on them."""
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from prep import datatrove_engine

    rng = np.random.default_rng(0)
    tokens = rng.lognormal(mean=6.6, sigma=0.8, size=OPENWEBTEXT_DOCUMENTS)
    tokens = np.maximum(tokens * (1128 / tokens.mean()), 2).astype(np.uint32)
    work = datatrove_engine.Work(tmp / "plan", {"synthetic": True}, {"seed": 2357})
    work.claim()
    bounds = np.linspace(0, OPENWEBTEXT_DOCUMENTS, tasks + 1).astype(np.int64)
    per_file = -(-OPENWEBTEXT_DOCUMENTS // 80)  # 80 parquet files, as on the hub
    summaries = []
    for rank in range(tasks):
        low, high = int(bounds[rank]), int(bounds[rank + 1])
        index = np.zeros(high - low, datatrove_engine.INDEX_DTYPE)
        numbers = np.arange(low, high)
        index["file"], index["position"] = numbers // per_file, numbers % per_file
        index["tokens"] = tokens[low:high]
        np.save(work.index_file(rank), index)
        total = int(index["tokens"].sum(dtype=np.int64))
        with open(work.token_file(rank), "wb") as f:  # sparse: only its size is checked
            f.truncate(total * 2)
        spans = [
            [
                int(f),
                int(max(low, f * per_file) - f * per_file),
                int(min(high, (f + 1) * per_file) - f * per_file),
            ]
            for f in range(low // per_file, (high - 1) // per_file + 1)
        ]
        summaries.append(
            {"documents": high - low, "tokens": total, "spans": spans, "bad": 0, "first_bad": None}
        )
    lengths = [min(per_file, OPENWEBTEXT_DOCUMENTS - f * per_file) for f in range(80)]
    job = {"source": "synthetic OpenWebText", "dtype": "uint16", "val_fraction": 0.0005,
           "seed": 2357, "files": [f"train-{f:05d}-of-00080.parquet" for f in range(80)],
           "lengths": lengths}  # fmt: skip
    (work.tokens / "summaries.json").write_text(json.dumps(summaries))
    (work.tokens / "job.json").write_text(json.dumps(job))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-c", PLAN, str(work.tokens.parent), str(tasks)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(result.stdout), work.tokens.parent


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="default: %(default)s")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = make_corpus(args.corpus, tmp)
        size = sum(f.stat().st_size for f in files)
        print(f"corpus: {NUM_DOCUMENTS:,} documents, {size / 1e6:.1f} MB in {NUM_FILES} files")
        results, same, tokens = run_engines(files, tmp, args.repeats, env)
        median = {
            name: [statistics.median(r[i] for r in runs) for i in range(3)]
            for name, runs in results.items()
        }
        print(f"\n{tokens:,} tokens; train.bin and val.bin identical across engines: {same}")
        print(f"{'run':10s} {'wall (s)':>9s} {'peak RSS (MB)':>14s} {'scratch disk (MB)':>18s}")
        for name, (wall, peak, disk) in median.items():
            print(f"{name:10s} {wall:9.2f} {peak / 2**20:14.0f} {disk / 2**20:18.1f}")
        floor = median["floor"][0]
        print(
            f"datatrove / datasets: {median['datatrove'][0] / median['datasets'][0]:.2f}x (target <= 1.2); "
            f"datasets / floor: {median['datasets'][0] / floor:.2f}x, "
            f"datatrove / floor: {median['datatrove'][0] / floor:.2f}x (target <= 1.5)"
        )
        per_core = tokens / floor / CORES
        print(f"floor throughput: {per_core:,.0f} tokens/s per core")
        for name in ("datasets", "datatrove"):
            rate = tokens / median[name][0] / CORES  # tokens per second per core, whole script
            hours = {n: OPENWEBTEXT_TOKENS / (rate * 8 * n) / 3600 for n in (1, 8, 64)}
            more = f", {hours[8]:.2f} h on 8 nodes, {hours[64] * 60:.0f} min on 64" * (
                name == "datatrove"
            )
            print(f"{name}: OpenWebText at this rate: {hours[1]:.1f} h on 1 node of 8 cores{more}")
            print(
                f"  scratch disk per output byte: {median[name][2] / (tokens * 2):.2f} "
                f"-> {median[name][2] / (tokens * 2) * OPENWEBTEXT_TOKENS * 2 / 1e9:.0f} GB for OpenWebText"
            )
        plan, _ = synthetic_plan(tmp)
        print(
            f"\nplan step, {OPENWEBTEXT_DOCUMENTS:,} documents in 64 tasks: {plan['seconds']:.2f} s "
            f"wall, {plan['cpu']:.2f} s CPU, "
            f"peak RSS {plan['peak'] / 2**20:.0f} MB ({(plan['peak'] - plan['before']) / 2**20:.0f} MB "
            f"above the interpreter); splits: {plan['plan']}"
        )


if __name__ == "__main__":
    main()
