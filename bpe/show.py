"""See a tokenizer at work: the tokens of a text in color, and the merges of one word.

    python -m bpe show "the cat in the hat"             # GPT-2's tokens, ids, bytes/token
    python -m bpe show --tokenizer tok.json --file input.txt
    python -m bpe show --tokenizer tok.json --explain lowest

Tokens get alternating background colors on a color terminal, and are separated by `|`
otherwise (stdout not a terminal, or NO_COLOR set, as https://no-color.org asks). A token
holding only part of a multi-byte character shows its bytes in hex: "你" is 3 bytes, and
GPT-2 cuts it into the tokens <e4 bd> and <a0>.
"""

import argparse
import difflib
import itertools
import os
import re
import sys
import tempfile
from pathlib import Path

import regex

from .checks import one_line
from .io import read_text
from .tokenizer import Tokenizer

# Background colors cycled over the tokens (256-color codes, pale, with black text), and reset.
COLORS = ["\x1b[30;48;5;153m", "\x1b[30;48;5;194m", "\x1b[30;48;5;224m", "\x1b[30;48;5;230m"]
RESET = "\x1b[0m"
# Control characters are shown as escapes, so one token is always on one line: "\n" -> "\\n".
VISIBLE_CONTROLS = {code: repr(chr(code))[1:-1] for code in [*range(32), 127]}


def token_text(token, space=" "):
    """A token's bytes as honest text: what it decodes to, with hex for bytes of a partial char.

    b" hat" -> " hat";  b"\\n" -> "\\\\n";  b"\\xe4\\xbd" (2 of the 3 bytes of "你") -> "<e4 bd>";
    b" hat", space="Ġ" -> "Ġhat" (GPT-2's mark for a space, where spaces separate tokens).
    """
    # surrogateescape turns each byte that is not part of a whole character into U+DC80..U+DCFF.
    text = token.decode("utf-8", errors="surrogateescape").translate(VISIBLE_CONTROLS)
    text = text.replace(" ", space)
    return re.sub(
        "[\udc80-\udcff]+",
        lambda stray: "<" + stray.group().encode("utf-8", "surrogateescape").hex(" ") + ">",
        text,
    )


def use_color(stream):
    """Color only on a terminal, and never when NO_COLOR is set to anything but ""."""
    return stream.isatty() and not os.environ.get("NO_COLOR")


def show_tokens(tokenizer, text, color):
    """The text cut into its tokens, then the ids and the compression, as printed lines.

    "the cat in the hat" with GPT-2, no color ->
        the| cat| in| the| hat
        ids: [1169, 3797, 287, 262, 6877]
        5 tokens, 18 bytes: 3.60 bytes/token
    """
    ids = tokenizer.encode(text)
    shown = [token_text(tokenizer.vocab[token_id]) for token_id in ids]
    if color:
        cut = "".join(f"{COLORS[i % len(COLORS)]}{p}{RESET}" for i, p in enumerate(shown))
    else:
        cut = "|".join(shown)
    n_bytes = len(text.encode("utf-8"))
    return [
        cut,
        f"ids: {ids}",
        f"{len(ids):,} tokens, {n_bytes:,} bytes: {n_bytes / len(ids):.2f} bytes/token",
    ]


def merge_steps(pretoken, ranks):
    """The parts of a pretoken after each merge that encoding applies, with that merge's id.

    simple.encode_pretoken one step at a time: each step joins the adjacent pair whose joined
    bytes are the token made earliest (lowest id). With ranks {b"ow": 256, b"low": 257,
    b"st": 258, b"est": 259}: b"lowest" -> ([l, ow, e, s, t], 256), ([low, e, s, t], 257),
    ([low, e, st], 258), ([low, est], 259), then no pair is a token and it stops.
    """
    parts = [bytes([b]) for b in pretoken]
    while True:
        candidates = [
            (ranks[a + b], i) for i, (a, b) in enumerate(zip(parts, parts[1:])) if a + b in ranks
        ]
        if not candidates:
            return
        token_id, i = min(candidates)  # the earliest merge; the leftmost if it occurs twice
        parts = parts[:i] + [parts[i] + parts[i + 1]] + parts[i + 2 :]
        yield parts, token_id


def explain(tokenizer, word):
    """How `word` is encoded, pretoken by pretoken, merge by merge, as printed lines.

    "lowest" with a tokenizer trained on the book's low/lower/lowest/widest corpus ->
        pretoken 'lowest': 6 bytes: 6c 6f 77 65 73 74
          l o w e s t
          l ow e s t   256: o + w -> ow
          ...
          low est      259: e + st -> est
          no merge applies: ids [257, 259]
    """
    special_ids = set(tokenizer.special_tokens.values())
    ranks = {token: i for i, token in tokenizer.vocab.items() if i not in special_ids}
    lines = []
    for pretoken in regex.findall(tokenizer.pattern, word):
        data = pretoken.encode("utf-8")
        lines.append(f"pretoken {pretoken!r}: {len(data)} bytes: {data.hex(' ')}")
        steps = [([bytes([b]) for b in data], "")]
        for parts, token_id in merge_steps(data, ranks):
            left, right = tokenizer.merges[token_id - 256]
            merge = f"{token_id}: {spaced(left)} + {spaced(right)} -> {spaced(left + right)}"
            steps.append((parts, merge))
        rows = [(" ".join(map(spaced, parts)), merge) for parts, merge in steps]
        width = max(len(row) for row, _ in rows)
        lines += [f"  {row:<{width}}  {merge}".rstrip() for row, merge in rows]
        lines.append(f"  no merge applies: ids {[ranks[part] for part in steps[-1][0]]}")
    return lines


def spaced(token):
    """token_text with GPT-2's mark for a space, where spaces separate tokens: b" a" -> "Ġa"."""
    return token_text(token, space="Ġ")


class ShowError(Exception):
    """A problem the user can fix (a missing file, an empty text): `python -m bpe show` prints
    it as one `error: ...` line, without a traceback."""


# GPT-2's two files as tiktoken fetches them (tiktoken_ext.openai_public.gpt2): URL, sha256.
GPT2_FILES = {
    "encoder.json": (
        "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/encoder.json",
        "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    ),
    "vocab.bpe": (
        "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe",
        "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
    ),
}


def gpt2_tokenizer():
    """GPT-2's tokenizer from its own two files, read as tiktoken reads them: from its cache
    ($TIKTOKEN_CACHE_DIR, where a copy is named by the sha1 of its URL), else from the origin,
    checked against their sha256 either way."""
    from tiktoken.load import read_file_cached

    with tempfile.TemporaryDirectory() as folder:
        for name, (url, sha256) in GPT2_FILES.items():
            try:
                Path(folder, name).write_bytes(read_file_cached(url, sha256))
            except Exception as exc:  # requests' errors, a bad hash: no one class
                raise ShowError(
                    f"cannot fetch GPT-2's {name} ({one_line(exc)}); connect to the internet, "
                    f"set TIKTOKEN_CACHE_DIR to a folder holding tiktoken's copy, or give "
                    f"--tokenizer FILE"
                ) from None
        return Tokenizer.from_gpt2_files(Path(folder, "encoder.json"), Path(folder, "vocab.bpe"))


def load_tokenizer(path=None):
    """A tokenizer file written by train_tokenizer.py, or GPT-2's (`gpt2_tokenizer`)."""
    if path is None:
        return gpt2_tokenizer()
    if Path(path).is_dir():
        raise ShowError(f"--tokenizer {path} is a folder; give a tokenizer file in it")
    if not Path(path).exists():
        raise ShowError(f"--tokenizer {path} does not exist; write one with train_tokenizer.py")
    if not Path(path).is_file():  # a FIFO or a device: reading it may never end
        raise ShowError(f"--tokenizer {path} is not a regular file; give the tokenizer file")
    try:
        return Tokenizer.load(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:  # json errors are ValueErrors
        raise ShowError(f"{path} is not a tokenizer file ({exc})") from None


class _Parser(argparse.ArgumentParser):
    """A usage error is one line, exit code 2; a misspelled option is named with the closest
    one ("--tokenzier": did you mean --tokenizer?), never taken for an abbreviation."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, allow_abbrev=False, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        known = [name for name in self._option_string_actions if name.startswith("--")]
        for arg in itertools.takewhile(lambda arg: arg != "--", args):
            name = arg.split("=")[0]
            if name.startswith("--") and " " not in name and name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"; did you mean {close[0]}?" if close else ""
                self.error(f"unrecognized option {name}{hint}")
        return super().parse_known_args(args, namespace)

    def error(self, message):
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def make_parser():
    parser = _Parser(prog="python -m bpe show", description="Show how a text is cut into tokens.")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--tokenizer", metavar="FILE", help="a file from train_tokenizer.py")
    which.add_argument("--gpt2", action="store_true", help="GPT-2's tokenizer (the default)")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("text", nargs="?", help="the text to cut into tokens")
    what.add_argument("--file", metavar="PATH", help="show the tokens of this UTF-8 file")
    what.add_argument("--explain", metavar="WORD", help="show the merges that encode WORD")
    return parser


def main(argv=None):
    args = make_parser().parse_args(argv)

    try:
        text = read_text(args.file) if args.file else args.text or args.explain
    except ValueError as exc:
        raise ShowError(str(exc)) from None
    if not text:
        raise ShowError(f"{args.file or 'the text'} is empty: nothing to show")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # an argument's bytes that are not UTF-8
        raise ShowError(
            f"the text is not valid UTF-8 (character {exc.start}); pass UTF-8"
        ) from None
    tokenizer = load_tokenizer(args.tokenizer)
    try:
        if args.explain:
            lines = explain(tokenizer, text)
        else:
            lines = show_tokens(tokenizer, text, use_color(sys.stdout))
    except ValueError as exc:  # a pattern that leaves characters out
        raise ShowError(f"{args.tokenizer or 'GPT-2'}: {exc}") from None
    print(*lines, sep="\n")
