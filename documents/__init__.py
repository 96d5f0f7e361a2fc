"""Documents read from files, by one reader: the kinds by suffix, the text column, JSON lines
and parquet rows, the checks made before `datasets` reads them, and the worker processes.

- corpus.py: the kinds of files (KINDS), the reader of each, and a corpus counted as pretokens
  by worker processes (bpe's trainer counts them, `train_bpe_from_files`)
- inputs.py: a lesson's inputs checked before `datasets` reads them (hub files, local files)
- parallel.py: a process pool over a stream, in order, reading only a few items ahead
"""
