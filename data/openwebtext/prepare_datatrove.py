"""
Prepare OpenWebText as prepare.py beside this script does, with the same options and the same
train.bin, val.bin and meta.json byte for byte, but as datatrove tasks: on this machine
(--executor local), a Slurm cluster or a Ray cluster, resumable after a crash. Four stages, each
a datatrove executor that waits for the one before (engine/stages.py):

1. tokenize (--tasks tasks): each task encodes its slice of the input files
2. plan (1 task): the copies --dedup drops, nanoGPT's random split, and where each document's
   ids go
3. write (--tasks tasks): task r writes part r of each split
4. commit (1 task): joins the parts into train.bin and val.bin (--format llmc: cuts them into
   llm.c's shards, as prepare.py does); meta.json last

    python data/openwebtext/prepare_datatrove.py --data-files 'my_docs/*.jsonl' --tasks 4
"""

from prepare import OPENWEBTEXT, arguments  # the lesson beside this script: its pin, its options

from engine.layouts import RandomSplit
from engine.pipeline import Lesson, twin_main
from prepare_common import SPLIT_RULE
from safety import run_main


def lesson(args):
    """nanoGPT's random split: train.bin and val.bin, or llm.c's shards of each (--format llmc)."""
    layout = RandomSplit(args.val_fraction, args.seed, SPLIT_RULE, args.format, args.shard_size)
    return Lesson("data/openwebtext/prepare.py", OPENWEBTEXT, "openwebtext", layout)


if __name__ == "__main__":
    run_main(lambda: twin_main(arguments, __doc__, lesson))
