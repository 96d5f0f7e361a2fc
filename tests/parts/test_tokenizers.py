"""formats/tokenizers.py: GPT-2's files and tiktoken's encoding, offline through the mirror set by
CI (never set here), and the trained tokenizers a --tokenizer option names."""

import hashlib
import os
import subprocess
import sys

import pytest
from conftest import REPO, names_in, write_files

from bpe import EOT, Tokenizer
from formats import tokenizers as coverage
from formats.tokenizers import GPT2_ENCODER_JSON, GPT2_VOCAB_BPE
from prepare_common import bpe_encoding
from safety import PrepareError
from safety.downloads import MIRROR_ENV
from safety.files import sha256_file
from safety.gpt2 import CACHE_ENV

pytestmark = pytest.mark.usefixtures("downloads")  # Tiny Shakespeare, GPT-2's files

TIKTOKEN_GPT2_URLS = [GPT2_VOCAB_BPE, GPT2_ENCODER_JSON]


@pytest.fixture
def fresh_caches(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken"))
    return tmp_path


def test_gpt2_encoding_offline_through_the_mirror(fresh_caches):
    encoding = coverage.gpt2_encoding()
    assert encoding.encode("hello world") == [31373, 995]
    assert encoding.n_vocab == 50257
    # tiktoken keeps encodings per process, so check the files it would read are where it looks
    tiktoken_cache = fresh_caches / "tiktoken"
    expected = {hashlib.sha1(r.url.encode()).hexdigest(): r.sha256 for r in TIKTOKEN_GPT2_URLS}
    assert names_in(tiktoken_cache) == sorted(expected)
    for name, sha in expected.items():
        assert sha256_file(tiktoken_cache / name) == sha
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(tiktoken_cache)


def test_gpt2_encoding_in_a_fresh_process_needs_no_network(tmp_path):
    """A new interpreter (no in-process tiktoken cache) whose every HTTP request would fail."""
    env = dict(os.environ)
    env[CACHE_ENV] = str(tmp_path / "cache")
    env.pop("TIKTOKEN_CACHE_DIR", None)
    for proxy in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "http_proxy",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ):
        env[proxy] = "http://127.0.0.1:9"  # nothing listens there
    env["NO_PROXY"] = env["no_proxy"] = ""
    code = (
        "from formats.tokenizers import gpt2_encoding; print(gpt2_encoding().encode('hello world'))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[31373, 995]"
    tiktoken_cache = tmp_path / "cache" / "tiktoken"
    assert names_in(tiktoken_cache) == sorted(
        hashlib.sha1(r.url.encode()).hexdigest() for r in TIKTOKEN_GPT2_URLS
    )


def test_gpt2_encoding_failure_is_our_one_line_error_not_tiktokens(
    fresh_caches, server, monkeypatch
):
    """tiktoken's files come through `fetch`, so a bad source is a PrepareError, and nothing is
    cached."""
    monkeypatch.setenv(MIRROR_ENV, server.base + "/mirror")  # serves 404 for everything
    with pytest.raises(PrepareError) as error:
        coverage.gpt2_encoding()
    assert f"{server.base}/mirror/gpt2/vocab.bpe" in str(error.value) and "404" in str(error.value)
    assert server.hits["/mirror/gpt2/vocab.bpe"] == 1  # a 4xx is not retried
    assert names_in(fresh_caches / "tiktoken") == []


# ---------------------------------------------------------------------------------------------
# bpe_encoding: GPT-2, or a tokenizer file written by train_tokenizer.py


def save_byte_tokenizer(special_tokens):
    """A writer for write_files: a 256-byte tokenizer (no merges) with these special tokens."""
    vocab = {i: bytes([i]) for i in range(256)}
    return lambda path: Tokenizer(vocab, [], special_tokens=special_tokens).save(path)


def test_bpe_encoding_of_gpt2_is_tiktokens():
    encoding, record = bpe_encoding()
    assert encoding.encode_ordinary("hello world") == [31373, 995]
    assert record["kind"] == "tiktoken" and record["name"] == "gpt2"
    assert (record["vocab_size"], record["eot_id"]) == (50257, 50256)


def test_bpe_encoding_of_a_trained_tokenizer(tmp_path):
    write_files(tmp_path, {"tok.json": save_byte_tokenizer([EOT])})
    encoding, record = bpe_encoding(tmp_path / "tok.json", need_eot=True)
    assert encoding.encode_ordinary("hi") == [ord("h"), ord("i")]
    assert record["kind"] == "bpe" and record["name"] == "tok"
    assert (record["vocab_size"], record["eot_id"]) == (257, 256)
    assert record["sha256"] == sha256_file(tmp_path / "tok.json")


@pytest.mark.parametrize(
    "files, need_eot, fragments",
    [
        pytest.param({}, False, ["does not exist", "train_tokenizer.py"], id="missing"),
        pytest.param(
            {"tok.json": '{"merges": 3}'}, False, ["is not a tokenizer file"], id="not-a-tokenizer"
        ),
        pytest.param(
            {"tok.json": save_byte_tokenizer([])},
            True,
            ["has no <|endoftext|> special token", "--special-tokens"],
            id="no-end-of-text",
        ),
    ],
)
def test_bpe_encoding_refuses_a_bad_tokenizer_file(tmp_path, files, need_eot, fragments):
    write_files(tmp_path, files)
    with pytest.raises(PrepareError) as excinfo:
        bpe_encoding(tmp_path / "tok.json", need_eot=need_eot)
    message = str(excinfo.value)
    assert str(tmp_path / "tok.json") in message
    for fragment in fragments:
        assert fragment in message


@pytest.mark.parametrize(
    "pattern, texts, error",
    [
        pytest.param(r"\w+", ["abc", "a b, c!"], "doc 1: character 1 (' ')", id="words-only"),
        pytest.param(r"\w+|\W+", ["abc", "a b, c!"], None, id="covering"),
        pytest.param(r"\w+", ["abc", "word"], None, id="words-only-on-words"),
        pytest.param("gpt2", ["abc", "a b, c!"], None, id="gpt2-not-checked"),
    ],
)
def test_check_documents_covered(tmp_path, pattern, texts, error):
    """A batch's ids must stand for every byte of its texts (the end-of-text id for none)."""
    Tokenizer({i: bytes([i]) for i in range(256)}, [], [EOT], pattern).save(tmp_path / "t.json")
    encoding, tokenizer = bpe_encoding(tmp_path / "t.json", need_eot=True)
    ids = [encoding.encode_ordinary(text) + [tokenizer["eot_id"]] for text in texts]
    assert coverage.token_bytes(ids[0], encoding) == 3  # "abc", and 0 for <|endoftext|>
    assert coverage.may_lose_text(encoding, tokenizer) == (pattern != "gpt2")

    def check():
        coverage.check_documents_covered(texts, ids, encoding, tokenizer, "doc {}".format)

    if error is None:
        check()
    else:
        with pytest.raises(PrepareError, match="would be lost") as raised:
            check()
        assert str(raised.value).startswith(error) and str(tmp_path / "t.json") in str(raised.value)
