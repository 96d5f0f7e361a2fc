"""A small from-scratch byte-level BPE tokenizer, exactly compatible with GPT-2's.

    from bpe import train_bpe, Tokenizer
    vocab, merges = train_bpe("input.txt", vocab_size=4096, special_tokens=["<|endoftext|>"])
    tok = Tokenizer(vocab, merges, special_tokens={"<|endoftext|>": 4095})
    tok.decode(tok.encode("hello world")) == "hello world"

Read in this order:

1. simple.py: a whole BPE in one sitting (count pairs, merge a pair, train, encode, decode),
   with the worked examples; it alone trains, encodes and decodes Tiny Shakespeare.
2. patterns.py: GPT-2's, GPT-4's and nanochat's pretokenization regexes, and the faster ASCII path.
3. train.py: the fast trainer (`train_bpe`), equal to simple.train, in simple.train's phases.
4. corpus.py: files read as pretoken counts by worker processes, one piece each, in memory
   that does not grow with the corpus (and the words pretoken, piece, block).
5. tokenizer.py: the fast encoder (`Tokenizer`), equal to simple.encode, and its tiktoken export.
6. io.py: files (our JSON, GPT-2's pair, the printable byte alphabet, atomic writes).
7. checks.py: the argument checks all of the above share; text.py: text as every reader reads
   it (strict UTF-8, nanoGPT's newlines) and every error line quotes it.
8. show.py, show_training.py: see it work (`python -m bpe show`, `train_tokenizer.py --trace`
   and `--sweep`).

It imports nothing else of the project it lives in: copy the folder out and it works (numpy,
regex and tiktoken are its dependencies; pyarrow for parquet files).
"""

import importlib

# Each public name and the module that defines it, loaded when first used (PEP 562): importing
# bpe, or one of its small modules (bpe.parallel, bpe.gpt2, bpe.text), loads nothing else.
_PUBLIC = {
    "EOT": "simple",
    "Tokenizer": "tokenizer",
    "train_bpe": "train",
    "train_bpe_from_counts": "train",
    "train_bpe_from_files": "train",
    "train_bpe_from_iterator": "train",
    "get_pair_counts": "simple",
    "merge_pair": "simple",
    "first_uncovered": "patterns",
    "GPT2_PATTERN": "patterns",
    "GPT4_PATTERN": "patterns",
    "NANOCHAT_PATTERN": "patterns",
}
__all__ = list(_PUBLIC)


def __getattr__(name):
    """bpe.Tokenizer -> bpe.tokenizer.Tokenizer, imported on first use (then kept here)."""
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_PUBLIC})
