"""Downloads checked against a pinned sha256, with retries of what may pass and nothing else.

    CORPUS = RemoteFile(url, sha256, mirror_path="corpus/input.txt")
    fetch(CORPUS, out_dir / "input.txt")  # downloaded once, checked, reused after

An HTML error page is never saved as input.txt: bytes are renamed into place only if their
sha256 is the pinned one. A dropped connection, a 5xx or a 429 is retried, never another 4xx
nor a host name that does not resolve.
"""

import hashlib
import os
import re
import time
from collections import namedtuple
from pathlib import Path

from .errors import PrepareError
from .files import atomic_path, sha256_file
from .gpt2 import MIRROR_ENV, OFFLINE_HELP, host_unresolved, mirrored, unresolved_message

CONNECT_TIMEOUT, READ_TIMEOUT = 10, 60  # seconds
MAX_RETRY_AFTER = 60  # seconds: the longest wait a server's Retry-After gets


class _RetryableStatus(Exception):
    """A 5xx or 429; `wait`: the seconds its Retry-After asks for (capped), else None."""

    def __init__(self, response):
        super().__init__(f"HTTP status {response.status_code} {response.reason}")
        self.status = response.status_code
        after = response.headers.get("Retry-After", "")  # an HTTP date is left to the backoff
        self.wait = min(int(after), MAX_RETRY_AFTER) if after.isdigit() else None


def download_blocks(url, save, retries=3, backoff=1.0):
    """`save(blocks, total_bytes)` of `url`'s body; a transient failure of attempt k waits
    `backoff * 2**k` seconds (or its Retry-After), then the last is a PrepareError naming `url`."""

    def answered(response):
        length = response.headers.get("Content-Length", "")
        compressed = response.headers.get("Content-Encoding")  # then the length is compressed
        total = int(length) if length.isdigit() and not compressed else None
        return save(response.iter_content(1 << 16), total)

    return _answer(url, answered, {}, retries, backoff)


def download_range(url, start, end, retries=3, backoff=1.0):
    """(the bytes [start, end) of `url`, the file's size) by one Range request, retried; any
    answer but 206 is an error: "http://h/f" of 10 bytes, 4, 8 -> (its bytes 4 to 7, 10)."""

    def answered(response):
        if response.status_code != 206:
            raise PrepareError(
                f"{url} answered a Range request with HTTP status {response.status_code}, not "
                "206: the server does not answer Range requests, which a prefix of the file "
                "needs, or sent something else; leave out --max-tokens to download it whole"
            )
        data = b"".join(response.iter_content(1 << 16))
        found = re.fullmatch(r"bytes (\d+)-\d+/(\d+)", response.headers.get("Content-Range", ""))
        if not found or int(found[1]) != start or len(data) > end - start:
            raise PrepareError(f"{url} answered bytes {start:,} to {end:,} with other bytes")
        return data, int(found[2])

    return _answer(url, answered, {"Range": f"bytes={start}-{end - 1}"}, retries, backoff)


_SESSIONS = {}  # pid -> requests.Session: a forked worker opens its own, never its parent's


def _answer(url, answered, headers, retries, backoff):
    """answered(response) of a GET of `url`, its status checked, retried."""
    import requests
    from requests import exceptions

    if os.getpid() not in _SESSIONS:  # one connection for a file read a piece at a time
        _SESSIONS[os.getpid()] = requests.Session()
    transient = (exceptions.ConnectionError, exceptions.Timeout, exceptions.ChunkedEncodingError)
    for attempt in range(retries + 1):
        response = None
        try:
            with _SESSIONS[os.getpid()].get(
                url, headers=headers, stream=True, timeout=(CONNECT_TIMEOUT, READ_TIMEOUT)
            ) as response:
                if response.status_code >= 500 or response.status_code == 429:  # 429: too many
                    raise _RetryableStatus(response)
                if not 200 <= response.status_code < 300:
                    raise PrepareError(
                        f"downloading {url} failed with HTTP status {response.status_code} "
                        f"{response.reason}; check the address or your network, then run again"
                    )
                return answered(response)
        except (exceptions.InvalidURL, exceptions.MissingSchema) as exc:
            raise PrepareError(
                f"{url} is not a valid URL ({exc}); check {MIRROR_ENV} if it is set"
            ) from None
        except (_RetryableStatus, *transient) as exc:
            if host_unresolved(exc):
                raise PrepareError(unresolved_message(url)) from None
            if attempt == retries:
                raise PrepareError(_last_failure(url, exc, response, retries)) from None
            wait = getattr(exc, "wait", None)
            time.sleep(backoff * 2**attempt if wait is None else wait)
        except exceptions.RequestException as exc:  # an answer no retry changes
            reason = _REFUSED.get(type(exc).__name__, type(exc).__name__)
            raise PrepareError(
                f"cannot download {url}: {reason}; check the address, and {MIRROR_ENV} if it is set"
            ) from None


# What each failure of requests that is not worth a retry says of the server's answer.
_REFUSED = {
    "TooManyRedirects": "it redirects in a loop (more than 30 redirects)",
    "InvalidSchema": "it redirects to an address that is not http(s)",
    "ContentDecodingError": "its body does not decode as its Content-Encoding header says",
}


def _last_failure(url, exc, response, retries):
    """The one line for a download that failed `retries + 1` times."""
    import requests

    if isinstance(exc, requests.exceptions.ChunkedEncodingError) and response is not None:
        # raw.tell() and Content-Length both count the bytes as sent (maybe compressed)
        length = response.headers.get("Content-Length", "")
        of_total = f" of {int(length):,}" if length.isdigit() else ""
        return (
            f"{url} was cut short {retries + 1} times, the last time after "
            f"{response.raw.tell():,}{of_total} bytes; nothing was saved, run again"
        )
    if isinstance(exc, _RetryableStatus) and exc.status == 429:
        return (
            f"cannot download {url}: the server limits requests and refused {retries + 1} "
            f"attempts ({exc}); run again later"
        )
    # urllib3's own text would fill the line: its exception's name says enough
    reason = str(exc) if isinstance(exc, _RetryableStatus) else type(exc).__name__
    return (
        f"cannot download {url} after {retries + 1} attempts ({reason}); check your network, "
        f"or set {MIRROR_ENV} to a folder holding a copy (see {OFFLINE_HELP})"
    )


# A pinned file: where its bytes sit in NANOGPT_DATA_MIRROR, and local_option, the lesson's
# option taking a copy the user has (such as --archive).
RemoteFile = namedtuple("RemoteFile", "url sha256 mirror_path local_option", defaults=[None])


def fetch(remote, dest):
    """Put `remote`'s bytes at `dest`, checked against its pinned sha256 (or from the mirror);
    return `dest`. A `dest` with the right hash is reused, one with a wrong hash refused."""
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
    url = mirrored(remote.url, remote.mirror_path)
    if url.startswith(("http://", "https://")):
        return download_blocks(
            url, lambda blocks, total: save_verified(blocks, remote.sha256, dest, url, total)
        )
    source = mirror_file(remote, url)
    with open(source, "rb") as f:
        blocks = iter(lambda: f.read(1 << 20), b"")
        return save_verified(blocks, remote.sha256, dest, source, source.stat().st_size)


def mirror_file(remote, url):
    """`remote`'s copy in a mirror folder (`url`), or one line saying it is not there."""
    source = Path(url)
    if not source.is_file():
        option = remote.local_option
        copy = f", or pass a copy you have with {option}" if option else ""
        raise PrepareError(
            f"mirror file {source} does not exist; {MIRROR_ENV} should name a folder laid "
            f"out as docs/offline.md lists{copy}"
        )
    return source


def save_verified(blocks, expected_sha256, dest, source, total_bytes):
    """Write byte blocks to `dest` via a temp name if their sha256 and `total_bytes` match."""
    from tqdm import tqdm

    digest = hashlib.sha256()
    received = 0
    name = str(source).rsplit("/", 1)[-1]
    bar = tqdm(total=total_bytes, unit="B", unit_scale=True, desc=name, delay=1, leave=False)
    with atomic_path(dest) as tmp:  # the final name appears only if every check below passes
        with open(tmp, "wb") as f, bar:
            for block in blocks:
                f.write(block)
                digest.update(block)
                received += len(block)
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
    return Path(dest)
