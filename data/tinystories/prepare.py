"""
Prepare TinyStories as llm.c's dev/data/tinystories.py does: data00.json val, the rest train,
each file's stories shuffled (seed 1337 + its index), stripped, each <|endoftext|> then its ids:
llm.c's TinyStories_{val,train}.bin byte for byte (--format llmc), or nanoGPT's val.bin and
train.bin. Unlike llm.c's: a pinned download read as a stream, --vocab-size N (a BPE trained on
the train stories), --max-tokens N (only the archive's first bytes, fetched by range requests).

    python data/tinystories/prepare.py --archive TinyStories_all_data.tar.gz --vocab-size 2048
    python data/tinystories/prepare.py --max-tokens 10M  # a train file holds about 19M
"""

import itertools
import shutil
from argparse import RawDescriptionHelpFormatter
from pathlib import Path

import numpy as np
from archive import ArchiveError, archive_file, json_members, json_stories
from stories import SplitFiles, shuffled_stories, story_vocab_size, train_story_bpe

from bpe import EOT
from dedup.drop import document_keys, rule_record, without_boundaries
from documents.parallel import ordered_map
from formats import schema
from hub import token_budget
from hub.prefix import Prefix, pinned_prefix
from inspection.overlap import say_overlap
from prepare_common import (
    LLMC_READS,
    NANOGPT_READS,
    bpe_encoding,
    dtype_for_vocab,
    text_source,
    tokenize_documents,
    write_bpe_meta_pkl,
    write_meta,
)
from safety import (
    ArgumentParser,
    RemoteFile,
    default_num_proc,
    fetch,
    folder_outputs,
    output_folder,
    positive_int,
    run_main,
)

# pinned (the hub's revision f54c09fd2331, the sha256), though neither can be checked from here
ARCHIVE = RemoteFile(
    url="https://huggingface.co/datasets/roneneldan/TinyStories/resolve/"
    "f54c09fd23315a6f9c86f9dc80f725de7d8f9c64/TinyStories_all_data.tar.gz",
    # 1,608,001,638 bytes
    sha256="26cf7605aca15bc4ea6fa637256400d9d01317b28ed296172b2d1dd160cd7699",
    mirror_path="tinystories/TinyStories_all_data.tar.gz",
    local_option="--archive",
)
MEMBER = "data[0-9][0-9].json"  # the archive's files: data00.json ... data49.json
VAL = "data00.json"  # llm.c's val split: the first file by name


def main():
    args = parse_args()
    with output_folder(args.out_dir, schema) as out:  # staged in `out`, moved in together
        # 1. the archive: a local copy, or the pinned one (--max-tokens N: as far as N needs)
        url, dest = None if args.archive else ARCHIVE.url, args.out_dir / Path(ARCHIVE.url).name
        prefix = archive_prefix(args.archive, dest) if args.max_tokens else None
        if prefix:  # the whole archive's sha256 cannot be checked: the prefix read is recorded
            archive = Path(prefix.where)
            source = dict(path=None, sha256=None, characters=None, url=url)
            print(f"{archive}: read as far as {args.max_tokens:,} train tokens need")
        else:
            archive = archive_file(args.archive) if args.archive else fetch(ARCHIVE, dest)
            source = text_source(archive, args.out_dir, characters=None, url=url)  # its sha256
            ok = "pinned" if source["sha256"] == ARCHIVE.sha256 else "NOT pinned: prepared anyway"
            print(f"{archive}: sha256 {source['sha256'][:12]} ({ok})")

        # 2. the tokenizer: GPT-2's, --tokenizer, or a BPE learned now from the train stories
        path = out / f"tinystories-{args.vocab_size}.json" if args.vocab_size else args.tokenizer
        if args.tokenizer and args.tokenizer.resolve() in folder_outputs(schema, args.out_dir):
            path = Path(shutil.copy(args.tokenizer, out))  # the set's own file: the new set's too
        if args.vocab_size:  # saved in the folder, committed with it
            train = (json_stories(n, d) for n, d in json_members(archive, MEMBER) if n != VAL)
            train_story_bpe(train, args.vocab_size, EOT, args.num_proc).save(path)
        encoding, tokenizer = bpe_encoding(path, need_eot=True)  # recorded relative to the folder
        print(f"tokenizer: {tokenizer['name']} ({tokenizer['vocab_size']:,} tokens)")

        # 3. tokenize each JSON file as it comes out of the archive, --num-proc files at a time
        llmc = args.format == "llmc"
        dtype = dtype_for_vocab(tokenizer["vocab_size"], LLMC_READS if llmc else NANOGPT_READS)
        gpt2 = bpe_encoding()[0] if tokenizer["kind"] == "bpe" else None  # compared
        with SplitFiles(out, dtype, llmc) as splits:
            members = json_members(archive, MEMBER, raw=prefix)  # (name, bytes), one at a time
            marks, budget = {}, {}  # --max-tokens: each member's prefix read; meta.json's record
            if prefix:
                members = marked(members, prefix, marks, budget, args.max_tokens)
            members, processes = at_most_a_process_a_member(members, args.num_proc)
            shared = (encoding, tokenizer, dtype, gpt2, args.dedup)
            results = ordered_map(process, members, processes, shared)
            if prefix:
                results = within_budget(results, args.max_tokens, prefix, marks, budget)
            for result in results:  # (name, ids, lengths, counts, keys, figures)
                splits.add("val" if result[0] == VAL else "train", *result)

            # 4. --dedup: drop each story repeating an earlier one, val's first
            stories = {split: splits.figures(split)["stories"] for split in splits.files}
            split = {"rule": f"{VAL} val, the rest train", "stories": stories}
            if args.dedup:
                dropped = splits.deduplicate(args.dedup)
                split["stories"] = {s: n - dropped[s] for s, n in split["stories"].items()}
                split["dedup"] = {**rule_record(args.dedup), "stories_dropped": dropped}
                print(
                    f"--dedup {args.dedup}: {dropped['val']:,} val and {dropped['train']:,} "
                    "train stories dropped, each repeating an earlier one"
                )
            print(*splits.summary(tokenizer["name"]), sep="\n")  # of the stories kept
            if prefix:
                source["budget"] = budget
                print(budget_line(budget, prefix))
                prefix.close()

            # 5. each split's files written in the order of their names, as llm.c sorts them
            record = splits.finish(archive, whole=budget.get("whole", True))  # and indexes

        # 6. the metadata: meta.pkl for a trained tokenizer (nanoGPT's vocab_size), meta.json last
        wrote_pkl = write_bpe_meta_pkl(out, tokenizer, encoding)
        meta = write_meta(
            out,
            script="data/tinystories/prepare.py",
            tokenizer=tokenizer,
            dtype=dtype,
            **record,
            counted=splits.counted(),  # the byte figures, counted as each story was encoded
            eot_first=True,
            source=source,
            split=split,  # the files, their tokens and sha256; the archive's
            options={"format": args.format, "vocab_size": args.vocab_size},
        )
    extras = [schema.index_name(name) for name in ("val", "train") if not llmc]
    extras += [*schema.sidecars(meta), schema.TOKEN_BYTES] + [schema.META_PKL] * wrote_pkl
    extras += ([path.name] if path and path.parent == out else []) + [schema.RECORD_NAME]
    print(
        f"wrote {', '.join(splits.files.values())} ({dtype.name}), {', '.join(extras)} to "
        f"{args.out_dir}"
    )
    say_overlap(args.out_dir)  # val's exact copies in train, train's repeats: a hash a story


def archive_prefix(local, dest):
    """hub.Prefix of the archive for --max-tokens: --archive, a download at `dest`, or the pin's."""
    if local is not None:
        return Prefix(archive_file(local), None, str(local))
    if dest.is_file():  # checked against its pin when downloaded, and when read to its end
        return Prefix(dest, None, str(dest), ARCHIVE.sha256)
    return pinned_prefix(ARCHIVE, Path(ARCHIVE.url).name)


def marked(members, prefix, marks, record, max_tokens):
    """The members, each one's Prefix.record put in `marks`; once the train files taken hold
    max_tokens, the train files on the way to val are passed over, not tokenized."""
    try:
        for name, data in members:
            marks[name] = prefix.record()
            if name == VAL or record.get("tokens", 0) < max_tokens:
                yield name, data
    except ArchiveError as exc:
        raise ArchiveError(f"{exc}; {prefix.advice()}") from None


def within_budget(results, max_tokens, prefix, marks, record):
    """The results kept: val's and the first train files' whose tokens reach max_tokens; then
    stop reading. `record` gets meta.json's "budget"."""
    tokens, val, kept = 0, False, []
    for result in results:
        name, ids = result[:2]
        if name != VAL and tokens >= max_tokens:
            continue  # val is still to come: past the budget, a train file is read, not kept
        val, tokens = val or name == VAL, tokens + len(ids) * (name != VAL)
        kept.append(name)
        record["tokens"] = tokens  # what `marked` reads
        prefix.note(tokens)
        yield result
        if val and tokens >= max_tokens:
            results.close()  # the workers end; the rest of the archive is neither read nor fetched
            read, whole = marks[name], False
            break
    else:
        read, whole = prefix.record(), True  # all of it read, its end checked
    record.update(max_tokens=max_tokens, tokens=tokens, files=sorted(kept), **read, whole=whole)


def budget_line(record, prefix):
    """'budget: 3 train files, 20,102 tokens; 1,234 of 9,876 bytes of the archive read (sha256
    0a1b2c3d4e5f), 1,310 fetched now'."""
    size = f" of {record['size']:,}" if record["size"] else ""
    files = len(record["files"]) - (VAL in record["files"])
    return (
        f"budget: {files:,} train file{'s' * (files != 1)}, {record['tokens']:,} tokens; "
        f"{record['bytes']:,}{size} bytes of the archive read (sha256 {record['sha256'][:12]}), "
        f"{prefix.fetched:,} fetched now"
    )


def at_most_a_process_a_member(members, num_proc):
    """(the members, the processes): --num-proc capped at the members, read ahead to count."""
    ahead = list(itertools.islice(members, num_proc + 1)) if num_proc > 1 else []
    if num_proc > 1 and len(ahead) < num_proc:
        print(f"note: --num-proc {num_proc} capped at {len(ahead)}, the archive's JSON files")
        num_proc = max(len(ahead), 1)
    return itertools.chain(ahead, members), num_proc


def process(name, data, encoding, tokenizer, dtype, gpt2, dedup):
    """llm.c's process_shard: one file's stories shuffled, stripped, each <|endoftext|> first;
    with their --dedup keys and byte figures."""
    stories = shuffled_stories(name, data)
    where, numbers = f"{name}, shuffled story", range(len(stories))
    out = tokenize_documents(
        stories, numbers, encoding, tokenizer, dtype, where, eot_first=True, figures=True
    )
    ids = np.concatenate(out["ids"]) if stories else np.empty(0, dtype)
    counts = {"characters": np.array([len(story) for story in stories], np.int64)}
    if gpt2 is not None:  # both splits: a trained BPE beside GPT-2, story for story
        gpt2_lengths = [len(gpt2.encode_ordinary(story)) + 1 for story in stories]
        counts["gpt2"] = np.array(gpt2_lengths, np.int64)
    keys = (
        None
        if dedup is None
        else document_keys(dedup, *without_boundaries(ids, out["len"], first=True))
    )
    return name, ids, out["len"], counts, keys, out["figures"]


def parse_args():
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--archive", type=Path, help="a local TinyStories_all_data.tar.gz (default: download it)")
    add("--format", choices=["bin", "llmc"], default="bin", help="nanoGPT's (default) or llm.c's")
    add("--num-proc", type=positive_int, default=default_num_proc(), help="worker processes")
    add("--out-dir", type=Path, default=Path(__file__).parent, help="default: beside this script")
    budget = "read only the archive's first bytes: val (data00.json), then the first train files"
    budget += " whose tokens reach N (200M, 1.5B), fetched by range requests, resumable"
    add("--max-tokens", type=token_budget, metavar="N", help=budget)
    tokens = parser.add_mutually_exclusive_group()
    tokens.add_argument("--vocab-size", type=story_vocab_size, metavar="N", help="train a BPE")
    tokens.add_argument("--tokenizer", type=Path, help="from train_tokenizer.py (default: GPT-2)")
    dedup = "drop each story repeating an earlier one (val's first): exact copies, or near copies"
    dedup += " (MinHash; docs/sound_data.md) (default: keep all)"
    add("--dedup", choices=["exact", "near"], help=dedup)
    args = parser.parse_args()
    if args.max_tokens and args.vocab_size:
        parser.error(
            "--max-tokens counts a tokenizer's tokens before the archive is read, and "
            "--vocab-size trains one on all of it: train one with train_tokenizer.py, pass "
            "--tokenizer"
        )
    return args


if __name__ == "__main__":
    run_main(main)

# not run here (a 1.6 GB download); llm.c's docstring says, with GPT-2, val: 19,043,638 tokens
# (TinyStories_val.bin: 38,088,300 bytes), train: 925,653,391 (1,851,307,806 bytes); bin: -1,024
