"""Encoding speed of bpe.Tokenizer against tiktoken's gpt2, side by side in one run.

    NANOGPT_DATA_MIRROR=../shared/mirror python bench/bench_encode.py [--runs 5]

1. Pure-Python `encode_ordinary` on Tiny Shakespeare, a FRESH Tokenizer (built from GPT-2's
   files) for every run so its pretoken cache starts empty; tiktoken's `encode_ordinary`
   timed in the same loop. Medians, and the throughput ratio ours / tiktoken (the target is
   at least 0.4). Building the Tokenizer is not in the timed encode; it is printed apart.
   Also the same with a warm cache, and (if installed: `pip install tokenizers`) Hugging
   Face's ByteLevel BPE from the same files, as a second reference.
2. `Tokenizer.to_tiktoken()` against tiktoken's own gpt2 (should be ~1.0).
3. `encode_iterable` over --docs20 (default ../shared/bench/docs20.txt, 20 MB) in a fresh
   process: growth of peak RSS while streaming a quarter of the file and the whole file (it
   should not depend on the file size), its time against tiktoken encoding the whole text at
   once, and whether the ids are the same.
"""

import functools
import gc
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bpe import Tokenizer
from formats.tokenizers import GPT2_ENCODER_JSON, GPT2_VOCAB_BPE, gpt2_encoding
from safety import ArgumentParser, fetch

TINY_SHAKESPEARE = runpy.run_path(
    str(Path(__file__).parents[1] / "data/shakespeare_char/prepare.py")
)["TINY_SHAKESPEARE"]  # the lesson's pin

ROOT = Path(__file__).resolve().parent.parent
DOCS20 = ROOT.parent / "shared" / "bench" / "docs20.txt"

# A fresh process: build the tokenizer, reset VmHWM, stream the first N characters' lines.
STREAM_PROBE = r"""
import gc, sys, time
from bpe import Tokenizer
encoder_json, vocab_bpe, path, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
tok = Tokenizer.from_gpt2_files(encoder_json, vocab_bpe)
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
def lines():
    seen = 0
    with open(path, encoding="utf-8") as file:
        for line in file:
            if seen >= limit:
                return
            seen += len(line)
            yield line
gc.collect()
open("/proc/self/clear_refs", "w").write("5")  # reset VmHWM to the current RSS
before = status("VmHWM")
start = time.perf_counter()
count = checksum = 0
for token_id in tok.encode_iterable(lines()):
    count += 1
    checksum = (checksum * 31 + token_id) % (1 << 61)
print(count, checksum, status("VmHWM") - before, time.perf_counter() - start, len(tok._cache))
"""


def timed(function, *args):
    gc.collect()
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


def mb(n):
    return f"{n / 1e6:.1f} MB"


def bench_shakespeare(runs, files, enc, text):
    print(f"== 1. encode_ordinary, Tiny Shakespeare ({len(text):,} chars), median of {runs} runs")
    build, ours, ref, warm = [], [], [], []
    for _ in range(runs):
        seconds, tok = timed(Tokenizer.from_gpt2_files, *files)
        build.append(seconds)
        seconds, ids = timed(tok.encode_ordinary, text)
        ours.append(seconds)
        warm.append(timed(tok.encode_ordinary, text)[0])
        seconds, ref_ids = timed(enc.encode_ordinary, text)
        ref.append(seconds)
        assert ids == ref_ids, "ids differ from tiktoken's"
    ours_s, ref_s, warm_s = map(statistics.median, (ours, ref, warm))
    print(
        f"  reference tiktoken gpt2         {ref_s:.3f} s  "
        f"({len(text) / ref_s / 1e6:.1f} M chars/s)"
    )
    print(
        f"  ours, fresh Tokenizer (cold)    {ours_s:.3f} s  "
        f"ratio ours/tiktoken throughput = {ref_s / ours_s:.2f}x"
    )
    print(
        f"  ours, same Tokenizer again      {warm_s:.3f} s  "
        f"ratio {ref_s / warm_s:.2f}x (warm cache)"
    )
    print(f"  building the Tokenizer (not timed above): {statistics.median(build):.3f} s")
    print(f"  ids identical to tiktoken's: yes ({len(ids):,} tokens)")
    try:
        from tokenizers import ByteLevelBPETokenizer
    except ImportError:
        print("  (Hugging Face tokenizers not installed: pip install tokenizers)")
        return
    hf = ByteLevelBPETokenizer(str(files[0]), str(files[1]))
    hf_times = []
    for _ in range(runs):
        seconds, hf_ids = timed(hf.encode, text)
        hf_times.append(seconds)
    hf_s = statistics.median(hf_times)
    same = hf_ids.ids == ids
    print(
        f"  reference HF tokenizers         {hf_s:.3f} s  "
        f"ratio ours(cold)/HF = {hf_s / ours_s:.2f}x "
        f"(same ids: {'yes' if same else 'no'})"
    )


def bench_to_tiktoken(runs, files, enc, text):
    print(f"== 2. to_tiktoken() against tiktoken's own gpt2, Tiny Shakespeare, median of {runs}")
    ours = Tokenizer.from_gpt2_files(*files).to_tiktoken()
    a, b = [], []
    for _ in range(runs):
        seconds, ids = timed(ours.encode_ordinary, text)
        a.append(seconds)
        seconds, ref_ids = timed(enc.encode_ordinary, text)
        b.append(seconds)
    assert ids == ref_ids
    ours_s, ref_s = statistics.median(a), statistics.median(b)
    print(f"  reference tiktoken gpt2         {ref_s:.3f} s")
    print(
        f"  ours.to_tiktoken()              {ours_s:.3f} s  "
        f"ratio {ref_s / ours_s:.2f}x  (same ids: yes)"
    )


def bench_stream(files, enc, corpus):
    print(
        f"== 3. encode_iterable over {corpus.name} ({mb(corpus.stat().st_size)}), fresh processes"
    )
    text = corpus.read_text(encoding="utf-8")
    ref_s, ref_ids = timed(functools.partial(enc.encode, allowed_special="all"), text)
    ref_checksum = 0
    for token_id in ref_ids:
        ref_checksum = (ref_checksum * 31 + token_id) % (1 << 61)
    del text
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.py"
        probe.write_text(STREAM_PROBE)
        for label, limit in (
            ("a quarter", corpus.stat().st_size // 4),
            ("the whole file", 1 << 62),
        ):
            out = subprocess.run(
                [sys.executable, str(probe), str(files[0]), str(files[1]), str(corpus), str(limit)],
                check=True,
                capture_output=True,
                text=True,
                cwd=ROOT,
            ).stdout.split()
            count, checksum, growth, seconds, cached = (
                int(out[0]),
                int(out[1]),
                int(out[2]),
                float(out[3]),
                int(out[4]),
            )
            line = (
                f"  {label:15s} {count:>10,} ids  peak RSS growth {mb(growth)}  "
                f"({cached:,} cached pretokens)"
            )
            if limit > corpus.stat().st_size:
                line += (
                    f"\n  whole file: ours streaming {seconds:.2f} s, "
                    f"tiktoken encode(all at once) {ref_s:.2f} s, "
                    f"ratio {ref_s / seconds:.2f}x; same ids as tiktoken: "
                    f"{'yes' if (count, checksum) == (len(ref_ids), ref_checksum) else 'NO'}"
                )
            print(line)


def main():
    parser = ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-stream", action="store_true", help="skip part 3 (the 20 MB stream)")
    parser.add_argument("--docs20", type=Path, default=DOCS20, help="the corpus of part 3")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    files = (
        fetch(GPT2_ENCODER_JSON, folder / "encoder.json"),
        fetch(GPT2_VOCAB_BPE, folder / "vocab.bpe"),
    )
    enc = gpt2_encoding()
    shakespeare = fetch(TINY_SHAKESPEARE, Path(tempfile.mkdtemp()) / "input.txt").read_text(
        encoding="utf-8"
    )
    bench_shakespeare(args.runs, files, enc, shakespeare)
    bench_to_tiktoken(args.runs, files, enc, shakespeare)
    if not args.skip_stream:
        bench_stream(files, enc, args.docs20)


if __name__ == "__main__":
    main()
