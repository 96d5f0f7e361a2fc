"""
Prepare FineWeb-Edu (or FineWeb) as prepare.py beside this script does, with the same options and
the same shards byte for byte, but as datatrove tasks: on this machine (--executor local), a
Slurm cluster or a Ray cluster, resumable after a crash. The four stages of the engine
(engine/stages.py), with llm.c's rule in place of a split:

1. tokenize (--tasks tasks): each task encodes its slice of the input files
2. plan (1 task): the documents in order (or --shuffle's permutation), the copies --dedup drops
   left out, and where each one's ids are
3. write (--tasks tasks): task r writes its share of the shards (each one a contiguous range of
   the stream, the end of text before each document)
4. commit (1 task): links the shards into the folder (a copy across file systems); meta.json
   last

    python data/fineweb/prepare_datatrove.py --data-files 'my_docs/*.parquet' --tasks 4
"""

from prepare import PREFIXES, SHUFFLED_RULE, SPLIT_RULE, arguments, fineweb  # the lesson beside it

from engine.executors import add_datatrove_arguments, check_datatrove_arguments
from engine.layouts import ShardStream
from engine.pipeline import Lesson, prepare_with_datatrove
from inspection.overlap import say_overlap
from prepare_common import LLMC_READS, bpe_encoding, dtype_for_vocab
from safety import run_main


def main():
    parser = arguments()
    parser.description = __doc__
    add_datatrove_arguments(parser)  # --executor, --tasks, --workers, --work-dir, --slurm-*
    args = parser.parse_args()
    if args.max_tokens:  # the budget reads row group after row group, in order: one process
        parser.error("--max-tokens is prepare.py's, beside this script: the tasks read whole files")
    check_datatrove_arguments(parser, args)
    encoding, tokenizer = bpe_encoding(args.tokenizer, need_eot=True)
    vocab_size, eot_id = tokenizer["vocab_size"], tokenizer["eot_id"]
    dtype = dtype_for_vocab(vocab_size, LLMC_READS)
    print(f"tokenizer: {tokenizer['name']} ({vocab_size:,} tokens, end of text = {eot_id})")
    # llm.c's rule: the documents in order (or --shuffle's permutation), cut into shards
    rule = SPLIT_RULE if args.shuffle is None else SHUFFLED_RULE
    layout = ShardStream(args.shuffle, rule, args.format, args.shard_size)
    prefix = PREFIXES[args.format][args.type]
    lesson = Lesson("data/fineweb/prepare.py", fineweb(args.type, args.sample), prefix, layout)
    prepare_with_datatrove(args, encoding, tokenizer, dtype, lesson)  # its last task commits
    if args.executor != "slurm":  # committed by now: said as prepare.py says it
        say_overlap(args.out_dir)


if __name__ == "__main__":
    run_main(main)
