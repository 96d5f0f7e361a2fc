"""The argument checks, in one place: special tokens, vocabulary size, pattern.

Every trainer, the Tokenizer and train_tokenizer.py call these, so a mistake gets the same
message wherever it is made, before any work is done. A value quoted in a message is `shown`:
a merge of 10 MB makes an error line of a few hundred characters, not of 20 million.
"""

from collections import Counter

import regex

from .patterns import PATTERNS

SHOWN_CHARS = 200  # a value quoted in an error line is cut to this many characters


def shown(value, limit=SHOWN_CHARS):
    """repr(value) for an error message, cut to `limit` characters with the value's length:
    "abc" -> "'abc'"; "x" * 10**7 -> "'xx...x... (10,000,000 characters)", the first 200."""
    text = repr(value)
    if len(text) <= limit:
        return text
    if isinstance(value, (str, bytes)):
        unit = "bytes" if isinstance(value, bytes) else "characters"
        return f"{text[:limit]}... ({len(value):,} {unit})"
    return f"{text[:limit]}... ({len(text):,} characters in all)"


def without_lone_surrogates(text):
    """What tiktoken's encode_ordinary does with text that is not valid Unicode before it
    encodes it (UTF-8 has no bytes for a lone surrogate; a JSON "\\ud800" makes one):
    "a\\ud800" -> "a\\ufffd"; a valid text is returned as it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def check_special_tokens(special_tokens):
    """("<|endoftext|>",) -> ["<|endoftext|>"]; a repeated or empty token, or a bare str, raise."""
    if isinstance(special_tokens, (str, bytes)):
        raise TypeError(
            f"special_tokens must be a list of strings, not the single string "
            f"{shown(special_tokens)}"
        )
    tokens = list(special_tokens)
    for token in tokens:
        if not isinstance(token, str) or not token:
            raise ValueError(f"special token {shown(token)} must be a non-empty string")
        if token != without_lone_surrogates(token):  # bytes of no UTF-8 (a shell's "\xff")
            raise ValueError(f"special token {shown(token)} is not valid Unicode text")
    repeated = sorted(token for token, count in Counter(tokens).items() if count > 1)
    if repeated:
        raise ValueError(f"special tokens must be distinct; repeated: {shown(repeated)}")
    return tokens


# The most ids a tokenizer may have: the trainer holds ids in int32 arrays (FlatPretokens) and
# a pair of ids in one int64 (a << shift | b); tiktoken's ranks are 32-bit too.
MAX_VOCAB_SIZE = 2**31 - 1
# The most worker processes a trainer starts: each is a process of its own, and beyond the CPUs
# more only cost memory (10**16 would try to start a process per line of the text).
MAX_WORKERS = 1024


def check_vocab_size(vocab_size, special_tokens):
    """The number of merges a vocab_size asks for: 259, no special tokens -> 3."""
    smallest = 256 + len(special_tokens)
    if not isinstance(vocab_size, int) or vocab_size < smallest:
        raise ValueError(
            f"vocab_size {shown(vocab_size)} is too small: the 256 byte tokens and "
            f"{len(special_tokens)} special token(s) alone need {smallest}"
        )
    if vocab_size > MAX_VOCAB_SIZE:
        raise ValueError(
            f"vocab_size {shown(vocab_size)} is too large: token ids are 32-bit integers in the "
            f"trainer's arrays and in tiktoken, so it can be at most {MAX_VOCAB_SIZE:,}"
        )
    return vocab_size - smallest


def check_workers(num_workers, name="num_workers"):
    """None (one worker per CPU) or a whole number from 1 to MAX_WORKERS: 4 -> 4; 0 raises."""
    if num_workers is None:
        return None
    if not isinstance(num_workers, int) or not 1 <= num_workers <= MAX_WORKERS:
        raise ValueError(
            f"{name} must be a whole number from 1 to {MAX_WORKERS:,} (each worker is a "
            f"process), got {shown(num_workers)}"
        )
    return num_workers


def check_pattern(pattern):
    """A pattern name ("gpt2", "gpt4", "nanochat") or a regex string -> the regex string.

    "gpt2" -> GPT2_PATTERN; r"\\S+|\\s+" -> r"\\S+|\\s+" (a custom pattern passes through);
    r"\\S+|\\s*" -> ValueError (it matches the empty string: see empty_match);
    r"(\\s)|\\S+" -> ValueError (a capturing group: findall would give the group's text).
    """
    if pattern in PATTERNS:
        return PATTERNS[pattern]
    try:
        compiled = regex.compile(pattern)  # a bytes pattern: a TypeError here
        found = empty_match(compiled)
    except (regex.error, TypeError, RecursionError) as exc:  # "(" * 10**6 nests too deeply
        raise ValueError(
            f"pattern {shown(pattern)} is neither a name ({', '.join(PATTERNS)}) nor a valid "
            f"regex: {exc}"
        ) from None
    if found is not None:
        text, position = found
        raise ValueError(
            f"pattern {shown(pattern)} matches the empty string (in {text!r}, at position "
            f"{position}), and tiktoken's encoder fails on an empty pretoken; make each "
            f"alternative match at least one character"
        )
    if compiled.groups:
        raise ValueError(
            f"pattern {shown(pattern)} has a capturing group, and regex.findall would give the "
            f"group's text instead of the whole pretoken; write each group as (?:...)"
        )
    return pattern


# The rule for a pattern that can match the empty string: its match at some position of one of
# these texts (none, each kind of character alone, and a mix of them) is empty.
EMPTY_MATCH_PROBES = ("", "a", "1", " ", "\n", ".", "é", "a1 b\n\t.é")


def empty_match(compiled):
    """(text, position) of an empty match of a compiled pattern on EMPTY_MATCH_PROBES, or None.

    r"a*" -> ("", 0);  r"\\b" -> ("a", 0);  r"\\S+|\\s+" -> None. A pattern whose empty match
    needs another context (r"(?<=qq)") passes: the probes catch the usual ones, they prove nothing.
    """
    for text in EMPTY_MATCH_PROBES:
        for position in range(len(text) + 1):
            match = compiled.match(text, position)
            if match is not None and match.end() == position:
                return text, position
    return None


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
    ordered = sorted(special_tokens)  # the tokens a token starts come right after it
    for short, long in zip(ordered, ordered[1:]):
        if long != short and long.startswith(short):
            raise ValueError(
                f"special token {shown(short)} is a prefix of {shown(long)}: tiktoken may "
                f"match either where both fit, so its ids could differ from encode's; use "
                f"special tokens none of which starts another"
            )


# Text the usual patterns cut alike in Python's `regex` and tiktoken's, where constructs they read
# otherwise show (POSIX classes, "[\\w--\\d]"); Unicode 6 only: newer tables may differ.
PATTERN_PROBE = (
    "Hello world! It's 2024, don't I'M we've 3.14 -1,000 a_b a-b __init__ x+=1 {[(<>)]} "
    "café ÉTÉ naïve Ωμέγα Москва 北京市 ١٢٣ ½ ² e\u0301 ﬁ ① "
    "ｆｕｌｌ ☃ 😀\t\n\r\n  \x0b\x0c\x00 "
    "x\u00a0y\u2003z\u3000w\u2028v\u0085 $%^&*|\\/?~`'\"@#;: \U0001d400 \ufeffZ"
)


def check_tiktoken_pattern(pattern):
    """Refuse a regex that tiktoken's Rust engine cannot compile, or reads otherwise than
    Python's `regex` does (the trainer's and encode's engine) on PATTERN_PROBE.

    r"\\X+" (grapheme clusters), r"[[:alpha:]]+|[^[:alpha:]]" ("café": one pretoken to
    Python, "caf" and "é" to tiktoken) -> ValueError. The pipelines encode with `to_tiktoken()`.
    The probe proves no pattern alike: it catches the differences that common text shows.
    """
    import tiktoken

    pretokens = [piece.encode() for piece in regex.findall(pattern, PATTERN_PROBE)]
    ranks = {bytes([b]): b for b in range(256)}  # and an id a pretoken: cut alike, those ids
    for piece in pretokens:
        ranks.setdefault(piece, len(ranks))
    try:
        encoding = tiktoken.Encoding(
            "check", pat_str=pattern, mergeable_ranks=ranks, special_tokens={}
        )
        found = encoding.encode_ordinary(PATTERN_PROBE)
    except BaseException as exc:
        if not tiktoken_failed(exc):
            raise
        raise ValueError(
            f"pattern {shown(pattern)} is a valid Python regex but tiktoken cannot compile it "
            f"({one_line(exc)}); use a name ({', '.join(PATTERNS)}) or a regex without that "
            f"construct"
        ) from None
    expected = [ranks[piece] for piece in pretokens]
    at = next((i for i, (a, b) in enumerate(zip(found, expected)) if a != b), len(found))
    if found != expected:
        where = repr(pretokens[at].decode()) if at < len(pretokens) else "the end"
        raise ValueError(
            f"pattern {shown(pattern)} cuts text otherwise in tiktoken's regex engine than in "
            f"Python's (first at {where}), so the "
            f"pipelines' ids would differ from encode's; use a name ({', '.join(PATTERNS)}) or "
            "a regex without POSIX classes or set operations"
        )


def tiktoken_failed(exc):
    """Whether tiktoken's Rust code refused (ValueError) or panicked: pyo3 raises a panic as
    PanicException, a BaseException that no `except Exception` catches (pyo3_runtime, the
    module that holds it, cannot be imported, hence the name)."""
    return isinstance(exc, ValueError) or type(exc).__name__ == "PanicException"


def one_line(exc):
    """An exception's message on one line: "Parsing error\\n  at 2" -> "Parsing error at 2"."""
    return " ".join(str(exc).split())
