"""Benchmark: what the document index (train.docs.npy, val.docs.npy) costs the OpenWebText
pipeline, against the pipeline itself, in one run.

- the pipeline: data/openwebtext/prepare.py on `--documents` documents of OpenWebText's sizes
  (bench_openwebtext_scale.py's corpus, made from ../shared/bench/docs20.txt), whole-process wall
  time and peak memory, which include writing the index;
- the index alone, in this process, on the same documents' lengths (read back from the run's
  own index): `write_document_starts` (the cumulative sum and np.save), its sha256 for meta.json,
  and verify's checks of it; then the same on OpenWebText's 8,013,769 document lengths.

The ratio is the index's share of the pipeline's wall time (the target: at most 5%).

    NANOGPT_DATA_MIRROR=../shared/mirror python bench/bench_document_index.py [--documents 20000]
"""

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_openwebtext_scale import (  # noqa: E402
    CORPUS,
    OPENWEBTEXT_DOCUMENTS,
    SCRIPT,
    make_corpus,
    openwebtext_token_counts,
    timed,
)

from inspection.verify import _starts_problem  # noqa: E402
from prepare_common import write_document_starts
from safety import ArgumentParser  # noqa: E402
from safety.files import sha256_file  # noqa: E402


def index_seconds(lengths, folder, data=None, eot_id=50256):
    """The index's own work for documents of these lengths: write it and hash it (meta.json),
    and with the split's `data`, verify's checks of it."""
    path = Path(folder) / "train.docs.npy"
    start = time.perf_counter()
    write_document_starts(path, lengths)
    sha256_file(path)
    if data is not None:
        problem = _starts_problem(np.load(path, mmap_mode="r"), len(lengths), data, eot_id)
        assert problem is None, problem
    return time.perf_counter() - start


def main():
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("--documents", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = make_corpus(
            CORPUS.read_text(encoding="utf-8"), "openwebtext", args.documents, Path(tmp)
        )
        out = Path(tmp) / "out"
        wall, _, memory, _ = timed(
            [sys.executable, str(SCRIPT), "--data-files", *map(str, files), "--out-dir", str(out)],
            {**os.environ, "HF_DATASETS_CACHE": str(Path(tmp) / "cache")},
        )
        data = np.memmap(out / "train.bin", np.uint16, mode="r")
        lengths = np.diff(np.load(out / "train.docs.npy").astype(np.int64), append=len(data))
        ours = index_seconds(lengths, tmp, data)
        print(
            f"pipeline, {args.documents:,} documents: {wall:.2f} s wall, "
            f"{memory / 1e6:,.0f} MB peak"
        )
        print(f"the index of its train split ({len(lengths):,} documents): {ours * 1e3:.1f} ms")
        print(f"index / pipeline: {ours / wall:.2%}")
        owt = openwebtext_token_counts(OPENWEBTEXT_DOCUMENTS).astype(np.int64)
        seconds = index_seconds(owt, tmp)  # written and hashed; verify's checks read the tokens
        print(
            f"the index of OpenWebText's {len(owt):,} documents, written and hashed: "
            f"{seconds:.2f} s"
        )


if __name__ == "__main__":
    main()
