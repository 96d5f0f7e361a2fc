"""`prepare_common.py bpb DIR`: bits per byte true for any tokenizer, from a split's figures
(meta.json's "bytes"): documents; text_bytes, their UTF-8 bytes as given; tokenizer_bytes, the
tokenizer's own count (train_gpt.py's for SentencePiece, each token's bytes for a byte-level one);
decoded_bytes, decode(ids)'s; changed_documents, lost_bytes, gained_bytes: where it differs."""

import numpy as np


def document_share_sums(ids, shares, bos_id):
    """Each document's sum of shares, its BOS's too: [1, 5, 1, 6], [0, 3, 0, 1], BOS 1 -> [3, 1]."""
    starts = np.asarray(ids) == bos_id
    return np.bincount(np.cumsum(starts) - 1, weights=shares, minlength=int(starts.sum()))


def eval_val_line(ids, shares, own_bytes, seq_len=1024):  # train_gpt.py's TRAIN_SEQ_LEN
    """What parameter-golf's eval_val divides by: the bytes of its targets, val_tokens[1:usable+1]
    (whole windows), by the sidecar's shares ([]: none) and by its byte LUT's count (own_bytes)."""
    usable = (len(ids) - 1) // seq_len * seq_len
    if usable <= 0:
        return f"  eval_val refuses val's {len(ids):,} tokens: fewer than TRAIN_SEQ_LEN={seq_len}+1"
    lut = f"its byte LUT counts {own_bytes(ids[: usable + 1]):,}"  # the first id, a BOS, counts 0
    sidecar = f"divide by {int(np.sum(shares[1 : usable + 1])):,} bytes (the sidecar's; {lut})"
    by = sidecar if len(shares) else f"{lut} bytes, what it divides by"
    windows = f"scores whole windows only, {usable:,} of val's {len(ids) - 1:,} targets"
    return f"  eval_val at TRAIN_SEQ_LEN={seq_len} {windows}: over them, {by}"


def audit_lines(name, figures):
    """The audit of one dataset's val in a few plain lines: lossless or not, what changes, the
    tokenizer's count against the text's bytes, and which figure bits per byte divides by."""
    val = figures["val"]
    docs, size, own = val["documents"], val["text_bytes"], val["tokenizer_bytes"]
    changed, lost, gained = val["changed_documents"], val["lost_bytes"], val["gained_bytes"]
    lines = [f"{name}: lossless on val: decode(encode(doc)) == doc for all {docs:,} documents"]
    if changed:
        lines = [
            f"{name}: NOT lossless on val: {changed:,} of {docs:,} documents "
            f"({percent(changed, docs)}) change under decode(encode(doc)), losing {lost:,} and "
            f"gaining {gained:,} of their {size:,} bytes ({percent(lost + gained, size)})"
        ]
    if own == size:
        return lines + [
            f"  the tokenizer counts {own:,} bytes, the text's {size:,}: equal",
            f"  divide by {size:,} bytes: the tokenizer's count and the text's agree",
        ]
    return lines + [
        f"  the tokenizer counts {own:,} bytes, {percent(abs(own - size), size)} "
        f"{'below' if own < size else 'above'} the text's {size:,}: bits per byte over its count "
        f"read {'low' if own > size else 'high'}",
        f"  divide by the text's {size:,} bytes (the sum of fineweb_val_bytes_*.bin, --val-bytes), "
        f"not by the tokenizer's {own:,}",
    ]


def percent(part, whole):
    """part / whole as a percentage that shows a small one: (4, 131880) -> "0.003%"."""
    fraction = part / max(whole, 1)
    return f"{fraction:.3%}" if fraction < 0.01 else f"{fraction:.1%}"
