"""A small Hugging Face hub on 127.0.0.1 for tests: the part of the hub's HTTP API that
huggingface_hub and datasets use to read `hf://datasets/OWNER/NAME@REVISION/...` files.

    with LocalHub("Skylion007/openwebtext", {sha: {"plain_text/a.parquet": b"..."}}) as hub:
        env = {**os.environ, **hub.environment(tmp_path)}   # HF_ENDPOINT, a fresh HF_HOME...

The routes, as huggingface_hub 2.4 and datasets 5.2 call them (found by logging their requests;
every other request is answered 404, and a request that fails here 500; both are kept in
`hub.unknown`, so that a test fails when a new version of the libraries calls something new):

    GET  /api/datasets/{repo}/revision/{rev}             the repo at a revision, its commit `sha`
                                                         (any hf:// path is checked with it first)
    GET  /api/datasets/{repo}/tree/{rev}[/{dir}]         a folder's entries (a glob lists the
                                                         folder and its parent); ?recursive=true
                                                         the whole subtree (find); pages of
                                                         `page_size` entries chained by a
                                                         `Link: <...>; rel="next"` header
    POST /api/datasets/{repo}/paths-info/{rev}           the entries of the form's `paths` (info)
    HEAD, GET /datasets/{repo}/resolve/{rev}/{path}      a file. LFS files (.parquet, as on the
                                                         real hub) redirect (302) to the CDN; the
                                                         HEAD of hf_hub_download reads the file's
                                                         X-Repo-Commit, X-Linked-Etag and
                                                         X-Linked-Size from that redirect
    HEAD, GET {cdn}/lfs/{sha256}                         an LFS file's bytes, Range requests
                                                         answered 206 (HfFileSystem's reads); on
                                                         its own port, so another origin, as the
                                                         real CDN is (the client sends no token)
    HEAD, GET {cdn}/mirror/{path}                        a plain file of `mirror` (a mirror that
                                                         NANOGPT_DATA_MIRROR=hub.mirror_url names),
                                                         Range requests answered 206 too

`{rev}` is a commit sha or a ref name (e.g. "main"), percent-encoded. A repo the hub does not hold
gets 404 RepoNotFound, an unknown revision 404 RevisionNotFound, a missing path 404 EntryNotFound
(the X-Error-Code header the client turns into its exceptions; the tree of a file is one too, and
HfFileSystem then lists its folder). Files are served as stored: no Xet (hf_xet is used only when
the hub announces a file's Xet hash, which this one never does).

What a test of a budgeted read needs: `hub.bytes_sent` (the bodies both ports sent),
`hub.served` (the (sha256, start, end) of each CDN answer), `hub.damage(path, offset, times)` (the
CDN flips that byte of the file, `times` times or always), and `hub.hold_after(n)`: the CDN's
answers after the first n wait until `hub.release` is set (`hub.held` says one is waiting), so a
test can kill a client mid-download at a known point.
"""

import email.utils
import hashlib
import io
import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import PurePosixPath
from urllib.parse import parse_qs, quote, unquote, urlsplit

LFS_SUFFIXES = (".parquet",)  # what the real repo stores in LFS (as the hub's .gitattributes)
LAST_MODIFIED = email.utils.formatdate(1_700_000_000, usegmt=True)


def git_blob_id(data):
    """The git object id of a file's bytes (the hub's `oid` and ETag of a non-LFS file)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class LocalHub:
    """One dataset repo with its commits, served on two ports of 127.0.0.1: the hub and its CDN.

    `commits` maps a commit sha (40 hex digits) to that commit's files ({path: bytes});
    `refs` maps branch names to commits ({"main": sha}). Every request is recorded in
    `requests` as (method, path, status); those no route answers also in `unknown`.
    """

    def __init__(
        self, repo_id, commits, refs=None, page_size=1000, lfs_suffixes=LFS_SUFFIXES, mirror=None
    ):
        self.repo_id = repo_id
        self.commits = commits
        self.refs = dict(refs or {})
        self.page_size = page_size  # entries per tree page (the real hub: 1,000)
        self.lfs_suffixes = lfs_suffixes  # the names the repo keeps in LFS
        mirror = mirror or {}  # {path: bytes} served as plain files, by their sha256
        self.mirror = {path: hashlib.sha256(data).hexdigest() for path, data in mirror.items()}
        self.requests = []
        self.unknown = []
        self.lock = threading.Lock()
        self.blobs = {}  # sha256 -> bytes, what the CDN serves
        self.bytes_sent, self.served, self.damaged = 0, [], {}  # damaged: sha256 -> [offset, times]
        self.held, self.release, self.holding = threading.Event(), threading.Event(), None
        for files in [*commits.values(), mirror]:
            for data in files.values():
                self.blobs[hashlib.sha256(data).hexdigest()] = data
        self.hub = ThreadingHTTPServer(("127.0.0.1", 0), self.handler(self.route_hub))
        self.cdn = ThreadingHTTPServer(("127.0.0.1", 0), self.handler(self.route_cdn))
        self.threads = [
            threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
            for server in (self.hub, self.cdn)
        ]

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.hub.server_address[1]}"

    @property
    def cdn_url(self):
        return f"http://127.0.0.1:{self.cdn.server_address[1]}"

    @property
    def mirror_url(self):
        return f"{self.cdn_url}/mirror"

    def environment(self, home):
        """What a process needs to use this hub, with its own empty caches under `home`."""
        return {
            "HF_ENDPOINT": self.endpoint,
            "HF_HOME": str(home / "hf-home"),  # the hub's file cache, no saved token
            "HF_DATASETS_CACHE": str(home / "hf-datasets"),
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        }

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc_info):
        for server in (self.hub, self.cdn):
            server.shutdown()
            server.server_close()
        for thread in self.threads:
            thread.join()

    # -----------------------------------------------------------------------------------------
    # the routes: each takes the request and returns (status, headers, body)

    def handler(self, route):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the clients' connection pools expect

            def do_GET(self):
                self.answer()

            def do_HEAD(self):
                self.answer()

            def do_POST(self):
                self.body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.answer()

            def answer(self):
                try:
                    status, headers, body = route(self)
                except Exception as exc:  # a bug here must fail the test, not hang the client
                    status, headers, body = 500, {"X-Unknown-Route": "1"}, repr(exc).encode()
                with hub.lock:
                    hub.requests.append((self.command, self.path, status))
                    if headers.pop("X-Unknown-Route", None):
                        hub.unknown.append((self.command, self.path))
                self.send_response(status)
                headers.setdefault("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if self.command != "HEAD":
                    with hub.lock:
                        hub.bytes_sent += len(body)
                    self.wfile.write(body)

            def log_message(self, *args):  # the test reads `hub.requests`, not stderr
                pass

        return Handler

    def route_hub(self, request):
        url = urlsplit(request.path)
        query = parse_qs(url.query)
        patterns = {
            ("GET", "revision"): r"/api/datasets/(?P<repo>[^/]+/[^/]+)/revision/(?P<rev>[^/]+)",
            (
                "GET",
                "tree",
            ): r"/api/datasets/(?P<repo>[^/]+/[^/]+)/tree/(?P<rev>[^/]+)(?:/(?P<path>.+))?",
            (
                "POST",
                "paths-info",
            ): r"/api/datasets/(?P<repo>[^/]+/[^/]+)/paths-info/(?P<rev>[^/]+)",
            (
                "GET",
                "resolve",
            ): r"/datasets/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)",
            (
                "HEAD",
                "resolve",
            ): r"/datasets/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)",
        }
        for (method, name), pattern in patterns.items():
            match = re.fullmatch(pattern, url.path)
            if method != request.command or not match:
                continue
            if unquote(match["repo"]) != self.repo_id:
                return error(404, "RepoNotFound", "Repository not found")
            revision = unquote(match["rev"])
            sha = revision if revision in self.commits else self.refs.get(revision)
            if sha is None:
                return error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            path = unquote(match.groupdict().get("path") or "").strip("/")
            if name == "revision":
                return self.repo_info(sha)
            if name == "tree":
                recursive = query.get("recursive", ["false"])[0].lower() == "true"
                cursor = int(query.get("cursor", ["0"])[0])
                return self.tree(request, sha, path, recursive, cursor)
            if name == "paths-info":
                form = parse_qs(request.body.decode())
                return self.paths_info(sha, form.get("paths", []))
            return self.resolve(sha, path)
        return unknown_route()

    def route_cdn(self, request):
        path = urlsplit(request.path).path
        match = re.fullmatch(r"/lfs/(?P<sha256>[0-9a-f]{64})", path)
        plain = unquote(path[len("/mirror/") :]) if path.startswith("/mirror/") else None
        if request.command not in ("GET", "HEAD") or not (match or plain is not None):
            return unknown_route()
        if plain is not None and plain not in self.mirror:
            return 404, {}, b"not found"
        sha256 = self.mirror[plain] if plain else match["sha256"]
        data = self.blobs.get(sha256)
        if data is None:
            return 404, {}, b"not found"
        if request.command == "GET" and self.holding is not None:
            with self.lock:
                wait, self.holding = self.holding <= 0, self.holding - 1
            if wait:
                self.held.set()
                self.release.wait()
        with self.lock:
            offset, times = self.damaged.get(sha256, (None, 0))
            if offset is not None and times != 0 and request.command == "GET":
                self.damaged[sha256] = [offset, times - 1]
                data = data[:offset] + bytes([data[offset] ^ 0xFF]) + data[offset + 1 :]
        status, headers, body = ranged(request, data, {"ETag": f'"{sha256}"'})
        if request.command == "GET" and status in (200, 206):
            start = int(headers.get("Content-Range", "bytes 0-").split()[1].split("-")[0])
            with self.lock:
                self.served.append((sha256, start, start + len(body)))
        return status, headers, body

    def damage(self, path, offset, times=-1):
        """Serve the byte at `offset` of the file at `path` (of any commit) flipped: `times`
        answers that hold it (-1: always)."""
        files = (f for f in self.commits.values() if path in f)
        sha256 = self.mirror.get(path) or hashlib.sha256(next(files)[path]).hexdigest()
        self.damaged[sha256] = [offset, times]

    def hold_after(self, answers):
        """Let the CDN answer `answers` GETs, then hold each next one until `release` is set."""
        self.holding = answers

    # -----------------------------------------------------------------------------------------
    # the answers

    def entry(self, sha, path):
        """The hub's description of a file or folder of a commit, as the tree endpoint gives it."""
        files = self.commits[sha]
        if path in files:
            data = files[path]
            entry = {"type": "file", "oid": git_blob_id(data), "size": len(data), "path": path}
            if path.endswith(self.lfs_suffixes):
                pointer = lfs_pointer(data)
                entry["oid"] = git_blob_id(pointer)  # git holds the pointer, LFS the bytes
                entry["lfs"] = {
                    "oid": hashlib.sha256(data).hexdigest(),
                    "size": len(data),
                    "pointerSize": len(pointer),
                }
            return entry
        tree_id = hashlib.sha1(f"tree {sha} {path}".encode()).hexdigest()
        return {"type": "directory", "oid": tree_id, "size": 0, "path": path}

    def folders(self, sha):
        return {str(parent) for path in self.commits[sha] for parent in PurePosixPath(path).parents}

    def repo_info(self, sha):
        info = {
            "_id": hashlib.sha1(self.repo_id.encode()).hexdigest()[:24],
            "id": self.repo_id,
            "author": self.repo_id.split("/")[0],
            "sha": sha,
            "lastModified": "2023-11-14T22:13:20.000Z",
            "private": False,
            "gated": False,
            "disabled": False,
            "tags": [],
            "downloads": 0,
            "likes": 0,
            "siblings": [{"rfilename": path} for path in sorted(self.commits[sha])],
        }
        return json_answer(info)

    def tree(self, request, sha, path, recursive, cursor):
        folders = self.folders(sha)
        if path and path not in folders:
            return error(404, "EntryNotFound", f"{path} does not exist on {sha}")
        prefix = f"{path}/" if path else ""
        children = sorted(  # in reverse name order: the hub promises none, so neither do we
            {
                candidate
                for candidate in (set(self.commits[sha]) | folders) - {".", ""}
                if candidate.startswith(prefix)
                and (recursive or "/" not in candidate[len(prefix) :])
            },
            reverse=True,
        )
        page = [self.entry(sha, child) for child in children[cursor : cursor + self.page_size]]
        headers = {}
        if cursor + self.page_size < len(children):
            url = urlsplit(request.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            query["cursor"] = str(cursor + self.page_size)
            next_query = "&".join(f"{k}={quote(v)}" for k, v in query.items())
            headers["Link"] = f'<{self.endpoint}{url.path}?{next_query}>; rel="next"'
        return json_answer(page, headers)

    def paths_info(self, sha, paths):
        known = set(self.commits[sha]) | self.folders(sha)
        return json_answer([self.entry(sha, p.strip("/")) for p in paths if p.strip("/") in known])

    def resolve(self, sha, path):
        files = self.commits[sha]
        if path not in files:
            status, headers, body = error(404, "EntryNotFound", f"{path} does not exist on {sha}")
            headers["X-Repo-Commit"] = sha  # the client caches a missing file per commit
            return status, headers, body
        data, entry = files[path], self.entry(sha, path)
        headers = {"X-Repo-Commit": sha, "Accept-Ranges": "bytes", "Last-Modified": LAST_MODIFIED}
        if "lfs" not in entry:
            headers["ETag"] = f'"{entry["oid"]}"'
            return 200, headers, data  # a HEAD drops the body, keeps its Content-Length
        sha256 = entry["lfs"]["oid"]
        headers.update(
            {
                "ETag": f'"{entry["oid"]}"',  # the pointer's id; the file's own is X-Linked-Etag
                "X-Linked-Etag": f'"{sha256}"',
                "X-Linked-Size": str(len(data)),
                "Location": f"{self.cdn_url}/lfs/{sha256}",
            }
        )
        return 302, headers, b""


def lfs_pointer(data):
    """The small text file git stores in place of an LFS file."""
    return (
        "version https://git-lfs.github.com/spec/v1\n"
        f"oid sha256:{hashlib.sha256(data).hexdigest()}\nsize {len(data)}\n"
    ).encode()


def ranged(request, data, headers):
    """`data`, or the part a `Range: bytes=START-END` header asks for (206)."""
    headers = {**headers, "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
    wanted = re.fullmatch(r"bytes=(\d*)-(\d*)", request.headers.get("Range", "").strip())
    if not wanted:
        return 200, headers, data
    first, last = wanted.groups()
    if first == "":  # the last N bytes
        start, end = max(0, len(data) - int(last)), len(data) - 1
    else:
        start, end = int(first), min(len(data) - 1, int(last)) if last else len(data) - 1
    if start >= len(data) or start > end:
        return 416, {"Content-Range": f"bytes */{len(data)}"}, b""
    headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
    return 206, headers, data[start : end + 1]


def json_answer(value, headers=None):
    return 200, {"Content-Type": "application/json", **(headers or {})}, json.dumps(value).encode()


def error(status, code, message):
    body = json.dumps({"error": message}).encode()
    return (
        status,
        {"Content-Type": "application/json", "X-Error-Code": code, "X-Error-Message": message},
        body,
    )


def unknown_route():
    return 404, {"X-Unknown-Route": "1"}, b"no such route in tests/stand_ins/hub_server.py"


def parquet_bytes(texts):
    """A parquet file of one `text` column, as the hub's OpenWebText files are."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table({"text": pa.array(texts, type=pa.string())}), buffer)
    return buffer.getvalue()


def openwebtext_files(documents, sizes, config="plain_text"):
    """`documents` cut into parquet files of `sizes` documents, named as the real repo's:
    [d0, d1, d2], sizes [1, 2] ->
    {"plain_text/train-00000-of-00080.parquet": [d0], ...-00001-...: [d1, d2]}
    """
    assert sum(sizes) == len(documents)
    files, start = {}, 0
    for number, size in enumerate(sizes):
        name = f"{config}/train-{number:05d}-of-00080.parquet"
        files[name] = parquet_bytes(documents[start : start + size])
        start += size
    return files


# ---------------------------------------------------------------------------------------------
# FineWeb and FineWeb-Edu, laid out as on the hub: a dataset card whose `configs:` name the
# folders, and parquet files of FineWeb's columns. The real cards (HuggingFaceFW/fineweb-edu's
# README.md) map `default` to data/*/* and each sample to its folder:
#     - config_name: sample-10BT
#       data_files:
#         - split: train
#           path: sample/10BT/*
# and the sample folders hold 000_00000.parquet, 001_00000.parquet, ... (sample/10BT: 14 files,
# 9,672,101 documents, as public projects that pin it record; not checked here). The columns
# are the real files' as such projects check them: FineWeb-Edu's sample files have no `date`
# column (its card's `default` features list one); FineWeb's have `date` and no scores (the
# example document in llm.c's dev/data/fineweb.py).

FINEWEB_REPOS = {"edu": "HuggingFaceFW/fineweb-edu", "classic": "HuggingFaceFW/fineweb"}
FINEWEB_SAMPLES = ("10BT", "100BT", "350BT")
FINEWEB_COLUMNS = {  # name -> arrow type, in the files' order
    "edu": {
        "text": "string",
        "id": "string",
        "dump": "string",
        "url": "string",
        "file_path": "string",
        "language": "string",
        "language_score": "float64",
        "token_count": "int64",
        "score": "float64",
        "int_score": "int64",
    },
    "classic": {
        "text": "string",
        "id": "string",
        "dump": "string",
        "url": "string",
        "date": "string",
        "file_path": "string",
        "language": "string",
        "language_score": "float64",
        "token_count": "int64",
    },
}


def fineweb_card(kind):
    """The README.md of FineWeb ("classic") or FineWeb-Edu ("edu"), its `configs:` as the real
    card's (the default config and the samples; the real one also lists every CC-MAIN dump)."""
    configs = ["  - config_name: default", "    data_files:", "      - split: train"]
    configs.append("        path: data/*/*")
    for sample in FINEWEB_SAMPLES:
        configs += [f"  - config_name: sample-{sample}", "    data_files:", "      - split: train"]
        configs.append(f"        path: sample/{sample}/*")
    pretty = {"edu": "FineWeb-Edu", "classic": "FineWeb"}[kind]
    lines = ["---", "license: odc-by", f"pretty_name: {pretty}", "configs:", *configs, "---"]
    return ("\n".join(lines) + f"\n\n# {pretty} (a small stand-in for tests)\n").encode()


def fineweb_parquet(texts, kind, first_row=0, row_group_size=None):
    """A parquet file of FineWeb's columns around `texts` (the other columns are made up), in
    row groups of `row_group_size` rows (None: one), each page with its CRC."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = range(first_row, first_row + len(texts))
    made_up = {
        "id": [f"<urn:uuid:00000000-0000-0000-0000-{row:012d}>" for row in rows],
        "dump": ["CC-MAIN-2013-20"] * len(texts),
        "url": [f"http://example.com/{row}" for row in rows],
        "date": ["2013-05-18T07:24:47Z"] * len(texts),
        "file_path": ["s3://commoncrawl/crawl-data/CC-MAIN-2013-20/segment.warc.gz"] * len(texts),
        "language": ["en"] * len(texts),
        "language_score": [0.95] * len(texts),
        "token_count": [len(text.split()) for text in texts],  # a stand-in, not GPT-2's count
        "score": [3.0] * len(texts),
        "int_score": [3] * len(texts),
        "text": list(texts),
    }
    columns = FINEWEB_COLUMNS[kind]
    table = pa.table({name: pa.array(made_up[name], type=columns[name]) for name in columns})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, row_group_size=row_group_size, write_page_checksum=True)
    return buffer.getvalue()


def fineweb_files(kind, samples, row_group_size=None):
    """A FineWeb repo's files: its card, one file of one dump, and for each sample
    {"10BT": (documents, sizes)} the documents cut into parquet files of `sizes` rows, named as
    the real ones (000_00000.parquet).
    """
    files = {
        "README.md": fineweb_card(kind),
        # the default config's folder must hold a file: datasets reads the first config's files
        # to learn the format, whatever config is asked for
        "data/CC-MAIN-2013-20/000_00000.parquet": fineweb_parquet(["a page of a dump"], kind),
    }
    for sample, (documents, sizes) in samples.items():
        assert sum(sizes) == len(documents)
        start = 0
        for number, size in enumerate(sizes):
            path = f"sample/{sample}/{number:03d}_00000.parquet"
            texts = documents[start : start + size]
            files[path] = fineweb_parquet(texts, kind, start, row_group_size)
            start += size
    return files


def unused_port_url():
    """The URL of a port of 127.0.0.1 nothing listens on: a hub that cannot be reached."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"
