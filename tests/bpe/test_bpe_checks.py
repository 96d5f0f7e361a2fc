"""bpe/checks.py: every bad argument gets the same message from every entry point."""

import pytest
from conftest import REPO, assert_clean_failure, hand_made_tokenizer, run_python, tokenizer_file

from bpe import EOT, Tokenizer, simple, train_bpe, train_bpe_from_iterator
from bpe.checks import check_pattern, check_tiktoken_pattern, check_training_args, shown
from bpe.patterns import GPT2_PATTERN, GPT4_PATTERN

BAD_TRAINING_ARGS = [
    pytest.param(
        256, [EOT], "gpt2", ValueError, "vocab_size 256 is too small", id="vocab-too-small"
    ),
    pytest.param(100, [], "gpt2", ValueError, "alone need 256", id="vocab-below-256"),
    pytest.param(300.0, [], "gpt2", ValueError, "vocab_size 300.0 is too small", id="vocab-float"),
    pytest.param(
        10**16, [], "gpt2", ValueError, "at most 2,147,483,647", id="vocab-too-large-for-int32"
    ),
    pytest.param(300, [EOT, EOT], "gpt2", ValueError, "must be distinct", id="repeated-special"),
    pytest.param(300, [""], "gpt2", ValueError, "must be a non-empty string", id="empty-special"),
    pytest.param(300, [7], "gpt2", ValueError, "must be a non-empty string", id="special-not-str"),
    pytest.param(300, EOT, "gpt2", TypeError, "list of strings", id="special-bare-str"),
    pytest.param(
        300,
        [],
        "(unclosed",
        ValueError,
        r"neither a name \(gpt2, gpt4, nanochat\) nor",
        id="bad-regex",
    ),
    pytest.param(
        300, [], None, ValueError, r"neither a name \(gpt2, gpt4, nanochat\) nor", id="pattern-none"
    ),
]


@pytest.mark.parametrize("vocab_size, special_tokens, pattern, error, message", BAD_TRAINING_ARGS)
@pytest.mark.parametrize("trainer", ["simple.train", "train_bpe_from_iterator", "train_bpe"])
def test_bad_training_arguments(
    tmp_path, trainer, vocab_size, special_tokens, pattern, error, message
):
    missing = tmp_path / "missing.txt"  # the arguments are checked before the file is read
    call = {
        "simple.train": lambda: simple.train("abc", vocab_size, special_tokens, pattern),
        "train_bpe_from_iterator": lambda: train_bpe_from_iterator(
            ["abc"], vocab_size, special_tokens, pattern
        ),
        "train_bpe": lambda: train_bpe(missing, vocab_size, special_tokens, pattern),
    }[trainer]
    with pytest.raises(error, match=message):
        call()


def test_good_training_arguments():
    assert check_training_args(300, (EOT,), "gpt2") == (43, [EOT], GPT2_PATTERN)
    assert check_training_args(256, [], r"\S+|\s+") == (0, [], r"\S+|\s+")
    assert check_pattern("gpt4") == GPT4_PATTERN


def test_the_tokenizer_checks_its_special_tokens_and_pattern_alike():
    vocab = {b: bytes([b]) for b in range(256)}
    with pytest.raises(ValueError, match="must be distinct"):
        Tokenizer(vocab, [], [EOT, EOT])
    with pytest.raises(ValueError, match="must be a non-empty string"):
        Tokenizer(vocab, [], {"": 256})
    with pytest.raises(ValueError, match=r"neither a name \(gpt2, gpt4, nanochat\) nor"):
        Tokenizer(vocab, [], pattern="(unclosed")


@pytest.mark.parametrize(
    "pattern",
    [
        pytest.param(r"\X+|.", id="grapheme-clusters"),
        pytest.param(r"(?|ab|cd)|[\s\S]", id="branch-reset"),
        pytest.param(r"(?V1)[\w--\d]+|[\s\S]", id="set-operations"),
    ],
)
def test_patterns_python_accepts_but_tiktoken_cannot_compile(pattern):
    check_pattern(pattern)  # Python's regex compiles it
    with pytest.raises(ValueError, match="tiktoken cannot compile it"):
        check_tiktoken_pattern(pattern)


@pytest.mark.parametrize(
    "pattern, first",
    [
        pytest.param(r"[[:alpha:]]+|[^[:alpha:]]", "café", id="posix-class-ascii-in-rust"),
        pytest.param(r"[\w--\d]+|\d+|\W", "-1", id="set-difference-literal-in-python"),
    ],
)
def test_patterns_the_two_engines_read_otherwise_are_refused(pattern, first):
    """Both engines compile these, but tiktoken's cuts the probe text otherwise than Python's
    regex, so a tokenizer's pipeline ids would differ from its encode's: refused."""
    check_pattern(pattern)
    with pytest.raises(ValueError, match=f"cuts text otherwise.*first at '{first}'"):
        check_tiktoken_pattern(pattern)


def test_special_tokens_of_no_utf8_are_refused():
    """A shell's byte "\\xff" reaches argv as a lone surrogate: no UTF-8 holds it."""
    with pytest.raises(ValueError, match="is not valid Unicode text"):
        check_training_args(300, ["\udcff"], "gpt2")


def test_tiktoken_compiles_our_patterns_and_plain_ones():
    for pattern in (GPT2_PATTERN, GPT4_PATTERN, r"\S+|\s+", r"\w+|[^\w]"):
        check_tiktoken_pattern(pattern)


@pytest.mark.parametrize(
    "value, expected",
    [
        pytest.param("abc", "'abc'", id="short-str"),
        pytest.param("x" * 10**7, "'" + "x" * 199 + "... (10,000,000 characters)", id="long-str"),
        pytest.param(b"\xff" * 100, repr(b"\xff" * 100)[:200] + "... (100 bytes)", id="long-bytes"),
        pytest.param(
            ["ab"] * 100, repr(["ab"] * 100)[:200] + "... (600 characters in all)", id="list"
        ),
    ],
)
def test_shown_cuts_a_long_value_and_gives_its_length(value, expected):
    assert shown(value) == expected


# ---------------------------------------------------------------- a pattern that matches nothing

EMPTY_MATCHES = [
    pytest.param("", id="empty"),
    pytest.param("a*", id="star"),
    pytest.param("x?", id="optional"),
    pytest.param("(?:)", id="empty-group"),
    pytest.param(r"\S+|\s*", id="an-alternative-may-be-empty"),
    pytest.param(r"\b", id="word-boundary"),
    pytest.param(r"\w+|\B", id="not-a-word-boundary"),
    pytest.param("$", id="end"),
    pytest.param("(?=a)", id="look-ahead"),
    pytest.param("(?<=a)", id="look-behind"),
]


@pytest.mark.parametrize("pattern", EMPTY_MATCHES)
def test_a_pattern_that_matches_the_empty_string_is_refused(pattern):
    """tiktoken's encoder panics on an empty pretoken; bpe refuses the pattern before it runs."""
    with pytest.raises(ValueError, match="matches the empty string"):
        check_pattern(pattern)
    with pytest.raises(ValueError, match="matches the empty string"):
        train_bpe_from_iterator(["abc"], 300, pattern=pattern)
    with pytest.raises(ValueError, match="matches the empty string"):
        Tokenizer({b: bytes([b]) for b in range(256)}, [], pattern=pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        pytest.param(r"(\s)|[^\s]+|\s+", id="one-group"),
        pytest.param(r"(?P<word>\w+)|\W+", id="named-group"),
        pytest.param(r"((a)|b)+|[^ab]+", id="nested"),
    ],
)
def test_a_pattern_with_a_capturing_group_is_refused(pattern):
    """regex.findall gives a group's text, not the whole match: the trainer would count the
    groups (nothing, for the alternatives outside them) and the encoder would drop text."""
    with pytest.raises(ValueError, match="capturing group"):
        check_pattern(pattern)
    with pytest.raises(ValueError, match="capturing group"):
        train_bpe_from_iterator(["abc"], 300, pattern=pattern)
    with pytest.raises(ValueError, match="capturing group"):
        Tokenizer({b: bytes([b]) for b in range(256)}, [], pattern=pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        pytest.param(r"\S+|\s+", id="runs"),
        pytest.param(r"\w+|[^\w]", id="words-and-one-character"),
        pytest.param("a|(?=a)", id="empty-alternative-never-chosen"),
        pytest.param(r"\p{L}+|\p{N}+|\s+|[^\s\p{L}\p{N}]+", id="classes"),
    ],
)
def test_a_pattern_whose_matches_are_never_empty_is_taken(pattern):
    assert check_pattern(pattern) == pattern


@pytest.mark.parametrize("pattern", EMPTY_MATCHES[:6])
def test_a_tokenizer_file_with_such_a_pattern_is_one_error_line(tmp_path, pattern):
    """The file loads no more (it did, and encoding then raised tiktoken's PanicException, a
    BaseException, with a traceback from Rust)."""
    (tmp_path / "in.txt").write_text("some text to encode\n" * 20, encoding="utf-8")
    tokenizer = tokenizer_file(tmp_path / "tok.json", pattern)
    result = run_python(
        REPO / "data" / "shakespeare" / "prepare.py",
        *["--input", tmp_path / "in.txt", "--tokenizer", tokenizer, "--out-dir", tmp_path / "out"],
    )
    assert_clean_failure(result, "tok.json", "matches the empty string")
    assert "PanicException" not in result.stderr


@pytest.mark.slow
def test_what_tiktoken_cannot_build_is_one_line_naming_the_pattern(tmp_path):
    """A special token of 3 MB: the pattern compiles, tiktoken's regex of the specials does not."""
    (tmp_path / "in.txt").write_text("some text to encode\n" * 20, encoding="utf-8")
    tokenizer = hand_made_tokenizer([], [EOT, "<" + "x" * 3_000_000 + ">"])
    tokenizer.save(tmp_path / "tok.json")
    result = run_python(
        REPO / "data" / "shakespeare" / "prepare.py",
        *["--input", tmp_path / "in.txt", "--tokenizer", tmp_path / "tok.json"],
        *["--out-dir", tmp_path / "out"],
    )
    assert_clean_failure(result, "tok.json", "tiktoken cannot build", "(pattern gpt2, 2 special")
    assert len(result.stderr) < 1000
