"""The two small functions BPE is made of, and GPT-2's printable byte alphabet.

These are the readable reference versions (minbpe's style). The fast paths in
`train.py` and `tokenizer.py` say in their docstrings which of these they are
equivalent to, and the tests prove it.
"""


def get_pair_counts(ids, counts=None, weight=1):
    """Count adjacent pairs; add into `counts` if given, each occurrence counting `weight`.

    [1, 2, 3, 1, 2] -> {(1, 2): 2, (2, 3): 1, (3, 1): 1}
    """
    counts = {} if counts is None else counts
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + weight
    return counts


def merge_pair(ids, pair, new_id):
    """Replace every non-overlapping occurrence of `pair`, left to right, by `new_id`.

    [1, 2, 3, 1, 2], (1, 2), 4 -> [4, 3, 4];   [1, 1, 1], (1, 1), 2 -> [2, 1]
    """
    merged = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            merged.append(new_id)
            i += 2
        else:
            merged.append(ids[i])
            i += 1
    return merged


def bytes_to_unicode():
    """GPT-2's map from each byte to a printable character, so tokens can be written as text.

    Printable bytes map to themselves; the rest (controls, space, ...) to chars from U+0100 on:
    0x21 ('!') -> '!',  0x20 (space) -> 'Ġ',  0x0A (newline) -> 'Ċ'.
    """
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = list(printable)
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return {byte: chr(char) for byte, char in zip(printable, chars)}


BYTE_TO_CHAR = bytes_to_unicode()
CHAR_TO_BYTE = {char: byte for byte, char in BYTE_TO_CHAR.items()}


def render_token(token: bytes) -> str:
    """A token's bytes in GPT-2's printable alphabet: b" the" -> "Ġthe", b"\\n" -> "Ċ"."""
    return "".join(BYTE_TO_CHAR[b] for b in token)


def parse_token(text: str) -> bytes:
    """The inverse of render_token: "Ġthe" -> b" the". A char outside the alphabet raises KeyError."""
    return bytes(CHAR_TO_BYTE[c] for c in text)
