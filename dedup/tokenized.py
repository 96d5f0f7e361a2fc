"""--dedup over a tokenized `datasets` Dataset (a lesson's documents, each its ids and length):
which documents to keep (dedup/drop.py) and what the run says of the ones it dropped.

    kept, record = deduplicate(tokenized, "near")  # the numbers of the documents kept
"""

import numpy as np
from tqdm import tqdm

from safety.text import plural

from .drop import document_keys, keep_documents, rule_record, without_boundaries


def document_chunks(tokenized, eot_first=False, desc=None, documents_per_batch=10_000):
    """A tokenized dataset's documents as dedup/ reads them, a batch at a time: (their ids, the
    end-of-text token left out, one flat array; offsets), [[17250, 50256], [64, 50256]] ->
    ([17250, 64], [0, 1, 2]). desc: a tqdm bar of the documents, so named."""
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
    """--dedup exact|near: the numbers of the documents kept, the first of each copy or cluster of
    near copies (dedup/drop.py), and meta.json's record of the rule and of the documents dropped.
    Compared: each document's ids without its end-of-text token, what `overlap` compares."""

    chunks = document_chunks(tokenized, eot_first, f"--dedup {rule}")
    keys = (document_keys(rule, ids, offsets) for ids, offsets in chunks)
    kept = np.flatnonzero(keep_documents(rule, keys))
    record = {**rule_record(rule), "documents_dropped": len(tokenized) - len(kept)}
    print(dedup_line(record, len(tokenized)))
    return kept, record


def dedup_line(record, documents):
    """What --dedup says of the documents it dropped (`deduplicate`'s record), out of `documents`:
    "--dedup exact: 2 of 23 documents dropped, each an exact copy of an earlier one"."""
    if record["rule"] == "exact":
        repeat = "an exact copy of an earlier one"
    else:
        repeat = "a near copy in an earlier one's cluster"
    dropped = f"{record['documents_dropped']:,} of {plural(documents, 'document')} dropped"
    return f"--dedup {record['rule']}: {dropped}, each {repeat}"
