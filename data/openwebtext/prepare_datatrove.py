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

from engine.executors import add_datatrove_arguments, check_datatrove_arguments
from engine.layouts import RandomSplit
from engine.pipeline import Lesson, prepare_with_datatrove
from inspection.overlap import say_overlap
from prepare_common import SPLIT_RULE, bpe_encoding, dtype_for_vocab
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
    dtype = dtype_for_vocab(vocab_size)
    print(f"tokenizer: {tokenizer['name']} ({vocab_size:,} tokens, end of text = {eot_id})")
    # nanoGPT's random split: train.bin and val.bin, or llm.c's shards of each (--format llmc)
    layout = RandomSplit(args.val_fraction, args.seed, SPLIT_RULE, args.format, args.shard_size)
    lesson = Lesson("data/openwebtext/prepare.py", OPENWEBTEXT, "openwebtext", layout)
    prepare_with_datatrove(args, encoding, tokenizer, dtype, lesson)  # its last task commits
    if args.executor != "slurm":  # committed by now: said as prepare.py says it
        say_overlap(args.out_dir)


if __name__ == "__main__":
    run_main(main)
