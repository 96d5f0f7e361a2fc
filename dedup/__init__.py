"""Exact and near duplicates, and shared n-grams, among documents of token ids (numpy only).

simple.py is the readable version (read it first); fast.py computes the same numbers with numpy;
overlap.py holds a split's documents against another's, streamed: what `python prepare_common.py
overlap` reports. Like bpe/, this package imports nothing of the project.
"""
