"""The four stages of the datatrove engine (engine/pipeline.py) as datatrove pipeline steps, in a
module the Slurm and Ray executors can unpickle them from on other machines.
"""

import functools
import itertools
import json

import numpy as np
from datatrove.pipeline.base import PipelineStep

from dedup.drop import document_keys, keep_documents, no_keys, rule_record, without_boundaries
from documents.corpus import check_text_column
from documents.inputs import json_columns
from engine.executors import LOADED_TOKENIZERS, show_user_errors_without_traceback
from engine.readers import PieceReader, is_json_array
from formats.schema import FIGURES
from formats.shards import check_ids
from prepare_common import bpe_encoding, tokenize_documents
from safety.errors import PrepareError
from safety.files import atomic_path, atomic_write_text, sha256_file

DOCUMENTS_PER_BATCH = 1_000  # texts handed to `tokenize` at once
INDEX_DTYPE = np.dtype([("file", "<u4"), ("position", "<i8"), ("tokens", "<u4")])
# a document's byte figures but "documents" (1 each): the plan sums them for each split
FIGURES_DTYPE = np.dtype([(name, "<u8") for name in FIGURES[1:]])


class Stage(PipelineStep):
    type = "nanoGPT"
    parallel = True  # a stage of N tasks; False: of one

    def __init__(self, work, job):
        super().__init__()
        self.work, self.job = work, job

    def run(self, data=None, rank=0, world_size=1):  # noqa: ARG002 (datatrove's signature)
        show_user_errors_without_traceback()
        try:
            self.run_task(rank, world_size)
        except OSError as exc:  # a full disk, a file size limit: one line naming the file
            folder = self.work.tokens if self.name == "tokenize" else self.work.split
            raise PrepareError(
                f"task {rank} of the {self.name} stage cannot write {exc.filename or folder}: "
                f"{exc.strerror or exc}; fix that and run the same command again"
            ) from None

    def load_tokenizer(self):
        """The run's tokenizer, loaded once per process; a changed file is refused."""
        key = (self.job.tokenizer_path, self.job.tokenizer["sha256"])
        if key not in LOADED_TOKENIZERS:
            encoding, tokenizer = bpe_encoding(self.job.tokenizer_path)
            if tokenizer["sha256"] != key[1]:
                raise PrepareError(f"{key[0]} changed while the run was going on")
            LOADED_TOKENIZERS[key] = encoding, tokenizer
        return LOADED_TOKENIZERS[key]


class TokenizeStage(Stage):
    """Task r: its slice of the input -> its ids, index, figures (and --dedup's keys), then
    summary-r.json with their sha256s and the spans of the input it covered."""

    name = "tokenize"

    def run_task(self, rank, world_size):  # noqa: ARG002
        job, dtype = self.job, np.dtype(self.job.dtype)
        encoding, tokenizer = self.load_tokenizer()
        index, spans, bad, first_bad, keys, figures = [], [], 0, None, [], []
        with atomic_path(self.work.token_file(rank)) as tmp, open(tmp, "wb") as out:
            for file_number, start, end in job.slices[rank]:
                reader = PieceReader(job.files[file_number], job.kind, start, end)
                read = iter(reader)  # its span known once read to its end
                while batch := list(itertools.islice(read, DOCUMENTS_PER_BATCH)):
                    rows = np.zeros(len(batch), INDEX_DTYPE)
                    counts = np.zeros(len(batch), FIGURES_DTYPE)
                    rows["file"] = file_number
                    rows["position"] = [position for position, _ in batch]
                    missing = [i for i, (_, text) in enumerate(batch) if text is None]
                    if missing and first_bad is None:  # reported by the plan, with global rows
                        first_bad = sum(map(len, index)) + missing[0]
                    bad += len(missing)
                    good = [i for i, (_, text) in enumerate(batch) if text is not None]
                    texts = [batch[i][1] for i in good]
                    path, positions = job.files[file_number], rows["position"][good]
                    where = functools.partial(document_name, path, job.kind, positions)
                    # a trained tokenizer's own pattern may leave characters out: refused there
                    tokens = tokenize_documents(
                        texts, None, encoding, tokenizer, dtype, where, figures=job.figures
                    )
                    if good:
                        ids = np.concatenate(tokens["ids"])
                        check_ids(
                            ids, job.tokenizer["vocab_size"], dtype, where=job.files[file_number]
                        )
                        out.write(ids.data)  # a failed write says why (tofile: only a count)
                        rows["tokens"][good] = tokens["len"]
                        for name in FIGURES_DTYPE.names:
                            counts[name][good] = tokens["figures"][:, FIGURES.index(name)]
                        if job.dedup:  # each document's keys, its end of text left out
                            documents = without_boundaries(ids, tokens["len"], first=False)
                            keys.append(document_keys(job.dedup, *documents))
                    index.append(rows)
                    figures.append(counts)
                spans.append([file_number, reader.begin, reader.end])
        index = np.concatenate(index) if index else np.zeros(0, INDEX_DTYPE)
        save_array(self.work.index_file(rank), index)
        save_array(
            self.work.figures_file(rank),
            np.concatenate(figures) if figures else np.zeros(0, FIGURES_DTYPE),
        )
        if job.dedup:
            save_array(self.work.keys_file(rank), np.concatenate([no_keys(job.dedup), *keys]))
        files = self.work.tokenize_files(rank)
        summary = {
            "sha256": {path.name: sha256_file(path) for path in files},  # checked before reuse
            "documents": len(index),
            "tokens": int(index["tokens"].sum(dtype=np.int64)),
            "spans": spans,
            "bad": bad,
            "first_bad": first_bad,
        }
        atomic_write_text(self.work.summary_file(rank), json.dumps(summary) + "\n")


def save_array(path, values):
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.save(f, values)


def document_name(path, kind, positions, i):
    """How an error names document i of a batch: "a.parquet, row 7", "a.jsonl, the line at
    byte 120" or "a.txt"."""
    if kind == "text":
        return path
    if kind == "json" and not is_json_array(path):
        return f"{path}, the line at byte {int(positions[i]):,}"
    return f"{path}, row {int(positions[i]):,}"


class PlanStage(Stage):
    """One task: check each document is there once, drop --dedup's copies, place the rest."""

    name = "plan"
    parallel = False

    def run_task(self, rank, world_size):  # noqa: ARG002
        job, tasks = self.job, self.job.tasks
        summaries = [
            json.loads(self.work.summary_file(r).read_text(encoding="utf-8")) for r in range(tasks)
        ]
        index = np.concatenate([np.load(self.work.index_file(r)) for r in range(tasks)])
        figures = np.concatenate([np.load(self.work.figures_file(r)) for r in range(tasks)])
        plan = make_plan(index, figures, summaries, job, self.work)
        atomic_write_text(self.work.plan_json, json.dumps(plan, indent=2) + "\n")


def make_plan(index, figures, summaries, job, work):
    """The plan of the write stage, from the documents' index and figures in task order."""
    num_documents = len(index)
    bad = sum(summary["bad"] for summary in summaries)
    if bad:
        if bad == num_documents and job.kind == "json":
            # no object has the field, maybe: then datasets has no such column, and the lessons
            # say so, naming the columns there are
            check_text_column(job.source, json_columns(job.files))
        before = np.cumsum([0] + [s["documents"] for s in summaries])
        first = min(int(before[r]) + s["first_bad"] for r, s in enumerate(summaries) if s["bad"])
        raise PrepareError(
            f"{job.source}: {bad:,} of {num_documents:,} documents have a missing or "
            f"non-string 'text' (the first at row {first:,}); fix or drop those rows"
        )
    if num_documents == 0:
        raise PrepareError(f"{job.source} holds no documents; there is nothing to prepare")
    check_each_document_once(index, summaries, job, work)

    # where each document's ids are: its task's token file, and the offset in it
    documents_per_task = [summary["documents"] for summary in summaries]
    task = np.repeat(np.arange(len(summaries), dtype=np.uint32), documents_per_task)
    tokens = index["tokens"].astype(np.int64)
    start = np.cumsum(tokens) - tokens
    task_start = np.concatenate([[0], np.cumsum([s["tokens"] for s in summaries])])
    start -= task_start[task]
    plan = {"documents": num_documents, "numpy": np.__version__, "splits": {}}

    # --dedup: the first of each copy (or cluster of near copies) kept, before the lesson's rule
    kept = np.arange(num_documents)
    if job.dedup:  # from the keys the tokenize tasks wrote
        keys = (np.load(work.keys_file(r)) for r in range(job.tasks))
        kept = np.flatnonzero(keep_documents(job.dedup, keys))
        plan["dedup"] = {**rule_record(job.dedup), "documents_dropped": num_documents - len(kept)}
    splits = job.layout.orders(kept)
    for split, documents in splits.items():
        split_tokens = tokens[documents]
        offset = np.concatenate([[0], np.cumsum(split_tokens)])
        columns = dict(
            task=task[documents], start=start[documents], tokens=split_tokens, offset=offset
        )
        for column, values in columns.items():
            save_array(work.plan_file(split, column), values)
        plan["splits"][split] = {"documents": len(documents), "tokens": int(offset[-1])}
    # meta.json's byte figures of each split, and the text size of each val document in order
    plan["bytes"], byte_splits = {}, job.layout.byte_splits(splits, tokens)
    for split, documents in byte_splits.items():
        counts = {name: int(figures[name][documents].sum()) for name in FIGURES_DTYPE.names}
        plan["bytes"][split] = {"documents": len(documents), **counts}
    save_array(work.plan_file("val", "text_bytes"), figures["text_bytes"][byte_splits["val"]])
    return plan


def check_each_document_once(index, summaries, job, work):
    """Refuse token files that do not hold each document of the input once, in order."""
    itemsize = np.dtype(job.dtype).itemsize
    problem = None
    for rank, summary in enumerate(summaries):
        size = work.token_file(rank).stat().st_size
        if size != summary["tokens"] * itemsize:
            problem = f"{work.token_file(rank)} has {size:,} bytes, not {summary['tokens']:,} ids"
    ends = {}  # file number -> where the spans so far end
    for summary in summaries:
        for file_number, begin, end in summary["spans"]:
            if ends.get(file_number, 0) != begin:
                problem = f"the spans read of {job.files[file_number]} are not contiguous"
            ends[file_number] = end
    for file_number, length in enumerate(job.lengths):
        if ends.get(file_number, 0) != length:
            problem = f"{job.files[file_number]} was not read to its end"
    keys = index["file"].astype(np.int64), index["position"]
    increasing = (keys[0][1:] > keys[0][:-1]) | (
        (keys[0][1:] == keys[0][:-1]) & (keys[1][1:] > keys[1][:-1])
    )
    if not increasing.all():
        problem = f"document {int(np.argmin(increasing)) + 1:,} is out of order or repeated"
    if problem:
        raise PrepareError(
            f"the work directory {work.tokens} does not hold each document once ({problem}); "
            f"delete it and run again"
        )


class WriteStage(Stage):
    """Task r of N: its share of the layout's outputs, and the sha256 of each file it wrote."""

    name = "write"

    def run_task(self, rank, world_size):
        written = self.job.layout.write(self.work, self.job, rank, world_size)
        # checked before a later run reuses them (Work.claim)
        sha256 = {path.name: sha256_file(path) for path in written}
        atomic_write_text(self.work.written_file(rank), json.dumps({"sha256": sha256}) + "\n")


class CommitStage(Stage):
    """One task: the layout's outputs committed with meta.json."""

    name = "commit"
    parallel = False

    def run_task(self, rank, world_size):  # noqa: ARG002
        encoding, tokenizer = self.load_tokenizer()
        self.job.layout.commit(self.work, self.job, self.work.read_plan(), encoding, tokenizer)


STAGES = (TokenizeStage, PlanStage, WriteStage, CommitStage)
