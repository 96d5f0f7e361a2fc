"""parameter-golf's data/download_hf_docs_and_tokenize.py after its download, as the reference
for tests (not product code).

Written in our own words from the sources (openai/parameter-golf:
data/download_hf_docs_and_tokenize.py, data/tokenizer_specs.json; train_gpt.py's
load_data_shard, which reads the shards), single process, so that tests can compare our folder
with what its script writes from the same documents. Its script first copies the hub's
docs_selected.jsonl and, when the hub has one, its sidecar docs_selected.source_manifest.json
into the output folder; this starts from a folder that holds them. What its script does next,
and so what this does:

- the documents are the "text" of the jsonl's lines, in order; their number is the sidecar's
  num_docs, else the file's lines; the first num_val_docs (the argument, else the sidecar's
  docs_val, else 50,000) are val, the others train;
- a spec is one of its two built-in tokenizers (reusing a model, trainer overrides and the
  `kind`/`builder` keys are left out): dataset_suffix "byte260" is pure byte, any other spec is
  SentencePiece BPE at its vocab_size;
- byte260: each byte b of the text's UTF-8 (errors="replace") is id 4 + b; pad 0, BOS 1, EOS 2,
  unk 3; tokenizers/fineweb_pure_byte_260.json is {"tokenizer_type": "pure_byte", "config": those
  six numbers, "vocab_size": 260} as json.dumps(indent=2, sort_keys=True) and a newline;
- sp<N>: SentencePieceTrainer.train with SENTENCEPIECE_OPTIONS on a sentence iterator of the
  first tokenizer_train_docs documents (all, without it), each with NUL made a space and
  stripped, the empty ones left out; it writes tokenizers/fineweb_{N}_bpe.model and .vocab; the
  spec records tokenizer_train_docs when it is given; vocab_size, BOS and EOS are the model's;
- each tokenizer's datasets/fineweb10B_{suffix}/: every document as its BOS then its ids, no
  EOS; val's documents, then train's, each split's stream cut every chunk_tokens tokens into
  fineweb_{split}_{index:06d}.bin, numbered from 0 in each split, the last one partial, never an
  empty one; a shard is 256 little-endian int32 (20240520, 1, its number of tokens, then 0) and
  its ids as uint16;
- tokenizer_config.export.json is {"tokenizers": the specs as used}, manifest.json the run's
  record (`manifest`), both as json.dumps(indent=2) and a newline, every path in them relative
  to the folder.

    write_golf_folder(out_dir, specs, num_val_docs=None, chunk_tokens=10**8,
                      tokenizer_train_docs=None)
"""

import json
from pathlib import Path

import numpy as np

COUNTS = ("docs", "files", "tokens")  # of its stats, each in all, in val, in train
DOCS, SIDECAR = "docs_selected.jsonl", "docs_selected.source_manifest.json"
REPO_ID, REMOTE_ROOT = "willdepueoai/parameter-golf", "datasets"  # its defaults
BYTE260 = {"pad_id": 0, "bos_id": 1, "eos_id": 2, "unk_id": 3, "byte_offset": 4, "byte_count": 256}
SENTENCEPIECE_OPTIONS = {  # its build_sentencepiece_tokenizer's, in its order
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


def texts(folder):
    with open(Path(folder) / DOCS, encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)["text"]


def byte260(folder):
    """The pure-byte tokenizer: its file written -> (its manifest entry's paths, vocab size,
    BOS, EOS, encode(list of texts) -> list of ids)."""
    path = "tokenizers/fineweb_pure_byte_260.json"
    payload = {"tokenizer_type": "pure_byte", "config": BYTE260, "vocab_size": 260}
    (folder / path).write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")

    def encode(batch):
        return [
            4 + np.frombuffer(t.encode("utf-8", errors="replace"), np.uint8).astype(int)
            for t in batch
        ]

    return {"path": path, "pad_id": 0, "unk_id": 3}, 260, 1, 2, encode


def sentencepiece(folder, vocab_size, train_docs):
    """SentencePiece BPE trained as its script trains it, the same five things as byte260's."""
    import sentencepiece as spm

    def training_text():
        for i, text in enumerate(texts(folder)):
            if train_docs is not None and i >= train_docs:
                return
            text = text.replace("\x00", " ").strip()
            if text:
                yield text

    prefix = f"tokenizers/fineweb_{vocab_size}_bpe"
    spm.SentencePieceTrainer.train(
        sentence_iterator=training_text(),
        model_prefix=str(folder / prefix),
        vocab_size=vocab_size,
        **SENTENCEPIECE_OPTIONS,
    )
    sp = spm.SentencePieceProcessor(model_file=str(folder / f"{prefix}.model"))
    paths = {"model_path": f"{prefix}.model", "vocab_path": f"{prefix}.vocab"}
    return paths, sp.vocab_size(), sp.bos_id(), sp.eos_id(), sp.encode


def write_shards(folder, documents, encode, bos_id, vocab_size, num_val_docs, chunk_tokens):
    """Every document as BOS + ids, each split cut every chunk_tokens tokens -> its stats."""
    folder.mkdir(parents=True)
    stats = {f"{what}_{split}": 0 for what in COUNTS for split in ("total", "val", "train")}
    streams = {"val": [], "train": []}
    for i, ids in enumerate(encode(documents)):
        split = "val" if i < num_val_docs else "train"
        tokens = np.concatenate([[bos_id], ids]).astype(np.int64)
        assert ((tokens >= 0) & (tokens < vocab_size)).all()
        streams[split].append(tokens)
        stats[f"docs_{split}"] += 1
        stats[f"tokens_{split}"] += len(tokens)
    for split, stream in streams.items():
        stream = np.concatenate(stream) if stream else np.zeros(0, np.int64)
        for index, start in enumerate(range(0, len(stream), chunk_tokens)):
            shard = stream[start : start + chunk_tokens]
            header = np.zeros(256, dtype="<i4")
            header[:3] = 20240520, 1, len(shard)
            path = folder / f"fineweb_{split}_{index:06d}.bin"
            path.write_bytes(header.tobytes() + shard.astype("<u2").tobytes())
            stats[f"files_{split}"] += 1
    for what in COUNTS:
        stats[f"{what}_total"] = stats[f"{what}_val"] + stats[f"{what}_train"]
    return stats


def write_golf_folder(
    out_dir, specs, num_val_docs=None, chunk_tokens=10**8, tokenizer_train_docs=None
):
    """Write in `out_dir` (holding docs_selected.jsonl, and perhaps its sidecar) the tokenizers,
    datasets/, tokenizer_config.export.json and manifest.json its script writes there."""
    folder = Path(out_dir)
    sidecar = None
    if (folder / SIDECAR).is_file():
        sidecar = json.loads((folder / SIDECAR).read_text(encoding="utf-8"))
    num_docs = (sidecar or {}).get("num_docs")
    if num_docs is None:
        num_docs = sum(1 for _ in texts(folder))
    if num_val_docs is None:
        num_val_docs = (sidecar or {}).get("docs_val")
    if num_val_docs is None:
        num_val_docs = 50_000
    assert 0 <= num_val_docs <= num_docs
    (folder / "tokenizers").mkdir(exist_ok=True)
    used, tokenizers, datasets = [], [], []
    for spec in specs:
        spec = dict(spec)
        if spec.get("dataset_suffix") == "byte260":
            kind, built = "byte", byte260(folder)
        else:
            if tokenizer_train_docs is not None:
                spec["tokenizer_train_docs"] = tokenizer_train_docs
            kind = "sentencepiece_bpe"
            built = sentencepiece(folder, spec["vocab_size"], spec.get("tokenizer_train_docs"))
        paths, vocab_size, bos_id, eos_id, encode = built
        used.append(spec)
        name = f"fineweb10B_{spec['dataset_suffix']}"
        common = {
            "vocab_size": vocab_size,
            "bos_id": bos_id,
            "eos_id": eos_id,
            "recommended_bigram_vocab_size": (vocab_size + 127) // 128 * 128 * 5,
        }
        tokenizers.append(
            {"name": spec["name"], "kind": kind, **common, "source_spec": spec, **paths}
        )
        stats = write_shards(
            folder / "datasets" / name,
            list(texts(folder)),
            encode,
            bos_id,
            vocab_size,
            num_val_docs,
            chunk_tokens,
        )
        assert stats["docs_total"] == num_docs
        datasets.append(
            {
                "name": name,
                "tokenizer_name": spec["name"],
                "tokenizer_kind": kind,
                "path": f"datasets/{name}",
                "train_glob": f"datasets/{name}/fineweb_train_*.bin",
                "val_glob": f"datasets/{name}/fineweb_val_*.bin",
                **common,
                "stats": stats,
            }
        )
    (folder / "tokenizer_config.export.json").write_text(dump({"tokenizers": used}))
    docs_meta = {
        "remote_repo_id": REPO_ID,
        "remote_root": REMOTE_ROOT,
        "num_docs": num_docs,
        "docs_sha256": (sidecar or {}).get("docs_sha256"),
        "source_manifest": SIDECAR if sidecar is not None else None,
    }
    if sidecar is not None:
        docs_meta["source_sidecar"] = sidecar
    manifest = {
        "version": "10B",
        "num_docs": num_docs,
        "num_val_docs": num_val_docs,
        "shuffle_seed": (sidecar or {}).get("shuffle_seed"),
        "shard_size": chunk_tokens,
        "append_eos": False,
        "docs_jsonl": DOCS,
        "docs_meta": docs_meta,
        "tokenizer_specs": used,
        "tokenizers": tokenizers,
        "datasets": datasets,
    }
    (folder / "manifest.json").write_text(dump(manifest))


def dump(value):
    return json.dumps(value, indent=2) + "\n"
