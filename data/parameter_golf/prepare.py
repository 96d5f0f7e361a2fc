"""
Prepare FineWeb as openai/parameter-golf's train_gpt.py reads it: its selection of documents
(docs_selected.jsonl) tokenized by each --variant (SentencePiece sp<N>, byte260) or --tokenizer,
byte for byte as its data/download_hf_docs_and_tokenize.py writes them: tokenizers/,
datasets/fineweb10B_{suffix}/fineweb_{val,train}_000000.bin (each document its BOS then its ids;
the first --val-docs are val), tokenizer_config.export.json and manifest.json. Unlike it:
--data-files, byte figures in meta.json, --val-bytes, and --max-tokens N (only the hub file's
first lines, fetched by range requests, resumable).

    python data/parameter_golf/prepare.py --data-files docs.jsonl --variant sp1024 byte260
    python data/parameter_golf/prepare.py --max-tokens 100M --tokenizer-train-docs 100000
    DATA_PATH=$OUT/datasets/fineweb10B_sp1024 \\
        TOKENIZER_PATH=$OUT/tokenizers/fineweb_1024_bpe.model torchrun train_gpt.py
"""

import codecs
import itertools
import json
import os
import re
import shutil
from argparse import ArgumentTypeError, RawDescriptionHelpFormatter
from pathlib import Path

import numpy as np
from tqdm import tqdm

from documents.corpus import ONLY_TEXT_COLUMN, documents
from documents.inputs import DATA_FILES_HELP, HubDataset, expand_data_files, hub_files
from formats import golf, schema
from formats.schema import FIGURES, GOLF_EXPORT, GOLF_FORMAT, GOLF_MANIFEST
from formats.val_bytes import add_figures, checked_shares
from hub import token_budget
from hub.prefix import hub_commit, hub_prefix, hub_small_file
from inspection.bpb import audit_lines
from prepare_common import bpe_encoding, llmc_names, write_record, write_shards
from safety import (
    ArgumentParser,
    PrepareError,
    folder_outputs,
    output_folder,
    positive_int,
    run_main,
    tokens_per_shard,
)
from safety.files import read_small_file, sha256_file

# "main": a run reads and records the commit it names; the sidecar's docs_sha256 pins the bytes
REPO, REMOTE_ROOT, REVISION = "willdepueoai/parameter-golf", "datasets", "main"
DOCS, SIDECAR = golf.DOCS, golf.SIDECAR
BATCH = 1024  # documents encoded at a time (its SP_BATCH_SIZE)
SPLIT_RULE = (
    "parameter-golf's: the documents in order; the first val_docs are val, the others train; "
    "each split's stream cut every shard_size tokens"
)


def main():
    parser = arguments()
    args = parser.parse_args()
    budget_usage(parser, args)
    with output_folder(args.out_dir, schema) as out:  # written in `out`, moved in together
        # 1. the documents: the hub's docs_selected.jsonl (--max-tokens: its first lines) or yours
        variants, val_docs = None, args.val_docs
        if args.max_tokens:
            source, variants, val_docs = budgeted_documents(args, out)
            sidecar = None  # the hub's describes its whole file, not the folder's first lines
        else:
            sidecar, source = copy_documents(args.data_files, out)
        num_docs = sum(1 for _ in documents([source["path"]], fix=ONLY_TEXT_COLUMN))
        if val_docs is None:
            val_docs = (sidecar or {}).get("docs_val", 50_000)
        print(f"{source['name']}: {num_docs:,} documents, {val_docs:,} of them val")
        if num_docs < 2:  # train_gpt.py reads both splits: neither may be empty
            raise PrepareError(
                f"{source['name']} holds {num_docs:,} document(s); val and train need one each"
            )
        if not 0 < val_docs < num_docs:
            raise PrepareError(
                f"--val-docs {val_docs:,}: choose 1 to {num_docs - 1:,}, leaving val and train "
                f"each at least one of the {num_docs:,} documents"
            )
        if sidecar and sidecar.get("num_docs") not in (None, num_docs):
            raise PrepareError(
                f"{source['name']} holds {num_docs:,} documents, its .source_manifest.json "
                f"sidecar says {sidecar['num_docs']:,}; fix or remove the sidecar"
            )

        # 2. the tokenizers: SentencePiece trained on the documents, byte260, or yours
        train_docs = min(num_docs, args.tokenizer_train_docs or num_docs)
        if variants is None:
            sp_docs = args.tokenizer_train_docs
            variants = [make_tokenizer(v, train_docs, sp_docs, out) for v in asked_variants(args)]
            variants += [our_tokenizer(path, out) for path in args.tokenizer or ()]
        check_names(variants)

        # 3. each tokenizer's shards: every document as BOS + ids, val first, then train
        for variant in variants:
            variant["dataset"] = write_dataset(out, variant, num_docs, val_docs, args)

        # 4. parameter-golf's manifest.json and tokenizer_config.export.json; meta.json, last
        specs = [variant["spec"] for variant in variants]
        (out / GOLF_EXPORT).write_text(json.dumps({"tokenizers": specs}, indent=2) + "\n")
        manifest = golf.manifest(variants, num_docs, val_docs, args.shard_size, sidecar, source)
        (out / GOLF_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        files = [DOCS, *([SIDECAR] * bool(sidecar)), GOLF_EXPORT, GOLF_MANIFEST]
        write_record(
            out,
            {
                "format_version": 1,
                "created_by": "data/parameter_golf/prepare.py",
                "format": GOLF_FORMAT,
                "files": [{"file": name, "sha256": sha256_file(out / name)} for name in files],
                "datasets": [variant["dataset"] for variant in variants],
                "source": source["record"],
                "split": {"rule": SPLIT_RULE, "val_docs": val_docs, "shard_size": args.shard_size},
            },
        )
    for variant in variants:
        print("\n".join(audit_lines(variant["dataset"]["name"], variant["dataset"]["bytes"])))
    print(
        f"wrote tokenizers/, datasets/ ({', '.join(v['dataset']['name'] for v in variants)}), "
        f"manifest.json and meta.json to {args.out_dir}"
    )


def budget_usage(parser, args):
    """--max-tokens' usage errors."""
    if not args.max_tokens:
        return
    asked = asked_variants(args)
    if args.data_files:
        parser.error("--max-tokens reads the hub's docs_selected.jsonl: leave out --data-files")
    if len(asked) + len(args.tokenizer or ()) != 1:
        parser.error(
            "--max-tokens counts one tokenizer's tokens: give one --variant or --tokenizer"
        )
    if asked and asked[0] != "byte260" and not args.tokenizer_train_docs:
        parser.error(
            f"--max-tokens counts {asked[0]}'s tokens, so SentencePiece is trained first: give "
            "--tokenizer-train-docs N (the first N documents)"
        )


def asked_variants(args):
    """The --variant names asked: sp1024 when neither --variant nor --tokenizer is given."""
    return args.variant or ["sp1024"] * (not args.tokenizer)


def budgeted_documents(args, out):
    """--max-tokens N: the hub's docs_selected.jsonl read line by line into the folder, as far
    as val and the train documents whose tokens reach N, SentencePiece trained on the way ->
    (the source, with its "budget", [the variant], val_docs)."""
    hub, where = HubDataset(REPO, REVISION, None, f"{REMOTE_ROOT}/{DOCS}"), f"{REPO}@{REVISION}"
    hub = hub_commit(hub, where)  # main moves: its files are read and kept by its commit
    prefix = hub_prefix(hub, where)
    data = hub_small_file(hub, f"{REMOTE_ROOT}/{SIDECAR}", where)
    sidecar = golf.sidecar_record(data, f"{where}'s {REMOTE_ROOT}/{SIDECAR}")
    val_docs = args.val_docs if args.val_docs is not None else sidecar.get("docs_val", 50_000)
    asked = asked_variants(args)
    sp_docs = args.tokenizer_train_docs if asked and asked[0] != "byte260" else 0
    variant = None if sp_docs else first_variant(args, asked, 0, out)
    ends, lengths, tokens = [], [], 0  # each document's end; each train document's tokens
    with open(out / DOCS, "wb") as docs:
        for line in iter(prefix.readline, b""):
            docs.write(line)
            ends.append(prefix.tell())
            if variant is None and len(ends) == sp_docs:  # trained, then counted up to here
                docs.flush()
                variant = first_variant(args, asked, sp_docs, out)
                texts = itertools.islice(documents([out / DOCS]), val_docs, None)
                lengths = train_lengths(variant, texts)
                tokens = sum(lengths)
            elif variant is not None and len(ends) > val_docs:
                lengths += train_lengths(variant, [document_text(line, len(ends), prefix.where)])
                tokens += lengths[-1]
            prefix.note(tokens)
            if len(ends) >= max(val_docs, sp_docs) and tokens >= args.max_tokens:
                break
        if variant is None:  # the file ended first: SentencePiece trained on all of it
            docs.flush()
            variant = first_variant(args, asked, len(ends), out)
            texts = itertools.islice(documents([out / DOCS]), val_docs, None)  # train's
            lengths = train_lengths(variant, texts)
        cumulative = np.cumsum(lengths, dtype=np.int64)
        train = min(int(np.searchsorted(cumulative, args.max_tokens)) + 1, len(lengths))
        kept = min(val_docs, len(ends)) + train
        docs.truncate(ends[kept - 1] if kept else 0)
    prefix.close()
    tokens = int(cumulative[train - 1]) if train else 0
    read = ends[kept - 1] if kept else 0  # the folder's docs_selected.jsonl: the first bytes
    record = {"max_tokens": args.max_tokens, "tokens": tokens, "val_docs": val_docs}
    record.update(documents=kept, file=prefix.where, size=prefix.size, bytes=read)
    record.update(sha256=sha256_file(out / DOCS), whole=read == prefix.size)
    pinned = sidecar.get("docs_sha256")
    if record["whole"] and pinned not in (None, record["sha256"]):
        raise PrepareError(
            f"{prefix.where} is not the selection its sidecar describes (docs_sha256 differs); "
            "run again"
        )
    print(
        f"budget: {train:,} train documents, {tokens:,} tokens; {record['bytes']:,} of "
        f"{prefix.size:,} bytes of {prefix.where} read, {prefix.fetched:,} fetched now"
    )
    if tokens < args.max_tokens:
        print(f"note: {where} holds {tokens:,} train tokens, fewer than asked: all read")
    source = {"repo": REPO, "revision": hub.revision, "file": f"{REMOTE_ROOT}/{DOCS}"}
    source.update(sha256=record["sha256"], budget=record)
    budget = {"name": where, "record": source, "remote": (REPO, REMOTE_ROOT), "path": out / DOCS}
    return budget, [variant], val_docs


def first_variant(args, asked, train_docs, out):
    """The one tokenizer of a --max-tokens run: its --variant or its --tokenizer."""
    if asked:
        return make_tokenizer(asked[0], train_docs, args.tokenizer_train_docs, out)
    return our_tokenizer(args.tokenizer[0], out)


def train_lengths(variant, texts):
    """Each text's tokens in its shard: its BOS and its ids. byte260, ["ab", ""] -> [3, 1]."""
    lengths, texts = [], iter(texts)
    while batch := list(itertools.islice(texts, BATCH)):
        lengths += [len(ids) + 1 for ids, _ in variant["tokens"].encode_batch(batch)]
    return lengths


def document_text(line, number, where):
    """The text of a line of docs_selected.jsonl ({"text": ...}), or one line naming it."""
    try:
        text = json.loads(line).get("text")
    except (ValueError, AttributeError):
        text = None
    if not isinstance(text, str):
        raise PrepareError(f'{where}: line {number:,} is not a JSON object with a string "text"')
    return text


def copy_documents(data_files, out):
    """Put the documents in `out` as docs_selected.jsonl -> (its sidecar or None, the source)."""
    if data_files is None:
        name = f"{REPO}@{REVISION}"
        hub = hub_commit(HubDataset(REPO, REVISION, None, f"{REMOTE_ROOT}/{DOCS}"), name)
        (path,), _ = hub_files(hub, name)  # both files of one commit, recorded as that commit
        (meta_path,), _ = hub_files(hub._replace(files=f"{REMOTE_ROOT}/{SIDECAR}"), name)
        record = {"repo": REPO, "revision": hub.revision, "file": f"{REMOTE_ROOT}/{DOCS}"}
        paths, remote = [Path(path)], (REPO, REMOTE_ROOT)
    else:
        outputs = folder_outputs(schema, out.parent)  # a --data-files glob over the folder
        paths, remote = [Path(p) for p in expand_data_files(data_files, outputs)], (None, None)
        meta_path = paths[0].with_name(f"{paths[0].stem}.source_manifest.json")
        name, record = " ".join(data_files), {"files": data_files}
    # the hub's cache is never changed in place; a user's file may be, after the folder verified
    put = link_or_copy if data_files is None else shutil.copyfile
    as_is = len(paths) == 1 and paths[0].suffix == ".jsonl" and one_document_a_line(paths[0])
    if as_is:
        put(paths[0], out / DOCS)
    else:
        with open(out / DOCS, "w", encoding="utf-8") as f:
            texts = documents(paths, fix=ONLY_TEXT_COLUMN)
            f.writelines(json.dumps({"text": text}) + "\n" for text in texts)
    sidecar = None
    if len(paths) == 1 and Path(meta_path).is_file():
        sidecar = golf.sidecar_record(read_small_file(meta_path), meta_path)
        put(Path(meta_path), out / SIDECAR)
        if sidecar.get("docs_sha256") not in (None, sha256_file(out / DOCS)):
            raise PrepareError(
                f"{paths[0]} is not the selection its sidecar {meta_path} describes "
                "(docs_sha256 differs); download both again"
            )
    record["sha256"] = sha256_file(out / DOCS)
    # the documents as read in step 1: a line it refuses is named in the user's file
    path = paths[0] if as_is else out / DOCS
    return sidecar, {"name": name, "record": record, "remote": remote, "path": path}


def one_document_a_line(path):
    """Whether parameter-golf's json.loads of every line reads `path` as it is (no BOM, no blank
    line)."""
    with open(path, "rb") as f:
        first = f.readline()
        if first.startswith(codecs.BOM_UTF8):
            return False
        return all(line.strip(b" \t\r\n") for line in itertools.chain([first], f))


def link_or_copy(source, target):
    try:
        os.link(os.path.realpath(source), target)  # the file, not the hub cache's link to it
    except OSError:  # another file system, or links not allowed
        shutil.copyfile(source, target)


def make_tokenizer(variant, num_docs, train_docs, out):
    """A --variant's tokenizer, its files written in out/tokenizers/, and its spec."""
    folder = out / "tokenizers"
    folder.mkdir(exist_ok=True)
    if variant == "byte260":
        (folder / golf.BYTE260_FILE).write_bytes(golf.byte260_json())
        spec = {"name": "pure_byte_260", "dataset_suffix": "byte260"}
        files = [f"tokenizers/{golf.BYTE260_FILE}"]
        return {"spec": spec, "tokens": golf.ByteTokens(), "files": files}
    vocab_size = int(variant[2:])
    prefix = folder / f"fineweb_{vocab_size}_bpe"
    print(f"training SentencePiece BPE at {vocab_size:,} ids on the first {num_docs:,} documents")
    texts = itertools.islice(documents([out / DOCS]), num_docs)
    golf.train_sentencepiece(texts, vocab_size, prefix, f"--variant {variant}")
    tokens = golf.SentencePieceTokens(prefix.with_suffix(".model"))
    print(f"{prefix.name}.model: {tokens.vocab_size:,} pieces")
    spec = {"name": f"sp_bpe_{vocab_size}", "dataset_suffix": variant, "vocab_size": vocab_size}
    if train_docs is not None:  # as its --tokenizer-train-docs records it
        spec["tokenizer_train_docs"] = train_docs
    files = [f"tokenizers/{prefix.name}.model", f"tokenizers/{prefix.name}.vocab"]
    return {"spec": spec, "tokens": tokens, "files": files}


def our_tokenizer(path, out):
    """A --tokenizer of train_tokenizer.py, copied into out/tokenizers/; <|endoftext|> is BOS."""
    encoding, record = bpe_encoding(path, need_eot=True)
    name = f"tokenizers/{Path(path).stem}.json"
    (out / "tokenizers").mkdir(exist_ok=True)
    shutil.copyfile(path, out / name)
    spec = {"name": record["name"], "kind": "bpe", "dataset_suffix": f"bpe{encoding.n_vocab}"}
    return {"spec": spec, "tokens": golf.BpeTokens(encoding, record["eot_id"]), "files": [name]}


def check_names(variants):
    for key in ("name", "dataset_suffix"):
        names = [variant["spec"][key] for variant in variants]
        if len(set(names)) < len(names):
            raise PrepareError(f"two tokenizers have the same {key} ({names}); give each once")
    for variant in variants:
        if variant["tokens"].vocab_size > 2**16:
            raise PrepareError(
                f"{variant['spec']['name']} has {variant['tokens'].vocab_size:,} ids: "
                "parameter-golf's uint16 shards hold 65,536"
            )


def write_dataset(out, variant, num_docs, val_docs, args):
    """datasets/fineweb10B_{suffix}/: the shards (and sidecars); -> meta.json's dataset record."""
    tokens, name = variant["tokens"], f"fineweb10B_{variant['spec']['dataset_suffix']}"
    folder = out / "datasets" / name
    folder.mkdir(parents=True)
    encoded = encode(tokens, documents([out / DOCS]), num_docs, name)
    figures, shares, shards, shape = {}, [], [], (args.shard_size, np.uint16)
    for split, part in (("val", itertools.islice(encoded, val_docs)), ("train", encoded)):
        figures[split] = dict.fromkeys(FIGURES, 0)

        def ids_with_bos(part=part, totals=figures[split], val=split == "val"):
            for number, (text, ids, text_shares) in enumerate(part):
                add_figures(totals, text, ids, tokens)
                if val and args.val_bytes:  # the BOS: 0, or a document of no token's bytes
                    bos_share = 0 if len(ids) else len(text.encode())
                    where = f"{DOCS} document {number:,} (val of {name}, --val-bytes)"
                    shares.append(checked_shares(np.concatenate([[bos_share], text_shares]), where))
                yield np.concatenate([[tokens.bos_id], ids])

        names = llmc_names("fineweb", split)
        shards += write_shards(
            folder, ids_with_bos(), names, *shape, tokens.vocab_size, "llmc", say=False
        )
    sidecars = []
    if args.val_bytes:
        val_names = enumerate(llmc_names("fineweb", "val"))
        names = ((s, f"fineweb_val_bytes_{i:06d}") for i, (s, _) in val_names)
        sidecars = write_shards(folder, shares, names, *shape, 2**16, "llmc", say=False)
    for record in shards + sidecars:
        record["file"] = f"datasets/{name}/{record['file']}"
    total = sum(s["tokens"] for s in shards)
    extra = f", {len(sidecars)} val bytes sidecar(s)" * bool(sidecars)
    print(f"wrote datasets/{name}: {len(shards)} shard(s), {total:,} tokens{extra}")
    files = [{"file": f, "sha256": sha256_file(out / f)} for f in variant["files"]]
    tokenizer = dict(kind=tokens.kind, name=variant["spec"]["name"], vocab_size=tokens.vocab_size)
    tokenizer.update(bos_id=tokens.bos_id, files=files)
    dataset = {"name": name, "tokenizer": tokenizer, "shards": shards, "val_bytes": sidecars}
    return {**dataset, "bytes": figures}


def encode(tokens, texts, total, desc):
    with tqdm(total=total, desc=f"tokenizing {desc}", unit=" documents", disable=None) as bar:
        texts = iter(texts)
        while batch := list(itertools.islice(texts, BATCH)):
            for text, (ids, shares) in zip(batch, tokens.encode_batch(batch)):
                yield text, ids, shares
            bar.update(len(batch))


def tokenizer_path(text):
    """--tokenizer: a file whose copy tokenizers/<stem>.json can be named: "tok.json" -> Path."""
    path = Path(text)
    if not re.fullmatch(r"[\w.-]+", path.stem) or f"{path.stem}.json" == golf.BYTE260_FILE:
        raise ArgumentTypeError(
            f"{text!r}: its copy is named tokenizers/<its name>.json, so name the file with "
            f"letters, digits, '.', '-' and '_' only, and not {golf.BYTE260_FILE}"
        )
    return path


def variant_name(text):
    """--variant: "sp1024" ... "sp<N>" (SentencePiece BPE at N ids) or "byte260"."""
    if text == "byte260" or (re.fullmatch(r"sp[1-9]\d*", text) and int(text[2:]) <= 2**16):
        return text
    raise ArgumentTypeError(
        f"{text!r} is not byte260 nor sp<N> with N at most 65,536 (sp1024, sp4096, sp8192, ...)"
    )


def arguments():
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    add = parser.add_argument
    hub = f"the hub's {REPO} {REMOTE_ROOT}/{DOCS}, checked against its sidecar's docs_sha256"
    add("--data-files", nargs="+", metavar="PATH|GLOB", help=f"{DATA_FILES_HELP} (default: {hub})")
    variants = "sp1024, sp4096, sp8192, sp<N> (SentencePiece BPE at N ids) or byte260, several at "
    variants += "once (default: sp1024 unless --tokenizer is given)"
    add("--variant", nargs="+", type=variant_name, default=[], metavar="VARIANT", help=variants)
    ours = "tokenizer files of train_tokenizer.py too, each its own dataset (fineweb10B_bpe<N>)"
    add("--tokenizer", nargs="+", type=tokenizer_path, metavar="TOK.json", help=ours)
    val = "the first N documents are val (default: the sidecar's docs_val, else 50,000)"
    add("--val-docs", type=positive_int, metavar="N", help=val)
    train = "train SentencePiece on the first N documents (default: all, as parameter-golf's)"
    add("--tokenizer-train-docs", type=positive_int, metavar="N", help=train)
    shard = "tokens per shard (default: 10**8)"
    add("--shard-size", type=tokens_per_shard, default=10**8, metavar="N", help=shard)
    val_bytes = (
        "write fineweb_val_bytes_*.bin beside each val shard: each token's share of the text's "
        "UTF-8 bytes (stock train_gpt.py's glob reads them too: docs/bits_per_byte.md)"
    )
    add("--val-bytes", action="store_true", help=val_bytes)
    budget = "read only the hub file's first lines: val, then the train documents whose tokens "
    budget += "reach N (100M, 1.5B), fetched by range requests, resumable (default: all)"
    add("--max-tokens", type=token_budget, metavar="N", help=budget)
    add("--out-dir", type=Path, default=Path(__file__).parent, help="default: beside the script")
    return parser


if __name__ == "__main__":
    run_main(main)
