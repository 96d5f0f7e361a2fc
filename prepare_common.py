"""What the data/*/prepare.py lessons share: everything between "the text" and "train.bin".

Read it top to bottom after data/shakespeare_char/prepare.py; each section is one job:

1. errors: a problem the user can fix is one `error: ...` line, never a traceback (run_main)
2. arguments: argparse with one-line usage errors, "did you mean", nanoGPT's --a_b spellings; checked numbers
3. files: read a text strictly, hash a file, write one atomically
4. downloads: pinned remote files, fetched (or copied from NANOGPT_DATA_MIRROR) and checksummed
5. tokenizers: the tiktoken Encoding a BPE lesson encodes with: GPT-2's or a trained one
6. bin files: the dtype of the ids, and writing them (nanoGPT's raw .bin files)
6b. shards: llm.c's header and its shards of 100M tokens (llm.c, modded-nanogpt, build-nanogpt)
7. the folder commit: the outputs replace the old ones as one transaction, under a lock
8. metadata: meta.json (readable, safe) and nanoGPT's meta.pkl
9. documents: OpenWebText (or local files) loaded with `datasets`, split and tokenized
10. verify and show: check a prepared folder; see one block as nanoGPT's get_batch reads it

It is also a command, for any prepared folder:

    python prepare_common.py verify data/shakespeare_char
    python prepare_common.py show data/shakespeare_char --split val --block-size 8
"""

import argparse
import contextlib
import difflib
import errno
import functools
import hashlib
import itertools
import json
import math
import os
import pickle
import re
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
from collections import namedtuple
from pathlib import Path

import numpy as np

# ---------------------------------------------------------------------------------------------
# 1. errors: a problem the user can fix is one line on stderr, exit code 1, no traceback


class PrepareError(Exception):
    """A problem the user can fix: printed as one line, without a traceback, by `run_main`."""


DEBUG_ENV = "NANOGPT_DEBUG"  # NANOGPT_DEBUG=1: an unexpected exception shows its traceback
_IN_RUN_MAIN = []  # the pid of a process whose main runs under run_main (its forks inherit it)


def run_main(main):
    """Run `main()`; a PrepareError becomes one `error: ...` line on stderr and exit code 1.

    Ctrl-C (exit code 130) and SIGTERM (143, raised as `Terminated` for the whole run) say what
    they left: the folder commit's message when they stopped a run staging its outputs; the
    worker processes the run started are ended with it (`end_children`). An OSError no code
    turned into a clearer message still gets one line (with the file it names), and so does, as
    a last resort, any other exception (with what was being read, see `reading`): the traceback
    only with NANOGPT_DEBUG=1.
    """
    # a file name that is not valid UTF-8 must not turn a print into a crash
    sys.stdout.reconfigure(errors="backslashreplace")
    sys.stderr.reconfigure(errors="backslashreplace")
    _IN_RUN_MAIN.append(os.getpid())
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _raise_interrupt)  # recorded too (SIGNALS_RECEIVED)
    try:
        with _sigterm_raises_terminated():
            main()
        if SIGNALS_RECEIVED:  # its exception was lost on the way: the run is still interrupted
            raise Terminated() if SIGNALS_RECEIVED[0] == signal.SIGTERM else KeyboardInterrupt()
    except PrepareError as exc:
        _exit_with(f"error: {exc}", 1)
    except KeyboardInterrupt as exc:
        what = "terminated" if isinstance(exc, Terminated) else "interrupted"
        end_children()
        _exit_with(
            f"error: {str(exc) or interrupted_message(what)}",
            143 if what == "terminated" else 130,
            at_once=True,
        )
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        _exit_with(f"error: {where}{exc.strerror or exc}", 1)
    except Exception as exc:  # the last resort: a case no code foresaw, still one line
        if os.environ.get(DEBUG_ENV) == "1":
            raise
        _exit_with(f"error: {unexpected_message(exc)}", 1)


def _exit_with(line, code, at_once=False):
    """Print the one error line and exit; `at_once` skips the exit handlers (a pool's, which may
    wait forever for a worker that was ended while it sent a result)."""
    print(" ".join(line.split("\n")), file=sys.stderr)
    if at_once:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def unexpected_message(exc):
    """One line for an exception no code turned into a PrepareError: what was being read, what
    went wrong. RecursionError(...) while reading deep.json -> "deep.json: nested too deeply
    (RecursionError); ..."."""
    where = getattr(exc, "nanogpt_reading", None)
    if isinstance(exc, RecursionError):
        what = "nested too deeply to read (RecursionError)"
    else:
        what = f"{type(exc).__name__}: {exc}".rstrip(": ")
    return f"{where + ': ' if where else ''}{what}; set {DEBUG_ENV}=1 to see the traceback"


@contextlib.contextmanager
def reading(path):
    """Name `path` in the error line of any exception that escapes the block (the innermost
    `reading` wins): `with reading(meta_json): ...`."""
    try:
        yield
    except Exception as exc:
        if getattr(exc, "nanogpt_reading", None) is None:
            exc.nanogpt_reading = str(path)
        raise


def end_children():
    """End (SIGKILL) the worker processes this process started with multiprocessing (a pool's
    workers, a Manager): an interrupted run leaves no process behind."""
    for name in ("multiprocessing", "multiprocess"):  # the stdlib's, and datasets'/datatrove's fork
        module = sys.modules.get(name)
        if module is None:
            continue
        with contextlib.suppress(Exception):
            for child in module.active_children():
                with contextlib.suppress(Exception):
                    child.kill()


# ---------------------------------------------------------------------------------------------
# 2. arguments: a bad value is one `error:` line (exit code 2), like every failure


class ArgumentParser(argparse.ArgumentParser):
    """argparse.ArgumentParser as every command of the project parses its options.

    - a usage error is one line, exit code 2: `error: ... (see PROG --help)`
    - a misspelled option is named with the closest one: "--tokenzier" -> did you mean --tokenizer?
      (no abbreviations: "--tok" is not taken for --tokenizer, and so is never a surprise)
    - nanoGPT's underscore spellings answer too: --out_dir is --out-dir, --vocab_size=4096 is
      --vocab-size=4096 (not shown in --help: one spelling is documented)
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        if sys.argv[0].endswith(".py"):  # "see data/shakespeare/prepare.py --help", as typed
            kwargs.setdefault("prog", sys.argv[0])
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        return super().parse_known_args(respelled(self, args), namespace)

    def error(self, message):
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def respelled(parser, args):
    """`args` with each --a_b option (nanoGPT's spelling) as --a-b; an unknown option is an error.

    ["--out_dir=x", "--seed", "1"] -> ["--out-dir=x", "--seed", "1"]; ["--sead", "1"] -> error
    "unrecognized option --sead; did you mean --seed?". Values are left as they are, and so is
    everything after "--". A parser with subcommands leaves their options to their own parsers.
    """
    known = set(parser._option_string_actions)
    commands = [
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    ]
    respelled = []
    for i, token in enumerate(args):
        if token == "--" or (commands and token in commands[0].choices):
            return respelled + args[i:]
        name, equals, value = token.partition("=")
        if name.startswith("--") and " " not in name and name not in known:
            dashed = name.replace("_", "-")
            if dashed not in known:
                parser.error(unknown_option(name, known))
            token = dashed + equals + value
        respelled.append(token)
    return respelled


def unknown_option(name, known):
    """ "--tokenzier" -> "unrecognized option --tokenzier; did you mean --tokenizer?" """
    long_options = sorted(option for option in known if option.startswith("--"))
    close = difflib.get_close_matches(name.replace("_", "-"), long_options, n=1, cutoff=0.6)
    return f"unrecognized option {name}" + (f"; did you mean {close[0]}?" if close else "")


def fraction(text):
    """A number strictly between 0 and 1: "0.0005" -> 0.0005; "nan", "inf", "0", "1" -> error."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and 0 < value < 1):
        raise argparse.ArgumentTypeError(f"{text} is not a number strictly between 0 and 1")
    return value


def _whole_number(text):
    """The integer `text` names: "12" -> 12; "1.5", "x" -> error."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def seed(text):
    """A random seed numpy accepts, 0 to 2**32 - 1: "2357" -> 2357; "-1" -> error."""
    value = _whole_number(text)
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 2**32 - 1")
    return value


def positive_int(text):
    """A whole number of at least 1 (processes, workers): "4" -> 4; "0" -> error."""
    value = _whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is less than 1")
    return value


# ---------------------------------------------------------------------------------------------
# 3. files: read strictly, hash, and never leave a half-written output


def read_text(path):
    """Read a whole file as strict UTF-8; a bad byte is an error that gives its offset."""
    path = Path(path)
    with contextlib.suppress(OSError):  # a missing file is reported below, when it is read
        if not stat.S_ISREG(path.stat().st_mode) and not path.is_dir():
            # a pipe would block (or be read once, then hashed empty): refuse it before opening
            raise PrepareError(
                f"{path} is not a regular file (a pipe or a device?); save the text to a file "
                f"and pass that"
            )
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


def sha256_file(path):
    """The hex sha256 of a file's bytes, read 1 MB at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


METADATA_LIMIT = 1 << 28  # 256 MB: more than any meta.json, meta.pkl or work record we write


def read_metadata(path, limit=METADATA_LIMIT):
    """The bytes of a small file we wrote (meta.json, meta.pkl, a work record), read safely.

    A FIFO would block forever and /dev/zero never ends: the file must be a regular one (checked
    on the open descriptor, opened without waiting), and no larger than `limit` bytes.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise PrepareError(f"{path} does not exist") from None
    except OSError as exc:
        raise PrepareError(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a pipe or a device"
            raise PrepareError(f"{path} is not a regular file ({kind}); remove it and run again")
        if info.st_size > limit:
            raise PrepareError(f"{path} has {info.st_size:,} bytes, more than {limit:,}: not ours")
        try:
            data = file.read(limit + 1)
        except OSError as exc:
            raise PrepareError(f"cannot read {path}: {exc.strerror}") from None
    if len(data) > limit:
        raise PrepareError(f"{path} has more than {limit:,} bytes: not ours")
    return data


def load_json(data, path):
    """json.loads of a file's bytes; a file that is not JSON, or nested too deeply for Python's
    parser (20,000 levels), is a PrepareError naming it."""
    try:
        return json.loads(data)
    except UnicodeDecodeError as exc:
        raise PrepareError(f"{path} is not UTF-8 (byte {exc.start:,}): not valid JSON") from None
    except json.JSONDecodeError as exc:
        raise PrepareError(f"{path} is not valid JSON ({exc})") from None
    except RecursionError:
        raise PrepareError(f"{path} is nested too deeply to be read as JSON") from None


def json_kind(value):
    """The JSON name of a value's type: None -> "null", {} -> "object", [] -> "array"."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside `path`; rename it into place only if the block succeeds.

    A crash, an error or Ctrl-C inside the block leaves the previous `path` (or none), never a
    half-written file that looks valid. The temporary name is in the same folder, so the rename
    is atomic; hidden, pid-tagged and unpredictable, and created exclusively (O_EXCL, no link
    followed), so it never looks like a finished output, two runs don't collide, a link planted
    at a guessed name is never written through, and a leftover is provably ours (TEMPORARY_TAG):
    train.bin -> .train.bin.1234.nanogpt-k3j9x_q2.tmp
    """
    path = Path(path)
    fd, name = tempfile.mkstemp(
        prefix=f".{path.name}.{os.getpid()}.{TEMPORARY_TAG}", suffix=".tmp", dir=path.parent
    )
    os.close(fd)
    tmp = Path(name)
    try:
        with contextlib.suppress(OSError):  # mkstemp's 0600, made what a plain open would make
            os.chmod(tmp, 0o666 & ~_umask())
        yield tmp
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _umask():
    """The process's umask (os.umask can only be read by setting it, and is put back at once)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ---------------------------------------------------------------------------------------------
# 4. downloads: known remote files, downloaded once and checked against a pinned sha256
#
# The classic failure this prevents is an HTML error page saved as input.txt: whatever server
# answered, the bytes are renamed into place only if their sha256 is the pinned one.


MIRROR_ENV = "NANOGPT_DATA_MIRROR"
CONNECT_TIMEOUT, READ_TIMEOUT = 10, 60  # seconds

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
MIRROR_LAYOUT = ", ".join(
    f.mirror_path for f in (TINY_SHAKESPEARE, GPT2_VOCAB_BPE, GPT2_ENCODER_JSON)
)


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
    return _copy_verified(Path(mirror) / remote.mirror_path, remote.sha256, dest)


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
        except (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema) as exc:
            raise PrepareError(
                f"{url} is not a valid URL ({exc}); check {MIRROR_ENV} if it is set"
            ) from None
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


def _copy_verified(source, expected_sha256, dest):
    """Copy a local file (a mirror's copy) to `dest` with the same checks as a download."""
    source = Path(source)
    if not source.is_file():
        raise PrepareError(
            f"mirror file {source} does not exist; {MIRROR_ENV} should name a folder laid out "
            f"as {MIRROR_LAYOUT}, or be unset to download from the origin"
        )

    def blocks():
        with open(source, "rb") as f:
            yield from iter(lambda: f.read(1 << 20), b"")

    return _save_verified(blocks(), expected_sha256, dest, source, source.stat().st_size)


def _save_verified(blocks, expected_sha256, dest, source, total_bytes):
    """Write an iterable of byte blocks to `dest` via a temp name, if their sha256 matches.

    `total_bytes` is the size the source announced (None if unknown): fewer bytes is an error.
    """
    digest = hashlib.sha256()
    received = 0
    with atomic_path(dest) as tmp:
        with open(tmp, "wb") as f:
            for block in blocks:
                f.write(block)
                digest.update(block)
                received += len(block)
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
    return Path(dest)


# ---------------------------------------------------------------------------------------------
# 5. tokenizers: the tiktoken Encoding a BPE lesson encodes with, GPT-2's or a trained one


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
        with reading(path):  # anything else it raises names the file too (run_main)
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
    punctuation are in no pretoken, so they would be lost without a word. The check costs one
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
    from bpe.patterns import first_uncovered

    position = first_uncovered(encoding._pat_str, text)
    character = (
        "a character" if position is None else f"character {position:,} ({text[position]!r})"
    )
    raise PrepareError(
        f"{where}: {character} is in no pretoken of the pattern "
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
    if tokenizer["kind"] != "bpe":
        return False
    from bpe.patterns import PATTERNS

    return encoding._pat_str not in PATTERNS.values()


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


# ---------------------------------------------------------------------------------------------
# 6. bin files: raw token ids, one dtype, no header (what nanoGPT's get_batch memory-maps)


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
    """Refuse ids that are negative, >= vocab_size or beyond `dtype`, before any cast wraps them.

    [3, 70] with vocab_size 65 -> error "ids: token id 70 at position 1 is >= vocab_size 65"
    """
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
        if bad_id < 0:
            reason = "negative"
        elif bad_id >= vocab_size:
            reason = f">= vocab_size {vocab_size:,}"
        else:
            reason = f"beyond {np.dtype(dtype).name}"
        raise PrepareError(f"{where}: token id {bad_id:,} at position {bad_index:,} is {reason}")


def write_bin(path, id_batches, dtype, vocab_size, expected_tokens=None, desc=None):
    """Stream an iterable of id arrays into `path` as raw `dtype` values; return the token count.

    [[0, 1, 2], [64, 63]] -> a 10-byte file of uint16 0 1 2 64 63. Memory stays at one batch;
    an empty split gives an empty file. Every batch is checked with `check_ids` before it is
    cast; the file appears under its name only when complete and its size checked. `desc`
    shows a progress bar with that title.
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
                for batch in id_batches:
                    batch = np.asarray(batch)
                    check_ids(batch, vocab_size, dtype, where=path.name)
                    f.write(np.ascontiguousarray(batch, dtype=dtype))  # tofile's errors lack errno
                    written += batch.size
                    if bar is not None:
                        bar.update(batch.size)
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


# ---------------------------------------------------------------------------------------------
# 6b. shards: the files of llm.c, modded-nanogpt and build-nanogpt (data/fineweb, --format llmc)
#
# Past one .bin file per split, the small-GPT world cuts the token stream into shards of
# `shard_size` tokens (llm.c's default: 100M), each one a file that a trainer can map on its own.
# An llm.c shard (llm.c's train_gpt2, modded-nanogpt's speedrun) is a header, then the tokens:
#
#     bytes 0..1023    256 little-endian int32: [20240520, 1, number of tokens, 0, 0, ..., 0]
#                                                  magic     version
#     bytes 1024..     the tokens, uint16
#
# and for a vocabulary past 65,536 ids (llm.c's llama-3 files): magic 20240801, version 7, uint32.
# The readers check the magic, the version, and that the file holds exactly header[2] tokens.
# build-nanogpt's shards are the same tokens saved by np.save: numpy's .npy header, no llm.c one.
#
# The shards are the stream cut every `shard_size` tokens: every shard but the last is full, a
# document may straddle two (or more) shards, and the last shard holds the rest (never empty).
# llm.c's fineweb.py says it as "append the document while `count + len(doc) < shard_size`;
# otherwise top the shard up with the document's first tokens, write it, and start the next one
# with the rest", which writes the same bytes.

LLMC_HEADER_INTS = 256
LLMC_MAGIC_VERSION = {np.dtype(np.uint16): (20240520, 1), np.dtype(np.uint32): (20240801, 7)}
SHARD_FORMATS = {"llmc": ".bin", "npy": ".npy"}
DEFAULT_SHARD_SIZE = 10**8  # tokens per shard: llm.c's --shard_size, build-nanogpt's int(1e8)


def shard_dtype(vocab_size):
    """uint16 ids up to 65,536 (llm.c's gpt-2 files); uint32 beyond (its llama-3 files)."""
    if vocab_size <= 2**16:
        return np.dtype(np.uint16)
    print(
        f"warning: vocab_size {vocab_size:,} does not fit uint16, so the shards are llm.c's "
        f"uint32 variant (magic 20240801, version 7: read by llm.c's train_llama3.py); "
        f"modded-nanogpt, llm.c's train_gpt2 and build-nanogpt read uint16 shards only",
        file=sys.stderr,
    )
    return np.dtype(np.uint32)


def llmc_header(num_tokens, dtype):
    """The 256 int32 that start an llm.c shard: 1,000 uint16 tokens -> [20240520, 1, 1000, 0, ...]."""
    if not 0 <= num_tokens < 2**31:
        raise PrepareError(f"an llm.c shard holds fewer than 2**31 tokens, not {num_tokens:,}")
    header = np.zeros(LLMC_HEADER_INTS, dtype="<i4")
    header[0], header[1] = LLMC_MAGIC_VERSION[np.dtype(dtype)]
    header[2] = num_tokens
    return header


def write_shard(path, tokens, shard_format):
    """One shard file, atomically: llm.c's header and the tokens, or np.save's .npy."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        if shard_format == "llmc":
            f.write(llmc_header(len(tokens), tokens.dtype).tobytes())
            f.write(tokens.astype(tokens.dtype.newbyteorder("<"), copy=False).tobytes())
        else:
            np.save(f, tokens)  # what build-nanogpt's np.save(filename, tokens) writes


def fill_shards(id_batches, shard_size, dtype):
    """Cut a stream of id arrays into shards: yield each full shard, then the rest if any.

    [[1, 2, 3], [4, 5]] (any batching of the same stream), shard_size 2 -> [1, 2], [3, 4], [5].
    The buffer is reused: use each shard before asking for the next. Memory: one shard.
    """
    buffer = np.empty(shard_size, dtype)
    count = 0
    for ids in id_batches:
        while count + len(ids) >= shard_size:  # the shard is full: llm.c writes it now
            room = shard_size - count
            buffer[count:] = ids[:room]
            yield buffer
            ids, count = ids[room:], 0
        buffer[count : count + len(ids)] = ids
        count += len(ids)
    if count:
        yield buffer[:count]


def llmc_names(prefix, split=None, first_index=0):
    """The shards' (split, file stem), in order. llm.c's rule, split None: shard 0 is val, the
    others train -> ("val", "edu_fineweb_val_000000"), ("train", "edu_fineweb_train_000001"), ...
    A split given names them all after it: ("train", "openwebtext_train_000003"), ..."""
    for index in itertools.count(first_index):
        name = split or ("val" if index == 0 else "train")
        yield name, f"{prefix}_{name}_{index:06d}"


def write_shards(out, id_batches, names, shard_size, dtype, vocab_size, shard_format, say=True):
    """Write the stream `id_batches` as shards in `out`, named by `names` (see llmc_names).

    Returns meta.json's record of each: [{"file", "split", "tokens", "sha256"}, ...]. Every id is
    checked against vocab_size before it is written. say: print a line for each shard (a task
    writing some of them in parallel with others leaves that to its commit, in order).
    """
    shards = []
    for tokens, (split, stem) in zip(fill_shards(id_batches, shard_size, dtype), names):
        path = Path(out) / f"{stem}{SHARD_FORMATS[shard_format]}"
        check_ids(tokens, vocab_size, dtype, where=path.name)
        write_shard(path, tokens, shard_format)
        shards.append(
            {"file": path.name, "split": split, "tokens": len(tokens), "sha256": sha256_file(path)}
        )
        if say:
            print(f"wrote {path.name}: {len(tokens):,} tokens")
    return shards


def write_split_shards(out, prefix, split_batches, shard_size, dtype, vocab_size):
    """Each split's stream of ids cut into llm.c shards named after it, val first (llm.c's shard
    0 is val): {"val": ..., "train": ...} -> openwebtext_val_000000.bin, openwebtext_train_000001.bin, ..."""
    shards = []
    for split in ("val", "train"):
        names = llmc_names(prefix, split, first_index=len(shards))
        shards += write_shards(
            out, split_batches[split], names, shard_size, dtype, vocab_size, "llmc"
        )
    return shards


def read_shard(path, shard_format, dtype):
    """A shard's tokens (memory-mapped), after the readers' checks; a PrepareError if one fails."""
    path = Path(path)
    if shard_format == "npy":
        try:
            tokens = np.load(path, mmap_mode="r")
        except (ValueError, EOFError) as exc:
            raise PrepareError(f"{path} is not a .npy file numpy can read ({exc})") from None
        if tokens.dtype != dtype or tokens.ndim != 1:
            raise PrepareError(
                f"{path} holds {tokens.dtype} of shape {tokens.shape}, not {dtype} ids"
            )
        return tokens
    size = path.stat().st_size
    if size < LLMC_HEADER_INTS * 4:
        raise PrepareError(f"{path} has {size:,} bytes: shorter than llm.c's 1,024-byte header")
    header = np.fromfile(path, dtype="<i4", count=LLMC_HEADER_INTS)
    magic, version = LLMC_MAGIC_VERSION[dtype]
    if (int(header[0]), int(header[1])) != (magic, version):
        raise PrepareError(
            f"{path} starts with magic {header[0]}, version {header[1]}; llm.c's {dtype.name} "
            f"shards start with {magic}, {version}"
        )
    if header[2] <= 0:
        raise PrepareError(f"{path}: its header says {header[2]:,} tokens (llm.c needs at least 1)")
    expected = LLMC_HEADER_INTS * 4 + int(header[2]) * dtype.itemsize
    if size != expected:
        raise PrepareError(
            f"{path} has {size:,} bytes; its header says {header[2]:,} tokens: {expected:,} bytes"
        )
    return np.memmap(path, dtype=dtype.newbyteorder("<"), mode="r", offset=LLMC_HEADER_INTS * 4)


# ---------------------------------------------------------------------------------------------
# 7. the folder commit: a prepared folder changes as one transaction, like a git commit
#
# A prepared folder changes as one transaction, like a git commit: `output_folder`.
#
#     with output_folder(out_dir) as out:        # out_dir locked; `out` is an empty staging folder
#         write_bin(out / "train.bin", ...)      # every output is written into `out`,
#         write_json(out / "meta.json", ...)     # meta.json (the folder's commit record) included
#     # leaving the block without an error committed them: out_dir holds the new, complete set
#
# meta.json is the commit record: a folder with a meta.json is complete and consistent, because
# meta.json is removed before the first data file is replaced and written back last. The exact
# order, and what a crash (SIGKILL, power loss) at each step leaves:
#
# 1. lock: an advisory lock (`fcntl.lockf`, LOCK_EX | LOCK_NB; msvcrt's on Windows) on `out_dir/.prepare.lock`, then
#    our pid and command are written into it. If another process holds it, `FolderBusy` (a
#    PrepareError) names it at once: a second run into a busy folder stops; it does not wait. The
#    OS drops the lock when its holder dies, however it dies. A POSIX lock rather than `flock`:
#    worker processes forked by datasets do not inherit it, so one orphaned by a SIGKILL cannot
#    keep the folder locked. The lock file is removed as the run ends, while still locked (or
#    after, on Windows, which removes no file another run has open); a run that locked a file
#    no longer at the path, so removed, locks the one there now instead (`_lock_file`).
#    A run that fails removes the output folder again if it created it and it holds nothing.
#    A run whose commit comes later in the same process takes the lock first with `folder_lock`
#    (the datatrove engine on this machine); its `output_folder` then goes on under it.
# 2. clean: what killed runs left (`.prepare.<pid>.tmp/` staging folders holding our marker file
#    STAGING_MARKER, and atomic_path's `.<name>.<pid>.nanogpt-<random>.tmp` files) is removed;
#    holding the lock proves their writers are gone. Nothing else is: a file or folder of the
#    user's that merely looks like a temporary name stays.
# 3. stage: the block writes into `out_dir/.prepare.<pid>.tmp/`. An error or an interrupt
#    (Ctrl-C, SIGTERM) removes it; a crash leaves it beside the old outputs, which are untouched
#    (`verify` passes and warns about the leftover; the next run removes it).
# 4. check: meta.json must be staged; no file to be replaced may be a folder; every staged file
#    is fsynced. Nothing in out_dir has changed yet.
# 5. uncommit: the old meta.json is removed and out_dir fsynced. From here to step 7 the folder
#    has no meta.json: `verify` reports it incomplete in one line.
# 6. replace: each staged data file is renamed into place (`os.replace`, atomic per file); an
#    output of the old set that this run did not write (one of OUTPUT_NAMES, e.g. a meta.pkl left
#    by a run with another tokenizer) is removed; out_dir is fsynced.
# 7. commit: meta.json is renamed into place and out_dir fsynced: the new set is complete.
# 8. the staging folder is removed and the lock released.
#
# For the fault tests only: with NANOGPT_DATA_PAUSE_AT=<step> in the environment, the process stops
# itself (SIGSTOP) at that step ("staged": step 4 done; "uncommitted": step 5 done; "replaced": the
# first data file renamed; "committed": step 7 done), so that a test can SIGKILL it exactly there.
#
# Ctrl-C and SIGTERM are held back during steps 5-7 (a few renames), so an interrupt lands before
# them (old set kept) or after (new set complete), never between; only a crash can, and then the
# folder has no meta.json. An interrupt raises KeyboardInterrupt (`Terminated` for SIGTERM) whose
# message says truthfully what was left.


PAUSE_ENV = "NANOGPT_DATA_PAUSE_AT"  # tests only: see the steps above
LOCK_NAME = ".prepare.lock"
WINDOWS_LOCK_OFFSET = 1 << 30  # the byte msvcrt locks: past the pid record, which stays readable
RECORD_NAME = "meta.json"
# The files a run owns: after a commit the folder holds exactly the ones this run wrote.
OUTPUT_NAMES = ("train.bin", "val.bin", "meta.pkl", RECORD_NAME)
# Every temporary name the project writes: ".prepare.<pid>.tmp" (a staging folder) and
# ".<name>.<pid>.<random>.tmp" (a file being written beside its final name, see atomic_path).
# and every shard (section 6b): a shard set from an earlier run is replaced as a whole
SHARD_NAME = re.compile(r"^.+_(val|train)_\d{6}\.(bin|npy)$")
# In the name of every temporary file of atomic_path: only such a file is a leftover of ours.
TEMPORARY_TAG = "nanogpt-"
TEMPORARY_NAME = re.compile(r"^\.(.+)\.\d+(\.[^.]+)?\.tmp$")  # group 1: the final name
STAGING_NAME = re.compile(r"^\.prepare\.\d+\.tmp$")
OUR_TEMPORARY_FILE = re.compile(rf"^\.(.+)\.\d+\.{TEMPORARY_TAG}[A-Za-z0-9_]+\.tmp$")
# Made first in every staging folder: only a folder holding it is a leftover of ours.
STAGING_MARKER = ".nanogpt-staging"


# The folders this process has committed, or begun to: what an interrupt message may say.
COMMITTED, UNCOMMITTED = [], []
# The folders whose lock this process holds -> our pid (a POSIX lock is dropped when its process
# closes any descriptor of the file, so we must never open it a second time; a forked child
# inherits this dict but not the lock, hence the pid).
_HELD = {}


def interrupted_message(what="interrupted"):
    """What to tell the user about the output folders when an interrupt ends the program."""
    if COMMITTED:
        return f"{what} after the new outputs in {', '.join(map(str, COMMITTED))} were complete"
    return f"{what} before any output folder was changed"


class FolderBusy(PrepareError):
    """Another live process holds the folder's lock."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that the same cleanup runs (exit code 143, not 130)."""


@contextlib.contextmanager
def output_folder(out_dir):
    """Lock `out_dir` (created if needed), yield a staging folder, commit it if the block succeeds.

    See the steps above for the order of operations and what a crash leaves. A process
    that holds out_dir's lock already (see `folder_lock`) keeps it and does not lock again.
    """
    with folder_lock(out_dir) as folder:
        _remove_leftovers(folder)
        staging = folder / f".prepare.{os.getpid()}.tmp"
        _create_staging(staging)
        try:
            with _sigterm_raises_terminated():
                yield staging
                _commit(staging, folder)
        except OSError as exc:  # no space, quota, file too large, I/O error...
            raise PrepareError(_failure_message(exc, folder)) from None
        except KeyboardInterrupt as exc:
            what = "terminated" if isinstance(exc, Terminated) else "interrupted"
            if folder in COMMITTED:  # held back during the commit, raised as it ended
                raise type(exc)(f"{what} after the new outputs in {folder} were complete") from None
            if folder in UNCOMMITTED:  # not held back (not the main thread): between the renames
                raise type(exc)(
                    f"{what} while the outputs in {folder} were replaced: the folder is "
                    f"incomplete (no {RECORD_NAME}); run again"
                ) from None
            raise type(exc)(
                f"{what}; the outputs in {folder} were left as they were (nothing was replaced)"
            ) from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def folder_lock(out_dir):
    """Hold `out_dir`'s lock (step 1; the folder is created if needed) for the block; yield it.

    For a run whose commit comes later in the same process, such as the datatrove engine on
    this machine: it holds the lock from the start, and its last task's `output_folder` goes on
    under it. Re-entrant: in a process that holds the lock already, the block just runs (a
    second descriptor of the lock file, once closed, would drop our POSIX lock).

    A block that fails leaves no folder this call created: once the lock file is gone, an empty
    one is removed again, with the empty folders above it that it created too.
    """
    created = _missing_folders(Path(out_dir))
    folder = _make_folder(Path(out_dir))
    if _HELD.get(folder.resolve()) == os.getpid():
        yield folder
        return
    try:
        with _folder_lock(folder):
            yield folder
    except BaseException:
        for path in created:  # out_dir first, then up
            try:
                os.rmdir(path)  # only an empty folder: nothing a user or another run put there
            except OSError:
                break
        raise


def leftover_temporaries(folder):
    """What killed runs left in `folder` (names, sorted): staging folders .prepare.<pid>.tmp that
    hold our marker, and files of atomic_path (.<name>.<pid>.nanogpt-<random>.tmp); nothing of
    the user's is taken for one, however it is named."""

    def ours(entry):
        if entry.is_dir(follow_symlinks=False):
            return STAGING_NAME.match(entry.name) and os.path.lexists(
                os.path.join(entry.path, STAGING_MARKER)
            )
        return entry.is_file(follow_symlinks=False) and OUR_TEMPORARY_FILE.match(entry.name)

    with contextlib.suppress(OSError):
        return sorted(entry.name for entry in os.scandir(folder) if ours(entry))
    return []


def lock_holder(folder):
    """Who holds `folder`'s lock, "pid N: command", if another live process does; else None."""
    if _HELD.get(Path(folder).resolve()) == os.getpid() or not Path(folder).is_dir():
        # ours: opening and closing the lock file again would drop our POSIX lock
        return None
    try:
        fd = _open_lock(Path(folder) / LOCK_NAME, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        return None if _try_lock(fd, exclusive=False) else _describe_holder(fd)
    finally:
        os.close(fd)  # closing drops our own shared lock, if we got it


# ---------------------------------------------------------------------------------------------
# the steps


def _missing_folders(folder):
    """The folders `_make_folder` is about to create, deepest first: a/b/c with only a -> [a/b/c, a/b]."""
    missing = []
    for path in [folder, *folder.parents]:
        if os.path.lexists(path):
            break
        missing.append(path)
    return missing


def _make_folder(folder):
    if folder.exists() and not folder.is_dir():
        raise PrepareError(f"--out-dir {folder} is a file, not a folder; choose another path")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PrepareError(
            f"cannot create the output folder {folder}: {exc.strerror}; choose another --out-dir"
        ) from None
    return folder


@contextlib.contextmanager
def _folder_lock(folder):
    path = folder / LOCK_NAME
    fd = _lock_file(folder, path)
    try:
        command = " ".join([Path(sys.executable).name, *sys.argv])
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()} {command}\n".encode(errors="backslashreplace"))
        _HELD[folder.resolve()] = os.getpid()
        try:
            yield
        finally:
            del _HELD[folder.resolve()]
            if os.name != "nt" and _same_file(fd, path):
                os.unlink(path)  # still locked: a run that opened it meanwhile sees it gone
    finally:
        os.close(fd)  # releases the lock
        if os.name == "nt":  # Windows removes no file that is open: one another run opened stays
            with contextlib.suppress(OSError):
                os.unlink(path)


def _lock_file(folder, path):
    """Open `path` and lock it: its descriptor, or FolderBusy naming the run that holds it.

    The file locked must still be the one at `path`: a run that ends removes its lock file while
    it holds it, so a run that opened the file just before, and locks it just after, holds a
    lock nobody else will see; it opens the path again, to lock the file there now.
    """
    while True:
        try:
            fd = _open_lock(path, os.O_RDWR | os.O_CREAT)  # no link, no FIFO: a regular file
        except OSError as exc:
            raise PrepareError(
                f"cannot write into the output folder {folder}: {exc.strerror}; "
                f"choose a writable --out-dir"
            ) from None
        try:
            if not _try_lock(fd):
                raise FolderBusy(
                    f"{folder} is being prepared by another run ({_describe_holder(fd)}); "
                    f"wait for it to finish, or choose another --out-dir"
                ) from None
            if _same_file(fd, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _same_file(fd, path):
    """Whether the open file `fd` is the one at `path` (the same device and inode)."""
    try:
        at_path = os.lstat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (at_path.st_dev, at_path.st_ino) == (opened.st_dev, opened.st_ino)


def _open_lock(path, flags):
    """Open the lock file: never through a symlink (O_NOFOLLOW; an lstat check where there is
    none), never blocking (a FIFO), and only a regular file; else a PrepareError naming it."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise PrepareError(_not_a_lock(path, "a symbolic link"))
    nofollow, nonblock = getattr(os, "O_NOFOLLOW", 0), getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | nofollow | nonblock, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PrepareError(_not_a_lock(path, "a symbolic link")) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise PrepareError(
            _not_a_lock(path, "a folder" if stat.S_ISDIR(mode) else "a FIFO or a device")
        )
    return fd


def _not_a_lock(path, what):
    return (
        f"{path} is {what}, not the regular file a lock must be: nothing was written; remove "
        f"it (it is not one this project made) and run again"
    )


def _try_lock(fd, exclusive=True):
    """Lock the open lock file `fd` without waiting: True, or False if another process holds it.

    POSIX: `fcntl.lockf`, which the OS drops when its holder dies. Windows has no fcntl:
    `msvcrt.locking` of one byte far past the record (the record stays readable), likewise
    dropped by the OS; a shared lock there is only a test, released at once.
    """
    try:
        import fcntl
    except ImportError:
        import msvcrt

        os.lseek(fd, WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        if not exclusive:
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return True
    try:
        fcntl.lockf(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            return False
        raise
    return True


def _describe_holder(fd):
    os.lseek(fd, 0, os.SEEK_SET)
    record = os.read(fd, 4096).decode(errors="replace").strip()
    pid, _, command = record.partition(" ")
    return f"pid {pid}: {command}" if pid.isdigit() else "a process that has not said which"


def _remove_leftovers(folder):
    names = leftover_temporaries(folder)
    for name in names:
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    if names:
        print(f"removed {len(names)} temporary file(s) left in {folder} by an interrupted run")


def _create_staging(staging):
    try:
        staging.mkdir()
        os.close(os.open(staging / STAGING_MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except OSError as exc:
        raise PrepareError(
            f"cannot write into the output folder {staging.parent}: {exc.strerror}; "
            f"choose a writable --out-dir"
        ) from None


def _commit(staging, folder):
    staged = sorted(
        entry.name
        for entry in os.scandir(staging)
        if not TEMPORARY_NAME.match(entry.name) and entry.name != STAGING_MARKER
    )
    if RECORD_NAME not in staged:
        raise PrepareError(f"nothing to commit in {folder}: no {RECORD_NAME} was written")
    owned = [*OUTPUT_NAMES, *sorted(e.name for e in os.scandir(folder) if SHARD_NAME.match(e.name))]
    stale = [name for name in owned if name not in staged and (folder / name).exists()]
    for name in staged + stale:
        target = folder / name
        if target.is_dir() and not target.is_symlink():
            raise PrepareError(
                f"{target} is a folder where the output {name} goes; move it away and run again "
                f"(nothing in {folder} was changed)"
            )
    for name in staged:
        _fsync_path(staging / name)
    data_files = [name for name in staged if name != RECORD_NAME]
    _pause_if_asked("staged")
    with _signals_held():
        try:
            UNCOMMITTED.append(folder)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / RECORD_NAME)
            _fsync_path(folder)
            _pause_if_asked("uncommitted")
            for name in data_files:
                os.replace(staging / name, folder / name)
                _pause_if_asked("replaced")
            for name in stale:
                os.unlink(folder / name)
            _fsync_path(folder)
            os.replace(staging / RECORD_NAME, folder / RECORD_NAME)
            _fsync_path(folder)
            COMMITTED.append(folder)
            _pause_if_asked("committed")
        except OSError as exc:
            raise PrepareError(
                f"cannot replace the outputs in {folder} ({exc.strerror}: {exc.filename}); "
                f"the folder is now incomplete (no {RECORD_NAME}): fix the cause and run again"
            ) from None
    for name in stale:
        print(f"removed {folder / name}, left by an earlier run that this one does not replace")


def _failure_message(exc, folder):
    """An OSError while the outputs were staged, as one line: what, where, and that nothing changed.

    OSError(ENOSPC, ...) -> "cannot finish the outputs in out: No space left on device; nothing
    was replaced (the previous outputs are whole): free some space and run again"
    """
    reason = exc.strerror or str(exc)
    if exc.filename:  # a staged name like .prepare.12.tmp/.train.bin.12.tmp -> train.bin
        name = TEMPORARY_NAME.sub(r"\1", Path(exc.filename).name)
        reason += f" ({name})"
    hint = {
        errno.ENOSPC: "free some space and run again",
        errno.EDQUOT: "free some space (your disk quota is full) and run again",
        errno.EFBIG: "the file size limit (ulimit -f) is too small for these outputs",
    }.get(exc.errno, "fix the cause and run again")
    return (
        f"cannot finish the outputs in {folder}: {reason}; nothing was replaced "
        f"(the previous outputs are whole): {hint}"
    )


def _pause_if_asked(step):
    if os.environ.get(PAUSE_ENV) == step:
        os.kill(os.getpid(), signal.SIGSTOP)


def _fsync_path(path):
    if os.name == "nt" and os.path.isdir(path):
        return  # Windows opens no folder to fsync it (NTFS journals the renames themselves)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _signals_held():
    """Hold back Ctrl-C and SIGTERM for the block; one that arrived meanwhile is raised after."""
    # Python runs a signal's handler in the main thread whichever thread the kernel gave the
    # signal to (numpy's OpenBLAS threads do not block it), so a signal mask is not enough: the
    # handlers themselves only note what arrives meanwhile, and it is raised after the block.
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; this one's interrupts are not held back
        return
    arrived = []
    held = [n for n in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(n) != signal.SIG_IGN]
    handlers = {number: signal.signal(number, lambda n, _: arrived.append(n)) for number in held}
    try:
        yield
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
    if arrived:
        raise Terminated() if arrived[0] == signal.SIGTERM else KeyboardInterrupt()


@contextlib.contextmanager
def _sigterm_raises_terminated():
    """SIGTERM raises Terminated in this process (its forked workers keep the default).

    Only the main thread may set a signal handler: in another one (a task run by a thread of
    some cluster executor) SIGTERM keeps its handler.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _raise_terminated(_signum, _frame):
    SIGNALS_RECEIVED.append(signal.SIGTERM)
    raise Terminated()


def _raise_interrupt(_signum, _frame):
    SIGNALS_RECEIVED.append(signal.SIGINT)
    raise KeyboardInterrupt()


# Ctrl-C and SIGTERM as they arrive. The exception a handler raises is lost if it lands in a
# __del__ or a weakref callback (Python prints "Exception ignored" and goes on): run_main then
# still ends the run as interrupted, after it (see run_main).
SIGNALS_RECEIVED = []


def _sigterm_default_in_forked_child():
    """A worker forked while SIGTERM raises Terminated (datasets' map workers) dies of SIGTERM,
    and a worker forked under run_main ignores Ctrl-C (its main process ends it).

    A Python signal handler runs between bytecodes only: a SIGTERM that lands just before the
    worker blocks in a C call (waiting for the lock of its pool's task queue) is never handled,
    the worker lives on, and Pool.terminate, which datasets calls when a worker raised, waits for
    it forever. The default action ends the worker in the kernel, at once.
    """
    if signal.getsignal(signal.SIGTERM) is _raise_terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _IN_RUN_MAIN and threading.current_thread() is threading.main_thread():
        # Ctrl-C reaches the whole group: a worker (a pool's, datatrove's) leaves it to the
        # main process, which ends its workers (end_children) and says one line
        signal.signal(signal.SIGINT, signal.SIG_IGN)


if hasattr(os, "register_at_fork"):  # not on Windows, where no worker is forked
    os.register_at_fork(after_in_child=_sigterm_default_in_forked_child)


# ---------------------------------------------------------------------------------------------
# 8. metadata: meta.json beside the .bin files (readable, safe) and nanoGPT's meta.pkl


META_FORMAT_VERSION = 1
META_PKL = "meta.pkl"  # nanoGPT's train.py and sample.py pickle.load it whenever it exists
VERIFY_SHOWS_CHARS = 200  # how much of val `verify` decodes and prints


def write_meta(
    out_dir,
    *,
    tokenizer,
    dtype,
    source,
    split,
    options,
    script,
    split_tokens=None,
    shards=None,
    shard_format=None,
):
    """Write meta.json: everything needed to read, check and reproduce the .bin files.

    tokenizer: {"kind": "char"|"tiktoken"|"bpe", "name", "vocab_size", "eot_id", "sha256", ...};
    split_tokens: {"train": 1003854, "val": 111540}; source: {"path", "sha256", ...}.
    A folder of shards (section 6b) gives instead shards, write_shards' list ([{"file", "split",
    "tokens", "sha256"}, ...]), and shard_format ("llmc" or "npy"); "splits" then holds each
    split's number of tokens and of shards. meta.pkl, if one is in out_dir already (write it
    first), is recorded by its sha256; none is recorded as null: nanoGPT reads it, so the commit
    record covers it too.
    """
    out_dir = Path(out_dir)
    meta_pkl = out_dir / META_PKL
    if shards is None:  # nanoGPT's: one .bin file per split
        splits = {
            name: {
                "file": f"{name}.bin",
                "tokens": count,
                "sha256": sha256_file(out_dir / f"{name}.bin"),
            }
            for name, count in split_tokens.items()
        }
    else:
        splits = {}
        for shard in shards:
            totals = splits.setdefault(shard["split"], {"tokens": 0, "shards": 0})
            totals["tokens"] += shard["tokens"]
            totals["shards"] += 1
    meta = {
        "format_version": META_FORMAT_VERSION,
        "created_by": script,
        "tokenizer": tokenizer,
        "dtype": np.dtype(dtype).name,
        "splits": splits,
        "meta_pkl": {"file": META_PKL, "sha256": sha256_file(meta_pkl)}
        if meta_pkl.is_file()
        else None,
        "source": source,
        "split": split,
        "options": options,
    }
    if shards is not None:
        meta["format"], meta["shards"] = shard_format, shards
    bad = _first_non_utf8(meta)
    if bad is not None:  # a name from the file system that is not UTF-8
        raise PrepareError(
            f"the file name {bad.encode('utf-8', 'surrogateescape')!r} is not valid UTF-8, so "
            f"meta.json cannot record it; rename the file"
        )
    data = (json.dumps(meta, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    with atomic_path(out_dir / "meta.json") as tmp:
        tmp.write_bytes(data)
    return meta


def _first_non_utf8(value):
    """The first string in a JSON-like value that UTF-8 cannot encode (a lone surrogate), or None.

    {"path": "caf\\udce9.txt"} -> "caf\\udce9.txt" (Python's name for the file name bytes caf\\xe9.txt)
    """
    if isinstance(value, str):
        return None if value.isascii() or _encodes(value) else value
    children = value.values() if isinstance(value, dict) else value
    if isinstance(value, (dict, list, tuple)):
        return next((bad for bad in map(_first_non_utf8, children) if bad is not None), None)
    return None


def _encodes(text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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
    meta.pkl exists, can run (see `nanogpt_sample_maps`). GPT-2 -> no meta.pkl, so train.py and
    sample.py keep their GPT-2 defaults (the folder commit removes one an earlier run left).
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


# ---------------------------------------------------------------------------------------------
# 9. documents: OpenWebText from the hub, or local files, with `datasets`; nanoGPT's split


HUB_REPO = "Skylion007/openwebtext"
HUB_REVISION = "79d93d786212f7344586290adb811d4ae6a1762c"  # pinned: change here to follow the hub
HUB_CONFIG = (
    "plain_text"  # the folder of parquet files at that revision: 80 files, 8,013,769 documents
)
# A dataset on the hub, pinned, and the files its config names (what the datatrove engine reads).
# OpenWebText's parquet files are read with datasets' parquet builder (its card names an old
# loading script datasets refuses); FineWeb's through its card, whose `configs:` map the config's
# name to its files, as llm.c's and build-nanogpt's load_dataset(repo, name=config) do.
HubDataset = namedtuple("HubDataset", "repo revision config files")
OPENWEBTEXT = HubDataset(HUB_REPO, HUB_REVISION, HUB_CONFIG, f"{HUB_CONFIG}/*.parquet")
# FineWeb-Edu and FineWeb (data/fineweb): the revisions public projects pin for sample-10BT (not
# checked against the hub from here: see docs/fineweb.md); a sample is a folder of parquet files.
FINEWEB_REPOS = {
    "edu": ("HuggingFaceFW/fineweb-edu", "87f09149ef4734204d70ed1d046ddc9ca3f2b8f9"),
    "classic": ("HuggingFaceFW/fineweb", "9bb295ddab0e05d785b879661af7260fed5140fc"),
}
FINEWEB_SPLIT_RULE = "llm.c's: the documents in order, cut every shard_size tokens; shard 0 is val"
FINEWEB_PREFIXES = {  # the shards' names: llm.c's, and build-nanogpt's (which knows FineWeb-Edu only)
    "llmc": {"edu": "edu_fineweb", "classic": "fineweb"},
    "npy": {"edu": "edufineweb", "classic": "fineweb"},
}
SPLIT_RULE = (
    "nanoGPT's: ceil(val_fraction * n) documents to val, the first of "
    "np.random.default_rng(seed).permutation(n), train the rest in that order "
    "(datasets' train_test_split(shuffle=True), 'test' renamed 'val')"
)
TOKENS_PER_WRITE = 1 << 22  # ids written per batch: 8 MB of uint16, whatever the corpus size
# Which datasets builder reads which local files; .txt files are one document each.
BUILDERS = {
    ".parquet": ("parquet", {}),
    ".jsonl": ("json", {}),
    ".json": ("json", {}),
    ".txt": ("text", {"sample_by": "document"}),
}


# ---------------------------------------------------------------------------------------------
# Loading and checking


def load_documents(data_files, num_proc, cache_dir, hub=OPENWEBTEXT):
    """The documents as a datasets.Dataset with a `text` column of strings, in a stable order.

    data_files None -> `hub` (OpenWebText) from the hub (see `hub_load_arguments`); else the files the
    patterns name (see `expand_data_files`). Every failure is a PrepareError saying what to do.
    """
    import datasets

    if cache_dir is not None and Path(cache_dir).exists() and not Path(cache_dir).is_dir():
        raise PrepareError(f"--cache-dir {cache_dir} is a file, not a folder; choose another path")
    cache_dir = None if cache_dir is None else str(cache_dir)
    if data_files is None:
        import huggingface_hub

        builder, kwargs = hub_load_arguments(hub)
        try:
            # datasets' glob finds no file in a repo or revision that is gone: ask first, to say which
            huggingface_hub.HfApi().dataset_info(hub.repo, revision=hub.revision)
            dataset = datasets.load_dataset(
                builder, split="train", num_proc=num_proc, cache_dir=cache_dir, **kwargs
            )
        except Exception as exc:  # offline, DNS, HTTP, a moved revision: all end the same way
            detail = " ".join(f"{type(exc).__name__}: {exc}".split())  # the hub's errors span lines
            raise PrepareError(
                f"cannot load {source_name(None, hub)} from the Hugging Face hub "
                f"({detail}); to use local files instead, pass --data-files 'DIR/*.parquet'"
            ) from None
    else:
        files = expand_data_files(data_files)
        builder, options = BUILDERS[Path(files[0]).suffix.lower()]
        # datasets knows a local file by its path, size and time: its cache of the documents
        # goes in a folder named by their content, so an input edited in place is read again
        content = inputs_sha256(files)
        cache_dir = str(
            Path(cache_dir or datasets.config.HF_DATASETS_CACHE) / f"inputs-{content[:16]}"
        )
        try:
            dataset = datasets.load_dataset(
                builder,
                data_files={"train": files},
                split="train",
                cache_dir=cache_dir,
                num_proc=min(num_proc, len(files)),
                **options,
            )
        except Exception as exc:  # a corrupt parquet file, invalid JSON, different columns...
            cause = exc.__cause__ or exc  # datasets wraps the telling error in a generic one
            detail = " ".join(f"{type(cause).__name__}: {cause}".split())
            raise PrepareError(
                f"datasets could not read --data-files {' '.join(data_files)} ({detail})"
            ) from None
    check_texts(dataset, source_name(data_files, hub))
    return dataset


MAX_JSON_DEPTH = 500  # deeper nesting is refused before pyarrow (which crashes on 20,000) reads it


def inputs_sha256(files):
    """One sha256 of the files' contents, in one read of each; a .json/.jsonl file nested more
    than MAX_JSON_DEPTH deep is refused on the way (naming the file and the line)."""
    digest = hashlib.sha256()
    for path in files:
        depth = 0 if Path(path).suffix.lower() in (".json", ".jsonl") else None
        line = 1
        with open(path, "rb") as file:
            for block in _blocks_ending_at_newlines(file):
                digest.update(hashlib.sha256(block).digest())
                if depth is not None:
                    depth = _check_json_depth(block, depth, path, line)
                    line += block.count(b"\n")
        digest.update(b"\0")
    return digest.hexdigest()


def _blocks_ending_at_newlines(file, size=1 << 24):
    rest = b""
    for block in iter(lambda: file.read(size), b""):
        block = rest + block
        cut = block.rfind(b"\n") + 1
        if cut == 0:
            rest = block
            continue
        rest = block[cut:]
        yield block[:cut]
    if rest:
        yield rest


def _check_json_depth(block, depth, path, first_line):
    """The nesting depth after `block` (JSON text cut at newlines, which no JSON string holds),
    counting brackets outside strings; deeper than MAX_JSON_DEPTH is a PrepareError."""
    data = np.frombuffer(block, dtype=np.uint8)
    index = np.arange(len(data))
    backslash = data == ord("\\")
    last_other = np.maximum.accumulate(np.where(backslash, -1, index))  # last non-backslash <= i
    quotes = np.flatnonzero(data == ord('"'))
    before = quotes - 1
    run = np.where(before >= 0, before - last_other[np.maximum(before, 0)], 0)  # backslashes
    real = quotes[run % 2 == 0]  # unescaped quotes open and close strings (none spans a line)
    toggles = np.zeros(len(data) + 1, dtype=np.int8)
    toggles[real + 1] = 1
    in_string = (np.cumsum(toggles)[:-1] % 2 == 1) | np.isin(index, real)
    opens = ((data == ord("[")) | (data == ord("{"))) & ~in_string
    closes = ((data == ord("]")) | (data == ord("}"))) & ~in_string
    levels = depth + np.cumsum(opens.astype(np.int64) - closes.astype(np.int64))
    if len(levels) and levels.max() > MAX_JSON_DEPTH:
        where = int(np.argmax(levels > MAX_JSON_DEPTH))
        line = first_line + int(np.count_nonzero(data[:where] == ord("\n")))
        raise PrepareError(
            f"{path} line {line:,}: JSON nested more than {MAX_JSON_DEPTH} levels deep; no "
            f"document is, and the reader would crash: fix or remove that line"
        )
    return int(levels[-1]) if len(levels) else depth


def hub_load_arguments(hub=OPENWEBTEXT):
    """What `datasets.load_dataset` is called with for OpenWebText from the hub.

    The repo's parquet files, read by datasets' own parquet builder at the pinned revision:
    nothing of the repo's old loading script is involved.
    -> ("parquet", {"data_files": {"train": "hf://datasets/Skylion007/openwebtext@79d9.../plain_text/*.parquet"}})
    """
    if hub != OPENWEBTEXT:  # FineWeb: ("HuggingFaceFW/fineweb-edu", {"name": "sample-10BT", ...})
        return hub.repo, {"name": hub.config, "revision": hub.revision}
    return "parquet", {"data_files": {"train": hub_files_url(hub)}}


def hub_files_url(hub=OPENWEBTEXT):
    """The fsspec glob of the hub's files: "hf://datasets/Skylion007/openwebtext@79d9.../plain_text/*.parquet"."""
    return f"hf://datasets/{hub.repo}@{hub.revision}/{hub.files}"


def fineweb_hub(kind, sample):
    """FineWeb-Edu ("edu") or FineWeb ("classic"), sample "10BT" or "100BT", pinned."""
    repo, revision = FINEWEB_REPOS[kind]
    return HubDataset(repo, revision, f"sample-{sample}", f"sample/{sample}/*.parquet")


def source_name(data_files, hub=OPENWEBTEXT):
    """None -> "Skylion007/openwebtext@79d93d786212"; ["a/*.jsonl", "b.txt"] -> "a/*.jsonl b.txt"."""
    if data_files:
        return " ".join(data_files)
    config = "" if hub == OPENWEBTEXT else f" ({hub.config})"
    return f"{hub.repo}@{hub.revision[:12]}{config}"


def source_record(data_files, num_documents, hub=OPENWEBTEXT):
    """meta.json's "source": the hub repo, revision and config, or the --data-files as given."""
    if data_files:
        return {"files": data_files, "documents": num_documents}
    return {
        "repo": hub.repo,
        "revision": hub.revision,
        "config": hub.config,
        "documents": num_documents,
    }


def expand_data_files(patterns):
    """Each PATH|GLOB -> its files, sorted; in the order given: ["b.txt", "a/*.txt"] -> b.txt, a/1.txt, a/2.txt.

    Sorting makes the row order, and so the split and the .bin files, independent of the file
    system's listing order. The files must be of one known kind and not all empty.
    """
    from bpe.corpus import CorpusError, expand_inputs  # train_tokenizer.py's globber, the same

    try:
        files = expand_inputs(patterns)
    except CorpusError as exc:
        raise PrepareError(f"--data-files: {exc}") from None
    kinds = {Path(path).suffix.lower() for path in files}
    if not kinds or not kinds <= BUILDERS.keys():
        unknown = sorted(kinds - BUILDERS.keys()) or ["no files"]
        raise PrepareError(
            f"--data-files must name .parquet, .jsonl, .json or .txt files; found {', '.join(unknown)}"
        )
    if len({BUILDERS[kind][0] for kind in kinds}) > 1:
        raise PrepareError(
            f"--data-files mixes {', '.join(sorted(kinds))} files; give files of one kind"
        )
    if all(_holds_nothing(path) for path in files):
        raise PrepareError(
            f"--data-files names only empty files ({files[0]}, ...); there is nothing to prepare"
        )
    return files


def _holds_nothing(path):
    """True for an empty file, or a parquet file of 0 rows (datasets 5 fails on one with an obscure error)."""
    if Path(path).stat().st_size == 0:
        return True
    if Path(path).suffix.lower() != ".parquet":
        return False
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path).metadata.num_rows == 0
    except Exception:  # not a parquet file: datasets will say so
        return False


def check_texts(dataset, source):
    """Refuse a dataset without a `text` column of strings, naming what is wrong and where."""
    if "text" not in dataset.column_names:
        raise PrepareError(
            f"{source} has no 'text' column; its columns are: {', '.join(dataset.column_names)}"
        )
    if len(dataset) == 0:
        raise PrepareError(f"{source} holds no documents; there is nothing to prepare")
    feature = dataset.features["text"]
    if getattr(feature, "dtype", None) in ("string", "large_string"):
        # only missing values can be wrong, and Arrow counts those without reading the texts
        column = dataset.with_format("arrow")["text"]
        bad = column.null_count
        first = int(np.argmax(column.is_null().to_numpy(zero_copy_only=False))) if bad else None
    else:
        bad, first = 0, None
        for start in range(0, len(dataset), 10_000):
            for offset, text in enumerate(dataset[start : start + 10_000]["text"]):
                if not isinstance(text, str):
                    bad += 1
                    first = start + offset if first is None else first
    if bad:
        raise PrepareError(
            f"{source}: {bad:,} of {len(dataset):,} documents have a missing or non-string "
            f"'text' (the first at row {first:,}); fix or drop those rows"
        )


# ---------------------------------------------------------------------------------------------
# Splitting and tokenizing


def split_record(val_fraction, seed, documents, numpy_version=np.__version__):
    """meta.json's "split" for nanoGPT's random split of documents: the rule and its inputs.

    documents: {"train": 9995, "val": 5}; the permutation is numpy's generator stream, so the
    numpy version that drew it is recorded too.
    """
    return {
        "rule": SPLIT_RULE,
        "val_fraction": val_fraction,
        "seed": seed,
        "numpy": numpy_version,
        "documents": documents,
    }


def fineweb_arguments(description, out_dir):
    """The options of data/fineweb/prepare.py, which prepare_datatrove.py beside it shares."""
    parser = ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = parser.add_argument
    add("--type", choices=["edu", "classic"], default="edu", help="FineWeb-Edu (default) or FineWeb")  # fmt: skip
    add("--sample", choices=["10BT", "100BT"], default="10BT", help="the hub sample (default 10BT)")
    files_help = "local .parquet, .jsonl/.json ('text' field) or .txt (one document each) files"
    add("--data-files", nargs="+", metavar="PATH|GLOB", help=f"{files_help} (default: the hub)")
    add("--tokenizer", type=Path, help="a file written by train_tokenizer.py (default: GPT-2)")
    add("--shard-size", type=tokens_per_shard, default=DEFAULT_SHARD_SIZE, help="tokens per shard")
    add("--format", choices=["llmc", "npy"], default="llmc", help="llm.c's .bin (default) or .npy")
    add("--out-dir", type=Path, default=out_dir, help="default: beside the script")
    add("--num-proc", type=positive_int, default=default_num_proc(), help="default: CPUs, at most 8")  # fmt: skip
    add("--cache-dir", type=Path, help="datasets' cache (default: $HF_DATASETS_CACHE)")
    return parser


def tokens_per_shard(text):
    """Tokens per shard: 1 to 2**31 - 1 (llm.c's header counts them in an int32)."""
    value = positive_int(text)
    if value >= 2**31:
        raise argparse.ArgumentTypeError(f"{text} is not below 2**31 (an llm.c shard's limit)")
    return value


def openwebtext_arguments(description, out_dir):
    """The options of data/openwebtext/prepare.py, which prepare_datatrove.py shares; the outputs
    go to `out_dir` (the script's folder) unless --out-dir says otherwise."""
    parser = ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = parser.add_argument
    files_help = "local .parquet, .jsonl/.json ('text' field) or .txt (one document each) files"
    add("--data-files", nargs="+", metavar="PATH|GLOB", help=f"{files_help} (default: the hub)")
    add("--tokenizer", type=Path, help="a file written by train_tokenizer.py (default: GPT-2)")
    add("--out-dir", type=Path, default=out_dir, help="default: beside the script")
    add(
        "--num-proc", type=positive_int, default=default_num_proc(), help="default: CPUs, at most 8"
    )
    add("--val-fraction", type=fraction, default=0.0005, help="share of the documents in val")
    add("--seed", type=seed, default=2357, help="seed of the random split (nanoGPT's: 2357)")
    add("--cache-dir", type=Path, help="datasets' cache (default: $HF_DATASETS_CACHE)")
    add("--format", choices=["bin", "llmc"], default="bin", help="nanoGPT's .bin (default) or llm.c's shards")  # fmt: skip
    add("--shard-size", type=tokens_per_shard, default=DEFAULT_SHARD_SIZE, help="tokens per llm.c shard")  # fmt: skip
    return parser


def default_num_proc():
    """The CPUs this process may use, at most 8 (nanoGPT's default): 2 on a 2-core machine."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(8, cpus or 1))


def split_sizes(num_documents, val_fraction):
    """(train, val) document counts of datasets' train_test_split(test_size=val_fraction).

    10,000 documents, 0.0005 -> (9995, 5): val gets ceil(fraction * n), train the rest.
    A fraction outside (0, 1), or one that leaves a side empty, is an error.
    """
    num_val = math.ceil(val_fraction * num_documents)
    num_train = num_documents - num_val
    if not 0 < val_fraction < 1 or num_train <= 0:
        empty = "val" if val_fraction <= 0 else "train"
        raise PrepareError(
            f"--val-fraction {val_fraction} of {num_documents:,} documents leaves {empty} empty; "
            f"choose a fraction that leaves at least one document on each side"
        )
    return num_train, num_val


def random_split(num_documents, val_fraction, seed):
    """nanoGPT's split of documents 0..n-1: (train, val) document numbers, in the order written.

    10 documents, 0.2, seed 2357 -> (array([0, 9, 5, 6, 2, 7, 4, 1]), array([8, 3]))
    Exactly datasets' train_test_split(test_size=val_fraction, seed=seed, shuffle=True): val is
    the first ceil(val_fraction * n) numbers of np.random.default_rng(seed).permutation(n),
    train the rest, in that order. The permutation is numpy's generator stream: meta.json
    records numpy's version. One function for both engines (datasets: dataset.select).
    """
    num_train, num_val = split_sizes(num_documents, val_fraction)
    permutation = np.random.default_rng(seed).permutation(num_documents)
    return permutation[num_val:], permutation[:num_val]


def tokenize(texts, encoding, eot_id, dtype):
    """A batch of documents -> each one's ids followed by the end-of-text id, and their lengths.

    ["Hello world", "Hi"] -> {"ids": [[15496, 995, 50256], [17250, 50256]], "len": [3, 2]} (GPT-2)
    nanoGPT's per-document `process`, a batch at a time, with the ids as `dtype` arrays rather
    than int64 lists. It depends only on its arguments, so any worker can run it. A tokenizer
    with an id that `dtype` cannot hold is refused before anything is encoded: no id is cast
    to a wrapped-around value.
    """
    if max(encoding.max_token_value, eot_id) > np.iinfo(dtype).max:
        raise PrepareError(
            f"{np.dtype(dtype).name} cannot hold the ids of tokenizer {encoding.name} "
            f"(up to {max(encoding.max_token_value, eot_id):,})"
        )
    ids = [encode_document(text, encoding, eot_id, dtype) for text in texts]
    return {"ids": ids, "len": [len(doc) for doc in ids]}


def encode_document(text, encoding, eot_id, dtype):
    """One document's ids and the end-of-text id, as a `dtype` array: "Hi" -> [17250, 50256].

    The same as np.array(encoding.encode_ordinary(text) + [eot_id], dtype) (nanoGPT's
    `process`), without a Python int per token: tiktoken's encode_to_numpy, with no special
    token allowed or refused, gives encode_ordinary's ids as one uint32 buffer (a literal
    "<|endoftext|>" in the text stays plain text); the list and its conversion would cost
    about a tenth of the encoding itself. A text with a lone surrogate, which tiktoken's Rust
    side refuses, goes through encode_ordinary, which repairs it first. The cast to `dtype`
    is unchecked: `tokenize` checks the tokenizer's largest id once.
    """
    try:
        encoded = encoding.encode_to_numpy(text, disallowed_special=())
    except UnicodeEncodeError:  # lone surrogates: encode_ordinary repairs them as tiktoken does
        encoded = encoding.encode_ordinary(text)
    ids = np.empty(len(encoded) + 1, dtype)
    ids[:-1] = encoded
    ids[-1] = eot_id
    return ids


def tokenize_documents(texts, indices, encoding, tokenizer, dtype, where):
    """nanoGPT's `process` for a batch of documents (a datasets map with indices): `tokenize`,
    and a trained tokenizer whose pattern leaves characters out refused, naming the first such
    document as `where` and its number ("docs.jsonl, train document 13")."""
    out = tokenize(texts, encoding, tokenizer["eot_id"], dtype)
    name = lambda i: f"{where} {indices[i]}"  # noqa: E731
    check_documents_covered(texts, out["ids"], encoding, tokenizer, name)
    return out


def id_batches(tokenized, documents_per_batch=10_000):
    """A tokenized dataset's ids in order, a batch of documents at a time, each one flat array.

    The same ids as np.concatenate(tokenized["ids"]), read through Arrow without a Python
    object per document: memory holds one batch whatever the dataset's size.
    """
    for batch in tokenized.with_format("arrow").iter(batch_size=documents_per_batch):
        yield batch["ids"].combine_chunks().flatten().to_numpy()


def ids_cache_options(documents, tokenizer, dtype, function=None):
    """`features` and `new_fingerprint` for documents.map(tokenize, ...).

    features: the ids are stored as `dtype` (uint16: 4x less disk than datasets' default int64).
    new_fingerprint: the cache key, made from what decides the result (the input split,
    `tokenize`, the tokenizer's sha256 and end-of-text id, the dtype); datasets' own would pickle
    the whole vocabulary (~1 s per split).
    """
    import datasets
    from datasets.fingerprint import Hasher

    features = datasets.Features(
        {"ids": datasets.List(datasets.Value(dtype.name)), "len": datasets.Value("int64")}
    )
    function = function or tokenize_documents  # another function, another cache
    key = [documents._fingerprint, function, tokenizer["sha256"], tokenizer["eot_id"], dtype.name]
    return {"features": features, "new_fingerprint": Hasher.hash(key)}


# ---------------------------------------------------------------------------------------------
# 10. verify: audit a prepared folder, recomputing what its meta.json records


SPLIT_NAMES = ("train", "val")  # nanoGPT reads both; a folder without either is not usable
BIN_DTYPES = ("uint16", "uint32")


def verify(folder, quiet=False):
    """Audit a prepared folder against its meta.json; return the problems, one line each.

    [] means the folder is complete and consistent. Recomputed, not trusted: each split's size,
    sha256 and largest id; the source's sha256 when the source is in the folder; the tokenizer's
    sha256 from its recorded definition (the characters, GPT-2's files, the trained tokenizer's
    file). Prints each split and the start of val; a leftover of an interrupted run is a warning
    on stderr (the data may still be whole; the next run removes it). `quiet`: print nothing
    (for `show`, which makes the same checks first).
    """
    try:
        with reading(folder):  # an exception no check foresaw still names the folder (run_main)
            return _audit(Path(folder), quiet)
    except PrepareError as exc:
        return [str(exc)]
    except OSError as exc:  # an unreadable file: still one line, never a traceback
        return [f"cannot read {exc.filename or folder}: {exc.strerror or exc}"]


def _audit(folder, quiet=False):
    holder = lock_holder(folder)
    if holder is not None:
        return [f"{folder} is being written by a run right now ({holder}); verify it after"]
    leftovers = leftover_temporaries(folder)
    meta, problems = read_meta(folder, leftovers)
    if problems:
        return problems
    if leftovers and not quiet:
        print(
            f"warning: {folder} holds leftover temporary files of an interrupted run "
            f"({', '.join(leftovers)}); the next run into this folder removes them",
            file=sys.stderr,
        )
    dtype = np.dtype(meta["dtype"])
    vocab_size = meta["tokenizer"]["vocab_size"]
    if "shards" in meta:
        problems += _audit_shards(folder, meta, dtype, vocab_size, quiet)
    for name in SPLIT_NAMES if "shards" not in meta else ():
        problems += _audit_split(folder, name, meta["splits"][name], dtype, vocab_size, quiet)
    problems += _audit_source(folder, meta.get("source") or {})
    decode, tokenizer_problems = _audit_tokenizer(folder, meta["tokenizer"])
    problems += tokenizer_problems
    problems += _audit_meta_pkl(folder, meta, check_content=not tokenizer_problems)
    if not problems and not quiet:
        _, ids = open_split(folder, "val")
        start = decode([int(i) for i in ids[:VERIFY_SHOWS_CHARS]])[:VERIFY_SHOWS_CHARS]
        print("start of val:", repr(start))
    return problems


def read_meta(folder, leftovers=()):
    """(meta, []) for a well-formed meta.json, or (None, [the first problem with it]).

    Without meta.json, a folder holding .bin files or `leftovers` (temporary names) is one that
    a run was interrupted in while it replaced the files (see the folder commit, section 7).
    """
    if not folder.is_dir():
        what = "a file" if folder.exists() else "missing"
        return None, [
            f"{folder} is {what}: give the folder that holds train.bin, val.bin and meta.json"
        ]
    path = folder / "meta.json"
    if not os.path.lexists(path):
        outputs = ("train.bin", "val.bin")
        if leftovers or any(
            p.name in outputs or SHARD_NAME.match(p.name) for p in folder.iterdir()
        ):
            left = f", leaving {', '.join(leftovers)}" if leftovers else ""
            return None, [
                f"{path} does not exist: the folder is incomplete (a run was interrupted while "
                f"replacing its files{left}); run its prepare.py again"
            ]
        return None, [f"{path} does not exist; run the folder's prepare.py first"]
    try:
        meta = load_json(read_metadata(path), path)
    except PrepareError as exc:
        return None, [str(exc)]
    if not isinstance(meta, dict):
        return None, [f"{path} holds a JSON {json_kind(meta)}, not an object"]
    if meta.get("format_version") != META_FORMAT_VERSION:
        return None, [
            f"{path} has format_version {meta.get('format_version')!r}, expected {META_FORMAT_VERSION}"
        ]
    problem = _shape_problem(meta)
    return (None, [f"{path}: {problem}"]) if problem else (meta, [])


def _shape_problem(meta):
    """The first field of meta.json that is missing or has the wrong type, as a phrase, or None."""
    problem = _fields_problem(meta, "", TOP_FIELDS)
    if problem is None and meta["dtype"] not in BIN_DTYPES:
        problem = _wrong("dtype", meta["dtype"], " or ".join(BIN_DTYPES))
    problem = problem or _fields_problem(meta["tokenizer"], "tokenizer", TOKENIZER_FIELDS)
    if problem:
        return problem
    if meta.get("meta_pkl") is not None and not (
        isinstance(meta["meta_pkl"], dict)
        and meta["meta_pkl"].get("file") == META_PKL
        and _is_sha256(meta["meta_pkl"].get("sha256"))
    ):
        return _wrong(
            "meta_pkl", meta["meta_pkl"], f'null or {{"file": "{META_PKL}", "sha256": ...}}'
        )
    if "shards" in meta:
        return _shards_problem(meta)
    missing = [name for name in SPLIT_NAMES if name not in meta["splits"]]
    if missing:
        return (
            f"splits has no {' and no '.join(missing)}: a prepared folder needs both train and val"
        )
    for name in SPLIT_NAMES:
        split = meta["splits"][name]
        if not isinstance(split, dict):
            return _wrong(f"splits.{name}", split, "a JSON object")
        problem = _fields_problem(split, f"splits.{name}", SPLIT_FIELDS)
        if problem:
            return problem
        if split["file"] != f"{name}.bin":  # the name nanoGPT's train.py opens, whatever we say
            return _wrong(
                f"splits.{name}.file", split["file"], f'"{name}.bin" (what nanoGPT reads)'
            )
    if "source" in meta and not isinstance(meta["source"], dict):
        return _wrong("source", meta["source"], "a JSON object")
    return None


def _shards_problem(meta):
    """_shape_problem's checks of a folder of shards: its format, and each shard's record."""
    if meta.get("format") not in SHARD_FORMATS:
        return _wrong("format", meta.get("format"), '"llmc" or "npy"')
    shards = meta["shards"]
    if not isinstance(shards, list) or not shards:
        return _wrong("shards", shards, "a list of the shards")
    for i, shard in enumerate(shards):
        if not isinstance(shard, dict):
            return _wrong(f"shards[{i}]", shard, "a JSON object")
        problem = _fields_problem(shard, f"shards[{i}]", SHARD_FIELDS)
        if problem:
            return problem
    if shards[0]["split"] != "val":
        return _wrong("shards[0].split", shards[0]["split"], '"val" (shard 0 is val)')
    return None


def _fields_problem(record, where, fields):
    """The first of `fields` (key, check, expected) missing from `record` or failing its check."""
    for key, check, expected in fields:
        if key not in record:
            return f'{where} "{key}" is missing'.lstrip()
        if not check(record[key]):
            return _wrong(f"{where}.{key}" if where else key, record[key], expected)
    return None


def _wrong(where, value, expected):
    return f"{where} is {json.dumps(value)}, expected {expected}"


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_sha256(value):
    return (
        isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
    )


def _is_plain_name(value):
    return isinstance(value, str) and value not in ("", ".", "..") and "/" not in value


TOP_FIELDS = (
    ("tokenizer", lambda v: isinstance(v, dict), "a JSON object"),
    ("splits", lambda v: isinstance(v, dict), "a JSON object"),
    ("dtype", lambda v: isinstance(v, str), "a JSON string"),
)
TOKENIZER_FIELDS = (
    ("kind", lambda v: v in ("char", "tiktoken", "bpe"), '"char", "tiktoken" or "bpe"'),
    ("vocab_size", lambda v: _is_int(v) and v > 0, "a positive integer"),
    ("sha256", _is_sha256, "a sha256 (64 hex digits)"),
)
SHARD_FIELDS = (
    ("file", _is_plain_name, "a file name in the folder"),
    ("split", lambda v: v in SPLIT_NAMES, '"train" or "val"'),
    ("tokens", lambda v: _is_int(v) and v > 0, "a positive count of tokens"),
    ("sha256", _is_sha256, "a sha256 (64 hex digits)"),
)
SPLIT_FIELDS = (
    ("file", _is_plain_name, "a file name in the folder"),
    ("tokens", lambda v: _is_int(v) and v >= 0, "a count of tokens"),
    ("sha256", _is_sha256, "a sha256 (64 hex digits)"),
)


def _audit_split(folder, name, split, dtype, vocab_size, quiet=False):
    path = folder / split["file"]
    if not path.is_file():
        return [f"{path} is missing" if not os.path.lexists(path) else f"{path} is not a file"]
    size = path.stat().st_size
    if size != split["tokens"] * dtype.itemsize:
        return [f"{path} has {size:,} bytes, expected {split['tokens']:,} {dtype.name} tokens"]
    if not quiet:
        print(f"{name}: {split['tokens']:,} tokens, {dtype.name}, {path}")
    if size == 0:
        return [f"{path} holds no tokens: nanoGPT cannot read an empty {name} split"]
    problems = []
    if sha256_file(path) != split["sha256"]:
        problems.append(f"{path} does not match the sha256 recorded in meta.json")
    highest = int(np.memmap(path, dtype=dtype, mode="r").max())
    if highest >= vocab_size:
        problems.append(f"{path} holds token id {highest:,} >= vocab_size {vocab_size:,}")
    return problems


def _audit_shards(folder, meta, dtype, vocab_size, quiet=False):
    """Each shard meta.json lists: its header (or .npy header) as the readers check it, its
    token count, sha256 and largest id; and no shard in the folder that the list leaves out."""
    problems = []
    for shard in meta["shards"]:
        path = folder / shard["file"]
        if not path.is_file():
            problems.append(f"{path} is missing" if not path.exists() else f"{path} is not a file")
            continue
        try:
            tokens = read_shard(path, meta["format"], dtype)
        except PrepareError as exc:
            problems.append(str(exc))
            continue
        if not quiet:
            print(f"{shard['split']}: {len(tokens):,} tokens, {dtype.name}, {path}")
        if len(tokens) != shard["tokens"]:
            problems.append(
                f"{path} holds {len(tokens):,} tokens, meta.json says {shard['tokens']:,}"
            )
            continue
        if sha256_file(path) != shard["sha256"]:
            problems.append(f"{path} does not match the sha256 recorded in meta.json")
        highest = int(tokens.max())
        if highest >= vocab_size:
            problems.append(f"{path} holds token id {highest:,} >= vocab_size {vocab_size:,}")
    listed = {shard["file"] for shard in meta["shards"]}
    unlisted = sorted(
        p.name for p in folder.iterdir() if SHARD_NAME.match(p.name) and p.name not in listed
    )
    if unlisted:
        problems.append(f"{folder} holds shards meta.json does not list: {', '.join(unlisted)}")
    return problems


class _PlainDataUnpickler(pickle.Unpickler):
    """Reads a pickle of plain data only (dicts, lists, strings, numbers): any global (a class, a
    function such as os.system) is refused, so reading a hostile meta.pkl runs nothing."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"it names {module}.{name}, not plain data")


def read_plain_pickle(path):
    """The plain data of a pickle file, read without running anything (`_PlainDataUnpickler`)."""
    import io

    try:
        return _PlainDataUnpickler(io.BytesIO(read_metadata(path))).load()
    except PrepareError:
        raise
    except Exception as exc:  # any malformed pickle: UnpicklingError, EOFError, ValueError...
        raise PrepareError(f"{path} is not a pickle of plain data ({exc})") from None


def _audit_meta_pkl(folder, meta, check_content=True):
    """meta.pkl as nanoGPT would read it: recorded (its sha256) or recorded as absent, and plain
    data that says what meta.json says (vocab_size; a character tokenizer's stoi/itos)."""
    path, record, tokenizer = folder / META_PKL, meta.get("meta_pkl", ...), meta["tokenizer"]
    exists = os.path.lexists(path)
    if record is None or (record is ... and not exists and tokenizer["kind"] != "char"):
        if exists:
            return [
                f"{path} is not part of this folder's set (meta.json records none), but "
                f"nanoGPT would read it; run the folder's prepare.py again"
            ]
        return []
    if not exists:
        return [f"{path} is missing (nanoGPT reads vocab_size from it); run prepare.py again"]
    if record is not ... and sha256_file(path) != record["sha256"]:
        return [f"{path} does not match the sha256 recorded in meta.json"]
    try:
        content = read_plain_pickle(path)
    except PrepareError as exc:
        return [str(exc)]
    if not isinstance(content, dict) or content.get("vocab_size") != tokenizer["vocab_size"]:
        found = content.get("vocab_size") if isinstance(content, dict) else type(content).__name__
        return [f"{path} holds vocab_size {found!r}, but meta.json {tokenizer['vocab_size']!r}"]
    chars = tokenizer.get("chars")
    if tokenizer["kind"] == "char" and isinstance(chars, str) and check_content:
        itos = dict(enumerate(chars))
        if content.get("itos") != itos or content.get("stoi") != {c: i for i, c in itos.items()}:
            return [f"{path}: stoi/itos are not the characters meta.json records"]
    return []


def _audit_source(folder, source):
    path = source.get("path")
    if not isinstance(path, str) or not isinstance(source.get("sha256"), str):
        return []
    path = folder / path
    if path.is_file() and sha256_file(path) != source["sha256"]:
        return [f"{path} does not match the source sha256 recorded in meta.json"]
    return []


def _audit_tokenizer(folder, tokenizer):
    """(ids -> text, problems): the tokenizer rebuilt from its recorded definition, its sha256 checked."""
    where = f"{folder / 'meta.json'}: tokenizer"
    kind, vocab_size = tokenizer["kind"], tokenizer["vocab_size"]
    if kind == "char":
        chars = tokenizer.get("chars")
        if not isinstance(chars, str):
            return None, [f'{where} "chars" is missing or not a string']
        problems = []
        if hashlib.sha256(chars.encode()).hexdigest() != tokenizer["sha256"]:
            problems.append(f"{where} sha256 does not match its recorded characters")
        if len(chars) != vocab_size:
            problems.append(f"{where} has {len(chars)} characters but vocab_size {vocab_size}")
        return (lambda ids: "".join(chars[i] for i in ids)), problems
    try:
        if kind == "tiktoken":
            if tokenizer.get("name") != "gpt2":
                return None, [f"{where} name {tokenizer.get('name')!r} is not one we can rebuild"]
            encoding = gpt2_encoding()
            found = encoding_sha256(encoding)
        else:
            encoding, found = _trained_encoding(folder, tokenizer, where)
    except PrepareError as exc:
        return None, [str(exc)]
    problems = []
    if found != tokenizer.get("encoding_sha256", tokenizer["sha256"]):
        problems.append(f"{where} sha256 does not match the tokenizer rebuilt from its definition")
    if encoding.n_vocab != vocab_size:
        problems.append(f"{where} vocab_size {vocab_size:,} is not its {encoding.n_vocab:,} tokens")
    return encoding.decode, problems


def _trained_encoding(folder, tokenizer, where):
    """(Encoding, sha256 of its file) of a trained tokenizer's recorded file."""
    from bpe import Tokenizer

    if not isinstance(tokenizer.get("path"), str):
        raise PrepareError(f'{where} "path" is missing or not a string')
    path = folder / tokenizer["path"]  # an absolute path stays as it is
    if not path.is_file():
        raise PrepareError(
            f"the tokenizer file {path} recorded in {folder / 'meta.json'} is missing"
        )
    if sha256_file(path) != tokenizer["sha256"]:
        raise PrepareError(
            f"{path} has changed since {folder / 'meta.json'} was written (sha256 differs)"
        )
    try:
        encoding = Tokenizer.load(path).to_tiktoken()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PrepareError(f"{path} cannot be loaded ({exc})") from None
    return encoding, encoding_sha256(encoding)


# ---------------------------------------------------------------------------------------------
# 11. show: one block of a prepared folder as nanoGPT's get_batch reads it, x and y


def open_split(folder, split):
    """(meta, the split's ids memory-mapped with the dtype meta.json names), as get_batch maps them."""
    meta, problems = read_meta(Path(folder))
    if problems:
        raise PrepareError(problems[0])
    if "shards" in meta:  # a folder of shards: the split's first one, or the one named
        shard = next((s for s in meta["shards"] if split in (s["file"], s["split"])), None)
        if shard is None:
            raise PrepareError(f"{Path(folder)} has no shard of split or file {split!r}")
        return meta, read_shard(
            Path(folder) / shard["file"], meta["format"], np.dtype(meta["dtype"])
        )
    if split not in meta["splits"]:
        raise PrepareError(
            f"{Path(folder) / 'meta.json'} has no split {split!r}: {list(meta['splits'])}"
        )
    path = Path(folder) / meta["splits"][split]["file"]
    if not path.is_file() or path.stat().st_size == 0:
        raise PrepareError(f"{path} is missing or empty; run the folder's prepare.py again")
    return meta, np.memmap(path, dtype=np.dtype(meta["dtype"]), mode="r")


def random_offset(num_tokens, block_size, seed):
    """The offset get_batch would draw (torch.randint(len(data) - block_size)), with numpy."""
    return int(np.random.default_rng(seed).integers(max(num_tokens - block_size, 1)))


def token_bytes_for(tokenizer, folder):
    """id -> the bytes of that one token, for the tokenizer meta.json records."""
    kind = tokenizer.get("kind")
    if kind == "char":
        chars = tokenizer["chars"]
        return lambda token_id: chars[token_id].encode("utf-8")
    if kind == "tiktoken":
        import tiktoken

        name = tokenizer.get("name")
        encoding = gpt2_encoding() if name == "gpt2" else tiktoken.get_encoding(name)
        return encoding.decode_single_token_bytes
    if kind == "bpe":
        from bpe import Tokenizer

        path = Path(tokenizer["path"])
        if not path.is_absolute():
            path = Path(folder) / path
        if not path.is_file() or sha256_file(path) != tokenizer["sha256"]:
            raise PrepareError(f"the tokenizer {path} named in meta.json is missing or has changed")
        return Tokenizer.load(path).vocab.__getitem__
    raise PrepareError(f"{Path(folder) / 'meta.json'}: cannot show tokenizer {tokenizer!r}")


def block_lines(folder, split="train", block_size=8, offset=0):
    """One block as printed lines: x and y side by side, each token with its id and text.

    The lecture's "ABBA" (ten times) prepared by shakespeare_char, block_size 3 ->
        train: 36 tokens; at position t the model has read x[0..t] and must predict y[t]
        x = data[0:3] = [0, 1, 1]
        y = data[1:4] = [1, 1, 0]
            t  x[t]   y[t]
            0  0 'A'  1 'B'
            1  1 'B'  1 'B'
            2  1 'B'  0 'A'
    """
    meta, data = open_split(folder, split)
    if block_size >= len(data):
        raise PrepareError(
            f"--block-size {block_size:,} is too large: {split} holds {len(data):,} tokens, and a "
            f"block and its target need block_size + 1"
        )
    if not 0 <= offset < len(data) - block_size:
        raise PrepareError(
            f"{split} holds {len(data):,} tokens: a block of {block_size} and its target need "
            f"an offset from 0 to {len(data) - block_size - 1:,}, not {offset:,}"
        )
    x = data[offset : offset + block_size].tolist()
    y = data[offset + 1 : offset + 1 + block_size].tolist()
    if max(x + y) >= meta["tokenizer"]["vocab_size"]:
        raise PrepareError(
            f"{folder}: token id {max(x + y):,} is not in the vocabulary; run verify"
        )
    from bpe.show import token_text

    token_bytes = token_bytes_for(meta["tokenizer"], folder)

    def cell(token_id):
        return f"{token_id:>{len(str(max(x + y)))}} '{token_text(token_bytes(token_id))}'"

    cells = [(cell(a), cell(b)) for a, b in zip(x, y)]
    width = max(len("x[t]"), *(len(a) for a, _ in cells))
    end = offset + block_size
    lines = [
        f"{split}: {len(data):,} tokens; at position t the model has read x[0..t] and must predict y[t]",
        f"x = data[{offset}:{end}] = {x}",
        f"y = data[{offset + 1}:{end + 1}] = {y}",
        f"{'t':>5}  {'x[t]':<{width}}  y[t]",
    ]
    lines += [f"{t:>5}  {a:<{width}}  {b}" for t, (a, b) in enumerate(cells)]
    return lines


def show(folder, split="train", block_size=8, offset=0, seed=None):
    """Print one block of `folder`'s `split` (at `offset`, or at get_batch's random offset for `seed`)."""
    if block_size < 1:
        raise PrepareError(f"--block-size must be at least 1, got {block_size}")
    problems = verify(folder, quiet=True)  # what verify checks, nanoGPT's reads depend on too
    if problems:
        raise PrepareError(problems[0])
    if seed is not None:
        _, data = open_split(folder, split)
        offset = random_offset(len(data), block_size, seed)
    print(*block_lines(folder, split, block_size, offset), sep="\n")


# ---------------------------------------------------------------------------------------------
# the command line: python prepare_common.py verify|show FOLDER


def main(argv=None):
    parser = ArgumentParser(description="Check a prepared data folder, or see what nanoGPT reads.")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("verify", help="check .bin sizes, hashes and ids against meta.json")
    check.add_argument("folder", help="e.g. data/shakespeare_char")
    look = commands.add_parser("show", help="one block (x, y) as nanoGPT's get_batch reads it")
    look.add_argument("folder", help="a prepared folder, e.g. data/shakespeare_char")
    look.add_argument("--split", default="train", help="train (default) or val, or a shard's file")
    look.add_argument("--block-size", type=int, default=8, metavar="N", help="default: 8")
    where = look.add_mutually_exclusive_group()
    where.add_argument("--offset", type=int, default=0, metavar="I", help="default: 0")
    where.add_argument("--seed", type=seed, help="draw the offset at random, as get_batch does")
    args = parser.parse_args(argv)
    if args.command == "show":
        return show(args.folder, args.split, args.block_size, args.offset, args.seed)
    problems = verify(args.folder)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"{args.folder}: OK")


if __name__ == "__main__":
    run_main(main)
