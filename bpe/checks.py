"""The argument checks, in one place: special tokens, vocabulary size, pattern.

Every trainer, the Tokenizer and train_tokenizer.py call these, so a mistake gets the same
message wherever it is made, before any work is done. A value quoted in a message is `shown`:
a merge of 10 MB makes an error line of a few hundred characters, not of 20 million.
"""

import regex

from .patterns import PATTERNS

SHOWN_CHARS = 200  # a value quoted in an error message is cut to this many characters


def shown(value, limit=SHOWN_CHARS):
    """repr(value) for an error message, cut to `limit` characters, with the value's length.

    "abc" -> "'abc'";  "x" * 10**7 -> "'xx...x... (10,000,000 characters)", the repr's first 200.
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    if isinstance(value, (str, bytes)):
        unit = "bytes" if isinstance(value, bytes) else "characters"
        return f"{text[:limit]}... ({len(value):,} {unit})"
    return f"{text[:limit]}... ({len(text):,} characters in all)"


def check_special_tokens(special_tokens):
    """("<|endoftext|>",) -> ["<|endoftext|>"]; a repeated or empty token, or a bare str, raise."""
    if isinstance(special_tokens, (str, bytes)):
        raise TypeError(
            f"special_tokens must be a list of strings, not the single string {shown(special_tokens)}"
        )
    tokens = list(special_tokens)
    for token in tokens:
        if not isinstance(token, str) or not token:
            raise ValueError(f"special token {shown(token)} must be a non-empty string")
    repeated = sorted({token for token in tokens if tokens.count(token) > 1})
    if repeated:
        raise ValueError(f"special tokens must be distinct; repeated: {shown(repeated)}")
    return tokens


def check_vocab_size(vocab_size, special_tokens):
    """The number of merges a vocab_size asks for: 259, no special tokens -> 3."""
    smallest = 256 + len(special_tokens)
    if not isinstance(vocab_size, int) or vocab_size < smallest:
        raise ValueError(
            f"vocab_size {shown(vocab_size)} is too small: the 256 byte tokens and "
            f"{len(special_tokens)} special token(s) alone need {smallest}"
        )
    return vocab_size - smallest


def check_pattern(pattern):
    """A pattern name ("gpt2", "gpt4", "nanochat") or a regex string -> the regex string.

    "gpt2" -> GPT2_PATTERN; r"\\S+|\\s+" -> r"\\S+|\\s+" (a custom pattern passes through).
    """
    if pattern in PATTERNS:
        return PATTERNS[pattern]
    try:
        regex.compile(pattern)
    except (regex.error, TypeError, RecursionError) as exc:  # "(" * 10**6 nests too deeply
        raise ValueError(
            f"pattern {shown(pattern)} is neither a name ({', '.join(PATTERNS)}) nor a valid regex: {exc}"
        ) from None
    return pattern


def check_training_args(vocab_size, special_tokens, pattern):
    """-> (number of merges, special tokens as a list, the pattern's regex string).

    300, ["<|endoftext|>"], "gpt2" -> (43, ["<|endoftext|>"], GPT2_PATTERN)
    """
    special_tokens = check_special_tokens(special_tokens)
    return check_vocab_size(vocab_size, special_tokens), special_tokens, check_pattern(pattern)


def check_tiktoken_special_tokens(special_tokens):
    """Refuse special tokens one of which is a proper prefix of another: ["<|a|>", "<|a|>b"].

    Where both fit ("<|a|>b"), our encode takes the longest, but tiktoken tries its special
    tokens in an unspecified order and may give "<|a|>" + "b": a tiktoken export of such a
    set could encode differently, so it is refused.
    """
    for short in special_tokens:
        for long in special_tokens:
            if long != short and long.startswith(short):
                raise ValueError(
                    f"special token {shown(short)} is a prefix of {shown(long)}: tiktoken may match either "
                    f"where both fit, so its ids could differ from encode's; use special tokens "
                    f"none of which starts another"
                )


def check_tiktoken_pattern(pattern):
    """Refuse a regex that Python's `regex` accepts but tiktoken's Rust engine cannot compile.

    r"\\X+" (grapheme clusters) -> ValueError. A Tokenizer can only be exported with
    `to_tiktoken()`, which is how the pipelines encode, if tiktoken compiles its pattern.
    """
    import tiktoken

    single_bytes = {bytes([b]): b for b in range(256)}
    try:
        tiktoken.Encoding(
            "pattern-check", pat_str=pattern, mergeable_ranks=single_bytes, special_tokens={}
        )
    except ValueError as exc:
        raise ValueError(
            f"pattern {shown(pattern)} is a valid Python regex but tiktoken cannot compile it "
            f"({exc}); use a name ({', '.join(PATTERNS)}) or a regex without that construct"
        ) from None
