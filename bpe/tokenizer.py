"""Using a trained BPE: encode text to ids, decode ids to text, save and load.

(Skeleton; being filled in.)
"""


class Tokenizer:
    def __init__(self, vocab, merges, special_tokens=None, pattern="gpt2"):
        raise NotImplementedError
