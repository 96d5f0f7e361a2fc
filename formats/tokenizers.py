"""The tokenizer a prepared folder records: how it is loaded, known by (`encoding_sha256`), and
checked (`check_covered`: a trained tokenizer's own pattern may leave characters out)."""

import hashlib
import os
from pathlib import Path

import numpy as np

from bpe import EOT, Tokenizer
from bpe.patterns import BUILTIN_PATTERNS, first_uncovered
from formats.encoders import fast_encoding
from formats.nanochat import load_encoding, token_byte_lengths, token_pieces
from formats.schema import TOKEN_BYTES, bin_name
from formats.shards import read_shard, write_npy
from safety.downloads import RemoteFile, fetch
from safety.errors import PrepareError, reading
from safety.files import atomic_path, cache_folder, sha256_file
from safety.gpt2 import GPT2_FILES, MIRROR_PATHS, tiktoken_cache, tiktoken_name

GPT2_ENCODER_JSON = RemoteFile(*GPT2_FILES["encoder.json"], MIRROR_PATHS["encoder.json"])
GPT2_VOCAB_BPE = RemoteFile(*GPT2_FILES["vocab.bpe"], MIRROR_PATHS["vocab.bpe"])


def gpt2_encoding():
    """`tiktoken.get_encoding("gpt2")`, its two files fetched and checked first into the
    $TIKTOKEN_CACHE_DIR it reads (a mirror works offline; a failed download is one line)."""
    import tiktoken

    folder = cache_folder(*tiktoken_cache())  # $TIKTOKEN_CACHE_DIR, or ours
    for remote in (GPT2_VOCAB_BPE, GPT2_ENCODER_JSON):
        fetch(remote, folder / tiktoken_name(remote.url))
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    return fast_encoding(tiktoken.get_encoding("gpt2"))


def encoding_sha256(encoding):
    """A fingerprint of a tiktoken Encoding's definition: pattern, ranks and special tokens."""
    digest = hashlib.sha256()
    digest.update(encoding._pat_str.encode())
    for token, rank in sorted(encoding._mergeable_ranks.items(), key=lambda item: item[1]):
        digest.update(b"%d:%s\n" % (rank, token.hex().encode()))
    for name, rank in sorted(encoding._special_tokens.items()):
        digest.update(b"special %d:%s\n" % (rank, name.encode()))
    return digest.hexdigest()


def check_dtype_holds(encoding, eot_id, dtype):
    """Refuse a `dtype` that cannot hold every id of the tokenizer (uint8 for GPT-2's 50,257)."""
    highest = max(encoding.max_token_value, eot_id)
    if highest > np.iinfo(dtype).max:
        raise PrepareError(
            f"{np.dtype(dtype).name} cannot hold the ids of tokenizer {encoding.name} "
            f"(up to {highest:,})"
        )


def check_covered(text, ids, encoding, tokenizer, where):
    """Refuse ids that leave characters of `text` out, as r"\\w+" drops the spaces of "a b, c!":
    the ids' byte lengths must add up to the text's; the error names `where` and the position."""
    check_documents_covered([text], [ids], encoding, tokenizer, lambda _: where)


def check_documents_covered(texts, ids, encoding, tokenizer, where):
    """`check_covered` for a batch of documents (ids[i] of texts[i], where(i) naming it), at the
    cost of one check for the batch."""
    if not may_lose_text(encoding, tokenizer) or not texts:
        return
    if token_bytes(np.concatenate(ids), encoding) == sum(len(t.encode("utf-8")) for t in texts):
        return
    for i, (text, document_ids) in enumerate(zip(texts, ids)):
        if token_bytes(document_ids, encoding) == len(text.encode("utf-8")):
            continue
        position = first_uncovered(encoding._pat_str, text)
        character = (
            "a character" if position is None else f"character {position:,} ({text[position]!r})"
        )
        raise PrepareError(
            f"{where(i)}: {character} is in no pretoken of the pattern "
            f"{encoding._pat_str!r} of {tokenizer['path']}, so it would be lost (and every one "
            f"like it); train a tokenizer with a pattern that matches every character, such as gpt2"
        )


def may_lose_text(encoding, tokenizer):
    """Whether the encoding's pattern may leave characters out: a trained tokenizer's own may."""
    return tokenizer["kind"] == "bpe" and encoding._pat_str not in BUILTIN_PATTERNS


def token_bytes(ids, encoding):
    """How many bytes of text the ids stand for: [15496, 995] -> 11 ("Hello world", GPT-2)."""
    return int(token_byte_lengths(encoding)[np.asarray(ids, dtype=np.int64)].sum())


def record_byte_lengths(tokenizer, folder=None):
    """Each id's UTF-8 byte length as int32, 0 for a special token, of the tokenizer a meta.json
    records: a character tokenizer's "aé" -> [1, 2]."""
    if tokenizer["kind"] == "char":
        return np.array([len(c.encode("utf-8")) for c in tokenizer["chars"]], dtype=np.int32)
    return token_byte_lengths(record_encoding(tokenizer, folder))


def record_encoding(tokenizer, folder=None):
    """The tiktoken Encoding of a meta.json "tokenizer" record (None for a character tokenizer):
    GPT-2's, or the file its "path" names (relative to `folder`) checked against its sha256."""
    kind = tokenizer["kind"]
    if kind == "char":
        return None
    if kind == "tiktoken":
        if tokenizer.get("name") != "gpt2":
            name = tokenizer.get("name")
            raise PrepareError(f"meta.json's tokenizer {name!r} is not one we can rebuild")
        return gpt2_encoding()
    if not isinstance(tokenizer.get("path"), str):
        raise PrepareError('meta.json\'s tokenizer "path" is missing or not a string')
    path = Path(folder or ".") / tokenizer["path"]  # an absolute path stays as it is
    if not path.is_file():
        raise PrepareError(f"the tokenizer file {path} recorded in meta.json is missing")
    if sha256_file(path) != tokenizer["sha256"]:
        raise PrepareError(f"{path} has changed since meta.json was written (sha256 differs)")
    if kind == "nanochat":
        return load_encoding(path)
    return load_trained(path, option="the tokenizer")[1]


def text_bytes(ids, lengths, chunk=2**24):
    """The UTF-8 bytes the ids stand for, lengths[ids].sum(), a chunk at a time (memory stays
    flat): [15496, 995] with GPT-2's lengths -> 11 ("Hello world")."""
    chunks = (ids[i : i + chunk] for i in range(0, len(ids), chunk))
    return sum(int(lengths[part].sum(dtype=np.int64)) for part in chunks)


def load_trained(path, option="--tokenizer"):
    """(bpe.Tokenizer, its tiktoken Encoding, fast_encoding's) of a file of train_tokenizer.py, or
    a PrepareError naming it ("--tokenizer tok.json does not exist; ...")."""
    path = Path(path)
    if path.is_dir():
        raise PrepareError(f"{option} {path} is a folder; give the tokenizer file inside it")
    if not path.exists():
        raise PrepareError(
            f"{option} {path} does not exist; write one with train_tokenizer.py first"
        )
    if not path.is_file():  # a FIFO or a device: reading it may never end
        raise PrepareError(f"{option} {path} is not a regular file; give the tokenizer file")
    try:
        with reading(path):  # anything else it raises names the file too (run_main)
            bpe_tokenizer = Tokenizer.load(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:  # json errors are ValueErrors
        raise PrepareError(
            f"{path} is not a tokenizer file written by train_tokenizer.py ({exc})"
        ) from None
    try:
        encoding = bpe_tokenizer.to_tiktoken()
    except ValueError as exc:  # a pattern tiktoken's regex engine cannot compile
        raise PrepareError(f"{path}: tiktoken cannot use this tokenizer ({exc})") from None
    return bpe_tokenizer, fast_encoding(encoding)


def trained_tokenizer(tokenizer_path, need_eot=False):
    """(its tiktoken Encoding, meta.json's "tokenizer" record) of a train_tokenizer.py file;
    need_eot: a tokenizer without <|endoftext|> is an error."""
    path = Path(tokenizer_path)
    bpe_tokenizer, encoding = load_trained(path)
    if need_eot and EOT not in bpe_tokenizer.special_tokens:
        raise PrepareError(
            f"--tokenizer {path} has no {EOT} special token; train one with "
            f"train_tokenizer.py --special-tokens '{EOT}'"
        )
    return encoding, {
        "kind": "bpe",
        "name": path.stem,
        "path": str(path.resolve()),
        "vocab_size": bpe_tokenizer.vocab_size,
        "eot_id": bpe_tokenizer.special_tokens.get(EOT),
        "sha256": sha256_file(path),
        "encoding_sha256": encoding_sha256(encoding),
    }


def write_token_bytes(out, tokenizer, dtype, splits, shards=None, shard_format=None):
    """TOKEN_BYTES and meta.json's record of it, with the bytes of text each split's ids stand for:
    {"file": TOKEN_BYTES, "sha256": ..., "bytes": {"train": 1003854, "val": 111540}}."""
    out, lengths = Path(out), record_byte_lengths(tokenizer)
    with atomic_path(out / TOKEN_BYTES) as tmp, open(tmp, "wb") as f:
        write_npy(f, lengths)  # a full disk: an OSError naming the file (np.save: a count)
    totals = {}
    for name in splits:
        if shards is None:
            path = out / bin_name(name)
            arrays = [np.memmap(path, dtype, "r")] if path.stat().st_size else []
        else:
            files = [out / s["file"] for s in shards if s["split"] == name]
            # a shard at a time: a map holds its file open, and shards may outnumber open files
            arrays = (read_shard(path, shard_format, dtype) for path in files)
        totals[name] = sum(text_bytes(ids, lengths) for ids in arrays)
    return {"file": TOKEN_BYTES, "sha256": sha256_file(out / TOKEN_BYTES), "bytes": totals}


def nanogpt_sample_maps(encoding):
    """stoi/itos for nanoGPT's sample.py: itos every id's bytes as text (U+FFFD for part of a
    character), stoi each character that is a token by itself -> that id."""
    pieces = enumerate(token_pieces(encoding))  # b"" for a gap in the ids
    itos = {
        token_id: token.decode("utf-8", errors="replace") for token_id, token in pieces if token
    }
    stoi = {
        text: token_id
        for token_id, text in sorted(itos.items(), reverse=True)
        if len(text) == 1 and text != "\ufffd"
    }
    return stoi, itos
