"""The tokenizer a BPE pipeline encodes with, as a tiktoken Encoding: GPT-2's or a trained one.

- bpe_encoding(tokenizer_path, need_eot): the Encoding and its meta.json "tokenizer" record
- gpt2_encoding(): tiktoken's "gpt2", its two files fetched (checksummed, mirror-aware) first
- gpt2_files(): GPT-2's own encoder.json and vocab.bpe, for bpe.Tokenizer.from_gpt2_files
- check_covered(text, ids, encoding, tokenizer, where): refuse ids that leave characters out;
  check_documents_covered(texts, ids, ...) for a batch; may_lose_text, token_bytes,
  token_byte_lengths: its parts
- encoding_sha256(encoding): a fingerprint of an Encoding's definition
- CACHE_ENV: the environment variable naming where tokenizer files are kept
"""

import contextlib
import functools
import hashlib
import os
from pathlib import Path

import numpy as np

from bpe.patterns import PATTERNS, first_uncovered
from prep.downloads import GPT2_ENCODER_JSON, GPT2_VOCAB_BPE, fetch
from prep.errors import PrepareError
from prep.files import sha256_file

CACHE_ENV = "NANOGPT_DATA_CACHE"  # where GPT-2's files are kept (default ~/.cache/nanogpt-data)


def bpe_encoding(tokenizer_path=None, need_eot=False):
    """The tiktoken Encoding a BPE pipeline encodes with, and its meta.json "tokenizer" record.

    None -> GPT-2: (Encoding "gpt2", {"kind": "tiktoken", "name": "gpt2", "vocab_size": 50257,
    "eot_id": 50256, ...}); a path -> a file written by train_tokenizer.py, loaded with
    `bpe.Tokenizer.load` and encoded through its `to_tiktoken()` export ({"kind": "bpe", ...}).
    need_eot: a trained tokenizer without <|endoftext|> is an error (documents end with it).
    """
    if tokenizer_path is None:
        encoding = gpt2_encoding()
        return encoding, {
            "kind": "tiktoken",
            "name": "gpt2",
            "vocab_size": encoding.n_vocab,
            "eot_id": encoding.eot_token,
            "sha256": encoding_sha256(encoding),
        }
    from bpe import EOT, Tokenizer

    path = Path(tokenizer_path)
    if not path.is_file():
        raise PrepareError(
            f"--tokenizer {path} does not exist; write one with train_tokenizer.py first"
        )
    try:
        tokenizer = Tokenizer.load(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:  # json errors are ValueErrors
        raise PrepareError(
            f"{path} is not a tokenizer file written by train_tokenizer.py ({exc})"
        ) from None
    if need_eot and EOT not in tokenizer.special_tokens:
        raise PrepareError(
            f"--tokenizer {path} has no {EOT} special token; train one with "
            f"train_tokenizer.py --special-tokens '{EOT}'"
        )
    try:
        encoding = tokenizer.to_tiktoken()
    except ValueError as exc:  # a pattern tiktoken's regex engine cannot compile
        raise PrepareError(f"{path}: tiktoken cannot use this tokenizer ({exc})") from None
    return encoding, {
        "kind": "bpe",
        "name": path.stem,
        "path": str(path.resolve()),
        "vocab_size": tokenizer.vocab_size,
        "eot_id": tokenizer.special_tokens.get(EOT),
        "sha256": sha256_file(path),
        "encoding_sha256": encoding_sha256(encoding),
    }


def check_covered(text, ids, encoding, tokenizer, where):
    """Refuse ids that leave characters of `text` out: a trained tokenizer's own pattern may.

    With the pattern r"\\w+", "a b, c!" encodes to the ids of "a", "b", "c": the spaces and the
    punctuation are in no pre-token, so they would be lost without a word. The check costs one
    numpy lookup: the ids' byte lengths must add up to the text's (a special token, such as the
    end-of-text id closing a document, counts 0); only when they do not is the first character
    left out looked for (`bpe.patterns.first_uncovered`), for the error, which names `where`
    (the text's file), the position, and the tokenizer file. GPT-2's and GPT-4's patterns match
    every character, so their encodings are not checked (`may_lose_text`).
    """
    if not may_lose_text(encoding, tokenizer):
        return
    if token_bytes(ids, encoding) == len(text.encode("utf-8")):
        return
    position = first_uncovered(encoding._pat_str, text)
    character = (
        "a character" if position is None else f"character {position:,} ({text[position]!r})"
    )
    raise PrepareError(
        f"{where}: {character} is in no pre-token of the pattern "
        f"{encoding._pat_str!r} of {tokenizer['path']}, so it would be lost (and every one like "
        f"it); train a tokenizer with a pattern that matches every character, such as gpt2"
    )


def check_documents_covered(texts, ids, encoding, tokenizer, where):
    """`check_covered` for a batch of documents, at the cost of one check for the batch.

    ids[i] are the ids of texts[i] (its end-of-text id included); where(i) names document i,
    for the error. Only when the batch's byte lengths differ are the documents checked one by one.
    """
    if not may_lose_text(encoding, tokenizer) or not texts:
        return
    if token_bytes(np.concatenate(ids), encoding) == sum(len(t.encode("utf-8")) for t in texts):
        return
    for i, (text, document_ids) in enumerate(zip(texts, ids)):
        check_covered(text, document_ids, encoding, tokenizer, where(i))


def may_lose_text(encoding, tokenizer):
    """Whether the encoding's pattern may leave characters out: only a trained tokenizer's own
    pattern may; GPT-2's and GPT-4's match every character."""
    return tokenizer["kind"] == "bpe" and encoding._pat_str not in PATTERNS.values()


def token_bytes(ids, encoding):
    """How many bytes of text the ids stand for: [15496, 995] -> 11 ("Hello world", GPT-2)."""
    return int(token_byte_lengths(encoding)[np.asarray(ids, dtype=np.int64)].sum())


@functools.lru_cache(maxsize=4)
def token_byte_lengths(encoding):
    """An array: id -> the number of bytes of text its token stands for (0 for a gap in the
    ids, and for a special token: the end-of-text id stands for no text of the document)."""
    lengths = np.zeros(encoding.n_vocab, dtype=np.int64)
    for token_id in range(encoding.n_vocab):
        with contextlib.suppress(KeyError):
            lengths[token_id] = len(encoding.decode_single_token_bytes(token_id))
    lengths[list(encoding._special_tokens.values())] = 0
    return lengths


def gpt2_encoding():
    """`tiktoken.get_encoding("gpt2")`, with its two files fetched by `fetch` first.

    tiktoken looks in $TIKTOKEN_CACHE_DIR for a file named sha1(url) of each of its two
    downloads; we put checksummed copies there under those names, from the origin or from
    NANOGPT_DATA_MIRROR. So the GPT-2 pipelines work offline with a mirror, and a failed
    download is our one-line error (with retries) rather than a traceback from inside tiktoken.
    """
    import tiktoken

    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        tiktoken_cache = _cache_folder(Path(os.environ["TIKTOKEN_CACHE_DIR"]), "TIKTOKEN_CACHE_DIR")
    else:
        tiktoken_cache = _cache_folder(_cache_dir() / "tiktoken", CACHE_ENV)
    for remote in (GPT2_VOCAB_BPE, GPT2_ENCODER_JSON):
        fetch(remote, tiktoken_cache / hashlib.sha1(remote.url.encode()).hexdigest())
    os.environ["TIKTOKEN_CACHE_DIR"] = str(tiktoken_cache)
    return tiktoken.get_encoding("gpt2")


def gpt2_files():
    """GPT-2's `encoder.json` and `vocab.bpe`, fetched (checksummed) into the cache: (json, bpe)."""
    folder = _cache_folder(_cache_dir() / "gpt2", CACHE_ENV)
    encoder_json = fetch(GPT2_ENCODER_JSON, folder / "encoder.json")
    vocab_bpe = fetch(GPT2_VOCAB_BPE, folder / "vocab.bpe")
    return encoder_json, vocab_bpe


def encoding_sha256(encoding):
    """A fingerprint of a tiktoken Encoding's definition: pattern, ranks and special tokens."""
    digest = hashlib.sha256()
    digest.update(encoding._pat_str.encode())
    for token, rank in sorted(encoding._mergeable_ranks.items(), key=lambda item: item[1]):
        digest.update(b"%d:%s\n" % (rank, token.hex().encode()))
    for name, rank in sorted(encoding._special_tokens.items()):
        digest.update(b"special %d:%s\n" % (rank, name.encode()))
    return digest.hexdigest()


def _cache_dir():
    """Where downloaded tokenizer files are kept: $NANOGPT_DATA_CACHE or ~/.cache/nanogpt-data."""
    folder = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "nanogpt-data")
    return _cache_folder(folder, CACHE_ENV)


def _cache_folder(folder, variable):
    """`folder`, created if needed; one that cannot be (a file is there) is a one-line error."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PrepareError(
            f"cannot use {folder} as a cache folder ({exc.strerror}); set {variable} to a "
            f"writable folder"
        ) from None
    return folder
