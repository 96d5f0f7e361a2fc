"""How a lesson's documents become its outputs: RandomSplit (nanoGPT's train and val) or
ShardStream (llm.c's one stream of shards). Each has `orders` (each split's documents, in the
order written), `config` (what the plan and parts depend on), `write` (task r's share of the
outputs) and `commit` (the outputs committed with meta.json).
"""

import contextlib
import itertools
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dedup.tokenized import dedup_line
from formats import schema
from formats.schema import SHARD_FORMATS
from formats.shards import val_documents
from prepare_common import (
    llmc_names,
    random_split,
    split_record,
    write_bpe_meta_pkl,
    write_document_starts,
    write_meta,
    write_shards,
)
from safety.commit import output_folder
from safety.errors import PrepareError
from safety.files import atomic_path, atomic_write_text
from safety.text import plural

TOKENS_PER_WRITE = 1 << 22  # ids copied per write: 8 MB of uint16


@dataclass(frozen=True)
class RandomSplit:
    """nanoGPT's split (random_split), or with first_documents (--max-tokens) val those first
    documents; train.bin and val.bin, or (shard_format "llmc") llm.c's shards of each."""

    val_fraction: float
    seed: int
    rule: str  # meta.json's words for the rule
    shard_format: str = "bin"
    shard_size: int = 10**8
    first_documents: int | None = None

    def orders(self, kept):
        """{"train": ..., "val": ...} of the documents `kept`: [0, 2, 3] with first_documents 3
        -> train [3], val [0, 2]."""
        first = self.first_documents
        if first is not None:  # a budget's rule, not a draw: the same val whatever the budget
            return {"train": kept[kept >= first], "val": kept[kept < first]}
        train, val = random_split(len(kept), self.val_fraction, self.seed)
        return {"train": kept[train], "val": kept[val]}

    def byte_splits(self, splits, tokens):  # noqa: ARG002 (ShardStream's needs the tokens)
        """The documents of each split meta.json's byte figures count: the orders' own."""
        return splits

    def config(self):  # the commit cuts the shards from the parts
        return {"val_fraction": self.val_fraction, "seed": self.seed}

    def write(self, work, job, rank, world_size):
        """Part `rank` of each split, its ids copied in order from the token files."""
        plan, dtype = work.read_plan(), np.dtype(job.dtype)
        written = []
        for split in plan["splits"]:
            total = plan["splits"][split]["tokens"]
            low, high = rank * total // world_size, (rank + 1) * total // world_size
            with atomic_path(work.part_file(split, rank)) as tmp, open(tmp, "wb") as out:
                for ids in plan_ranges(work, split, low, high, dtype):
                    out.write(ids.data)  # a failed write says why (tofile: only a count)
                out.flush()
                if tmp.stat().st_size != (high - low) * dtype.itemsize:
                    raise PrepareError(f"{work.part_file(split, rank)}: wrong size")
            written.append(work.part_file(split, rank))
        return written

    def commit(self, work, job, plan, encoding, tokenizer):
        """The parts joined into train.bin and val.bin (or cut into shards), committed with
        meta.json (and a trained tokenizer's meta.pkl)."""
        dtype, out_dir = np.dtype(job.dtype), Path(job.out_dir)
        parts = {
            split: [work.part_file(split, r) for r in range(job.tasks)] for split in plan["splits"]
        }
        split_tokens = {split: plan["splits"][split]["tokens"] for split in parts}
        for split, paths in parts.items():
            size = sum(path.stat().st_size for path in paths)
            if size != split_tokens[split] * dtype.itemsize:
                raise PrepareError(
                    f"the parts of {split} in {work.split / 'parts'} hold {size:,} bytes, "
                    f"not {split_tokens[split]:,} ids; delete the work directory and run again"
                )
        documents = {name: plan["splits"][name]["documents"] for name in parts}
        split = split_record(
            self.val_fraction, self.seed, documents, plan["numpy"], plan.get("dedup")
        )
        split["rule"] = self.rule
        # committed as every script commits; who holds the lock: see prepare_with_datatrove
        with output_folder(out_dir, schema) as out:
            shards = [] if self.shard_format == "llmc" else None  # cut from the same streams
            for name in ("val", "train") if shards is not None else ():  # llm.c's shard 0 is val
                names = llmc_names(job.prefix, name, first_index=len(shards))
                ids, size = part_ids(parts[name], dtype), self.shard_size
                shards += write_shards(
                    out, ids, names, size, dtype, job.tokenizer["vocab_size"], "llmc"
                )
            for name, paths in parts.items() if shards is None else ():
                join_files(paths, out / f"{name}.bin")
                if (out / f"{name}.bin").stat().st_size != split_tokens[name] * dtype.itemsize:
                    raise PrepareError(f"{out_dir / name}.bin: joined size differs from the plan")
                # the document index from the plan's lengths: no pass over the tokens
                lengths = np.load(work.plan_file(name, "tokens"))
                write_document_starts(out / schema.index_name(name), lengths)
            wrote_pkl = write_bpe_meta_pkl(out, tokenizer, encoding)
            fields = dict(split_tokens=split_tokens, shards=shards, split=split)
            meta = commit_meta(out, work, job, plan, tokenizer, self.shard_format, **fields)
        say_documents(job, plan)  # and the rest of what the lesson's prepare.py prints
        shards = meta.get("shards")
        for name, tokens in split_tokens.items():
            print(f"{name} has {plural(split['documents'][name], 'document')}, {tokens:,} tokens")
        outputs = "train.bin, val.bin" if shards is None else f"{len(shards):,} llm.c shards"
        extras = [*schema.DOCUMENT_INDEXES] * (shards is None) + schema.sidecars(meta)
        extras += [schema.TOKEN_BYTES] + [schema.META_PKL] * wrote_pkl + [schema.RECORD_NAME]
        print(f"wrote {outputs} ({job.dtype}), {', '.join(extras)} to {job.out_dir_as_given}")


def say_documents(job, plan):
    """What the lesson's prepare.py prints first."""
    print(f"{job.source}: {plural(plan['documents'], 'document')}")
    if "dedup" in plan:
        print(dedup_line(plan["dedup"], plan["documents"]))


def commit_meta(out, work, job, plan, tokenizer, shard_format, **fields):
    """meta.json of the run, with the byte figures the tokenize tasks counted."""
    counted = (plan["bytes"], np.load(work.plan_file("val", "text_bytes")))
    fields.update(script=job.script, tokenizer=tokenizer)
    fields["source"] = dict(job.source_record, documents=plan["documents"])
    fields.update(dtype=np.dtype(job.dtype), options=job.options, counted=counted)
    return write_meta(out, shard_format=shard_format, **fields)


@dataclass(frozen=True)
class ShardStream:
    """llm.c's rule: every document in order (or shuffle_seed's permutation), each after its end
    of text, one stream cut every shard_size tokens into shards, shared out to the write tasks."""

    shuffle_seed: int | None
    rule: str  # meta.json's words for the rule
    shard_format: str
    shard_size: int

    def orders(self, kept):
        """{"all": the documents `kept`, as written}."""
        if self.shuffle_seed is None:
            return {"all": kept}
        return {"all": kept[np.random.default_rng(self.shuffle_seed).permutation(len(kept))]}

    def byte_splits(self, splits, tokens):
        """The documents of each split meta.json's byte figures count, in the order written: a
        document is in the shard its end of text starts (llm.c's rule), and shard 0 is val."""
        documents = splits["all"]
        count = val_documents(tokens[documents], self.shard_size)
        return {"val": documents[:count], "train": documents[count:]}

    def config(self):  # the write tasks cut the shards
        return {
            "val_fraction": None,
            "seed": None,
            "shuffle": self.shuffle_seed,
            "shard_size": self.shard_size,
            "format": self.shard_format,
        }

    def write(self, work, job, rank, world_size):
        """Task r's share of the shards, and their records. Shard k holds positions
        k*S-1..(k+1)*S-2 of the documents' stream (ends of text after), -1 the first end of text."""
        plan, dtype, size = work.read_plan(), np.dtype(job.dtype), self.shard_size
        total = plan["splits"]["all"]["tokens"]
        count = -(-total // size)  # the shards of the stream, the last one partial
        names, parts = list(itertools.islice(llmc_names(job.prefix), count)), work.split / "parts"
        records = []
        for k in range(rank * count // world_size, (rank + 1) * count // world_size):
            low, high = k * size, min((k + 1) * size, total)
            first = [np.array([job.tokenizer["eot_id"]], dtype)] if k == 0 else []
            ids = itertools.chain(first, plan_ranges(work, "all", max(low - 1, 0), high - 1, dtype))
            shard = iter(names[k : k + 1])  # said by the commit, in order
            vocab, shard_format = job.tokenizer["vocab_size"], self.shard_format
            records += write_shards(parts, ids, shard, size, dtype, vocab, shard_format, say=False)
        atomic_write_text(work.shard_records(rank), json.dumps(records) + "\n")
        return [parts / record["file"] for record in records]

    def commit(self, work, job, plan, encoding, tokenizer):  # noqa: ARG002 (no meta.pkl)
        """The write tasks' shards, checked against the plan, linked into the folder with
        meta.json."""
        dtype = np.dtype(job.dtype)
        shards = [
            shard
            for rank in range(job.tasks)
            for shard in json.loads(work.shard_records(rank).read_text(encoding="utf-8"))
        ]
        total = plan["splits"]["all"]["tokens"]
        names = itertools.islice(llmc_names(job.prefix), -(-total // self.shard_size))
        expected = [f"{stem}{SHARD_FORMATS[self.shard_format]}" for _, stem in names]
        if [s["file"] for s in shards] != expected or sum(s["tokens"] for s in shards) != total:
            raise PrepareError(
                f"the shards in {work.split / 'parts'} are not the {len(expected):,} of the "
                f"plan; delete the work directory and run again"
            )
        split = {"rule": self.rule, "shard_size": self.shard_size}
        if "dedup" in plan:  # as prepare.py records it, before the shuffle's seed
            split["dedup"] = plan["dedup"]
        if self.shuffle_seed is not None:  # numpy: the version that drew the permutation
            split.update(shuffle_seed=self.shuffle_seed, numpy=plan["numpy"])
        with output_folder(Path(job.out_dir), schema) as out:
            for shard in shards:
                link_or_copy(work.split / "parts" / shard["file"], out / shard["file"])
            fields = dict(shards=shards, split=split, eot_first=True)
            meta = commit_meta(out, work, job, plan, tokenizer, self.shard_format, **fields)
        say_documents(job, plan)  # and the rest of what the lesson's prepare.py prints
        print(f"{total:,} tokens: {plural(len(shards), 'shard')}")
        for shard in shards:
            print(f"wrote {shard['file']}: {shard['tokens']:,} tokens")
        extras = ", ".join([*schema.sidecars(meta), schema.TOKEN_BYTES, schema.RECORD_NAME])
        print(f"wrote {len(shards):,} shards ({dtype.name}), {extras} to {job.out_dir_as_given}")


def plan_ranges(work, split, low, high, dtype):
    """The ids of positions low..high-1 of a split, in arrays of up to TOKENS_PER_WRITE."""
    plan = {
        column: np.load(work.plan_file(split, column), mmap_mode="r")
        for column in ("task", "start", "tokens", "offset")
    }
    first = max(int(np.searchsorted(plan["offset"], low, side="right")) - 1, 0)
    last = int(np.searchsorted(plan["offset"], high, side="left"))
    token_files = {}
    buffer, filled = np.empty(min(TOKENS_PER_WRITE, max(high - low, 1)), dtype), 0
    columns = (
        plan[column][first:last].tolist() for column in ("task", "start", "tokens", "offset")
    )
    for task, start, tokens, offset in zip(*columns):
        skip = max(low - offset, 0)
        take = min(high - offset, tokens) - skip
        if take <= 0:
            continue
        if task not in token_files:
            token_files[task] = np.memmap(work.token_file(task), dtype=dtype, mode="r")
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


def part_ids(paths, dtype):
    """The ids of the parts, in order, TOKENS_PER_WRITE at a time."""
    for path in paths:
        if path.stat().st_size == 0:  # an empty part (numpy cannot map an empty file)
            continue
        ids = np.memmap(path, dtype=dtype, mode="r")
        for start in range(0, len(ids), TOKENS_PER_WRITE):
            yield ids[start : start + TOKENS_PER_WRITE]


def link_or_copy(source, target):
    """`target` as a hard link to `source` (20 GB of shards not copied), else a copy. Parts are
    never changed in place, and one changed through its output fails its sha256: made again."""
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
                shutil.copyfileobj(part, out, 1 << 24)
