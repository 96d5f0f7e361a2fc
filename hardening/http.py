"""A download that retries what may pass (a dropped connection, a 5xx) and nothing else.

`download_blocks(url, save)` streams the body of `url` into `save(blocks, total_bytes)`, whose
result it returns; prepare_common's `save_verified` checks the bytes against their sha256.
A name that does not resolve (no network) fails at once: retrying cannot help.
"""

import socket
import time

from .errors import PrepareError

MIRROR_ENV = "NANOGPT_DATA_MIRROR"
CONNECT_TIMEOUT, READ_TIMEOUT = 10, 60  # seconds
OFFLINE_HELP = "docs/offline.md"


class _RetryableStatus(Exception):
    def __init__(self, status, reason):
        super().__init__(f"HTTP status {status} {reason}")


def download_blocks(url, save, retries=3, backoff=1.0):
    """`save(blocks, total_bytes)` of `url`'s body; retry connection errors and 5xx, not 4xx.

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
                _check_status(url, response)
                length = response.headers.get("Content-Length")
                # With Content-Encoding the header counts compressed bytes, not the ones we get.
                compressed = response.headers.get("Content-Encoding")
                total = int(length) if length and length.isdigit() and not compressed else None
                return save(response.iter_content(1 << 16), total)
        except (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema) as exc:
            raise PrepareError(
                f"{url} is not a valid URL ({exc}); check {MIRROR_ENV} if it is set"
            ) from None
        except (_RetryableStatus, *transient) as exc:
            if _unresolved(exc):
                raise PrepareError(
                    f"cannot download {url}: its host name does not resolve (no network?); "
                    f"set {MIRROR_ENV} to a folder holding a copy (see {OFFLINE_HELP})"
                ) from None
            if attempt == retries:
                raise PrepareError(_last_failure(url, exc, response, retries)) from None
            time.sleep(backoff * 2**attempt)
    raise AssertionError("unreachable")


def _check_status(url, response):
    if response.status_code >= 500:
        raise _RetryableStatus(response.status_code, response.reason)
    if not 200 <= response.status_code < 300:
        raise PrepareError(
            f"downloading {url} failed with HTTP status {response.status_code} "
            f"{response.reason}; check the address or your network, then run again"
        )


def _unresolved(exc):
    """Whether a failure is a host name that does not resolve (socket.gaierror in its chain)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, socket.gaierror) or type(exc).__name__ == "NameResolutionError":
            return True
        exc = (
            exc.__cause__
            or exc.__context__
            or next(
                (arg for arg in getattr(exc, "args", ()) if isinstance(arg, BaseException)), None
            )
        )
    return False


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
    # urllib3's own text would fill the line: its exception's name says enough
    reason = str(exc) if isinstance(exc, _RetryableStatus) else type(exc).__name__
    return (
        f"cannot download {url} after {retries + 1} attempts ({reason}); check your network, "
        f"or set {MIRROR_ENV} to a folder holding a copy (see {OFFLINE_HELP})"
    )
