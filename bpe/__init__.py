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
4. fragments.py, table.py: pretokens counted without a dict per pretoken, and their table.
5. tokenizer.py: the fast encoder (`Tokenizer`), equal to simple.encode, and its tiktoken export.
6. io.py: files (our JSON, GPT-2's pair, the printable byte alphabet).
7. checks.py: the argument checks all of the above share, and values quoted short.
8. show.py, show_training.py: see it work (`python -m bpe show`, `train_tokenizer.py --trace`
   and `--sweep`).

It imports nothing else of the project it lives in: copy the folder out and it works (numpy,
regex and tiktoken are its dependencies).
"""

from .patterns import GPT2_PATTERN, GPT4_PATTERN, NANOCHAT_PATTERN, first_uncovered
from .simple import EOT, get_pair_counts, merge_pair
from .tokenizer import Tokenizer
from .train import train_bpe, train_bpe_from_counts, train_bpe_from_iterator

__all__ = [
    "EOT",
    "GPT2_PATTERN",
    "GPT4_PATTERN",
    "NANOCHAT_PATTERN",
    "Tokenizer",
    "first_uncovered",
    "get_pair_counts",
    "merge_pair",
    "train_bpe",
    "train_bpe_from_counts",
    "train_bpe_from_iterator",
]
