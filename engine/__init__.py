"""The engine's wing: the same outputs as the lessons, from many tasks, on one machine or a cluster.

It may import the lessons' helpers (prepare_common), the safety package behind them and bpe;
they never import it. Read in this order:

- readers.py: the input files, their lengths and the pieces each task reads
- executors.py: the work directory, datatrove's local, Slurm and Ray executors, the options
- layouts.py: how a lesson's documents become its outputs (nanoGPT's random split, or llm.c's
  stream of shards), the lesson's choice
- stages.py: the four stages of a document lesson's prepare_datatrove.py (tokenize, plan,
  write, commit) as datatrove pipeline steps (the only module importing datatrove at load)
- pipeline.py: the Lesson and the Job, those stages chained and run (prepare_with_datatrove)
- training.py: tokenizer training whose counting runs as datatrove tasks
  (train_tokenizer.py --engine datatrove)
"""
