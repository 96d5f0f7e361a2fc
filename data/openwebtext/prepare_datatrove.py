"""
Prepare OpenWebText as prepare.py beside this script does, the same train.bin, val.bin and
meta.json byte for byte, as datatrove tasks (--executor local, slurm or ray), resumable:
tokenize, plan the split, write each task's part, join them with meta.json last (engine/stages.py).

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
    """nanoGPT's random split, or with --max-tokens prepare.py's (val the first documents)."""
    rule = BUDGET_RULE if args.max_tokens else SPLIT_RULE
    layout = RandomSplit(args.val_fraction, args.seed, rule, args.format, args.shard_size)
    script = "data/openwebtext/prepare.py"
    return Lesson(script, OPENWEBTEXT, "openwebtext", layout, budget_documents)


if __name__ == "__main__":
    run_main(lambda: twin_main(arguments, __doc__, lesson))
