"""Known remote files, downloaded once and checked against a pinned sha256.

- RemoteFile(url, sha256, mirror_path), and the pinned ones: TINY_SHAKESPEARE, GPT2_VOCAB_BPE,
  GPT2_ENCODER_JSON
- fetch(remote, dest): the file's checked bytes at `dest`, from the origin or the offline mirror
- download(url, expected_sha256, dest): stream a URL to `dest` with timeouts and retries
- MIRROR_ENV: the environment variable naming the offline mirror (a folder or an http(s) URL)

The classic failure this prevents is an HTML error page saved as input.txt: whatever server
answered, the bytes are renamed into place only if their sha256 is the pinned one.
"""

import hashlib
import os
import time
from collections import namedtuple
from pathlib import Path

from prep.errors import PrepareError
from prep.files import atomic_path, sha256_file

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
