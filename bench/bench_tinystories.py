"""data/tinystories/prepare.py against llm.c's rule, whole runs, and its memory at 4 and 40 members.

    python bench/bench_tinystories.py [--members 8] [--stories 4000] [--flat-members 4 40]

A generated archive in TinyStories' layout (data00.json ... at the top of a .tar.gz; each a JSON
list of objects whose "story" is synthetic TinyStories-like English, with the real files' other
fields beside it) is prepared, each command a fresh process on the same archive:

- ours, --format llmc, at --num-proc 1 and 2 (the archive read as a stream, never unpacked);
- llm.c's rule in one process (tests/references/llmc_tinystories.py, the tests' oracle): `tar -xzf`
  into a folder, as llm.c's os.system does, then every file's tokens into one Python list per
  split;
- llm.c's rule with its pool, in our words: a ProcessPoolExecutor over the split's files, its
  results gathered by as_completed (so its order, and bytes, hold only by luck).

For each: wall seconds, CPU seconds (user + system, the workers included), the peak RSS of its
largest process (both from /usr/bin/time), and the peak PSS of the whole process tree (sampled
from /proc every 50 ms: workers share the parent's pages, PSS counts them once), and whether its
two files are the oracle's bytes. Then the memory-flatness check: ours on --flat-members archives
of members of the same size each; the peaks must stay within 10% of each other (memory holds a
few members, whatever the archive's length).
"""

import argparse
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from safety import ArgumentParser

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "data" / "tinystories" / "prepare.py"
REFERENCES = REPO / "tests" / "references"

VOCABULARY = (  # the words of the synthetic stories
    "the a and to was he she it they her his him them little big happy sad day time one "
    "said saw went wanted played loved liked found looked made had could would see play "
    "Lily Tim Ben Sue Max Mia mom dad friend dog cat bird ball tree park house garden sky "
    "sun rain toy box car cake apple fish boat water flower red blue green small tall "
    "very so but then when because with in on at of for up down out into"
)
WORDS = VOCABULARY.split()

ORACLE = """
import subprocess, sys
sys.path.insert(0, sys.argv[4])
import formats.tokenizers
from llmc_tinystories import write_llmc_tinystories
archive, unpacked, out = sys.argv[1:4]
subprocess.run(["tar", "-xzf", archive, "-C", unpacked], check=True)  # llm.c's os.system(tar -xzf)
write_llmc_tinystories(unpacked, formats.tokenizers.gpt2_encoding(), out)
"""

LLMC_POOL = """
import subprocess, sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
sys.path.insert(0, sys.argv[4])
import formats.tokenizers
from llmc_tinystories import shard_tokens, split_files, write_datafile
archive, unpacked, out = sys.argv[1:4]
subprocess.run(["tar", "-xzf", archive, "-C", unpacked], check=True)
encoding = formats.tokenizers.gpt2_encoding()
if __name__ == "__main__":
    for split, files in zip(("val", "train"), split_files(unpacked)):
        tokens = []
        with ProcessPoolExecutor() as executor:
            futures = [executor.submit(shard_tokens, i, f, encoding) for i, f in enumerate(files)]
            for future in as_completed(futures):
                tokens.extend(future.result())
        write_datafile(Path(out) / f"TinyStories_{split}.bin", tokens)
"""


def story(rng):
    """A TinyStories-like story: a few paragraphs of short sentences of common words."""
    paragraphs = []
    for _ in range(rng.integers(2, 5)):
        sentences = []
        for _ in range(rng.integers(3, 9)):
            words = [WORDS[i] for i in rng.integers(len(WORDS), size=rng.integers(5, 14))]
            sentences.append(" ".join(words).capitalize() + ".")
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs)


def member_bytes(seed, stories):
    rng = np.random.default_rng(seed)
    items = []
    for _ in range(stories):
        text = story(rng)
        items.append(
            {
                "story": text,
                "instruction": {
                    "prompt:": "Write a short story (3-5 paragraphs) which only uses very simple "
                    "words that a 3 year old child would understand.",
                    "words": [WORDS[i] for i in rng.integers(len(WORDS), size=3)],
                    "features": ["Dialogue"],
                },
                "summary": text[:120],
                "source": "GPT-4",
            }
        )
    return json.dumps(items).encode("utf-8")


def make_archive(path, members, stories):
    """data00.json ... as a .tar.gz, each member `stories` stories (seeded by its number)."""
    with (
        open(path, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w|") as tar,
    ):
        for i in range(members):
            data = member_bytes(i, stories)
            info = tarfile.TarInfo(f"data{i:02d}.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def tree_pss(root):
    """The PSS (bytes) of `root` and its descendants now, from /proc."""
    children = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        stack += children.get(pid, [])
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def measure(command):
    """Run `command`; -> (wall s, CPU s, peak RSS of its largest process, peak tree PSS).

    Under /usr/bin/time, which forks the command from its own small process: a child forked from
    this one (vfork included) would start with this process's peak RSS as its own (Linux keeps
    the largest across exec), and our generated archives weigh ~100 MB here."""
    report = Path(tempfile.mkstemp(suffix=".time")[1])
    timed = ["/usr/bin/time", "-f", "%U %S %M", "-o", str(report), *command]
    start = time.perf_counter()
    process = subprocess.Popen(timed, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak, done = [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], tree_pss(process.pid))
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stderr = process.communicate()[1].decode(errors="replace")
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    if process.returncode != 0:
        sys.exit(f"{command[1]} failed:\n{stderr[-3000:]}")
    user, system, max_rss_kb = report.read_text().split()[-3:]
    report.unlink()
    return wall, float(user) + float(system), int(max_rss_kb) * 1024, peak[0]


def outputs(folder):
    return {
        name: (Path(folder) / name).read_bytes()
        for name in ("TinyStories_val.bin", "TinyStories_train.bin")
    }


def ours(archive, out, num_proc):
    return [sys.executable, str(SCRIPT), "--archive", str(archive), "--format", "llmc"] + [
        "--num-proc",
        str(num_proc),
        "--out-dir",
        str(out),
    ]


def main():
    parser = ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--members", type=int, default=8, help="JSON files of the compared archive")
    parser.add_argument("--stories", type=int, default=4000, help="stories per member")
    parser.add_argument(
        "--flat-members",
        type=int,
        nargs="+",
        default=[4, 40],
        metavar="N",
        help="archive sizes for the flatness check, each compared with the first (default: 4 40)",
    )
    parser.add_argument(
        "--skip-compare", action="store_true", help="only the memory-flatness check"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if not args.skip_compare:
            archive = make_archive(tmp / "compare.tar.gz", args.members, args.stories)
            print(
                f"archive: {args.members} members of {args.stories:,} stories, "
                f"{archive.stat().st_size / 1e6:.1f} MB gzip"
            )
            runs = {
                "ours --num-proc 1": ours(archive, tmp / "ours1", 1),
                "ours --num-proc 2": ours(archive, tmp / "ours2", 2),
                "llm.c's rule, 1 process": [sys.executable, "-c", ORACLE],
                "llm.c's rule, its pool": [sys.executable, "-c", LLMC_POOL],
            }
            rows = []
            for name, command in runs.items():
                if command[1] == "-c":
                    unpacked, out = tmp / f"unpacked-{len(rows)}", tmp / f"llmc-{len(rows)}"
                    unpacked.mkdir(), out.mkdir()
                    command = [*command, str(archive), str(unpacked), str(out), str(REFERENCES)]
                else:
                    out = Path(command[-1])
                figures = measure(command)
                rows.append((name, figures, outputs(out)))
                if command[1] == "-c":
                    shutil.rmtree(unpacked)
            oracle = next(w for n, _, w in rows if n.startswith("llm.c's rule, 1"))
            tokens = (
                len(oracle["TinyStories_train.bin"]) + len(oracle["TinyStories_val.bin"]) - 2048
            ) // 2
            print(f"{tokens:,} tokens in all")
            print(
                f"{'':26}{'wall s':>8}{'CPU s':>8}{'max RSS MB':>12}{'tree PSS MB':>13}"
                "  oracle's bytes"
            )
            for name, (wall, cpu, rss, pss), written in rows:
                print(
                    f"{name:26}{wall:8.2f}{cpu:8.2f}{rss / 1e6:12.0f}{pss / 1e6:13.0f}"
                    f"  {written == oracle}"
                )
        sizes = args.flat_members
        print(
            f"memory flatness: ours on {', '.join(map(str, sizes))} members "
            f"of {args.stories:,} stories each"
        )
        for num_proc in (1, 2):
            peaks = []
            for members in sizes:
                archive = tmp / f"flat-{members}.tar.gz"
                if not archive.exists():
                    make_archive(archive, members, args.stories)
                out = tmp / f"flat-{members}-{num_proc}"
                wall, cpu, rss, pss = measure(ours(archive, out, num_proc))
                shutil.rmtree(out)
                peaks.append((rss, pss))
                print(
                    f"  --num-proc {num_proc}, {members:3} members: {wall:6.2f} s wall, "
                    f"{cpu:6.2f} s CPU, "
                    f"max RSS {rss / 1e6:5.0f} MB, tree PSS {pss / 1e6:5.0f} MB"
                )
            for members, (rss, pss) in zip(sizes[1:], peaks[1:]):
                ok = rss <= 1.1 * peaks[0][0] and pss <= 1.1 * peaks[0][1]
                print(
                    f"  --num-proc {num_proc}: {members} members / {sizes[0]}: "
                    f"max RSS x{rss / peaks[0][0]:.3f}, "
                    f"tree PSS x{pss / peaks[0][1]:.3f} ({'within' if ok else 'NOT within'} 10%)"
                )


if __name__ == "__main__":
    main()
