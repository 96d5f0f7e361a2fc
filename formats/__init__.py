"""What a prepared folder holds, as its readers expect it, below both its writers and inspectors:
its schema (schema.py), token files (shards.py), tokenizers (tokenizers.py) and nanochat's folder
(nanochat.py). prepare_common.py writes these files; the inspection commands read them.
"""
