"""--dedup exact|near on the document lessons (OpenWebText, FineWeb, TinyStories), run as a user
runs them on corpora with planted exact and near copies: verify OK, and `overlap` on the result
finds no val document with an exact copy in train (nor a near one, for near) and no repeat in
train; meta.json records the rule and the documents dropped; a corpus without copies gives the
bytes of a run without --dedup; every run ends with overlap's exact figures. The parts: the
fast keep equal to the readable one on everything at once, the spool's read-back and pick."""

import json
import random

import numpy as np
import pytest
from conftest import COMMON, REPO, assert_clean_failure, needs_datatrove, run_python, write_jsonl
from test_tinystories import story_items, write_archive

from dedup import fast
from dedup.drop import document_keys, keep_documents, near_keep, shared_band, without_boundaries
from dedup.overlap import documents_of
from safety.spool import Spool

pytestmark = pytest.mark.usefixtures("downloads")  # Tiny Shakespeare, GPT-2's files

LESSONS = {
    name: REPO / "data" / name / "prepare.py" for name in ("openwebtext", "fineweb", "tinystories")
}
EXACT_COPIES, NEAR_COPIES = 40, 40


def near_copy(text, rng):
    """`text` with one word in its middle half replaced (by one Tiny Shakespeare never uses): of
    a long_documents one, Jaccard 0.85 to 0.95 over 5-gram shingles."""
    words = text.split(" ")
    i = rng.randrange(len(words) // 4, 3 * len(words) // 4)
    words[i] = rng.choice(["zeppelin", "xylophone", "quasar", "algorithm"])
    return " ".join(words)


def long_documents(paragraphs, count):
    """`count` distinct documents of 3 paragraphs of at least 20 words each (about 260 tokens)."""
    unique = [p for p in dict.fromkeys(paragraphs) if len(p.split()) >= 20]
    return ["\n\n".join(unique[3 * i : 3 * i + 3]) for i in range(count)]


@pytest.fixture(scope="module")
def planted(paragraphs):
    """(documents, originals): 400 distinct documents, then 40 exact copies of some and 40 near
    copies of others, shuffled in among them (a copy may come before its original)."""
    rng = random.Random(34)
    originals = long_documents(paragraphs, 400)
    documents = list(originals)
    documents += [originals[i] for i in range(0, 2 * EXACT_COPIES, 2)]
    documents += [near_copy(originals[i], rng) for i in range(1, 2 * NEAR_COPIES, 2)]
    rng.shuffle(documents)
    return documents, originals


def overlap_json(folder):
    result = run_python(COMMON, "overlap", folder, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def lesson_run(name, args, tmp_path, out="out"):
    """Run a lesson into tmp_path / out; check verify says OK; return (stdout, meta)."""
    args = [*args, "--out-dir", tmp_path / out]
    if name != "tinystories":
        args += ["--num-proc", "1", "--cache-dir", tmp_path / f"cache-{out}"]
    result = run_python(LESSONS[name], *args)
    assert result.returncode == 0, result.stderr
    verified = run_python(COMMON, "verify", tmp_path / out)
    assert verified.returncode == 0 and f"{tmp_path / out}: OK" in verified.stdout, verified.stderr
    return result.stdout, json.loads((tmp_path / out / "meta.json").read_text())


def assert_sound(report, rule):
    """overlap finds nothing --dedup `rule` drops: no val document in train, no train repeat."""
    assert report["val_documents_in_train"]["documents"] == 0
    assert report["train_repeated_documents"]["documents"] == 0
    if rule == "near":
        assert report["val_near_duplicates_in_train"]["documents"] == 0


def assert_record(record, rule):
    assert record["rule"] == rule and "end-of-text token left out" in record["compared"]
    if rule == "near":
        assert (record["shingle_tokens"], record["bands"], record["rows"]) == (5, 14, 8)
        assert record["seed"] == 0 and "threshold" not in record


def document_args(name, data_files):
    if name == "openwebtext":
        return ["--data-files", data_files, "--val-fraction", "0.2"]
    return ["--data-files", data_files, "--shard-size", "8000"]  # FineWeb: shard 0 is val


@pytest.mark.parametrize("name", ["openwebtext", "fineweb"])
@pytest.mark.parametrize("rule", ["exact", "near"])
def test_document_lessons(name, rule, planted, tmp_path):
    documents, _ = planted
    data_files = write_jsonl(tmp_path / "docs.jsonl", documents)
    stdout, meta = lesson_run(name, [*document_args(name, data_files), "--dedup", rule], tmp_path)
    record = meta["split"]["dedup"]
    assert_record(record, rule)
    if rule == "exact":  # each exact copy dropped, and nothing else
        assert record["documents_dropped"] == EXACT_COPIES
    else:  # and the near copies (Jaccard about 0.9: MinHash finds at least 95% of them)
        assert (
            EXACT_COPIES + 0.95 * NEAR_COPIES
            <= record["documents_dropped"]
            <= EXACT_COPIES + NEAR_COPIES
        )
    assert (
        f"--dedup {rule}: {record['documents_dropped']:,} of {len(documents):,} documents dropped"
        in stdout
    )
    assert "val documents with an exact copy in train: 0 of " in stdout
    assert_sound(overlap_json(tmp_path / "out"), rule)


@pytest.mark.parametrize("name", ["openwebtext", "fineweb"])
def test_without_dedup_the_copies_are_there_and_said(name, planted, tmp_path):
    """The same corpus without --dedup: overlap finds the copies, and the run's last lines say
    overlap's exact figures, with the command."""
    data_files = write_jsonl(tmp_path / "docs.jsonl", planted[0])
    stdout, meta = lesson_run(name, document_args(name, data_files), tmp_path)
    assert "dedup" not in meta["split"]
    report = overlap_json(tmp_path / "out")
    exact, repeats = report["val_documents_in_train"], report["train_repeated_documents"]
    assert exact["documents"] > 0 and repeats["documents"] > 0
    docs = report["documents"]
    assert (
        f"val documents with an exact copy in train: {exact['documents']:,} of {docs['val']:,} "
        f"({exact['fraction']:.1%})" in stdout
    )
    assert (
        f"train documents repeating an earlier one: {repeats['documents']:,} of {docs['train']:,}"
        in stdout
    )
    assert f"python prepare_common.py overlap {tmp_path / 'out'}" in stdout


@pytest.mark.parametrize("name", ["openwebtext", "fineweb"])
@pytest.mark.parametrize("rule", ["exact", "near"])
def test_a_corpus_without_copies_gives_the_same_bytes(name, rule, planted, tmp_path):
    """Nothing to drop: the same token files as without --dedup (the same split, the same order)."""
    data_files = write_jsonl(tmp_path / "docs.jsonl", planted[1])
    args = [*document_args(name, data_files), "--shuffle" if name == "fineweb" else "--seed", "7"]
    _, plain = lesson_run(name, args, tmp_path, out="plain")
    _, deduplicated = lesson_run(name, [*args, "--dedup", rule], tmp_path, out="dedup")
    assert deduplicated["split"].pop("dedup")["documents_dropped"] == 0
    files = [s["file"] for s in plain.get("shards", [])] or [
        "train.bin",
        "val.bin",
        "train.docs.npy",
    ]
    for file in files:
        assert (tmp_path / "dedup" / file).read_bytes() == (tmp_path / "plain" / file).read_bytes()
    assert deduplicated["split"] == plain["split"]


@pytest.mark.parametrize(
    "name, extra",
    [
        pytest.param("openwebtext", ["--format", "bin"], id="openwebtext-bin"),
        pytest.param(
            "openwebtext", ["--format", "llmc", "--shard-size", "20000"], id="openwebtext-llmc"
        ),
        pytest.param("fineweb", ["--shuffle", "3"], id="fineweb-shuffled"),
    ],
)
@pytest.mark.parametrize("rule", ["exact", "near"])
@needs_datatrove
def test_both_engines_write_the_same_bytes(name, extra, rule, planted, tmp_path):
    """prepare_datatrove.py --dedup (the keys made by the tokenize tasks, the copies dropped by
    the plan): the files, meta.json (but its options) and the lines of prepare.py --dedup."""
    args = [*document_args(name, write_jsonl(tmp_path / "docs.jsonl", planted[0])), *extra]
    args += ["--dedup", rule]
    stdout, meta = lesson_run(name, args, tmp_path, out="a")
    script = LESSONS[name].with_name("prepare_datatrove.py")
    result = run_python(script, *args, "--tasks", "2", "--out-dir", tmp_path / "b")
    assert result.returncode == 0, result.stderr
    written = sorted(p.name for p in (tmp_path / "a").iterdir() if p.name != "meta.json")
    for file in written:
        assert (tmp_path / "b" / file).read_bytes() == (tmp_path / "a" / file).read_bytes(), file
    other = json.loads((tmp_path / "b" / "meta.json").read_text())
    assert {**other, "options": None} == {**meta, "options": None}
    lines = [
        line.replace(f"{tmp_path / 'b'}", f"{tmp_path / 'a'}")
        for line in result.stdout.splitlines()
    ]
    # the same lines (OpenWebText's llm.c shards: said as each is written, in another order)
    assert sorted(line for line in lines if "work directory" not in line) == sorted(
        stdout.splitlines()
    )


@pytest.fixture(scope="module")
def story_archive(paragraphs, tmp_path_factory):
    """TinyStories' layout: data00.json (val) repeats 3 of its stories; data02-04.json (train)
    each add 10 of val's stories, 5 of data01.json's and 5 near copies of data01.json's."""
    rng = random.Random(7)
    stories = long_documents(paragraphs, 300)
    files = {}
    for i in range(5):
        own = stories[i * 60 : (i + 1) * 60]
        if i == 0:
            own = own + own[:3]
        if i >= 2:
            copies = stories[:10] + stories[60 + 5 * i : 65 + 5 * i]
            own = own + copies + [near_copy(s, rng) for s in stories[90 + 5 * i : 95 + 5 * i]]
        files[f"data{i:02d}.json"] = story_items(own)
    folder = tmp_path_factory.mktemp("stories")
    return write_archive(
        folder / "a.tar.gz",
        files,
        ["data03.json", "data00.json", "data04.json", "data01.json", "data02.json"],
    )


@pytest.mark.parametrize("fmt", ["bin", "llmc"])
@pytest.mark.parametrize("rule", ["exact", "near"])
def test_tinystories(rule, fmt, story_archive, gpt2_encoding, tmp_path):
    """val's stories first: its own repeats dropped, none for a train copy; every train copy of
    a val story, or of an earlier train story, dropped; the train figures printed are those of
    the stories written."""
    args = ["--archive", story_archive, "--format", fmt, "--num-proc", "2", "--dedup", rule]
    stdout, meta = lesson_run("tinystories", args, tmp_path)
    name = "train.bin" if fmt == "bin" else "TinyStories_train.bin"
    ids = np.fromfile(tmp_path / "out" / name, np.uint16, offset=0 if fmt == "bin" else 1024)
    characters = len(gpt2_encoding.decode(ids[ids != gpt2_encoding.eot_token].tolist()))
    stories = meta["split"]["stories"]["train"]
    printed = f"train: 4 file(s), {stories:,} stories, {characters:,} characters, {len(ids):,}"
    assert f"{printed} tokens" in stdout.splitlines()
    record = meta["split"]["dedup"]
    assert_record(record, rule)
    dropped = record["stories_dropped"]
    assert dropped["val"] == 3
    assert dropped["train"] == 45 if rule == "exact" else 45 + 0.95 * 15 <= dropped["train"] <= 60
    assert meta["split"]["stories"] == {"val": 60, "train": 240 + 60 - dropped["train"]}
    assert f"--dedup {rule}: 3 val and {dropped['train']:,} train stories dropped" in stdout
    report = overlap_json(tmp_path / "out")
    assert report["documents"] == meta["split"]["stories"]
    assert_sound(report, rule)
    if fmt == "bin":  # the document index: the kept stories' starts
        starts = np.load(tmp_path / "out" / "train.docs.npy")
        assert len(starts) == meta["split"]["stories"]["train"]


# ---------------------------------------------------------------- the parts


@pytest.mark.parametrize(
    "documents, rule, fragments",
    [
        pytest.param(
            [""] * 5, "exact", ["every token (1)", "needs more text"], id="empty-documents"
        ),
        pytest.param(["One document, said twice."] * 2, "near", ["every token"], id="one-document"),
    ],
)
def test_too_little_left_for_a_train_shard(documents, rule, fragments, tmp_path):
    """FineWeb's shards need a train shard after val's: when --dedup leaves too few tokens for
    one, the error's advice is one a user can follow (never a --shard-size below 1)."""
    data = write_jsonl(tmp_path / "docs.jsonl", documents)
    args = ["--data-files", data, "--dedup", rule, "--out-dir", tmp_path / "out"]
    result = run_python(LESSONS["fineweb"], *args, "--num-proc", "1", "--cache-dir", tmp_path / "c")
    assert_clean_failure(result, *fragments, logs_before=True)
    assert "below 1" not in result.stderr


def test_without_boundaries():
    assert [a.tolist() for a in without_boundaries([0, 5, 6, 0, 7], [3, 2], first=True)] == [
        [5, 6, 7],
        [0, 2, 3],
    ]
    assert [a.tolist() for a in without_boundaries([5, 6, 0, 7, 0], [3, 2], first=False)] == [
        [5, 6, 7],
        [0, 2, 3],
    ]
    assert shared_band(np.array([[1, 5], [2, 5], [3, 6]], np.uint64)).tolist() == [
        True,
        True,
        False,
    ]


@pytest.mark.parametrize("seed", range(3))
def test_keep_documents_equals_near_keep_on_all(seed):
    """From band keys in chunks, only the documents sharing one: near_keep of every document's,
    itself simple.first_of_clusters (test_dedup.py); exact: the first of each copy."""
    rng = random.Random(seed)
    documents = [[rng.randrange(300) for _ in range(rng.randrange(0, 60))] for _ in range(60)]
    for _ in range(40):
        copy = list(rng.choice(documents))
        if copy and rng.random() < 0.5:
            copy[rng.randrange(len(copy))] = rng.randrange(300)
        documents.insert(rng.randrange(len(documents) + 1), copy)
    chunks = [documents_of(documents[i : i + 17]) for i in range(0, len(documents), 17)]
    every_key = fast.band_keys(fast.minhash_signatures(*documents_of(documents)))
    keys = [document_keys("near", *chunk) for chunk in chunks]
    assert keep_documents("near", keys).tolist() == near_keep(every_key).tolist()
    hashes = [document_keys("exact", *chunk) for chunk in chunks]
    first = [documents.index(d) == i for i, d in enumerate(documents)]
    assert keep_documents("exact", hashes).tolist() == first


def test_spool_reads_back_and_picks(tmp_path):
    spool = Spool(tmp_path / "out.bin", np.uint16, header_bytes=4)
    spool.add(2, np.array([7, 8, 9]))
    spool.add(1, np.array([5, 6]))
    assert spool.read(2).tolist() == [7, 8, 9] and spool.read(1).tolist() == [5, 6]
    path = spool.finish(lambda total: total.to_bytes(4, "little"), pick=lambda key, ids: ids[:key])
    assert np.fromfile(path, np.uint16, offset=4).tolist() == [5, 7, 8]
    assert path.read_bytes()[:4] == (3).to_bytes(4, "little") and spool.total == 3
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]
