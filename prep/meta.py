"""The metadata beside the .bin files, and `verify`, which re-checks a folder against it.

- write_meta(out_dir, ...): meta.json, readable and safe: tokenizer, dtype, each split's token
  count and sha256, the source, the split rule, the options
- text_source(input_path, out_dir, characters, url): meta.json's "source" for one text file
- write_pickle(path, obj): nanoGPT's meta.pkl contract (vocab_size, stoi/itos), atomically
- write_bpe_meta_pkl(out_dir, tokenizer, encoding): meta.pkl for a trained tokenizer, none for GPT-2
- nanogpt_sample_maps(encoding): the stoi/itos nanoGPT's sample.py reads, for a BPE vocabulary
- verify(folder): the problems found in a prepared folder (`python prepare_common.py verify DIR`)
- META_FORMAT_VERSION: the version of meta.json's layout
"""

import json
import pickle
from pathlib import Path

import numpy as np

from prep.errors import PrepareError
from prep.files import atomic_path, sha256_file
from prep.tokenizers import gpt2_encoding

META_FORMAT_VERSION = 1
VERIFY_SHOWS_CHARS = 200  # how much of val `verify` decodes and prints


def write_meta(out_dir, *, tokenizer, dtype, split_tokens, source, split, options, script):
    """Write meta.json: everything needed to read, check and reproduce the .bin files.

    tokenizer: {"kind": "char"|"tiktoken"|"bpe", "name", "vocab_size", "eot_id", "sha256", ...};
    split_tokens: {"train": 1003854, "val": 111540}; source: {"path", "sha256", ...}.
    """
    out_dir = Path(out_dir)
    meta = {
        "format_version": META_FORMAT_VERSION,
        "created_by": script,
        "tokenizer": tokenizer,
        "dtype": np.dtype(dtype).name,
        "splits": {
            name: {
                "file": f"{name}.bin",
                "tokens": count,
                "sha256": sha256_file(out_dir / f"{name}.bin"),
            }
            for name, count in split_tokens.items()
        },
        "source": source,
        "split": split,
        "options": options,
    }
    with atomic_path(out_dir / "meta.json") as tmp:
        tmp.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return meta


def text_source(input_path, out_dir, characters, url=None):
    """meta.json's "source" for one text file: where it is, its sha256 and size, its origin.

    The path is relative when the file sits in `out_dir` (a downloaded input.txt), so the
    folder can be moved; `url` is None for a local --input.
    """
    input_path = Path(input_path).resolve()
    inside = input_path.parent == Path(out_dir).resolve()
    return {
        "path": input_path.name if inside else str(input_path),
        "sha256": sha256_file(input_path),
        "characters": characters,
        "url": url,
    }


def write_pickle(path, obj):
    """Pickle `obj` to `path`, atomically (nanoGPT's meta.pkl)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        pickle.dump(obj, f)


def write_bpe_meta_pkl(out_dir, tokenizer, encoding):
    """nanoGPT's meta.pkl for a BPE pipeline; return whether one was written.

    A trained tokenizer ({"kind": "bpe", ...}) -> {"vocab_size", "tokenizer", "stoi", "itos"}:
    train.py sizes the model from vocab_size, and sample.py, which reads stoi/itos whenever a
    meta.pkl exists, can run (see `nanogpt_sample_maps`). GPT-2 -> no meta.pkl (a stale one is
    removed), so train.py and sample.py keep their GPT-2 defaults.
    """
    meta_pkl = Path(out_dir) / "meta.pkl"
    if tokenizer["kind"] == "bpe":
        stoi, itos = nanogpt_sample_maps(encoding)
        write_pickle(
            meta_pkl,
            {
                "vocab_size": tokenizer["vocab_size"],
                "tokenizer": tokenizer,
                "stoi": stoi,
                "itos": itos,
            },
        )
        return True
    if meta_pkl.exists():
        meta_pkl.unlink()
        print(f"removed {meta_pkl}, left by an earlier run with another tokenizer")
    return False


def nanogpt_sample_maps(encoding):
    """stoi/itos for nanoGPT's sample.py, which encodes [stoi[c] for c in s] and decodes
    ''.join(itos[i] for i in ids): a character-level view of a BPE vocabulary.

    itos: every id -> its bytes as text (a token holding part of a multi-byte character shows
    as U+FFFD: sample.py can only join strings); stoi: each character that is a token by
    itself -> that id, so a prompt like "\n" or "ROMEO:" encodes one character per token.
    """
    itos = {}
    for token_id in range(encoding.n_vocab):
        try:
            itos[token_id] = encoding.decode_single_token_bytes(token_id).decode(
                "utf-8", errors="replace"
            )
        except KeyError:  # a gap in a tiktoken vocabulary
            continue
    stoi = {
        text: token_id
        for token_id, text in sorted(itos.items(), reverse=True)
        if len(text) == 1 and text != "\ufffd"
    }
    return stoi, itos


def verify(folder):
    """Check a prepared folder against its meta.json; return the list of problems (empty if fine).

    Each split's size, sha256 and highest id, and the source's sha256 when the source is there;
    prints each split's token count, and the start of val decoded.
    """
    folder = Path(folder)
    meta_path = folder / "meta.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PrepareError(
            f"{meta_path} does not exist; run the folder's prepare.py first"
        ) from None
    except json.JSONDecodeError as exc:
        raise PrepareError(f"{meta_path} is not valid JSON ({exc})") from None
    if meta.get("format_version") != META_FORMAT_VERSION:
        raise PrepareError(
            f"{meta_path} has format_version {meta.get('format_version')!r}, expected {META_FORMAT_VERSION}"
        )
    problems = []
    dtype = np.dtype(meta["dtype"])
    vocab_size = meta["tokenizer"]["vocab_size"]
    for name, split in meta["splits"].items():
        path = folder / split["file"]
        if not path.is_file():
            problems.append(f"{path} is missing")
            continue
        size = path.stat().st_size
        if size != split["tokens"] * dtype.itemsize:
            problems.append(
                f"{path} has {size:,} bytes, expected {split['tokens']:,} {dtype.name} tokens"
            )
            continue
        if sha256_file(path) != split["sha256"]:
            problems.append(f"{path} does not match the sha256 recorded in meta.json")
        if size:
            ids = np.memmap(path, dtype=dtype, mode="r")
            highest = int(ids.max())
            if highest >= vocab_size:
                problems.append(f"{path} holds token id {highest:,} >= vocab_size {vocab_size:,}")
        print(f"{name}: {split['tokens']:,} tokens, {dtype.name}, {path}")
    source_path = meta["source"].get("path")
    if (
        source_path
        and (folder / source_path).is_file()
        and meta["source"].get("sha256")
        and sha256_file(folder / source_path) != meta["source"]["sha256"]
    ):
        problems.append(
            f"{folder / source_path} does not match the source sha256 recorded in meta.json"
        )
    if not problems and "val" in meta["splits"] and meta["splits"]["val"]["tokens"]:
        decode = _decoder_for(meta["tokenizer"], folder)
        ids = np.memmap(folder / meta["splits"]["val"]["file"], dtype=dtype, mode="r")
        start = decode([int(i) for i in ids[:VERIFY_SHOWS_CHARS]])[:VERIFY_SHOWS_CHARS]
        print("start of val:", repr(start))
    return problems


def _decoder_for(tokenizer, folder):
    """A function ids -> text for the tokenizer recorded in meta.json."""
    kind = tokenizer.get("kind")
    if kind == "char":
        chars = tokenizer["chars"]
        return lambda ids: "".join(chars[i] for i in ids)
    if kind == "tiktoken":
        if tokenizer.get("name") == "gpt2":
            return gpt2_encoding().decode
        import tiktoken

        return tiktoken.get_encoding(tokenizer["name"]).decode
    if kind == "bpe":
        from bpe import Tokenizer

        path = Path(tokenizer["path"])
        if not path.is_absolute():
            path = folder / path
        if not path.is_file():
            raise PrepareError(
                f"the tokenizer file {path} recorded in {folder / 'meta.json'} is missing"
            )
        if sha256_file(path) != tokenizer["sha256"]:
            raise PrepareError(
                f"{path} has changed since {folder / 'meta.json'} was written (sha256 differs)"
            )
        return Tokenizer.load(path).decode
    raise PrepareError(f"{folder / 'meta.json'}: unknown tokenizer kind {kind!r}")
