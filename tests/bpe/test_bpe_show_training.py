"""train_tokenizer.py --trace and --sweep: the lecture's rounds on "the cat in the hat", and
compression by vocabulary size from one training (a smaller vocabulary is a prefix)."""

import sys

import pytest
from conftest import REPO, run_python

import train_tokenizer
from bpe import Tokenizer
from bpe.patterns import GPT2_PATTERN
from bpe.show_training import plot_sweep, prefix_encodings, trace_lines
from bpe.simple import count_pretokens
from bpe.train import train_bpe_from_iterator
from safety import PrepareError
from train_tokenizer import compression

SCRIPT = REPO / "train_tokenizer.py"


def test_trace_the_cat_in_the_hat(tmp_path):
    """The lecture's three rounds: t h (2), then th e (2) = "the", then the next pair."""
    (tmp_path / "cat.txt").write_text("the cat in the hat", encoding="utf-8")
    result = run_python(
        SCRIPT,
        "--input",
        "cat.txt",
        "--vocab-size",
        300,
        "--out",
        "t.json",
        "--trace",
        3,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # The early stop stays visible: the corpus has only 10 pairs to merge.
    assert lines[0] == (
        "note: asked for vocab_size 300, got 266: no pair left to merge after 10 merge(s); "
        "the text is too small"
    )
    assert lines[2:9] == [
        "corpus: t h e / Ġ c a t / Ġ i n / Ġ t h e / Ġ h a t",
        (
            "merge 1: t + h -> th (id 256), count 2; also 2: h + e, a + t "
            "(ties go to the greatest pair)"
        ),
        "  th e / Ġ c a t / Ġ i n / Ġ th e / Ġ h a t",
        "merge 2: th + e -> the (id 257), count 2; also 2: a + t (ties go to the greatest pair)",
        "  the / Ġ c a t / Ġ i n / Ġ the / Ġ h a t",
        "merge 3: a + t -> at (id 258), count 2",
        "  the / Ġ c at / Ġ i n / Ġ the / Ġ h at",
    ]


@pytest.mark.parametrize(
    "files, options, corpus",
    [
        pytest.param(
            {"a.txt": "the cat in the hat", "b.txt": "zzzz zzzz zzzz"},
            ["--max-chars", "18"],
            "corpus: t h e / Ġ c a t / Ġ i n / Ġ t h e / Ġ h a t",
            id="file-left-out",
        ),
        pytest.param(
            {"a.txt": "the cat in the hat", "b.txt": "the cat"},
            ["--max-chars", "18"],
            "corpus: t h e / Ġ c a t / Ġ i n / Ġ t h e / Ġ h a t",
            id="file-of-known-pretokens-left-out",
        ),
        pytest.param(
            {"a.txt": "the cat<|endoftext|>the hat"},
            ["--max-chars", "10", "--special-tokens", "<|endoftext|>"],
            "corpus: t h e / Ġ c a t",
            id="document-left-out",
        ),
    ],
)
def test_trace_shows_only_the_text_within_max_chars(tmp_path, capsys, files, options, corpus):
    """The traced corpus is the documents training counted, after the --max-chars cut."""
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    inputs = [str(tmp_path / name) for name in files]
    out = str(tmp_path / "t.json")
    train_tokenizer.main(
        ["--input", *inputs, "--vocab-size", "300", "--out", out, "--trace", "1", *options]
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == corpus


def test_sweep_table_and_bars(tmp_path):
    (tmp_path / "cat.txt").write_text("the cat in the hat", encoding="utf-8")
    (tmp_path / "hat.txt").write_text("the hat", encoding="utf-8")
    result = run_python(
        SCRIPT, "--input", "cat.txt", "--sweep", "266,256,258", "--eval", "hat.txt", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert not list(tmp_path.glob("*.json"))  # no --out: nothing written
    sweep = result.stdout[result.stdout.index("sweep:") :]
    assert sweep == (
        "sweep: trained once, to vocab_size 266. Training is greedy, so a smaller\n"
        "vocabulary's merges are the first ones of a larger one's: each size is a prefix.\n"
        "vocab_size  training text     hat.txt\n"
        "       256          1.000       1.000\n"
        "       258          1.286       1.400\n"
        "       266          3.600       3.500\n"
        "bytes/token (█ training text, ░ hat.txt):\n"
        "       256 ███████████                              1.00\n"
        "           ░░░░░░░░░░░                              1.00\n"
        "       258 ██████████████                           1.29\n"
        "           ░░░░░░░░░░░░░░░░                         1.40\n"
        "       266 ████████████████████"
        "████████████████████ 3.60\n"
        "           ░░░░░░░░░░░░░░░░░░░░"
        "░░░░░░░░░░░░░░░░░░░  3.50\n"
    )


def test_a_smaller_vocabulary_is_a_prefix_of_a_larger_one(shakespeare):
    """What --sweep relies on, checked against separate trainings to each size."""
    train_text, eval_text = shakespeare[:40_000], shakespeare[40_000:50_000]
    special = ["<|endoftext|>"]
    vocab, merges = train_bpe_from_iterator([train_text], 700, special)
    encodings = dict(prefix_encodings(vocab, merges, [257, 400, 555, 700], special))
    for size in [257, 400, 555]:
        alone_vocab, alone_merges = train_bpe_from_iterator([train_text], size, special)
        assert alone_merges == merges[: len(alone_merges)]
        alone = Tokenizer(alone_vocab, alone_merges, special).to_tiktoken()
        assert encodings[size].encode(eval_text) == alone.encode(eval_text)
    figures = [compression(encodings[size], eval_text) for size in [257, 400, 555, 700]]
    assert figures[0] == 1.0 and figures == sorted(figures)


@pytest.mark.parametrize(
    "args, fragment",
    [
        pytest.param(["--sweep", "255,300"], "vocab_size 255 is too small", id="too-small"),
        pytest.param(["--sweep", "300", "--vocab-size", "400"], "largest --sweep", id="mismatch"),
        pytest.param(
            ["--vocab-size", "3", "--out", "t.json", "--plot", "a.png"], "give --sweep", id="plot"
        ),
        pytest.param([], "give --vocab-size N", id="no-vocab-size"),
    ],
)
def test_bad_sweep_arguments(tmp_path, args, fragment):
    (tmp_path / "in.txt").write_text("text", encoding="utf-8")
    parsed = train_tokenizer.parse_args(["--input", str(tmp_path / "in.txt"), *args])
    with pytest.raises(PrepareError, match=fragment):
        train_tokenizer.check_args(parsed)


def test_plot_without_matplotlib_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what `import` sees when it is absent
    with pytest.raises(PrepareError) as error:
        train_tokenizer.check_plot("sweep.png", [256, 512])
    assert str(error.value) == (
        '--plot needs matplotlib: pip install -e ".[plot]" (or pip install matplotlib)'
    )


def test_plot_draws_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    rows = [(256, [1.0, 1.0]), (512, [1.9, 1.8]), (1024, [2.4, 2.2])]
    plot_sweep(rows, ["training text", "val.txt"], tmp_path / "sweep.png")
    assert (tmp_path / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_trace_of_a_large_corpus_shows_counts_only(shakespeare):
    """Traced from the pretoken counts (any input kind); a corpus this large is not printed."""
    counts = count_pretokens(shakespeare[:40_000], GPT2_PATTERN)
    _, merges = train_bpe_from_iterator([shakespeare[:40_000]], 258)
    starting_with_space_t = sum(n for pretoken, n in counts.items() if pretoken.startswith(" t"))
    assert trace_lines(counts, merges, 1) == [
        f"merge 1: Ġ + t -> Ġt (id 256), count {starting_with_space_t}"
    ]
