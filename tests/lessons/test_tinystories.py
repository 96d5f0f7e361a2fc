"""data/tinystories/prepare.py run as a user runs it, on archives the tests build in
TinyStories' layout: data00.json, data01.json, ... at the top of a .tar.gz, each a JSON list of
objects whose "story" is the text (with the real files' other fields beside it).

- --format llmc writes llm.c's TinyStories_val.bin and TinyStories_train.bin byte for byte
  (tests/references/llmc_tinystories.py, llm.c's script with one worker), whatever order the archive
  holds its members in; --format bin the same two streams without the header, as nanoGPT reads them;
  --num-proc 1 and 2 write the same bytes (and so do spawned workers, as on macOS and Windows);
- --vocab-size 512 trains a BPE on the train stories: the folder passes verify and show, its
  meta.pkl says 512, and its ids decode back to the stories; --tokenizer takes one made before;
- the edge cases of the stories themselves: only whitespace, non-ASCII, a file of one story;
- hostile archives (a member escaping the folder, links, a FIFO or a device, a truncated .gz, a
  JSON that is not a list, ...): each one `error:` line, nothing written anywhere;
- the pieces under it (safety/): the spool that reorders, the pool that reads ahead a little.
"""

import gzip
import json
import os
import pickle
import random
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from conftest import (
    COMMON,
    REPO,
    WINDOWS_LIKE,
    assert_clean_failure,
    files_in,
    run_python,
    tokenizer_file,
)
from llmc_tinystories import split_tokens, write_llmc_tinystories

from bpe import EOT, Tokenizer
from documents.parallel import ordered_map
from safety.spool import Spool

sys.path.insert(
    0, str(REPO / "data" / "tinystories")
)  # the lesson's own modules, as it imports them
from archive import ArchiveError, json_members, json_stories  # noqa: E402
from stories import train_story_bpe  # noqa: E402

pytestmark = pytest.mark.usefixtures("downloads")  # Tiny Shakespeare, GPT-2's files

SCRIPT = REPO / "data" / "tinystories" / "prepare.py"


# ---------------------------------------------------------------------------------------------
# archives in TinyStories' layout


def story_items(stories):
    """The JSON of one member: TinyStories' objects, "story" and the fields beside it."""
    items = [
        {
            "story": story,
            "instruction": {"prompt:": "Write a story.", "words": ["cat", "run"], "features": []},
            "summary": story[:40],
            "source": "GPT-4",
        }
        for story in stories
    ]
    return json.dumps(items).encode("utf-8")


def member(name, data=b"", kind=tarfile.REGTYPE, linkname="", size=None):
    """One archive entry: (TarInfo, its bytes or None)."""
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    info.size = len(data) if size is None else size
    return info, data if kind == tarfile.REGTYPE else None


def tar_bytes(entries):
    """The uncompressed tar of (TarInfo, bytes) entries, in that order, written block by block
    (so that a header may claim a size its data does not have), then tar's end: two zero
    blocks, padded to a record of 10,240 bytes."""
    out = bytearray()
    for info, data in entries:
        out += info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")
        if data:
            out += data + bytes(-len(data) % 512)
    out += bytes(1024)
    return bytes(out + bytes(-len(out) % 10240))


def write_archive(path, files, order=None, top=False):
    """`files` ({name: member bytes}) as a .tar.gz at `path`, members in `order` (default: the
    dict's order); top: with "./" names after a "./" folder entry, as `tar -C dir .` writes."""
    prefix = "./" if top else ""
    entries = [member(".", kind=tarfile.DIRTYPE)] if top else []
    entries += [member(prefix + name, files[name]) for name in order or files]
    path.write_bytes(gzip.compress(tar_bytes(entries), mtime=0))
    return path


def unpacked(folder, files):
    """The same files, unpacked as llm.c's `tar -xzf` leaves them (for the oracle)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


@pytest.fixture(scope="module")
def corpus(paragraphs):
    """5 members, data00.json ... data04.json, of 60 Tiny Shakespeare paragraphs each, as stories
    (some with the leading and trailing whitespace llm.c strips)."""
    files = {}
    for i in range(5):
        stories = paragraphs[i * 60 : (i + 1) * 60]
        stories = [f"  {s}\n" if j % 3 == 0 else s for j, s in enumerate(stories)]
        files[f"data{i:02d}.json"] = story_items(stories)
    return files


@pytest.fixture(scope="module")
def oracle(corpus, gpt2_encoding, tmp_path_factory):
    """llm.c's two files from `corpus` (tests/references/llmc_tinystories.py): {name: bytes}."""
    data_dir = unpacked(tmp_path_factory.mktemp("unpacked"), corpus)
    out = tmp_path_factory.mktemp("llmc")
    return {p.name: p.read_bytes() for p in write_llmc_tinystories(data_dir, gpt2_encoding, out)}


def prepare(archive, out, *args, env=None):
    result = run_python(SCRIPT, "--archive", archive, "--out-dir", out, *args, env=env)
    assert result.returncode == 0, result.stderr
    return result


def outputs(folder):
    """The ids files (the val bytes sidecar, which the references do not write, left out)."""
    files = sorted(Path(folder).iterdir())
    return {p.name: p.read_bytes() for p in files if p.suffix == ".bin" and "_bytes" not in p.name}


# ---------------------------------------------------------------------------------------------
# llm.c's bytes, nanoGPT's streams, at any --num-proc


ORDERS = {
    "sorted": None,
    "shuffled": ["data03.json", "data00.json", "data04.json", "data01.json", "data02.json"],
    "reversed": ["data04.json", "data03.json", "data02.json", "data01.json", "data00.json"],
}


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("num_proc", [1, 2])
def test_llmc_format_is_llm_cs_bytes(order, num_proc, corpus, oracle, tmp_path):
    """Whatever the members' order in the archive: llm.c sorts the names, so do the files."""
    archive = write_archive(tmp_path / "a.tar.gz", corpus, ORDERS[order], top=order == "sorted")
    result = prepare(archive, tmp_path / "out", "--format", "llmc", "--num-proc", num_proc)
    assert outputs(tmp_path / "out") == oracle
    assert "(NOT pinned: prepared anyway)" in result.stdout.splitlines()[0]
    assert "val: 1 file(s), 60 stories" in result.stdout
    assert "train: 4 file(s), 240 stories" in result.stdout
    assert "tokens per story" in result.stdout and "characters per token" in result.stdout
    assert result.stderr == ""
    check = run_python(COMMON, "verify", tmp_path / "out")
    assert check.returncode == 0, check.stderr
    meta = json.loads((tmp_path / "out" / "meta.json").read_text(encoding="utf-8"))
    assert [s["file"] for s in meta["shards"]] == ["TinyStories_val.bin", "TinyStories_train.bin"]
    assert meta["source"]["path"] == str(archive) and meta["source"]["url"] is None
    assert meta["split"]["stories"] == {"val": 60, "train": 240}


def test_bin_format_is_the_same_streams_without_the_header(corpus, oracle, tmp_path):
    archive = write_archive(tmp_path / "a.tar.gz", corpus, ORDERS["shuffled"])
    result = prepare(archive, tmp_path / "out", "--num-proc", "2")
    extras = "val.docs.npy, train.docs.npy, val_bytes.bin, token_bytes.npy, meta.json"
    assert f"{extras} to" in result.stdout
    written = outputs(tmp_path / "out")
    assert written == {
        "train.bin": oracle["TinyStories_train.bin"][1024:],
        "val.bin": oracle["TinyStories_val.bin"][1024:],
    }
    shown = run_python(COMMON, "show", tmp_path / "out", "--split", "val")
    assert shown.returncode == 0, shown.stderr
    assert "x = data[0:8] = [50256," in shown.stdout  # every story starts with <|endoftext|>
    assert not (tmp_path / "out" / "meta.pkl").exists()  # GPT-2: nanoGPT keeps its defaults


def test_spawned_workers_write_the_same_bytes(corpus, oracle, tmp_path):
    """As on macOS and Windows: tests/stand_ins/windows_like makes every pool start its workers by
    spawn."""
    archive = write_archive(tmp_path / "a.tar.gz", corpus, ORDERS["reversed"])
    paths = [str(WINDOWS_LIKE), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {"PYTHONPATH": os.pathsep.join(paths)}
    prepare(archive, tmp_path / "out", "--format", "llmc", "--num-proc", "2", env=env)
    assert outputs(tmp_path / "out") == oracle


def test_a_rerun_in_another_format_replaces_the_set(corpus, oracle, tmp_path):
    archive = write_archive(tmp_path / "a.tar.gz", corpus)
    prepare(archive, tmp_path / "out")
    prepare(archive, tmp_path / "out", "--format", "llmc")
    assert outputs(tmp_path / "out") == oracle  # train.bin and val.bin are gone
    assert run_python(COMMON, "verify", tmp_path / "out").returncode == 0
    shown = run_python(COMMON, "show", tmp_path / "out")  # the first train file's block
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("train: ")


# ---------------------------------------------------------------------------------------------
# a tokenizer of its own: --vocab-size, --tokenizer


def test_vocab_size_trains_a_bpe_on_the_train_stories(corpus, tmp_path):
    archive = write_archive(tmp_path / "a.tar.gz", corpus, ORDERS["shuffled"])
    result = prepare(archive, tmp_path / "out", "--vocab-size", "512", "--num-proc", "2")
    out = tmp_path / "out"
    assert "tokenizer: tinystories-512 (512 tokens)" in result.stdout
    assert result.stdout.count("  gpt2: ") == 2  # compared on train and val
    assert sorted(p.name for p in out.iterdir()) == [
        "meta.json",
        "meta.pkl",
        "tinystories-512.json",
        "token_bytes.npy",
        "train.bin",
        "train.docs.npy",
        "val.bin",
        "val.docs.npy",
        "val_bytes.bin",
    ]
    check = run_python(COMMON, "verify", out)
    assert check.returncode == 0, check.stderr
    assert run_python(COMMON, "show", out).returncode == 0
    assert pickle.loads((out / "meta.pkl").read_bytes())["vocab_size"] == 512  # our own file
    meta = json.loads((out / "meta.json").read_text(encoding="utf-8"))
    assert meta["tokenizer"]["path"] == "tinystories-512.json"  # relative: the folder can move
    tokenizer = Tokenizer.load(out / "tinystories-512.json")
    assert tokenizer.vocab_size == 512 and tokenizer.special_tokens == {EOT: 511}
    train_files = [json_stories(n, corpus[n]) for n in sorted(corpus) if n != "data00.json"]
    assert tokenizer.merges == train_story_bpe(train_files, 512, EOT).merges  # train only
    for split, names in (
        ("val", ["data00.json"]),
        ("train", [f"data0{i}.json" for i in range(1, 5)]),
    ):
        ids = np.fromfile(out / f"{split}.bin", dtype=np.uint16)
        assert ids[0] == 511
        parts = np.split(ids, np.flatnonzero(ids == 511))[1:]  # each story: 511 first
        assert [tokenizer.decode(part[1:].tolist()) for part in parts] == shuffled_stories(
            corpus, names
        )


def shuffled_stories(files, names):
    """The stories of `names` as llm.c orders them: each file shuffled by its index in its split."""
    stories = []
    for index, name in enumerate(names):
        items = json.loads(files[name])
        random.Random(1337 + index).shuffle(items)
        stories += [item["story"].strip() for item in items]
    return stories


def test_a_moved_folder_still_verifies(corpus, tmp_path):
    archive = write_archive(tmp_path / "a.tar.gz", corpus)
    prepare(archive, tmp_path / "out", "--vocab-size", "300")
    shutil.move(tmp_path / "out", tmp_path / "moved")
    check = run_python(COMMON, "verify", tmp_path / "moved")
    assert check.returncode == 0, check.stderr


def test_tokenizer_takes_one_trained_before(corpus, trained, tmp_path):
    trained.save(tmp_path / "tok.json")
    archive = write_archive(tmp_path / "a.tar.gz", corpus)
    result = prepare(archive, tmp_path / "out", "--tokenizer", tmp_path / "tok.json")
    assert "tokenizer: tok (1,000 tokens)" in result.stdout
    assert run_python(COMMON, "verify", tmp_path / "out").returncode == 0
    ids = np.fromfile(tmp_path / "out" / "val.bin", dtype=np.uint16)
    expected = [
        trained.special_tokens[EOT],
        *trained.encode(shuffled_stories(corpus, ["data00.json"])[0]),
    ]
    assert ids[: len(expected)].tolist() == expected


def test_a_rerun_given_the_tokenizer_the_folder_trained_keeps_it(corpus, tmp_path):
    """--tokenizer naming the file an earlier --vocab-size run trained into the folder: the new
    set holds it as its own (it was removed as the old set's, leaving a folder verify refused)."""
    archive = write_archive(tmp_path / "a.tar.gz", corpus)
    out = tmp_path / "out"
    prepare(archive, out, "--vocab-size", "300")
    trained = (out / "tinystories-300.json").read_bytes()
    result = prepare(archive, out, "--tokenizer", out / "tinystories-300.json")
    assert "tinystories-300.json, meta.json to" in result.stdout
    assert (out / "tinystories-300.json").read_bytes() == trained
    assert run_python(COMMON, "verify", out).returncode == 0


def test_a_tokenizer_that_would_lose_characters_is_refused(corpus, tmp_path):
    """A tokenizer whose own pattern leaves the spaces out: refused, naming the story."""
    tokenizer_file(tmp_path / "words.json", r"\w+")
    archive = write_archive(tmp_path / "a.tar.gz", corpus)
    result = run_python(
        SCRIPT,
        "--archive",
        archive,
        "--tokenizer",
        tmp_path / "words.json",
        "--out-dir",
        tmp_path / "out",
    )
    assert_clean_failure(result, "data00.json, shuffled story 0", "in no pretoken")
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------
# the stories themselves


def test_whitespace_non_ascii_and_a_file_of_one_story(gpt2_encoding, tmp_path):
    files = {
        "data00.json": story_items(
            [
                "   \n\t  ",
                "Ünïcödé: 日本語の話 🐉 — «ok»",
                "\n plain \n",
            ]
        ),
        "data01.json": story_items(["only one story here"]),
        "data02.json": story_items(["", "a\u00a0b", "\u2028line separators\u2029"]),
        "data03.json": story_items([]),  # a file without stories adds none
    }
    order = ["data02.json", "data00.json", "data03.json", "data01.json"]
    archive = write_archive(tmp_path / "a.tar.gz", files, order)
    prepare(archive, tmp_path / "out", "--format", "llmc")
    unpacked(tmp_path / "unpacked", files)
    expected = write_llmc_tinystories(tmp_path / "unpacked", gpt2_encoding, tmp_path / "llmc")
    assert outputs(tmp_path / "out") == {p.name: p.read_bytes() for p in expected}
    tokens = split_tokens(tmp_path / "unpacked", gpt2_encoding)
    assert tokens["val"].count(50256) == 3  # the whitespace story is <|endoftext|> alone
    assert tokens["train"][:5] == [50256, *gpt2_encoding.encode_ordinary("only one story here")]


@pytest.mark.parametrize("args", [["--format", "llmc"], ["--vocab-size", "260"]])
def test_a_lone_surrogate_is_encoded_as_tiktoken_repairs_it(args, gpt2_encoding, tmp_path):
    """JSON's "\\ud83d" alone is a lone surrogate in Python: tiktoken's encode_ordinary, and so
    llm.c, encode it as U+FFFD; so do we, and the trainer learns it as that."""
    files = {
        n: b'[{"story": "a \\ud83d b"}, {"story": "ok"}]' for n in ("data00.json", "data01.json")
    }
    archive = write_archive(tmp_path / "a.tar.gz", files)
    prepare(archive, tmp_path / "out", *args)
    assert run_python(COMMON, "verify", tmp_path / "out").returncode == 0
    if args[0] == "--format":
        unpacked(tmp_path / "unpacked", files)
        expected = write_llmc_tinystories(tmp_path / "unpacked", gpt2_encoding, tmp_path / "llmc")
        assert outputs(tmp_path / "out") == {p.name: p.read_bytes() for p in expected}


def test_a_literal_end_of_text_in_a_story_is_plain_text(gpt2_encoding, tmp_path):
    files = {name: story_items([f"before {EOT} after"]) for name in ("data00.json", "data01.json")}
    archive = write_archive(tmp_path / "a.tar.gz", files)
    prepare(archive, tmp_path / "out")
    ids = np.fromfile(tmp_path / "out" / "val.bin", dtype=np.uint16).tolist()
    assert ids == [50256, *gpt2_encoding.encode_ordinary(f"before {EOT} after")]


# ---------------------------------------------------------------------------------------------
# hostile archives: one `error:` line, nothing written anywhere


GOOD = story_items(["Once upon a time there was a cat."])
LONG_NAME = "d" * 120 + ".json"  # a GNU long name header (././@LongLink) comes before its member


def entries_archive(*entries, cut=None):
    """A .tar.gz of data00.json, data01.json and then `entries`; cut: its bytes kept (a slice)."""
    data = gzip.compress(
        tar_bytes([member("data00.json", GOOD), member("data01.json", GOOD), *entries]), mtime=0
    )
    return data[cut] if cut else data


def cut_inside_a_member():
    rng = random.Random(0)
    noise = "".join(rng.choice("abcdefgh ") for _ in range(50_000))  # compresses to about 20 KB
    data = gzip.compress(
        tar_bytes([member("data00.json", GOOD), member("data01.json", story_items([noise]))]),
        mtime=0,
    )
    return data[: len(data) // 2]


def cut_between_members():
    """The gzip stream stops right after data00.json's last block: its trailer is missing, which
    tarfile's own "r|gz" would not notice (it reads the end as the end of the archive)."""
    whole = tar_bytes([member("data00.json", GOOD), member("data01.json", GOOD)])
    head = whole[: 512 + -(-len(GOOD) // 512) * 512]
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip header, no trailer yet
    return compressor.compress(head) + compressor.flush(zlib.Z_SYNC_FLUSH)


def after_two_members(*blocks):
    """A whole gzip stream of data00.json, data01.json and then `blocks` (bytes), as they are:
    no end of archive is added after them."""
    head = tar_bytes([member("data00.json", GOOD), member("data01.json", GOOD)])
    return gzip.compress(head[: 2 * (512 + -(-len(GOOD) // 512) * 512)] + b"".join(blocks), mtime=0)


def damaged_last_header():
    """data02.json's header with a wrong checksum, the tar's last bytes: tarfile's "r|gz" would
    take it for the end of the archive and read two members without a word."""
    header = bytearray(member("data02.json", GOOD)[0].tobuf(tarfile.GNU_FORMAT))
    header[148:156] = b"000000\0 "  # an octal checksum, but not this header's
    return after_two_members(bytes(header))


def short_final_block():
    """The tar's last block is 100 bytes of data02.json's header, in a gzip stream that is itself
    whole (its trailer checks): tarfile's "r|gz" would take the short block for the end."""
    return after_two_members(member("data02.json", GOOD)[0].tobuf(tarfile.GNU_FORMAT)[:100])


def oversized_extension(kind):
    """A GNU long name or pax header of 65,537 bytes, one over the cap, then data02.json: it names
    data02.json, padded with NULs, or holds one long pax comment, so that only its size is wrong
    (tarfile reads it whole and takes the archive)."""
    if kind == tarfile.GNUTYPE_LONGNAME:
        name, payload = "././@LongLink", b"data02.json".ljust(65_537, b"\0")
    else:
        name, payload = "././@PaxHeader", b"65537 comment=" + b"c" * (65_537 - 15) + b"\n"
    assert len(payload) == 65_537
    info = tarfile.TarInfo(name)
    info.type, info.size = kind, len(payload)
    extension = info.tobuf(tarfile.GNU_FORMAT) + payload + bytes(-len(payload) % 512)
    info, data = member("data02.json", GOOD)
    padded = data + bytes(-len(data) % 512)
    return after_two_members(extension, info.tobuf(tarfile.GNU_FORMAT), padded, bytes(1024))


HOSTILE = [
    pytest.param(entries_archive(member("../x.json", GOOD)), ["'../x.json'", "'..'"], id="dot-dot"),
    pytest.param(
        entries_archive(member("/abs.json", GOOD)), ["'/abs.json'", "absolute"], id="absolute"
    ),
    pytest.param(
        entries_archive(member("data02.json", kind=tarfile.SYMTYPE, linkname="/etc/passwd")),
        ["'data02.json'", "symbolic link", "/etc/passwd"],
        id="symlink",
    ),
    pytest.param(
        entries_archive(member("data02.json", kind=tarfile.LNKTYPE, linkname="data00.json")),
        ["'data02.json'", "hard link"],
        id="hardlink",
    ),
    pytest.param(
        entries_archive(member("data02.json", kind=tarfile.FIFOTYPE)), ["FIFO"], id="fifo"
    ),
    pytest.param(
        entries_archive(member("data02.json", kind=tarfile.CHRTYPE)), ["device"], id="device"
    ),
    pytest.param(
        entries_archive(member("sub", kind=tarfile.DIRTYPE)), ["'sub'", "folder"], id="folder"
    ),
    pytest.param(entries_archive(member("sub/data02.json", GOOD)), ["in a folder"], id="nested"),
    pytest.param(
        entries_archive(member(LONG_NAME, kind=tarfile.SYMTYPE, linkname="/etc/passwd")),
        [repr(LONG_NAME), "symbolic link"],
        id="long-named-symlink-by-its-own-name",
    ),
    pytest.param(
        entries_archive(member("data02.json", GOOD, kind=tarfile.GNUTYPE_SPARSE)),
        ["'data02.json'", "sparse file"],
        id="sparse",
    ),
    pytest.param(
        entries_archive(member("notes.txt", b"hi")),
        ["'notes.txt'", "data[0-9][0-9].json"],
        id="other-name",
    ),
    pytest.param(
        entries_archive(member("data01.json", GOOD)),
        ["data01.json is in the archive twice"],
        id="twice",
    ),
    pytest.param(
        entries_archive(member("data02.json", b"[]", size=2**31)),
        ["'data02.json'", "2,147,483,648 bytes, more than"],
        id="too-big",
    ),
    pytest.param(
        cut_inside_a_member(), ["cut short or damaged in data01.json"], id="truncated-in-member"
    ),
    pytest.param(cut_between_members(), ["cut short or damaged"], id="truncated-between-members"),
    pytest.param(
        entries_archive(cut=slice(0, -4)), ["cut short or damaged"], id="truncated-trailer"
    ),
    pytest.param(
        damaged_last_header(),
        ["'data02.json'", "after data01.json", "its header is damaged", "the archive is damaged"],
        id="damaged-last-header",
    ),
    pytest.param(
        short_final_block(),
        ["'data02.json'", "after data01.json", "its header is cut short"],
        id="short-final-block",
    ),
    pytest.param(
        oversized_extension(tarfile.GNUTYPE_LONGNAME),
        ["'././@LongLink'", "an extension header of 65,537 bytes, more than the 65,536"],
        id="oversized-long-name",
    ),
    pytest.param(
        oversized_extension(tarfile.XHDTYPE),
        ["'././@PaxHeader'", "an extension header of 65,537 bytes, more than the 65,536"],
        id="oversized-pax-header",
    ),
    pytest.param(
        b"this is no gzip file", ["cut short or damaged", "Not a gzipped file"], id="not-gzip"
    ),
    pytest.param(
        entries_archive(member("data02.json", b'{"story": "a"}')),
        ["data02.json holds an object, not a JSON list"],
        id="json-not-a-list",
    ),
    pytest.param(
        entries_archive(member("data02.json", b'[{"story": "a"}, {"text": "b"}]')),
        ['data02.json: item 1 is not an object with a string "story"'],
        id="item-without-story",
    ),
    pytest.param(
        entries_archive(member("data02.json", b'[{"story": 7}]')),
        ['item 0 is not an object with a string "story"'],
        id="story-not-a-string",
    ),
    pytest.param(
        entries_archive(member("data02.json", b"[{")),
        ["data02.json is not valid JSON"],
        id="bad-json",
    ),
    pytest.param(
        entries_archive(member("data02.json", b'[{"story": "a", "n": ' + b"9" * 5_000 + b"}]")),
        ["data02.json is not valid JSON", "digits"],
        id="an-integer-of-5000-digits",
    ),
    pytest.param(
        entries_archive(member("data02.json", b'["\xff"]')),
        ["data02.json is not UTF-8"],
        id="not-utf8",
    ),
    pytest.param(
        entries_archive(member("data02.json", b"[" * 100_000 + b"]" * 100_000)),
        ["data02.json", "nested too deeply"],
        id="deep-json",
    ),
    pytest.param(
        entries_archive(member("data03.json", GOOD)),
        ["holds data00.json, data01.json, data03.json", "none missing"],
        id="a-member-missing",
    ),
    pytest.param(
        gzip.compress(tar_bytes([member("data00.json", GOOD)]), mtime=0),
        ["holds data00.json;", "none missing"],
        id="no-train-member",
    ),
]


@pytest.mark.parametrize("archive, fragments", HOSTILE)
def test_a_hostile_archive_is_one_error_line(archive, fragments, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "archive.tar.gz").write_bytes(archive)
    (tmp_path / "run").mkdir()
    before = files_in(tmp_path)
    result = run_python(
        SCRIPT,
        "--archive",
        tmp_path / "in" / "archive.tar.gz",
        "--out-dir",
        "out",
        cwd=tmp_path / "run",
    )
    assert_clean_failure(result, *fragments)
    assert files_in(tmp_path) == before  # no output folder, no x.json anywhere under tmp_path
    assert not Path("/abs.json").exists()


def test_too_little_text_for_the_vocabulary_is_refused(tmp_path):
    archive = write_archive(tmp_path / "a.tar.gz", {"data00.json": GOOD, "data01.json": GOOD})
    result = run_python(
        SCRIPT, "--archive", archive, "--vocab-size", "5000", "--out-dir", tmp_path / "o"
    )
    assert_clean_failure(result, "too few pairs for a vocabulary of 5,000 tokens")
    assert not (tmp_path / "o").exists()


def test_an_empty_split_is_refused(tmp_path):
    files = {"data00.json": story_items([]), "data01.json": GOOD}
    archive = write_archive(tmp_path / "a.tar.gz", files)
    result = run_python(SCRIPT, "--archive", archive, "--out-dir", tmp_path / "out")
    assert_clean_failure(result, "val holds no story")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "args, fragments, code",
    [
        pytest.param(
            ["--vocab-size", "256"], ["--vocab-size", "need 257"], 2, id="vocab-too-small"
        ),
        pytest.param(
            ["--vocab-size", "many"], ["'many' is not a whole number"], 2, id="vocab-not-a-number"
        ),
        pytest.param(
            ["--vocab-size", "300", "--tokenizer", "t.json"], ["not allowed with"], 2, id="both"
        ),
        pytest.param(
            ["--archive", "missing.tar.gz"], ["missing.tar.gz does not exist"], 1, id="no-archive"
        ),
        pytest.param(["--archive", "."], ["is a folder"], 1, id="archive-a-folder"),
        pytest.param(["--format", "npy"], ["invalid choice: 'npy'"], 2, id="format"),
    ],
)
def test_bad_arguments_are_one_line(args, fragments, code, tmp_path):
    result = run_python(SCRIPT, *args, "--out-dir", tmp_path / "out", cwd=tmp_path)
    assert result.returncode == code, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert all(fragment in lines[0] for fragment in fragments), lines[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("in_mirror", [False, True], ids=["missing", "not-the-pinned-bytes"])
def test_the_download_is_checked_against_the_pin(in_mirror, corpus, tmp_path):
    """Without --archive the archive comes through fetch (here from a mirror folder): it must be
    there, and hash to the pinned sha256 (a copy built here cannot)."""
    mirror = tmp_path / "mirror"
    (mirror / "tinystories").mkdir(parents=True)
    if in_mirror:
        write_archive(mirror / "tinystories" / "TinyStories_all_data.tar.gz", corpus)
    result = run_python(
        SCRIPT, "--out-dir", tmp_path / "out", env={"NANOGPT_DATA_MIRROR": str(mirror)}
    )
    if in_mirror:
        assert_clean_failure(result, "not the expected 26cf7605aca15bc4", "nothing was saved")
    else:
        assert_clean_failure(result, "tinystories/TinyStories_all_data.tar.gz does not exist")
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------
# the pieces: reading members, the spool, the pool


def test_members_come_in_archive_order_with_their_bytes(corpus, tmp_path):
    archive = write_archive(tmp_path / "a.tar.gz", corpus, ORDERS["shuffled"], top=True)
    got = list(json_members(archive, "data[0-9][0-9].json", progress=False))
    assert [name for name, _ in got] == ORDERS["shuffled"]
    assert all(data == corpus[name] for name, data in got)
    assert (
        json_stories("data00.json", corpus["data00.json"])[1]
        == json.loads(corpus["data00.json"])[1]["story"]
    )


def test_a_member_past_the_bound_is_refused_before_it_is_read(tmp_path):
    archive = write_archive(tmp_path / "a.tar.gz", {"data00.json": b"[]" * 600})
    with pytest.raises(ArchiveError, match="1,200 bytes, more than the 1,000"):
        list(json_members(archive, "data[0-9][0-9].json", max_bytes=1000, progress=False))


@pytest.mark.parametrize("order", [[0, 1, 2, 3], [2, 0, 3, 1]], ids=["in-order", "out-of-order"])
def test_a_spool_writes_its_arrays_in_key_order(order, tmp_path):
    arrays = [np.arange(k * 10, k * 10 + k + 1, dtype=np.uint16) for k in range(4)]
    spool = Spool(tmp_path / "out.bin", np.uint16, header_bytes=4)
    for k in order:
        spool.add(f"key{k}", arrays[k])
    assert spool.finish(lambda total: total.to_bytes(4, "little")) == tmp_path / "out.bin"
    data = (tmp_path / "out.bin").read_bytes()
    assert int.from_bytes(data[:4], "little") == 10
    assert np.frombuffer(data[4:], dtype=np.uint16).tolist() == np.concatenate(arrays).tolist()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]  # the spool is gone


def square(x, offset):
    return x * x + offset


@pytest.mark.parametrize("processes", [1, 2, 3])
def test_ordered_map_reads_only_a_few_items_ahead(processes):
    read = []

    def items():
        for i in range(20):
            read.append(i)
            yield (i,)

    results = []
    for result in ordered_map(square, items(), processes, shared=(1,)):
        results.append(result)
        assert len(read) <= len(results) + processes  # never the whole stream at once
    assert results == [i * i + 1 for i in range(20)]


def slow_square(x, offset):
    time.sleep(0.05)  # the consumer stops while the workers are busy
    return x * x + offset


def test_ordered_map_stopped_early_lets_the_items_in_flight_finish_and_reads_no_more():
    """A consumer that stops (a budget met) closes the stream: nothing more is read, the items
    in flight end, and the workers with them (not killed mid-result: Pool.terminate could wait
    forever for the rest of one)."""
    import multiprocessing

    read = []

    def items():
        for i in range(100):
            read.append(i)
            yield (i,)

    for _ in range(5):
        read.clear()
        results = ordered_map(slow_square, items(), 2, shared=(1,))
        assert [next(results) for _ in range(3)] == [1, 2, 5]
        results.close()
        assert len(read) <= 3 + 2 + 1
        assert not multiprocessing.active_children()


def divided_after(seconds, x, y, done):
    time.sleep(seconds)
    result = x // y
    Path(done, f"{x}").touch()
    return result


def test_ordered_map_raises_an_items_error_once_the_items_in_flight_end(tmp_path):
    """An item's error is raised after the other items in flight have finished, not with their
    workers killed: one killed while it sends its result would hold the results' lock for good,
    and the pool would wait for it forever."""
    items = [(0.0, 1, 0, tmp_path), (0.3, 2, 1, tmp_path), (0.3, 3, 1, tmp_path)]
    with pytest.raises(ZeroDivisionError):
        list(ordered_map(divided_after, items, 2))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["2", "3"]


# ---------------------------------------------------------------------------------------------
# Ctrl-C while the workers tokenize


@pytest.fixture(scope="module")
def big_archive(paragraphs, tmp_path_factory):
    """30 members of all 7,222 Tiny Shakespeare paragraphs each (about 9M tokens): seconds of
    work."""
    stories = story_items(paragraphs)
    files = {f"data{i:02d}.json": stories for i in range(30)}
    path = tmp_path_factory.mktemp("big") / "big.tar.gz"
    path.write_bytes(gzip.compress(tar_bytes([member(n, d) for n, d in files.items()]), 1, mtime=0))
    return path


def session_left(session):
    """The pids of the live processes of `session`, read from /proc."""
    left = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session and fields[0] != "Z":  # field 6 of stat: the session
            left.append(int(entry))
    return left


def test_ctrl_c_ends_the_run_and_its_workers(big_archive, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine", encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--archive", str(big_archive), "--num-proc", "2"]
        + ["--out-dir", str(tmp_path / "out")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal
    )
    while not process.stdout.readline().startswith("tokenizer:"):  # the workers start next
        assert process.poll() is None, process.stderr.read()
    deadline = time.monotonic() + 30
    while len(session_left(process.pid)) < 3:  # the run and its two workers, at work
        assert process.poll() is None and time.monotonic() < deadline, "no workers seen"
        time.sleep(0.01)
    time.sleep(0.1)
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C reaches the whole group, workers too
    stderr = process.communicate(timeout=60)[1]
    assert process.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1].endswith("(nothing was replaced)"), stderr
    deadline = time.monotonic() + 5
    while session_left(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert session_left(process.pid) == []
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["notes.txt"]
