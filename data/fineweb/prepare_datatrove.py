"""
Prepare FineWeb-Edu (or FineWeb) as prepare.py beside this script does, the same shards byte for
byte, as datatrove tasks (--executor local, slurm or ray), resumable: tokenize, plan, write each
task's share of the shards, commit them with meta.json last (engine/stages.py).

    python data/fineweb/prepare_datatrove.py --data-files 'my_docs/*.parquet' --tasks 4
"""

from prepare import (  # the lesson beside this script
    PREFIXES,
    SHUFFLED_RULE,
    SPLIT_RULE,
    arguments,
    budget_documents,
    fineweb,
)

from engine.layouts import ShardStream
from engine.pipeline import Lesson, twin_main
from prepare_common import LLMC_READS
from safety import run_main


def lesson(args):
    """llm.c's rule: the documents in order (or --shuffle's), cut into shards."""
    rule = SPLIT_RULE if args.shuffle is None else SHUFFLED_RULE
    layout = ShardStream(args.shuffle, rule, args.format, args.shard_size)
    prefix = PREFIXES[args.format][args.type]
    hub = fineweb(args.type, args.sample)
    return Lesson("data/fineweb/prepare.py", hub, prefix, layout, budget_documents)


if __name__ == "__main__":
    run_main(lambda: twin_main(arguments, __doc__, lesson, LLMC_READS))
