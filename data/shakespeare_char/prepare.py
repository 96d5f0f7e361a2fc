"""
Prepare the Shakespeare dataset for character-level language modeling.
So instead of encoding with GPT-2 BPE tokens, we just map characters to ints.
Will save train.bin, val.bin containing the ids, and meta.pkl containing the
encoder and decoder and some other related info (nanoGPT's contract), plus
meta.json (readable, safe) describing everything needed to check and reproduce them.

    python data/shakespeare_char/prepare.py [--input FILE] [--out-dir DIR] [--vocab-from train]
"""

import argparse
import hashlib
from pathlib import Path

import numpy as np

from prepare_common import (
    TINY_SHAKESPEARE,
    PrepareError,
    dtype_for_vocab,
    fetch,
    prepare_out_dir,
    read_text,
    run_main,
    text_source,
    write_bin,
    write_meta,
    write_pickle,
)

SCRIPT_DIR = Path(__file__).resolve().parent
TRAIN_FRACTION = 0.9  # the first 90% of the characters train, the rest validate


def distinct_chars(text):
    """sorted(set(text)), counted by numpy in a few milliseconds: "hello" -> ["e", "h", "l", "o"]."""
    codepoints = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    return [chr(c) for c in np.flatnonzero(np.bincount(codepoints))]


def encode(text, chars):
    """Characters -> ids, with one numpy lookup instead of a Python call per character.

    encode("ab c", chars=["\\n", " ", "a", "b", "c"]) -> [2, 3, 1, 4];
    a character missing from `chars` becomes -1.
    """
    codepoints = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    char_codes = np.array([ord(c) for c in chars], dtype=np.uint32)
    table = np.full(
        int(max(codepoints.max(initial=0), char_codes.max(initial=0))) + 1, -1, dtype=np.int32
    )
    table[char_codes] = np.arange(len(chars), dtype=np.int32)
    return table[codepoints]


def decode(ids, chars):
    """Ids -> text: decode([2, 3, 1, 4], chars=["\\n", " ", "a", "b", "c"]) -> "ab c"."""
    return "".join(chars[i] for i in ids)


def parse_args():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--input", type=Path, help="a local UTF-8 text file instead of Tiny Shakespeare"
    )
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=SCRIPT_DIR,
        help="where the outputs go (default: beside this script)",
    )
    parser.add_argument(
        "--vocab-from",
        choices=["all", "train"],
        default="all",
        help="build the vocabulary from all the text (nanoGPT) or from the train split only",
    )
    parser.add_argument(
        "--unseen-in-val",
        choices=["error", "drop"],
        default="error",
        help="with --vocab-from train: what to do with val characters never seen in train",
    )
    return parser.parse_args()


def main():
    args = parse_args()
    out_dir = prepare_out_dir(args.out_dir)

    # 1. get the text: Tiny Shakespeare (downloaded once, checksummed) or the user's file
    input_path = (
        args.input if args.input is not None else fetch(TINY_SHAKESPEARE, out_dir / "input.txt")
    )
    data = read_text(input_path)
    if not data:
        raise PrepareError(f"{input_path} is empty; there is nothing to prepare")
    print(f"length of dataset in characters: {len(data):,}")

    # 2. split on characters, as nanoGPT does
    n = len(data)
    boundary = int(n * TRAIN_FRACTION)
    train_data, val_data = data[:boundary], data[boundary:]
    if not train_data or not val_data:
        raise PrepareError(
            f"{input_path} has only {n} character(s): too short for non-empty train and val splits"
        )

    # 3. the vocabulary: every distinct character, sorted by code point
    chars = distinct_chars(data if args.vocab_from == "all" else train_data)
    vocab_size = len(chars)
    print("all the unique characters:", "".join(chars))
    print(f"vocab size: {vocab_size:,}")

    # 4. encode both splits; in strict mode val may hold characters train never had
    train_ids = encode(train_data, chars)
    val_ids = encode(val_data, chars)
    unseen = val_ids < 0
    if unseen.any():
        unseen_chars = sorted(set(np.array(list(val_data))[unseen]))
        if args.unseen_in_val == "error":
            raise PrepareError(
                f"val has {int(unseen.sum()):,} characters never seen in train ({''.join(unseen_chars)!r}, "
                f"first at val offset {int(np.argmax(unseen)):,}); use --unseen-in-val drop or --vocab-from all"
            )
        print(
            f"dropped {int(unseen.sum()):,} val characters never seen in train: {''.join(unseen_chars)!r}"
        )
        val_ids = val_ids[~unseen]
    print(f"train has {len(train_ids):,} tokens")
    print(f"val has {len(val_ids):,} tokens")

    # 5. export to bin files, and the metadata that reads them
    dtype = dtype_for_vocab(vocab_size)
    write_bin(out_dir / "train.bin", [train_ids], dtype, vocab_size)
    write_bin(out_dir / "val.bin", [val_ids], dtype, vocab_size)
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for i, ch in enumerate(chars)}
    write_pickle(out_dir / "meta.pkl", {"vocab_size": vocab_size, "itos": itos, "stoi": stoi})
    write_meta(
        out_dir,
        script="data/shakespeare_char/prepare.py",
        tokenizer={
            "kind": "char",
            "name": "char",
            "vocab_size": vocab_size,
            "eot_id": None,
            "sha256": hashlib.sha256("".join(chars).encode()).hexdigest(),
            "chars": "".join(chars),
        },
        dtype=dtype,
        split_tokens={"train": len(train_ids), "val": len(val_ids)},
        source=text_source(
            input_path, out_dir, characters=n, url=None if args.input else TINY_SHAKESPEARE.url
        ),
        split={
            "rule": "first 90% of the characters train, the rest val",
            "train_fraction": TRAIN_FRACTION,
            "boundary_character": boundary,
        },
        options={"vocab_from": args.vocab_from, "unseen_in_val": args.unseen_in_val},
    )
    print(f"wrote train.bin, val.bin ({dtype.name}), meta.pkl and meta.json to {out_dir}")


if __name__ == "__main__":
    run_main(main)

# length of dataset in characters: 1,115,394
# all the unique characters:
#  !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz
# vocab size: 65
# train has 1,003,854 tokens
# val has 111,540 tokens
