"""What nanoGPT's train.py reads: one block of a prepared folder, as the pair (x, y).

    python prepare_common.py show data/shakespeare_char --split val --block-size 8

nanoGPT's get_batch takes, at a random offset i of the memory-mapped ids,
    x = data[i : i + block_size]          the tokens the model reads
    y = data[i + 1 : i + 1 + block_size]  the token after each of them: x shifted by one
so at position t the model has read x[0..t] and learns to predict y[t]. For the lecture's
"ABBA" with A = 0, B = 1 and block_size 3: x = [0, 1, 1], y = [1, 1, 0].
"""

from pathlib import Path

import numpy as np

from bpe.show import token_text
from prep.errors import PrepareError
from prep.files import sha256_file
from prep.meta import read_meta
from prep.tokenizers import gpt2_encoding


def open_split(folder, split):
    """(meta, the split's ids memory-mapped with the dtype meta.json names), as get_batch maps them."""
    meta, problems = read_meta(Path(folder))
    if problems:
        raise PrepareError(problems[0])
    if split not in meta["splits"]:
        raise PrepareError(
            f"{Path(folder) / 'meta.json'} has no split {split!r}: {list(meta['splits'])}"
        )
    path = Path(folder) / meta["splits"][split]["file"]
    if not path.is_file() or path.stat().st_size == 0:
        raise PrepareError(f"{path} is missing or empty; run the folder's prepare.py again")
    return meta, np.memmap(path, dtype=np.dtype(meta["dtype"]), mode="r")


def random_offset(num_tokens, block_size, seed):
    """The offset get_batch would draw (torch.randint(len(data) - block_size)), with numpy."""
    return int(np.random.default_rng(seed).integers(max(num_tokens - block_size, 1)))


def token_bytes_for(tokenizer, folder):
    """id -> the bytes of that one token, for the tokenizer meta.json records."""
    kind = tokenizer.get("kind")
    if kind == "char":
        chars = tokenizer["chars"]
        return lambda token_id: chars[token_id].encode("utf-8")
    if kind == "tiktoken":
        import tiktoken

        name = tokenizer.get("name")
        encoding = gpt2_encoding() if name == "gpt2" else tiktoken.get_encoding(name)
        return encoding.decode_single_token_bytes
    if kind == "bpe":
        from bpe import Tokenizer

        path = Path(tokenizer["path"])
        if not path.is_absolute():
            path = Path(folder) / path
        if not path.is_file() or sha256_file(path) != tokenizer["sha256"]:
            raise PrepareError(f"the tokenizer {path} named in meta.json is missing or has changed")
        return Tokenizer.load(path).vocab.__getitem__
    raise PrepareError(f"{Path(folder) / 'meta.json'}: cannot show tokenizer {tokenizer!r}")


def block_lines(folder, split="train", block_size=8, offset=0):
    """One block as printed lines: x and y side by side, each token with its id and text.

    The lecture's "ABBA" (ten times) prepared by shakespeare_char, block_size 3 ->
        train: 36 tokens; at position t the model has read x[0..t] and must predict y[t]
        x = data[0:3] = [0, 1, 1]
        y = data[1:4] = [1, 1, 0]
            t  x[t]   y[t]
            0  0 'A'  1 'B'
            1  1 'B'  1 'B'
            2  1 'B'  0 'A'
    """
    meta, data = open_split(folder, split)
    if not 0 <= offset < len(data) - block_size:
        raise PrepareError(
            f"{split} holds {len(data):,} tokens: a block of {block_size} and its target need "
            f"an offset from 0 to {len(data) - block_size - 1:,}, not {offset:,}"
        )
    x = data[offset : offset + block_size].tolist()
    y = data[offset + 1 : offset + 1 + block_size].tolist()
    if max(x + y) >= meta["tokenizer"]["vocab_size"]:
        raise PrepareError(
            f"{folder}: token id {max(x + y):,} is not in the vocabulary; run verify"
        )
    token_bytes = token_bytes_for(meta["tokenizer"], folder)

    def cell(token_id):
        return f"{token_id:>{len(str(max(x + y)))}} '{token_text(token_bytes(token_id))}'"

    cells = [(cell(a), cell(b)) for a, b in zip(x, y)]
    width = max(len("x[t]"), *(len(a) for a, _ in cells))
    end = offset + block_size
    lines = [
        f"{split}: {len(data):,} tokens; at position t the model has read x[0..t] and must predict y[t]",
        f"x = data[{offset}:{end}] = {x}",
        f"y = data[{offset + 1}:{end + 1}] = {y}",
        f"{'t':>5}  {'x[t]':<{width}}  y[t]",
    ]
    lines += [f"{t:>5}  {a:<{width}}  {b}" for t, (a, b) in enumerate(cells)]
    return lines


def add_arguments(parser):
    """The options of `python prepare_common.py show`."""
    parser.add_argument("folder", help="a prepared folder, e.g. data/shakespeare_char")
    parser.add_argument("--split", default="train", help="train (default) or val")
    parser.add_argument("--block-size", type=int, default=8, metavar="N", help="default: 8")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--offset", type=int, default=0, metavar="I", help="default: 0")
    where.add_argument("--seed", type=int, help="draw the offset at random, as get_batch does")


def show(args):
    if args.block_size < 1:
        raise PrepareError(f"--block-size must be at least 1, got {args.block_size}")
    offset = args.offset
    if args.seed is not None:
        _, data = open_split(args.folder, args.split)
        offset = random_offset(len(data), args.block_size, args.seed)
    print(*block_lines(args.folder, args.split, args.block_size, offset), sep="\n")
