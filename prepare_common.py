"""What the prepare.py scripts share: checksummed downloads, dtype checks, .bin writing, metadata.

Each `data/<name>/prepare.py` reads top to bottom as a lesson; the machinery that would distract
from it lives here:

- `fetch(remote, dest)` downloads a known file, or copies it from the offline mirror named by the
  environment variable NANOGPT_DATA_MIRROR, and checks its sha256 before it is renamed into place.
- `dtype_for_vocab(vocab_size)` and `check_ids(...)`: never let an id wrap around silently
  (`np.array([65536]).astype(np.uint16)` is 0).
- `write_bin(path, id_chunks, ...)`: stream id arrays to a .bin file in bounded memory,
  atomically.
- `write_meta(...)`: meta.json (readable, safe) beside the outputs; `write_pickle` for nanoGPT's
  meta.pkl contract.
- `python prepare_common.py verify DIR` re-checks a prepared folder against its meta.json.

Heavy modules (requests, tqdm, tiktoken) are imported only where they are needed, so the
character pipeline starts fast.
"""

import contextlib
import hashlib
import json
import os
import pickle
import sys
import time
from collections import namedtuple
from pathlib import Path

import numpy as np

MIRROR_ENV = "NANOGPT_DATA_MIRROR"  # a folder or an http(s) base URL laid out like ../shared/mirror
CACHE_ENV = "NANOGPT_DATA_CACHE"  # where GPT-2's files are kept (default ~/.cache/nanogpt-data)
META_FORMAT_VERSION = 1
CONNECT_TIMEOUT, READ_TIMEOUT = 10, 60  # seconds
PROGRESS_BAR_BYTES = 5_000_000  # show a download bar above this size


class PrepareError(Exception):
    """A problem the user can fix: printed as one line, without a traceback, by `run_main`."""


def run_main(main):
    """Run `main()`; a PrepareError becomes one `error: ...` line on stderr and exit code 1."""
    try:
        main()
    except PrepareError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("error: interrupted; outputs already in place were left untouched", file=sys.stderr)
        sys.exit(130)


# ---------------------------------------------------------------------------------------------
# Known remote files and checksummed downloads


# url: the origin; sha256: pinned, the body must hash to it whatever server sent it;
# mirror_path: where the same bytes sit inside a mirror (NANOGPT_DATA_MIRROR).
RemoteFile = namedtuple("RemoteFile", ["url", "sha256", "mirror_path"])


TINY_SHAKESPEARE = RemoteFile(
    url="https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt",
    sha256="86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
    mirror_path="tinyshakespeare/input.txt",
)
GPT2_VOCAB_BPE = RemoteFile(
    url="https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe",
    sha256="1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
    mirror_path="gpt2/vocab.bpe",
)
GPT2_ENCODER_JSON = RemoteFile(
    url="https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/encoder.json",
    sha256="196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    mirror_path="gpt2/encoder.json",
)


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _temp_name(path):
    # Same folder, so the final rename is atomic; hidden and pid-tagged, so it never looks
    # like a finished output and two runs don't collide.
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside `path`; rename it into place only if the block succeeds.

    A crash, an error or Ctrl-C inside the block leaves the previous `path` (or none), never a
    half-written file that looks valid.
    """
    path = Path(path)
    tmp = _temp_name(path)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def fetch(remote, dest):
    """Put `remote`'s bytes at `dest`, checked against its pinned sha256; return `dest`.

    An existing `dest` with the right hash is reused; with a wrong hash we stop: it is never
    trusted and never silently overwritten. With NANOGPT_DATA_MIRROR set, the bytes come from
    the mirror (a folder or an http(s) base URL) instead of the origin, through the same checks.
    """
    dest = Path(dest)
    if dest.exists():
        if not dest.is_file():
            raise PrepareError(f"{dest} exists and is not a file; move it away and run again")
        found = sha256_file(dest)
        if found != remote.sha256:
            raise PrepareError(
                f"{dest} exists but its sha256 is {found}, not the expected {remote.sha256}; "
                f"delete it to download it again"
            )
        return dest
    if not dest.parent.is_dir():
        raise PrepareError(f"cannot download to {dest}: {dest.parent} is not a folder")
    mirror = os.environ.get(MIRROR_ENV, "").strip()
    if not mirror:
        return download(remote.url, remote.sha256, dest)
    if mirror.startswith(("http://", "https://")):
        return download(f"{mirror.rstrip('/')}/{remote.mirror_path}", remote.sha256, dest)
    return copy_verified(Path(mirror) / remote.mirror_path, remote.sha256, dest)


def _save_verified(blocks, expected_sha256, dest, source, total_bytes=None):
    """Write an iterable of byte blocks to `dest` via a temp name, if their sha256 matches."""
    digest = hashlib.sha256()
    received = 0
    bar = None
    if total_bytes is not None and total_bytes >= PROGRESS_BAR_BYTES:
        from tqdm import tqdm

        bar = tqdm(
            total=total_bytes, unit="B", unit_scale=True, desc=f"downloading {Path(dest).name}"
        )
    try:
        with atomic_path(dest) as tmp:
            with open(tmp, "wb") as f:
                for block in blocks:
                    f.write(block)
                    digest.update(block)
                    received += len(block)
                    if bar is not None:
                        bar.update(len(block))
            if total_bytes is not None and received != total_bytes:
                raise PrepareError(
                    f"{source} was cut short: received {received:,} of {total_bytes:,} bytes; "
                    f"nothing was saved, run again"
                )
            found = digest.hexdigest()
            if found != expected_sha256:
                raise PrepareError(
                    f"{source} sent {received:,} bytes with sha256 {found}, not the expected "
                    f"{expected_sha256} (an error page or a changed file?); nothing was saved to {dest}"
                )
    finally:
        if bar is not None:
            bar.close()
    return Path(dest)


def copy_verified(source, expected_sha256, dest):
    """Copy a local file (a mirror's copy) to `dest` with the same checks as a download."""
    source = Path(source)
    if not source.is_file():
        raise PrepareError(
            f"mirror file {source} does not exist; check {MIRROR_ENV} (it should name a folder "
            f"laid out like ../shared/mirror) or unset it to download from the origin"
        )

    def blocks():
        with open(source, "rb") as f:
            yield from iter(lambda: f.read(1 << 20), b"")

    return _save_verified(blocks(), expected_sha256, dest, source, source.stat().st_size)


def download(url, expected_sha256, dest, retries=3, backoff=1.0):
    """Stream `url` to `dest` and check its sha256; retry connection errors and 5xx, not 4xx.

    Attempt k (from 0) that fails transiently waits `backoff * 2**k` seconds before the next;
    after `retries` retries the last failure is raised as a PrepareError naming the URL.
    """
    import requests

    transient = (
        requests.ConnectionError,
        requests.Timeout,
        requests.exceptions.ChunkedEncodingError,
    )
    for attempt in range(retries + 1):
        response = None
        try:
            with requests.get(
                url, stream=True, timeout=(CONNECT_TIMEOUT, READ_TIMEOUT)
            ) as response:
                if response.status_code >= 500:
                    raise _RetryableStatus(response.status_code, response.reason)
                if not 200 <= response.status_code < 300:
                    raise PrepareError(
                        f"downloading {url} failed with HTTP status {response.status_code} "
                        f"{response.reason}; check the address or your network, then run again"
                    )
                length = response.headers.get("Content-Length")
                # With Content-Encoding the header counts compressed bytes, not the ones we get.
                total = (
                    int(length) if length and not response.headers.get("Content-Encoding") else None
                )
                return _save_verified(
                    response.iter_content(1 << 16), expected_sha256, dest, url, total
                )
        except (_RetryableStatus, *transient) as exc:
            if attempt == retries:
                if (
                    isinstance(exc, requests.exceptions.ChunkedEncodingError)
                    and response is not None
                ):
                    # raw.tell() and Content-Length both count the bytes as sent (maybe compressed)
                    length = response.headers.get("Content-Length", "")
                    of_total = f" of {int(length):,}" if length.isdigit() else ""
                    raise PrepareError(
                        f"{url} was cut short {retries + 1} times, the last time after "
                        f"{response.raw.tell():,}{of_total} bytes; nothing was saved, run again"
                    ) from None
                raise PrepareError(
                    f"cannot download {url} after {retries + 1} attempts ({exc}); check your network, "
                    f"or set {MIRROR_ENV} to a folder holding a copy"
                ) from None
            time.sleep(backoff * 2**attempt)
    raise AssertionError("unreachable")


class _RetryableStatus(Exception):
    def __init__(self, status, reason):
        super().__init__(f"HTTP status {status} {reason}")


# ---------------------------------------------------------------------------------------------
# GPT-2's tokenizer files, offline-capable


def cache_dir():
    """Where downloaded tokenizer files are kept: $NANOGPT_DATA_CACHE or ~/.cache/nanogpt-data."""
    folder = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "nanogpt-data")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def gpt2_files():
    """GPT-2's `encoder.json` and `vocab.bpe`, fetched (checksummed) into the cache: (json, bpe)."""
    folder = cache_dir() / "gpt2"
    folder.mkdir(exist_ok=True)
    encoder_json = fetch(GPT2_ENCODER_JSON, folder / "encoder.json")
    vocab_bpe = fetch(GPT2_VOCAB_BPE, folder / "vocab.bpe")
    return encoder_json, vocab_bpe


def gpt2_encoding():
    """`tiktoken.get_encoding("gpt2")`, with its two files fetched by `fetch` first.

    tiktoken looks in $TIKTOKEN_CACHE_DIR for a file named sha1(url) of each of its two
    downloads; we put checksummed copies there under those names, from the origin or from
    NANOGPT_DATA_MIRROR. So the GPT-2 pipelines work offline with a mirror, and a failed
    download is our one-line error (with retries) rather than a traceback from inside tiktoken.
    """
    import tiktoken

    tiktoken_cache = Path(os.environ.get("TIKTOKEN_CACHE_DIR") or cache_dir() / "tiktoken")
    tiktoken_cache.mkdir(parents=True, exist_ok=True)
    for remote in (GPT2_VOCAB_BPE, GPT2_ENCODER_JSON):
        fetch(remote, tiktoken_cache / hashlib.sha1(remote.url.encode()).hexdigest())
    os.environ["TIKTOKEN_CACHE_DIR"] = str(tiktoken_cache)
    return tiktoken.get_encoding("gpt2")


def encoding_sha256(encoding):
    """A fingerprint of a tiktoken Encoding's definition: pattern, ranks and special tokens."""
    digest = hashlib.sha256()
    digest.update(encoding._pat_str.encode())
    for token, rank in sorted(encoding._mergeable_ranks.items(), key=lambda item: item[1]):
        digest.update(b"%d:%s\n" % (rank, token.hex().encode()))
    for name, rank in sorted(encoding._special_tokens.items()):
        digest.update(b"special %d:%s\n" % (rank, name.encode()))
    return digest.hexdigest()


def bpe_encoding(tokenizer_path=None):
    """The tiktoken Encoding a BPE pipeline encodes with, and its meta.json "tokenizer" record.

    None -> GPT-2: (Encoding "gpt2", {"kind": "tiktoken", "name": "gpt2", "vocab_size": 50257,
    "eot_id": 50256, ...}); a path -> a file written by train_tokenizer.py, loaded with
    `bpe.Tokenizer.load` and encoded through its `to_tiktoken()` export ({"kind": "bpe", ...}).
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
    from bpe import Tokenizer

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
    encoding = tokenizer.to_tiktoken()
    return encoding, {
        "kind": "bpe",
        "name": path.stem,
        "path": str(path.resolve()),
        "vocab_size": tokenizer.vocab_size,
        "eot_id": tokenizer.special_tokens.get("<|endoftext|>"),
        "sha256": sha256_file(path),
        "encoding_sha256": encoding_sha256(encoding),
    }


# ---------------------------------------------------------------------------------------------
# Reading input, checking ids, writing outputs


def read_text(path):
    """Read a whole file as strict UTF-8; a bad byte is an error that gives its offset."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise PrepareError(f"{path} does not exist; check the path") from None
    except IsADirectoryError:
        raise PrepareError(f"{path} is a folder, not a text file") from None
    except OSError as exc:
        raise PrepareError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PrepareError(
            f"{path} is not valid UTF-8: byte offset {exc.start:,} is {data[exc.start : exc.start + 1]!r}; "
            f"convert the file to UTF-8 first"
        ) from None


def prepare_out_dir(out_dir):
    """Make sure `out_dir` is a folder we can write into (creating it if needed)."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise PrepareError(f"--out-dir {out_dir} is a file, not a folder; choose another path")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PrepareError(f"cannot create the output folder {out_dir}: {exc.strerror}") from None
    return out_dir


def dtype_for_vocab(vocab_size):
    """The smallest dtype nanoGPT can read for ids 0..vocab_size-1: uint16 up to 65,536 ids.

    65 -> uint16; 50,257 -> uint16; 65,536 -> uint16; 65,537 -> uint32 (with a warning).
    """
    if vocab_size <= 2**16:
        return np.dtype(np.uint16)
    if vocab_size <= 2**32:
        print(
            f"warning: vocab_size {vocab_size:,} does not fit uint16, so the .bin files are uint32; "
            f"stock nanoGPT train.py reads uint16: change np.uint16 to np.uint32 in its get_batch",
            file=sys.stderr,
        )
        return np.dtype(np.uint32)
    raise PrepareError(f"vocab_size {vocab_size:,} is too large for uint32 token ids")


def check_ids(ids, vocab_size, dtype, where="ids"):
    """Refuse ids that are negative, >= vocab_size or beyond `dtype`, before any cast wraps them."""
    ids = np.asarray(ids)
    if ids.size == 0:
        return
    if ids.dtype.kind not in "iu":
        raise PrepareError(f"{where}: token ids must be integers, got dtype {ids.dtype}")
    limit = min(vocab_size, int(np.iinfo(dtype).max) + 1)
    lowest, highest = int(ids.min()), int(ids.max())
    if lowest < 0 or highest >= limit:
        bad_index = int(np.argmax((ids < 0) | (ids >= limit)))  # the first bad one
        bad_id = int(ids.flat[bad_index])
        reason = (
            "negative"
            if bad_id < 0
            else (
                f">= vocab_size {vocab_size:,}"
                if bad_id >= vocab_size
                else f"beyond {np.dtype(dtype).name}"
            )
        )
        raise PrepareError(f"{where}: token id {bad_id:,} at position {bad_index:,} is {reason}")


def write_bin(path, id_chunks, dtype, vocab_size, expected_tokens=None, desc=None):
    """Stream an iterable of id arrays into `path` as raw `dtype` values; return the token count.

    Memory stays at one chunk; an empty split gives an empty file (np.memmap cannot map one).
    The file appears under its name only when complete and its size checked.
    """
    path = Path(path)
    dtype = np.dtype(dtype)
    bar = None
    if desc is not None:
        from tqdm import tqdm

        bar = tqdm(total=expected_tokens, unit="tok", unit_scale=True, desc=desc)
    written = 0  # a Python int: no 32-bit overflow on huge splits
    try:
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as f:
                for chunk in id_chunks:
                    chunk = np.asarray(chunk)
                    check_ids(chunk, vocab_size, dtype, where=f"{path.name}")
                    chunk.astype(dtype, copy=False).tofile(f)
                    written += chunk.size
                    if bar is not None:
                        bar.update(chunk.size)
            if expected_tokens is not None and written != expected_tokens:
                raise PrepareError(
                    f"{path}: wrote {written:,} tokens, expected {expected_tokens:,}"
                )
            if tmp.stat().st_size != written * dtype.itemsize:
                raise PrepareError(
                    f"{path}: file size does not match {written:,} {dtype.name} tokens"
                )
    finally:
        if bar is not None:
            bar.close()
    return written


def write_json(path, obj):
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_pickle(path, obj):
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
    write_json(out_dir / "meta.json", meta)
    return meta


# ---------------------------------------------------------------------------------------------
# verify: re-check a prepared folder


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


def verify(folder, show_chars=200):
    """Check a prepared folder against its meta.json; return the list of problems (empty if fine)."""
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
        ids = np.memmap(folder / meta["splits"]["val"]["file"], dtype=dtype, mode="r")[:show_chars]
        print("start of val:", repr(decode([int(i) for i in ids])[:show_chars]))
    return problems


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(
        description="Check a prepared data folder against its meta.json."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    verify_parser = sub.add_parser(
        "verify", help="check .bin sizes, hashes and ids against meta.json"
    )
    verify_parser.add_argument("folder", help="e.g. data/shakespeare_char")
    args = parser.parse_args(argv)
    problems = verify(args.folder)
    if problems:
        raise PrepareError("; ".join(problems))
    print(f"{args.folder}: OK")


if __name__ == "__main__":
    run_main(main)
