"""
Prepare OpenWebText as prepare.py beside this script does, with the same options and the same
train.bin, val.bin and meta.json byte for byte, but as datatrove tasks: on this machine
(--executor local), a Slurm cluster or a Ray cluster, resumable after a crash. Four stages, each
a datatrove executor that waits for the one before (engine/stages.py):

1. tokenize (--tasks tasks): each task encodes its slice of the input files (--max-tokens N:
   of one file, the documents prepare.py's budget keeps, read from the hub first by this process)
2. plan (1 task): the copies --dedup drops, nanoGPT's random split (--max-tokens: prepare.py's
   val of the first documents), and where each document's ids go
3. write (--tasks tasks): task r writes part r of each split
4. commit (1 task): joins the parts into train.bin and val.bin (--format llmc: cuts them into
   llm.c's shards, as prepare.py does); meta.json last

    python data/openwebtext/prepare_datatrove.py --data-files 'my_docs/*.jsonl' --tasks 4
"""

from prepare import (  # the lesson beside this script: its pin, its options, its budget
    BUDGET_RULE,
    OPENWEBTEXT,
    arguments,
    budget_documents,
)

from engine.layouts import RandomSplit
from engine.pipeline import Lesson, twin_main
from prepare_common import SPLIT_RULE
from safety import run_main


def lesson(args):
    """nanoGPT's random split: train.bin and val.bin, or llm.c's shards of each (--format llmc);
    --max-tokens: prepare.py's rule instead (val the budget's first documents, train the next)."""
    # with a budget, the engine gives the layout its first_documents once the budget is read
    rule = BUDGET_RULE if args.max_tokens else SPLIT_RULE
    layout = RandomSplit(args.val_fraction, args.seed, rule, args.format, args.shard_size)
    script = "data/openwebtext/prepare.py"
    return Lesson(script, OPENWEBTEXT, "openwebtext", layout, budget_documents)


if __name__ == "__main__":
    run_main(lambda: twin_main(arguments, __doc__, lesson))
