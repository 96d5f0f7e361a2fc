"""A small from-scratch byte-level BPE tokenizer, exactly compatible with GPT-2's.

    from bpe import train_bpe, Tokenizer
    vocab, merges = train_bpe("input.txt", vocab_size=4096, special_tokens=["<|endoftext|>"])
    tok = Tokenizer(vocab, merges, special_tokens={"<|endoftext|>": 4095})
    tok.decode(tok.encode("hello world")) == "hello world"

Read in this order: core.py (the two functions BPE is made of), patterns.py
(pre-tokenization), train.py (learning merges), tokenizer.py (using them).
"""

from .core import get_pair_counts, merge_pair
from .patterns import GPT2_PATTERN, GPT4_PATTERN
from .tokenizer import Tokenizer
from .train import train_bpe, train_bpe_from_iterator

__all__ = [
    "Tokenizer",
    "train_bpe",
    "train_bpe_from_iterator",
    "get_pair_counts",
    "merge_pair",
    "GPT2_PATTERN",
    "GPT4_PATTERN",
]
