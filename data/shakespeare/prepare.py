"""
Prepare the Shakespeare dataset for BPE language modeling (e.g. finetuning GPT-2): GPT-2's BPE,
train.bin / val.bin byte for byte nanoGPT's, no meta.pkl (nanoGPT keeps its GPT-2 defaults).
With --tokenizer (a BPE of train_tokenizer.py), meta.pkl gives nanoGPT its vocab_size.

    python data/shakespeare/prepare.py [--input FILE] [--out-dir DIR] [--tokenizer TOKENIZER.json]
"""

from argparse import RawDescriptionHelpFormatter
from pathlib import Path

from formats import schema
from formats.tokenizers import check_covered
from prepare_common import (
    bpe_encoding,
    dtype_for_vocab,
    text_source,
    write_bin,
    write_bpe_meta_pkl,
    write_meta,
)
from safety import (
    ArgumentParser,
    PrepareError,
    RemoteFile,
    fetch,
    output_folder,
    read_text,
    run_main,
)

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
        # 1. the tokenizer first: a wrong --tokenizer should fail before any download
        enc, tokenizer = bpe_encoding(args.tokenizer)
        print(f"tokenizer: {tokenizer['name']} ({tokenizer['vocab_size']:,} tokens)")

        # 2. get the text: Tiny Shakespeare (downloaded once, checksummed) or the user's file
        input_path = args.input or fetch(TINY_SHAKESPEARE, out_dir / "input.txt")
        data = read_text(input_path)
        print(f"length of dataset in characters: {len(data):,}")

        # 3. split on characters as nanoGPT does; each side is encoded alone
        n = len(data)
        boundary = int(n * TRAIN_FRACTION)
        train_data, val_data = data[:boundary], data[boundary:]
        if not train_data or not val_data:
            raise PrepareError(
                f"{input_path} has only {n} characters: too short for non-empty train and "
                "val splits"
            )

        # 4. encode with tiktoken: encode_ordinary reads "<|endoftext|>" in the text as plain text
        train_ids = enc.encode_ordinary(train_data)
        val_ids = enc.encode_ordinary(val_data)
        check_covered(data, train_ids + val_ids, enc, tokenizer, where=input_path)
        for split, text, ids in (("train", train_data, train_ids), ("val", val_data, val_ids)):
            print(
                f"{split} has {len(ids):,} tokens ({len(text) / len(ids):.2f} characters per token)"
            )

        # 5. export to bin files, and the metadata that reads them
        vocab_size = tokenizer["vocab_size"]
        dtype = dtype_for_vocab(vocab_size)
        write_bin(out / "train.bin", [train_ids], dtype, vocab_size)
        write_bin(out / "val.bin", [val_ids], dtype, vocab_size)
        # 6. meta.pkl: nanoGPT's train.py takes vocab_size from it; with GPT-2 there must be none
        wrote_pkl = write_bpe_meta_pkl(out, tokenizer, enc)
        write_meta(
            out,
            script="data/shakespeare/prepare.py",
            tokenizer=tokenizer,
            dtype=dtype,
            split_tokens={"train": len(train_ids), "val": len(val_ids)},
            texts={"train": train_data, "val": val_data},  # for the byte figures, val_bytes
            source=text_source(
                input_path, out_dir, characters=n, url=None if args.input else TINY_SHAKESPEARE.url
            ),
            split={
                "rule": "first 90% of the characters train, the rest val",
                "train_fraction": TRAIN_FRACTION,
                "boundary_character": boundary,
            },
            options={"tokenizer": None if args.tokenizer is None else str(args.tokenizer)},
        )
        meta_files = "meta.json, meta.pkl" if wrote_pkl else "meta.json"
    print(
        f"wrote train.bin, val.bin ({dtype.name}), val_bytes.bin, token_bytes.npy, {meta_files} "
        f"to {out_dir}"
    )


def parse_args():
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--input", type=Path, help="a local UTF-8 text file instead of Tiny Shakespeare")
    where = "where the outputs go (default: beside this script)"
    add("--out-dir", type=Path, default=Path(__file__).parent, help=where)
    tokenizer = "a file written by train_tokenizer.py (default: GPT-2's BPE)"
    add("--tokenizer", type=Path, help=tokenizer)
    return parser.parse_args()


if __name__ == "__main__":
    run_main(main)

# tokenizer: gpt2 (50,257 tokens)
# length of dataset in characters: 1,115,394
# train has 301,966 tokens (3.32 characters per token)
# val has 36,059 tokens (3.09 characters per token)
