"""The four stages of the datatrove engine (see engine/pipeline.py), as datatrove pipeline steps.

They live in an importable module, not in a script's __main__, because the Slurm and Ray
executors pickle them and unpickle them in other processes on other machines.
"""

import contextlib
import functools
import itertools
import json
import os
from pathlib import Path

import numpy as np
from datatrove.pipeline.base import PipelineStep

from engine.executors import LOADED_TOKENIZERS, show_user_errors_without_traceback
from engine.readers import PieceReader, batches
from prepare_common import (
    bpe_encoding,
    check_ids,
    llmc_names,
    random_split,
    split_record,
    tokenize_documents,
    write_bpe_meta_pkl,
    write_document_starts,
    write_meta,
    write_shards,
)
from safety.commit import output_folder
from safety.errors import PrepareError
from safety.files import atomic_path, sha256_file
from safety.record import SHARD_FORMATS

DOCUMENTS_PER_BATCH = 1_000  # texts handed to `tokenize` at once
TOKENS_PER_WRITE = 1 << 22  # ids copied per write: 8 MB of uint16
INDEX_DTYPE = np.dtype([("file", "<u4"), ("position", "<i8"), ("tokens", "<u4")])


class Stage(PipelineStep):
    type = "nanoGPT"

    def __init__(self, work, job):
        super().__init__()
        self.work, self.job = work, job

    def run(self, data=None, rank=0, world_size=1):  # noqa: ARG002 (datatrove's signature)
        show_user_errors_without_traceback()
        try:
            self.run_task(rank, world_size)
        except OSError as exc:  # a full disk, a file size limit: one line naming the file
            where = exc.filename or (
                self.work.tokens if self.name == "tokenize" else self.work.split
            )
            raise PrepareError(
                f"task {rank} of the {self.name} stage cannot write {where}: "
                f"{exc.strerror or exc}; fix that and run the same command again (it resumes)"
            ) from None

    def load_tokenizer(self):
        """The run's tokenizer (loaded once per process), refusing a changed tokenizer file."""
        key = (self.job["tokenizer_path"], self.job["tokenizer"]["sha256"])
        if key not in LOADED_TOKENIZERS:
            encoding, tokenizer = bpe_encoding(self.job["tokenizer_path"])
            if tokenizer["sha256"] != key[1]:
                raise PrepareError(f"{key[0]} changed while the run was going on")
            LOADED_TOKENIZERS[key] = encoding, tokenizer
        return LOADED_TOKENIZERS[key]


class TokenizeStage(Stage):
    """Task r: its slice of the input -> tokens-r.bin (the ids), index-r.npy (file, position,
    tokens per document) and summary-r.json (written last: the spans of the input it covered)."""

    name = "tokenize"

    def run_task(self, rank, world_size):  # noqa: ARG002
        job, dtype = self.job, np.dtype(self.job["dtype"])
        encoding, tokenizer = self.load_tokenizer()
        index, spans, bad, first_bad = [], [], 0, None
        with atomic_path(self.work.token_file(rank)) as tmp, open(tmp, "wb") as out:
            for file_number, start, end in job["slices"][rank]:
                reader = PieceReader(job["files"][file_number], job["kind"], start, end)
                for batch in batches(reader, DOCUMENTS_PER_BATCH):
                    rows = np.zeros(len(batch), INDEX_DTYPE)
                    rows["file"] = file_number
                    rows["position"] = [position for position, _ in batch]
                    good = [i for i, (_, text) in enumerate(batch) if text is not None]
                    if len(good) < len(batch):  # reported by the plan, with global row numbers
                        if first_bad is None:
                            first_bad = sum(map(len, index)) + next(
                                i for i, (_, text) in enumerate(batch) if text is None
                            )
                        bad += len(batch) - len(good)
                    texts = [batch[i][1] for i in good]
                    path, positions = job["files"][file_number], rows["position"][good]
                    where = functools.partial(document_name, path, job["kind"], positions)
                    # a trained tokenizer's own pattern may leave characters out: refused there
                    tokens = tokenize_documents(texts, None, encoding, tokenizer, dtype, where)
                    if good:
                        ids = np.concatenate(tokens["ids"])
                        check_ids(ids, job["vocab_size"], dtype, where=job["files"][file_number])
                        out.write(ids.data)  # a failed write says why (tofile: only a count)
                        rows["tokens"][good] = tokens["len"]
                    index.append(rows)
                spans.append([file_number, reader.begin, reader.end])
        index = np.concatenate(index) if index else np.zeros(0, INDEX_DTYPE)
        with atomic_path(self.work.index_file(rank)) as tmp, open(tmp, "wb") as f:
            np.save(f, index)
        files = (self.work.token_file(rank), self.work.index_file(rank))
        summary = {
            "sha256": {path.name: sha256_file(path) for path in files},  # checked before reuse
            "documents": len(index),
            "tokens": int(index["tokens"].sum(dtype=np.int64)),
            "spans": spans,
            "bad": bad,
            "first_bad": first_bad,
        }
        with atomic_path(self.work.summary_file(rank)) as tmp:
            tmp.write_text(json.dumps(summary) + "\n")


def document_name(path, kind, positions, i):
    """How an error names document i of a batch: "a.parquet, row 7", "a.jsonl, the line at
    byte 120" or "a.txt", from the positions of the batch's documents in their file."""
    position = int(positions[i])
    if kind == "parquet":
        return f"{path}, row {position:,}"
    if kind == "json":
        return f"{path}, the line at byte {position:,}"
    return path


class PlanStage(Stage):
    """One task: number the documents, check each is there once, draw the split, place them."""

    name = "plan"

    def run_task(self, rank, world_size):  # noqa: ARG002
        job, tasks = self.job, self.job["tasks"]
        summaries = [
            json.loads(self.work.summary_file(r).read_text(encoding="utf-8")) for r in range(tasks)
        ]
        index = np.concatenate([np.load(self.work.index_file(r)) for r in range(tasks)])
        plan = make_plan(index, summaries, job, self.work)
        with atomic_path(self.work.split / "plan" / "plan.json") as tmp:
            tmp.write_text(json.dumps(plan, indent=2) + "\n", encoding="utf-8")


def make_plan(index, summaries, job, work):
    """The plan of the write stage, from the documents' index in task order (see PlanStage)."""
    num_documents = len(index)
    bad = sum(summary["bad"] for summary in summaries)
    if bad:
        before = np.cumsum([0] + [summary["documents"] for summary in summaries])
        first = min(
            int(before[r]) + summary["first_bad"]
            for r, summary in enumerate(summaries)
            if summary["bad"]
        )
        raise PrepareError(
            f"{job['source']}: {bad:,} of {num_documents:,} documents have a missing or "
            f"non-string 'text' (the first at row {first:,}); fix or drop those rows"
        )
    if num_documents == 0:
        raise PrepareError(f"{job['source']} holds no documents; there is nothing to prepare")
    check_each_document_once(index, summaries, job, work)
    if job["val_fraction"] is None:  # llm.c's rule (data/fineweb): every document, in order
        splits = {"all": np.arange(num_documents)}
        if job.get("shuffle") is not None:  # --shuffle SEED: the permutation prepare.py applies
            splits["all"] = np.random.default_rng(job["shuffle"]).permutation(num_documents)
    else:
        train, val = random_split(num_documents, job["val_fraction"], job["seed"])
        splits = {"train": train, "val": val}

    # where each document's ids are: its task's token file, and the offset in it
    documents_per_task = [summary["documents"] for summary in summaries]
    task = np.repeat(np.arange(len(summaries), dtype=np.uint32), documents_per_task)
    tokens = index["tokens"].astype(np.int64)
    start = np.cumsum(tokens) - tokens
    task_start = np.concatenate([[0], np.cumsum([s["tokens"] for s in summaries])])
    start -= task_start[task]
    plan = {"documents": num_documents, "numpy": np.__version__, "splits": {}}
    for split, documents in splits.items():
        split_tokens = tokens[documents]
        offset = np.concatenate([[0], np.cumsum(split_tokens)])
        for column, values in (
            ("task", task[documents]),
            ("start", start[documents]),
            ("tokens", split_tokens),
            ("offset", offset),
        ):
            with atomic_path(work.plan_file(split, column)) as tmp, open(tmp, "wb") as f:
                np.save(f, values)
        plan["splits"][split] = {"documents": len(documents), "tokens": int(offset[-1])}
    return plan


def check_each_document_once(index, summaries, job, work):
    """The token files must cover every file once, end to end, with each document once, in
    order; anything else (a stale or foreign file in the work directory) stops the run."""
    itemsize = np.dtype(job["dtype"]).itemsize
    problem = None
    for rank, summary in enumerate(summaries):
        size = work.token_file(rank).stat().st_size
        if size != summary["tokens"] * itemsize:
            problem = f"{work.token_file(rank)} has {size:,} bytes, not {summary['tokens']:,} ids"
    ends = {}  # file number -> where the spans so far end
    for summary in summaries:
        for file_number, begin, end in summary["spans"]:
            if ends.get(file_number, 0) != begin:
                problem = f"the spans read of {job['files'][file_number]} are not contiguous"
            ends[file_number] = end
    for file_number, length in enumerate(job["lengths"]):
        if ends.get(file_number, 0) != length:
            problem = f"{job['files'][file_number]} was not read to its end"
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
    """Task r of N: part r of each split, its ids copied in order from the token files."""

    name = "write"

    def run_task(self, rank, world_size):
        plan = json.loads((self.work.split / "plan" / "plan.json").read_text(encoding="utf-8"))
        dtype = np.dtype(self.job["dtype"])
        written = []
        for split in plan["splits"]:
            total = plan["splits"][split]["tokens"]
            if split == "all":  # data/fineweb: this task's shards, whole
                written += self.write_llmc_shards(total, rank, world_size, dtype)
                continue
            low, high = rank * total // world_size, (rank + 1) * total // world_size
            with atomic_path(self.work.part_file(split, rank)) as tmp, open(tmp, "wb") as out:
                for ids in self.ranges(split, low, high, dtype):
                    out.write(ids.data)  # a failed write says why (tofile: only a count)
                out.flush()
                if tmp.stat().st_size != (high - low) * dtype.itemsize:
                    raise PrepareError(f"{self.work.part_file(split, rank)}: wrong size")
            written.append(self.work.part_file(split, rank))
        # checked before a later run reuses them (Work.redo_damaged_tasks)
        with atomic_path(self.work.written_file(rank)) as tmp:
            sha256 = {path.name: sha256_file(path) for path in written}
            tmp.write_text(json.dumps({"sha256": sha256}) + "\n", encoding="utf-8")

    def write_llmc_shards(self, total, rank, world_size, dtype):
        """data/fineweb: task r writes its share of the shards, and their records. Shard k holds
        tokens k*S..(k+1)*S-1 of llm.c's stream (each document after its end of text): the
        positions k*S-1..(k+1)*S-2 of the documents' stream (each one before its end of text),
        where position -1 is the first end of text."""
        job, size = self.job, self.job["shard_size"]
        count = -(-total // size)  # the shards of the stream, the last one partial
        names = list(itertools.islice(llmc_names(job["prefix"]), count))
        records = []
        for k in range(rank * count // world_size, (rank + 1) * count // world_size):
            low, high = k * size, min((k + 1) * size, total)
            first = [np.array([job["eot_id"]], dtype)] if k == 0 else []
            ids = itertools.chain(first, self.ranges("all", max(low - 1, 0), high - 1, dtype))
            records += write_shards(
                self.work.split / "parts", ids, iter(names[k : k + 1]), size, dtype,
                job["vocab_size"], job["format"], say=False,  # the commit says them, in order
            )  # fmt: skip
        with atomic_path(self.work.split / "parts" / f"shards-{rank:05d}.json") as tmp:
            tmp.write_text(json.dumps(records) + "\n", encoding="utf-8")
        return [self.work.split / "parts" / record["file"] for record in records]

    def ranges(self, split, low, high, dtype):
        """The ids of positions low..high-1 of a split, as arrays of up to TOKENS_PER_WRITE."""
        plan = {
            column: np.load(self.work.plan_file(split, column), mmap_mode="r")
            for column in ("task", "start", "tokens", "offset")
        }
        first = max(int(np.searchsorted(plan["offset"], low, side="right")) - 1, 0)
        last = int(np.searchsorted(plan["offset"], high, side="left"))
        token_files = {}
        buffer, filled = np.empty(min(TOKENS_PER_WRITE, max(high - low, 1)), dtype), 0
        for task, start, tokens, offset in zip(
            plan["task"][first:last].tolist(),
            plan["start"][first:last].tolist(),
            plan["tokens"][first:last].tolist(),
            plan["offset"][first:last].tolist(),
        ):
            skip = max(low - offset, 0)
            take = min(high - offset, tokens) - skip
            if take <= 0:
                continue
            if task not in token_files:
                token_files[task] = np.memmap(self.work.token_file(task), dtype=dtype, mode="r")
            ids = token_files[task][start + skip : start + skip + take]
            if filled + take > len(buffer):
                yield buffer[:filled]
                filled = 0
            if take > len(buffer):
                yield np.asarray(ids)
                continue
            buffer[filled : filled + take] = ids
            filled += take
        if filled:
            yield buffer[:filled]


class CommitStage(Stage):
    """One task: join the parts into train.bin and val.bin, check them, and commit them with
    meta.json (and meta.pkl for a trained tokenizer) as every script does: `output_folder`."""

    name = "commit"

    def run_task(self, rank, world_size):  # noqa: ARG002
        job = self.job
        plan = json.loads((self.work.split / "plan" / "plan.json").read_text(encoding="utf-8"))
        encoding, tokenizer = self.load_tokenizer()
        dtype = np.dtype(job["dtype"])
        out_dir = Path(job["out_dir"])
        source = dict(job["source_record"], documents=plan["documents"])
        if "all" in plan["splits"]:  # data/fineweb: no split, the write tasks made the shards
            return commit_llmc_rule(job, self.work, plan, source, tokenizer, dtype, out_dir)
        parts = {
            split: [self.work.part_file(split, r) for r in range(job["tasks"])]
            for split in plan["splits"]
        }
        split_tokens = {split: plan["splits"][split]["tokens"] for split in parts}
        for split, paths in parts.items():
            size = sum(path.stat().st_size for path in paths)
            if size != split_tokens[split] * dtype.itemsize:
                raise PrepareError(
                    f"the parts of {split} in {self.work.split / 'parts'} hold {size:,} bytes, "
                    f"not {split_tokens[split]:,} ids; delete the work directory and run again"
                )
        documents = {name: plan["splits"][name]["documents"] for name in parts}
        split = split_record(job["val_fraction"], job["seed"], documents, plan["numpy"])
        split["rule"] = job["split_rule"]
        # committed as every script commits; who holds the lock: see prepare_with_datatrove
        with output_folder(out_dir) as out:
            shards = None
            if job["format"] == "llmc":  # the same streams cut into llm.c's shards, val first
                shards, size, vocab_size = [], job["shard_size"], job["vocab_size"]
                for name in ("val", "train"):  # llm.c's shard 0 is val
                    names = llmc_names(job["prefix"], name, first_index=len(shards))
                    ids = part_ids(parts[name], dtype)
                    shards += write_shards(out, ids, names, size, dtype, vocab_size, "llmc")
            for name, paths in parts.items() if shards is None else ():
                join_files(paths, out / f"{name}.bin")
                if (out / f"{name}.bin").stat().st_size != split_tokens[name] * dtype.itemsize:
                    raise PrepareError(f"{out_dir / name}.bin: joined size differs from the plan")
                # the document index from the plan's lengths: no pass over the tokens
                lengths = np.load(self.work.plan_file(name, "tokens"))
                write_document_starts(out / f"{name}.docs.npy", lengths)
            wrote_pkl = write_bpe_meta_pkl(out, tokenizer, encoding)
            write_meta(
                out,
                script=job["script"],
                tokenizer=tokenizer,
                dtype=dtype,
                split_tokens=split_tokens,
                shards=shards,
                shard_format=job["format"],
                source=source,
                split=split,
                options=job["options"],
            )
        count = plan["documents"]
        print(f"{job['source']}: {count:,} document{'s' * (count != 1)}")
        for name in parts:
            count = split["documents"][name]
            print(
                f"{name} has {count:,} document{'s' * (count != 1)}, {split_tokens[name]:,} tokens"
            )
        meta_files = "meta.json, meta.pkl" if wrote_pkl else "meta.json"
        outputs = "train.bin, val.bin" if shards is None else f"{len(shards):,} llm.c shards"
        shown = job.get("out_dir_as_given", out_dir)  # as the datasets engine prints it
        print(f"wrote {outputs} ({dtype.name}), {meta_files} to {shown}")


def commit_llmc_rule(job, work, plan, source, tokenizer, dtype, out_dir):
    """data/fineweb's commit: the write tasks' shards (checked against the plan) and meta.json,
    as data/fineweb/prepare.py writes them."""
    parts = work.split / "parts"
    shards = [
        shard
        for rank in range(job["tasks"])
        for shard in json.loads((parts / f"shards-{rank:05d}.json").read_text(encoding="utf-8"))
    ]
    total, size = plan["splits"]["all"]["tokens"], job["shard_size"]
    names = itertools.islice(llmc_names(job["prefix"]), -(-total // size))
    expected = [f"{stem}{SHARD_FORMATS[job['format']]}" for _, stem in names]
    if [shard["file"] for shard in shards] != expected or sum(s["tokens"] for s in shards) != total:
        raise PrepareError(
            f"the shards in {parts} are not the {len(expected):,} of the plan; delete the work "
            f"directory and run again"
        )
    split = {"rule": job["split_rule"], "shard_size": job["shard_size"]}
    if job.get("shuffle") is not None:  # as prepare.py records it; numpy: the plan's, that drew it
        split.update(shuffle_seed=job["shuffle"], numpy=plan["numpy"])
    with output_folder(out_dir) as out:
        for shard in shards:
            link_or_copy(parts / shard["file"], out / shard["file"])
        write_meta(
            out, script=job["script"], tokenizer=tokenizer, dtype=dtype, shards=shards,
            shard_format=job["format"], source=source, options=job["options"], split=split,
        )  # fmt: skip
    # what data/fineweb/prepare.py prints
    print(f"{job['source']}: {plan['documents']:,} document{'s' * (plan['documents'] != 1)}")
    print(f"{total:,} tokens: {len(shards):,} shard{'s' * (len(shards) != 1)}")
    for shard in shards:
        print(f"wrote {shard['file']}: {shard['tokens']:,} tokens")
    shown = job.get("out_dir_as_given", out_dir)
    print(f"wrote {len(shards):,} shards ({dtype.name}) and meta.json to {shown}")


def part_ids(paths, dtype):
    """The ids of the parts, in order, TOKENS_PER_WRITE at a time (memory-mapped)."""
    for path in paths:
        if path.stat().st_size == 0:  # an empty part (numpy cannot map an empty file)
            continue
        ids = np.memmap(path, dtype=dtype, mode="r")
        for start in range(0, len(ids), TOKENS_PER_WRITE):
            yield ids[start : start + TOKENS_PER_WRITE]


def link_or_copy(source, target):
    """`target` as a hard link to `source` (no copy: 20 GB of FineWeb-Edu shards would be read
    and written again by this one task, and stored twice), or a copy on another file system.
    Safe because we never change a part in place (a rerun writes a new file, atomic_path), and
    one changed by anyone else, through the output it is linked to, no longer matches the sha256
    its task recorded: the next run writes it again (Work.redo_damaged_tasks) before linking."""
    try:
        os.link(source, target)
    except OSError:
        join_files([source], target)


def join_files(paths, target):
    """Concatenate files into `target`; in the kernel (copy_file_range) where it can."""
    with open(target, "wb") as out:
        for path in paths:
            with open(path, "rb") as part:
                size = os.fstat(part.fileno()).st_size
                copied = 0
                if hasattr(os, "copy_file_range"):
                    with contextlib.suppress(OSError):
                        while copied < size:
                            step = os.copy_file_range(part.fileno(), out.fileno(), size - copied)
                            if step == 0:
                                break
                            copied += step
                part.seek(copied)
                out.seek(0, os.SEEK_END)
                while block := part.read(1 << 24):
                    out.write(block)


STAGES = (
    ("tokenize", TokenizeStage),
    ("plan", PlanStage),
    ("write", WriteStage),
    ("commit", CommitStage),
)
