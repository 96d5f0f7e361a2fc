"""data/nanochat/prepare.py and train_tokenizer.py --format nanochat: nanochat's shards and
tokenizer directory, checked against nanochat's own readers and writers (read from its files at
commit 92d63d4: dev/repackage_data_reference.py, nanochat/dataset.py, scripts/tok_train.py).

The stock-nanochat test needs a nanochat checkout (NANOCHAT_REPO=/path/to/nanochat) and its
dependencies (torch, rustbpe, wandb, jinja2, ...); it skips without them and says which.
"""

import collections
import importlib.util
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import tiktoken
from conftest import REPO, assert_clean_failure, run_python, write_jsonl

from formats import nanochat
from formats.schema import NANOCHAT_DATA_DIR

LESSON = REPO / "data" / "nanochat" / "prepare.py"
VOCAB_SIZE = 1024
SHARD_CHARS = 300_000  # Tiny Shakespeare's 6,198 train speeches in 4 shards, the last partial
ENV = {"PYTHONPATH": str(REPO)}
NANOCHAT_NEEDS = ("torch", "rustbpe", "tiktoken", "wandb", "jinja2", "filelock", "psutil", "yaml")


def prepare(out, *args):
    result = run_python(LESSON, "--out-dir", out, *args, env=ENV)
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="module")
def folder(shakespeare_path, tmp_path_factory):
    """Tiny Shakespeare prepared for nanochat with a 1,024-id tokenizer (the input given as the
    pinned file's copy, so the lesson needs no download)."""
    out = tmp_path_factory.mktemp("nanochat")
    shutil.copyfile(shakespeare_path, out / "input.txt")
    prepare(out, "--vocab-size", VOCAB_SIZE, "--shard-chars", SHARD_CHARS)
    return out


def shards(folder):
    return sorted((folder / NANOCHAT_DATA_DIR).glob("*.parquet"))


def documents_of(path):
    return pq.read_table(path).column("text").to_pylist()


def reference_shards(documents, seed, val_docs, shard_chars):
    """dev/repackage_data_reference.py's loop over ds.shuffle(seed) (a numpy permutation), val
    the last val_docs; the reference drops the last partial shard, which we keep."""
    order = np.random.default_rng(seed).permutation(len(documents))
    shuffled = [documents[i] for i in order]
    train, val = shuffled[: len(shuffled) - val_docs], shuffled[len(shuffled) - val_docs :]
    written, shard_docs, shard_characters = [], [], 0
    for text in train:
        shard_docs.append(text)
        shard_characters += len(text)
        if shard_characters >= shard_chars and len(shard_docs) % 1024 == 0:
            written.append(shard_docs)
            shard_docs, shard_characters = [], 0
    return written + [shard_docs] * bool(shard_docs) + [val]


def test_shards_are_the_references(folder, shakespeare):
    documents = shakespeare.split("\n\n")
    expected = reference_shards(documents, 42, 1024, SHARD_CHARS)
    assert [documents_of(path) for path in shards(folder)] == expected
    assert [len(docs) for docs in expected] == [2048, 2048, 2048, 54, 1024]


def test_shards_hold_the_input_documents(folder, shakespeare):
    found = [text for path in shards(folder) for text in documents_of(path)]
    assert collections.Counter(found) == collections.Counter(shakespeare.split("\n\n"))


def test_shard_layout(folder):
    paths = shards(folder)
    for index, path in enumerate(paths):
        parquet = pq.ParquetFile(path)
        assert parquet.schema_arrow.names == ["text"]
        assert str(parquet.schema_arrow.field("text").type) == "string"
        groups = [parquet.metadata.row_group(g) for g in range(parquet.num_row_groups)]
        assert all(g.num_rows == 1024 for g in groups[:-1]) and groups[-1].num_rows <= 1024
        assert {g.column(0).compression for g in groups} == {"ZSTD"}
        assert not any(g.column(0).is_stats_set for g in groups)  # write_statistics=False
        assert path.name == f"shard_{index:05d}.parquet"
    # nanochat/dataset.py: in sorted order the last file is val
    import json

    meta = json.loads((folder / "meta.json").read_text())
    assert [s["split"] for s in meta["shards"]] == ["train"] * 4 + ["val"]
    assert pq.ParquetFile(paths[-1]).metadata.num_rows == 1024


def test_same_seed_same_bytes(folder, shakespeare_path, tmp_path):
    shutil.copyfile(shakespeare_path, tmp_path / "input.txt")
    prepare(tmp_path, "--vocab-size", VOCAB_SIZE, "--shard-chars", SHARD_CHARS)
    files = sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    for name in files:
        assert (folder / name).read_bytes() == (tmp_path / name).read_bytes(), name


def test_another_seed_another_order(folder, shakespeare_path, tmp_path):
    shutil.copyfile(shakespeare_path, tmp_path / "input.txt")
    prepare(tmp_path, "--seed", 7, "--shard-chars", SHARD_CHARS)
    assert documents_of(shards(tmp_path)[-1]) != documents_of(shards(folder)[-1])
    assert not (tmp_path / "tokenizer").exists()  # no --vocab-size, no tokenizer


def test_data_files_and_val_docs(corpus, tmp_path):
    corpus_folder, documents = corpus
    result = prepare(
        tmp_path,
        "--data-files",
        str(corpus_folder / "*.jsonl"),
        "--val-docs",
        "2048",
        "--cache-dir",
        tmp_path / "cache",
    )
    assert "run nanochat on at most 2 rank(s)" in result.stdout
    assert [documents_of(p) for p in shards(tmp_path)] == reference_shards(
        documents, 42, 2048, 250_000_000
    )


def test_a_vocabulary_the_documents_cannot_fill_is_one_note_in_the_asked_figures(tmp_path):
    """Documents with two pairs to merge give 267 ids where --vocab-size 300 asked: a note
    quotes the 300 asked (the trainer's own warning counted without the 9 specials: 291), and
    no raw Python warning reaches the user."""
    (tmp_path / "docs.jsonl").write_text('{"text": "ab ab ab"}\n' * 2100)
    args = ["--data-files", tmp_path / "docs.jsonl", "--val-docs", "1024", "--vocab-size", "300"]
    result = prepare(tmp_path / "out", *args, "--cache-dir", tmp_path / "cache")
    assert "note: asked for --vocab-size 300, got 267" in result.stdout
    assert "Warning" not in result.stderr and "291" not in result.stdout + result.stderr
    assert "tokenizer: 267 ids" in result.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(["--val-docs", "1000"], "not a multiple of 1,024", id="val-not-row-groups"),
        pytest.param(["--val-docs", "8192"], "leaves no document", id="val-takes-all"),
        pytest.param(["--vocab-size", "265"], "at least 266", id="vocab-too-small"),
    ],
)
def test_refused(shakespeare_path, tmp_path, args, message):
    shutil.copyfile(shakespeare_path, tmp_path / "input.txt")
    result = run_python(LESSON, "--out-dir", tmp_path, *args, env=ENV)
    if "not a multiple" in message or "266" in message:  # argparse's usage error
        assert result.returncode == 2 and message in result.stderr
    else:
        assert_clean_failure(result, message)
    assert sorted(os.listdir(tmp_path)) == ["input.txt"]


def test_a_corpus_of_one_row_group_or_less_is_told_to_grow(tmp_path):
    """200 documents: every val is at least 1,024 of them, so "a smaller multiple" cannot help."""
    (tmp_path / "docs.jsonl").write_text('{"text": "ab ab ab"}\n' * 200)
    args = ["--data-files", tmp_path / "docs.jsonl", "--out-dir", tmp_path / "out"]
    args += ["--cache-dir", tmp_path / "cache"]
    result = run_python(LESSON, *args, env=ENV)
    assert_clean_failure(result, "of the 200 for train; give more than 1,024", logs_before=True)


def train_documents(folder):
    return [text for path in shards(folder)[:-1] for text in documents_of(path)]


def test_tokenizer_pkl_is_our_encoder(folder):
    with open(folder / "tokenizer" / "tokenizer.pkl", "rb") as f:
        encoding = pickle.load(f)  # as nanochat's RustBPETokenizer.from_directory loads it
    assert isinstance(encoding, tiktoken.Encoding) and encoding.n_vocab == VOCAB_SIZE
    ours = nanochat.train_tokenizer(train_documents(folder), VOCAB_SIZE)
    val = "\n\n".join(documents_of(shards(folder)[-1]))
    assert encoding.encode_ordinary(val) == ours.encode_ordinary(val)
    first = VOCAB_SIZE - 9  # nanochat: the nine special tokens right after the merges
    assert encoding._special_tokens == {t: first + i for i, t in enumerate(nanochat.SPECIAL_TOKENS)}
    assert encoding.encode_single_token("<|bos|>") == first
    assert encoding._pat_str == nanochat_split_pattern()


def nanochat_split_pattern():
    """nanochat/tokenizer.py's SPLIT_PATTERN, as it is written there."""
    return (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}|"""
        r""" ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
    )


def tok_train_token_bytes(encoding):
    """scripts/tok_train.py's loop, as it is written there (through its tokenizer's methods)."""
    special_ids = set(encoding.encode_single_token(s) for s in encoding.special_tokens_set)
    token_bytes = []
    for token_id in range(encoding.n_vocab):
        if token_id in special_ids:
            token_bytes.append(0)
        else:
            token_bytes.append(len(encoding.decode_single_token_bytes(token_id)))
    return token_bytes


def test_token_bytes_are_tok_trains(folder):
    encoding = nanochat.load_encoding(folder / "tokenizer" / "tokenizer.pkl")
    expected = np.array(tok_train_token_bytes(encoding), dtype=np.int32)
    assert np.array_equal(np.load(folder / "token_bytes.npy"), expected)
    if importlib.util.find_spec("torch"):
        import torch

        saved = torch.load(folder / "tokenizer" / "token_bytes.pt")
        assert saved.dtype == torch.int32 and np.array_equal(saved.numpy(), expected)
    else:
        assert np.array_equal(np.load(folder / "tokenizer" / "token_bytes.npy"), expected)


def test_pickle_is_the_one_nanochat_builds(folder):
    """RustBPETokenizer.train_from_iterator's Encoding, given our ranks: the same pickle bytes."""
    encoding = nanochat.load_encoding(folder / "tokenizer" / "tokenizer.pkl")
    ranks = sorted(encoding._mergeable_ranks.items(), key=lambda item: item[1])
    offset = len(ranks)
    built = tiktoken.Encoding(
        name="rustbpe",
        pat_str=nanochat_split_pattern(),
        mergeable_ranks={bytes(k): v for k, v in ranks},
        special_tokens={name: offset + i for i, name in enumerate(nanochat.SPECIAL_TOKENS)},
    )
    assert pickle.dumps(built) == (folder / "tokenizer" / "tokenizer.pkl").read_bytes()


def test_train_tokenizer_format_nanochat(folder, tmp_path):
    """The same directory from nanochat's own shards: train_tokenizer.py --input their glob."""
    out = tmp_path / "tokenizer"
    glob = str(folder / NANOCHAT_DATA_DIR / "shard_0000[0-3].parquet")  # the train shards
    result = run_python(
        REPO / "train_tokenizer.py",
        "--format",
        "nanochat",
        "--vocab-size",
        VOCAB_SIZE,
        "--out",
        out,
        "--input",
        glob,
        env=ENV,
    )
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(out)) == sorted(os.listdir(folder / "tokenizer"))
    for name in os.listdir(out):
        assert (out / name).read_bytes() == (folder / "tokenizer" / name).read_bytes(), name


def test_train_tokenizer_doc_cap_and_max_chars(tmp_path, capsys):
    """tok_train.py's text_iterator: each document cut at --doc-cap, until --max-chars passed."""
    documents = ["abcabcabc" * 50, "xyzxyz" * 50, "mnomno" * 50]
    write_jsonl(tmp_path / "docs.jsonl", documents)
    out = tmp_path / "tok"
    args = [
        "--format",
        "nanochat",
        "--vocab-size",
        "300",
        "--out",
        out,
        "--input",
        tmp_path / "docs.jsonl",
    ]
    result = run_python(
        REPO / "train_tokenizer.py", *args, "--doc-cap", "30", "--max-chars", "40", env=ENV
    )
    assert result.returncode == 0, result.stderr
    tokenizer = nanochat.train_tokenizer([documents[0][:30], documents[1][:30]], 300)
    assert "note: asked for --vocab-size 300" in capsys.readouterr().out  # more than it holds
    expected = nanochat.nanochat_encoding(tokenizer)
    assert (
        nanochat.load_encoding(out / "tokenizer.pkl")._mergeable_ranks == expected._mergeable_ranks
    )
    merged = [token for token in expected._mergeable_ranks if len(token) > 1]
    assert any(b"y" in t for t in merged) and not any(b"m" in t for t in merged)


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(["--special-tokens", "<|x|>"], "--special-tokens does not go", id="specials"),
        pytest.param(["--pattern", "gpt2"], "--pattern or --engine", id="pattern"),
        pytest.param([], "give --out DIR", id="no-out"),
    ],
)
def test_train_tokenizer_nanochat_refuses(tmp_path, args, message):
    (tmp_path / "a.txt").write_text("hello world " * 100)
    result = run_python(
        REPO / "train_tokenizer.py",
        "--format",
        "nanochat",
        "--vocab-size",
        "300",
        "--input",
        tmp_path / "a.txt",
        *args,
        env=ENV,
    )
    assert result.returncode == 2 and message in result.stderr


@pytest.mark.parametrize(
    "name, data, message",
    [
        pytest.param(
            "a.jsonl",
            b'{"text": "a"}\nnot json\n',
            "a.jsonl line 2: not valid JSON",
            id="bad-json-line",
        ),
        pytest.param(
            "a.jsonl", b'{"body": "a"}\n', "a.jsonl line 1: no 'text' field", id="no-text"
        ),
        pytest.param(
            "a.parquet", b"not parquet", "a.parquet: cannot be read as parquet", id="not-parquet"
        ),
        pytest.param("a.txt", b"\xff\xfe bad", "a.txt", id="not-utf8"),
    ],
)
def test_train_tokenizer_nanochat_bad_input(tmp_path, name, data, message):
    (tmp_path / name).write_bytes(data)
    result = run_python(
        REPO / "train_tokenizer.py",
        "--format",
        "nanochat",
        "--vocab-size",
        "300",
        "--out",
        tmp_path / "tok",
        "--input",
        tmp_path / name,
        env=ENV,
    )
    assert_clean_failure(result, message)
    assert not (tmp_path / "tok").exists()


def inspect(*args):
    return run_python(REPO / "prepare_common.py", *map(str, args), env=ENV)


def test_verify_show_packing(folder):
    result = inspect("verify", folder)
    assert result.returncode == 0, result.stderr
    assert "val: 1,024 documents" in result.stdout and result.stdout.endswith("OK\n")
    result = inspect("show", folder, "--split", "val", "--offset", "0", "--block-size", "4")
    assert result.returncode == 0, result.stderr
    assert "'<|bos|>'" in result.stdout and "bytes per token" in result.stdout
    result = inspect("packing", folder, "--block-size", "64")
    assert result.returncode == 0, result.stderr
    assert "best-fit" in result.stdout and "bytes per token" in result.stdout


def test_byte_figures_are_recounted(folder, tmp_path):
    """Each split's byte figures: its documents' UTF-8 bytes, tokenizer.pkl's own count and
    decode(encode(doc)) all equal (nanochat's tokenizer is lossless, checked); bpb says so, and
    verify recounts them from the shards and names a figure that disagrees."""
    meta = json.loads((folder / "meta.json").read_text())
    for split, figures in meta["bytes"].items():
        paths = [folder / s["file"] for s in meta["shards"] if s["split"] == split]
        texts = [text for path in paths for text in documents_of(path)]
        size = sum(len(text.encode()) for text in texts)
        assert figures["documents"] == len(texts)
        assert figures["text_bytes"] == figures["tokenizer_bytes"] == size
        assert figures["decoded_bytes"] == size and figures["changed_documents"] == 0
    audit = inspect("bpb", folder)
    assert audit.returncode == 0, audit.stderr
    assert audit.stdout.startswith(f"{folder.name}: lossless on val: decode(encode(doc)) == doc")
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    meta["bytes"]["val"]["decoded_bytes"] += 1
    (copy / "meta.json").write_text(json.dumps(meta))
    assert_clean_failure(inspect("verify", copy), "bytes.val.decoded_bytes", "recounted from")


def test_verify_flags_what_nanochat_would_misread(folder, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    shutil.copyfile(shards(copy)[0], copy / NANOCHAT_DATA_DIR / "shard_00099.parquet")
    assert_clean_failure(inspect("verify", copy), "shard_00099.parquet", "nanochat would read")
    (copy / NANOCHAT_DATA_DIR / "shard_00099.parquet").unlink()
    shards(copy)[1].write_bytes(shards(copy)[1].read_bytes()[:-10])
    assert_clean_failure(inspect("verify", copy), "shard_00001.parquet", "sha256")
    # the shards' folder a link to one elsewhere: what nanochat reads is changed from there
    linked = shutil.copytree(folder, tmp_path / "linked")
    shutil.move(linked / NANOCHAT_DATA_DIR, tmp_path / "elsewhere")
    (linked / NANOCHAT_DATA_DIR).symlink_to(tmp_path / "elsewhere")
    assert_clean_failure(inspect("verify", linked), NANOCHAT_DATA_DIR, "is a link")


def test_rerun_replaces_the_set(folder, tmp_path):
    """A second run with fewer shards and no tokenizer: the folder holds exactly the new set."""
    shutil.copytree(folder, tmp_path / "out")
    prepare(tmp_path / "out")  # one train shard (250M characters), no tokenizer
    assert [p.name for p in shards(tmp_path / "out")] == [
        "shard_00000.parquet",
        "shard_00001.parquet",
    ]
    assert not (tmp_path / "out" / "tokenizer").exists()
    assert inspect("verify", tmp_path / "out").returncode == 0


def test_a_rerun_removes_nothing_through_a_linked_subfolder(folder, tmp_path):
    """The old tokenizer/ made a link to a folder elsewhere: a rerun that writes no tokenizer
    would remove its files as stale, through the link; it is refused, and nothing there goes."""
    out = shutil.copytree(folder, tmp_path / "out")
    elsewhere = shutil.move(out / "tokenizer", tmp_path / "elsewhere")
    (out / "tokenizer").symlink_to(elsewhere)
    before = sorted(p.name for p in Path(elsewhere).iterdir())
    result = run_python(LESSON, "--out-dir", out, env=ENV)
    assert_clean_failure(result, f"{out / 'tokenizer'} is a link or a file")
    assert sorted(p.name for p in Path(elsewhere).iterdir()) == before


# ---------------------------------------------------------------------------------------------
# stock nanochat on a folder this lesson wrote


def nanochat_checkout():
    """NANOCHAT_REPO and nanochat's imports, or pytest.skip saying which is missing."""
    repo = os.environ.get("NANOCHAT_REPO")
    if not repo or not (Path(repo) / "scripts" / "base_train.py").is_file():
        pytest.skip("set NANOCHAT_REPO=/path/to/a nanochat checkout (commit 92d63d4 or later)")
    missing = [name for name in NANOCHAT_NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"nanochat needs {', '.join(missing)} (pip install them to run this test)")
    return Path(repo)


def run_nanochat(repo, base_dir, *args):
    env = {
        **os.environ,
        "NANOCHAT_BASE_DIR": str(base_dir),
        "TORCHDYNAMO_DISABLE": "1",
        "WANDB_MODE": "disabled",
    }
    return subprocess.run(
        [sys.executable, *args], cwd=repo, env=env, capture_output=True, text=True
    )


ROUND_TRIP = """
from nanochat.tokenizer import get_tokenizer, get_token_bytes
tokenizer = get_tokenizer()
text = "ROMEO: Hello world! 你好 🌍 <|bos|>"
ids = tokenizer.encode(text, prepend=tokenizer.get_bos_token_id())
assert tokenizer.decode(ids[1:]) == text and ids[0] == tokenizer.encode_special("<|bos|>")
print(tokenizer.get_vocab_size(), int(get_token_bytes().sum()))
"""
TINY_RUN = (  # base_train's own CPU example, smaller: a 2-layer model, 3 steps, val every 2
    "--depth=2",
    "--max-seq-len=64",
    "--device-batch-size=2",
    "--total-batch-size=128",
    "--eval-tokens=256",
    "--eval-every=2",
    "--core-metric-every=-1",
    "--sample-every=-1",
    "--num-iterations=3",
    "--window-pattern=L",
    "--device-type=cpu",
)


@pytest.mark.slow
def test_stock_nanochat_trains_on_the_folder(folder, tmp_path):
    repo = nanochat_checkout()
    base = tmp_path / "base"  # a copy: nanochat writes its checkpoints into the base dir
    shutil.copytree(folder, base)
    result = run_nanochat(repo, base, "-c", ROUND_TRIP)
    assert result.returncode == 0, result.stderr
    expected = int(np.load(folder / "token_bytes.npy").sum())
    assert result.stdout.split() == [str(VOCAB_SIZE), str(expected)]
    result = run_nanochat(repo, base, "-m", "scripts.base_train", *TINY_RUN)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    # evaluate_bpb on the val shard, at steps 0, 2 and 3
    assert result.stdout.count("Validation bpb:") == 3
    assert "Minimum validation bpb:" in result.stdout
