"""Check a prepared data folder against its meta.json, or see what nanoGPT will read from it:

    python prepare_common.py verify data/shakespeare_char
    python prepare_common.py show data/shakespeare_char [--split val] [--block-size 8]

`verify` compares the .bin sizes and hashes with meta.json, checks every id is below vocab_size,
and decodes the start of val; it exits non-zero on any mismatch. `show` prints one block as
nanoGPT's get_batch takes it: x, and y, the next token of each (prep/show.py). The code the
prepare.py scripts share lives in the `prep` package (prep/__init__.py lists its modules in reading order).
"""

import argparse

from prep import show
from prep.errors import PrepareError, run_main
from prep.meta import verify


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Check a prepared data folder against its meta.json."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    verify_parser = sub.add_parser(
        "verify", help="check .bin sizes, hashes and ids against meta.json"
    )
    verify_parser.add_argument("folder", help="e.g. data/shakespeare_char")
    show.add_arguments(
        sub.add_parser("show", help="one block (x, y) as nanoGPT's get_batch reads it")
    )
    args = parser.parse_args(argv)
    if args.command == "show":
        return show.show(args)
    problems = verify(args.folder)
    if problems:
        raise PrepareError("; ".join(problems))
    print(f"{args.folder}: OK")


if __name__ == "__main__":
    run_main(main)
