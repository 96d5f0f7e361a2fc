"""prepare_common.py, downloads: against a real HTTP server on 127.0.0.1 and real mirror folders.

Every failing case checks two things: the PrepareError says what went wrong (the URL and the
status, or the byte counts), and the destination folder holds no partial or temporary file.
"""

import gzip
import hashlib

import pytest
from conftest import (
    REPO,
    TINY_SHAKESPEARE,
    assert_clean_failure,
    names_in,
    run_python,
    send,
    write_files,
)

from safety import PrepareError, RemoteFile, fetch
from safety import downloads as http
from safety.downloads import MIRROR_ENV, save_verified

FAST = dict(retries=3, backoff=0.01)  # the real retry loop, with waits of 10, 20, 40 ms


def sha256_of(data):
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------------
# What the real HTTP server (conftest's `server`) answers on a path


def serve(body, status=200):
    return lambda handler, _attempt: send(handler, status, body)


def fail_first(statuses, body):
    """Answer the first requests with `statuses` (e.g. [503, 503]), then with `body`."""

    def route(handler, attempt):
        if attempt <= len(statuses):
            send(handler, statuses[attempt - 1], b"<html>Service Unavailable</html>")
        else:
            send(handler, 200, body)

    return route


def cut_short(body, declared, good_after=None):
    """Promise `declared` bytes, send only `body`, close the connection.

    With good_after=(n, full_body), attempts after the n-th get `full_body` whole.
    """

    def route(handler, attempt):
        if good_after is not None and attempt > good_after[0]:
            send(handler, 200, good_after[1])
            return
        handler.send_response(200)
        handler.send_header("Content-Length", str(declared))
        handler.end_headers()
        handler.wfile.write(body)
        handler.wfile.flush()
        handler.close_connection = True

    return route


def gzipped(body):
    def route(handler, _attempt):
        send(handler, 200, gzip.compress(body), headers=[("Content-Encoding", "gzip")])

    return route


@pytest.fixture
def dest_dir(tmp_path):
    folder = tmp_path / "dest"
    folder.mkdir()
    return folder


@pytest.fixture(scope="module")
def shakespeare_bytes(shakespeare_path):
    """Tiny Shakespeare's real bytes, fetched through the project's own code path (the mirror)."""
    return shakespeare_path.read_bytes()


# ---------------------------------------------------------------------------------------------
# download(): fetch's path to an http(s) URL, its retries (safety/downloads.py)


def download(url, expected_sha256, dest, retries=3, backoff=1.0):
    def save(blocks, total):
        return save_verified(blocks, expected_sha256, dest, url, total)

    return http.download_blocks(url, save, retries, backoff)


def test_download_good_file_is_saved_and_checked(server, dest_dir, shakespeare_bytes):
    assert len(shakespeare_bytes) == 1_115_394
    server.routes["/input.txt"] = serve(shakespeare_bytes)
    dest = dest_dir / "input.txt"
    result = download(f"{server.base}/input.txt", TINY_SHAKESPEARE.sha256, dest, **FAST)
    assert result == dest
    assert dest.read_bytes() == shakespeare_bytes
    assert server.hits["/input.txt"] == 1
    assert names_in(dest_dir) == ["input.txt"]


def test_download_gzip_encoded_body_is_checked_after_decoding(server, dest_dir):
    body = b"the same line, many times\n" * 2000
    server.routes["/f.txt"] = gzipped(body)
    dest = download(f"{server.base}/f.txt", sha256_of(body), dest_dir / "f.txt", **FAST)
    assert dest.read_bytes() == body
    assert names_in(dest_dir) == ["f.txt"]


def test_download_404_is_not_retried(server, dest_dir):
    url = f"{server.base}/missing.txt"
    with pytest.raises(PrepareError) as excinfo:
        download(url, sha256_of(b"x"), dest_dir / "missing.txt", **FAST)
    message = str(excinfo.value)
    assert url in message and "404" in message and "Not Found" in message
    assert server.hits["/missing.txt"] == 1
    assert names_in(dest_dir) == []


def test_download_503_twice_then_success(server, dest_dir):
    body = b"finally here\n"
    server.routes["/flaky.txt"] = fail_first([503, 503], body)
    dest = download(f"{server.base}/flaky.txt", sha256_of(body), dest_dir / "flaky.txt", **FAST)
    assert dest.read_bytes() == body
    assert server.hits["/flaky.txt"] == 3
    assert names_in(dest_dir) == ["flaky.txt"]


@pytest.mark.parametrize("retries", [0, 2])
def test_download_503_forever_fails_after_retries_plus_one_attempts(server, dest_dir, retries):
    server.routes["/down.txt"] = serve(b"<html>Service Unavailable</html>", status=503)
    url = f"{server.base}/down.txt"
    with pytest.raises(PrepareError) as excinfo:
        download(url, sha256_of(b"x"), dest_dir / "down.txt", retries=retries, backoff=0.01)
    message = str(excinfo.value)
    assert url in message and "503" in message
    assert f"{retries + 1} attempts" in message
    assert server.hits["/down.txt"] == retries + 1
    assert names_in(dest_dir) == []


def busy(status, times, body=None):
    """Answer the first `times` requests with `status` and a Retry-After of 0 s, then `body`."""

    def route(handler, attempt):
        if attempt > times:
            send(handler, 200, body)
        else:
            send(handler, status, b"<html>slow down</html>", headers=[("Retry-After", "0")])

    return route


@pytest.mark.parametrize("status", [429, 503])
def test_download_busy_server_is_retried_after_its_retry_after(server, dest_dir, status):
    """A 429 or 503 is retried after the seconds its Retry-After asks for, not the backoff's."""
    body = b"served once the server had time\n"
    server.routes["/busy.txt"] = busy(status, 1, body)
    url = f"{server.base}/busy.txt"
    # a backoff of 10 minutes: the test ends in time only if Retry-After's 0 s is the wait
    dest = download(url, sha256_of(body), dest_dir / "busy.txt", retries=3, backoff=600)
    assert dest.read_bytes() == body
    assert server.hits["/busy.txt"] == 2
    assert names_in(dest_dir) == ["busy.txt"]


def test_download_429_forever_says_the_server_limits_requests(server, dest_dir):
    """A server that answers 429 to every retry gets one line: it limits requests, run later."""
    server.routes["/busy.txt"] = busy(429, times=10)
    url = f"{server.base}/busy.txt"
    with pytest.raises(PrepareError) as excinfo:
        download(url, sha256_of(b"x"), dest_dir / "busy.txt", retries=1, backoff=0.01)
    message = str(excinfo.value)
    assert url in message and "limits requests" in message and "run again later" in message
    assert "\n" not in message
    assert server.hits["/busy.txt"] == 2
    assert names_in(dest_dir) == []


def test_download_error_page_with_status_200_is_refused(server, dest_dir):
    page = b"<html><body>Rate limit exceeded</body></html>"
    server.routes["/input.txt"] = serve(page)
    url = f"{server.base}/input.txt"
    expected = TINY_SHAKESPEARE.sha256
    with pytest.raises(PrepareError) as excinfo:
        download(url, expected, dest_dir / "input.txt", **FAST)
    message = str(excinfo.value)
    assert url in message and "sha256" in message
    assert sha256_of(page) in message and expected in message
    assert f"{len(page)} bytes" in message
    assert server.hits["/input.txt"] == 1  # a wrong body is not a network hiccup: no retry
    assert names_in(dest_dir) == []


def test_download_body_cut_short_saves_nothing(server, dest_dir):
    server.routes["/short.bin"] = cut_short(b"a" * 100, declared=1000)
    url = f"{server.base}/short.bin"
    with pytest.raises(PrepareError) as excinfo:
        download(url, sha256_of(b"a" * 1000), dest_dir / "short.bin", **FAST)
    message = str(excinfo.value)
    assert url in message and "cut short" in message
    assert "100 of 1,000 bytes" in message  # received of promised, as sent
    assert f"{FAST['retries'] + 1} times" in message
    assert server.hits["/short.bin"] == FAST["retries"] + 1  # a dropped connection is retried
    assert names_in(dest_dir) == []


def test_download_body_cut_short_once_then_complete(server, dest_dir):
    body = bytes(range(256)) * 40
    server.routes["/short.bin"] = cut_short(body[:100], declared=len(body), good_after=(1, body))
    dest = download(f"{server.base}/short.bin", sha256_of(body), dest_dir / "short.bin", **FAST)
    assert dest.read_bytes() == body
    assert server.hits["/short.bin"] == 2
    assert names_in(dest_dir) == ["short.bin"]


def test_download_connection_refused_is_retried_then_reported(dest_dir):
    with socket_bound_and_closed() as port:
        url = f"http://127.0.0.1:{port}/x.txt"
    with pytest.raises(PrepareError) as excinfo:
        download(url, sha256_of(b"x"), dest_dir / "x.txt", retries=1, backoff=0.01)
    message = str(excinfo.value)
    assert url in message and "2 attempts" in message and MIRROR_ENV in message
    assert names_in(dest_dir) == []


def test_download_read_timeout_is_retried_then_reported(server, dest_dir, monkeypatch):
    def stall(_handler, _attempt):
        server.release.wait(5)  # never answers while the client waits

    server.routes["/slow.txt"] = stall
    monkeypatch.setattr(http, "READ_TIMEOUT", 0.2)
    url = f"{server.base}/slow.txt"
    with pytest.raises(PrepareError) as excinfo:
        download(url, sha256_of(b"x"), dest_dir / "slow.txt", retries=1, backoff=0.01)
    assert url in str(excinfo.value) and "2 attempts" in str(excinfo.value)
    assert server.hits["/slow.txt"] == 2
    assert names_in(dest_dir) == []


def redirect(location):
    return lambda handler, _attempt: send(handler, 302, b"", headers=[("Location", location)])


def gzip_header_plain_body(handler, _attempt):
    send(handler, 200, b"plain text, not gzip\n", headers=[("Content-Encoding", "gzip")])


@pytest.mark.parametrize(
    "route, reason",
    [
        pytest.param(redirect("/f.txt"), "redirects in a loop", id="redirect-loop"),
        pytest.param(redirect("ftp://127.0.0.1/f.txt"), "not http(s)", id="redirect-to-ftp"),
        pytest.param(gzip_header_plain_body, "does not decode", id="gzip-header-plain-body"),
    ],
)
def test_download_an_answer_requests_refuses_is_one_line_naming_the_url(
    server, dest_dir, route, reason
):
    """An answer no retry changes (a redirect loop, a redirect out of http, a body that does not
    decode) fails at its first attempt in one line naming the URL and what to check."""
    server.routes["/f.txt"] = route
    url = f"{server.base}/f.txt"
    with pytest.raises(PrepareError) as excinfo:
        download(url, sha256_of(b"x"), dest_dir / "f.txt", **FAST)
    message = str(excinfo.value)
    assert url in message and reason in message and MIRROR_ENV in message
    assert "attempts" not in message and "\n" not in message
    assert server.hits["/f.txt"] == (31 if "loop" in reason else 1)  # requests' own limit
    assert names_in(dest_dir) == []


class socket_bound_and_closed:
    """A port number that nothing listens on (bound, then released)."""

    def __enter__(self):
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return self.sock.getsockname()[1]

    def __exit__(self, *exc):
        self.sock.close()


# ---------------------------------------------------------------------------------------------
# fetch(): an existing destination, and the NANOGPT_DATA_MIRROR switch


BODY = b"A file the test made, laid out like the mirror.\n" * 10
REMOTE = RemoteFile(
    url="http://127.0.0.1:9/origin/never-contacted.txt",  # port 9 (discard): nothing answers
    sha256=sha256_of(BODY),
    mirror_path="sub/folder/file.txt",
)


def test_fetch_reuses_existing_file_with_right_hash(server, dest_dir, monkeypatch):
    monkeypatch.setenv(MIRROR_ENV, server.base)
    server.routes["/sub/folder/file.txt"] = serve(BODY)
    dest = dest_dir / "file.txt"
    dest.write_bytes(BODY)
    assert fetch(REMOTE, dest) == dest
    assert sum(server.hits.values()) == 0
    assert dest.read_bytes() == BODY
    assert names_in(dest_dir) == ["file.txt"]


def test_fetch_refuses_existing_file_with_wrong_hash_and_leaves_it(server, dest_dir, monkeypatch):
    monkeypatch.setenv(MIRROR_ENV, server.base)
    server.routes["/sub/folder/file.txt"] = serve(BODY)
    dest = dest_dir / "file.txt"
    stale = b"an older, different version\n"
    dest.write_bytes(stale)
    with pytest.raises(PrepareError) as excinfo:
        fetch(REMOTE, dest)
    message = str(excinfo.value)
    assert str(dest) in message and sha256_of(stale) in message and REMOTE.sha256 in message
    assert "delete it" in message
    assert dest.read_bytes() == stale
    assert sum(server.hits.values()) == 0
    assert names_in(dest_dir) == ["file.txt"]


def test_fetch_refuses_a_folder_in_the_way(dest_dir):
    (dest_dir / "file.txt").mkdir()
    with pytest.raises(PrepareError, match="is not a file"):
        fetch(REMOTE, dest_dir / "file.txt")


def test_fetch_refuses_a_missing_destination_folder(tmp_path):
    with pytest.raises(PrepareError, match="is not a folder"):
        fetch(REMOTE, tmp_path / "no" / "such" / "file.txt")
    assert names_in(tmp_path) == []


def make_mirror(root, files):
    write_files(root, files)
    return root


@pytest.mark.parametrize(
    "spelled",
    [pytest.param(str, id="path"), pytest.param(lambda mirror: mirror.as_uri(), id="file-url")],
)
def test_fetch_from_mirror_folder(tmp_path, dest_dir, monkeypatch, spelled):
    """The mirror folder is read whether named by its path or by a file:// URL of it."""
    mirror = make_mirror(tmp_path / "mirror", {REMOTE.mirror_path: BODY})
    monkeypatch.setenv(MIRROR_ENV, spelled(mirror))
    dest = fetch(REMOTE, dest_dir / "file.txt")
    assert dest.read_bytes() == BODY
    assert names_in(dest_dir) == ["file.txt"]
    assert (mirror / REMOTE.mirror_path).read_bytes() == BODY  # the mirror's copy is untouched


def test_fetch_from_mirror_folder_lacking_the_file(tmp_path, dest_dir, monkeypatch):
    mirror = make_mirror(tmp_path / "mirror", {"sub/other.txt": BODY})
    monkeypatch.setenv(MIRROR_ENV, str(mirror))
    with pytest.raises(PrepareError) as excinfo:
        fetch(REMOTE, dest_dir / "file.txt")
    message = str(excinfo.value)
    assert str(mirror / REMOTE.mirror_path) in message and MIRROR_ENV in message
    assert names_in(dest_dir) == []


def test_fetch_from_mirror_folder_with_wrong_bytes(tmp_path, dest_dir, monkeypatch):
    wrong = BODY.replace(b"A file", b"a file")
    mirror = make_mirror(tmp_path / "mirror", {REMOTE.mirror_path: wrong})
    monkeypatch.setenv(MIRROR_ENV, str(mirror))
    with pytest.raises(PrepareError) as excinfo:
        fetch(REMOTE, dest_dir / "file.txt")
    message = str(excinfo.value)
    assert str(mirror / REMOTE.mirror_path) in message
    assert "sha256" in message and sha256_of(wrong) in message and REMOTE.sha256 in message
    assert names_in(dest_dir) == []


@pytest.mark.parametrize(
    "spelled",
    [
        pytest.param(lambda base: f"{base}/mirror", id="plain"),
        pytest.param(lambda base: f"{base}/mirror/", id="trailing-slash"),
        pytest.param(lambda base: f"{base.upper()}/mirror", id="scheme-in-upper-case"),
    ],
)
def test_fetch_from_http_mirror(server, dest_dir, monkeypatch, spelled):
    """An http mirror is asked, not the origin, its address spelled in any of these ways."""
    server.routes["/mirror/sub/folder/file.txt"] = serve(BODY)
    monkeypatch.setenv(MIRROR_ENV, spelled(server.base))
    dest = fetch(REMOTE, dest_dir / "file.txt")
    assert dest.read_bytes() == BODY
    assert dict(server.hits) == {"/mirror/sub/folder/file.txt": 1}  # the origin is never asked
    assert names_in(dest_dir) == ["file.txt"]


def test_fetch_shows_a_bar_of_the_bytes_it_writes(server, dest_dir, monkeypatch):
    """A download's bar counts its bytes against the announced size; the file gets them as sent."""
    import tqdm

    bars = []

    class RecordedBar(tqdm.tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            bars.append(self)

    monkeypatch.setattr(tqdm, "tqdm", RecordedBar)
    server.routes["/mirror/sub/folder/file.txt"] = serve(BODY)
    monkeypatch.setenv(MIRROR_ENV, f"{server.base}/mirror")
    assert fetch(REMOTE, dest_dir / "file.txt").read_bytes() == BODY
    assert [(bar.desc, bar.total, bar.n) for bar in bars] == [("file.txt", len(BODY), len(BODY))]


def test_fetch_from_http_mirror_lacking_the_file(server, dest_dir, monkeypatch):
    monkeypatch.setenv(MIRROR_ENV, f"{server.base}/mirror")
    with pytest.raises(PrepareError) as excinfo:
        fetch(REMOTE, dest_dir / "file.txt")
    message = str(excinfo.value)
    assert f"{server.base}/mirror/sub/folder/file.txt" in message and "404" in message
    assert names_in(dest_dir) == []


def test_fetch_from_http_mirror_with_wrong_bytes(server, dest_dir, monkeypatch):
    server.routes["/mirror/sub/folder/file.txt"] = serve(b"<html>not the file</html>")
    monkeypatch.setenv(MIRROR_ENV, f"{server.base}/mirror")
    with pytest.raises(PrepareError, match="sha256"):
        fetch(REMOTE, dest_dir / "file.txt")
    assert names_in(dest_dir) == []


def test_a_host_that_does_not_resolve_fails_at_once_in_a_short_line(tmp_path):
    """No network: no retry can help, so the first failure is the one line, pointing offline."""
    result = run_python(
        REPO / "data" / "shakespeare_char" / "prepare.py",
        "--out-dir",
        tmp_path / "out",
        env={MIRROR_ENV: "http://no-such-host.invalid/mirror"},
    )
    assert_clean_failure(result, "does not resolve", "docs/offline.md")
    assert "attempts" not in result.stderr and len(result.stderr) < 300, result.stderr
    assert not (tmp_path / "out").exists()
