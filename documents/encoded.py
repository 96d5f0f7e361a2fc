"""Every document's ids, a batch of rows at a time in a pool of processes started once: datasets'
map without its costs (a Python list per row, a pool per call, the function pickled).

    tokenized = encoded_documents(documents, tokenize, dtype, num_proc, desc, key)
    # a datasets.Dataset {"ids": [[50256, 17250], ...], "len": [2, ...], "figures": [[1, ...]]}

The workers read their rows from the memory-mapped documents themselves and send back one flat
array of ids a batch, in order. The ids of documents in datasets' cache go to an Arrow file
beside them, named by `key`, which the next run with that key reads instead.
"""

from pathlib import Path

import numpy as np

from .parallel import ordered_map

ROWS_PER_BATCH = 1_000  # a worker's task: ~1M tokens of FineWeb-Edu


def encoded_documents(documents, tokenize, dtype, num_proc, desc, key):
    """The ids, length and figures tokenize(texts, indices) gives of every document, as a
    datasets.Dataset of columns "ids" (lists of `dtype`), "len" and "figures"."""
    import datasets
    import pyarrow as pa

    from safety.files import atomic_path

    path = None  # documents in memory (a budget's): their ids in memory too
    if documents.cache_files:  # beside datasets' cache of the documents
        path = Path(documents.cache_files[0]["filename"]).parent / f"tokenized-{key}.arrow"
    if path is not None and path.is_file():  # made by an earlier run from the same inputs
        return datasets.Dataset.from_file(str(path))
    ids = pa.list_(pa.from_numpy_dtype(dtype))
    schema = pa.schema({"ids": ids, "len": pa.int64(), "figures": pa.list_(pa.int64())})
    batches = record_batches(documents, tokenize, schema, num_proc, desc)
    if path is None:
        return datasets.Dataset(
            datasets.table.InMemoryTable(pa.Table.from_batches(batches, schema))
        )
    # atomic: a run stopped half-way leaves no file that the next would read
    with (
        atomic_path(path) as tmp,
        pa.OSFile(str(tmp), "wb") as sink,
        pa.ipc.new_stream(sink, schema) as writer,
    ):
        for batch in batches:
            writer.write_batch(batch)
    return datasets.Dataset.from_file(str(path))


def record_batches(documents, tokenize, schema, num_proc, desc):
    """The documents' ids, lengths and figures as Arrow record batches, in order."""
    import pyarrow as pa
    from tqdm import tqdm

    rows = documents.with_format("arrow")  # read in the workers: a slice of the mapped file
    size = max(1, min(ROWS_PER_BATCH, -(-len(rows) // num_proc)))  # a few documents: all share
    starts = range(0, len(rows), size)
    spans = ((start, min(start + size, len(rows))) for start in starts)
    processes = min(num_proc, len(starts))
    # closed before an error goes on: the error is the last line, not a bar redrawn after it
    with tqdm(total=len(rows), unit=" doc", desc=f"{desc} (num_proc={processes})") as bar:
        shared = (rows, tokenize)
        for ids, lengths, figures in ordered_map(encoded_rows, spans, processes, shared=shared):
            offsets = np.zeros(len(lengths) + 1, np.int32)
            np.cumsum(lengths, out=offsets[1:])
            column = pa.ListArray.from_arrays(pa.array(offsets), pa.array(ids))
            starts = np.arange(0, figures.size + 1, max(1, figures.shape[1]), dtype=np.int32)
            rows_figures = pa.ListArray.from_arrays(pa.array(starts), pa.array(figures.ravel()))
            yield pa.record_batch([column, pa.array(lengths), rows_figures], schema=schema)
            bar.update(len(lengths))


def encoded_rows(start, stop, rows, tokenize):
    """Rows start..stop-1 encoded: (their ids as one flat array, the lengths, their figures)."""
    texts = rows[start:stop]["text"].to_pylist()
    encoded = tokenize(texts, range(start, stop))
    lengths, figures = np.asarray(encoded["len"], np.int64), encoded["figures"]
    return np.concatenate(encoded["ids"]), lengths, figures
