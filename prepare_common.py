"""Check a prepared data folder against its meta.json, or see what nanoGPT will read from it:

    python prepare_common.py verify data/shakespeare_char
    python prepare_common.py show data/shakespeare_char [--split val] [--block-size 8]

`verify` recomputes what meta.json records (each split's size, sha256 and largest id, the
source's and the tokenizer's sha256) and decodes the start of val; each problem is one `error:`
line, and the exit code is 1 if there is any. `show` prints one block as
nanoGPT's get_batch takes it: x, and y, the next token of each (prep/show.py). The code the
prepare.py scripts share lives in the `prep` package (prep/__init__.py lists its modules in reading order).
"""

import sys

from prep import show
from prep.arguments import ArgumentParser
from prep.errors import run_main
from prep.meta import verify


def main(argv=None):
    parser = ArgumentParser(description="Check a prepared data folder against its meta.json.")
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
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"{args.folder}: OK")


if __name__ == "__main__":
    run_main(main)
