"""Bits per byte that are true for any tokenizer: what a split's text holds, what the tokenizer's
own accounting counts, and what decode(encode(doc)) gives back, recounted from the documents and
the ids; and the val bytes sidecar, each token's share of the text's UTF-8 bytes.

    python prepare_common.py bpb DIR

A split's figures (meta.json's "bytes"): documents; text_bytes, the UTF-8 bytes of the documents
as given; tokenizer_bytes, the tokenizer's own count (train_gpt.py's formula for SentencePiece,
each token's bytes for a byte-level one); decoded_bytes, those of decode(ids); changed_documents,
those whose decode(ids) differs from the text, and the lost_bytes and gained_bytes they account for.
"""

import numpy as np


def document_share_sums(ids, shares, bos_id):
    """Each document's sum of the sidecar's shares, its BOS's included: ids [1, 5, 1, 6, 7],
    shares [0, 3, 0, 1, 2], BOS 1 -> [3, 3]."""
    starts = np.asarray(ids) == bos_id
    return np.bincount(np.cumsum(starts) - 1, weights=shares, minlength=int(starts.sum()))


def audit_lines(name, figures):
    """The audit of one dataset's val in a few plain lines: lossless or not, what changes, the
    tokenizer's count against the text's bytes, and which figure bits per byte divides by."""
    val = figures["val"]
    docs, size, own = val["documents"], val["text_bytes"], val["tokenizer_bytes"]
    changed = val["changed_documents"]
    if not changed:
        lines = [f"{name}: lossless on val: decode(encode(doc)) == doc for all {docs:,} documents"]
    else:
        lines = [
            f"{name}: NOT lossless on val: {changed:,} of {docs:,} documents "
            f"({percent(changed, docs)}) change under decode(encode(doc)), losing "
            f"{val['lost_bytes']:,} and gaining {val['gained_bytes']:,} of their {size:,} bytes "
            f"({percent(val['lost_bytes'] + val['gained_bytes'], size)})"
        ]
    if own == size:
        lines.append(f"  the tokenizer counts {own:,} bytes, the text's {size:,}: equal")
        lines.append(f"  divide by {size:,} bytes: the tokenizer's count and the text's agree")
    else:
        side = "below" if own < size else "above"
        lines.append(
            f"  the tokenizer counts {own:,} bytes, {percent(abs(own - size), size)} {side} "
            f"the text's {size:,}: bits per byte over its count read "
            f"{'low' if own > size else 'high'}"
        )
        lines.append(
            f"  divide by the text's {size:,} bytes (the sum of fineweb_val_bytes_*.bin, "
            f"--val-bytes), not by the tokenizer's {own:,}"
        )
    return lines


def percent(part, whole):
    """part / whole as a percentage that shows a small one: (4, 131880) -> "0.003%"."""
    fraction = part / max(whole, 1)
    return f"{fraction:.3%}" if fraction < 0.01 else f"{fraction:.1%}"
