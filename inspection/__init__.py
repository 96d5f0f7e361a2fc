"""The commands over a prepared folder, for any trainer's files:

python prepare_common.py verify FOLDER    # every file meta.json lists, recomputed against it
python prepare_common.py show FOLDER      # one block as nanoGPT's get_batch reads it
python prepare_common.py packing FOLDER --block-size T  # what get_batch draws, BOS alignment
python prepare_common.py overlap FOLDER   # what val shares with train, what train repeats
python prepare_common.py bpb FOLDER       # lossless or not, and what bits per byte divides by
"""

import sys
from pathlib import Path

from formats.schema import GOLF_FORMAT, NANOCHAT
from safety import ArgumentParser, PrepareError, non_negative_int, positive_int, random_seed

from . import bpb, golf, nanochat, overlap
from .folder import golf_dataset
from .packing import packing
from .show import show
from .val_bytes import sidecar_line
from .verify import verified_meta, verify


def main(argv=None):
    parser = ArgumentParser(description="Check a prepared data folder, or see what nanoGPT reads.")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("verify", help="check .bin sizes, hashes and ids against meta.json")
    check.add_argument("folder", help="e.g. data/shakespeare_char")
    look = commands.add_parser("show", help="one block (x, y) as nanoGPT's get_batch reads it")
    look.add_argument("folder", help="a prepared folder, e.g. data/shakespeare_char")
    look.add_argument("--split", default="train", help="train (default) or val, or a shard's file")
    look.add_argument("--block-size", type=positive_int, default=8, metavar="N", help="default: 8")
    where = look.add_mutually_exclusive_group()
    where.add_argument("--offset", type=non_negative_int, default=0, metavar="I", help="default: 0")
    seed_help = "draw the offset at random, as get_batch does"
    where.add_argument("--seed", type=random_seed, help=seed_help)
    pack = commands.add_parser("packing", help="what get_batch draws, and what BOS alignment keeps")
    pack.add_argument("folder", help="a folder a document lesson prepared, e.g. data/openwebtext")
    t_help = "the model's context length in tokens (nanoGPT's block_size, nanochat's max_seq_len)"
    pack.add_argument("--block-size", type=positive_int, required=True, metavar="T", help=t_help)
    pack.add_argument("--split", choices=["train", "val"], default="train", help="default: train")
    pack.add_argument("--json", action="store_true", help="the figures as one JSON object")
    plot_help = "draw the document lengths, T marked, into this file (not a folder)"
    pack.add_argument("--plot", metavar="FILE.png", help=plot_help)
    overlap.add_parser(commands)
    bits_help = "is the tokenizer lossless on val, and which bytes bits per byte divides by"
    bits = commands.add_parser("bpb", help=bits_help)
    bits.add_argument("folder", help="a prepared folder (its meta.json records the byte figures)")
    args = parser.parse_args(argv)
    if args.command == "overlap":  # a prepared folder's files checked first, as show's are
        found = golf_dataset(args.folder)  # or the parameter-golf folder that holds a dataset
        if found or (Path(args.folder) / "meta.json").is_file():
            verified_meta(found[0] if found else args.folder)
        return overlap.run(args)
    if args.command == "verify":
        if problems := verify(args.folder):
            print(*(f"error: {problem}" for problem in problems), sep="\n", file=sys.stderr)
            sys.exit(1)
        print(f"{args.folder}: OK")
        return None
    meta = verified_meta(args.folder)  # what show and packing read depends on what verify checks
    if args.command == "bpb":
        return bpb_audit(args.folder, meta)
    if meta.get("format") == GOLF_FORMAT:  # datasets of shards: overlap reads one of them
        raise golf.not_one_dataset(args.folder, meta)
    if meta.get("format") == NANOCHAT and args.command == "show":  # a document's first tokens
        return nanochat.show(args.folder, meta, args.split, args.block_size, args.offset, args.seed)
    if meta.get("format") == NANOCHAT:
        if args.plot:
            raise PrepareError("--plot is for nanoGPT's folders, not nanochat's")
        return nanochat.packing(args.folder, meta, args.split, args.block_size, args.json)
    if args.command == "packing":
        return packing(args.folder, meta, args.split, args.block_size, args.json, args.plot)
    return show(args.folder, meta, args.split, args.block_size, args.offset, args.seed)


def bpb_audit(folder, meta):
    """Print the audit of each dataset of a verified folder (inspection/bpb.py)."""
    if meta.get("format") != GOLF_FORMAT:
        if meta.get("format") == NANOCHAT and meta.get("tokenizer") is None:
            raise PrepareError(
                f"{folder}/meta.json records no tokenizer to count bytes with: run "
                "data/nanochat/prepare.py with --vocab-size N"
            )
        if meta.get("bytes") is None:
            raise PrepareError(
                f"{folder}/meta.json records no byte figures: it was written before they were; "
                "run its prepare.py again"
            )
        print("\n".join(bpb.audit_lines(Path(folder).name, meta["bytes"])))
        if dropped := (meta.get("split") or {}).get("dropped_from_val"):  # --unseen-in-val drop
            print(
                f"  val.bin leaves out {dropped['characters']:,} characters train never had "
                f"({dropped['bytes']:,} bytes of the text): bits per byte over it is over the "
                "text without them"
            )
        if meta.get("val_bytes") is not None:
            print(sidecar_line(meta))
        return
    folder = Path(folder)
    for dataset in meta["datasets"]:
        print("\n".join(bpb.audit_lines(dataset["name"], dataset["bytes"])))
        tokens = golf.rebuilt_tokenizer(folder, dataset["tokenizer"], dataset["name"])
        shares = dataset["val_bytes"] and golf.joined_ids(folder, dataset, "val", "val_bytes")
        print(bpb.eval_val_line(golf.joined_ids(folder, dataset, "val"), shares, tokens.own_bytes))
