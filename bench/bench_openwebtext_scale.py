"""Benchmark: the two engines of data/openwebtext/prepare.py at 100,000 documents, and the plan
step of the datatrove engine at OpenWebText's 8,013,769 documents.

The corpus: 100,000 documents in 4 .jsonl files in a temporary folder (nothing is committed),
made from ../shared/bench/docs20.txt (~20 MB, cycled through as often as needed):

- `--sizes openwebtext` (the default): OpenWebText's document sizes. Token counts are drawn
  log-normal around nanoGPT's 1,128 tokens per document (the plan step's synthetic lengths
  below), turned into characters at the corpus's own characters per GPT-2 token (docs20: ~3.1),
  and each document is the next that many characters of the text (~113 million tokens, ~350 MB);
- `--sizes small`: docs20 cut at line ends into documents of ~230 bytes (~70 tokens), 23 MB:
  mostly the engines' fixed cost (imports, pools, caches), which real documents dilute.

`--documents N` makes a quicker run. Three runs, alternated `--repeats` times (other work on the
machine shifts single timings; medians are printed):

- datasets: prepare.py --num-proc 2 (the default, single-machine engine; a fresh datasets cache);
- datatrove: prepare.py --engine datatrove --tasks 2 --workers 2 (local executor; a fresh work
  directory);
- floor: tiktoken alone, `encode_to_numpy` (encode_ordinary's ids as one array, the call
  `prepare_common.tokenize_documents` makes) on the same texts already in memory, every other
  document in each of 2 processes (each reads its half before the clock starts): the time no
  pipeline on these 2 cores can beat;
- ordinary: the same with `encode_ordinary` (a Python list of ids), the issue's first floor. It
  must count the tokens the engines wrote (each document's ids and its end of text), or the
  bench stops.

Printed per run: wall time, peak memory of the whole process tree (the sum of the RSS of the
script and its workers, sampled every 20 ms) and disk used besides the outputs; then the ratios
the targets are about. Then the plan step alone (`stages.make_plan`) on a synthetic
OpenWebText: 8,013,769 document lengths (log-normal around nanoGPT's 1,128 tokens per
document) in 64 task indexes, timed in a fresh process with its peak RSS (VmHWM).

    NANOGPT_DATA_MIRROR=../shared/mirror python bench/bench_openwebtext_scale.py [--repeats 3]
        [--sizes openwebtext|small] [--documents 100000] [--corpus docs20.txt] [--no-plan]
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from safety import ArgumentParser

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "bench" / "docs20.txt"
SCRIPT = ROOT / "data" / "openwebtext" / "prepare.py"
NUM_FILES, CORES = 4, 2
OPENWEBTEXT_DOCUMENTS, OPENWEBTEXT_TOKENS = (
    8_013_769,
    9_040_017_095,
)  # nanoGPT: 9,035,582,198 + 4,434,897

# tiktoken alone on 2 cores; READ_TEXTS is how a worker reads its half of the texts (documents
# half, half + 2, ...): no text goes through a pipe, and no page of a parent's texts is copied
# on write while the clock runs (bench_fineweb_scale.py reads parquet files instead)
FLOOR_TEMPLATE = r"""
import json, sys, time, multiprocessing as mp
from formats.tokenizers import gpt2_encoding
call, files = sys.argv[1], sys.argv[2:]
encoding = gpt2_encoding()
if call == "encode_to_numpy":  # encode_ordinary's ids as one array: what tokenize_documents calls
    encode = lambda text: encoding.encode_to_numpy(text, disallowed_special=())
else:
    encode = encoding.encode_ordinary
def work(half, barrier, results):
READ_TEXTS
    encode("warm up")
    barrier.wait()  # both halves are in memory: the clock starts
    cpu = time.process_time()
    tokens = sum(len(encode(text)) + 1 for text in texts)
    results.put((tokens, time.process_time() - cpu))
context = mp.get_context("fork")
barrier, results = context.Barrier(3), context.SimpleQueue()
workers = [context.Process(target=work, args=(half, barrier, results)) for half in (0, 1)]
for worker in workers:
    worker.start()
barrier.wait()
start = time.perf_counter()
tokens, cpu = map(sum, zip(results.get(), results.get()))
seconds = time.perf_counter() - start
for worker in workers:
    worker.join()
print(json.dumps({"seconds": seconds, "cpu": cpu, "tokens": tokens}))
"""
JSONL_TEXTS = """
    lines = (line for path in files for line in open(path, encoding="utf-8"))
    texts = [json.loads(line)["text"] for i, line in enumerate(lines) if i % 2 == half]"""
FLOOR = FLOOR_TEMPLATE.replace("READ_TEXTS", JSONL_TEXTS.strip("\n"))

PLAN = r"""
import json, resource, sys, time
import numpy as np
from pathlib import Path
from engine import executors, stages
work_dir, tasks = Path(sys.argv[1]), int(sys.argv[2])
work = executors.Work(work_dir, {"synthetic": True}, {"seed": 2357})
summaries = json.loads((work.tokens / "summaries.json").read_text())
job = json.loads((work.tokens / "job.json").read_text())
def peak():
    return next(
        int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM")
    )
before = peak()
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
start, cpu_start = time.perf_counter(), cpu()
index = np.concatenate([np.load(work.index_file(r)) for r in range(tasks)])
plan = stages.make_plan(index, summaries, job, work)
print(json.dumps({"seconds": time.perf_counter() - start, "cpu": cpu() - cpu_start,
                  "peak": peak(), "before": before,
                  "plan": plan["splits"]}))
"""


def openwebtext_token_counts(num_documents, seed=0):
    """Tokens per document of a synthetic OpenWebText: log-normal, mean nanoGPT's 1,128."""
    import numpy as np

    tokens = np.random.default_rng(seed).lognormal(mean=6.6, sigma=0.8, size=num_documents)
    return np.maximum(tokens * (OPENWEBTEXT_TOKENS / OPENWEBTEXT_DOCUMENTS / tokens.mean()), 2)


def small_documents(text, num_documents):
    """The text cut at line ends into num_documents documents of about equal size."""
    lines = text.splitlines(keepends=True)
    per_document = len(lines) / num_documents
    return [
        "".join(lines[round(i * per_document) : round((i + 1) * per_document)])
        for i in range(num_documents)
    ]


def openwebtext_documents(text, num_documents):
    """Documents of OpenWebText's sizes, each the next stretch of the text (cycled through).

    A document's characters = its drawn token count x the text's characters per GPT-2 token,
    so the documents hold about nanoGPT's 1,128 tokens each on average.
    """
    sys.path.insert(0, str(ROOT))
    from formats.tokenizers import gpt2_encoding

    sample = "".join(text[i : i + (1 << 16)] for i in range(0, len(text), len(text) // 32))
    chars_per_token = len(sample) / len(gpt2_encoding().encode_ordinary(sample))
    lengths = (openwebtext_token_counts(num_documents) * chars_per_token).astype(int)
    repeated = text * (-(-int(lengths.sum()) // len(text)) + 1)
    documents, cursor = [], 0
    for length in lengths:
        documents.append(repeated[cursor : cursor + length])
        cursor += length
    return documents


def make_corpus(text, sizes, num_documents, folder):
    """The documents (see the module docstring) in NUM_FILES .jsonl files, dealt round-robin."""
    make = openwebtext_documents if sizes == "openwebtext" else small_documents
    documents = make(text, num_documents)
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
    """Run a command; return (wall seconds, CPU seconds, peak tree RSS bytes, stdout).

    CPU: user + system time of the command and every descendant it waited for (pool workers),
    less shifted than wall time by other work on the machine. Its output goes to files, not
    pipes: a full pipe would stall a chatty command (progress bars, logs) while it is timed.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=out, stderr=err)
        peak = 0
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, tree_rss(process.pid))
            time.sleep(0.02)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0), err.seek(0)
        if process.returncode:
            sys.exit(f"{' '.join(map(str, command))} failed:\n{err.read().decode()[-3000:]}")
        return wall, usage.ru_utime + usage.ru_stime, peak, out.read().decode()


def disk_usage(path):
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def run_engines(files, tmp, repeats, env):
    results = {"datasets": [], "datatrove": [], "floor": [], "ordinary": []}
    floor_tokens = set()  # what each floor run counted
    outputs = {}
    for repeat in range(repeats):
        for name in ("datasets", "datatrove", "floor", "ordinary"):
            out, scratch = tmp / f"{name}-{repeat}", tmp / f"scratch-{name}-{repeat}"
            if name in ("floor", "ordinary"):
                call = "encode_to_numpy" if name == "floor" else "encode_ordinary"
                command = [sys.executable, "-c", FLOOR, call, *map(str, files)]
                _, _, peak, stdout = timed(command, env)
                floor = json.loads(stdout)
                results[name].append((floor["seconds"], floor["cpu"], peak, 0))
                print(
                    f"  {name:9s} run {repeat + 1}: {floor['seconds']:6.2f} s, "
                    f"{floor['cpu']:6.2f} s CPU, {os.getloadavg()[0]:.1f} load",
                    flush=True,
                )
                floor_tokens.add(floor["tokens"])
                continue
            command = [sys.executable, str(SCRIPT), "--data-files", *map(str, files)]
            command += ["--out-dir", str(out)]
            if name == "datasets":
                command += ["--num-proc", str(CORES), "--cache-dir", str(scratch)]
            else:
                command += ["--engine", "datatrove", "--tasks", str(CORES)]
                command += ["--workers", str(CORES), "--work-dir", str(scratch)]
            wall, cpu, peak, _ = timed(command, env)
            results[name].append((wall, cpu, peak, disk_usage(scratch)))
            outputs[name] = out
            print(
                f"  {name:9s} run {repeat + 1}: {wall:6.2f} s, {cpu:6.2f} s CPU, "
                f"{peak / 2**20:7.0f} MB, {os.getloadavg()[0]:.1f} load",
                flush=True,
            )
            shutil.rmtree(scratch)
    same = all(
        (outputs["datasets"] / f).read_bytes() == (outputs["datatrove"] / f).read_bytes()
        for f in ("train.bin", "val.bin")
    )
    written = {
        name: sum(
            split["tokens"]
            for split in json.loads((out / "meta.json").read_text())["splits"].values()
        )
        for name, out in outputs.items()
    }
    if len(floor_tokens | set(written.values())) != 1:
        sys.exit(f"the floors encoded {floor_tokens} tokens, the engines wrote {written}")
    return results, same, floor_tokens.pop()


def synthetic_plan(tmp, tasks=64):
    """Write 64 task indexes of OpenWebText's size (lengths only) and time the plan on them."""
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from engine import executors, stages

    tokens = openwebtext_token_counts(OPENWEBTEXT_DOCUMENTS).astype(np.uint32)
    work = executors.Work(tmp / "plan", {"synthetic": True}, {"seed": 2357})
    work.claim()
    bounds = np.linspace(0, OPENWEBTEXT_DOCUMENTS, tasks + 1).astype(np.int64)
    per_file = -(-OPENWEBTEXT_DOCUMENTS // 80)  # 80 parquet files, as on the hub
    summaries = []
    for rank in range(tasks):
        low, high = int(bounds[rank]), int(bounds[rank + 1])
        index = np.zeros(high - low, stages.INDEX_DTYPE)
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
    job = {
        "source": "synthetic OpenWebText",
        "dtype": "uint16",
        "val_fraction": 0.0005,
        "seed": 2357,
        "files": [f"train-{f:05d}-of-00080.parquet" for f in range(80)],
        "lengths": lengths,
    }
    (work.tokens / "summaries.json").write_text(json.dumps(summaries))
    (work.tokens / "job.json").write_text(json.dumps(job))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-c", PLAN, str(work.tokens.parent), str(tasks)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout), work.tokens.parent


def main():
    parser = ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="default: %(default)s")
    parser.add_argument("--sizes", choices=("openwebtext", "small"), default="openwebtext")
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--no-plan", action="store_true", help="skip the plan step's run")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        text = args.corpus.read_text(encoding="utf-8")
        files = make_corpus(text, args.sizes, args.documents, tmp)
        del text
        size = sum(f.stat().st_size for f in files)
        print(
            f"corpus ({args.sizes} sizes): {args.documents:,} documents, {size / 1e6:.1f} MB "
            f"in {NUM_FILES} files; load average {os.getloadavg()[0]:.1f}"
        )
        results, same, tokens = run_engines(files, tmp, args.repeats, env)
        median = {
            name: [statistics.median(r[i] for r in runs) for i in range(4)]
            for name, runs in results.items()
        }
        print(f"\n{tokens:,} tokens; train.bin and val.bin identical across engines: {same}")
        print(
            f"{'run':10s} {'wall (s)':>9s} {'CPU (s)':>8s} {'peak RSS (MB)':>14s} "
            f"{'scratch disk (MB)':>18s}"
        )
        for name, (wall, cpu, peak, disk) in median.items():
            print(f"{name:10s} {wall:9.2f} {cpu:8.2f} {peak / 2**20:14.0f} {disk / 2**20:18.1f}")
        floor, floor_cpu = median["floor"][:2]
        print(
            f"datatrove / datasets: {median['datatrove'][0] / median['datasets'][0]:.2f}x "
            "(target <= 1.2); "
            f"datasets / floor: {median['datasets'][0] / floor:.2f}x, "
            f"datatrove / floor: {median['datatrove'][0] / floor:.2f}x (target <= 1.5)"
        )
        print(
            f"CPU against the floor's: datasets {median['datasets'][1] / floor_cpu:.2f}x, "
            f"datatrove {median['datatrove'][1] / floor_cpu:.2f}x"
        )
        print(
            f"encode_ordinary against encode_to_numpy: {median['ordinary'][0] / floor:.2f}x wall, "
            f"{median['ordinary'][1] / floor_cpu:.2f}x CPU; the engines against encode_ordinary: "
            f"datasets {median['datasets'][0] / median['ordinary'][0]:.2f}x, "
            f"datatrove {median['datatrove'][0] / median['ordinary'][0]:.2f}x"
        )
        per_core = tokens / floor / CORES
        print(f"floor throughput: {per_core:,.0f} tokens/s per core")
        for name in ("datasets", "datatrove"):
            rates = {  # tokens per second per core, whole script
                "wall": tokens / median[name][0] / CORES,  # as loaded as this machine now
                "CPU": tokens / median[name][1],  # as if every core did this run only
            }
            for kind, rate in rates.items():
                hours = {n: OPENWEBTEXT_TOKENS / (rate * 8 * n) / 3600 for n in (1, 8, 64)}
                more = f", {hours[8]:.2f} h on 8 nodes, {hours[64] * 60:.1f} min on 64" * (
                    name == "datatrove"
                )
                print(
                    f"{name}: OpenWebText at this {kind} rate ({rate:,.0f} tokens/s per core): "
                    f"{hours[1]:.1f} h on 1 node of 8 cores{more}"
                )
            print(
                f"  scratch disk per output byte: {median[name][3] / (tokens * 2):.2f} "
                f"-> {median[name][3] / (tokens * 2) * OPENWEBTEXT_TOKENS * 2 / 1e9:.0f} GB "
                "for OpenWebText"
            )
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
        if args.no_plan:
            return
        plan, _ = synthetic_plan(tmp)
        print(
            f"\nplan step, {OPENWEBTEXT_DOCUMENTS:,} documents in 64 tasks: "
            f"{plan['seconds']:.2f} s "
            f"wall, {plan['cpu']:.2f} s CPU, "
            f"peak RSS {plan['peak'] / 2**20:.0f} MB "
            f"({(plan['peak'] - plan['before']) / 2**20:.0f} MB "
            f"above the interpreter); splits: {plan['plan']}"
        )


if __name__ == "__main__":
    main()
