"""--dedup over a lesson's tokenized `datasets` Dataset.

kept, record = deduplicate(tokenized, "near")  # the numbers of the documents kept
"""

import numpy as np
from tqdm import tqdm

from safety.text import plural

from .drop import document_keys, keep_documents, rule_record, without_boundaries


def document_chunks(tokenized, eot_first=False, desc=None, documents_per_batch=10_000):
    """(tokens, offsets) of each batch, ends of text left out; desc: a progress bar's name.

    [[17250, 50256], [64, 50256]] -> ([17250, 64], [0, 1, 2])
    """
    bar = tqdm(
        total=len(tokenized), unit=" doc", desc=desc, delay=1, leave=False, disable=desc is None
    )
    for batch in tokenized.with_format("arrow").iter(batch_size=documents_per_batch):
        lengths = batch["len"].to_numpy()
        bar.update(len(lengths))
        ids = batch["ids"].combine_chunks().flatten().to_numpy()
        yield without_boundaries(ids, lengths, eot_first)
    bar.close()


def deduplicate(tokenized, rule, eot_first=False):
    """--dedup exact|near: the numbers of the documents kept, and meta.json's record."""
    chunks = document_chunks(tokenized, eot_first, f"--dedup {rule}")
    keys = (document_keys(rule, ids, offsets) for ids, offsets in chunks)
    kept = np.flatnonzero(keep_documents(rule, keys))
    record = {**rule_record(rule), "documents_dropped": len(tokenized) - len(kept)}
    print(dedup_line(record, len(tokenized)))
    return kept, record


def dedup_line(record, documents):
    """What --dedup says of its drops: "--dedup exact: 2 of 23 documents dropped, each ..."."""
    if record["rule"] == "exact":
        repeat = "an exact copy of an earlier one"
    else:
        repeat = "a near copy in an earlier one's cluster"
    dropped = f"{record['documents_dropped']:,} of {plural(documents, 'document')} dropped"
    return f"--dedup {record['rule']}: {dropped}, each {repeat}"
