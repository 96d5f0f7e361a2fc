"""documents/corpus.py: files read as pretoken counts in pieces and blocks, equal to counting each
document whole; the file kinds, --max-chars, and one clear error for each bad input."""

import json
from collections import Counter

import pyarrow
import pyarrow.parquet
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpe import EOT
from bpe.checks import check_pattern
from bpe.train import count_pretokens, train_bpe_from_iterator
from documents import corpus
from documents.corpus import train_bpe_from_files
from safety.errors import PrepareError
from safety.text import universal_newlines

# Fragments that make cutting hard: newlines next to (Unicode) spaces, special tokens and their
# prefixes, multi-byte characters, long runs.
FRAGMENTS = ["a", "b", " ", "\n", "\n", "  ", "é", "中", "\u00a0", "\u2028", "\t", ".", "\r\n"]
FRAGMENTS += [EOT, "<|endo", "x" * 40]


def count_documents(documents, pattern="gpt2", special_tokens=(EOT,)):
    """The reference: each document counted whole, summed."""
    counts = Counter()
    for document in documents:
        counts.update(count_pretokens(document, pattern, special_tokens))
    return counts


def count_in_pieces(paths, reading, piece_bytes):
    counts = Counter()
    for piece in corpus.plan_pieces(paths, reading, piece_bytes):
        counts.update(corpus.count_piece(piece, reading))
    return counts


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 64 bytes, so that a few hundred bytes cross many block and piece boundaries."""
    monkeypatch.setattr(corpus, "BLOCK_BYTES", 64)


@pytest.mark.usefixtures("small_blocks")
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.lists(st.sampled_from(FRAGMENTS), max_size=120).map("".join),
    piece_bytes=st.integers(1, 200),
    max_chars=st.integers(0, 700),
    pattern=st.sampled_from(["gpt2", "gpt4", "nanochat", r"\S+|\s+"]),
    special_tokens=st.sampled_from([(), (EOT,)]),
)
def test_text_pieces_and_blocks_count_like_the_whole_text(
    tmp_path, text, piece_bytes, max_chars, pattern, special_tokens
):
    path = tmp_path / "t.txt"
    path.write_bytes(text.encode("utf-8"))
    reading = corpus.Reading(corpus.check_pattern(pattern), special_tokens)
    # the file's text as nanoGPT reads it: "\r\n" is "\n" (the pieces never split the two)
    assert count_in_pieces([path], reading, piece_bytes) == count_pretokens(
        universal_newlines(text), pattern, special_tokens
    )
    # --max-chars: the counts of a prefix that ends where the text may be cut, within the cap
    pieces = corpus.cap_pieces(corpus.plan_pieces([path], reading, piece_bytes), reading, max_chars)
    prefix = path.read_bytes()[: pieces[-1].end if pieces else 0].decode("utf-8")
    prefix = universal_newlines(prefix)
    assert len(prefix) <= max_chars
    counts = Counter()
    for piece in pieces:
        counts.update(corpus.count_piece(piece, reading))
    assert counts == count_pretokens(prefix, pattern, special_tokens)


@pytest.mark.parametrize(
    "text, special_tokens, max_chars, kept",
    [
        pytest.param("aa\nbb\ncc\ndd", (), 10, "aa\nbb\ncc\n", id="lines-to-the-end"),
        pytest.param(
            "aaaa<|endoftext|>bbbb<|endoftext|>cccc",
            (EOT,),
            30,
            "aaaa<|endoftext|>bbbb",
            id="special-tokens-to-the-end",
        ),
    ],
)
def test_the_cap_takes_every_document_that_fits_to_the_files_end(
    tmp_path, text, special_tokens, max_chars, kept
):
    """Near a file's end, where a cut has nothing after it to check, the documents that fit are
    still taken (they were one document, over the cap, left out)."""
    path = tmp_path / "t.txt"
    path.write_text(text, encoding="utf-8")
    reading = corpus.Reading(corpus.check_pattern("gpt2"), special_tokens)
    pieces = corpus.cap_pieces(corpus.plan_pieces([path], reading), reading, max_chars)
    assert path.read_text(encoding="utf-8")[: pieces[-1].end] == kept


def write_rows(folder, name, documents):
    """The documents as a .jsonl, a .json array or a .parquet file (row groups of 7 rows)."""
    path = folder / name
    rows = [{"id": i, "text": d} for i, d in enumerate(documents)]
    if name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    elif name.endswith(".json"):
        path.write_text(json.dumps(rows), encoding="utf-8")
    else:
        table = pyarrow.table({"id": list(range(len(documents))), "text": documents})
        pyarrow.parquet.write_table(table, path, row_group_size=7)
    return path


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("name", ["docs.jsonl", "docs.json", "docs.parquet"])
def test_rows_are_documents_never_merged_across(tmp_path, paragraphs, name):
    documents = paragraphs[:60] + ["", "tail<|endoftext|>end"]
    path = write_rows(tmp_path, name, documents)
    reading = corpus.Reading(corpus.check_pattern("gpt2"), (EOT,))
    assert count_in_pieces([path], reading, 100) == count_documents(documents)
    for max_chars in (0, 1000, 10**9):
        taken, total = [], 0
        for document in documents:
            if total + len(document) > max_chars:
                break
            taken.append(document)
            total += len(document)
        counts = corpus.count_table([path], special_tokens=[EOT], max_chars=max_chars).to_counter()
        assert counts == count_documents(taken)


def test_documents_are_each_file_whole_or_each_row_in_order(tmp_path, paragraphs):
    """nanochat's reading: a .txt file is one document, a row of the others one each."""
    (tmp_path / "a.txt").write_text("one\r\ntext", encoding="utf-8")  # nanoGPT's newlines
    paths = [tmp_path / "a.txt"]
    paths += [write_rows(tmp_path, name, paragraphs[:20]) for name in ("b.jsonl", "c.json")]
    paths.append(write_rows(tmp_path, "d.parquet", paragraphs[:20]))
    assert list(corpus.documents(paths)) == ["one\ntext"] + paragraphs[:20] * 3


def test_globs_kinds_and_workers_together_equal_training_in_memory(
    tmp_path, monkeypatch, paragraphs
):
    """Two workers over a .txt, a glob of .jsonl and a .parquet: the same tokenizer."""
    monkeypatch.setattr(corpus, "PARALLEL_MIN_BYTES", 0)  # the workers fork with this
    monkeypatch.setattr(corpus, "PIECE_BYTES", 50_000)
    text = EOT.join(paragraphs[:2000])
    (tmp_path / "a.txt").write_text(text, encoding="utf-8")
    write_rows(tmp_path, "b1.jsonl", paragraphs[2000:2500])
    write_rows(tmp_path, "b2.jsonl", paragraphs[2500:3000])
    write_rows(tmp_path, "c.parquet", paragraphs[3000:3500])
    inputs = [tmp_path / "a.txt", str(tmp_path / "b*.jsonl"), tmp_path / "c.parquet"]
    got = train_bpe_from_files(inputs, 400, [EOT], num_workers=2)
    expected = train_bpe_from_iterator([text] + paragraphs[2000:3500], 400, [EOT])
    assert got == expected


def bad_parquet(column):
    return lambda path: pyarrow.parquet.write_table(pyarrow.table(column), path)


@pytest.mark.parametrize(
    "files, inputs, fragments",
    [
        pytest.param({}, ["missing.txt"], ["missing.txt", "does not exist"], id="missing"),
        pytest.param({}, ["*.jsonl"], ["*.jsonl", "does not exist"], id="glob-matches-nothing"),
        pytest.param(
            {"bad.txt": b"hello\n\xffworld"},
            ["bad.txt"],
            ["bad.txt", "not valid UTF-8", "byte offset 6"],
            id="not-utf8",
        ),
        pytest.param(
            {"d.jsonl": '{"text": "a"}\n{"body": "b"}\n'},
            ["d.jsonl"],
            ["d.jsonl line 2", "no 'text' field", "--text-column"],
            id="jsonl-missing-field",
        ),
        pytest.param(
            {"d.jsonl": '{"text": "a"}\n{"text": null}\n'},
            ["d.jsonl"],
            ["d.jsonl line 2", "'text' is null"],
            id="jsonl-null-text",
        ),
        pytest.param(
            {"d.jsonl": '{"text": "a"}\n{"text": "b"\n'},
            ["d.jsonl"],
            ["d.jsonl line 2", "not valid JSON"],
            id="jsonl-broken-line",
        ),
        pytest.param(
            {"d.jsonl": '{"text": "a"}\n{"id": 1, "text": "b", "id": 2}\n'},
            ["d.jsonl"],
            ["d.jsonl line 2", "the key 'id' appears twice"],
            id="jsonl-key-twice",
        ),
        pytest.param(
            {"d.jsonl": '{"text": "a"}\n[{"text": "b"}]\n'},
            ["d.jsonl"],
            ["d.jsonl line 2", "a JSON array, not an object"],
            id="jsonl-array-line",
        ),
        pytest.param(
            {"d.jsonl": '{"text": "a"}\n{"text": "b\\ud800"}\n'},
            ["d.jsonl"],
            ["d.jsonl line 2", "lone surrogate (\\ud800 at character 1)"],
            id="jsonl-lone-surrogate",
        ),
        pytest.param(
            {"d.json": '[{"text": "a"}, {"text": 5}]'},
            ["d.json"],
            ["d.json row 1", "'text' is int"],
            id="json-array-number",
        ),
        pytest.param(
            {"d.parquet": bad_parquet({"body": ["a"]})},
            ["d.parquet"],
            ["d.parquet", "has no 'text' column", "body", "--text-column"],
            id="parquet-missing-column",
        ),
        pytest.param(
            {"d.parquet": bad_parquet({"text": ["a", None, "c"]})},
            ["d.parquet"],
            ["d.parquet row 1", "'text' is null"],
            id="parquet-null-text",
        ),
        pytest.param(
            {"d.parquet": b"PAR1 not really"},
            ["d.parquet"],
            ["d.parquet: cannot be read as parquet"],
            id="parquet-broken",
        ),
    ],
)
def test_bad_input_is_one_error_naming_the_file(tmp_path, monkeypatch, files, inputs, fragments):
    from conftest import write_files

    write_files(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PrepareError) as error:
        corpus.count_table(inputs, special_tokens=[EOT])
    for fragment in fragments:
        assert fragment in str(error.value)


# ---------------------------------------------------------------- texts in memory, in pieces


@settings(max_examples=200, deadline=None)
@given(
    st.text(st.sampled_from("ab .!\n\r\t\u00a0é"), max_size=200),
    st.integers(1, 30),
    st.sampled_from(["gpt2", "gpt4", "nanochat", r"\S+|\s+"]),
    st.sampled_from([(), ("<|e|>",)]),
)
def test_pieces_pretokenize_like_the_whole_text(body, target, pattern, special_tokens):
    text = body.replace("!", "<|e|>") if special_tokens else body
    bounds = corpus.piece_bounds(text, target, pattern, special_tokens)
    assert bounds[0] == 0 and bounds[-1] == len(text) and bounds == sorted(bounds)
    counts = Counter()
    for start, end in zip(bounds, bounds[1:]):
        counts.update(count_pretokens(text[start:end], pattern, special_tokens))
    assert counts == count_pretokens(text, pattern, special_tokens)


def test_parallel_pretokenization_equals_one_process(shakespeare, monkeypatch):
    monkeypatch.setattr(corpus, "PARALLEL_MIN_CHARS", 0)  # use workers even for this
    text = shakespeare[:300_000] + EOT + shakespeare[300_000:400_000]
    expected = count_pretokens(text, "gpt2", [EOT])
    assert corpus.count_texts([text], "gpt2", [EOT], num_workers=2) == expected
    assert corpus.count_texts([text], "gpt4", [EOT], num_workers=3) == count_pretokens(
        text, "gpt4", [EOT]
    )


@pytest.mark.parametrize(
    "num_workers",
    [pytest.param(0, id="zero"), pytest.param(10**16, id="10**16"), pytest.param(2.5, id="float")],
)
def test_a_number_of_workers_beyond_bounds_is_refused_before_any_work(tmp_path, num_workers):
    """10**16 workers would start a process per line of the text."""
    with pytest.raises(ValueError, match="num_workers must be a whole number from 1 to 1,024"):
        train_bpe_from_files([tmp_path / "missing.txt"], 300, num_workers=num_workers)
    with pytest.raises(ValueError, match="num_workers must be a whole number from 1 to 1,024"):
        corpus.count_texts(["abc " * 200_000], num_workers=num_workers)


def test_a_file_named_twice_in_other_spellings_is_read_once(tmp_path, monkeypatch):
    """a.txt, ./a.txt, its absolute path and a link to it are one file: listed once, as first
    spelled, so its documents are not read again (a val copied whole into train)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("one", encoding="utf-8")
    (tmp_path / "b.txt").write_text("two", encoding="utf-8")
    (tmp_path / "link.txt").symlink_to(tmp_path / "a.txt")
    names = ["a.txt", "./a.txt", str(tmp_path / "a.txt"), "link.txt", "*.txt"]
    assert corpus.expand_inputs(names) == ["a.txt", "b.txt"]


# ---------------------------------------------------------------- where bytes are cut


def _old_last_cut(cutter, data, limit):
    """Cutter.last_cut before it and first_cut became Cutter.cut: the reference."""
    best = -1
    if cutter.on_lines:
        newline = data.rfind(b"\n", 0, limit - 1)
        while newline > 0:
            if cutter._line_cut(data, newline + 1):
                best = newline + 1
                break
            newline = data.rfind(b"\n", 0, newline)
    for token in cutter.specials:
        start = data.rfind(token, 0, limit)
        while start > best:
            if not corpus.straddles_special(data, start, cutter.specials):
                best = start
                break
            start = data.rfind(token, 0, start)
    return best if best > 0 else -1


def _old_first_cut(cutter, data, position, whole=False):
    limit = len(data) - (1 if whole else cutter.margin)
    best = -1
    if cutter.on_lines:
        newline = data.find(b"\n", max(position - 1, 1), limit)
        while newline != -1:
            if cutter._line_cut(data, newline + 1):
                best = newline + 1
                break
            newline = data.find(b"\n", newline + 1, limit)
    for token in cutter.specials:
        start = data.find(token, position, limit if best == -1 else best)
        while start != -1:
            if not corpus.straddles_special(data, start, cutter.specials):
                best = start
                break
            start = data.find(token, start + 1, limit if best == -1 else best)
    return best


@settings(max_examples=3000, deadline=None)
@given(
    st.text(st.sampled_from("ab \n\t\u00a0é€!?<>"), max_size=60),
    st.sampled_from(["gpt2", r"\S+|\s+"]),
    st.sampled_from([(), ("!",), ("<!>",), ("!!",), ("?!", "!?"), ("!\n",)]),
    st.integers(-5, 70),
)
def test_the_cuts_fall_where_last_cut_and_first_cut_put_them(body, pattern, specials, place):
    data = body.encode()
    cutter = corpus.Cutter(check_pattern(pattern), specials)
    limit = min(place, len(data) - cutter.margin)  # the bytes after the limit at hand
    assert cutter.cut(data, 1, limit, last=True) == _old_last_cut(cutter, data, limit)
    position = max(place, 0)
    for whole in (False, True):
        limit = len(data) - (1 if whole else cutter.margin)
        old = _old_first_cut(cutter, data, position, whole)
        assert cutter.cut(data, position, limit) == old
