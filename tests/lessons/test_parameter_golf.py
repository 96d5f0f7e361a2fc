"""data/parameter_golf/prepare.py against parameter-golf's own script, and bits per byte that
are true for any tokenizer: the byte figures, the val bytes sidecar, `verify` and `bpb`.

The reference in every run is tests/references/golf_tokenize.py: openai/parameter-golf's
data/download_hf_docs_and_tokenize.py, its steps after the download, in our own words. Where
PARAMETER_GOLF_DIR names a checkout (git clone https://github.com/openai/parameter-golf), that
script itself, run unchanged, is held against both our lesson and the own-words reference,
and its train_gpt.py's count of val bytes (with torch) against the figure meta.json records;
without one those tests skip, saying so. It downloads its documents with huggingface_hub, so it
and our lesson read them from a local hub (tests/stand_ins/hub_server.py) serving
willdepueoai/parameter-golf's datasets/ folder; the own-words reference starts from the hub's two
files.
"""

import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow
import pyarrow.parquet
import pytest
from conftest import (
    COMMON,
    REPO,
    assert_clean_failure,
    assert_one_line,
    paused_command,
    run,
    run_python,
    write_jsonl,
)
from golf_tokenize import write_golf_folder
from hub_server import LocalHub
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formats import golf
from formats.schema import FIGURES
from formats.val_bytes import add_figures
from inspection.bpb import document_share_sums
from inspection.verify import verify

pytest.importorskip("sentencepiece", reason="needs sentencepiece: pip install -e '.[golf]'")

LESSON = REPO / "data" / "parameter_golf" / "prepare.py"
# documents a tokenizer may change: NUL, CRLF, runs of spaces, text nmt_nfkc rewrites, nothing
ODD_DOCUMENTS = [
    "",
    "a\x00b",
    "x\r\ny\r\n",
    "  two  spaces  ",
    "ﬁne ① ｆｕｌｌ",
    "e\u0301",
    "   ",
]


@pytest.fixture(scope="session")
def golf_docs(paragraphs):
    """3,000 documents: odd ones first (they land in val), then Tiny Shakespeare's paragraphs."""
    return ODD_DOCUMENTS + paragraphs[: 3000 - len(ODD_DOCUMENTS)]


@pytest.fixture(scope="session")
def sp1024(golf_docs, tmp_path_factory):
    """parameter-golf's SentencePiece BPE at 1,024 ids, trained on the documents."""
    prefix = tmp_path_factory.mktemp("sp1024") / "fineweb_1024_bpe"
    golf.train_sentencepiece(golf_docs, 1024, prefix, "the documents")
    return golf.SentencePieceTokens(prefix.with_suffix(".model"))


@pytest.fixture(scope="session")
def prepared(golf_docs, trained, tmp_path_factory):
    """A folder of sp1024, byte260 and our BPE (1,000 ids) with val bytes sidecars."""
    folder = tmp_path_factory.mktemp("golf")
    docs = write_jsonl(folder / "docs.jsonl", golf_docs)
    trained.save(folder / "ours.json")
    out = folder / "out"
    result = run_python(
        LESSON,
        "--data-files",
        docs,
        "--variant",
        "sp1024",
        "byte260",
        "--tokenizer",
        folder / "ours.json",
        "--val-docs",
        500,
        "--val-bytes",
        "--shard-size",
        100_000,
        "--out-dir",
        out,
    )
    assert result.returncode == 0, result.stderr
    return out, result.stdout


def hub_files(docs):
    """willdepueoai/parameter-golf's datasets/ folder as the hub holds it: the documents and
    their sidecar (num_docs, docs_val, docs_sha256, shuffle_seed)."""
    data = "".join(json.dumps({"text": doc}) + "\n" for doc in docs).encode()
    sidecar = {
        "num_docs": len(docs),
        "docs_val": 500,
        "docs_sha256": hashlib.sha256(data).hexdigest(),
        "shuffle_seed": 1337,
    }
    return {
        "datasets/docs_selected.jsonl": data,
        "datasets/docs_selected.source_manifest.json": json.dumps(sidecar).encode(),
    }


def tree(folder):
    """{relative path: bytes} of every file under `folder`."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# sp1024, sp4096 and byte260 as the lesson records them, the specs tokenizer_specs.json gives
GOLF_SPECS = [
    {"name": "sp_bpe_1024", "dataset_suffix": "sp1024", "vocab_size": 1024},
    {"name": "sp_bpe_4096", "dataset_suffix": "sp4096", "vocab_size": 4096},
    {"name": "pure_byte_260", "dataset_suffix": "byte260"},
]
CHUNK = 50_000  # tokens a shard: several shards a split
TRAIN_DOCS = [pytest.param(None, id="all"), pytest.param(1000, id="first-1000")]


def run_from_the_hub(docs, client, script, *args):
    """Run `script` with `args`, the documents served by a local hub as
    willdepueoai/parameter-golf's datasets/ folder (`hub_files`); `client` holds its caches."""
    commit = hashlib.sha1(b"parameter-golf").hexdigest()
    with LocalHub(
        "willdepueoai/parameter-golf", {commit: hub_files(docs)}, {"main": commit}
    ) as hub:
        result = run_python(script, *args, env=hub.environment(client))
    assert result.returncode == 0, result.stderr


def train_docs_option(train_docs):
    return [] if train_docs is None else ["--tokenizer-train-docs", train_docs]


def lesson_folder(docs, out, train_docs):
    """Our lesson's folder of sp1024, sp4096 and byte260 from the hub's documents."""
    variants = [spec["dataset_suffix"] for spec in GOLF_SPECS]
    args = ["--variant", *variants, "--shard-size", CHUNK, *train_docs_option(train_docs)]
    run_from_the_hub(docs, out.with_name(f"{out.name}-client"), LESSON, *args, "--out-dir", out)
    return out


def their_folder(checkout, docs, out, train_docs):
    """What parameter-golf's own download_hf_docs_and_tokenize.py writes from the same hub."""
    config = out.with_name(f"{out.name}-specs.json")
    config.write_text(json.dumps({"tokenizers": GOLF_SPECS}))
    script = Path(checkout) / "data" / "download_hf_docs_and_tokenize.py"
    args = ["--tokenizer-config", config, "--chunk-tokens", CHUNK, *train_docs_option(train_docs)]
    run_from_the_hub(docs, out.with_name(f"{out.name}-client"), script, *args, "--output-root", out)
    return out


def reference_folder(docs, out, train_docs):
    """tests/references/golf_tokenize.py's folder: the hub's two files, as its script downloads
    them, then its tokenizers, shards and manifest in our own words."""
    out.mkdir()
    for name, data in hub_files(docs).items():
        (out / Path(name).name).write_bytes(data)
    write_golf_folder(out, GOLF_SPECS, chunk_tokens=CHUNK, tokenizer_train_docs=train_docs)
    return out


def assert_same_files(folder, reference, only_in_folder=()):
    """`folder` holds `reference`'s files (and those named `only_in_folder`), each the same bytes
    but each SentencePiece .model, which names the folder it was written in: those are the same
    but for that name."""
    mine, theirs = tree(folder), tree(reference)
    for name in only_in_folder:
        mine.pop(name)
    models = [name for name in theirs if name.endswith(".model")]
    assert set(mine) == set(theirs)
    assert {n: d for n, d in mine.items() if n not in models} == {
        n: d for n, d in theirs.items() if n not in models
    }
    for name in models:
        assert model_but_its_folder(mine[name]) == model_but_its_folder(theirs[name]), name


def model_but_its_folder(data):
    """A .model's fields (a ModelProto: pieces 1, trainer_spec 2, normalizer_spec 3, ...), its
    trainer_spec's as well but model_prefix (2), the path it was trained to."""
    top = protobuf_fields(data)
    return [(n, [f for f in protobuf_fields(v) if f[0] != 2]) if n == 2 else (n, v) for n, v in top]


def protobuf_fields(data):
    """A protobuf message's (field number, value) pairs in order: an int, or the raw bytes of a
    fixed-size or length-delimited value."""
    fields, i = [], 0

    def varint():
        nonlocal i
        value = shift = 0
        while True:
            byte, i = data[i], i + 1
            value, shift = value | (byte & 0x7F) << shift, shift + 7
            if byte < 0x80:
                return value

    while i < len(data):
        key = varint()
        if key & 7 == 0:
            value = varint()
        else:  # 1: 8 bytes, 5: 4 bytes, 2: a length, then that many
            size = {1: 8, 5: 4}.get(key & 7) or varint()
            value, i = data[i : i + size], i + size
        fields.append((key >> 3, value))
    return fields


@pytest.mark.slow
@pytest.mark.parametrize("train_docs", TRAIN_DOCS)
def test_same_bytes_as_parameter_golfs_own_script(golf_docs, tmp_path, train_docs):
    """From the same documents, our folder holds the files parameter-golf's
    download_hf_docs_and_tokenize.py writes, byte for byte (shards, byte260's file, the .vocab,
    tokenizer_config.export.json, manifest.json), for sp1024, sp4096 and byte260, SentencePiece
    trained on all the documents or on the first 1,000; each .model differs only in the folder
    it names. So does the folder of tests/references/golf_tokenize.py, its steps in our own
    words, which the next test holds our lesson to where no checkout is."""
    checkout = os.environ.get("PARAMETER_GOLF_DIR")
    if not checkout:
        pytest.skip("set PARAMETER_GOLF_DIR to a checkout of openai/parameter-golf")
    theirs = their_folder(checkout, golf_docs, tmp_path / "theirs", train_docs)
    ours = lesson_folder(golf_docs, tmp_path / "same", train_docs)
    assert_same_files(ours, theirs, only_in_folder=["meta.json"])
    assert run_python(COMMON, "verify", ours).returncode == 0
    reference = reference_folder(golf_docs, tmp_path / "reference", train_docs)
    assert_same_files(reference, theirs)


@pytest.mark.slow
@pytest.mark.parametrize("train_docs", TRAIN_DOCS)
def test_same_bytes_as_the_own_words_reference(golf_docs, tmp_path, train_docs):
    """The comparison above in every run, no checkout needed: from the same documents, our
    folder holds the files of tests/references/golf_tokenize.py (parameter-golf's script written
    in our own words) byte for byte, for sp1024, sp4096 and byte260, SentencePiece trained on all
    the documents or on the first 1,000; each .model but for the folder it names."""
    ours = lesson_folder(golf_docs, tmp_path / "same", train_docs)
    reference = reference_folder(golf_docs, tmp_path / "reference", train_docs)
    assert_same_files(ours, reference, only_in_folder=["meta.json"])


def test_verify_ok_and_the_audit(prepared):
    """The folder verifies; the audit calls byte260 and our BPE lossless with both counts equal,
    and sp1024 not lossless, with the tokenizer's count below the text's bytes."""
    out, printed = prepared
    result = run_python(COMMON, "verify", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith(f"{out}: OK")
    audit = run_python(COMMON, "bpb", out)
    assert audit.returncode == 0, audit.stderr
    lines = audit.stdout.splitlines()
    assert lines[0].startswith("fineweb10B_sp1024: NOT lossless on val: ")
    assert "below the text's" in lines[1]
    byte260 = lines.index(next(line for line in lines if line.startswith("fineweb10B_byte260")))
    assert lines[byte260].startswith("fineweb10B_byte260: lossless on val")
    assert lines[byte260 + 1].endswith(": equal")
    assert any(line.startswith("fineweb10B_bpe1000: lossless on val") for line in lines)
    meta = json.loads((out / "meta.json").read_text())
    for dataset in meta["datasets"]:
        val = dataset["bytes"]["val"]
        lossless = dataset["tokenizer"]["kind"] != "sentencepiece_bpe"
        assert (val["tokenizer_bytes"] == val["text_bytes"]) is lossless
        assert (val["changed_documents"] == 0) is lossless


def test_our_tokenizer_alone_writes_its_folder(golf_docs, trained, tmp_path):
    """--tokenizer with no --variant: the folder holds our BPE's dataset alone and verifies."""
    docs = write_jsonl(tmp_path / "docs.jsonl", golf_docs[:600])
    trained.save(tmp_path / "ours.json")
    out = tmp_path / "out"
    args = ["--data-files", docs, "--tokenizer", tmp_path / "ours.json", "--val-docs", 100]
    result = run_python(LESSON, *args, "--out-dir", out)
    assert result.returncode == 0, result.stderr
    assert (out / "tokenizers" / "ours.json").read_bytes() == (tmp_path / "ours.json").read_bytes()
    assert [p.name for p in (out / "datasets").iterdir()] == ["fineweb10B_bpe1000"]
    assert run_python(COMMON, "verify", out).returncode == 0


def test_a_data_files_glob_over_the_folder_is_refused(golf_docs, trained, tmp_path):
    """Documents kept in the output folder, read with a glob: a rerun's glob also took the
    folder's own docs_selected.jsonl, and its documents twice. Refused in one line naming it,
    the folder as it was."""
    out = tmp_path / "out"
    out.mkdir()
    write_jsonl(out / "mine.jsonl", golf_docs[:300])
    trained.save(tmp_path / "ours.json")
    args = ["--data-files", out / "*.jsonl", "--tokenizer", tmp_path / "ours.json"]
    args += ["--val-docs", 50, "--out-dir", out]
    assert run_python(LESSON, *args).returncode == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    result = run_python(LESSON, *args)
    assert_clean_failure(result, f"{out / 'docs_selected.jsonl'} is a file of the output folder")
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_train_gpts_own_count_is_the_tokenizer_bytes_figure(prepared):
    """parameter-golf's train_gpt.py itself, on the CPU: its build_sentencepiece_luts and the
    three lines of its eval_val that count each target's bytes, over the val shards it reads
    (load_data_shard), count exactly sp1024's val `tokenizer_bytes` in meta.json, which is
    below the text's bytes (the figure bits per byte is judged by, and what it leaves out)."""
    checkout = os.environ.get("PARAMETER_GOLF_DIR")
    if not checkout:
        pytest.skip("set PARAMETER_GOLF_DIR to a checkout of openai/parameter-golf")
    torch = pytest.importorskip("torch", reason="train_gpt.py needs torch")
    import sentencepiece

    spec = importlib.util.spec_from_file_location("train_gpt", Path(checkout) / "train_gpt.py")
    train_gpt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train_gpt)
    out, _ = prepared
    dataset = json.loads((out / "meta.json").read_text())["datasets"][0]
    tokenizer = dataset["tokenizer"]
    assert tokenizer["kind"] == "sentencepiece_bpe"
    sp = sentencepiece.SentencePieceProcessor(model_file=str(out / tokenizer["files"][0]["file"]))
    base, space, boundary = train_gpt.build_sentencepiece_luts(
        sp, tokenizer["vocab_size"], torch.device("cpu")
    )
    # the shards by name: the stock glob fineweb_val_*.bin would take the sidecars as well
    shards = [out / shard["file"] for shard in dataset["shards"] if shard["split"] == "val"]
    val = torch.cat([train_gpt.load_data_shard(path) for path in shards])
    x, y = val[:-1].to(torch.int64), val[1:].to(torch.int64)
    token_bytes = base[y].to(dtype=torch.int16)
    token_bytes += (space[y] & ~boundary[x]).to(dtype=torch.int16)
    figures = dataset["bytes"]["val"]
    assert int(token_bytes.to(torch.float64).sum()) == figures["tokenizer_bytes"]
    assert figures["tokenizer_bytes"] < figures["text_bytes"]


def test_sidecar_sums_to_each_documents_bytes(prepared, golf_docs):
    """Each val bytes sidecar is parallel to its val shard (llm.c's header, uint16), 0 at a BOS
    (but the BOS of a document with no token), and sums per document to its UTF-8 length."""
    out, _ = prepared
    meta = json.loads((out / "meta.json").read_text())
    sizes = [len(doc.encode()) for doc in golf_docs[:500]]
    for dataset in meta["datasets"]:
        ids, shares = (
            np.concatenate(
                [
                    np.fromfile(out / s["file"], "<u2", offset=1024)
                    for s in dataset[key]
                    if s["split"] == "val"
                ]
            )
            for key in ("shards", "val_bytes")
        )
        assert len(ids) == len(shares)
        sums = document_share_sums(ids, shares, dataset["tokenizer"]["bos_id"])
        assert sums.astype(int).tolist() == sizes


def edit_sidecar(out, change, key="val_bytes"):
    """Change the first sidecar's shares (key "shards": the first val shard's ids) with `change`
    and record its new sha256."""
    meta = json.loads((out / "meta.json").read_text())
    record = meta["datasets"][0][key][0]
    path = out / record["file"]
    header, shares = np.fromfile(path, "<i4", count=256), np.fromfile(path, "<u2", offset=1024)
    shares = change(shares.copy())
    header[2] = len(shares)
    path.write_bytes(header.tobytes() + shares.astype("<u2").tobytes())
    record["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (out / "meta.json").write_text(json.dumps(meta))


def shift_a_byte(shares):
    shares[10] += 1
    return shares


def move_a_share(shares):
    """A byte's share moved to the next token of the same document: its sum is kept."""
    at = np.flatnonzero((shares[:-1] > 1) & (shares[1:] > 0))[200]
    shares[at] -= 1
    shares[at + 1] += 1
    return shares


def swap_two_ids(ids):
    """Two neighbouring ids of a document swapped: the same pieces, in another order."""
    at = np.flatnonzero((ids[:-1] > 3) & (ids[1:] > 3) & (ids[:-1] != ids[1:]))[200]
    ids[[at, at + 1]] = ids[[at + 1, at]]
    return ids


def reseal(out):
    """Every sha256 meta.json records set anew from its file: an edit that keeps the record
    consistent, which only what verify recomputes from the files can catch."""
    meta = json.loads((out / "meta.json").read_text())

    def seal(value):
        if isinstance(value, dict) and {"file", "sha256"} <= value.keys():
            value["sha256"] = hashlib.sha256((out / value["file"]).read_bytes()).hexdigest()
        for item in value.values() if isinstance(value, dict) else value:
            if isinstance(item, (dict, list)):
                seal(item)

    seal(meta)
    (out / "meta.json").write_text(json.dumps(meta))


def damage_the_model(out):
    (out / "tokenizers" / "fineweb_1024_bpe.model").write_bytes(b"not a model")


def edit_manifest(out, change):
    """Change manifest.json with `change`, and reseal."""
    manifest = json.loads((out / "manifest.json").read_text())
    change(manifest)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    reseal(out)


def manifest_figures_edited(manifest):
    manifest["num_val_docs"] = 499
    dataset = manifest["datasets"][0]
    dataset["stats"]["tokens_val"] += 5
    dataset.update(bos_id=2, val_glob="x/*.bin")


def edit_figure(out):
    meta = json.loads((out / "meta.json").read_text())
    meta["datasets"][1]["bytes"]["val"]["tokenizer_bytes"] += 1
    (out / "meta.json").write_text(json.dumps(meta))


def name_outside(out):
    meta = json.loads((out / "meta.json").read_text())
    meta["datasets"][0]["shards"][0]["file"] = "../outside/fineweb_val_000000.bin"
    (out / "meta.json").write_text(json.dumps(meta))


def edit_meta(out, change):
    meta = json.loads((out / "meta.json").read_text())
    change(meta)
    (out / "meta.json").write_text(json.dumps(meta))


def repeat_a_train_shard(out):
    """A copy of the last train shard, listed with its sha256 and tokens as one more shard."""
    meta = json.loads((out / "meta.json").read_text())
    shards = meta["datasets"][0]["shards"]
    last = shards[-1]
    name = f"{last['file'][: -len('000000.bin')]}{len(shards):06d}.bin"
    shutil.copy(out / last["file"], out / name)
    shards.append({**last, "file": name})
    (out / "meta.json").write_text(json.dumps(meta))


def append_a_document(out):
    """One more line in docs_selected.jsonl, its sha256 recorded anew."""
    with open(out / "docs_selected.jsonl", "a") as file:
        file.write('{"text": "one more"}\n')
    digest = hashlib.sha256((out / "docs_selected.jsonl").read_bytes()).hexdigest()
    edit_meta(out, lambda meta: meta["files"][0].update(sha256=digest))


def tamper_bytes(out):
    path = out / json.loads((out / "meta.json").read_text())["datasets"][0]["val_bytes"][0]["file"]
    data = bytearray(path.read_bytes())
    data[2000] ^= 1
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "change, fragments",
    [
        pytest.param(
            tamper_bytes, ["fineweb_val_bytes_000000.bin", "sha256"], id="tampered-sidecar"
        ),
        pytest.param(
            lambda out: edit_sidecar(out, shift_a_byte),
            ["fineweb_val_bytes_000000.bin", "sum to"],
            id="shares-moved",
        ),
        pytest.param(
            lambda out: edit_sidecar(out, lambda s: s[:-1]),
            ["fineweb_val_bytes_000000.bin", "shares, its val shard"],
            id="sidecar-short",
        ),
        pytest.param(
            edit_figure, ["meta.json", "datasets[1].bytes.val.tokenizer_bytes"], id="figure-edited"
        ),
        pytest.param(
            lambda out: edit_sidecar(out, move_a_share),
            ["fineweb_val_bytes_000000.bin: share", "recomputed from", "docs_selected.jsonl"],
            id="a-share-moved-to-the-next-token",
        ),
        pytest.param(
            lambda out: edit_sidecar(out, swap_two_ids, key="shards"),
            ["fineweb_val_000000.bin: id", "recomputed from", "docs_selected.jsonl's val"],
            id="two-val-ids-swapped",
        ),
        pytest.param(
            lambda out: edit_manifest(out, manifest_figures_edited),
            ["manifest.json: num_val_docs is 499, but meta.json"],
            id="manifest-figures-edited",
        ),
        pytest.param(
            lambda out: edit_manifest(out, lambda m: m["datasets"][2].update(val_glob="x/*.bin")),
            ['manifest.json: datasets[2].val_glob is "x/*.bin"', "datasets/fineweb10B_bpe1000/"],
            id="manifest-glob-edited",
        ),
        pytest.param(
            lambda out: edit_manifest(out, lambda manifest: manifest.update(extra=1)),
            ["manifest.json: extra is 1, but meta.json and the files it lists give null"],
            id="manifest-field-added",
        ),
        pytest.param(
            lambda out: edit_meta(
                out, lambda m: m["datasets"][0]["val_bytes"][0].update(split="train")
            ),
            ["meta.json", 'datasets[0].val_bytes[0].split is "train", expected "val"'],
            id="sidecar-listed-as-train",
        ),
        pytest.param(
            repeat_a_train_shard,
            ["datasets[0]'s train shards hold more documents than", "docs_selected.jsonl"],
            id="shard-repeated",
        ),
        pytest.param(
            lambda out: edit_meta(out, lambda meta: meta["split"].pop("val_docs")),
            ["meta.json", "split is not a record of val_docs"],
            id="val-docs-missing",
        ),
        pytest.param(
            name_outside,
            ["datasets[0].shards[0].file", "parameter-golf's folder"],
            id="shard-outside",
        ),
        pytest.param(
            lambda out: edit_meta(
                out,
                lambda meta: meta.update(
                    files=[f for f in meta["files"] if "manifest" not in f["file"]]
                ),
            ),
            ["meta.json", "files is not a list", "manifest.json"],
            id="manifest-left-out-of-the-record",
        ),
        pytest.param(
            lambda out: edit_meta(out, lambda meta: meta["datasets"][0]["tokenizer"].pop("bos_id")),
            ["meta.json", "datasets[0].tokenizer says 1024 ids and BOS null, its files 1024 and 1"],
            id="bos-id-left-out",
        ),
        pytest.param(
            lambda out: (damage_the_model(out), reseal(out)),
            ["fineweb_1024_bpe.model is not a SentencePiece model"],
            id="model-damaged",
        ),
        pytest.param(
            lambda out: edit_meta(out, lambda meta: meta.update(source={"repo": 1, "file": 2})),
            ["meta.json: source.repo and source.file are not both strings"],
            id="source-of-numbers",
        ),
        pytest.param(
            lambda out: edit_meta(out, lambda meta: meta["split"].update(shard_size="big")),
            ["meta.json: split.shard_size is 'big'"],
            id="shard-size-not-a-count",
        ),
    ],
)
def test_verify_names_a_sidecar_or_figure_that_disagrees(prepared, tmp_path, change, fragments):
    """A tampered sidecar, one of the wrong length, shares moved between documents, a byte
    figure edited in meta.json, a shard repeated, no split.val_docs, no BOS in a tokenizer
    record, a sidecar listed as train's; and, each with every sha256 recorded anew, a share
    moved within a document, two val ids swapped, manifest.json's figures or a glob edited, a
    damaged model:
    verify fails in one line naming the file and the figure or the first position that
    differs."""
    out = tmp_path / "copy"
    shutil.copytree(prepared[0], out)
    change(out)
    assert_clean_failure(run_python(COMMON, "verify", out), *fragments)


def test_verify_without_sentencepiece_says_what_it_cannot_check(prepared, monkeypatch):
    """Without the sentencepiece package, verify names the sp1024 dataset's model file and says
    that its shards and sidecars cannot be checked: the folder is never called OK."""
    monkeypatch.setitem(sys.modules, "sentencepiece", None)  # `import sentencepiece` fails
    model = prepared[0] / "tokenizers" / "fineweb_1024_bpe.model"
    assert verify(prepared[0], quiet=True) == [
        f"{model} needs the sentencepiece package to be read, so the shards and val bytes "
        f"sidecars of {prepared[0] / 'meta.json'}: datasets[0] cannot be checked against it: "
        "pip install -e '.[golf]'"
    ]


@pytest.mark.parametrize(
    "change, fragment",
    [
        pytest.param(
            append_a_document, "docs_selected.jsonl holds more documents than", id="appended"
        ),
        pytest.param(
            lambda out: edit_meta(out, lambda meta: meta["split"].update(val_docs=499)),
            "val shards hold 500 documents, meta.json's split.val_docs says 499",
            id="val-docs-edited",
        ),
    ],
)
def test_verify_names_each_dataset_whose_shards_are_not_the_documents(
    prepared, tmp_path, change, fragment
):
    """docs_selected.jsonl holding a document more than the shards, or split.val_docs other
    than the val shards' documents: verify fails with a line for each dataset, naming it."""
    out = shutil.copytree(prepared[0], tmp_path / "copy")
    change(out)
    result = run_python(COMMON, "verify", out)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 3 and all(fragment in line for line in lines), result.stderr
    assert [f"datasets[{i}]'s" in line for i, line in enumerate(lines)] == [True] * 3


@pytest.mark.parametrize("split", ["val", "train"])
def test_verify_names_a_dataset_with_an_empty_split(prepared, tmp_path, split):
    """A folder whose datasets list no shard of a split (their files gone too, as a run that
    let the split be empty left them): verify fails in one line naming the field and the split,
    never calling the folder OK."""
    out = shutil.copytree(prepared[0], tmp_path / "copy")
    meta = json.loads((out / "meta.json").read_text())
    for dataset in meta["datasets"]:
        for key in ("shards", "val_bytes"):
            for record in [r for r in dataset[key] if r["split"] == split]:
                (out / record["file"]).unlink()
                dataset[key].remove(record)
    (out / "meta.json").write_text(json.dumps(meta))
    result = run_python(COMMON, "verify", out)
    assert_clean_failure(result, "meta.json", f"datasets[0].shards has no {split} shard")


@pytest.mark.parametrize(
    "key, field, value",
    [
        pytest.param("shards", "tokens", 1e30, id="shard-tokens-a-float"),
        pytest.param("shards", "tokens", 0, id="shard-tokens-zero"),
        pytest.param("shards", "sha256", 7, id="shard-sha256-a-number"),
        pytest.param("val_bytes", "tokens", "1", id="sidecar-tokens-a-string"),
        pytest.param("val_bytes", "sha256", None, id="sidecar-sha256-null"),
    ],
)
def test_verify_names_a_shard_record_of_the_wrong_type(prepared, tmp_path, key, field, value):
    """A dataset's shard or sidecar record holding a count or sha256 of the wrong type: one line
    naming the field, never a traceback and never OK."""
    out = shutil.copytree(prepared[0], tmp_path / "copy")
    meta = json.loads((out / "meta.json").read_text())
    meta["datasets"][0][key][0][field] = value
    (out / "meta.json").write_text(json.dumps(meta))
    result = run_python(COMMON, "verify", out)
    assert_clean_failure(result, "meta.json", f"datasets[0].{key}[0].{field}")


UNICODE = st.lists(
    st.one_of(
        st.text(max_size=12),
        st.sampled_from(
            ["\x00", "\u0301", "\r\n", "\n", "   ", "\t", "ﬁ", "①", "Ｆ", "Å", "\ufeff"]
        ),
    ),
    max_size=12,
).map("".join)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(UNICODE, min_size=1, max_size=6))
def test_shares_sum_to_the_text_on_random_unicode(sp1024, trained_tokens, texts):
    """On random Unicode (NUL, lone combining marks, CRLF, runs of spaces, text nmt_nfkc
    rewrites) every tokenizer's shares sum per document to its UTF-8 length; byte260 and our
    BPE are lossless with both counts equal; sp1024's figures count what it changes."""
    for tokens in (sp1024, golf.ByteTokens(), trained_tokens):
        figures = dict.fromkeys(FIGURES, 0)
        for text, (ids, shares) in zip(texts, tokens.encode_batch(texts)):
            share_sum = int(shares.sum()) + (0 if len(ids) else len(text.encode()))  # the BOS's
            assert share_sum == len(text.encode())
            add_figures(figures, text, ids, tokens)
        assert figures["text_bytes"] == sum(len(t.encode()) for t in texts)
        if tokens is not sp1024:
            assert figures["changed_documents"] == 0
            assert figures["tokenizer_bytes"] == figures["text_bytes"] == figures["decoded_bytes"]
        changed = sum(
            tokens.decode(ids) != t for t, (ids, _) in zip(texts, tokens.encode_batch(texts))
        )
        assert figures["changed_documents"] == changed


@pytest.fixture(scope="session")
def trained_tokens(trained):
    return golf.BpeTokens(trained.to_tiktoken(), trained.special_tokens["<|endoftext|>"])


def test_sp1024_reports_the_loss_on_newlines_and_spaces(sp1024):
    """nmt_nfkc makes newlines spaces and collapses runs of spaces: the figures count the
    documents changed and the bytes lost, and the tokenizer's count is the decoded text's."""
    texts = ["one\ntwo", "a    b", "plain"]
    figures = dict.fromkeys(FIGURES, 0)
    for text, (ids, _) in zip(texts, sp1024.encode_batch(texts)):
        add_figures(figures, text, ids, sp1024)
    assert figures["changed_documents"] == 2
    assert figures["lost_bytes"] == 3  # three of the four spaces
    assert figures["tokenizer_bytes"] == figures["decoded_bytes"] == figures["text_bytes"] - 3


@pytest.mark.parametrize(
    "args, fragments",
    [
        pytest.param(
            ["--val-docs", "5000"], ["--val-docs 5,000", "3,000 documents"], id="val-too-big"
        ),
        pytest.param(["--val-docs", "0"], ["--val-docs: 0 is less than 1"], id="val-empty"),
        pytest.param(
            ["--val-docs", "3000"], ["--val-docs 3,000", "choose 1 to 2,999"], id="train-empty"
        ),
        pytest.param(["--variant", "sp100000"], ["sp100000"], id="vocab-too-big"),
        pytest.param(
            ["--variant", "sp1024", "sp1024", "--val-docs", "5"], ["same name"], id="twice"
        ),
    ],
)
def test_bad_options_fail_in_one_line(golf_docs, tmp_path, args, fragments):
    """A val bigger than the documents, a val or a train left empty, a vocabulary uint16 cannot
    hold, a variant given twice: one line, before any output is committed."""
    docs = write_jsonl(tmp_path / "docs.jsonl", golf_docs)
    result = run_python(LESSON, "--data-files", docs, *args, "--out-dir", tmp_path / "out")
    assert result.returncode in (1, 2), result.stderr
    assert "Traceback" not in result.stderr
    assert all(fragment in result.stderr for fragment in fragments), result.stderr
    assert not (tmp_path / "out" / "meta.json").exists()


def test_one_document_is_refused_for_what_it_is(tmp_path):
    """A single document cannot make both splits: the line says so, not "choose 1 to 0"."""
    docs = write_jsonl(tmp_path / "docs.jsonl", ["the only document"])
    args = ["--data-files", docs, "--variant", "byte260", "--val-docs", 1]
    result = run(LESSON, *args, "--out-dir", tmp_path / "out")
    assert_one_line(result, "holds 1 document(s); val and train need one each", alone=False)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b'{"text": "a"}\n\n{"text": "b"}\n  \n{"text": "c"}\n', id="blank-lines"),
        pytest.param(b'\xef\xbb\xbf{"text": "a"}\n{"text": "b"}\n{"text": "c"}\n', id="a-bom"),
    ],
)
def test_a_jsonl_its_scripts_cannot_read_is_written_one_document_a_line(tmp_path, data):
    """parameter-golf's scripts json.loads every line of docs_selected.jsonl: a file with a blank
    line or a byte order mark is written anew, one {"text": ...} a line, not copied as it is."""
    (tmp_path / "docs.jsonl").write_bytes(data)
    args = ["--data-files", tmp_path / "docs.jsonl", "--variant", "byte260", "--val-docs", 1]
    assert run(LESSON, *args, "--out-dir", tmp_path / "out").returncode == 0
    lines = (tmp_path / "out" / "docs_selected.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [{"text": t} for t in "abc"]
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["num_docs"] == 3


def test_sentencepiece_files_unwritten_name_the_folder_meant(tmp_path):
    """A full disk while the lesson stages its outputs names out/tokenizers, not the run's
    staging folder, which is gone once the run ends."""
    staged = tmp_path / "out" / ".prepare.1234.tmp" / "tokenizers" / "fineweb_1024_bpe"
    error = golf.unwritten(staged, "No space left on device")
    assert f"fineweb_1024_bpe.model and .vocab in {tmp_path / 'out' / 'tokenizers'} (" in str(error)


def jsonl_without_text(tmp):
    path = write_jsonl(tmp / "docs.jsonl", ["fine"] * 10)
    with open(path, "a") as file:
        file.write('{"body": "no text"}\n')
    return path


def parquet_without_text(tmp):
    path = tmp / "docs.parquet"
    pyarrow.parquet.write_table(pyarrow.table({"body": ["a b c"] * 10}), path)
    return path


@pytest.mark.parametrize(
    "make_file, fragments",
    [
        pytest.param(jsonl_without_text, ["docs.jsonl line 11: no 'text' field"], id="jsonl-line"),
        pytest.param(parquet_without_text, ["docs.parquet has no 'text' column"], id="parquet"),
    ],
)
def test_documents_without_text_are_named_in_the_users_file(tmp_path, make_file, fragments):
    """A line without "text" was named in the run's staging copy of the documents, and the line
    told to use a --text-column the lesson does not take."""
    args = ["--data-files", make_file(tmp_path), "--variant", "byte260", "--val-docs", 1]
    result = run(LESSON, *args, "--out-dir", tmp_path / "out")
    absent = [".prepare.", "--text-column"]
    assert_one_line(result, *fragments, "reads that one only", alone=False, absent=absent)
    assert not (tmp_path / "out" / "meta.json").exists()


@pytest.mark.parametrize(
    "first, args, refused",
    [
        pytest.param(" " * 70_000, ["--val-docs", 1, "--val-bytes"], True, id="val-sidecar"),
        pytest.param("a" + " " * 70_000 + "b", ["--val-docs", 5], False, id="train-no-sidecar"),
    ],
)
def test_a_run_of_65536_spaces_is_refused_only_where_a_sidecar_holds_it(
    paragraphs, tmp_path, first, args, refused
):
    """SentencePiece encodes 70,000 spaces as one piece, or none: its share does not fit a uint16
    sidecar. With --val-bytes in val it was written wrapped (4,464 for 70,000) and the run said
    OK; with no sidecar asked, a train document failed the run. One line naming the document, or
    a folder that verifies."""
    pytest.importorskip("sentencepiece")
    docs = write_jsonl(tmp_path / "docs.jsonl", [first, *paragraphs[:20]])
    out = tmp_path / "out"
    result = run(LESSON, "--data-files", docs, "--variant", "sp400", *args, "--out-dir", out)
    if refused:
        assert_one_line(result, "docs_selected.jsonl document 0 (val of", "65,535", alone=False)
        assert not (out / "meta.json").exists()
    else:
        assert result.returncode == 0, result.stderr
        assert run_python(COMMON, "verify", out).returncode == 0


def test_verify_reads_the_shards_in_the_trainers_order(golf_docs, trained, tmp_path):
    """Two val shards (and their sidecars) swapped on disk and in meta.json's list: train_gpt.py
    reads sorted(glob), a val stream starting mid-document, and verify, reading meta.json's
    order, said OK."""
    docs = write_jsonl(tmp_path / "docs.jsonl", golf_docs[:300])
    trained.save(tmp_path / "ours.json")
    out = tmp_path / "out"
    args = ["--data-files", docs, "--tokenizer", tmp_path / "ours.json", "--val-docs", 100]
    args += ["--val-bytes", "--shard-size", 1000, "--out-dir", out]
    assert run_python(LESSON, *args).returncode == 0
    meta = json.loads((out / "meta.json").read_text())
    dataset = meta["datasets"][0]
    for key, stem in (("shards", "fineweb_val_"), ("val_bytes", "fineweb_val_bytes_")):
        a, b = (f"datasets/{dataset['name']}/{stem}{i:06d}.bin" for i in (0, 1))
        (out / a).rename(out / "swap")
        (out / b).rename(out / a)
        (out / "swap").rename(out / b)
        for record in dataset[key]:
            record["file"] = {a: b, b: a}.get(record["file"], record["file"])
    (out / "meta.json").write_text(json.dumps(meta, indent=2))
    first = "fineweb_val_000000.bin: the val ids do not start with the end-of-text id 999"
    assert_one_line(run(COMMON, "verify", out), first, "as train_gpt.py reads the shards")


@pytest.mark.parametrize(
    "sidecar, fragment",
    [
        pytest.param("{bad", "d.source_manifest.json is not valid JSON", id="not-json"),
        pytest.param("[1, 2]", "d.source_manifest.json is not a JSON object", id="a-list"),
        pytest.param('{"docs_val": "5"}', 'docs_val is "5", expected a positive', id="a-string"),
        pytest.param('{"docs_val": null}', "docs_val is null", id="null"),
        pytest.param('{"docs_val": 5.0}', "docs_val is 5.0", id="a-float"),
        pytest.param('{"docs_val": true}', "docs_val is true", id="a-bool"),
        pytest.param(
            '{"docs_val": 5, "num_docs": 61}',
            "d.jsonl holds 60 documents, its .source_manifest.json sidecar says 61",
            id="num-docs",
        ),
    ],
)
def test_a_bad_documents_sidecar_is_one_line_naming_it(paragraphs, tmp_path, sidecar, fragment):
    """The .source_manifest.json beside a --data-files file was read unchecked: raw exceptions
    naming no file, or (docs_val true) a folder its own verify refused."""
    docs = write_jsonl(tmp_path / "d.jsonl", paragraphs[:60])
    (tmp_path / "d.source_manifest.json").write_text(sidecar)
    result = run(
        LESSON, "--data-files", docs, "--variant", "byte260", "--out-dir", tmp_path / "out"
    )
    assert_one_line(result, fragment, alone=False)
    assert not (tmp_path / "out" / "meta.json").exists()


def test_train_tokenizer_trains_the_same_sentencepiece_model(prepared, tmp_path):
    """train_tokenizer.py --kind sentencepiece on the lesson's documents writes a model of the
    same pieces and scores as the lesson's sp1024."""
    spm = pytest.importorskip("sentencepiece")
    out, _ = prepared
    result = run_python(
        REPO / "train_tokenizer.py",
        "--kind",
        "sentencepiece",
        "--vocab-size",
        1024,
        "--input",
        out / "docs_selected.jsonl",
        "--out",
        tmp_path / "sp",
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sp.model", "sp.vocab"]
    models = [tmp_path / "sp.model", out / "tokenizers" / "fineweb_1024_bpe.model"]
    a, b = (spm.SentencePieceProcessor(model_file=str(path)) for path in models)
    pieces = [[(p.id_to_piece(i), p.get_score(i)) for i in range(p.vocab_size())] for p in (a, b)]
    assert pieces[0] == pieces[1]
    assert (tmp_path / "sp.vocab").read_bytes() == (
        out / "tokenizers" / "fineweb_1024_bpe.vocab"
    ).read_bytes()


@pytest.mark.parametrize(
    "honest", [pytest.param(True, id="checked"), pytest.param(False, id="wrong-sha256")]
)
def test_the_hubs_selection_is_checked_against_its_sidecar(golf_docs, tmp_path, honest):
    """By default the documents come from the hub's datasets/ folder: a docs_selected.jsonl
    whose sha256 is its sidecar's docs_sha256 is read (val = the sidecar's docs_val, the
    manifest records the sidecar), one that is not is refused in one line, nothing written.
    meta.json records the commit main named, not the branch, which moves."""
    files = hub_files(golf_docs[:1000])
    if not honest:
        files["datasets/docs_selected.jsonl"] += b'{"text": "one more"}\n'
    commit = hashlib.sha1(b"parameter-golf").hexdigest()
    with LocalHub("willdepueoai/parameter-golf", {commit: files}, {"main": commit}) as hub:
        result = run_python(
            LESSON,
            "--variant",
            "byte260",
            "--out-dir",
            tmp_path / "out",
            env=hub.environment(tmp_path),
        )
    if not honest:
        assert_clean_failure(result, "docs_sha256")
        assert not (tmp_path / "out" / "meta.json").exists()
        return
    assert result.returncode == 0, result.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["num_val_docs"] == 500 and manifest["shuffle_seed"] == 1337
    assert manifest["docs_meta"]["remote_repo_id"] == "willdepueoai/parameter-golf"
    meta = json.loads((tmp_path / "out" / "meta.json").read_text())
    assert meta["source"]["revision"] == commit
    assert run_python(COMMON, "verify", tmp_path / "out").returncode == 0


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["show"], id="show"),
        pytest.param(["packing", "--block-size", "64"], id="packing"),
        pytest.param(["overlap"], id="overlap"),
    ],
)
def test_commands_of_one_stream_point_at_a_dataset(prepared, command):
    """show, packing and overlap on the folder of several datasets: one line pointing at
    overlap on one dataset's folder."""
    out, _ = prepared
    result = run_python(COMMON, command[0], out, *command[1:])
    assert_clean_failure(result, "parameter-golf folder", "overlap ")
    assert "--boundary-id" not in result.stderr


@pytest.mark.parametrize("variant", ["sp1024", "byte260", "bpe1000"])
def test_overlap_reads_a_datasets_shards_as_meta_json_lists_them(prepared, golf_docs, variant):
    """overlap on a dataset's folder reads the shards its root's meta.json lists, not the val
    bytes sidecars beside them, each document led by the tokenizer's BOS; --against encodes
    with the dataset's own tokenizer."""
    out, _ = prepared
    dataset = out / "datasets" / f"fineweb10B_{variant}"
    against = out.parent / f"against_{variant}.txt"
    against.write_text(max(golf_docs[500:], key=len).replace("\n", " ") + "\n")
    result = run_python(COMMON, "overlap", dataset, "--json", "--against", against)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["documents"] == {"train": len(golf_docs) - 500, "val": 500}
    assert report["against"][0]["items_with_ngram_in_train"] == 1


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["show"], id="show"),
        pytest.param(["packing", "--block-size", "64"], id="packing"),
        pytest.param(["verify"], id="verify"),
        pytest.param(["bpb"], id="bpb"),
    ],
)
def test_commands_given_a_dataset_point_at_the_folders_they_read(prepared, command):
    """show, packing, verify and bpb on one dataset's folder, whose record is the meta.json of
    the folder above it: one line naming that folder and overlap's command on the dataset with
    its BOS, not a folder that a run was interrupted in."""
    out, _ = prepared
    dataset = out / "datasets" / "fineweb10B_sp1024"
    result = run_python(COMMON, command[0], dataset, *command[1:])
    where = f"parameter-golf folder {out.resolve()}"
    assert_clean_failure(result, where, f"python prepare_common.py overlap {dataset}")
    assert "interrupted" not in result.stderr


def test_the_folder_holds_a_copy_of_the_users_documents(golf_docs, tmp_path):
    """docs_selected.jsonl is a copy of the user's .jsonl file, not a link to it: the user's file
    changed in place afterwards leaves the folder as it verified."""
    docs = write_jsonl(tmp_path / "docs.jsonl", golf_docs[:300])
    out = tmp_path / "out"
    args = ["--data-files", docs, "--variant", "byte260", "--val-docs", 20, "--out-dir", out]
    assert run_python(LESSON, *args).returncode == 0
    with open(docs, "r+b") as file:
        file.write(b'{"text": "changed"}')
    assert (out / "docs_selected.jsonl").read_bytes() != docs.read_bytes()
    result = run_python(COMMON, "verify", out)
    assert result.returncode == 0, result.stderr


def test_a_rerun_replaces_the_datasets_as_one_set(golf_docs, tmp_path):
    """The folder is a transaction: a second run with byte260 only leaves byte260's files, the
    first run's sp1024 model, shards and sidecars removed, and verifies."""
    docs = write_jsonl(tmp_path / "docs.jsonl", golf_docs[:800])
    out = tmp_path / "out"
    for variants in (["sp1024", "byte260"], ["byte260"]):
        result = run_python(
            LESSON,
            "--data-files",
            docs,
            "--variant",
            *variants,
            "--val-docs",
            100,
            "--val-bytes",
            "--out-dir",
            out,
        )
        assert result.returncode == 0, result.stderr
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == [
        "datasets/fineweb10B_byte260/fineweb_train_000000.bin",
        "datasets/fineweb10B_byte260/fineweb_val_000000.bin",
        "datasets/fineweb10B_byte260/fineweb_val_bytes_000000.bin",
        "docs_selected.jsonl",
        "manifest.json",
        "meta.json",
        "tokenizer_config.export.json",
        "tokenizers/fineweb_pure_byte_260.json",
    ]
    assert not (out / "datasets" / "fineweb10B_sp1024").exists()
    assert run_python(COMMON, "verify", out).returncode == 0


@pytest.mark.parametrize("fixture", ["tmpfs", "small_tmpfs"])
def test_a_full_disk_is_one_line_and_changes_nothing(golf_docs, tmp_path, request, fixture):
    """A disk that fills up (while the documents are copied, or the shards written): one line
    saying so, and nothing left in the folder."""
    disk = request.getfixturevalue(fixture)
    docs = write_jsonl(tmp_path / "docs.jsonl", golf_docs)
    result = run_python(
        LESSON,
        "--data-files",
        docs,
        "--variant",
        "sp1024",
        "byte260",
        "--val-docs",
        100,
        "--out-dir",
        disk / "out",
    )
    assert_clean_failure(result, "No space left on device")
    assert not (disk / "out").exists() or not any((disk / "out").iterdir())


@pytest.mark.parametrize("step", ["staged", "replaced"])
def test_a_run_killed_in_its_commit_leaves_the_old_set_or_an_incomplete_one(
    golf_docs, tmp_path, step
):
    """SIGKILL while the new folder is staged leaves the old set, which verifies; while its
    files replace the old ones (a subfolder's shard among them), a folder verify calls
    incomplete; the next run makes it whole again."""
    docs = write_jsonl(tmp_path / "docs.jsonl", golf_docs[:600])
    out = tmp_path / "out"
    old = ["--data-files", docs, "--variant", "byte260", "--val-docs", 100, "--out-dir", out]
    assert run_python(LESSON, *old).returncode == 0
    new = [*old[:3], "sp1024", "byte260", "--val-docs", 200, "--val-bytes", "--out-dir", out]
    process = subprocess.Popen(
        paused_command(step, LESSON, *new),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status = os.waitpid(process.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), f"the run ended before reaching {step!r}"
    process.send_signal(signal.SIGKILL)
    process.wait()
    result = run_python(COMMON, "verify", out)
    if step == "staged":
        assert result.returncode == 0, result.stderr
        assert json.loads((out / "meta.json").read_text())["split"]["val_docs"] == 100
    else:
        assert_clean_failure(result, "incomplete")
    assert run_python(LESSON, *new).returncode == 0
    assert run_python(COMMON, "verify", out).returncode == 0
