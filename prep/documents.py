"""Collections of documents (OpenWebText from the hub, or local files) for data/openwebtext:
loaded and checked with `datasets`, tokenized a batch at a time, their ids streamed back out.

- load_documents(data_files, num_proc, cache_dir): the documents as a datasets.Dataset, checked
- source_name(data_files), source_record(data_files, num_documents): what they are, for the
  printout and for meta.json
- split_sizes(num_documents, val_fraction): the (train, val) counts of datasets' split
- random_split(num_documents, val_fraction, seed): nanoGPT's split itself, for both engines
- tokenize(texts, encoding, eot_id, dtype): a batch of texts -> ids (nanoGPT's `process`)
- encode_document(text, encoding, eot_id, dtype): one text's ids and end of text, an array
- ids_cache_options(documents, tokenizer, dtype): the features and cache key of `tokenize`'s map
- count_tokens(tokenized), stream_ids(tokenized): a tokenized split's size, and its ids in batches
- expand_data_files(patterns), check_texts(dataset, source): the checks load_documents makes
- HUB_REPO, HUB_REVISION, HUB_CONFIG: OpenWebText on the Hugging Face hub, pinned
"""

import glob
import math
import os
from pathlib import Path

import numpy as np

from prep.errors import PrepareError
from prep.tokenizers import check_covered, may_lose_text, token_byte_lengths

HUB_REPO = "Skylion007/openwebtext"
HUB_REVISION = "79d93d786212f7344586290adb811d4ae6a1762c"  # pinned: change here to follow the hub
HUB_CONFIG = (
    "plain_text"  # the folder of parquet files at that revision: 80 files, 8,013,769 documents
)
SPLIT_RULE = (
    "nanoGPT's: ceil(val_fraction * n) documents to val, the first of "
    "np.random.default_rng(seed).permutation(n), train the rest in that order "
    "(datasets' train_test_split(shuffle=True), 'test' renamed 'val')"
)
TOKENS_PER_WRITE = 1 << 22  # ids written per batch: 8 MB of uint16, whatever the corpus size
# Which datasets builder reads which local files; .txt files are one document each.
BUILDERS = {
    ".parquet": ("parquet", {}),
    ".jsonl": ("json", {}),
    ".json": ("json", {}),
    ".txt": ("text", {"sample_by": "document"}),
}


# ---------------------------------------------------------------------------------------------
# Loading and checking


def load_documents(data_files, num_proc, cache_dir):
    """The documents as a datasets.Dataset with a `text` column of strings, in a stable order.

    data_files None -> OpenWebText from the hub (see `hub_load_arguments`); else the files the
    patterns name (see `expand_data_files`). Every failure is a PrepareError saying what to do.
    """
    import datasets

    if cache_dir is not None and Path(cache_dir).exists() and not Path(cache_dir).is_dir():
        raise PrepareError(f"--cache-dir {cache_dir} is a file, not a folder; choose another path")
    cache_dir = None if cache_dir is None else str(cache_dir)
    if data_files is None:
        import huggingface_hub

        builder, kwargs = hub_load_arguments()
        try:
            # datasets' glob finds no file in a repo or revision that is gone: ask first, to say which
            huggingface_hub.HfApi().dataset_info(HUB_REPO, revision=HUB_REVISION)
            dataset = datasets.load_dataset(
                builder, split="train", num_proc=num_proc, cache_dir=cache_dir, **kwargs
            )
        except Exception as exc:  # offline, DNS, HTTP, a moved revision: all end the same way
            detail = " ".join(f"{type(exc).__name__}: {exc}".split())  # the hub's errors span lines
            raise PrepareError(
                f"cannot load {source_name(None)} from the Hugging Face hub "
                f"({detail}); to use local files instead, pass --data-files 'DIR/*.parquet'"
            ) from None
    else:
        files = expand_data_files(data_files)
        builder, options = BUILDERS[Path(files[0]).suffix.lower()]
        try:
            dataset = datasets.load_dataset(
                builder,
                data_files={"train": files},
                split="train",
                cache_dir=cache_dir,
                num_proc=min(num_proc, len(files)),
                **options,
            )
        except Exception as exc:  # a corrupt parquet file, invalid JSON, different columns...
            cause = exc.__cause__ or exc  # datasets wraps the telling error in a generic one
            detail = " ".join(f"{type(cause).__name__}: {cause}".split())
            raise PrepareError(
                f"datasets could not read --data-files {' '.join(data_files)} ({detail})"
            ) from None
    check_texts(dataset, source_name(data_files))
    return dataset


def hub_load_arguments():
    """What `datasets.load_dataset` is called with for OpenWebText from the hub.

    The repo's parquet files, read by datasets' own parquet builder at the pinned revision:
    nothing of the repo's old loading script is involved.
    -> ("parquet", {"data_files": {"train": "hf://datasets/Skylion007/openwebtext@79d9.../plain_text/*.parquet"}})
    """
    return "parquet", {
        "data_files": {"train": f"hf://datasets/{HUB_REPO}@{HUB_REVISION}/{HUB_CONFIG}/*.parquet"}
    }


def source_name(data_files):
    """None -> "Skylion007/openwebtext@79d93d786212"; ["a/*.jsonl", "b.txt"] -> "a/*.jsonl b.txt"."""
    return " ".join(data_files) if data_files else f"{HUB_REPO}@{HUB_REVISION[:12]}"


def source_record(data_files, num_documents):
    """meta.json's "source": the hub repo, revision and config, or the --data-files as given."""
    if data_files:
        return {"files": data_files, "documents": num_documents}
    return {
        "repo": HUB_REPO,
        "revision": HUB_REVISION,
        "config": HUB_CONFIG,
        "documents": num_documents,
    }


def expand_data_files(patterns):
    """Each PATH|GLOB -> its files, sorted; in the order given: ["b.txt", "a/*.txt"] -> b.txt, a/1.txt, a/2.txt.

    Sorting makes the row order, and so the split and the .bin files, independent of the file
    system's listing order. The files must be of one known kind and not all empty.
    """
    files = {}  # a dict keeps the first place of a file named twice
    for pattern in patterns:
        matches = sorted(glob.glob(os.path.expanduser(pattern), recursive=True))
        if not matches:
            raise PrepareError(f"--data-files {pattern} matches no file; check the path")
        files.update((path, None) for path in matches if path not in files and Path(path).is_file())
    files = list(files)
    kinds = {Path(path).suffix.lower() for path in files}
    if not kinds or not kinds <= BUILDERS.keys():
        unknown = sorted(kinds - BUILDERS.keys()) or ["no files"]
        raise PrepareError(
            f"--data-files must name .parquet, .jsonl, .json or .txt files; found {', '.join(unknown)}"
        )
    if len({BUILDERS[kind][0] for kind in kinds}) > 1:
        raise PrepareError(
            f"--data-files mixes {', '.join(sorted(kinds))} files; give files of one kind"
        )
    if all(_holds_nothing(path) for path in files):
        raise PrepareError(
            f"--data-files names only empty files ({files[0]}, ...); there is nothing to prepare"
        )
    return files


def _holds_nothing(path):
    """True for an empty file, or a parquet file of 0 rows (datasets 5 fails on one with an obscure error)."""
    if Path(path).stat().st_size == 0:
        return True
    if Path(path).suffix.lower() != ".parquet":
        return False
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path).metadata.num_rows == 0
    except Exception:  # not a parquet file: datasets will say so
        return False


def check_texts(dataset, source):
    """Refuse a dataset without a `text` column of strings, naming what is wrong and where."""
    if "text" not in dataset.column_names:
        raise PrepareError(
            f"{source} has no 'text' column; its columns are: {', '.join(dataset.column_names)}"
        )
    if len(dataset) == 0:
        raise PrepareError(f"{source} holds no documents; there is nothing to prepare")
    feature = dataset.features["text"]
    if getattr(feature, "dtype", None) in ("string", "large_string"):
        # only missing values can be wrong, and Arrow counts those without reading the texts
        column = dataset.with_format("arrow")["text"]
        bad = column.null_count
        first = int(np.argmax(column.is_null().to_numpy(zero_copy_only=False))) if bad else None
    else:
        bad, first = 0, None
        for start in range(0, len(dataset), 10_000):
            for offset, text in enumerate(dataset[start : start + 10_000]["text"]):
                if not isinstance(text, str):
                    bad += 1
                    first = start + offset if first is None else first
    if bad:
        raise PrepareError(
            f"{source}: {bad:,} of {len(dataset):,} documents have a missing or non-string "
            f"'text' (the first at row {first:,}); fix or drop those rows"
        )


# ---------------------------------------------------------------------------------------------
# Splitting and tokenizing


def split_sizes(num_documents, val_fraction):
    """(train, val) document counts of datasets' train_test_split(test_size=val_fraction).

    10,000 documents, 0.0005 -> (9995, 5): val gets ceil(fraction * n), train the rest.
    A fraction outside (0, 1), or one that leaves a side empty, is an error.
    """
    num_val = math.ceil(val_fraction * num_documents)
    num_train = num_documents - num_val
    if not 0 < val_fraction < 1 or num_train <= 0:
        empty = "val" if val_fraction <= 0 else "train"
        raise PrepareError(
            f"--val-fraction {val_fraction} of {num_documents:,} documents leaves {empty} empty; "
            f"choose a fraction that leaves at least one document on each side"
        )
    return num_train, num_val


def random_split(num_documents, val_fraction, seed):
    """nanoGPT's split of documents 0..n-1: (train, val) document numbers, in the order written.

    10 documents, 0.2, seed 2357 -> (array([0, 9, 5, 6, 2, 7, 4, 1]), array([8, 3]))
    Exactly datasets' train_test_split(test_size=val_fraction, seed=seed, shuffle=True): val is
    the first ceil(val_fraction * n) numbers of np.random.default_rng(seed).permutation(n),
    train the rest, in that order. The permutation is numpy's generator stream: meta.json
    records numpy's version. One function for both engines (datasets: dataset.select).
    """
    num_train, num_val = split_sizes(num_documents, val_fraction)
    permutation = np.random.default_rng(seed).permutation(num_documents)
    return permutation[num_val:], permutation[:num_val]


def tokenize(texts, encoding, eot_id, dtype):
    """A batch of documents -> each one's ids followed by the end-of-text id, and their lengths.

    ["Hello world", "Hi"] -> {"ids": [[15496, 995, 50256], [17250, 50256]], "len": [3, 2]} (GPT-2)
    nanoGPT's per-document `process`, a batch at a time, with the ids as `dtype` arrays rather
    than int64 lists. It depends only on its arguments, so any worker can run it. A tokenizer
    with an id that `dtype` cannot hold is refused before anything is encoded: no id is cast
    to a wrapped-around value.
    """
    if max(encoding.max_token_value, eot_id) > np.iinfo(dtype).max:
        raise PrepareError(
            f"{np.dtype(dtype).name} cannot hold the ids of tokenizer {encoding.name} "
            f"(up to {max(encoding.max_token_value, eot_id):,})"
        )
    ids = [encode_document(text, encoding, eot_id, dtype) for text in texts]
    return {"ids": ids, "len": [len(doc) for doc in ids]}


def encode_document(text, encoding, eot_id, dtype):
    """One document's ids and the end-of-text id, as a `dtype` array: "Hi" -> [17250, 50256].

    The same as np.array(encoding.encode_ordinary(text) + [eot_id], dtype) (nanoGPT's
    `process`), without a Python int per token: tiktoken's encode_to_numpy, with no special
    token allowed or refused, gives encode_ordinary's ids as one uint32 buffer (a literal
    "<|endoftext|>" in the text stays plain text); the list and its conversion would cost
    about a tenth of the encoding itself. A text with a lone surrogate, which tiktoken's Rust
    side refuses, goes through encode_ordinary, which repairs it first. The cast to `dtype`
    is unchecked: `tokenize` checks the tokenizer's largest id once.
    """
    try:
        encoded = encoding.encode_to_numpy(text, disallowed_special=())
    except UnicodeEncodeError:  # lone surrogates: encode_ordinary repairs them as tiktoken does
        encoded = encoding.encode_ordinary(text)
    ids = np.empty(len(encoded) + 1, dtype)
    ids[:-1] = encoded
    ids[-1] = eot_id
    return ids


def ids_cache_options(documents, tokenizer, dtype):
    """`features` and `new_fingerprint` for documents.map(tokenize, ...).

    features: the ids are stored as `dtype` (uint16: 4x less disk than datasets' default int64).
    new_fingerprint: the cache key, made from what decides the result (the input split,
    `tokenize`, the tokenizer's sha256 and end-of-text id, the dtype); datasets' own would pickle
    the whole vocabulary (~1 s per split).
    """
    import datasets
    from datasets.fingerprint import Hasher

    features = datasets.Features(
        {"ids": datasets.List(datasets.Value(dtype.name)), "len": datasets.Value("int64")}
    )
    key = [documents._fingerprint, tokenize, tokenizer["sha256"], tokenizer["eot_id"], dtype.name]
    return {"features": features, "new_fingerprint": Hasher.hash(key)}


# ---------------------------------------------------------------------------------------------
# Reading the ids back


class TextCoverage:
    """Checks that each split's ids stand for every byte of its texts, as the ids stream by.

    A trained tokenizer's own pattern may leave characters out (r"\\w+" drops the spaces): see
    prep.tokenizers.check_covered. The check runs in the main process, after the map (a worker
    never raises it), and costs next to nothing: the ids' byte lengths are added up per batch as
    they are written (one numpy lookup), and compared at the end with the sum of the texts'
    UTF-8 lengths, which Arrow reads from the text column's offsets. Only on a mismatch is the
    first document that differs found and its first lost character named. For GPT-2's and
    GPT-4's patterns, which match every character, `checked` hands the ids on untouched.
    """

    def __init__(self, dataset, encoding, tokenizer, source):
        self.dataset, self.encoding = dataset, encoding
        self.tokenizer, self.source = tokenizer, source
        self.text_bytes = None
        if may_lose_text(encoding, tokenizer):
            import pyarrow.compute as pc

            column = dataset.with_format("arrow")["text"]  # read from the offsets, not the texts
            self.text_bytes = pc.binary_length(column).to_numpy().astype(np.int64)

    def checked(self, id_batches, tokenized, rows):
        """The id batches of a split, unchanged; a PrepareError after the last one if they
        leave characters out. tokenized: the split's tokenized documents; rows: their rows in
        the dataset, in the split's order."""
        if self.text_bytes is None:
            yield from id_batches
            return
        lengths = token_byte_lengths(self.encoding)
        total = 0
        for ids in id_batches:
            total += int(lengths[ids].sum())
            yield ids
        if total != int(self.text_bytes[rows].sum()):
            self.refuse_first_lossy_document(tokenized, rows)

    def refuse_first_lossy_document(self, tokenized, rows, batch_size=10_000):
        """Find the first document whose ids and text differ in bytes; check_covered names it."""
        lengths = token_byte_lengths(self.encoding)
        for start in range(0, len(tokenized), batch_size):
            ids = tokenized.with_format("arrow")[start : start + batch_size]["ids"].combine_chunks()
            starts = ids.offsets.to_numpy()[:-1]  # no document is empty: each ends with its eot
            id_bytes = np.add.reduceat(lengths[ids.flatten().to_numpy()], starts)
            differs = id_bytes != self.text_bytes[rows[start : start + len(starts)]]
            if differs.any():
                document = start + int(np.argmax(differs))
                row = int(rows[document])
                text, ids = self.dataset[row]["text"], tokenized[document]["ids"]
                check_covered(
                    text, ids, self.encoding, self.tokenizer, f"{self.source}, row {row:,}"
                )
        raise PrepareError(  # the totals differ, yet no document does: the cache is not these texts'
            f"the tokenized {self.source} in the datasets cache does not match its texts; delete "
            f"the cache (--cache-dir) and run again"
        )


def count_tokens(tokenized):
    """The number of ids in a tokenized split: the sum of its `len` column, read by Arrow."""
    return int(tokenized.with_format("arrow")["len"].to_numpy().sum())


def stream_ids(tokenized, batch_tokens=TOKENS_PER_WRITE):
    """A tokenized split's ids in order, in arrays of `batch_tokens` (the last may be shorter).

    The same ids as np.concatenate(tokenized["ids"]), holding about one batch in memory.
    """
    return rebatch(token_stream(tokenized), batch_tokens)


def token_stream(tokenized):
    """A tokenized split's ids in order, as one flat array per Arrow record batch.

    The same ids as np.concatenate(dataset["ids"]), but read batch by batch from the datasets
    cache files (streamed, not memory-mapped), so memory holds one batch whatever the corpus size.
    `tokenized` must be the output of .map (its rows are in file order, with no indices mapping).
    """
    import pyarrow as pa

    if not tokenized.cache_files:  # an in-memory dataset (no cache): its table is already loaded
        for batch in tokenized.data.to_batches():
            yield batch.column("ids").flatten().to_numpy(zero_copy_only=False)
        return
    for cache_file in tokenized.cache_files:
        with pa.OSFile(cache_file["filename"]) as f:
            for batch in pa.ipc.open_stream(f):
                yield batch.column("ids").flatten().to_numpy(zero_copy_only=False)


def rebatch(arrays, size):
    """Regroup a stream of 1-D arrays into arrays of `size` items (the last one may be shorter).

    [1, 2, 3], [4], [5, 6, 7, 8] with size 3 -> [1, 2, 3], [4, 5, 6], [7, 8]
    The same items as np.concatenate(arrays) cut every `size`, holding about one batch at a time.
    """
    pending, count = [], 0
    for array in arrays:
        while count + len(array) >= size:
            take = size - count
            pending.append(array[:take])
            yield np.concatenate(pending)
            array, pending, count = array[take:], [], 0
        if len(array):
            pending.append(array)
            count += len(array)
    if count:
        yield np.concatenate(pending)
