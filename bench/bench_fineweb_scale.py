"""Benchmark: data/fineweb/prepare.py (one machine) at 100,000 FineWeb-Edu-sized documents,
with the fast encoder and with tiktoken, against the fast encoder alone on the same texts.

The corpus: 100,000 documents in 4 parquet files with FineWeb-Edu's columns (text, id, dump,
url, file_path, language, language_score, token_count, score, int_score; only `text` is read,
the others are made up, token_count is the drawn count) in row groups of 1,000 rows, in a
temporary folder (nothing is committed). Sizes as FineWeb-Edu sample-10BT's (docs/fineweb.md:
9,672,101 documents, about 10B GPT-2 tokens, so about 1,034 tokens per document): token counts
drawn log-normal (the shape bench_openwebtext_scale.py draws for OpenWebText) with that mean,
turned into characters at docs20's characters per GPT-2 token, each document the next that
many characters of ../shared/bench/docs20.txt (cycled through).

The runs, alternated `--repeats` times (medians are printed):

- encoder: the fast encoder alone (formats/encoders.py), `encode_to_numpy` on the same texts in
  2 processes, every other document each, each reading its half of the parquet files and
  building the encoder before the clock starts: the floor;
- lesson: prepare.py --data-files ... --num-proc 2 (a fresh datasets cache);
- tiktoken: the same with NANOGPT_FAST_ENCODER=0 (tiktoken alone encodes);
- datatrove (with `--datatrove`): prepare_datatrove.py --tasks 2 --workers 2 (a fresh work dir).

The encoder must count the tokens the scripts wrote (each document's ids and its end of text);
the tiktoken run's shards and meta.json, and datatrove's shards, must be byte-identical to the
lesson's, or the bench fails. `--shard-size` (default 10^7: about 10 shards) is passed to the
scripts. Printed per run: wall time, CPU time of the script and every process it waited for,
peak memory of the whole process tree (summed RSS, sampled every 20 ms), the load average; then
the ratios (targets: the lesson at most 1.15x the encoder's CPU, at most 0.45x tiktoken's) and
the extrapolation to sample-10BT.

    NANOGPT_DATA_MIRROR=../shared/mirror python bench/bench_fineweb_scale.py [--repeats 3]
        [--documents 100000] [--shard-size 10000000] [--datatrove] [--corpus docs20.txt]
"""

import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_openwebtext_scale import CORPUS, FLOOR_TEMPLATE, ROOT, timed  # noqa: E402

from safety import ArgumentParser  # noqa: E402

FAST_ENV = "NANOGPT_FAST_ENCODER"  # "0": the lesson encodes with tiktoken alone
SCRIPTS = {
    "lesson": ROOT / "data" / "fineweb" / "prepare.py",
    "datatrove": ROOT / "data" / "fineweb" / "prepare_datatrove.py",
}
NUM_FILES, ROW_GROUP, CORES = 4, 1_000, 2
SAMPLE_DOCUMENTS, SAMPLE_TOKENS = 9_672_101, 10_000_000_000  # FineWeb-Edu sample-10BT (about)
SAMPLE_PARQUET = 28_518_193_415  # bytes of its 14 parquet files (docs/fineweb.md)

FLOOR = FLOOR_TEMPLATE.replace(
    "READ_TEXTS",
    """    texts, seen = [], 0
    for path in files:
        column = pq.read_table(path, columns=["text"])["text"]
        texts += column.to_pylist()[(half - seen) % 2 :: 2]
        seen += len(column)
        del column""",
).replace("import json, sys", "import pyarrow.parquet as pq\nimport json, sys")


def fineweb_edu_documents(text, num_documents, seed=0):
    """(documents, drawn token counts): FineWeb-Edu sample-10BT's mean tokens per document."""
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from formats.tokenizers import gpt2_encoding

    sample = "".join(text[i : i + (1 << 16)] for i in range(0, len(text), len(text) // 32))
    chars_per_token = len(sample) / len(gpt2_encoding().encode_ordinary(sample))
    tokens = np.random.default_rng(seed).lognormal(mean=6.6, sigma=0.8, size=num_documents)
    tokens = np.maximum(tokens * (SAMPLE_TOKENS / SAMPLE_DOCUMENTS / tokens.mean()), 2)
    lengths = (tokens * chars_per_token).astype(int)
    repeated = text * (-(-int(lengths.sum()) // len(text)) + 1)
    documents, cursor = [], 0
    for length in lengths:
        documents.append(repeated[cursor : cursor + length])
        cursor += length
    return documents, tokens.astype(int)


def make_corpus(text, num_documents, folder):
    """The documents in NUM_FILES parquet files of FineWeb-Edu's columns, in order (file f holds
    the f-th quarter), named as the hub's (000_00000.parquet, ...)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    documents, tokens = fineweb_edu_documents(text, num_documents)
    bounds = [round(f * num_documents / NUM_FILES) for f in range(NUM_FILES + 1)]
    files = []
    for f in range(NUM_FILES):
        rows = range(bounds[f], bounds[f + 1])
        n = len(rows)
        table = pa.table(
            {
                "text": pa.array(documents[bounds[f] : bounds[f + 1]], pa.string()),
                "id": [f"<urn:uuid:00000000-0000-0000-0000-{row:012d}>" for row in rows],
                "dump": ["CC-MAIN-2013-20"] * n,
                "url": [f"http://example.com/{row}" for row in rows],
                "file_path": ["s3://commoncrawl/crawl-data/CC-MAIN-2013-20/x.warc.gz"] * n,
                "language": ["en"] * n,
                "language_score": pa.array([0.95] * n, pa.float64()),
                "token_count": pa.array(tokens[bounds[f] : bounds[f + 1]], pa.int64()),
                "score": pa.array([3.0] * n, pa.float64()),
                "int_score": pa.array([3] * n, pa.int64()),
            }
        )
        path = folder / f"{f:03d}_00000.parquet"
        pq.write_table(table, path, row_group_size=ROW_GROUP)
        files.append(path)
    return files


def disk_usage(path, outputs):
    """Bytes of the files under path, less those that are the outputs' (hard links to them)."""
    shared = {(s.st_dev, s.st_ino) for s in map(os.stat, Path(outputs).iterdir())}
    return sum(
        s.st_size
        for s in (p.stat() for p in Path(path).rglob("*") if p.is_file())
        if (s.st_dev, s.st_ino) not in shared
    )


def load():
    return os.getloadavg()[0]


def lesson_command(name, files, out, scratch, args):
    """The command of run `name`: the lesson (fast encoder or tiktoken) or datatrove's script."""
    script = SCRIPTS["datatrove" if name == "datatrove" else "lesson"]
    command = [sys.executable, str(script), "--data-files", *map(str, files)]
    command += ["--out-dir", str(out), "--shard-size", str(args.shard_size)]
    if name == "datatrove":
        return command + [
            "--tasks",
            str(CORES),
            "--workers",
            str(CORES),
            "--work-dir",
            str(scratch),
        ]
    return command + ["--num-proc", str(CORES), "--cache-dir", str(scratch)]


def run_all(files, tmp, args, env):
    names = ["encoder", "lesson", "tiktoken"] + ["datatrove"] * args.datatrove
    results = {name: [] for name in names}
    floor_tokens, outputs = set(), {}
    for repeat in range(args.repeats):
        for name in names:
            out, scratch = tmp / f"{name}-{repeat}", tmp / f"scratch-{name}-{repeat}"
            before = load()
            if name == "encoder":
                command = [sys.executable, "-c", FLOOR, "encode_to_numpy", *map(str, files)]
                _, _, peak, stdout = timed(command, env)
                floor = json.loads(stdout)
                wall, cpu, disk = floor["seconds"], floor["cpu"], 0
                floor_tokens.add(floor["tokens"])
            else:
                run_env = dict(env, **{FAST_ENV: "0"}) if name == "tiktoken" else env
                command = lesson_command(name, files, out, scratch, args)
                wall, cpu, peak, _ = timed(command, run_env)
                disk = disk_usage(scratch, out)
                shutil.rmtree(scratch)
                if name in outputs:
                    shutil.rmtree(outputs[name])
                outputs[name] = out
            loads = (before, load())
            results[name].append((wall, cpu, peak, disk, max(loads)))
            print(
                f"  {name:9s} run {repeat + 1}: {wall:6.2f} s, {cpu:6.2f} s CPU, "
                f"{peak / 2**20:6.0f} MB, load {before:.1f} -> {loads[1]:.1f}",
                flush=True,
            )
    files_of = {
        name: sorted(p.name for p in out.iterdir() if p.suffix in (".bin", ".npy", ".json"))
        for name, out in outputs.items()
    }
    same = {
        name: files_of[name] == files_of["lesson"]
        and all(
            (out / f).read_bytes() == (outputs["lesson"] / f).read_bytes() for f in files_of[name]
        )
        for name, out in outputs.items()
        if name not in ("lesson", "datatrove")
    }
    if "datatrove" in outputs:  # its meta.json says how it ran: only the shards are compared
        shards = [f for f in files_of["lesson"] if f != "meta.json"]
        same["datatrove"] = all(
            (outputs["datatrove"] / f).read_bytes() == (outputs["lesson"] / f).read_bytes()
            for f in shards
        )
    shards = {
        name: json.loads((out / "meta.json").read_text())["shards"] for name, out in outputs.items()
    }
    written = {name: sum(s["tokens"] for s in listed) for name, listed in shards.items()}
    if len(floor_tokens | set(written.values())) != 1:
        sys.exit(f"the encoder counted {floor_tokens} tokens, the scripts wrote {written}")
    return results, len(shards["lesson"]), floor_tokens.pop(), same


def main():
    parser = ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--shard-size", type=int, default=10**7)
    parser.add_argument("--datatrove", action="store_true", help="also prepare_datatrove.py")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="default: %(default)s")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop(FAST_ENV, None)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        text = args.corpus.read_text(encoding="utf-8")
        files = make_corpus(text, args.documents, tmp)
        del text
        size = sum(f.stat().st_size for f in files)
        print(
            f"corpus (FineWeb-Edu sizes): {args.documents:,} documents, {size / 1e6:.1f} MB of "
            f"parquet in {NUM_FILES} files; load average {load():.1f}"
        )
        results, num_shards, tokens, same = run_all(files, tmp, args, env)
    median = {
        name: [statistics.median(r[i] for r in runs) for i in range(5)]
        for name, runs in results.items()
    }
    print(f"\n{tokens:,} tokens in {num_shards} shards of {args.shard_size:,}")
    for name, identical in same.items():
        what = "shards" if name == "datatrove" else "shards and meta.json"
        print(f"{name}: {what} {'byte-identical to' if identical else 'DIFFER from'} lesson's")
    print(
        f"{'run':10s} {'wall (s)':>9s} {'CPU (s)':>8s} {'peak RSS (MB)':>14s} "
        f"{'scratch disk (MB)':>18s} {'load':>5s}"
    )
    for name, (wall, cpu, peak, disk, top) in median.items():
        print(
            f"{name:10s} {wall:9.2f} {cpu:8.2f} {peak / 2**20:14.0f} {disk / 2**20:18.1f} "
            f"{top:5.1f}"
        )
    (wall, cpu), (tiktoken_wall, tiktoken_cpu) = median["lesson"][:2], median["tiktoken"][:2]
    floor_wall, floor_cpu = median["encoder"][:2]
    print(
        f"lesson / encoder alone: {cpu / floor_cpu:.2f}x CPU (target <= 1.15), "
        f"{wall / floor_wall:.2f}x wall"
    )
    print(
        f"lesson / lesson with {FAST_ENV}=0: {cpu / tiktoken_cpu:.2f}x CPU (target <= 0.45), "
        f"{wall / tiktoken_wall:.2f}x wall"
    )
    print(f"encoder alone: {tokens / floor_cpu:,.0f} tokens per CPU second")
    for name in median.keys() - {"encoder"}:  # CPU seconds per document, on 8-core nodes
        per_document = median[name][1] / args.documents
        hours = {n: per_document * SAMPLE_DOCUMENTS / (8 * n) / 3600 for n in (1, 8, 64)}
        print(
            f"{name}: sample-10BT at {per_document * 1e3:.2f} ms CPU per document: "
            f"{hours[1]:.2f} h on 1 node of 8 cores, {hours[8] * 60:.1f} min on 8, "
            f"{hours[64] * 60:.1f} min on 64"
        )
    print(f"load average at the end: {load():.1f}")
    if not all(same.values()):
        sys.exit("the outputs differ")


if __name__ == "__main__":
    main()
