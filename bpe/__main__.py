"""`python -m bpe show ...`: see a tokenizer at work (bpe/show.py)."""

import sys

from prep.errors import run_main

from .show import main

if __name__ == "__main__":
    if sys.argv[1:2] != ["show"]:
        sys.exit(
            "usage: python -m bpe show [--tokenizer FILE | --gpt2] (TEXT | --file PATH | --explain WORD)"
        )
    run_main(lambda: main(sys.argv[2:]))
