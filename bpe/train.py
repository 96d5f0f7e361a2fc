"""Learning BPE merges from text (work in progress: signatures first)."""


def train_bpe_simple(text, vocab_size, special_tokens=(), pattern="gpt2"):
    raise NotImplementedError


def train_bpe_from_iterator(texts, vocab_size, special_tokens=(), pattern="gpt2"):
    raise NotImplementedError


def train_bpe(input_path, vocab_size, special_tokens=(), pattern="gpt2", num_workers=None):
    raise NotImplementedError
