"""Exact and near duplicates, and shared n-grams, among documents of token ids.

simple.py is the readable version (read it first); fast.py computes the same numbers with numpy;
overlap.py holds a split's documents against another's, streamed: what `python prepare_common.py
overlap` reports; drop.py decides which documents `--dedup exact|near` keeps, and tokenized.py
runs it over a lesson's tokenized `datasets` Dataset. Like bpe/, this package imports nothing of
the project (numpy, and tqdm for tokenized.py's progress bar).
"""
