"""What val shares with train, and what train repeats, with train streamed past val's hashes.

    report = overlap_report(val, train_chunks, ngram=13, against={"quiz.txt": items})

val and each benchmark file are held as hashes; train comes as (tokens, offsets) chunks of whole
documents, each compared and forgotten but for its documents' hashes and lengths, so memory stays
flat as train grows. Documents are compared, and tokens counted, without their boundary token.
"""

import numpy as np

from . import fast, simple
from .drop import exact_keep


def stream_documents(blocks, boundary_id, boundary="last"):
    """Cut a stream of token blocks into (tokens, offsets) chunks of whole documents, boundary
    tokens removed: one per block that completes a document, and the rest at the end.

    boundary "last" (nanoGPT's EOT after each document): [5, 6, 0, 7, 0, 8], 0 -> documents
    [5, 6], [7], [8] (a tail without its boundary is a document). "first" (llm.c's EOT, nanochat's
    BOS before each): [5, 0, 6, 7, 0, 8] -> [5], [6, 7], [8] (a head before the first boundary is
    a document, the end of one cut off). Two boundaries in a row hold an empty document.
    """
    if boundary not in ("first", "last"):
        raise ValueError(f"boundary must be 'first' or 'last', not {boundary!r}")
    pending = np.zeros(0, np.int64)
    opened = False  # "first": a boundary has opened the pending document
    for block in blocks:
        data = np.concatenate([pending, np.asarray(block, np.int64)])
        cuts = np.flatnonzero(data == boundary_id)
        if len(cuts) == 0:
            pending = data
            continue
        ends = cuts  # every boundary ends the segment before it
        begins = np.concatenate([[0], cuts[:-1] + 1])
        if boundary == "first" and not opened and cuts[0] == 0:
            begins, ends = begins[1:], ends[1:]  # nothing came before the stream's first BOS
        documents = data[: cuts[-1]]
        pending, opened = data[cuts[-1] + 1 :], True
        yield documents[documents != boundary_id], fast.offsets_of(ends - begins)
    if len(pending) or (boundary == "first" and opened):
        yield pending, np.array([0, len(pending)], np.int64)


def documents_of(lists):
    """(tokens, offsets) of a list of documents: [[5, 6], [], [7]] -> ([5, 6, 7], [0, 2, 2, 3])."""
    tokens = np.concatenate([np.asarray(ids, np.int64) for ids in lists]) if lists else []
    return np.asarray(tokens, np.int64), fast.offsets_of([len(ids) for ids in lists])


class NgramProbe:
    """The n-grams of some documents (val, or a benchmark's items), to be looked for in train."""

    def __init__(self, tokens, offsets, n):
        self.num_documents, self.num_tokens, self.n = len(offsets) - 1, len(tokens), n
        hashes, self.positions, self.owners = fast.ngram_hashes(tokens, offsets, n)
        unique, self.which = np.unique(hashes, return_inverse=True)
        self.positions_of = fast.lookup(unique)
        self.found = np.zeros(len(unique), bool)  # which n-grams train holds
        self.train_documents = 0  # the train documents holding at least one of them

    def look_in(self, hashes, owners):
        """Mark the n-grams found among a train chunk's (hashes, owners); count its documents."""
        where = self.positions_of(hashes)
        hit = where >= 0
        self.found[where[hit]] = True
        self.train_documents += len(np.unique(owners[hit]))

    def tokens_covered(self):
        """How many tokens lie in an n-gram train holds (simple.shared_ngram_tokens, summed)."""
        return fast.covered_tokens(self.positions[self.found[self.which]], self.num_tokens, self.n)


class ValIndex:
    """val's documents held as hashes: exact, MinHash band keys, n-grams; and what train matched."""

    def __init__(self, tokens, offsets, ngram=simple.NGRAM, bands=simple.BANDS, rows=simple.ROWS):
        self.num_documents, self.num_tokens = len(offsets) - 1, len(tokens)
        self.bands, self.rows = bands, rows
        self.hashes = fast.document_hashes(tokens, offsets)
        signatures = fast.minhash_signatures(tokens, offsets, simple.SHINGLE, bands * rows)
        keys = fast.band_keys(signatures, bands, rows)
        self.band_keys = [np.unique(column) for column in keys.T]  # each band's distinct keys
        self.keys_found = [np.zeros(len(column), bool) for column in self.band_keys]
        self.key_of = [np.searchsorted(u, column) for u, column in zip(self.band_keys, keys.T)]
        self.ngrams = NgramProbe(tokens, offsets, ngram)

    def match_near(self, signatures):
        """Mark the band keys of val that a train chunk's documents (their `signatures`) hold."""
        keys = fast.band_keys(signatures, self.bands, self.rows)
        for distinct, found, column in zip(self.band_keys, self.keys_found, keys.T):
            if len(distinct):
                where = np.minimum(np.searchsorted(distinct, column), len(distinct) - 1)
                found[where[distinct[where] == column]] = True

    @property
    def near_found(self):
        """Which val documents share a band key with some train document seen so far."""
        near = np.zeros(self.num_documents, bool)
        for found, key_of in zip(self.keys_found, self.key_of):
            near |= found[key_of]
        return near


def hash_documents(chunks, visit=None):
    """(hashes, lengths) of a stream of chunks' documents; visit(tokens, offsets) each chunk."""
    hashes, lengths = [np.zeros(0, np.uint64)], [np.zeros(0, np.uint32)]
    for tokens, offsets in chunks:
        hashes.append(fast.document_hashes(tokens, offsets))
        lengths.append(np.diff(offsets).astype(np.uint32))
        if visit is not None:
            visit(tokens, offsets)
    return np.concatenate(hashes), np.concatenate(lengths)


def repeated_documents(hashes, lengths):
    """(documents, tokens) of repeats: [7, 8, 7, 7], [3, 1, 3, 3] -> (2, 6)."""
    repeated = ~exact_keep(hashes)
    return int(repeated.sum()), int(lengths[repeated].sum(dtype=np.int64))


def exact_report(val_chunks, train_chunks):
    """overlap_report's figures that need only a hash per document (what the lessons print).

    val [[1, 2]], train [[1, 2], [3], [3]] -> val_documents_in_train {"documents": 1, "fraction":
    1.0}, train_repeated_documents {"documents": 1, "tokens": 1, "token_fraction": 1/4}
    """
    return _exact_figures(hash_documents(val_chunks)[0], *hash_documents(train_chunks))


def _exact_figures(val_hashes, hashes, lengths):
    """exact_report's figures, from val's document hashes and train's (hashes, lengths)."""
    repeats, repeated_tokens = repeated_documents(hashes, lengths)
    in_train = int(np.isin(val_hashes, hashes).sum())
    return {
        "documents": {"train": len(hashes), "val": len(val_hashes)},
        "val_documents_in_train": {
            "documents": in_train,
            "fraction": _share(in_train, len(val_hashes)),
        },
        "train_repeated_documents": {
            "documents": repeats,
            "tokens": repeated_tokens,
            "token_fraction": _share(repeated_tokens, int(lengths.sum(dtype=np.int64))),
        },
    }


def overlap_report(val, train_chunks, ngram=simple.NGRAM, against=None):
    """What val (tokens, offsets) shares with train (chunks) and what train repeats, as a dict;
    `against`: {name: (tokens, offsets) of benchmark items}.

    val [[1..20], [30..50]], train [[1..20], [1..20], [60..80]] -> documents {"train": 3, "val": 2},
    train_repeated_documents {"documents": 1, "tokens": 20, "token_fraction": 20/61},
    val_documents_in_train {"documents": 1, "fraction": 0.5}, ...
    """
    index = ValIndex(*val, ngram=ngram)
    probes = {name: NgramProbe(*items, ngram) for name, items in (against or {}).items()}

    def match(tokens, offsets):  # train's chunk against val's and the benchmarks' hashes
        num_hashes = index.bands * index.rows
        index.match_near(fast.minhash_signatures(tokens, offsets, simple.SHINGLE, num_hashes))
        gram_hashes, _, owners = fast.ngram_hashes(tokens, offsets, ngram)
        for probe in (index.ngrams, *probes.values()):
            probe.look_in(gram_hashes, owners)

    hashes, lengths = hash_documents(train_chunks, match)
    exact = _exact_figures(index.hashes, hashes, lengths)
    near = int(index.near_found.sum())
    covered = index.ngrams.tokens_covered()
    return {
        "documents": exact["documents"],
        "tokens": {"train": int(lengths.sum(dtype=np.int64)), "val": index.num_tokens},
        "train_repeated_documents": exact["train_repeated_documents"],
        "val_documents_in_train": exact["val_documents_in_train"],
        "val_near_duplicates_in_train": {
            "documents": near,
            "fraction": _share(near, index.num_documents),
            "rule": {
                "shingle_tokens": simple.SHINGLE,
                "bands": index.bands,
                "rows": index.rows,
            },
        },
        "val_tokens_in_shared_ngrams": {
            "ngram": ngram,
            "tokens": covered,
            "fraction": _share(covered, index.num_tokens),
        },
        "against": [_against_record(name, probe) for name, probe in probes.items()],
    }


def _against_record(name, probe):
    """One benchmark file's figures."""
    found = len(np.unique(probe.owners[probe.found[probe.which]]))  # items holding one
    return {
        "file": name,
        "items": probe.num_documents,
        "items_shorter_than_ngram": probe.num_documents - len(np.unique(probe.owners)),
        "items_with_ngram_in_train": found,
        "fraction": _share(found, probe.num_documents),
        "train_documents_holding_one": probe.train_documents,
    }


def _share(part, whole):
    """part / whole, 0.0 for an empty whole."""
    return part / whole if whole else 0.0
