"""
Prepare the Shakespeare dataset for character-level language modeling.
So instead of encoding with GPT-2 BPE tokens, we just map characters to ints.
Will save train.bin, val.bin containing the ids, and meta.pkl containing the
encoder and decoder and some other related info (nanoGPT's contract), plus
meta.json (readable, safe) describing everything needed to check and reproduce them.

    python data/shakespeare_char/prepare.py --vocab-from train --unseen-in-val drop
"""

import hashlib
import re
from argparse import RawDescriptionHelpFormatter
from pathlib import Path

from formats import schema
from prepare_common import dtype_for_vocab, text_source, write_bin, write_meta, write_pickle
from safety import (
    ArgumentParser,
    PrepareError,
    RemoteFile,
    fetch,
    output_folder,
    read_text,
    run_main,
)
from safety.text import shortened

TINY_SHAKESPEARE = RemoteFile(  # Karpathy's char-rnn copy, pinned by its sha256
    url="https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt",
    sha256="86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
    mirror_path="tinyshakespeare/input.txt",
)
TRAIN_FRACTION = 0.9  # the first 90% of the characters train, the rest validate


def main():
    args = parse_args()
    out_dir = args.out_dir
    with output_folder(out_dir, schema) as out:  # written in `out`, moved into out_dir together
        # 1. get the text: Tiny Shakespeare (downloaded once, checksummed) or the user's file
        input_path = args.input or fetch(TINY_SHAKESPEARE, out_dir / "input.txt")
        data = read_text(input_path)
        if not data:
            raise PrepareError(f"{input_path} is empty; there is nothing to prepare")
        print(f"length of dataset in characters: {len(data):,}")

        # 2. create the train and test splits
        n = len(data)
        boundary = int(n * TRAIN_FRACTION)
        train_data, val_data = data[:boundary], data[boundary:]
        if not train_data or not val_data:
            raise PrepareError(
                f"{input_path} has only {n} character(s): too short for non-empty train and "
                "val splits"
            )

        # 3. get all the unique characters that occur in this text
        chars = sorted(list(set(data)))
        if args.vocab_from == "train":  # those of train only: val may then hold unseen ones
            chars = sorted(list(set(train_data)))
        vocab_size = len(chars)
        print("all the unique characters:", "".join(chars))
        print(f"vocab size: {vocab_size:,}")

        # 4. create a mapping from characters to integers (nanoGPT's sample.py decodes the same way)
        # fmt: off
        stoi = { ch:i for i,ch in enumerate(chars) }
        itos = { i:ch for i,ch in enumerate(chars) }
        def encode(s):
            return [stoi[c] for c in s] # encoder: take a string, output a list of integers
        def decode(l):
            return ''.join([itos[i] for i in l]) # decoder: take a list of integers, output a string
        # fmt: on

        # 5. with --vocab-from train, val may hold characters train never had: refuse or drop them
        unseen, dropped = set(val_data) - set(chars), None
        if unseen:
            val_data, dropped = drop_unseen(val_data, unseen, args.unseen_in_val)

        # 6. encode both to integers
        train_ids = encode(train_data)
        val_ids = encode(val_data)
        print(f"train has {len(train_ids):,} tokens")
        print(f"val has {len(val_ids):,} tokens")

        # 7. export to bin files, and the metadata that reads them
        dtype = dtype_for_vocab(vocab_size)
        write_bin(out / "train.bin", [train_ids], dtype, vocab_size)
        write_bin(out / "val.bin", [val_ids], dtype, vocab_size)
        write_pickle(out / "meta.pkl", {"vocab_size": vocab_size, "itos": itos, "stoi": stoi})
        tokenizer = {"kind": "char", "name": "char", "vocab_size": vocab_size, "eot_id": None}
        tokenizer.update(sha256=hashlib.sha256("".join(chars).encode()).hexdigest())
        write_meta(
            out,
            script="data/shakespeare_char/prepare.py",
            dtype=dtype,
            tokenizer={**tokenizer, "chars": "".join(chars)},
            split_tokens={"train": len(train_ids), "val": len(val_ids)},
            texts={"train": train_data, "val": val_data},  # for the byte figures, val_bytes
            source=text_source(
                input_path, out_dir, characters=n, url=None if args.input else TINY_SHAKESPEARE.url
            ),
            split={
                "rule": "first 90% of the characters train, the rest val",
                "train_fraction": TRAIN_FRACTION,
                "boundary_character": boundary,
                "dropped_from_val": dropped,  # what val.bin leaves out (bpb says so), or None
            },
            options={"vocab_from": args.vocab_from, "unseen_in_val": args.unseen_in_val},
        )
    print(
        f"wrote train.bin, val.bin ({dtype.name}), val_bytes.bin, token_bytes.npy, meta.pkl and "
        f"meta.json to {out_dir}"
    )


def drop_unseen(val_data, unseen, policy):
    """(val_data without the characters of `unseen`, the characters and bytes dropped) for policy
    "drop", or an error naming them."""
    kept = val_data.translate(dict.fromkeys(map(ord, unseen)))
    count, shown = len(val_data) - len(kept), shortened("".join(sorted(unseen)))
    if policy == "error":
        first = re.search(f"[{re.escape(''.join(unseen))}]", val_data).start()
        problem = (
            f"val has {count:,} characters never seen in train ({shown!r}, first at val offset "
            f"{first:,})"
        )
        raise PrepareError(f"{problem}; use --unseen-in-val drop or --vocab-from all")
    if not kept:
        raise PrepareError(
            f"every val character is unseen in train ({shown!r}): dropping them leaves val "
            "empty; use --vocab-from all"
        )
    print(f"dropped {count:,} val characters never seen in train: {shown!r}")
    return kept, {"characters": count, "bytes": len(val_data.encode()) - len(kept.encode())}


def parse_args():
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--input", type=Path, help="a local UTF-8 text file instead of Tiny Shakespeare")
    where = "where the outputs go (default: beside this script)"
    add("--out-dir", type=Path, default=Path(__file__).parent, help=where)
    vocab = "build the vocabulary from all the text (nanoGPT) or from the train split only"
    add("--vocab-from", choices=["all", "train"], default="all", help=vocab)
    unseen = "with --vocab-from train: what to do with val characters never seen in train"
    add("--unseen-in-val", choices=["error", "drop"], default="error", help=unseen)
    args = parser.parse_args()
    if args.unseen_in_val == "drop" and args.vocab_from == "all":  # every character is seen
        parser.error("--unseen-in-val drop goes with --vocab-from train")
    return args


if __name__ == "__main__":
    run_main(main)

# length of dataset in characters: 1,115,394
# all the unique characters:
#  !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz
# vocab size: 65
# train has 1,003,854 tokens
# val has 111,540 tokens
