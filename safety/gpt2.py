"""GPT-2's two tokenizer files pinned (URL, sha256), the mirror a pinned file is read from,
the one line of a network that is not there, and where tiktoken's copies are kept."""

import hashlib
import os
import socket
from pathlib import Path
from urllib.request import url2pathname

# as tiktoken fetches them (tiktoken_ext.openai_public.gpt2): URL, sha256
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

MIRROR_ENV = "NANOGPT_DATA_MIRROR"  # a folder or an http(s) address laid out as the origins
OFFLINE_HELP = "docs/offline.md"
MIRROR_PATHS = {name: f"gpt2/{name}" for name in GPT2_FILES}  # where each sits in a mirror
CACHE_ENV = "NANOGPT_DATA_CACHE"  # where downloaded files are kept (default ~/.cache/nanogpt-data)


def tiktoken_cache():
    """(folder, variable) where tiktoken reads GPT-2's files: $TIKTOKEN_CACHE_DIR if set, else
    $NANOGPT_DATA_CACHE/tiktoken."""
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        return Path(os.environ["TIKTOKEN_CACHE_DIR"]), "TIKTOKEN_CACHE_DIR"
    return data_cache() / "tiktoken", CACHE_ENV


def data_cache():
    """Where the lessons keep what they fetch: $NANOGPT_DATA_CACHE, else ~/.cache/nanogpt-data."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "nanogpt-data")


def tiktoken_name(url):
    """The name tiktoken gives its copy of `url` in its cache: the sha1 of the URL."""
    return hashlib.sha1(url.encode()).hexdigest()


def mirrored(url, mirror_path):
    """$NANOGPT_DATA_MIRROR/mirror_path when it is set, else `url`: NANOGPT_DATA_MIRROR=/m,
    "gpt2/vocab.bpe" -> "/m/gpt2/vocab.bpe" (HTTP://h/m -> http://h/m/..., file:///m -> /m)."""
    mirror = os.environ.get(MIRROR_ENV, "").strip()
    scheme = mirror.partition("://")[0].lower()
    if scheme == "file" and mirror[7:].startswith(("/", "localhost/")):
        mirror = url2pathname(mirror[7:].removeprefix("localhost"))
    elif scheme in ("http", "https"):  # a malformed address is the downloader's to name
        mirror = scheme + mirror[len(scheme) :]
    return f"{mirror.rstrip('/')}/{mirror_path}" if mirror else url


def unresolved_message(url):
    return (
        f"cannot download {url}: its host name does not resolve (no network?); "
        f"set {MIRROR_ENV} to a folder holding a copy (see {OFFLINE_HELP})"
    )


def host_unresolved(exc):
    """Whether a failure is a host name that does not resolve (socket.gaierror in its chain)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, socket.gaierror) or type(exc).__name__ == "NameResolutionError":
            return True
        inner = [arg for arg in getattr(exc, "args", ()) if isinstance(arg, BaseException)]
        exc = exc.__cause__ or exc.__context__ or next(iter(inner), None)
    return False
