"""The figures' comparison (val_bytes.RecordTokens.decodes_to) compiled with numba where it is
installed (safety/compiled.py); without it, val_bytes.py runs the numpy code this kernel equals
(tests/parts/test_val_bytes.py runs both on the same documents and compares every value).

    same, own = decodes_to(ids, counts, text_words, text_sizes, *token_words, lengths)

numpy compares every token's first 8 bytes in one pass and each later word in another, a dozen
arrays of the batch's tokens in all; the loop here reads each token once: 1 ns a byte against 5.
"""

import numpy as np

from safety.compiled import compiled

ALL_BYTES = np.uint64(0xFFFFFFFFFFFFFFFF)


@compiled
def first_bytes(word, count):
    """The word's first `count` bytes (little-endian), zeros after them; from 8 on, all 8."""
    if count >= 8:
        return word
    return word & ((np.uint64(1) << np.uint64(8 * count)) - np.uint64(1))


@compiled
def decodes_to(ids, counts, text_words, text_sizes, sizes, firsts, words, starts, lengths):
    """(RecordTokens.decodes_to(ids, counts, encoded), document_sums(lengths[ids], counts)):
    whether each document's ids' bytes are its text's, and its bytes by the tokenizer's count.
    text_words: the batch's text as a word of 8 bytes at each byte (val_bytes.text_words);
    sizes, firsts, words, starts: val_bytes.token_words (firsts is words' first of each id)."""
    same = np.zeros(len(counts), np.bool_)
    own = np.zeros(len(counts), np.int64)
    token, place = 0, 0  # the document's first token in ids, its first byte in the text
    for d in range(len(counts)):
        position, end, differs = place, place + text_sizes[d], np.uint64(0)
        for _ in range(counts[d]):
            i = ids[token]
            token += 1
            own[d] += lengths[i]
            size = sizes[i]
            if position + size > end:  # its bytes run past the text's: not the same
                differs = ALL_BYTES
            elif size:
                differs |= first_bytes(text_words[position], size) ^ firsts[i]
                for w in range(1, (size + 7) // 8):  # a token longer than 8 bytes: its others
                    found = first_bytes(text_words[position + 8 * w], size - 8 * w)
                    differs |= found ^ words[starts[i] + w]
            position += size
        same[d] = differs == 0 and position == end
        place = end
    return same, own
