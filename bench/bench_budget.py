"""Bytes downloaded and time: a token budget (hub.budgeted_documents) against
huggingface_hub.snapshot_download of the whole sample, from a local hub over HTTP; and a prefix
of one file (hub.Prefix: TinyStories' and parameter-golf's --max-tokens) against
safety.downloads.fetch of the whole file.

    python bench/bench_budget.py [--files 4] [--row-groups 8] [--rows 400] [--prefix-mb 32]

The hub is tests/stand_ins/hub_server.py on 127.0.0.1, serving a FineWeb-Edu-shaped sample/10BT:
--files parquet files of --row-groups row groups of --rows documents (FineWeb-Edu's columns; made-up
English-like text of about 2,000 characters a document). For budgets of 1%, 10% and 100% of the
sample's GPT-2 tokens, each from an empty cache: the bytes the hub sent, the wall and CPU time,
and each against snapshot_download's (the reference: every file whole, its own parallel
downloads), alone and followed by the count of every document's tokens that the budget makes
as it reads (what a whole run does before the same point). CPU time is this process's (the
hub's threads included), since the machine is busy. The file of --prefix-mb MB of the same
made-up text, one {"text": ...} a line, is read by hub.Prefix to 1%, 10% and 100% of its
bytes, from an empty cache and again from the cache, against fetch (what the lessons do
without --max-tokens); reading only, no tokenizing.
"""

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "stand_ins")]
from hub_server import LocalHub, fineweb_files  # noqa: E402

from safety import ArgumentParser  # noqa: E402

REPO, REVISION = "HuggingFaceFW/fineweb-edu", "87f09149ef4734204d70ed1d046ddc9ca3f2b8f9"


def documents(count, seed=0):
    """`count` documents of made-up words (a Zipf-like draw from 5,000 of them), ~2,000 chars."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("etaoinshrdlucmfwypvbgkqjxz"))
    words = ["".join(rng.choice(letters, size=rng.integers(2, 9))) for _ in range(5_000)]
    weights = 1 / np.arange(1, len(words) + 1)
    picks = rng.choice(len(words), size=(count, 330), p=weights / weights.sum())
    return [" ".join(words[i] for i in row) + "." for row in picks]


def measure(server, run):
    """(bytes the hub sent, wall seconds, CPU seconds) of run()."""
    sent, wall, cpu = server.bytes_sent, time.perf_counter(), time.process_time()
    run()
    return server.bytes_sent - sent, time.perf_counter() - wall, time.process_time() - cpu


def figures(sent, wall, cpu):
    return f"{sent:,} bytes, {wall:.2f} s wall, {cpu:.2f} s CPU"


def main():
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--row-groups", type=int, default=8)
    parser.add_argument("--rows", type=int, default=400)
    parser.add_argument("--prefix-mb", type=int, default=32)
    args = parser.parse_args()
    texts = documents(args.files * args.row_groups * args.rows)
    sizes = [args.row_groups * args.rows] * args.files
    files = fineweb_files("edu", {"10BT": (texts, sizes)}, args.rows)
    sample = sum(len(data) for path, data in files.items() if path.startswith("sample/"))
    home = Path(tempfile.mkdtemp(prefix="bench-budget-"))
    lines = "".join(f'{{"text": "{text}"}}\n' for text in texts).encode()
    sequential = (lines * (args.prefix_mb * 2**20 // len(lines) + 1))[: args.prefix_mb * 2**20]
    mirror = {"bench/docs.jsonl": sequential}
    with LocalHub(REPO, {REVISION: files}, mirror=mirror) as server:
        os.environ.update(server.environment(home))  # before huggingface_hub reads its constants
        from huggingface_hub import snapshot_download

        from documents.inputs import HubDataset
        from hub.budget import budgeted_documents, cache_folder, document_tokens
        from prepare_common import bpe_encoding

        encoding = bpe_encoding()[0]
        total = sum(len(ids) + 1 for ids in encoding.encode_ordinary_batch(texts))
        print(f"sample/10BT: {args.files} files of {args.row_groups} row groups, {sample:,} bytes,")
        print(f"{len(texts):,} documents, {total:,} GPT-2 tokens")
        dataset = HubDataset(REPO, REVISION, "sample-10BT", "sample/10BT/*.parquet")

        def snapshot(count=False):
            folder = Path(tempfile.mkdtemp(dir=home))
            path = snapshot_download(
                REPO,
                repo_type="dataset",
                revision=REVISION,
                cache_dir=folder,
                allow_patterns="sample/10BT/*",
            )
            for parquet in sorted(Path(path).glob("sample/10BT/*.parquet")) if count else ():
                column = pq.read_table(parquet, columns=["text"]).column(0).to_pylist()
                sum(len(ids) + 1 for ids in encoding.encode_ordinary_batch(column))

        reference = measure(server, snapshot)
        print(f"snapshot_download: {figures(*reference)}")
        counted = measure(server, lambda: snapshot(count=True))
        print(f"snapshot_download, then every document's GPT-2 tokens counted: {figures(*counted)}")
        for share in (0.01, 0.10, 1.00):
            budget = max(1, int(total * share))
            shutil.rmtree(cache_folder(dataset), ignore_errors=True)  # an empty cache each time
            ours = measure(
                server,
                lambda b=budget: budgeted_documents(dataset, b, document_tokens(encoding), "10BT"),
            )
            print(f"budget {share:.0%} ({budget:,} tokens): {figures(*ours)}")
            for name, whole in (
                ("snapshot_download", reference),
                ("snapshot_download + count", counted),
            ):
                ratios = (f"{x / y:.3f}x" for x, y in zip(ours, whole))
                print(f"  against {name}: bytes {{}}, wall {{}}, CPU {{}}".format(*ratios))
        bench_prefix(server, sequential, home)
    shutil.rmtree(home, ignore_errors=True)


def bench_prefix(server, data, home):
    """hub.Prefix read to 1%, 10%, 100% of a file, against fetch of the whole file."""
    import hashlib

    from hub.prefix import Prefix
    from safety import RemoteFile, fetch

    os.environ.pop("NANOGPT_DATA_MIRROR", None)  # the URL itself, not a mirror of it
    url, sha256 = f"{server.mirror_url}/bench/docs.jsonl", hashlib.sha256(data).hexdigest()
    print(f"\none file of {len(data):,} bytes (a .jsonl), read front to back")
    remote = RemoteFile(url, sha256, "bench/docs.jsonl")
    reference = measure(server, lambda: fetch(remote, Path(tempfile.mkdtemp(dir=home)) / "d"))
    print(f"fetch, the whole file: {figures(*reference)}")
    for share in (0.01, 0.10, 1.00):
        cache, wanted = Path(tempfile.mkdtemp(dir=home)) / "docs.jsonl", int(len(data) * share)

        def read(wanted=wanted, cache=cache):
            prefix = Prefix(url, cache, "docs.jsonl", sha256)
            while prefix.tell() < wanted and prefix.read(1 << 16):
                pass
            prefix.close()

        ours = measure(server, read)
        ratios = (f"{x / y:.3f}x" for x, y in zip(ours, reference))
        print(f"prefix {share:.0%}: {figures(*ours)}")
        print("  against fetch: bytes {}, wall {}, CPU {}".format(*ratios))
        print(f"  again, from the cache: {figures(*measure(server, read))}")


if __name__ == "__main__":
    main()
