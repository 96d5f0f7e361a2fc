"""
Prepare TinyStories as llm.c's dev/data/tinystories.py does: the JSON files by name, data00.json
val, the rest train; each file's stories shuffled by random.Random(1337 + its index in its split),
stripped, each written as <|endoftext|> then its ids: llm.c's TinyStories_{val,train}.bin byte for
byte (--format llmc: a 256-int32 header, uint16 ids), or nanoGPT's val.bin, train.bin (the same
ids). Unlike llm.c's: a pinned, checked download, the archive read as a stream (never unpacked),
the same bytes at any --num-proc; --vocab-size N trains a BPE on the train stories first.

    python data/tinystories/prepare.py --archive TinyStories_all_data.tar.gz --vocab-size 2048
"""

import itertools
from argparse import RawDescriptionHelpFormatter
from pathlib import Path

import numpy as np
from archive import archive_file, json_members, json_stories
from stories import SplitFiles, shuffled_stories, story_vocab_size, train_story_bpe

from bpe import EOT
from dedup.drop import document_keys, rule_record, without_boundaries
from documents.parallel import ordered_map
from formats import schema
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
        # 1. the archive: a local copy, or the pinned one (downloaded once, checksummed)
        url, dest = None if args.archive else ARCHIVE.url, args.out_dir / Path(ARCHIVE.url).name
        archive = archive_file(args.archive) if args.archive else fetch(ARCHIVE, dest)
        source = text_source(archive, args.out_dir, characters=None, url=url)  # path, sha256, url
        pinned = "pinned" if source["sha256"] == ARCHIVE.sha256 else "NOT pinned: prepared anyway"
        print(f"{archive}: sha256 {source['sha256'][:12]} ({pinned})")

        # 2. the tokenizer: GPT-2's, --tokenizer, or a BPE learned now from the train stories
        path = out / f"tinystories-{args.vocab_size}.json" if args.vocab_size else args.tokenizer
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
            members = json_members(archive, MEMBER)  # (name, bytes), one member at a time
            members, processes = at_most_a_process_a_member(members, args.num_proc)
            shared = (encoding, tokenizer, dtype, gpt2, args.dedup)
            for name, ids, lengths, counts, keys in ordered_map(
                process, members, processes, shared
            ):
                splits.add("val" if name == VAL else "train", name, ids, lengths, counts, keys)
            print(*splits.summary(tokenizer["name"]), sep="\n")

            # 4. --dedup: drop each story repeating an earlier one, val's first: no val story
            #    keeps a copy in train (stories.py's SplitFiles.deduplicate says the order)
            split = {"rule": f"{VAL} val, the rest train", "stories": splits.totals("stories")}
            if args.dedup:
                dropped = splits.deduplicate(args.dedup)
                split["stories"] = {s: n - dropped[s] for s, n in split["stories"].items()}
                split["dedup"] = {**rule_record(args.dedup), "stories_dropped": dropped}
                print(
                    f"--dedup {args.dedup}: {dropped['val']:,} val and {dropped['train']:,} "
                    "train stories dropped, each repeating an earlier one"
                )

            # 5. each split's files written in the order of their names, as llm.c sorts them
            record = splits.finish(archive)  # and each .bin's document index

        # 6. the metadata: meta.pkl for a trained tokenizer (nanoGPT's vocab_size), meta.json last
        wrote_pkl = write_bpe_meta_pkl(out, tokenizer, encoding)
        write_meta(
            out,
            script="data/tinystories/prepare.py",
            tokenizer=tokenizer,
            dtype=dtype,
            **record,
            documents=splits.stories(archive, MEMBER),  # for the byte figures, val_bytes
            eot_first=True,
            source=source,
            split=split,  # the files, their tokens and sha256; the archive's
            options={"format": args.format, "vocab_size": args.vocab_size},
        )
    extras = [schema.index_name(name) for name in ("val", "train") if not llmc]
    extras += [schema.TOKEN_BYTES] + [schema.META_PKL] * wrote_pkl
    extras += ([path.name] if args.vocab_size else []) + [schema.RECORD_NAME]
    print(
        f"wrote {', '.join(splits.files.values())} ({dtype.name}), {', '.join(extras)} to "
        f"{args.out_dir}"
    )
    say_overlap(args.out_dir)  # val's exact copies in train, train's repeats: a hash a story


def at_most_a_process_a_member(members, num_proc):
    """(the members, the processes to tokenize them with): --num-proc capped at the archive's
    members, as the other lessons cap it at their work, with a one-line note. A stream cannot
    be counted: up to num_proc + 1 members are read ahead (what the pool would hold anyway).
    5 members, --num-proc 100 -> 5 processes, "note: --num-proc 100 capped at 5, ..."."""
    ahead = list(itertools.islice(members, num_proc + 1)) if num_proc > 1 else []
    if num_proc > 1 and len(ahead) < num_proc:
        print(f"note: --num-proc {num_proc} capped at {len(ahead)}, the archive's JSON files")
        num_proc = max(len(ahead), 1)
    return itertools.chain(ahead, members), num_proc


def process(name, data, encoding, tokenizer, dtype, gpt2, dedup):
    """llm.c's process_shard: one file's stories shuffled, stripped, each <|endoftext|> first;
    with --dedup, each story's keys (dedup/drop.py's document_keys, its ids without the EOT)."""
    stories = shuffled_stories(name, data)  # each item's "story", stripped, in llm.c's order
    where = f"{name}, shuffled story"
    out = tokenize_documents(
        stories, range(len(stories)), encoding, tokenizer, dtype, where, eot_first=True
    )
    ids = np.concatenate(out["ids"]) if stories else np.empty(0, dtype)
    counts = {"stories": len(stories), "characters": sum(map(len, stories))}
    if gpt2 is not None:  # both splits: a trained BPE beside GPT-2, story for story
        counts["gpt2"] = sum(len(gpt2.encode_ordinary(story)) + 1 for story in stories)
    keys = (
        None
        if dedup is None
        else document_keys(dedup, *without_boundaries(ids, out["len"], first=True))
    )
    return name, ids, out["len"], counts, keys


def parse_args():
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--archive", type=Path, help="a local TinyStories_all_data.tar.gz (default: download it)")
    add("--format", choices=["bin", "llmc"], default="bin", help="nanoGPT's (default) or llm.c's")
    add("--num-proc", type=positive_int, default=default_num_proc(), help="worker processes")
    add("--out-dir", type=Path, default=Path(__file__).parent, help="default: beside this script")
    tokens = parser.add_mutually_exclusive_group()
    tokens.add_argument("--vocab-size", type=story_vocab_size, metavar="N", help="train a BPE")
    tokens.add_argument("--tokenizer", type=Path, help="from train_tokenizer.py (default: GPT-2)")
    add(
        "--dedup",
        choices=["exact", "near"],
        help="drop each story repeating an earlier one (val's first): exact copies, or near "
        "copies (MinHash; docs/sound_data.md) (default: keep all)",
    )
    return parser.parse_args()


if __name__ == "__main__":
    run_main(main)

# not run here (a 1.6 GB download); llm.c's docstring says, with GPT-2, val: 19,043,638 tokens
# (TinyStories_val.bin: 38,088,300 bytes), train: 925,653,391 (1,851,307,806 bytes); bin: -1,024
