"""Bits per byte true for any tokenizer: each split's byte figures (meta.json's "bytes") and the
val bytes sidecar beside val.bin or each val shard ("val_bytes"), counted from each document and
its ids where it is encoded (batch_figures: the lessons' workers, the datatrove tasks), or from
the text and the ids written (write_val_bytes: the Shakespeare lessons, a split one text).

A token's share is how far it moves the end of the text covered so far (parameter-golf's rule,
written once here: formats/golf.py uses it too): bytes a tokenizer drops go to the token that
follows them, those at a document's end to its last token, so the shares of a document sum to
its UTF-8 length exactly; a separator (<|endoftext|>, a BOS) gets 0, or the whole document if
it has no token. For a byte-level lossless tokenizer (characters, GPT-2, train_tokenizer.py's)
a share is the token's byte length (a token holding part of a character included).

    write_meta(out, ..., texts={"train": text, "val": text})  # prepare_common.py
    write_meta(out, ..., counted=shard_figures(tokenized, shard_size))  # FineWeb's lesson
"""

import functools
import itertools
from collections import Counter
from pathlib import Path

import numpy as np

from formats.encoders import fast_encoding
from formats.nanochat import token_byte_lengths, token_pieces
from formats.schema import FIGURES, bin_name, val_bytes_name
from formats.shards import read_ids, read_shard, val_documents, write_shard
from formats.tokenizers import record_byte_lengths, record_encoding
from safety import PrepareError
from safety.files import atomic_path, sha256_file
from safety.text import without_lone_surrogates

SHARE_DTYPE = np.uint16  # the CaseOps records' fineweb_val_bytes_*.bin
CHUNK = 2**24  # ids read at a time: memory stays flat on a split of billions
COMPARED_AT_ONCE = 256  # documents (decodes_to): about 1 MB of FineWeb's text, in the cache
# The text past which compiling the figures' comparison pays: it saves 3.5 ns a byte, and
# importing numba and loading the loop costs about 0.5 s of CPU
COMPILED_MIN_BYTES = 1 << 28
WORD_MASKS = np.array([(1 << 8 * n) - 1 for n in range(9)], np.uint64)  # a word's first n bytes


def covered_shares(ends, size):
    """Each token's share of a text of `size` bytes from the byte offsets where the tokens end:
    ([4, 6], 6) -> [4, 2]; ([1, 4], 6) -> [1, 5] (two bytes dropped at the end go to the last)."""
    covered = np.maximum.accumulate(np.asarray(ends, dtype=np.int64)) if len(ends) else ends
    shares = np.diff(covered, prepend=0)
    if len(shares):
        shares[-1] += size - covered[-1]
    return shares


def checked_shares(shares, where):
    """Shares as SHARE_DTYPE, or one line if one does not fit (a run of 65,536 spaces)."""
    if len(shares) and int(np.max(shares)) > np.iinfo(SHARE_DTYPE).max:
        raise PrepareError(
            f"{where}: a token stands for more than 65,535 bytes of text, more than a uint16 "
            "sidecar holds; cut that run of text (65,536 spaces, say) or leave the sidecar out"
        )
    return np.asarray(shares).astype(SHARE_DTYPE)


class RecordTokens:
    """The tokenizer a meta.json records, as the figures count with it: decode(ids), each id's
    byte length (0 for a special token); `encoding`: its Encoding if loaded already; `compiled`:
    compare in formats/compiled.py's loop where numba is installed (worth it past 256 MB)."""

    def __init__(self, tokenizer, folder=None, encoding=None, compiled=False):
        self.chars = tokenizer.get("chars") if tokenizer["kind"] == "char" else None
        self.kernel = None
        if self.chars is not None:
            self.encoding, lengths = None, record_byte_lengths(tokenizer)
        else:
            self.encoding = encoding or record_encoding(tokenizer, folder)
            self.pieces, lengths = token_pieces(self.encoding), token_byte_lengths(self.encoding)
            self.words = token_words(self.encoding)
            if compiled:
                from formats.compiled import decodes_to as kernel  # None without numba

                self.kernel = kernel
        self.lengths = lengths.astype(np.int64)

    def decode(self, ids):
        if self.chars is not None:
            return "".join(self.chars[i] for i in ids)
        pieces = self.pieces[np.asarray(ids, dtype=np.int64)].tolist()
        return b"".join(pieces).decode("utf-8", "replace")

    def own_bytes(self, ids):
        return int(self.lengths[np.asarray(ids, dtype=np.int64)].sum())

    def decodes_to(self, ids, counts, encoded):
        """For each document of a batch (`joined`'s ids and counts; each text's UTF-8), whether
        its ids' bytes are its text's exactly, so that decode(ids) == text: the ids of "a b",
        [2], [b"a b"] -> [True]. Each token's bytes are compared with the text's where the token
        sits, 8 at a time: the text's word (8 bytes, little-endian) there against the token's."""
        sizes, firsts, words, word_starts = self.words
        lengths = sizes[ids]
        decoded_sizes = document_sums(lengths, counts)
        text_words, text_sizes = batch_text(encoded)
        same = decoded_sizes == text_sizes
        # where each token sits in the batch's text: in its document, after the tokens before
        shift = (np.cumsum(text_sizes) - text_sizes) - (np.cumsum(decoded_sizes) - decoded_sizes)
        places = np.cumsum(lengths) - lengths + np.repeat(shift, counts)
        last = len(text_words) - 1  # a token past it is in a document of another size: not same
        found = text_words[np.minimum(places, last)] & WORD_MASKS[np.minimum(lengths, 8)]
        differs, word = [np.flatnonzero(found != firsts[ids])], 1
        tokens = np.flatnonzero(lengths > 8)  # the words after the first: long tokens only
        while len(tokens):
            at = np.minimum(places[tokens] + 8 * word, last)
            found = text_words[at] & WORD_MASKS[np.minimum(lengths[tokens] - 8 * word, 8)]
            differs.append(tokens[found != words[word_starts[ids[tokens]] + word]])
            word += 1
            tokens = tokens[lengths[tokens] > 8 * word]
        differs = np.concatenate([*differs, np.zeros(0, np.int64)])
        same[np.searchsorted(np.cumsum(counts), differs, "right")] = False
        return same


def batch_text(encoded):
    """A batch's UTF-8 texts as a little-endian word of 8 bytes at each byte (8 zeros after the end)
    and each one's size: [b"ab", b"c"] -> ([0x636261, 0x6362, 0x63, 0], [2, 1])."""
    text = b"".join([*encoded, bytes(8)])  # one copy
    words = np.ndarray((len(text) - 7,), "<u8", text, strides=(1,))
    return words, np.fromiter(map(len, encoded), np.int64, len(encoded))


def figures_option(text_bytes):
    """tokenize_documents' `figures` for a process comparing that many bytes of text: "compiled"
    (formats/compiled.py's loop, where numba's import pays), else True: 10**6 -> True."""
    return "compiled" if text_bytes >= COMPILED_MIN_BYTES else True


def compared(tokens, ids, counts, encoded):
    """(decodes_to, document_sums of the ids' lengths) of a batch, in the compiled loop if any."""
    if tokens.kernel is None:
        return tokens.decodes_to(ids, counts, encoded), document_sums(tokens.lengths[ids], counts)
    return tokens.kernel(ids, counts, *batch_text(encoded), *tokens.words, tokens.lengths)


@functools.lru_cache(maxsize=4)
def token_words(encoding):
    """Each id's bytes as little-endian words of 8 (decodes_to), zeros after its last byte:
    (each id's byte count, its first word, all the words, where each id's words start)."""
    pieces = token_pieces(encoding).tolist()
    sizes = np.fromiter(map(len, pieces), np.int64, len(pieces))
    words = np.frombuffer(b"".join(piece + bytes(-len(piece) % 8) for piece in pieces), "<u8")
    counts = -(-sizes // 8)
    starts = np.cumsum(counts) - counts
    firsts = np.append(words, np.uint64(0))[np.where(counts, starts, -1)]  # 0: an id of no byte
    return sizes, firsts, words, starts


def joined(documents):
    """A batch of documents' ids as one array, and each one's count: [[5, 6], [7]] -> ([5, 6, 7],
    [2, 1]). Arrays keep their type (uint16 ids are not copied to int64: a quarter of the reads)."""
    arrays = [
        ids if isinstance(ids, np.ndarray) else np.asarray(ids, np.int64) for ids in documents
    ]
    counts = np.fromiter(map(len, arrays), np.int64, len(arrays))
    return (np.concatenate(arrays) if arrays else np.zeros(0, np.int64)), counts


def document_sums(values, counts):
    """The sum of each document's values, from the values of a batch in order and each
    document's count of them: ([4, 2, 3], [2, 0, 1]) -> [6, 0, 3]."""
    totals = np.concatenate([[0], np.cumsum(values)])
    return np.diff(totals[np.concatenate([[0], np.cumsum(counts)])])


def document_ids(arrays, bos_id):
    """Each document's ids after its BOS, from a split's shards in order (a document may
    straddle two): [[1, 5, 6, 1], [7]] with BOS 1 -> [5, 6], [7]."""
    return (ids for _, ids in _documents_after((("val", ids) for ids in arrays), bos_id))


def written_documents(parts, eot_id, eot):
    """(split, ids) of each document, its end-of-text left out, from the (split, ids) files in
    order, by where the end-of-text sits (eot). "first" (llm.c's; a document is its end-of-text's
    split's): [("val", [9, 5, 9, 6]), ("train", [7, 9, 8])] -> ("val", [5]), ("val", [6, 7]),
    ("train", [8]); "last": [("val", [5, 6, 9, 7, 9])] -> [5, 6], [7]; None: a split is a text."""
    chunks = ((split, a[i : i + CHUNK]) for split, a in parts for i in range(0, len(a), CHUNK))
    if eot == "first":
        yield from _documents_after(chunks, eot_id)
        return
    for split, group in itertools.groupby(chunks, key=lambda part: part[0]):
        if eot is None:  # the Shakespeare lessons': a split of one text, small
            yield split, np.concatenate([np.asarray(chunk, dtype=np.int64) for _, chunk in group])
            continue
        pieces = _documents_after(itertools.chain([(split, [eot_id])], group), eot_id)
        previous = next(pieces)
        for piece in pieces:  # the end-of-text before the stream starts the first document
            yield previous
            previous = piece
        if len(previous[1]):
            raise PrepareError(f"the {split} ids do not end with the end-of-text id {eot_id}")


def _documents_after(chunks, eot_id):
    """(split, ids) of each document after its end-of-text, from (split, ids) chunks in order."""
    current, tag = None, None
    for split, ids in chunks:
        ids = np.asarray(ids, dtype=np.int64)
        starts = np.flatnonzero(ids == eot_id)
        if current is None and len(ids) and (not len(starts) or starts[0]):
            raise PrepareError(f"the {split} ids do not start with the end-of-text id {eot_id}")
        if current is not None:
            current.append(ids[: starts[0] if len(starts) else len(ids)])
        for i, start in enumerate(starts):
            if current is not None:
                yield tag, np.concatenate(current)
            stop = starts[i + 1] if i + 1 < len(starts) else len(ids)
            current, tag = [ids[start + 1 : stop]], split
    if current is not None:
        yield tag, np.concatenate(current)


def document_figures(text, ids, tokenizer):
    """A document's FIGURES from its text and its ids after the BOS: "a  b", the ids of "a b" ->
    (1, 4, 3, 3, 1, 1, 0): 1 document of 4 bytes, 3 counted and 3 decoded, changed, 1 byte lost."""
    size, decoded = len(text.encode()), tokenizer.decode(ids)
    decoded_size, changed = len(decoded.encode()), decoded != text
    lost, gained = max(0, size - decoded_size) * changed, max(0, decoded_size - size) * changed
    return 1, size, tokenizer.own_bytes(ids), decoded_size, int(changed), lost, gained


def add_figures(figures, text, ids, tokenizer):
    """Add a document (its text, its ids after the BOS) to a split's figures (document_figures)."""
    for name, count in zip(FIGURES, document_figures(text, ids, tokenizer), strict=True):
        figures[name] += count


def batch_figures(texts, documents, tokens):
    """document_figures of each text (no lone surrogate) and its ids of a batch, a row each:
    ["a  b"], [the ids of "a b"] -> [[1, 4, 3, 3, 1, 1, 0]]; those whose ids decode to their text
    (decodes_to: every one, for a lossless tokenizer) counted together in numpy."""
    rows = np.zeros((len(texts), len(FIGURES)), np.int64)
    same = np.zeros(len(texts), bool)
    if tokens.chars is None:
        encoded = [text.encode() for text in texts]
        sizes = np.fromiter(map(len, encoded), np.int64, len(encoded))
        own = np.zeros_like(sizes)  # each document's bytes by the tokenizer's own count
        for start in range(0, len(texts), COMPARED_AT_ONCE):
            part = slice(start, start + COMPARED_AT_ONCE)
            ids, counts = joined(documents[part])
            same[part], own[part] = compared(tokens, ids, counts, encoded[part])
        zero = np.zeros_like(sizes)
        columns = [np.ones_like(sizes), sizes, own, sizes, zero, zero, zero]
        rows[same] = np.stack(columns, axis=1)[same]
    for i in np.flatnonzero(~same):
        rows[i] = document_figures(texts[i], documents[i], tokens)
    return rows


def counted_figures(tokenized):
    """write_meta's `counted` ({split: its byte figures}, each val document's text bytes) from
    {split: its prepare_common.tokenize_dataset Dataset}, each in the order written."""
    return figure_totals({split: figure_rows(documents) for split, documents in tokenized.items()})


def shard_figures(tokenized, shard_size):
    """counted_figures of one stream of documents cut into llm.c's shards of shard_size tokens
    (val_documents: its first documents are val)."""
    rows = figure_rows(tokenized)
    count = val_documents(tokenized.with_format("arrow")["len"].to_numpy(), shard_size)
    return figure_totals({"val": rows[:count], "train": rows[count:]})


def figure_rows(tokenized):
    """tokenize_dataset's "figures" column as one array, a row (FIGURES) a document."""
    column = tokenized.with_format("arrow")["figures"]  # a pyarrow ChunkedArray
    return column.combine_chunks().flatten().to_numpy().reshape(-1, len(FIGURES))


def figure_totals(rows):
    """({split: the sums of its rows of figures}, val's rows' text_bytes): write_meta's counted."""
    totals = {split: figure_sums(part) for split, part in rows.items()}
    return totals, rows["val"][:, FIGURES.index("text_bytes")]


def figure_sums(rows):
    """A split's figures, its rows' sums: [[1, 4, ...], [1, 2, ...]] -> {"documents": 2, ...}."""
    return {name: int(n) for name, n in zip(FIGURES, rows.sum(axis=0), strict=True)}


def text_figures(batches, tokens):
    """A split's figures (FIGURES) of batches of texts a trainer encodes as it reads them
    (nanochat's: encode_ordinary): [["a b"], ["c"]] -> {"documents": 2, "text_bytes": 4, ...}."""
    figures = Counter(dict.fromkeys(FIGURES, 0))
    # a document at a time: tiktoken's encode_ordinary_batch starts a thread for each text
    encode = fast_encoding(tokens.encoding).encode_ordinary
    for batch in batches:
        figures.update(figure_sums(batch_figures(batch, [encode(t) for t in batch], tokens)))
    return dict(figures)


def document_shares(ids, size, lengths, eot):
    """A document's stretch of the sidecar: its tokens' covered_shares within the text's `size`
    and its end-of-text's 0 where it sits (the whole size if it has no token): ids [5, 6] of
    lengths 2, 3, size 5, "last" -> [2, 3, 0]."""
    ends = np.minimum(np.cumsum(lengths[ids]), size)
    shares = covered_shares(ends, size)
    separator = [0 if len(ids) else size]
    if eot is None:
        if not len(ids) and size:
            raise PrepareError(f"a text of {size:,} bytes has no token to give its bytes to")
        return shares
    return np.concatenate([separator, shares] if eot == "first" else [shares, separator])


def written_files(folder, meta):
    """(split, path) of each ids file in the order written: train.bin, val.bin; or the shards."""
    if "shards" not in meta:
        return [(split, Path(folder) / bin_name(split)) for split in meta["splits"]]
    return [(s["split"], Path(folder) / s["file"]) for s in meta["shards"]]


def written_parts(folder, meta):
    """(split, ids) of each of written_files, memory-mapped as it is reached: a map holds its
    file open, and a folder's shards may outnumber the files a process may open."""
    dtype = np.dtype(meta["dtype"])
    for split, path in written_files(folder, meta):
        if "shards" in meta:
            yield split, read_shard(path, meta["format"], dtype)
        else:
            yield split, read_ids(path, dtype)


def write_val_bytes(out, meta, tokenizer, texts):
    """Each split's figures from `texts` ({split: its one text}: the Shakespeare lessons') and the
    ids in `out`, and val's sidecar beside val.bin -> meta.json's {"bytes", "val_bytes"}."""
    tokens, parts = RecordTokens(tokenizer), written_parts(out, meta)
    written = dict(written_documents(parts, tokenizer.get("eot_id"), None))
    figures, shares = {split: dict.fromkeys(FIGURES, 0) for split in meta["splits"]}, None
    for split, counts in figures.items():
        text, ids = without_lone_surrogates(texts[split]), written.get(split, np.zeros(0, int))
        add_figures(counts, text, ids, tokens)
        if split == "val":
            shares = document_shares(ids, len(text.encode()), tokens.lengths, None)
    return {
        "bytes": figures,
        "val_bytes": write_sidecars(out, meta, None, checked_shares(shares, "val")),
    }


def stream_shares(ids, sizes, lengths, eot_id, eot):
    """document_shares of each whole document of `ids` (its end-of-text where `eot` says), its
    UTF-8 size in `sizes`, joined: each token's byte length where a document's add up to its
    size (every one, where the tokenizer is lossless), else its document_shares: [9, 5, 9, 6],
    sizes [2, 4], 5 and 6 of 2 and 3 bytes, "first" -> [0, 2, 0, 4] (6's last token takes 1)."""
    ends = ids == eot_id
    if eot == "first":
        starts = np.flatnonzero(ends)
        if len(ids) and (not len(starts) or starts[0]):
            raise PrepareError(f"the val ids do not start with the end-of-text id {eot_id}")
    else:
        if len(ids) and not ends[-1]:
            raise PrepareError(f"the val ids do not end with the end-of-text id {eot_id}")
        starts = np.flatnonzero(np.concatenate([[True], ends[:-1]])) if len(ids) else ends
    if len(starts) != len(sizes):
        raise PrepareError("the val ids written and the documents differ in number")
    shares = lengths[ids]
    stops = np.append(starts[1:], len(ids))  # where each document ends
    sums = np.add.reduceat(shares, starts, dtype=np.int64) if len(starts) else shares
    for d in np.flatnonzero(sums != sizes):  # a document its ids do not decode to
        own = slice(starts[d] + 1, stops[d]) if eot == "first" else slice(starts[d], stops[d] - 1)
        shares[starts[d] : stops[d]] = document_shares(ids[own], sizes[d], lengths, eot)
    return shares


def straddled_tail(out, meta, eot_id):
    """The ids of val's last document in train's shards (end-of-text "first": val's come first):
    train's up to its first end-of-text, each file's copied and its map let go (written_parts)."""
    tail = []
    for ids in (ids for split, ids in written_parts(out, meta) if split != "val"):
        at = np.flatnonzero(ids == eot_id)
        tail.append(np.array(ids[: at[0] if len(at) else len(ids)]))
        if len(at):
            break
    return np.concatenate(tail) if tail else np.zeros(0, meta["dtype"])


def val_part_only(figures, text_bytes, own_bytes):
    """Each split's figures, the bytes of val's last document that are in train's shards (their
    text's, their tokens' own count) moved to train: val's bytes are those of its ids in val."""
    moved = {"text_bytes": text_bytes, "tokenizer_bytes": own_bytes, "decoded_bytes": own_bytes}
    return {
        split: {name: n + sign * int(moved.get(name, 0)) for name, n in figures[split].items()}
        for split, sign in (("val", -1), ("train", 1))
    }


def write_counted(out, meta, tokenizer, counted, eot_first=False):
    """write_val_bytes's record of documents counted as they were encoded: `counted` is ({split:
    figures}, each val document's UTF-8 size in order); val's shares from its ids and those."""
    (figures, val_sizes), eot = counted, "first" if eot_first else "last"
    lengths, eot_id = record_byte_lengths(tokenizer), tokenizer["eot_id"]  # int32: gathers fast
    val = [np.array(ids) for split, ids in written_parts(out, meta) if split == "val"]
    tail = straddled_tail(out, meta, eot_id) if eot_first else np.zeros(0, meta["dtype"])
    ids = np.concatenate([*val, tail])
    try:
        shares = stream_shares(ids, np.asarray(val_sizes, np.int64), lengths, eot_id, eot)
    except PrepareError as exc:
        raise PrepareError(f"{out}: {exc}") from None
    record = write_sidecars(out, meta, eot, checked_shares(shares, "val"))
    if len(tail):
        figures = val_part_only(figures, shares[-len(tail) :].sum(), lengths[tail].sum())
    return {"bytes": {split: figures[split] for split in meta["splits"]}, "val_bytes": record}


def write_sidecars(out, meta, eot, shares):
    """val's shares cut into files parallel to val.bin or to each val shard, in its format ->
    meta.json's "val_bytes": {"dtype", "eot", "files": [{"file", "ids", "tokens", "sha256"}]}."""
    if "shards" in meta:
        parallel = [(s["file"], s["tokens"]) for s in meta["shards"] if s["split"] == "val"]
    else:
        parallel = [(bin_name("val"), meta["splits"]["val"]["tokens"])]
    if len(shares) < sum(count for _, count in parallel):
        raise PrepareError(f"{out}: val's shares are {len(shares):,}, fewer than its ids")
    files, start = [], 0
    for ids_file, count in parallel:
        name, part = val_bytes_name(ids_file), shares[start : start + count]
        start += count
        if "shards" in meta:
            write_shard(Path(out) / name, part, meta["format"])
        else:
            with atomic_path(Path(out) / name) as tmp:  # raw, as val.bin: np.fromfile reads it
                tmp.write_bytes(part.astype("<u2").tobytes())
        record = {"file": name, "ids": ids_file, "tokens": len(part)}
        files.append({**record, "sha256": sha256_file(Path(out) / name)})
    return {"dtype": np.dtype(SHARE_DTYPE).name, "eot": eot, "files": files}
