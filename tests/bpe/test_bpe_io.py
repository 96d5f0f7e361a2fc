"""bpe/io.py: our tokenizer file, GPT-2's file pair, the byte alphabet."""

import hashlib
import json
import re

import pytest
from conftest import REPO, assert_clean_failure, hand_made_tokenizer, run_python

from bpe import EOT, Tokenizer
from bpe.io import (
    BYTE_TO_CHAR,
    TokenizerFileError,
    parse_token,
    render_token,
)

# ---------------------------------------------------------------- the byte alphabet


def test_gpt2_byte_alphabet_examples():
    assert render_token(b" the") == "Ġthe" and render_token(b"\n") == "Ċ"
    assert parse_token("Ġthe") == b" the"
    assert sorted(BYTE_TO_CHAR) == list(range(256)) and len(set(BYTE_TO_CHAR.values())) == 256
    assert all(parse_token(render_token(bytes([b]))) == bytes([b]) for b in range(256))


# ---------------------------------------------------------------- save and load


def test_save_load_same_ids_and_same_bytes(trained, shakespeare, tmp_path):
    path = tmp_path / "tok.json"
    trained.save(path)
    loaded = Tokenizer.load(path)
    text = shakespeare[300_000:320_000] + EOT
    assert loaded.encode(text) == trained.encode(text)
    assert loaded.vocab == trained.vocab and loaded.merges == trained.merges
    loaded.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == trained.sha256()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left


def test_the_saved_file_is_readable(trained, tmp_path):
    path = tmp_path / "tok.json"
    trained.save(path)
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    assert text.endswith("}\n")
    assert lines[1:4] == [
        '  "format": "nanogpt-bpe-tokenizer",',
        '  "version": 1,',
        '  "pattern": "gpt2",',
    ]
    assert lines[4] == '  "special_tokens": {"<|endoftext|>": 999},'
    # one merge per line, in GPT-2's printable alphabet, e.g. "Ġ t" for (b" ", b"t")
    first = trained.merges[0]
    assert (
        lines[7]
        == "    "
        + json.dumps(
            f"{render_token(first[0])} {render_token(first[1])}",
            ensure_ascii=False,
        )
        + ","
    )
    assert len(lines) == 7 + len(trained.merges) + 3
    assert json.loads(text)["single_bytes"][ord("!")] == "!"


def test_a_custom_pattern_and_permuted_bytes_survive_save_load(tmp_path):
    vocab = {i: bytes([255 - i]) for i in range(256)} | {256: b"ab"}
    tok = Tokenizer(vocab, [(b"a", b"b")], {EOT: 257}, pattern=r"\S+|\s+")
    tok.save(tmp_path / "t.json")
    loaded = Tokenizer.load(tmp_path / "t.json")
    assert loaded.vocab == tok.vocab and loaded.pattern == r"\S+|\s+"
    assert loaded.encode("ab a" + EOT) == [256, 255 - ord(" "), 255 - ord("a"), 257]
    assert json.loads((tmp_path / "t.json").read_text())["pattern"] == r"\S+|\s+"


def write_json_file(tmp_path, change):
    tok = hand_made_tokenizer([(b"a", b"b"), (b"ab", b"c")], [EOT])
    document = json.loads(tok.to_json())
    change(document)
    path = tmp_path / "tok.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "change, message",
    [
        pytest.param(
            lambda d: d.update(format="something-else"), "is not a tokenizer file", id="format"
        ),
        pytest.param(
            lambda d: d.update(version=2),
            "has tokenizer format version 2, but this code reads version 1",
            id="version",
        ),
        pytest.param(lambda d: d.update(version=True), "format version True", id="version-true"),
        pytest.param(lambda d: d.update(version=1.0), "format version 1.0", id="version-float"),
        pytest.param(
            lambda d: d.pop("merges"), r"lacks the field\(s\) \['merges'\]", id="no-merges"
        ),
        pytest.param(
            lambda d: d["merges"].__setitem__(1, "ab zz"),
            r"merge 1 \('ab zz'\) refers to the unknown token 'zz'",
            id="unknown-token",
        ),
        pytest.param(
            lambda d: d["merges"].__setitem__(0, "ab c"),
            r"merge 0 \('ab c'\) refers to the unknown token 'ab'",
            id="token-used-before-made",
        ),
        pytest.param(
            lambda d: d["merges"].append("a b"),
            r"merge 2 \('a b'\) makes the duplicate token 'ab', which already has id 256",
            id="duplicate-token",
        ),
        pytest.param(
            lambda d: d["merges"].append("abc"), r"merge 2: expected two tokens", id="one-token"
        ),
        pytest.param(
            lambda d: d.update(single_bytes=d["single_bytes"][:255] + "a"),
            "repeats a byte",
            id="single-bytes",
        ),
        pytest.param(
            lambda d: d["special_tokens"].update({"<|pad|>": 258}),
            r"both have id 258",
            id="special-id-twice",
        ),
        pytest.param(
            lambda d: d.update(pattern="(unclosed"),
            r"neither a name \(gpt2, gpt4, nanochat\) nor a valid regex",
            id="pattern-invalid",
        ),
        pytest.param(
            lambda d: d.update(pattern=r"\X+|[\s\S]"),
            "is a valid Python regex but tiktoken cannot compile it",
            id="pattern-tiktoken-cannot-compile",
        ),
    ],
)
def test_load_errors_name_the_file(tmp_path, change, message):
    path = write_json_file(tmp_path, change)
    with pytest.raises(TokenizerFileError, match=message) as info:
        Tokenizer.load(path)
    assert str(path) in str(info.value)


def test_load_errors_for_missing_file_bad_json_and_duplicate_keys(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(TokenizerFileError, match=f"{missing} does not exist"):
        Tokenizer.load(missing)
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": ', encoding="utf-8")
    with pytest.raises(TokenizerFileError, match=f"{broken} is not valid JSON"):
        Tokenizer.load(broken)
    huge = tmp_path / "huge.json"
    huge.write_text('{"version": ' + "9" * 5000 + "}", encoding="utf-8")  # int() refuses it
    with pytest.raises(TokenizerFileError, match=f"{huge} holds a number of over 4,300 digits"):
        Tokenizer.load(huge)
    twice = tmp_path / "twice.json"
    twice.write_text('{"format": "a", "format": "b"}', encoding="utf-8")
    with pytest.raises(TokenizerFileError, match=f"{twice} has the key 'format' twice"):
        Tokenizer.load(twice)


def test_hf_pair_round_trip(trained, tmp_path):
    trained.save_hf(tmp_path)
    assert (tmp_path / "merges.txt").read_text(encoding="utf-8").startswith("#version: 0.2\n")
    loaded = Tokenizer.load_hf(tmp_path)
    assert loaded.vocab == trained.vocab and loaded.special_tokens == trained.special_tokens
    loaded.save_hf(tmp_path / "again")
    for name in ("vocab.json", "merges.txt"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / name).read_bytes()


def test_hf_pair_that_does_not_belong_together(trained, tmp_path):
    trained.save_hf(tmp_path)
    vocab = json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8"))
    first, second = [k for k, v in vocab.items() if v in (256, 257)]
    vocab[first], vocab[second] = 257, 256
    (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    with pytest.raises(
        TokenizerFileError, match="id 256 should be .* the two files do not belong together"
    ):
        Tokenizer.load_hf(tmp_path)


# ---------------------------------------------------------------- messages of a bounded length

HUGE = 10**7  # a merge, a pattern or a key of 10 MB: quoted, it must not make the error line huge


def duplicate_key_file(path):
    key = json.dumps("k" * HUGE)
    path.write_text(f'{{"format": "nanogpt-bpe-tokenizer", {key}: 1, {key}: 2}}', encoding="utf-8")


@pytest.mark.parametrize(
    "change, fragment",
    [
        pytest.param(
            lambda d: d["merges"].append("a " + "b" * HUGE), "unknown token", id="unknown-token"
        ),
        pytest.param(
            lambda d: d["merges"].append("x" * HUGE), "expected two tokens", id="no-space"
        ),
        pytest.param(
            lambda d: d.update(pattern="*" + "x" * HUGE), "nor a valid regex", id="pattern"
        ),
        pytest.param(
            lambda d: d.update(pattern="(" * HUGE), "maximum recursion depth", id="pattern-deep"
        ),
        pytest.param(lambda d: d.update(version="9" * HUGE), "format version", id="version"),
        pytest.param(
            lambda d: d["special_tokens"].update({"s" * HUGE: 258}), "both have id", id="special"
        ),
        pytest.param(duplicate_key_file, "twice", id="duplicate-key"),
    ],
)
def test_a_huge_value_is_quoted_short_in_the_error_line(tmp_path, change, fragment):
    """The error of `python -m bpe show --tokenizer FILE` quotes the 10 MB value by its start and
    its length (checks.shown), in a line of a few hundred characters."""
    path = tmp_path / "tok.json"
    if change is duplicate_key_file:
        change(path)
    else:
        path = write_json_file(tmp_path, change)
    result = run_python("-m", "bpe", "show", "--tokenizer", path, "hi", cwd=REPO)
    assert_clean_failure(result, fragment, str(path))
    assert re.search(r"\.\.\. \(10,000,00\d characters\)", result.stderr), result.stderr[:1000]
    assert len(result.stderr) < 1000, result.stderr[:1000]
