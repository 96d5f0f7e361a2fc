"""Exact and near duplicates, and shared n-grams, among documents of token ids: simple.py (read it
first), fast.py (the same numbers with numpy), overlap.py (`overlap`'s figures), drop.py and
tokenized.py (`--dedup`). Of the project it imports only safety/.
"""
