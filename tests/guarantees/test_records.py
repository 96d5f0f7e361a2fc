"""Run for real: what a tampered record, a damaged archive and a full disk can still do.

Four causes, one section each, every item a test that drives the real commands in fresh
processes, with a victim file outside the folder that must stay as it was:

1. a record is input: every name a meta.json (or a commit's journal) lists is checked before
   anything is read, replaced or removed through it, and `verify` names the field;
2. an archive is read whole or refused: a damaged header, data before the end-of-archive
   blocks, extension headers bounded like members (memory flat on a 128 MB long name);
3. out of space is an error, never a signal: a lesson filling a real tmpfs stops in one line
   naming the file, the old set, the lock and no staging folder left; a --plot, the old picture;
4. small things: a closed stdout, numpy's warnings, an unlisted document index, --num-proc
   past the archive's members, --plot given a folder.
"""

import contextlib
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from conftest import (
    CHAR,
    COMMON,
    OWT,
    REPO,
    TRAIN_TOKENIZER,
    assert_ok,
    assert_one_line,
    mounted_tmpfs,
    run,
    tree,
)

TINYSTORIES = REPO / "data" / "tinystories" / "prepare.py"
VICTIM = b"a file of the user's, outside the prepared folder\n"


def words(count, seed):
    import random

    rng = random.Random(seed)
    vocabulary = ["the", "king", "and", "queen", "of", "a", "land", "far", "away", "said"]
    return " ".join(rng.choice(vocabulary) for _ in range(count)) + "\n"


@pytest.fixture(scope="module")
def char_set(tmp_path_factory):
    """A character folder prepared from a small text, never changed."""
    base = tmp_path_factory.mktemp("char-set")
    text = base / "input.txt"
    text.write_text(words(4_000, 1), encoding="utf-8")
    assert_ok(run(CHAR, "--input", text, "--out-dir", base / "out"))
    return base / "out", text


@pytest.fixture
def work(char_set, tmp_path):
    """(a copy of the character folder, its input, the victim outside it)."""
    folder = tmp_path / "work" / "out"
    shutil.copytree(char_set[0], folder)
    victim = tmp_path / "work" / "victim.bin"
    victim.write_bytes(VICTIM)
    return folder, char_set[1], victim


def edit_meta(folder, change):
    meta = json.loads((folder / "meta.json").read_text())
    change(meta)
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))


# =============================================================================================
# 1. A record is input


def split_named(key):
    """A split record whose key makes its file name: "../victim" -> "../victim.bin"."""
    record = {"file": f"{key}.bin", "tokens": 10, "sha256": "0" * 64}
    return lambda meta, _victim: meta["splits"].update({key: record})


def relative_key(meta, victim):
    split_named("../victim")(meta, victim)


def absolute_key(meta, victim):
    split_named(str(victim.with_suffix("")))(meta, victim)


def absolute_index(meta, victim):
    meta["splits"]["train"]["index"] = {"file": str(victim), "documents": 1, "sha256": "0" * 64}


def separator(meta, _victim):
    meta["meta_pkl"]["file"] = "elsewhere/victim.bin"  # elsewhere: a link to the victim's folder


def nul(meta, victim):
    split_named("notes\u0000/../../victim")(meta, victim)


def wrong_suffix(meta, _victim):
    meta["format"] = "llmc"  # a shard set whose shard is the user's notes
    shard = {"split": "val", "tokens": 1, "sha256": "0" * 64}
    meta["shards"] = [
        {**shard, "file": "notes.txt"},
        {**shard, "file": "a_train_1.bin", "split": "train"},
    ]


RECORD_CASES = [
    pytest.param(relative_key, 'splits["../victim"].file', id="dot-dot"),
    pytest.param(absolute_key, "splits[", id="absolute-split"),
    pytest.param(absolute_index, "splits.train.index.file", id="absolute-index"),
    pytest.param(separator, "meta_pkl", id="separator"),
    pytest.param(nul, "splits[", id="nul"),
    pytest.param(wrong_suffix, "shards[0].file", id="wrong-suffix"),
]


@pytest.mark.parametrize("tamper, field", RECORD_CASES)
def test_a_tampered_record_is_refused_and_nothing_is_removed_through_it(work, tamper, field):
    """A meta.json written by hand naming a file outside the folder (or one of another form)
    made the next run delete it ("removed ../victim.bin, left by an earlier run"). Now the
    run and `verify` refuse the record in one line naming the field; every file, in the
    folder and out, stays as it was."""
    folder, text, victim = work
    (folder / "elsewhere").symlink_to(victim.parent)
    (folder / "notes.txt").write_bytes(b"my notes\n")
    edit_meta(folder, lambda meta: tamper(meta, victim))
    before = tree(folder.parent)
    result = run(CHAR, "--input", text, "--out-dir", folder)
    assert_one_line(result, folder / "meta.json", field, "nothing was read, replaced or removed")
    assert tree(folder.parent) == before
    assert victim.read_bytes() == VICTIM
    assert_one_line(run(COMMON, "verify", folder), field)
    assert tree(folder.parent) == before


@pytest.mark.parametrize(
    "owned",
    [
        pytest.param("../victim.bin", id="dot-dot"),
        pytest.param("{victim}", id="absolute"),
        pytest.param("elsewhere/victim.bin", id="separator"),
        pytest.param("victim\u0000.bin", id="nul"),
        pytest.param(".hidden", id="hidden"),
        pytest.param("notes.txt", id="not-an-output"),
        pytest.param("prepare.py", id="a-script"),
    ],
)
def test_a_tampered_journal_is_refused_and_nothing_is_removed_through_it(work, owned):
    """A folder whose commit was cut short has no meta.json, and its journal lists what it
    owns: a journal naming a file outside the folder, or one no output is named (the user's
    notes.txt), is refused as meta.json is, and the file stays."""
    folder, text, victim = work
    (folder / "elsewhere").symlink_to(victim.parent)
    (folder / "meta.json").unlink()
    (folder / "notes.txt").write_bytes(b"my notes\n")
    (folder / "prepare.py").write_bytes(b"print('mine')\n")
    journal = {"owned": ["train.bin", owned.format(victim=victim)]}
    (folder / ".prepare.journal").write_text(json.dumps(journal))
    before = tree(folder.parent)
    result = run(CHAR, "--input", text, "--out-dir", folder)
    assert_one_line(result, folder / ".prepare.journal", "owned[1]", "nothing was read")
    assert tree(folder.parent) == before


def test_the_forms_a_record_allows_still_run(work):
    """A tokenizer or a source outside the folder is recorded by its absolute path: read, never
    owned; such a record and a rerun over it pass."""
    folder, text, victim = work
    edit_meta(folder, lambda meta: meta["source"].update(path=str(text)))
    assert_ok(run(COMMON, "verify", folder))
    assert_ok(run(CHAR, "--input", text, "--out-dir", folder))
    assert_ok(run(COMMON, "verify", folder))
    assert victim.read_bytes() == VICTIM and text.is_file()


# =============================================================================================
# 2. An archive is read whole or refused


def stories(*texts):
    return json.dumps([{"story": text, "summary": text[:10]} for text in texts]).encode()


STORIES = {
    f"data{i:02d}.json": stories(*(f"Once upon a time, story {i} of {n}." for n in range(40)))
    for i in range(5)
}


def header(name, size, kind=tarfile.REGTYPE):
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return bytearray(info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape"))


def padded(data):
    return bytes(data) + bytes(-len(data) % 512)


def members(names=STORIES):
    """The tar blocks of `names`' members, in order: [(header, padded data), ...]."""
    return [(header(name, len(STORIES[name])), padded(STORIES[name])) for name in names]


def tar_of(*parts, end=bytes(1024)):
    """An uncompressed tar of header and data blocks, then `end` (tar's two zero blocks)."""
    out = b"".join(bytes(part) for pair in parts for part in pair) + end
    return out + bytes(-len(out) % 10240)


def with_checksum(block):
    """A header block whose checksum is made right again after an edit."""
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    return block


def bad_checksum():
    parts = members()
    parts[2][0][0:11] = b"data02.json"  # as it was, but one byte of the size changed
    parts[2][0][124:136] = bytes(parts[2][0][124:135]).replace(b"0", b"1", 1) + b"\0"
    return tar_of(*parts), "bad checksum"


def lying_size():
    """data02.json's header claims one block of data: the next header is read in its text."""
    parts = members()
    big = stories(*(f"A longer story, number {i}, that fills blocks." for i in range(60)))
    parts[2] = (with_checksum(header("data02.json", 512)), padded(big))
    return tar_of(*parts), "data02.json"


def data_before_the_end():
    return tar_of(*members(), (b"trailing garbage".ljust(512, b"x"), b"")), "after data04.json"


def member_after_a_lone_zero_block():
    parts = members()
    return tar_of(*parts[:4], (bytes(512), b""), parts[4]), "lone zero block"


def a_second_archive_joined_on():
    """Two tars joined (cat a.tar b.tar): GNU tar -t lists the first alone, silently."""
    parts = members()
    return tar_of(*parts[:3]) + tar_of(*parts[3:]), "two archives joined"


def header_cut_short():
    whole = b"".join(bytes(part) for pair in members() for part in pair)
    return whole + bytes(header("data05.json", 10))[:300], "cut short"


def long_name_too_long():
    name = b"x" * 100_000
    parts = members()
    long_name = (header("././@LongLink", len(name), tarfile.GNUTYPE_LONGNAME), padded(name))
    return tar_of(*parts[:2], long_name, *parts[2:]), "65,536"


def pax_header_too_long():
    record = b"comment=" + b"y" * 100_000 + b"\n"
    record = b"%d " % (len(record) + 7) + record
    parts = members()
    pax = (header("././@PaxHeader", len(record), tarfile.XHDTYPE), padded(record))
    return tar_of(*parts[:3], pax, *parts[3:]), "65,536"


DAMAGED = [  # what GNU tar 1.34 says of each: exit 2, or a warning (a lone zero block)
    pytest.param(bad_checksum, "'data02.json'", 2, id="bad-checksum"),
    pytest.param(lying_size, "after data02.json", 2, id="lying-size"),
    pytest.param(data_before_the_end, "'trailing garbage", 2, id="data-before-the-end"),
    pytest.param(member_after_a_lone_zero_block, "after data03.json", 0, id="lone-zero-block"),
    pytest.param(a_second_archive_joined_on, "after data02.json", None, id="two-archives"),
    pytest.param(header_cut_short, "'data05.json'", None, id="header-cut-short"),
    pytest.param(long_name_too_long, "'././@LongLink'", None, id="long-name-64k"),
    pytest.param(pax_header_too_long, "'././@PaxHeader'", None, id="pax-header-64k"),
]


@pytest.fixture(scope="module")
def story_set(tmp_path_factory):
    """A TinyStories folder prepared from a whole archive, never changed (the old set)."""
    base = tmp_path_factory.mktemp("story-set")
    archive = base / "whole.tar.gz"
    archive.write_bytes(gzip.compress(tar_of(*members()), mtime=0))
    assert_ok(run(TINYSTORIES, "--archive", archive, "--out-dir", base / "out", "--num-proc", 1))
    return base / "out"


@pytest.mark.parametrize("make, where, gnu_tar", DAMAGED)
def test_a_damaged_archive_is_refused_naming_the_member_and_the_offset(
    story_set, tmp_path, make, where, gnu_tar
):
    """Python's tarfile takes a damaged header for the archive's end: 1 of 101 stories, exit 0.
    GNU tar exits 2 on each of these archives; the lesson now refuses it in one line naming
    the member and the byte offset, and the folder's old set stays as it was."""
    tar, fragment = make()
    archive = tmp_path / "damaged.tar.gz"
    archive.write_bytes(gzip.compress(tar, mtime=0))
    if shutil.which("tar") and gnu_tar is not None:  # GNU tar, the reference
        listed = subprocess.run(["tar", "-tzf", archive], capture_output=True)
        assert listed.returncode == gnu_tar and listed.stderr, listed.stderr
    out = tmp_path / "out"
    shutil.copytree(story_set, out)
    before = tree(tmp_path)
    result = run(TINYSTORIES, "--archive", archive, "--out-dir", out, "--num-proc", 1)
    line = assert_one_line(result, archive, fragment, where, "byte")
    assert tree(tmp_path) == before, line


def test_an_archive_with_pax_headers_and_long_names_is_read(story_set, tmp_path):
    """The headers a tar may hold beside TinyStories' own: a pax header (its path and size
    override the member's), a GNU long name, a global pax comment: the same outputs."""
    parts = members()
    record = b"path=data01.json\n"
    record = b"%d " % (len(record) + 3) + record
    comment = b"comment=made by a test\n"
    comment = b"%d " % (len(comment) + 3) + comment
    pax = (header("././@PaxHeader", len(record), tarfile.XHDTYPE), padded(record))
    parts[1] = (header("PaxHeaders/whatever", len(STORIES["data01.json"])), parts[1][1])
    parts.insert(1, pax)
    long_name = (header("././@LongLink", 12, tarfile.GNUTYPE_LONGNAME), padded(b"data03.json\0"))
    glob = (header("pax_global_header", len(comment), tarfile.XGLTYPE), padded(comment))
    parts[4] = (header("d3", len(STORIES["data03.json"])), parts[4][1])
    tar = tar_of(glob, *parts[:4], long_name, *parts[4:])
    archive = tmp_path / "pax.tar.gz"
    archive.write_bytes(gzip.compress(tar, mtime=0))
    assert subprocess.run(["tar", "-tzf", archive], capture_output=True).returncode == 0
    assert_ok(
        run(TINYSTORIES, "--archive", archive, "--out-dir", tmp_path / "out", "--num-proc", 1)
    )
    data = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir() if p.suffix != ".json"}
    assert data == {p.name: p.read_bytes() for p in story_set.iterdir() if p.suffix != ".json"}


PEAK_RSS = (  # a command's peak resident memory in KB, as its parent sees it once it has ended
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], capture_output=True); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def peak_kb(*command):
    result = run("-c", PEAK_RSS, sys.executable, *command)
    assert_ok(result)
    return int(result.stdout)


def long_name_archive(path, size):
    """data00.json, data01.json, then a GNU long-name header of `size` bytes of "x" (a 1 MB
    .tar.gz for 128 MB), the rest of the members after it; compressed as it is written."""
    compressor, parts = zlib.compressobj(6, zlib.DEFLATED, 31), members()
    with open(path, "wb") as f:
        f.write(compressor.compress(b"".join(bytes(x) for pair in parts[:2] for x in pair)))
        f.write(compressor.compress(bytes(header("././@LongLink", size, tarfile.GNUTYPE_LONGNAME))))
        for _ in range(size >> 20):
            f.write(compressor.compress(b"x" * (1 << 20)))
        f.write(compressor.compress(tar_of(*parts[2:])))
        f.write(compressor.flush())
    return path


def test_memory_stays_flat_on_a_128_mb_long_name(tmp_path):
    """A GNU long-name header of 128 MB in a 1 MB archive took 447 MB of memory: extension
    headers are bounded like members now, so the run's peak is that of a run on a whole one."""
    whole = tmp_path / "whole.tar.gz"
    whole.write_bytes(gzip.compress(tar_of(*members()), mtime=0))
    hostile = long_name_archive(tmp_path / "long-name.tar.gz", 128 << 20)
    assert hostile.stat().st_size < 2 << 20
    args = ["--num-proc", 1, "--out-dir", tmp_path / "out"]
    baseline = peak_kb(TINYSTORIES, "--archive", whole, *args)
    shutil.rmtree(tmp_path / "out")
    peak = peak_kb(TINYSTORIES, "--archive", hostile, *args)
    assert peak < baseline + 32 * 1024, (peak, baseline)  # KB: far below the 128 MB name
    result = run(TINYSTORIES, "--archive", hostile, *args)
    assert_one_line(result, hostile, "'././@LongLink'", "134,217,728 bytes", "65,536")


# =============================================================================================
# 3. Out of space is an error, never a signal


def jsonl(path, documents):
    with open(path, "w", encoding="utf-8") as f:
        for document in documents:
            f.write(json.dumps({"text": document}) + "\n")
    return path


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    """.jsonl inputs: "small" (a set that fits anywhere), "long" (1,500 documents of 400 words:
    about 1.2M GPT-2 tokens, 2.4 MB of uint16) and "short" (100,000 one-word documents: a 400 KB
    train.bin, but an 800 KB document index)."""
    base = tmp_path_factory.mktemp("corpora")
    return {
        "small": jsonl(base / "small.jsonl", [words(50, seed) for seed in range(40)]),
        "long": jsonl(base / "long.jsonl", [words(400, seed) for seed in range(1_500)]),
        "short": jsonl(base / "short.jsonl", ["king"] * 100_000),
    }


def contents(folder):
    return {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir())}


FULL_DISK = [
    pytest.param(OWT, "long", [], "train.bin", id="openwebtext-train-bin-memmap"),
    pytest.param(OWT, "short", [], "train.docs.npy", id="openwebtext-document-index"),
    pytest.param(
        OWT,
        "long",
        ["--format", "llmc", "--shard-size", "100000"],
        "openwebtext_train_",
        id="openwebtext-llmc-shards",
    ),
    pytest.param(
        REPO / "data" / "fineweb" / "prepare.py",
        "long",
        ["--format", "npy", "--shard-size", "1000"],
        "edufineweb_train_",
        id="fineweb-npy-shards",
    ),
]


@pytest.mark.parametrize("script, corpus, args, name", FULL_DISK)
def test_a_full_disk_is_one_line_naming_the_file(tmp_path, corpora, script, corpus, args, name):
    """write_memmap filling a memory-mapped train.bin on a full disk died of SIGBUS (no line,
    the staging folder and the lock left behind); np.save's document index said "20000
    requested and 3056 written". On a real 1 MB tmpfs, every write now fails in one line
    naming the file and the cause; the old set, and nothing else, stays."""
    env = {"HF_DATASETS_CACHE": str(tmp_path / "hf-cache")}
    common = ["--num-proc", 1, *args]
    with mounted_tmpfs(tmp_path / "disk", "size=1m") as disk:
        out = disk / "out"
        assert_ok(run(script, "--data-files", corpora["small"], "--out-dir", out, *common, env=env))
        old = contents(out)
        result = run(script, "--data-files", corpora[corpus], "--out-dir", out, *common, env=env)
        assert_one_line(result, "No space left on device", name, out, alone=False)
        assert contents(out) == old  # no staging folder, no lock, no temporary file
        assert_ok(run(COMMON, "verify", out))


def test_a_disk_too_full_for_the_lock_is_one_line_and_leaves_no_lock(tmp_path):
    """A disk with no block left: the lock file is made (an inode), its line cannot be written.
    One line naming the folder and the cause; no empty lock file stays behind."""
    text = tmp_path / "in.txt"
    text.write_text(words(200, 0), encoding="utf-8")
    with mounted_tmpfs(tmp_path / "disk", "size=64k") as disk:
        out = disk / "out"
        out.mkdir()
        with open(disk / "filler", "wb", buffering=0) as filler, contextlib.suppress(OSError):
            while True:
                filler.write(b"\0" * 4096)
        result = run(CHAR, "--input", text, "--out-dir", out)
        assert_one_line(result, "No space left on device", out, alone=False)
        assert list(out.iterdir()) == []


def test_a_full_disk_outside_the_folder_names_that_file(tmp_path):
    """A cache's file on a full disk of its own (the hub's prefix, written during a run) is named
    whole: the line named only its base name, as if the output folder's disk were full."""
    from formats import schema
    from safety import PrepareError, output_folder
    from safety.files import naming

    with mounted_tmpfs(tmp_path / "disk", "size=64k") as disk:
        cache = disk / "prefix" / "abc-docs_selected.jsonl"
        cache.parent.mkdir()
        folder = output_folder(tmp_path / "out", schema)
        with pytest.raises(PrepareError) as caught, folder, naming(cache), open(cache, "wb") as f:
            f.write(b"x" * 200_000)
            f.flush()
    assert f"outputs in {tmp_path / 'out'}: {cache}: No space left on device" in str(caught.value)


def test_a_full_disk_while_tinystories_spools_is_one_line_naming_the_file(tmp_path):
    """TinyStories writes each split through a spool file beside it: a full disk there names
    the output too, and leaves the old set."""
    small = tmp_path / "small.tar.gz"
    small.write_bytes(gzip.compress(tar_of(*members()), mtime=0))
    big = {
        f"data{i:02d}.json": stories(*(words(800, i * 100 + n) for n in range(60)))
        for i in range(5)
    }
    parts = [(header(name, len(data)), padded(data)) for name, data in big.items()]
    large = tmp_path / "large.tar.gz"
    large.write_bytes(gzip.compress(tar_of(*parts), mtime=0))
    with mounted_tmpfs(tmp_path / "disk", "size=256k") as disk:
        out = disk / "out"
        assert_ok(run(TINYSTORIES, "--archive", small, "--out-dir", out, "--num-proc", 1))
        old = contents(out)
        result = run(TINYSTORIES, "--archive", large, "--out-dir", out, "--num-proc", 1)
        assert_one_line(result, "No space left on device", out)
        assert "(train.bin)" in result.stderr or "(val.bin)" in result.stderr  # the file named
        assert contents(out) == old
        assert_ok(run(COMMON, "verify", out))


def sweep_plot(tmp_path, _folder, picture):
    """train_tokenizer.py drawing a --sweep of a small text into `picture`."""
    text = tmp_path / "in.txt"
    text.write_text(words(2_000, 1), encoding="utf-8")
    sweep = ["--sweep", "260,270,280", "--out", tmp_path / "tok.json"]
    return [TRAIN_TOKENIZER, "--input", text, *sweep, "--plot", picture]


def lengths_plot(_tmp_path, folder, picture):
    """`packing` drawing a document folder's lengths into `picture`."""
    return [COMMON, "packing", folder, "--block-size", 8, "--plot", picture]


OLD_PICTURE = b"the picture of an earlier run\n"


@pytest.mark.parametrize(
    "command, name",
    [
        pytest.param(sweep_plot, "sweep.png", id="train-tokenizer-png"),
        pytest.param(sweep_plot, "sweep.svg", id="train-tokenizer-svg"),
        pytest.param(lengths_plot, "lengths.png", id="packing-png"),
        pytest.param(lengths_plot, "lengths.svg", id="packing-svg"),
    ],
)
def test_a_full_disk_while_a_plot_is_drawn_names_it_and_keeps_the_old_one(
    document_folder, tmp_path, command, name
):
    """--plot on a full disk said "No space left on device" naming no file, and left the
    picture cut short (an .svg) or gone (a .png, which Pillow removes). On a real tmpfs with a
    page left, it is one line naming the picture, the old picture is as it was, and nothing is
    left beside it."""
    pytest.importorskip("matplotlib")
    with mounted_tmpfs(tmp_path / "disk", "size=64k") as disk:
        picture = disk / name
        picture.write_bytes(OLD_PICTURE)
        free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
        (disk / "filler").write_bytes(bytes(free - 4096))  # room for the start of a picture
        result = run(*command(tmp_path, document_folder, picture))
        assert_one_line(result, f"{picture}: No space left on device")
        assert contents(disk) == {"filler": bytes(free - 4096), name: OLD_PICTURE}


# =============================================================================================
# 4. Small things a user meets


@pytest.fixture(scope="module")
def document_folder(corpora, tmp_path_factory):
    """An OpenWebText folder of the small corpus (with its document indexes), never changed."""
    base = tmp_path_factory.mktemp("documents")
    env = {"HF_DATASETS_CACHE": str(base / "hf-cache")}
    out = base / "out"
    assert_ok(
        run(OWT, "--data-files", corpora["small"], "--out-dir", out, "--num-proc", 1, env=env)
    )
    return out


def closed_pipe_run(*command, unbuffered=False):
    """`python COMMAND...` writing into a pipe whose reader is already gone: (exit code, stderr)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    try:
        result = subprocess.run(
            [sys.executable, *map(str, command)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=env,
            timeout=300,
            text=True,
        )
    finally:
        os.close(write_end)
    return result.returncode, result.stderr


def assert_quiet(code, stderr):
    assert code in (0, 141), stderr
    assert (
        "error" not in stderr and "Exception ignored" not in stderr and "Traceback" not in stderr
    ), stderr


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("command", ["show", "packing", "verify"])
def test_a_closed_stdout_is_a_quiet_exit(document_folder, command, unbuffered):
    """`show | head -1` exited 120 with Python's "Exception ignored ... BrokenPipeError", or
    printed "error: [Errno 32] Broken pipe" (PYTHONUNBUFFERED): now no message, status 141."""
    args = {"show": [], "packing": ["--block-size", 64], "verify": []}[command]
    code, stderr = closed_pipe_run(COMMON, command, document_folder, *args, unbuffered=unbuffered)
    assert_quiet(code, stderr)
    assert code == 141


def test_show_piped_into_head_is_quiet(document_folder):
    """As a user types it: the shell's pipe into `head -1` (head may exit before the command
    writes, or after: 141 or 0, never a message)."""
    for command in (
        f"show {document_folder} --block-size 64",
        f"packing {document_folder} --block-size 8",
    ):
        shell = f"{sys.executable} {COMMON} {command} | head -1; exit ${{PIPESTATUS[0]}}"
        result = subprocess.run(
            ["bash", "-c", shell],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        assert_quiet(result.returncode, result.stderr)
        assert result.stdout.count("\n") == 1, result.stdout


def test_a_lesson_whose_stdout_closes_keeps_the_old_set(work):
    """A lesson printing into a closed pipe stops as if interrupted: quiet, the old set kept,
    no staging folder, no lock."""
    folder, _, victim = work
    other = folder.parent / "other.txt"
    other.write_text(words(3_000, 7), encoding="utf-8")
    old = contents(folder)
    code, stderr = closed_pipe_run(CHAR, "--input", other, "--out-dir", folder, unbuffered=True)
    assert_quiet(code, stderr)
    assert code == 141 and contents(folder) == old and victim.read_bytes() == VICTIM


def huge_index(folder):
    """train.docs.npy replaced by a .npy whose header claims 2**62 starts, its sha256 recorded."""
    path = folder / "train.docs.npy"
    with open(path, "wb") as f:
        header = {"descr": "<u8", "fortran_order": False, "shape": (2**62,)}
        np.lib.format.write_array_header_1_0(f, header)
        f.write(bytes(64))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    edit_meta(folder, lambda meta: meta["splits"]["train"]["index"].update(sha256=digest))


@pytest.mark.parametrize("command", [["verify"], ["packing", "--block-size", "8"], ["show"]])
def test_an_index_header_claiming_2_62_starts_is_one_line_without_warnings(
    document_folder, tmp_path, command
):
    """The right error line came with two lines of numpy's RuntimeWarning (an overflow)."""
    folder = tmp_path / "out"
    shutil.copytree(document_folder, folder)
    huge_index(folder)
    result = run(COMMON, command[0], folder, *command[1:])
    assert_one_line(result, folder / "train.docs.npy", "4611686018427387904", absent=["Warning"])


def test_verify_flags_an_unlisted_document_index(char_set, document_folder, tmp_path):
    """The BOS-aligned train.py of docs/bos_batches.md reads train.docs.npy: one that meta.json
    does not list is flagged by verify, and refused by a run (never replaced)."""
    folder = tmp_path / "out"
    shutil.copytree(char_set[0], folder)
    shutil.copyfile(document_folder / "train.docs.npy", folder / "train.docs.npy")
    assert_one_line(run(COMMON, "verify", folder), "train.docs.npy", "a trainer would read")
    before = tree(folder)
    result = run(CHAR, "--input", char_set[1], "--out-dir", folder)
    assert_one_line(result, folder / "train.docs.npy", "a trainer would read")
    assert tree(folder) == before


def test_num_proc_is_capped_at_the_archive_members(story_set, tmp_path):
    """--num-proc 100 on 5 members started 101 processes: now 5, with a one-line note, and
    the same bytes."""
    archive = tmp_path / "whole.tar.gz"
    archive.write_bytes(gzip.compress(tar_of(*members()), mtime=0))
    result = run(
        TINYSTORIES, "--archive", archive, "--out-dir", tmp_path / "out", "--num-proc", 100
    )
    assert_ok(result)
    assert "note: --num-proc 100 capped at 5, the archive's JSON files\n" in result.stdout
    data = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir() if p.suffix != ".json"}
    assert data == {p.name: p.read_bytes() for p in story_set.iterdir() if p.suffix != ".json"}


@pytest.mark.parametrize(
    "command",
    [pytest.param(sweep_plot, id="train-tokenizer"), pytest.param(lengths_plot, id="packing")],
)
def test_plot_refuses_a_folder_and_names_the_file_it_writes(document_folder, tmp_path, command):
    """`--plot DIR` wrote DIR.png beside the folder. A folder is refused (nothing written), and
    a FIFO or device; a name without a suffix gets ".png", and the "wrote" line names the file;
    a suffix matplotlib does not write is refused. train_tokenizer.py and `packing` alike, before
    any work."""
    pytest.importorskip("matplotlib")
    folder = tmp_path / "pictures"
    folder.mkdir()
    result = run(*command(tmp_path, document_folder, folder))
    assert_one_line(result, folder, "is a folder", "lengths.png")
    assert not list(folder.iterdir()) and not (tmp_path / "tok.json").exists()
    result = run(*command(tmp_path, document_folder, folder / "lengths"))
    assert_ok(result)
    assert f"wrote {folder / 'lengths.png'}" in result.stdout
    assert [p.name for p in folder.iterdir()] == ["lengths.png"]
    (tmp_path / "tok.json").unlink(missing_ok=True)
    result = run(*command(tmp_path, document_folder, folder / "l.txt"))
    assert_one_line(result, "l.txt", "png")
    assert not (tmp_path / "tok.json").exists()  # refused before the training
    os.mkfifo(tmp_path / "fifo")  # as /dev/null: "/dev/null.png" was written beside it
    result = run(*command(tmp_path, document_folder, tmp_path / "fifo"))
    assert_one_line(result, "fifo is not a regular file")
    assert not (tmp_path / "fifo.png").exists() and not (tmp_path / "tok.json").exists()
