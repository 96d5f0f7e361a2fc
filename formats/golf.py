"""parameter-golf's tokenizers (SentencePiece BPE with its options, the pure-byte byte260, our
byte-level BPE), how each counts bytes and each token's share of a text, and its manifest.json.

    tokenizer = SentencePieceTokens("tokenizers/fineweb_1024_bpe.model")
    ids, shares = tokenizer.encode_batch(["Hello  world"])[0]  # shares.sum() == 12, the UTF-8 bytes
    tokenizer.own_bytes(ids)  # 11: what train_gpt.py's eval_val divides by ("Hello world")

A token's share is how far it moves the end of the text covered so far: bytes normalisation drops
go to the token after them (at a document's end, to its last), so a document's shares sum to its
UTF-8 length.
"""

import json
from pathlib import Path

import numpy as np

from formats.nanochat import token_byte_lengths
from formats.schema import GOLF_DOCS
from formats.val_bytes import covered_shares
from safety import PrepareError
from safety.commit import STAGING_NAME
from safety.files import load_json
from safety.text import plural, shortened

# build_sentencepiece_tokenizer's arguments to SentencePieceTrainer.train, as they are
SENTENCEPIECE_OPTIONS = {
    "model_type": "bpe",
    "character_coverage": 0.999,
    "byte_fallback": True,
    "split_digits": True,
    "normalization_rule_name": "nmt_nfkc",
    "add_dummy_prefix": False,
    "pad_id": 0,
    "bos_id": 1,
    "eos_id": 2,
    "unk_id": 3,
    "hard_vocab_limit": False,
}
# SentencePieceTrainer's default max_sentence_length, which parameter-golf keeps: its trainer
# skips a longer text (in UTF-8 bytes), unseen at minloglevel=2
MAX_SENTENCE_BYTES = 4192
# PureByteTokenizer: pad, bos, eos, unk, then byte b at id 4 + b
BYTE260 = {"pad_id": 0, "bos_id": 1, "eos_id": 2, "unk_id": 3, "byte_offset": 4, "byte_count": 256}
BYTE260_FILE = "fineweb_pure_byte_260.json"
DOCS = GOLF_DOCS  # the documents, in the folder: {"text": ...} a line
SIDECAR = "docs_selected.source_manifest.json"  # the hub's: num_docs, docs_val, docs_sha256, ...


def sidecar_record(data, path):
    """docs_selected.source_manifest.json's bytes as a dict, its fields of their kind, else one
    line naming `path`: b'{"docs_val": 50000}' -> {"docs_val": 50000}."""
    record = load_json(data, path)
    if not isinstance(record, dict):
        raise PrepareError(f"{path} is not a JSON object; fix or remove it")
    kinds = {
        "docs_val": (lambda v: type(v) is int and v > 0, "a positive whole number"),
        "num_docs": (lambda v: type(v) is int and v >= 0, "a whole number"),
        "docs_sha256": (lambda v: isinstance(v, str), "a string"),
    }
    for key, (check, expected) in kinds.items():
        if key in record and not check(record[key]):
            raise PrepareError(
                f"{path}: {key} is {shortened(json.dumps(record[key]))}, expected {expected}; "
                "fix or remove it"
            )
    return record


def unwritten(prefix, why):
    """The error of PREFIX.model and PREFIX.vocab not written whole, naming the folder meant."""
    folder = Path(prefix).parent  # a hidden one: a temporary folder in the one meant
    folder = folder.parent if folder.name.startswith(".") else folder
    folder = Path(*(part for part in folder.parts if not STAGING_NAME.match(part)))  # a lesson's
    return PrepareError(
        f"cannot write {Path(prefix).name}.model and .vocab in {folder} ({why}): is the disk "
        "full? free some space, or give a folder with room"
    )


def train_sentencepiece(texts, vocab_size, prefix, source):
    """Train parameter-golf's SentencePiece model on `texts` into PREFIX.model and PREFIX.vocab;
    what its trainer refuses is a PrepareError naming `source`."""
    spm = sentencepiece_module()
    raised = []  # what reading the texts raised: the trainer hands it on as a RuntimeError
    given = too_long = 0  # the texts, and those over MAX_SENTENCE_BYTES, which it skips

    def sentences():
        nonlocal given, too_long
        try:
            for text in texts:  # as its _iter_sentencepiece_text: NUL as a space, stripped
                text = text.replace("\x00", " ").strip()
                if not text:
                    continue
                given += 1
                too_long += len(text.encode()) > MAX_SENTENCE_BYTES
                yield text
        except BaseException as exc:  # a bad document's PrepareError, Ctrl-C: kept as it is
            raised.append(exc)
            raise

    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=sentences(),
            model_prefix=str(prefix),
            vocab_size=vocab_size,
            minloglevel=2,  # its log to stderr: the lesson prints its own lines
            **SENTENCEPIECE_OPTIONS,
        )
    except RuntimeError as exc:  # its trainer's own checks: one line of its message
        if raised:
            raise raised[0] from None
        detail = str(exc).strip().splitlines()[-1]
        if "output->" in detail:  # its writer of PREFIX.vocab failed
            raise unwritten(prefix, f"sentencepiece: {detail}") from None
        if too_long and too_long == given:
            raise PrepareError(
                f"{source}: sentencepiece had nothing to train on, as it skips each text longer "
                f"than {MAX_SENTENCE_BYTES:,} bytes (its max_sentence_length) and every "
                f"text given is; give shorter documents, or lines of a .txt"
            ) from None
        raise PrepareError(
            f"{source}: sentencepiece refused to train {plural(vocab_size, 'piece')} "
            f"({detail}); give text of one line or more, and a "
            f"vocabulary of 260 pieces (its bytes and specials) plus one per character of the text"
        ) from None
    try:  # its writer of PREFIX.model may fail unseen (a full disk): the files read back
        pieces = spm.SentencePieceProcessor(model_file=f"{prefix}.model").vocab_size()
        lines = Path(f"{prefix}.vocab").read_bytes().count(b"\n")
    except (RuntimeError, OSError):
        pieces = lines = None
    if pieces is None or lines != pieces:
        raise unwritten(prefix, "they do not read back whole")
    if too_long:  # as parameter-golf's own script trains: said, since its log is hidden
        print(
            f"{source}: sentencepiece skipped {too_long:,} of {given:,} texts, each longer than "
            f"{MAX_SENTENCE_BYTES:,} bytes (its max_sentence_length, parameter-golf's setting)"
        )


def sentencepiece_module():
    """The sentencepiece package, or one line saying how to install it."""
    try:
        import sentencepiece
    except ImportError:
        raise PrepareError(
            "SentencePiece tokenizers need the sentencepiece package: pip install -e '.[golf]'"
        ) from None
    return sentencepiece


def byte260_json():
    """PureByteTokenizer.save_json's bytes: the file fineweb_pure_byte_260.json."""
    payload = {"tokenizer_type": "pure_byte", "config": BYTE260, "vocab_size": 260}
    return (json.dumps(payload, indent=2, sort_keys=True) + "\n").encode()


class SentencePieceTokens:
    """A SentencePiece model as parameter-golf encodes and counts with it."""

    kind = "sentencepiece_bpe"

    def __init__(self, model_path):
        module = sentencepiece_module()
        try:
            self.processor = module.SentencePieceProcessor(model_file=str(model_path))
        except (RuntimeError, OSError):  # its parser's "could not parse ModelProto"
            raise PrepareError(
                f"{model_path} is not a SentencePiece model; prepare the folder again"
            ) from None
        sp = self.processor
        self.vocab_size, self.bos_id, self.eos_id = sp.vocab_size(), sp.bos_id(), sp.eos_id()
        # train_gpt.py's build_sentencepiece_luts: each id's bytes without its leading "▁",
        # whether it has one, whether it is a boundary (control, unknown or unused)
        size = sp.vocab_size()
        base, space, boundary = np.zeros(size, np.int64), np.zeros(size, bool), np.ones(size, bool)
        for token_id in range(size):
            if sp.is_control(token_id) or sp.is_unknown(token_id) or sp.is_unused(token_id):
                continue
            boundary[token_id] = False
            piece = sp.id_to_piece(token_id)  # a byte-fallback id's, "<0x41>", counts 1
            space[token_id] = piece.startswith("▁")
            base[token_id] = 1 if sp.is_byte(token_id) else len(piece.removeprefix("▁").encode())
        self.base, self.leading_space, self.boundary = base, space, boundary

    def encode_batch(self, texts):
        """[(ids, shares)] of each text, shares from SentencePiece's byte offsets in the text."""
        protos = self.processor.encode(texts, return_type="proto", num_threads=2)
        pairs = []
        for text, proto in zip(texts, protos):
            ids = np.array([piece.id for piece in proto.pieces], dtype=np.int64)
            ends = np.array([piece.end for piece in proto.pieces], dtype=np.int64)
            pairs.append((ids, covered_shares(ends, len(text.encode()))))
        return pairs

    def decode(self, ids):
        return self.processor.decode([int(i) for i in ids])

    def own_bytes(self, ids):
        """train_gpt.py's eval_val count for a document's ids after its BOS (a boundary id):
        base[t] + (leading_space[t] and not boundary[prev])."""
        ids = np.asarray(ids, dtype=np.int64)
        previous = np.concatenate([[self.bos_id], ids[:-1]]).astype(np.int64)
        spaces = self.leading_space[ids] & ~self.boundary[previous]
        return int(self.base[ids].sum() + spaces.sum())


class ByteTokens:
    """byte260: each UTF-8 byte b of the text is id 4 + b; one byte a token."""

    kind = "byte"
    vocab_size, bos_id, eos_id = 260, BYTE260["bos_id"], BYTE260["eos_id"]

    def encode_batch(self, texts):
        data = [np.frombuffer(t.encode("utf-8", errors="replace"), np.uint8) for t in texts]
        return [
            (d.astype(np.int64) + BYTE260["byte_offset"], np.ones(len(d), np.int64)) for d in data
        ]

    def decode(self, ids):
        data = np.asarray(ids, dtype=np.int64)
        data = data[data >= BYTE260["byte_offset"]] - BYTE260["byte_offset"]
        return data.astype(np.uint8).tobytes().decode("utf-8", errors="replace")

    def own_bytes(self, ids):
        return int((np.asarray(ids) >= BYTE260["byte_offset"]).sum())


class BpeTokens:
    """A byte-level BPE of train_tokenizer.py: its <|endoftext|> as BOS, each token's bytes."""

    kind = "bpe"

    def __init__(self, encoding, eot_id):
        self.encoding, self.lengths = encoding, token_byte_lengths(encoding)
        self.vocab_size, self.bos_id, self.eos_id = encoding.n_vocab, eot_id, eot_id

    def encode_batch(self, texts):
        batch = self.encoding.encode_ordinary_batch(texts, num_threads=2)
        return [(ids, self.lengths[ids]) for ids in (np.array(i, dtype=np.int64) for i in batch)]

    def decode(self, ids):
        return self.encoding.decode([int(i) for i in ids])

    def own_bytes(self, ids):
        return int(self.lengths[np.asarray(ids, dtype=np.int64)].sum())


def manifest(variants, num_docs, val_docs, shard_size, sidecar, source):
    """manifest.json as download_hf_docs_and_tokenize.py writes it, of the lesson's variants
    ({"spec", "tokens", "files", "dataset": meta.json's record}) and its source."""
    repo, root = source["remote"]
    docs_meta = {
        "remote_repo_id": repo,
        "remote_root": root,
        "num_docs": num_docs,
        "docs_sha256": (sidecar or {}).get("docs_sha256"),
        "source_manifest": SIDECAR if sidecar else None,
    }
    if sidecar is not None:
        docs_meta["source_sidecar"] = sidecar
    manifest = {
        "version": "10B",
        "num_docs": num_docs,
        "num_val_docs": val_docs,
        "shuffle_seed": (sidecar or {}).get("shuffle_seed"),
        "shard_size": shard_size,
        "append_eos": False,
        "docs_jsonl": DOCS,
        "docs_meta": docs_meta,
        "tokenizer_specs": [variant["spec"] for variant in variants],
        "tokenizers": [],
        "datasets": [],
    }
    for variant in variants:
        tokens, spec, name = variant["tokens"], variant["spec"], variant["dataset"]["name"]
        common = {
            "vocab_size": tokens.vocab_size,
            "bos_id": tokens.bos_id,
            "eos_id": tokens.eos_id,
            "recommended_bigram_vocab_size": (tokens.vocab_size + 127) // 128 * 128 * 5,
        }
        paths = dict(zip(("model_path", "vocab_path"), variant["files"]))
        if tokens.kind != "sentencepiece_bpe":
            paths = {"path": variant["files"][0], "pad_id": 0, "unk_id": 3}
        manifest["tokenizers"].append(
            {"name": spec["name"], "kind": tokens.kind, **common, "source_spec": spec, **paths}
        )
        shards, splits = variant["dataset"]["shards"], ("val", "train")  # export_shards' stats:
        files = {s: sum(x["split"] == s for x in shards) for s in splits}
        count = {s: sum(x["tokens"] for x in shards if x["split"] == s) for s in splits}
        stats = {"docs_total": num_docs, "docs_val": val_docs, "docs_train": num_docs - val_docs}
        stats.update(files_total=len(shards), files_val=files["val"], files_train=files["train"])
        stats.update(tokens_total=sum(count.values()), tokens_val=count["val"])
        stats.update(tokens_train=count["train"])
        folder = f"datasets/{name}"
        manifest["datasets"].append(
            {
                "name": name,
                "tokenizer_name": spec["name"],
                "tokenizer_kind": tokens.kind,
                "path": folder,
                "train_glob": f"{folder}/fineweb_train_*.bin",
                "val_glob": f"{folder}/fineweb_val_*.bin",
                **common,
                "stats": stats,
            }
        )
    return manifest
