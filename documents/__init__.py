"""Documents read from files, by one reader: corpus.py (the kinds of files, their readers, a corpus
counted as pretokens), inputs.py (a lesson's inputs checked before `datasets` reads them) and
parallel.py (a process pool over a stream, in order)."""
