"""The figures' comparison (val_bytes.RecordTokens.decodes_to) compiled with numba where it is
installed; without it, val_bytes.py runs the numpy code this kernel equals. The loop here reads
each token once, where numpy makes a dozen arrays of the batch's tokens: 1 ns a byte against 5.
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
    """(whether each document's ids' bytes are its text's, its bytes by the tokenizer's count):
    text_words as val_bytes.text_words, sizes, firsts, words, starts as val_bytes.token_words."""
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
