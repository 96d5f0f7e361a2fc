"""What a prepared folder holds, as its readers expect it, below both its writers and inspectors.

- schema.py: the folder's schema, written once: every file name, meta.json's fields and their
  forms, which names a record lists (and the folder owns) and which a trainer reads
- shards.py: the token files' dtypes and headers (nanoGPT's .bin, llm.c's shards, .npy) and a
  shard read back with every check a trainer's reader makes
- tokenizers.py: the tokenizer a folder records: GPT-2's fetched and checked, a trained one
  loaded, their fingerprint, and the check that a pattern loses no text
- nanochat.py: nanochat's folder: parquet shards of text, and its tokenizer directory
  (tokenizer.pkl, token_bytes.pt)

prepare_common.py writes these files; the inspection commands read them.
"""
