"""The byte figures and the val bytes sidecar of every nanoGPT and llm.c folder, and the figures
of nanochat's (formats/val_bytes.py): the shares of each document sum to its UTF-8 length and the
figures match a recount, whatever the text and the tokenizer; verify names each tampering."""

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, run_python
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formats import compiled, nanochat
from formats.schema import FIGURES, VAL_BYTES, val_bytes_name
from formats.shards import read_shard, val_documents
from formats.val_bytes import (
    RecordTokens,
    batch_figures,
    compared,
    document_figures,
    document_shares,
    document_sums,
    figure_totals,
    joined,
    stream_shares,
    text_figures,
    write_counted,
    write_val_bytes,
)
from inspection import main as inspect_folder
from inspection.bpb import eval_val_line
from inspection.verify import verify
from prepare_common import (
    bpe_encoding,
    llmc_names,
    tokenize_documents,
    write_bin,
    write_shards,
)

# text a tokenizer could trip on: NUL, lone combining marks, CRLF, runs of spaces, 4-byte
# characters. No lone surrogates: the lessons read UTF-8 files and Arrow strings, which hold none.
PIECES = st.sampled_from(["\x00", "\u0301", "\r\n", "    ", "é", "中", "🙂", " a", "\n\n"])
TEXT = st.lists(
    st.one_of(PIECES, st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)),
    max_size=12,
).map("".join)
DOCUMENTS = st.lists(TEXT, min_size=1, max_size=6)


@pytest.fixture(scope="module")
def bpe_tokenizers(trained, tmp_path_factory):
    """(Encoding, meta.json record) of GPT-2 and of a small BPE trained on Tiny Shakespeare."""
    path = tmp_path_factory.mktemp("bpe") / "shakespeare-1000.json"
    trained.save(path)
    return {"gpt2": bpe_encoding(), "trained": bpe_encoding(path, need_eot=True)}


def expected_sums(documents):
    return [len(text.encode()) for text in documents]


def lossless_figures(documents):
    size = sum(expected_sums(documents))
    return {
        **dict.fromkeys(FIGURES, 0),
        "documents": len(documents),
        "text_bytes": size,
        "tokenizer_bytes": size,
        "decoded_bytes": size,
    }


def sidecar_sums(shares, ids, eot_id, eot_first):
    """Each document's sum of the shares, its end-of-text included, from where that sits."""
    ends = np.asarray(ids) == eot_id
    number = np.cumsum(ends) - (1 if eot_first else ends)  # the document each token is of
    return np.bincount(number, weights=shares, minlength=int(ends.sum())).astype(int).tolist()


@pytest.mark.parametrize("name", ["gpt2", "trained"])
@pytest.mark.parametrize("layout", ["nanogpt", "llmc", "npy"])
@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(train=DOCUMENTS, val=DOCUMENTS)
def test_bpe_shares_sum_to_each_document_and_figures_match(
    bpe_tokenizers, name, layout, train, val
):
    """GPT-2 and a trained BPE, in val.bin (end-of-text last) or in llm.c's and build-nanogpt's
    shards (end-of-text first, shards cut mid-document), the figures counted as the lessons count
    them (tokenize_documents, then counted_figures or shard_figures' sums): each val document's
    shares sum to its UTF-8 length, an end-of-text's is 0, and each split's figures are lossless,
    val's bytes those of its ids where its last document straddles into train."""
    encoding, tokenizer = bpe_tokenizers[name]
    eot_id, eot_first = tokenizer["eot_id"], layout != "nanogpt"
    encoded = {
        split: tokenize_documents(
            texts, range(len(texts)), encoding, tokenizer, np.uint16, "doc", eot_first, True
        )
        for split, texts in (("train", train), ("val", val))
    }
    ids = {split: out["ids"] for split, out in encoded.items()}
    rows = {split: out["figures"] for split, out in encoded.items()}
    with tempfile.TemporaryDirectory() as folder:
        out, meta = Path(folder), {"dtype": "uint16"}
        if layout == "nanogpt":
            for split in ("train", "val"):
                write_bin(out / f"{split}.bin", ids[split], np.uint16, tokenizer["vocab_size"])
            meta["splits"] = {s: {"tokens": int(sum(map(len, ids[s])))} for s in ("train", "val")}
        else:
            stream = ids["val"] + ids["train"]  # one stream, cut in shards
            names = llmc_names("t")  # shard 0 val, the others train
            size = max(1, sum(map(len, ids["val"])) - 1)
            meta["shards"] = write_shards(
                out, stream, names, size, np.uint16, tokenizer["vocab_size"], layout, say=False
            )
            meta.update(format=layout, splits={"val": {}, "train": {}})
            documents, stream_rows = val + train, np.concatenate([rows["val"], rows["train"]])
            count = val_documents([len(ids) for ids in stream], size)  # the lessons' rule
            train, val = documents[count:], documents[:count]
            rows = {"val": stream_rows[:count], "train": stream_rows[count:]}
        record = write_counted(out, meta, tokenizer, figure_totals(rows), eot_first)
        files = record["val_bytes"]["files"]
        if layout == "nanogpt":
            shares = np.fromfile(out / VAL_BYTES, "<u2")
            val_ids = np.fromfile(out / "val.bin", "<u2")
        else:
            shares = np.concatenate([read_shard(out / f["file"], layout, np.uint16) for f in files])
            val_ids = np.concatenate([read_shard(out / f["ids"], layout, np.uint16) for f in files])
        assert len(shares) == len(val_ids)
        assert shares[val_ids == eot_id].sum() == 0
    sums = sidecar_sums(shares, val_ids, eot_id, eot_first)
    if layout == "nanogpt":
        assert sums == expected_sums(val)
        assert record["bytes"] == {"train": lossless_figures(train), "val": lossless_figures(val)}
    else:  # shard 0 ends one token before val's end: its last document is cut with it
        whole = expected_sums(val)
        assert sums[:-1] == whole[:-1] and sums[-1] <= whole[-1]
        cut = whole[-1] - sums[-1]  # the bytes of its token in train's shard: train's bytes
        figures = {"train": lossless_figures(train), "val": lossless_figures(val)}
        for name in ("text_bytes", "tokenizer_bytes", "decoded_bytes"):
            figures["val"][name] -= cut
            figures["train"][name] += cut
        assert record["bytes"] == figures
        assert figures["val"]["text_bytes"] == shares.sum()


@settings(max_examples=200, deadline=None)
@given(
    documents=st.lists(
        st.tuples(st.lists(st.integers(1, 5), max_size=6), st.integers(-3, 3)), max_size=8
    ),
    eot=st.sampled_from(["first", "last"]),
)
def test_stream_shares_are_document_shares(documents, eot):
    """The shares of a stream of documents at once are document_shares' of each, joined: for a
    document whose tokens' lengths add up to its size, and for one a few bytes longer or shorter
    (its last token takes the difference, or its end-of-text where it has no token)."""
    lengths, eot_id = np.array([0, 1, 2, 3, 7, 300]), 0
    ids, sizes, expected = [], [], []
    for own, difference in documents:
        size = max(0, int(lengths[own].sum()) + difference)
        ids += [eot_id, *own] if eot == "first" else [*own, eot_id]
        sizes.append(size)
        expected += document_shares(np.array(own, int), size, lengths, eot).tolist()
    shares = stream_shares(np.array(ids, np.uint16), np.array(sizes), lengths, eot_id, eot)
    assert shares.tolist() == expected


@pytest.fixture(scope="module")
def record_tokens(bpe_tokenizers):
    """The figures' RecordTokens of each tokenizer of bpe_tokenizers, with its Encoding."""
    return {
        name: (encoding, RecordTokens(tokenizer, encoding=encoding))
        for name, (encoding, tokenizer) in bpe_tokenizers.items()
    }


@pytest.fixture(scope="module")
def compiled_tokens(bpe_tokenizers):
    """record_tokens' RecordTokens comparing in formats/compiled.py's loop (numba installed)."""
    return {
        name: RecordTokens(tokenizer, encoding=encoding, compiled=True)
        for name, (encoding, tokenizer) in bpe_tokenizers.items()
    }


@pytest.mark.parametrize("name", ["gpt2", "trained"])
@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_decode_is_tiktoken_s(record_tokens, name, data):
    """The figures' decode (each id's bytes gathered by numpy) is tiktoken's decode_bytes then
    UTF-8 with replacement, on any ids, special ones and pieces of characters among them."""
    encoding, tokens = record_tokens[name]
    ids = data.draw(st.lists(st.integers(0, encoding.n_vocab - 1), max_size=40))
    expected = encoding.decode_bytes(ids).decode("utf-8", "replace")
    assert tokens.decode(np.array(ids, dtype=np.int64)) == expected


@pytest.mark.parametrize("name", ["gpt2", "trained"])
def test_token_pieces_are_each_id_s_bytes(record_tokens, name):
    """Each id's piece, read from the ranks and the special tokens, is tiktoken's
    decode_single_token_bytes of it, for every id of the vocabulary."""
    encoding, tokens = record_tokens[name]
    expected = [encoding.decode_single_token_bytes(i) for i in range(encoding.n_vocab)]
    assert tokens.pieces.tolist() == expected


def drawn_batch(data, encoding):
    """Texts, each with its own ids, the ids of a text one character away, or random ids."""
    texts = data.draw(st.lists(TEXT, max_size=8))
    near = st.tuples(st.integers(0, 10**6), PIECES)  # a character replaced, or one added
    documents = [
        data.draw(
            st.one_of(
                st.just(encoding.encode_ordinary(text)),
                near.map(lambda n, text=text: encoding.encode_ordinary(replaced(text, *n))),
                st.lists(st.integers(0, encoding.n_vocab - 1), max_size=12),
            )
        )
        for text in texts
    ]
    return texts, documents


def replaced(text, at, piece):
    """text with its character at `at` (modulo its length) replaced by piece; "" -> piece."""
    at = at % len(text) if text else 0
    return text[:at] + piece + text[at + 1 :]


@pytest.mark.parametrize("name", ["gpt2", "trained"])
@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_batch_figures_are_document_figures(record_tokens, compiled_tokens, name, data):
    """The figures of a batch counted at once (in numpy, and compiled where numba is installed)
    are document_figures' of each document, whether its ids are its text's (lossless), another
    text's one character away, or random ids; given as lists, or as arrays of a shard's uint16
    or uint32 (compared in their own type)."""
    encoding, tokens = record_tokens[name]
    texts, documents = drawn_batch(data, encoding)
    expected = [list(document_figures(t, d, tokens)) for t, d in zip(texts, documents)]
    assert batch_figures(texts, documents, tokens).tolist() == expected
    assert batch_figures(texts, documents, compiled_tokens[name]).tolist() == expected
    assert encoding.n_vocab <= 2**16
    for dtype in (np.uint16, np.uint32):
        arrays = [np.asarray(ids, dtype) for ids in documents]
        assert batch_figures(texts, arrays, tokens).tolist() == expected
        assert batch_figures(texts, arrays, compiled_tokens[name]).tolist() == expected


@pytest.mark.skipif(compiled.decodes_to is None, reason="numba is not installed (the fast extra)")
@pytest.mark.parametrize("name", ["gpt2", "trained"])
@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_compiled_comparison_is_numpy_s(record_tokens, compiled_tokens, name, data):
    """formats/compiled.py's loop gives what the numpy comparison gives, document by document:
    whether its ids' bytes are its text's, and its bytes by the tokenizer's count."""
    encoding, tokens = record_tokens[name]
    texts, documents = drawn_batch(data, encoding)
    ids, counts = joined(documents)
    encoded = [text.encode() for text in texts]
    assert compiled_tokens[name].kernel is not None
    same, own = compared(compiled_tokens[name], ids, counts, encoded)
    assert same.tolist() == tokens.decodes_to(ids, counts, encoded).tolist()
    assert own.tolist() == document_sums(tokens.lengths[ids], counts).tolist()


@pytest.mark.parametrize(
    "text, ids_of",
    [
        pytest.param("!because", " because", id="first-byte-of-an-8-byte-token"),
        pytest.param(" becausf", " because", id="last-byte-of-an-8-byte-token"),
        pytest.param(" informatioN", " information", id="a-byte-of-a-long-token-s-second-word"),
        pytest.param(" informatio", " information", id="a-byte-short"),
        pytest.param(" informationn", " information", id="a-byte-long"),
        pytest.param("", " a", id="an-empty-text"),
    ],
)
def test_a_changed_byte_is_counted_changed(record_tokens, compiled_tokens, text, ids_of):
    """A document whose ids stand for a text one byte away from its own is counted changed, by
    the numpy comparison and by the compiled one alike: no byte of a token goes unread."""
    encoding, tokens = record_tokens["gpt2"]
    ids = encoding.encode_ordinary(ids_of)
    for each in (tokens, compiled_tokens["gpt2"]):
        assert batch_figures([text], [ids], each)[0, FIGURES.index("changed_documents")] == 1
        assert not compared(each, *joined([ids]), [text.encode()])[0][0]


@settings(max_examples=20, deadline=None)
@given(train=TEXT.filter(bool), val=TEXT.filter(bool))
def test_char_shares_are_each_character_s_bytes(train, val):
    """A character tokenizer (nanoGPT's shakespeare_char, each split one text): the shares are
    each character's UTF-8 length, summing to the split's, and the figures are lossless."""
    chars = "".join(sorted(set(train + val)))
    stoi = {c: i for i, c in enumerate(chars)}
    tokenizer = {"kind": "char", "chars": chars, "vocab_size": len(chars), "eot_id": None}
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        for split, text in (("train", train), ("val", val)):
            write_bin(out / f"{split}.bin", [[stoi[c] for c in text]], np.uint16, len(chars))
        meta = {"dtype": "uint16", "splits": {"train": {}, "val": {"tokens": len(val)}}}
        record = write_val_bytes(out, meta, tokenizer, {"train": train, "val": val})
        shares = np.fromfile(out / VAL_BYTES, "<u2")
    assert shares.tolist() == [len(c.encode()) for c in val]
    assert record["bytes"] == {"train": lossless_figures([train]), "val": lossless_figures([val])}
    assert record["val_bytes"]["eot"] is None


@pytest.mark.parametrize(
    "ids_file, sidecar",
    [
        pytest.param("val.bin", "val_bytes.bin", id="nanogpt"),
        pytest.param("edu_fineweb_val_000000.bin", "edu_fineweb_bytes_000000.bin", id="llmc"),
        pytest.param("edufineweb_val_000000.npy", "edufineweb_bytes_000000.npy", id="npy"),
        pytest.param("TinyStories_val.bin", "TinyStories_bytes.bin", id="tinystories"),
    ],
)
def test_a_sidecar_s_name_is_no_trainer_s_val_file(ids_file, sidecar):
    """The sidecar's name holds no "val": build-nanogpt reads every name that does, and llm.c's
    globs every *_val_*.bin."""
    assert val_bytes_name(ids_file) == sidecar and "val" not in sidecar.replace("val_bytes", "")


@pytest.fixture(scope="module")
def char_folder(tmp_path_factory):
    """A folder of the real shakespeare_char lesson, on a small text of many scripts."""
    folder = tmp_path_factory.mktemp("char")
    text = folder / "input.txt"
    text.write_text("First Citizen:\r\nBefore we proceed \u0301 any further, 中文 🙂\n" * 40)
    script = "data/shakespeare_char/prepare.py"
    result = run_python(script, "--input", text, "--out-dir", folder / "out", cwd=REPO)
    assert result.returncode == 0, result.stderr
    return folder / "out"


def sha256_of(path):
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def change_share(folder, meta, resign):
    shares = np.fromfile(folder / VAL_BYTES, "<u2")
    shares[3] += 1
    shares.tofile(folder / VAL_BYTES)
    if resign:
        meta["val_bytes"]["files"][0]["sha256"] = sha256_of(folder / VAL_BYTES)


def shorten(folder, meta, by=2):
    (folder / VAL_BYTES).write_bytes((folder / VAL_BYTES).read_bytes()[:-by])
    meta["val_bytes"]["files"][0]["sha256"] = sha256_of(folder / VAL_BYTES)


def change_figure(name):
    def change(_folder, meta):
        meta["bytes"]["val"][name] += 1

    return change


def drop(key, file=None):
    """meta.json without its record `key` (and the folder without the `file` it listed)."""

    def change(folder, meta):
        del meta[key]
        if file is not None:
            (folder / file).unlink()

    return change


def rename(_folder, meta):
    meta["val_bytes"]["files"][0]["file"] = "prepare.py"


@pytest.mark.parametrize(
    "tamper, fragments",
    [
        pytest.param(
            lambda f, m: change_share(f, m, False), ["val_bytes.bin", "sha256"], id="share-changed"
        ),
        pytest.param(
            lambda f, m: change_share(f, m, True),
            ["val_bytes.bin: share 3 is"],
            id="share-changed-sha256-too",
        ),
        pytest.param(shorten, ["val_bytes.bin holds", "shares, val.bin"], id="wrong-length"),
        pytest.param(
            lambda f, m: shorten(f, m, by=1),
            ["val_bytes.bin has", "bytes, not a whole number of uint16 values"],
            id="cut-by-one-byte",
        ),
        pytest.param(change_figure("text_bytes"), ["bytes.val.text_bytes is"], id="text-bytes"),
        pytest.param(
            change_figure("changed_documents"), ["bytes.val.changed_documents"], id="changed"
        ),
        pytest.param(change_figure("documents"), ["bytes.val.documents is 2"], id="documents"),
        pytest.param(
            drop("val_bytes", "val_bytes.bin"),
            ["bytes and val_bytes without the other"],
            id="no-sidecar-record",
        ),
        pytest.param(rename, ['val_bytes.files[0].file is "prepare.py"'], id="not-a-sidecar-name"),
    ],
)
def test_verify_names_each_tampering(char_folder, tmp_path, tamper, fragments):
    """verify recomputes the sidecar and the figures from the ids and names the file and the
    figure of each change: a share, the sidecar's length, a figure, the record itself."""
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(char_folder, folder)
    meta = json.loads((folder / "meta.json").read_text())
    tamper(folder, meta)
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))
    problems = "\n".join(verify(folder, quiet=True))
    assert all(fragment in problems for fragment in fragments), problems


def test_a_prepared_folder_verifies_and_bpb_prints_its_audit(char_folder, capsys):
    """The real lesson's folder: verify recomputes all and calls it OK; bpb prints its audit and
    names the sidecar."""
    assert verify(char_folder, quiet=True) == []
    inspect_folder(["bpb", str(char_folder)])
    out = capsys.readouterr().out
    assert "lossless on val" in out and "val_bytes.bin" in out


@pytest.fixture(scope="module")
def nanochat_tokens(shakespeare):
    """A nanochat tokenizer (its pattern, its nine special tokens) of 512 ids, trained on Tiny
    Shakespeare's speeches, as data/nanochat/prepare.py's figures count with it."""
    trained = nanochat.train_tokenizer(shakespeare.split("\n\n"), 512)
    return RecordTokens({"kind": "nanochat"}, encoding=nanochat.nanochat_encoding(trained))


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=st.lists(DOCUMENTS, min_size=1, max_size=3))
def test_nanochat_figures_are_a_lossless_recount(nanochat_tokens, batches):
    """nanochat's folders hold text, encoded as its dataloader reads it: each split's figures,
    counted a row group at a time, are lossless, the tokenizer's count equal to the text's."""
    documents = [text for batch in batches for text in batch]
    assert text_figures(batches, nanochat_tokens) == lossless_figures(documents)


def test_val_bytes_are_those_of_val_s_ids_where_a_document_straddles(
    paragraphs, gpt2_encoding, tmp_path, capsys
):
    """FineWeb's lesson on Tiny Shakespeare's speeches in shards of 3,000 tokens, shard 0 (val)
    ending mid-document: bytes.val and bpb's divide-by are the bytes of the ids in shard 0
    (token_bytes.npy's sum over them, the sidecar's), not the whole document's; verify recounts
    them and names a folder that records the whole document's."""
    docs = tmp_path / "speeches.jsonl"
    docs.write_text("".join(json.dumps({"text": p}) + "\n" for p in paragraphs[:400]))
    out = tmp_path / "out"
    script = REPO / "data" / "fineweb" / "prepare.py"
    result = run_python(script, "--data-files", docs, "--shard-size", 3000, "--out-dir", out)
    assert result.returncode == 0, result.stderr[-3000:]
    meta = json.loads((out / "meta.json").read_text())
    val, train = (read_shard(out / s["file"], "llmc", np.uint16) for s in meta["shards"][:2])
    assert train[0] != gpt2_encoding.eot_token  # val's last document goes on in train's shard
    token_bytes = np.load(out / "token_bytes.npy")
    sidecar = read_shard(out / meta["val_bytes"]["files"][0]["file"], "llmc", np.uint16)
    size = int(token_bytes[val].sum())
    assert meta["bytes"]["val"]["text_bytes"] == size == sidecar.sum() == 10_648
    assert verify(out, quiet=True) == []
    inspect_folder(["bpb", str(out)])
    assert f"divide by {size:,} bytes" in capsys.readouterr().out
    meta["bytes"]["val"]["text_bytes"] = 10_704  # the whole document's, as it once recorded
    (out / "meta.json").write_text(json.dumps(meta, indent=2))
    assert "bytes.val.text_bytes is 10704, recounted from the ids: 10,648" in "\n".join(
        verify(out, quiet=True)
    )


@pytest.mark.parametrize("seq_len, tokens", [(4, 11), (4, 13), (1024, 51_797), (8, 8)])
def test_bpb_divides_by_what_eval_val_scores(seq_len, tokens):
    """bpb's eval_val line on a parameter-golf dataset: the bytes of the targets of the whole
    windows train_gpt.py's eval_val scores (its load_validation_tokens and window loop, written
    again here), by the sidecar and by its byte LUT; a val too short for one window, refused."""
    rng = np.random.default_rng(tokens)
    ids, shares, lut = rng.integers(1, 9, tokens), rng.integers(0, 5, tokens), np.arange(9)
    ids[0] = 0  # val starts with a BOS, of no byte
    usable = ((tokens - 1) // seq_len) * seq_len  # load_validation_tokens: val_tokens[: usable + 1]
    windows = [range(i * seq_len + 1, (i + 1) * seq_len + 1) for i in range(usable // seq_len)]
    targets = np.array([t for window in windows for t in window], int)  # y of each window
    line = eval_val_line(ids, shares, lambda ids: int(lut[ids].sum()), seq_len)
    if not usable:
        assert line == f"  eval_val refuses val's 8 tokens: fewer than TRAIN_SEQ_LEN={seq_len}+1"
        return
    assert f"{len(targets):,} of val's {tokens - 1:,} targets" in line
    by_lut = f"its byte LUT counts {int(lut[ids[targets]].sum()):,}"
    assert f"divide by {int(shares[targets].sum()):,} bytes (the sidecar's; {by_lut})" in line
    lut_only = eval_val_line(ids, [], lambda ids: int(lut[ids].sum()), seq_len)
    assert lut_only.endswith(
        f"its byte LUT counts {lut[ids[targets]].sum():,} bytes, what it divides by"
    )
