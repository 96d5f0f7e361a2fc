"""The commands over a prepared folder, for any trainer's files:

    python prepare_common.py verify FOLDER    # every file meta.json lists, recomputed against it
    python prepare_common.py show FOLDER      # one block as nanoGPT's get_batch reads it
    python prepare_common.py packing FOLDER --block-size T  # what get_batch draws, BOS alignment
    python prepare_common.py overlap FOLDER   # what val shares with train, what train repeats
    python prepare_common.py bpb FOLDER       # lossless or not, and what bits per byte divides by

- verify.py: the auditor, recomputing, not trusting, a folder's meta.json
- show.py: one block, x and y side by side, each document start marked
- packing.py: document lengths against the block size; nanochat's best-fit packing simulated
- overlap.py: val's exact and near copies in train, shared 13-grams, train's repeats (dedup/)
- token_bytes.py: token_bytes.npy and each split's bytes of text, for bits per byte
- bpb.py: each split's bytes as the text, the tokenizer and decode(encode(doc)) count them
- golf.py: verify on a parameter-golf folder (its datasets, tokenizers and val bytes sidecars)
- nanochat.py: the three commands on a nanochat folder (parquet shards of text)
"""

import sys

from safety import ArgumentParser, positive_int, random_seed

from . import overlap
from .packing import packing
from .show import show
from .verify import verified_meta, verify


def bpb_audit(folder):
    """The audit of each dataset of a verified folder (inspection/bpb.py), a few lines each."""
    from safety import PrepareError

    from .bpb import audit_lines

    meta = verified_meta(folder)  # every figure recomputed first
    if "datasets" not in meta:
        raise PrepareError(
            f"{folder}/meta.json records no byte figures; data/parameter_golf/prepare.py's "
            "folders do"
        )
    for dataset in meta["datasets"]:
        print("\n".join(audit_lines(dataset["name"], dataset["bytes"])))


def main(argv=None):
    parser = ArgumentParser(description="Check a prepared data folder, or see what nanoGPT reads.")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("verify", help="check .bin sizes, hashes and ids against meta.json")
    check.add_argument("folder", help="e.g. data/shakespeare_char")
    look = commands.add_parser("show", help="one block (x, y) as nanoGPT's get_batch reads it")
    look.add_argument("folder", help="a prepared folder, e.g. data/shakespeare_char")
    look.add_argument("--split", default="train", help="train (default) or val, or a shard's file")
    look.add_argument("--block-size", type=int, default=8, metavar="N", help="default: 8")
    where = look.add_mutually_exclusive_group()
    where.add_argument("--offset", type=int, default=0, metavar="I", help="default: 0")
    where.add_argument(
        "--seed", type=random_seed, help="draw the offset at random, as get_batch does"
    )
    pack = commands.add_parser("packing", help="what get_batch draws, and what BOS alignment keeps")
    pack.add_argument("folder", help="a folder a document lesson prepared, e.g. data/openwebtext")
    pack.add_argument("--block-size", type=positive_int, required=True, metavar="T")
    pack.add_argument("--split", choices=["train", "val"], default="train", help="default: train")
    pack.add_argument("--json", action="store_true", help="the figures as one JSON object")
    pack.add_argument("--plot", metavar="FILE.png", help="draw the document lengths, T marked, into this file (not a folder)")  # fmt: skip
    overlap.add_parser(commands)
    bits = commands.add_parser(
        "bpb", help="is the tokenizer lossless on val, and which bytes bits per byte divides by"
    )
    bits.add_argument("folder", help="a folder data/parameter_golf/prepare.py wrote")
    args = parser.parse_args(argv)
    if args.command == "bpb":
        return bpb_audit(args.folder)
    if args.command == "overlap":
        return overlap.run(args)
    if args.command == "packing":
        return packing(args.folder, args.split, args.block_size, args.json, args.plot)
    if args.command == "show":
        return show(args.folder, args.split, args.block_size, args.offset, args.seed)
    problems = verify(args.folder)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"{args.folder}: OK")
