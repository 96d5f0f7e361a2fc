"""
Prepare FineWeb-Edu (or FineWeb) as prepare.py beside this script does, with the same options and
the same shards byte for byte, but as datatrove tasks: on this machine (--executor local), a
Slurm cluster or a Ray cluster, resumable after a crash. The four stages of the engine
(engine/stages.py), with llm.c's rule in place of a split:

1. tokenize (--tasks tasks): each task encodes its slice of the input files (--max-tokens N:
   of one file, the documents prepare.py's budget keeps, read from the hub first by this process)
2. plan (1 task): the documents in order (or --shuffle's permutation), the copies --dedup drops
   left out, and where each one's ids are
3. write (--tasks tasks): task r writes its share of the shards (each one a contiguous range of
   the stream, the end of text before each document)
4. commit (1 task): links the shards into the folder (a copy across file systems); meta.json
   last

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
    """llm.c's rule: the documents in order (or --shuffle's permutation), cut into shards."""
    rule = SPLIT_RULE if args.shuffle is None else SHUFFLED_RULE
    layout = ShardStream(args.shuffle, rule, args.format, args.shard_size)
    prefix = PREFIXES[args.format][args.type]
    hub = fineweb(args.type, args.sample)
    return Lesson("data/fineweb/prepare.py", hub, prefix, layout, budget_documents)


if __name__ == "__main__":
    run_main(lambda: twin_main(arguments, __doc__, lesson, LLMC_READS))
