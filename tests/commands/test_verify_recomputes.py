"""verify recomputes every figure a folder states from the bytes a trainer reads, reads untrusted
files as data (a pickle through an allow-list, every file a regular one first), and the commands'
messages name what went wrong: each damage is a case of a table, on a real prepared folder."""

import hashlib
import json
import os
import pickle
import resource
import shutil

import numpy as np
import pytest
from conftest import COMMON, REPO, assert_one_line, run, run_python, write_jsonl

from formats.schema import NANOCHAT_TOKEN_BYTES, NANOCHAT_TOKENIZER, TOKEN_BYTES
from inspection import main as inspect_folder

pytestmark = pytest.mark.usefixtures("downloads")  # Tiny Shakespeare, GPT-2's files


def script(name):
    return REPO / "data" / name / "prepare.py"


NANOCHAT = script("nanochat")
ENV = {"PYTHONPATH": str(REPO)}


def inspect(*args, env=None):
    """A command of prepare_common.py, in a session of its own: a hang fails the test."""
    return run(COMMON, *args, env=env)


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def edit_meta(folder, change):
    meta = json.loads((folder / "meta.json").read_text())
    change(meta)
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))


@pytest.fixture(scope="module")
def nanochat_set(shakespeare_path, tmp_path_factory):
    """Tiny Shakespeare prepared for nanochat with a 300-id tokenizer, never changed."""
    out = tmp_path_factory.mktemp("nanochat-set")
    shutil.copyfile(shakespeare_path, out / "input.txt")
    result = run_python(NANOCHAT, "--out-dir", out, "--vocab-size", 300, env=ENV)
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture
def nanochat_folder(nanochat_set, tmp_path):
    """A copy of the nanochat folder, for this test to damage."""
    return shutil.copytree(nanochat_set, tmp_path / "out")


@pytest.fixture(scope="module")
def gpt2_set(shakespeare_path, tmp_path_factory):
    """Tiny Shakespeare as GPT-2 ids (data/shakespeare), never changed."""
    out = tmp_path_factory.mktemp("gpt2-set")
    shutil.copyfile(shakespeare_path, out / "input.txt")
    result = run_python(script("shakespeare"), "--out-dir", out, env=ENV)
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture
def gpt2_folder(gpt2_set, tmp_path):
    return shutil.copytree(gpt2_set, tmp_path / "out")


def save_token_bytes(folder, array, name=TOKEN_BYTES):
    """Replace a token_bytes file by `array` and record its new sha256, as a tamperer would."""
    np.save(folder / name, array)
    digest = sha256(folder / name)

    def change(meta):
        if name == TOKEN_BYTES:
            meta["token_bytes"]["sha256"] = digest
        for item in meta.get("tokenizer_files", []):
            if item["file"] == name:
                item["sha256"] = digest

    edit_meta(folder, change)


def wrong_length(folder):
    lengths = np.load(folder / TOKEN_BYTES).astype(np.int64)
    lengths[300 - 10] += 1  # an id before the special tokens
    return lengths


def raise_bytes(meta):
    """Both records of the bytes of text, raised by 1,000 together."""
    for split in meta["splits"]:
        meta["splits"][split]["bytes"] = meta["splits"][split].get("bytes", 0) + 1000
        meta["token_bytes"]["bytes"][split] += 1000


def raise_tokens_bytes(meta):
    for split in meta["splits"]:
        meta["token_bytes"]["bytes"][split] += 1000


def edit_source(folder):
    path = folder / "input.txt"
    path.write_bytes(path.read_bytes().replace(b"First Citizen", b"Fi rst Citizen", 1))


def stale_token_bytes_pt(folder):
    path = folder / NANOCHAT_TOKEN_BYTES
    if path.exists():  # torch here: the run wrote it; a stale one is one it no longer lists
        edit_meta(folder, lambda m: m.update(tokenizer_files=m["tokenizer_files"][:1]))
    else:
        path.write_bytes(b"an earlier run's token_bytes.pt")


def split_totals_disagree(meta):
    meta["splits"]["train"]["documents"] += 1


def fifo(name):
    def make(folder):
        path = folder / name
        path.unlink()
        os.mkfifo(path)

    return make


NANOCHAT_CASES = [
    pytest.param(
        lambda f: edit_meta(f, split_totals_disagree), ["splits is", "add up to"], id="totals"
    ),
    pytest.param(lambda f: edit_meta(f, raise_bytes), ["add up to"], id="bytes-raised-together"),
    pytest.param(
        lambda f: edit_meta(f, raise_tokens_bytes), ["token_bytes.bytes"], id="token-bytes-raised"
    ),
    pytest.param(
        lambda f: save_token_bytes(f, wrong_length(f)), ["int64", "token_bytes"], id="int64"
    ),
    pytest.param(
        lambda f: save_token_bytes(f, np.load(f / TOKEN_BYTES).astype(np.float32)),
        ["float32"],
        id="float32",
    ),
    pytest.param(
        lambda f: np.save(f / TOKEN_BYTES, np.load(f / TOKEN_BYTES)[::-1].copy()),
        ["token_bytes.npy", "sha256"],
        id="token-bytes-sha256",
    ),
    pytest.param(edit_source, ["input.txt", "source sha256"], id="source-edited"),
    pytest.param(stale_token_bytes_pt, ["token_bytes.pt", "nanochat would read"], id="stale-pt"),
    pytest.param(
        lambda f: edit_meta(f, lambda m: m.update(tokenizer_files=[])),
        ["tokenizer_files"],
        id="empty-tokenizer-files",
    ),
    pytest.param(
        lambda f: edit_meta(f, lambda m: m.update(tokenizer=None)),
        ["tokenizer is null, yet tokenizer_files"],
        id="tokenizer-record-nulled",
    ),
    pytest.param(fifo(NANOCHAT_TOKENIZER), ["tokenizer.pkl", "not a regular file"], id="fifo-pkl"),
    pytest.param(fifo(TOKEN_BYTES), ["token_bytes.npy", "not a regular file"], id="fifo-npy"),
]


@pytest.mark.parametrize("damage, fragments", NANOCHAT_CASES)
def test_verify_flags_a_nanochat_folder_whose_figures_are_false(nanochat_folder, damage, fragments):
    """Each figure a nanochat folder states is recomputed from its shards and tokenizer files:
    a false one is one error line naming it, never OK, and a FIFO never makes verify hang."""
    damage(nanochat_folder)
    assert_one_line(inspect("verify", nanochat_folder), *fragments)


GPT2_CASES = [
    pytest.param(
        lambda f: save_token_bytes(f, wrong_length(f)), ["int64", "token_bytes"], id="int64"
    ),
    pytest.param(
        lambda f: save_token_bytes(f, np.load(f / TOKEN_BYTES).astype(np.float32)),
        ["float32"],
        id="float32",
    ),
    pytest.param(
        lambda f: edit_meta(f, raise_tokens_bytes), ["token_bytes.bytes"], id="bytes-raised"
    ),
    pytest.param(fifo(TOKEN_BYTES), ["token_bytes.npy", "not a regular file"], id="fifo-npy"),
]


@pytest.mark.parametrize("damage, fragments", GPT2_CASES)
def test_verify_flags_a_gpt2_folder_whose_token_bytes_are_false(gpt2_folder, damage, fragments):
    """token_bytes.npy is checked by dtype and shape as well as by value and sha256, and each
    split's bytes against its ids."""
    damage(gpt2_folder)
    assert_one_line(inspect("verify", gpt2_folder), *fragments)


def set_field(folder, path, value):
    """meta.json with the field at `path` ("val_bytes.files.0.tokens") set to `value`."""

    def change(meta):
        *parents, last = [int(key) if key.isdigit() else key for key in path.split(".")]
        for key in parents:
            meta = meta[key]
        meta[last] = value

    edit_meta(folder, change)


def field_case(kind, path, value, case_id):
    """A case of FIELD_CASES: the field as the line names it ("val_bytes.files[0].tokens")."""
    named = ".".join(f"[{key}]" if key.isdigit() else key for key in path.split("."))
    return pytest.param(kind, path, value, named.replace(".[", "["), id=case_id)


FIELD_CASES = [
    field_case("gpt2", "tokenizer.eot_id", "50256", "eot-id-a-string"),
    field_case("gpt2", "tokenizer.eot_id", 50256.0, "eot-id-a-float"),
    field_case("gpt2", "tokenizer.eot_id", True, "eot-id-a-boolean"),
    field_case("gpt2", "tokenizer.eot_id", 50257, "eot-id-past-the-vocabulary"),
    field_case("gpt2", "tokenizer.eot_id", -1, "eot-id-negative"),
    field_case("gpt2", "tokenizer.eot_id", 50255, "eot-id-not-the-tokenizers"),
    field_case("gpt2", "tokenizer.eot_id", None, "eot-id-null-for-gpt2"),
    field_case("gpt2", "val_bytes.files.0.tokens", 10**30, "sidecar-tokens-huge"),
    field_case("gpt2", "val_bytes.files.0.tokens", 1e30, "sidecar-tokens-a-float"),
    field_case("gpt2", "val_bytes.files.0.tokens", 0, "sidecar-tokens-0"),
    field_case("gpt2", "val_bytes.files.0.tokens", 36_058, "sidecar-tokens-one-short"),
    field_case("gpt2", "source.sha256", 5, "source-sha256-a-number"),
    field_case("gpt2", "source.sha256", None, "source-sha256-null"),
    field_case("gpt2", "source.sha256", "abc", "source-sha256-short"),
    field_case("nanochat", "tokenizer.bos_id", "291", "bos-id-a-string"),
    field_case("nanochat", "tokenizer.bos_id", 291.0, "bos-id-a-float"),
    field_case("nanochat", "tokenizer.bos_id", None, "bos-id-null"),
    field_case("nanochat", "tokenizer.bos_id", 300, "bos-id-past-the-vocabulary"),
    field_case("nanochat", "tokenizer.bos_id", 290, "bos-id-not-the-tokenizers"),
    field_case("nanochat", "tokenizer.pattern", 5, "pattern-a-number"),
    field_case("nanochat", "tokenizer.pattern", "gpt2", "pattern-not-nanochats"),
    field_case("nanochat", "tokenizer.eot_id", "x", "nanochat-eot-id-a-string"),
    field_case("nanochat", "source.sha256", 5, "nanochat-source-sha256-a-number"),
]


@pytest.mark.parametrize("kind, path, value, named", FIELD_CASES)
def test_verify_names_a_meta_json_field_of_the_wrong_form(kind, path, value, named, request):
    """meta.json is input like any other: a special id that is not an id of the tokenizer, a
    sidecar's count of tokens that is not its ids file's, a source's sha256 that is not one (which
    would turn the source's check off), nanochat's pattern that is not its own, each written into
    a real prepared folder, is one error line naming meta.json and the field: never a traceback,
    never OK."""
    folder = request.getfixturevalue(f"{kind}_folder")
    set_field(folder, path, value)
    assert_one_line(inspect("verify", folder), "meta.json", named)


def registry_name_pickle(folder, encoding):
    """A 46-byte tokenizer.pkl whose Encoding state is a registry name, its sha256 recorded."""
    encoding = getattr(encoding, "reference", encoding)  # tiktoken's, behind the fast encoder
    data = pickle.dumps(encoding)  # a registered encoding pickles as its name
    assert len(data) < 64
    (folder / NANOCHAT_TOKENIZER).write_bytes(data)
    digest = sha256(folder / NANOCHAT_TOKENIZER)

    def change(meta):
        meta["tokenizer"]["sha256"] = digest
        meta["tokenizer_files"][0]["sha256"] = digest

    edit_meta(folder, change)


@pytest.mark.parametrize("command", ["verify", "show", "packing"])
def test_a_pickled_registry_name_reaches_no_network(
    nanochat_folder, tmp_path, gpt2_encoding, command
):
    """tokenizer.pkl is read as data: a registered encoding's name (which tiktoken's own
    unpickling downloads) is refused in one line, with no download tried and no cache written."""
    registry_name_pickle(nanochat_folder, gpt2_encoding)
    cache = tmp_path / "tiktoken-cache"
    proxy = "http://127.0.0.1:9"  # a download tried would fail here at once, not hang
    env = {"TIKTOKEN_CACHE_DIR": str(cache), "https_proxy": proxy, "http_proxy": proxy}
    args = ["--block-size", "8"] if command == "packing" else []
    result = inspect(command, nanochat_folder, *args, env=env)
    assert_one_line(result, "tokenizer.pkl", "registered encoding")
    assert not cache.exists()


def test_the_unpickler_builds_the_encoding_itself(nanochat_set):
    """load_encoding builds a tiktoken.Encoding equal to the one pickled, from data alone."""
    from formats.nanochat import load_encoding

    path = nanochat_set / NANOCHAT_TOKENIZER
    ours, theirs = load_encoding(path), pickle.loads(path.read_bytes())
    assert ours._mergeable_ranks == theirs._mergeable_ranks
    assert ours._special_tokens == theirs._special_tokens and ours._pat_str == theirs._pat_str


def empty_val(folder):
    """A nanochat folder whose val shard holds 1,024 empty documents, its record rewritten."""
    from formats import nanochat

    meta = json.loads((folder / "meta.json").read_text())
    path = folder / meta["shards"][-1]["file"]
    nanochat.write_text_shard(path, [""] * 1024)
    digest = sha256(path)

    def change(meta):
        meta["shards"][-1].update(characters=0, bytes=0, sha256=digest)
        meta["splits"]["val"].update(characters=0, bytes=0)
        meta["token_bytes"]["bytes"]["val"] = 0
        meta["bytes"]["val"] = {**dict.fromkeys(meta["bytes"]["val"], 0), "documents": 1024}

    edit_meta(folder, change)


MESSAGE_CASES = [
    pytest.param(
        empty_val,
        ["packing", "--split", "val", "--block-size", "8"],
        1,
        ["no token of text"],
        id="packing-empty-documents",
    ),
]


@pytest.mark.parametrize("damage, args, code, fragments", MESSAGE_CASES)
def test_nanochat_messages(nanochat_folder, damage, args, code, fragments):
    """A command on a nanochat folder it cannot serve says why in one line."""
    damage(nanochat_folder)
    assert_one_line(inspect(args[0], nanochat_folder, *args[1:]), *fragments, code=code)


def test_packing_json_on_a_nanochat_folder(nanochat_set, capsys):
    """packing --json works on a nanochat folder: one JSON object of each figure the plain
    lines print, under the names a .bin folder's object uses for them."""
    args = ["packing", str(nanochat_set), "--block-size", "64"]
    inspect_folder(args)
    printed = capsys.readouterr().out
    inspect_folder([*args, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["documents"] == 6198 and 0 < report["best_fit_tokens_kept"] <= 1
    assert report.keys() == {
        *("documents", "tokens", "document_tokens", "block_size"),
        *("best_fit_tokens_kept", "bytes", "bytes_per_token"),
    }
    lengths = report["document_tokens"]
    for figure in [
        f"{report['documents']:,} documents, {report['tokens']:,} tokens",
        f"p50 {lengths['p50']:,}, p90 {lengths['p90']:,}, p99 {lengths['p99']:,}, "
        f"max {lengths['max']:,}\n",
        f"{report['bytes']:,} bytes of text: {report['bytes_per_token']:.2f} bytes per token",
        f"max_seq_len {report['block_size']:,} and its target",
        f"keep {report['best_fit_tokens_kept']:.1%} of the tokens",
    ]:
        assert figure in printed


def test_block_size_has_help_text():
    """packing --help says what --block-size is."""
    result = inspect("packing", "--help")
    assert result.returncode == 0 and "context length" in result.stdout


def test_full_disk_while_token_bytes_are_written_names_the_file(small_tmpfs, tmp_path):
    """A disk that fills up while token_bytes.npy (201 KB for GPT-2) is written is one line
    naming the file and the full disk (np.save would say only "50257 requested and 3040
    written")."""
    text = tmp_path / "small.txt"
    text.write_text("hello world\n" * 1000)
    result = run(script("shakespeare"), "--input", text, "--out-dir", small_tmpfs / "out")
    assert_one_line(result, "No space left on device", TOKEN_BYTES, "free some space", alone=False)


def test_openwebtext_wrote_line_names_every_file(paragraphs, tmp_path):
    """OpenWebText's "wrote" line names its document indexes, val's bytes sidecar and
    token_bytes.npy."""
    write_jsonl(tmp_path / "five.jsonl", paragraphs[100:105])
    env = {"HF_DATASETS_CACHE": str(tmp_path / "cache")}
    out = tmp_path / "out"
    result = run_python(
        script("openwebtext"), "--data-files", tmp_path / "five.jsonl", "--out-dir", out, env=env
    )
    assert result.returncode == 0, result.stderr
    wrote = next(line for line in result.stdout.splitlines() if line.startswith("wrote"))
    assert "train.docs.npy, val.docs.npy, val_bytes.bin, token_bytes.npy, meta.json" in wrote


def test_a_bin_of_a_torn_id_beside_its_index_is_named_by_its_size(paragraphs, tmp_path):
    """train.bin cut by a byte in a folder with a document index: verify names the file and its
    size, as for a folder without one (the index was read against the torn ids, and failed)."""
    write_jsonl(tmp_path / "five.jsonl", paragraphs[100:105])
    out = tmp_path / "out"
    args = ["--data-files", tmp_path / "five.jsonl", "--out-dir", out]
    result = run_python(script("openwebtext"), *args, env={"HF_DATASETS_CACHE": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    os.truncate(out / "train.bin", (out / "train.bin").stat().st_size - 1)
    assert_one_line(inspect("verify", out), "train.bin has", "bytes, expected")


def test_a_trained_tokenizers_meta_pkl_is_read_against_the_tokenizer(trained, tmp_path):
    """meta.pkl's itos, which sample.py decodes with, one token changed and its sha256 recorded
    anew: verify rebuilds stoi/itos from the tokenizer file and names meta.pkl (it said OK)."""
    trained.save(tmp_path / "tok.json")
    (tmp_path / "in.txt").write_text("To be, or not to be, that is the question.\n" * 50)
    out = tmp_path / "out"
    args = ["--input", tmp_path / "in.txt", "--tokenizer", tmp_path / "tok.json"]
    assert run_python(script("shakespeare"), *args, "--out-dir", out).returncode == 0
    content = pickle.loads((out / "meta.pkl").read_bytes())
    content["itos"][300] = "a token it is not"
    (out / "meta.pkl").write_bytes(pickle.dumps(content))
    edit_meta(out, lambda meta: meta["meta_pkl"].update(sha256=sha256(out / "meta.pkl")))
    assert_one_line(inspect("verify", out), "meta.pkl: stoi/itos are not those of the tokenizer")


OPEN_FILES = 256  # the open-file limit of the runs below: fewer than their folders' shards


def open_files_limit():
    """A process may open no more than OPEN_FILES files at once (ulimit -n)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, hard))


@pytest.mark.parametrize(
    "lesson, args",
    [
        pytest.param("fineweb", ["--shard-size", 50, "--num-proc", 1], id="fineweb"),
        pytest.param(
            "parameter_golf",
            ["--variant", "byte260", "--val-docs", 20, "--val-bytes", "--shard-size", 200],
            id="parameter-golf",
        ),
    ],
)
def test_a_folder_of_more_shards_than_open_files_verifies(lesson, args, paragraphs, tmp_path):
    """A folder of more shards than a process may open files is written, verified and audited
    by bpb under that limit: each shard is memory-mapped and let go in turn (all their maps
    held at once, each holding its file open, were "Too many open files")."""
    docs = write_jsonl(tmp_path / "docs.jsonl", paragraphs[:400])
    out, env = tmp_path / "out", {"HF_DATASETS_CACHE": str(tmp_path / "cache")}
    args = ["--data-files", docs, *args, "--out-dir", out]
    result = run(script(lesson), *args, env=env, preexec_fn=open_files_limit)
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(list(out.rglob("*.bin"))) > OPEN_FILES
    verified = run(COMMON, "verify", out, preexec_fn=open_files_limit)
    assert verified.returncode == 0 and f"{out}: OK" in verified.stdout, verified.stderr
    audited = run(COMMON, "bpb", out, preexec_fn=open_files_limit)
    assert audited.returncode == 0 and "lossless on val" in audited.stdout, audited.stderr
