"""Reading and writing tokenizers: our own JSON file, and GPT-2's / Hugging Face's file pair.

Our file (`Tokenizer.save`, `Tokenizer.load`) is one human-readable, versioned JSON file
with a fixed layout, so the same tokenizer always gives the same bytes and the file's
sha256 can name the tokenizer in a dataset's metadata:

    {
      "format": "nanogpt-bpe-tokenizer",
      "version": 1,
      "pattern": "gpt2",
      "special_tokens": {"<|endoftext|>": 4095},
      "single_bytes": "ĀāĂ...!\\"#$%&'()*+,-./0123...",
      "merges": [
        "Ġ t",
        "h e",
        "Ġt he"
      ]
    }

- `pattern`: "gpt2", "gpt4" or "nanochat" when it is one of those, else the regex itself.
- `special_tokens`: string -> id, in id order.
- `single_bytes`: always written; 256 characters, the one at position i is the byte whose
  id is i, in GPT-2's printable alphabet (`render_token`). A trained tokenizer has
  byte b at id b; GPT-2's own vocabulary permutes them ("!" is 0).
- `merges`: in order, one per line; merge i makes id 256 + i from two earlier tokens,
  written in the printable alphabet ("Ġ" is a space), so a space separates the two.

GPT-2's own files are the other format (Hugging Face calls them `vocab.json` and
`merges.txt`): `encoder.json` maps every token, written in the printable alphabet, to its id;
`vocab.bpe` is "#version: 0.2" and then the merges, one "a b" per line. They carry no
regex, so the pattern is given when loading.
"""

import contextlib
import json
import os
import tempfile
from pathlib import Path

from .checks import shown

FORMAT_NAME = "nanogpt-bpe-tokenizer"
FORMAT_VERSION = 1
HF_MERGES_HEADER = "#version: 0.2"
SINGLE_BYTES = [bytes([b]) for b in range(256)]


class TokenizerFileError(ValueError):
    """A tokenizer file that is missing or unreadable; the message names the file."""


# ---------------------------------------------------------------- GPT-2's printable bytes


def bytes_to_unicode():
    """GPT-2's map from each byte to a printable character, so tokens can be written as text.

    Printable bytes map to themselves; the rest (controls, space, ...) to chars from U+0100 on:
    0x21 ('!') -> '!',  0x20 (space) -> 'Ġ',  0x0A (newline) -> 'Ċ'.
    """
    ranges = [("!", "~"), ("¡", "¬"), ("®", "ÿ")]
    printable = [b for first, last in ranges for b in range(ord(first), ord(last) + 1)]
    others = [b for b in range(256) if b not in printable]
    return {b: chr(b) for b in printable} | {b: chr(256 + i) for i, b in enumerate(others)}


BYTE_TO_CHAR = bytes_to_unicode()  # also str.translate's table: byte value -> character
CHAR_TO_BYTE = {char: byte for byte, char in BYTE_TO_CHAR.items()}


def render_token(token: bytes) -> str:
    """A token's bytes in GPT-2's printable alphabet: b" the" -> "Ġthe", b"\\n" -> "Ċ".

    Equal to "".join(BYTE_TO_CHAR[b] for b in token), at C speed (latin-1 maps byte b to
    chr(b)): a token of a million bytes is written in milliseconds, not seconds.
    """
    return token.decode("latin-1").translate(BYTE_TO_CHAR)


def parse_token(text: str) -> bytes:
    """The inverse of render_token: "Ġthe" -> b" the". A char outside the alphabet raises
    KeyError."""
    return bytes(CHAR_TO_BYTE[c] for c in text)


# ---------------------------------------------------------------- our JSON file


def tokenizer_to_json(vocab, merges, special_tokens, pattern):
    """The text of our file (see the module docstring): same tokenizer -> same text.

    `vocab` id -> bytes, `merges` [(bytes, bytes)], `special_tokens` str -> id,
    `pattern` its name ("gpt2", "gpt4", "nanochat") or else the regex string.
    """
    single_bytes = "".join(render_token(vocab[i]) for i in range(256))
    specials = dict(sorted(special_tokens.items(), key=lambda item: item[1]))
    merge_lines = ",\n".join(
        "    " + json.dumps(f"{render_token(a)} {render_token(b)}", ensure_ascii=False)
        for a, b in merges
    )
    lines = [
        "{",
        f'  "format": {json.dumps(FORMAT_NAME)},',
        f'  "version": {FORMAT_VERSION},',
        f'  "pattern": {json.dumps(pattern, ensure_ascii=False)},',
        f'  "special_tokens": {json.dumps(specials, ensure_ascii=False)},',
        f'  "single_bytes": {json.dumps(single_bytes, ensure_ascii=False)},',
        f'  "merges": [\n{merge_lines}\n  ]' if merges else '  "merges": []',
        "}",
    ]
    return "\n".join(lines) + "\n"


def tokenizer_from_json(path):
    """Read our file -> (vocab, merges, special_tokens, pattern); every error names `path`."""
    path = Path(path)
    document = _read_json(path)
    if not isinstance(document, dict) or document.get("format") != FORMAT_NAME:
        raise TokenizerFileError(
            f'{path} is not a tokenizer file (expected "format": "{FORMAT_NAME}"); '
            f"save one with Tokenizer.save"
        )
    version = document.get("version")  # true and 1.0 equal 1 in Python, not in the format
    if type(version) is not int or version != FORMAT_VERSION:
        raise TokenizerFileError(
            f"{path} has tokenizer format version {shown(version)}, but this "
            f"code reads version {FORMAT_VERSION}; re-save it with a matching version of bpe"
        )
    missing = {"pattern", "special_tokens", "single_bytes", "merges"} - document.keys()
    if missing:
        raise TokenizerFileError(f"{path} lacks the field(s) {sorted(missing)}")

    single_bytes = document["single_bytes"]
    if not isinstance(single_bytes, str) or len(single_bytes) != 256:
        raise TokenizerFileError(f'{path}: "single_bytes" must be a string of 256 characters')
    vocab = _single_bytes(path, '"single_bytes"', single_bytes)

    merge_lines = document["merges"]
    if not isinstance(merge_lines, list):
        raise TokenizerFileError(f'{path}: "merges" must be a list of "a b" strings')
    merges = _parse_merges(path, merge_lines, vocab, first_line=None)

    specials = document["special_tokens"]
    # type() is int: JSON's true and false are Python bools, an int subclass, and no ids
    if not isinstance(specials, dict) or not all(type(i) is int for i in specials.values()):
        raise TokenizerFileError(f'{path}: "special_tokens" must map strings to integer ids')
    pattern = document["pattern"]
    if not isinstance(pattern, str):
        raise TokenizerFileError(f'{path}: "pattern" must be a pattern name or a regex string')
    return vocab, merges, specials, pattern


def _read_json(path):
    """json.load that names the file and refuses duplicate keys (json would keep the last)."""

    def no_duplicate_keys(pairs):
        seen = {}
        for key, value in pairs:
            if key in seen:
                raise TokenizerFileError(f"{path} has the key {shown(key)} twice")
            seen[key] = value
        return seen

    text = _read_utf8(path)
    try:
        return json.loads(text, object_pairs_hook=no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise TokenizerFileError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except TokenizerFileError:  # a ValueError too: no_duplicate_keys' own line
        raise
    except ValueError:  # int() refuses a number of more than 4,300 digits
        raise TokenizerFileError(
            f"{path} holds a number of over 4,300 digits: not a tokenizer file"
        ) from None
    except RecursionError:
        raise TokenizerFileError(f"{path} is nested too deeply: not a tokenizer file") from None


def _read_utf8(path):
    """A file's text; a missing file, a folder or a byte that is not UTF-8 is refused, named."""
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except FileNotFoundError:
        raise TokenizerFileError(f"{path} does not exist; check the path") from None
    except IsADirectoryError:
        raise TokenizerFileError(f"{path} is a folder, not a tokenizer file") from None
    except UnicodeDecodeError as exc:
        raise TokenizerFileError(
            f"{path} is not UTF-8 text (byte {exc.start}): not a tokenizer file"
        ) from None


def _single_bytes(path, where, chars):
    """chars[0..255] in GPT-2's byte alphabet -> {id: byte}: "Āā..." -> {0: b"\\x00", ...}.

    They must be the 256 single bytes, each once; `where` names them in `path` for an error.
    """
    try:
        vocab = {i: parse_token(chars[i]) for i in range(256)}
    except KeyError as exc:
        raise TokenizerFileError(
            f"{path}: {where}: {shown(exc.args[0])} is missing or not in GPT-2's byte alphabet"
        ) from None
    if sorted(vocab.values()) != SINGLE_BYTES:
        raise TokenizerFileError(
            f"{path}: {where} repeats a byte or holds a longer token; each of the 256 single "
            "bytes must appear once"
        )
    return vocab


def _parse_merges(path, merge_lines, vocab, first_line):
    """Merge lines "a b" -> [(bytes, bytes)], adding each new token to `vocab` at 256 + i.

    Checks that both halves are tokens already known and the result is new. `first_line`
    is the file line number of merge 0 (for merges.txt), or None to name merges by index.
    """
    known = {token: token_id for token_id, token in vocab.items()}
    merges = []
    for i, line in enumerate(merge_lines):
        where = f"merge {i}" if first_line is None else f"line {first_line + i}"
        parts = line.split(" ") if isinstance(line, str) else None
        if parts is None or len(parts) != 2 or not parts[0] or not parts[1]:
            raise TokenizerFileError(
                f'{path}, {where}: expected two tokens "a b", got {shown(line)}'
            )
        try:
            pair = parse_token(parts[0]), parse_token(parts[1])
        except KeyError as exc:
            raise TokenizerFileError(
                f"{path}, {where}: {shown(exc.args[0])} is not in GPT-2's byte alphabet"
            ) from None
        for half, text in zip(pair, parts):
            if half not in known:
                raise TokenizerFileError(
                    f"{path}, {where} ({shown(line)}) refers to the unknown token {shown(text)}; "
                    f"a merge may only use tokens made before it"
                )
        token = pair[0] + pair[1]
        if token in known:
            raise TokenizerFileError(
                f"{path}, {where} ({shown(line)}) makes the duplicate token "
                f"{shown(render_token(token))}, which already has id {known[token]}"
            )
        known[token] = 256 + i
        vocab[256 + i] = token
        merges.append(pair)
    return merges


# ---------------------------------------------------------------- GPT-2 / Hugging Face pair


def hf_vocab_json(vocab, special_tokens):
    """encoder.json / vocab.json text: rendered token -> id in id order, as GPT-2 wrote it.

    json.dumps of that dict reproduces GPT-2's own encoder.json byte for byte.
    """
    special_ids = set(special_tokens.values())
    entries = {
        render_token(token): token_id
        for token_id, token in sorted(vocab.items())
        if token_id not in special_ids
    }
    entries.update(sorted(special_tokens.items(), key=lambda item: item[1]))
    return json.dumps(entries)


def hf_merges_txt(merges):
    """vocab.bpe / merges.txt text: "#version: 0.2" then one "a b" per line."""
    return "".join(
        [HF_MERGES_HEADER + "\n"] + [f"{render_token(a)} {render_token(b)}\n" for a, b in merges]
    )


def read_hf(vocab_json, merges_txt):
    """Read GPT-2's encoder.json + vocab.bpe (or HF's vocab.json + merges.txt).

    -> (vocab, merges, special_tokens). Ids must be laid out as GPT-2's are: the 256
    single bytes first (in any order), then one id per merge in order, then the special
    tokens, which are written as themselves rather than in the byte alphabet.
    """
    vocab_json, merges_txt = Path(vocab_json), Path(merges_txt)
    entries = _read_json(vocab_json)
    if not isinstance(entries, dict) or not all(type(i) is int for i in entries.values()):
        raise TokenizerFileError(
            f"{vocab_json} must be a JSON object mapping tokens to integer ids"
        )
    by_id = {token_id: text for text, token_id in entries.items()}
    if len(by_id) != len(entries):
        raise TokenizerFileError(f"{vocab_json} gives the same id to two tokens")
    lines, first_line = _read_utf8(merges_txt).split("\n"), 1
    if lines[0].startswith("#version"):
        lines, first_line = lines[1:], 2
    if lines and lines[-1] == "":
        lines = lines[:-1]
    vocab = _single_bytes(vocab_json, "ids 0..255", by_id)
    merges = _parse_merges(merges_txt, lines, vocab, first_line)
    n_base = 256 + len(merges)
    for token_id in range(256, n_base):
        if by_id.get(token_id) != render_token(vocab[token_id]):
            raise TokenizerFileError(
                f"{vocab_json}: id {token_id} should be {shown(render_token(vocab[token_id]))}, "
                f"made by merge {token_id - 256} of {merges_txt}, but is "
                f"{shown(by_id.get(token_id))}; the two files do not belong together"
            )
    special_tokens = {text: token_id for token_id, text in by_id.items() if token_id >= n_base}
    return vocab, merges, special_tokens


def write_text_atomically(path, text):
    """Write `text` as UTF-8 to `path` through a temporary file beside it, renamed into place:
    a reader sees the old file or the whole new one, never half of it (its folder is made)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
        os.chmod(name, 0o644)
        os.replace(name, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


def read_text(path):
    """A UTF-8 text file as nanoGPT reads it, with Python's universal newlines ("\\r\\n" and
    "\\r" are "\\n"); a missing file, a folder or a byte that is not UTF-8 raise a ValueError
    naming the file."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path} does not exist or is not a regular file; check the path")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not valid UTF-8 (byte offset {exc.start:,})") from None
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")
