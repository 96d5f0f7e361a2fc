"""Train a byte-level BPE tokenizer on your own text and save it.

    python train_tokenizer.py --input input.txt --vocab-size 4096 --out tok.json \\
        --special-tokens "<|endoftext|>" --eval val.txt

It learns vocab_size - 256 - (number of special tokens) merges, prints the first and last
merges in GPT-2's printable alphabet (Ġ is a space, Ċ a newline) and the bytes per token, and
writes the file `bpe.Tokenizer.load(PATH)` and the prepare.py scripts read. The inputs are one
corpus of documents (a .txt file, or a row of .jsonl/.json/.parquet files), read by --workers
processes in memory the size of the count table; --max-chars N: the first N characters only.

    python train_tokenizer.py --input "shards/*.parquet" --max-chars 2_000_000_000 \
        --vocab-size 32000 --special-tokens "<|endoftext|>" --out tok.json

With --format nanochat it writes what nanochat's scripts/tok_train.py writes (tokenizer.pkl,
token_bytes.pt), trained on each document's first --doc-cap characters.

    python train_tokenizer.py --format nanochat --vocab-size 32768 --out base/tokenizer \
        --input "base/shards/*.parquet"

With --kind sentencepiece it trains parameter-golf's SentencePiece BPE (formats/golf.py) into
PREFIX.model and PREFIX.vocab, on each line of a .txt file and each row of the others.

    python train_tokenizer.py --kind sentencepiece --vocab-size 1024 --out fineweb_1024_bpe \
        --input docs_selected.jsonl

With --engine datatrove the counting runs as resumable datatrove tasks, here, on Slurm or Ray.

    python train_tokenizer.py --input "shards/*.parquet" --vocab-size 32000 --out tok.json \
        --special-tokens "<|endoftext|>" --engine datatrove --executor slurm --tasks 256 \
        --slurm-partition cpu --work-dir /shared/work
"""

import argparse
import contextlib
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from bpe import Tokenizer, train_bpe_from_counts
from bpe.checks import (
    check_pattern,
    check_tiktoken_special_tokens,
    check_training_args,
    check_vocab_size,
    check_workers,
    shown,
)
from bpe.io import render_token
from bpe.patterns import PATTERNS
from bpe.show_training import (
    TRACE_CORPUS_BYTES,
    corpus_pretokens,
    plot_sweep,
    prefix_encodings,
    sweep_bars,
    sweep_table,
    trace_lines,
)
from documents.corpus import (
    Reading,
    cap_pieces,
    count_table,
    documents,
    expand_inputs,
    file_kind,
    leaves_out,
    no_text_message,
    piece_texts,
    plan_pieces,
)
from engine.executors import add_datatrove_arguments, check_datatrove_arguments
from inspection.packing import picture_kind, picture_path
from safety import ArgumentParser, PrepareError, non_negative_int, read_text, run_main
from safety.files import atomic_path, atomic_write_text
from safety.signals import Terminated
from safety.text import shortened

SHOW_MERGES = 10  # how many of the first and of the last merges to print
SHOW_BYTES = 40  # a longer token is shown by its start and its length
TOKENIZERS = Path(__file__).resolve().parent / "data" / "tokenizers"


class UsageError(PrepareError):
    """A bad option value, or options that do not go together: exit code 2, as argparse's."""


def make_parser():
    parser = ArgumentParser(description="Train a byte-level BPE tokenizer.")
    parser.add_argument(
        "--input",
        nargs="+",
        required=True,
        metavar="FILE|GLOB",
        help="files to train on: .txt (UTF-8 text, one document each), .jsonl/.json or .parquet "
        "(a row is a document)",
    )
    parser.add_argument(
        "--text-column",
        default="text",
        metavar="NAME",
        help="the text field of .jsonl/.json/.parquet rows (default: text)",
    )
    parser.add_argument(
        "--max-chars",
        type=int,
        metavar="N",
        help="train on the first documents only, up to N characters in all (in file order)",
    )
    parser.add_argument("--vocab-size", type=int, metavar="N", help="256 + merges + specials")
    parser.add_argument(
        "--out",
        metavar="PATH",
        help="the tokenizer file to write (JSON; default: data/tokenizers/NAME-VOCAB_SIZE.json, "
        "NAME the first input's; with --sweep, none)",
    )
    parser.add_argument(
        "--special-tokens",
        nargs="*",
        default=[],
        metavar="TOK",
        help='e.g. "<|endoftext|>"; they get the last ids, in this order',
    )
    parser.add_argument(
        "--pattern",
        choices=list(PATTERNS),
        help="pretokenization regex (default: gpt2; nanochat's with --format nanochat)",
    )
    parser.add_argument(
        "--format",
        choices=["json", "nanochat"],
        default="json",
        help="our tokenizer file (default), or nanochat's tokenizer directory (--out DIR)",
    )
    parser.add_argument(
        "--kind",
        choices=["bpe", "sentencepiece"],
        default="bpe",
        help="our byte-level BPE (default), or parameter-golf's SentencePiece BPE (--out PREFIX "
        "writes PREFIX.model and PREFIX.vocab; a .txt is read a line a sentence; pip install -e "
        "'.[golf]')",
    )
    parser.add_argument(
        "--doc-cap",
        type=int,
        metavar="N",
        help="--format nanochat: each document's first N characters (default: 10,000)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="processes for pretokenizing large files (default: all CPUs)",
    )
    parser.add_argument("--eval", metavar="FILE", help="also report compression on this text")
    parser.add_argument(
        "--trace", type=non_negative_int, default=0, metavar="N", help="replay N merges"
    )
    parser.add_argument(
        "--sweep",
        type=parse_sizes,
        metavar="SIZES",
        help="compression for each vocab size, e.g. 256,512,1024 (trained once, to the largest)",
    )
    parser.add_argument("--plot", metavar="FILE.png", help="with --sweep: draw it (matplotlib)")
    add_datatrove_arguments(
        parser,
        engines=("bpe", "datatrove"),
        engine_help="bpe: --workers processes on this machine (default); datatrove: N count "
        "tasks here, on Slurm or Ray, resumable, the same tokenizer file",
        work_dir_help="where the count tables and logs go (default: .datatrove-work next to --out)",
        workers_option=False,  # --workers above: processes here, or tasks running at once
    )
    return parser


def parse_args(argv=None, parser=None):
    parser = parser or make_parser()
    args = parser.parse_args(argv)
    check_datatrove_arguments(parser, args, local_workers=os.cpu_count() or 1)
    if args.sweep and args.vocab_size is None:
        args.vocab_size = args.sweep[-1]
    if args.kind != "sentencepiece":  # SentencePiece has no pattern: one given is refused
        args.pattern = args.pattern or ("nanochat" if args.format == "nanochat" else "gpt2")
    return args


def parse_sizes(text):
    """--sweep's argument: "1024,256,512" -> [256, 512, 1024]."""
    try:
        return sorted({int(size) for size in text.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{shown(text)} is not a list of sizes like 256,512,1024"
        ) from None


def check_args(args):
    """Every mistake we can see before training, as a PrepareError (or UsageError)."""
    if args.out == "":  # else training runs and nothing is written
        raise UsageError("--out is empty; give the path to write")
    if args.eval:
        check_eval(Path(args.eval))
    if args.max_chars is not None and args.max_chars < 1:
        raise UsageError(f"--max-chars must be at least 1, got {args.max_chars}")
    if args.vocab_size is None:
        raise UsageError("give --vocab-size N (or --sweep SIZES)")
    if args.format == "nanochat" or args.doc_cap is not None:
        return check_nanochat_args(args)
    if args.kind == "sentencepiece":
        return check_sentencepiece_args(args)
    if args.out is None and not args.sweep:
        args.out = str(default_out(args.input, args.vocab_size))
    if args.sweep and args.vocab_size != args.sweep[-1]:
        raise UsageError(f"--vocab-size {args.vocab_size} must be the largest --sweep size")
    if args.plot:
        args.plot = check_plot(args.plot, args.sweep)
    check_tokenizer_args(args)
    if args.engine != "datatrove" or args.executor == "local":  # processes on this machine
        try:
            check_workers(args.workers, "--workers")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    for option in ("trace", "sweep", "eval"):
        if args.engine == "datatrove" and getattr(args, option):
            raise UsageError(
                f"--{option} needs the corpus in this process; leave out --engine datatrove"
            )
    if args.out:
        if args.out.endswith(("/", os.sep)):  # Path() drops the slash: a file would be written
            raise UsageError(f"--out {args.out} names a folder; give a file path")
        check_out(Path(args.out))
        check_out_is_no_input(Path(args.out), args)


def check_nanochat_args(args):
    if args.format != "nanochat":
        raise UsageError("--doc-cap is for --format nanochat")
    if args.doc_cap is not None and args.doc_cap < 1:
        raise UsageError(f"--doc-cap must be at least 1, got {args.doc_cap}")
    given = [o for o in ("special_tokens", "sweep", "trace", "plot") if getattr(args, o)]
    given += ["kind"] * (args.kind != "bpe")
    if args.pattern != "nanochat" or args.engine != "bpe" or given:
        what = f"--{given[0].replace('_', '-')}" if given else "--pattern or --engine"
        raise UsageError(
            f"{what} does not go with --format nanochat (nanochat's pattern and special "
            "tokens, trained here)"
        )
    from formats import nanochat

    try:
        nanochat.check_vocab_size(args.vocab_size)
    except PrepareError as exc:
        raise UsageError(str(exc)) from None
    if args.out is None:
        raise UsageError(
            "--format nanochat writes a folder: give --out DIR (nanochat reads "
            "$NANOCHAT_BASE_DIR/tokenizer)"
        )
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise PrepareError(
            f"--out {args.out} is a file; give the folder to write tokenizer.pkl into"
        )
    out = Path(args.out)
    check_writable_folder(out, out if out.exists() else out.parent)


def check_sentencepiece_args(args):
    options = ["special_tokens", "sweep", "trace", "plot", "eval", "pattern", "max_chars"]
    given = [o for o in [*options, "workers"] if getattr(args, o)]
    if given or args.engine != "bpe":
        what = f"--{given[0].replace('_', '-')}" if given else "--engine datatrove"
        raise UsageError(f"{what} does not go with --kind sentencepiece")
    if args.out is None:
        raise UsageError("--kind sentencepiece: give --out PREFIX (PREFIX.model, PREFIX.vocab)")
    if not 0 < args.vocab_size <= 2**16:
        raise UsageError(f"--vocab-size {args.vocab_size}: 1 to 65,536 (parameter-golf's uint16)")
    check_writable_folder(Path(args.out), Path(args.out).parent)


def check_eval(path):
    if path.is_dir():
        raise PrepareError(f"--eval {path} is a folder; give a text file")
    if not path.exists():
        raise PrepareError(f"--eval {path} does not exist; check the path")
    if not path.is_file():
        raise PrepareError(f"--eval {path} is not a regular file (a device or a FIFO)")
    if path.stat().st_size == 0:  # bytes per token of no text is no figure
        raise PrepareError(f"--eval {path} is empty; give a text to measure compression on")


def default_out(inputs, vocab_size):
    """Where the tokenizer goes without --out (a folder git ignores): notes/corpus.txt, 512 ->
    data/tokenizers/corpus-512.json; data/shakespeare_char/input.txt names it by its folder."""
    try:
        first = Path(expand_inputs(inputs)[0])
    except (PrepareError, IndexError):  # said when the files are read, a line later
        first = Path(inputs[0] if not set("*?[") & set(inputs[0]) else "tokenizer")
    name = first.parent.resolve().name if first.stem == "input" else first.stem
    return TOKENIZERS / f"{name}-{vocab_size}.json"  # the folder is made when it is written


def make_default_folder(out):
    if Path(out).parent == TOKENIZERS:
        try:
            TOKENIZERS.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise PrepareError(
                f"cannot create {TOKENIZERS} ({exc.strerror}); give --out PATH"
            ) from None


def check_tokenizer_args(args):
    sizes, option = (args.sweep, "--sweep") if args.sweep else ([args.vocab_size], "--vocab-size")
    try:
        check_training_args(sizes[0], args.special_tokens, args.pattern)
        check_vocab_size(sizes[-1], args.special_tokens)  # the sizes are sorted
        # The tokenizer is used through its tiktoken export (here and by the pipelines).
        check_tiktoken_special_tokens(args.special_tokens)
    except ValueError as exc:
        raise UsageError(f"{exc} (from {option} and --special-tokens)") from None


def check_out(out):
    if out.parent != TOKENIZERS or out.parent.exists():  # the default folder is made when written
        check_writable_folder(out, out.parent)
    if out.is_dir():
        raise PrepareError(
            f"--out {out} is a folder; give a file path such as {out / 'tokenizer.json'}"
        )
    if out.exists() and not out.is_file():
        raise PrepareError(
            f"--out {out} is not a regular file (a device or a FIFO): it would be replaced; "
            f"give the path of a tokenizer file"
        )


def check_writable_folder(out, folder):
    if not folder.is_dir():
        raise PrepareError(f"--out {out}: the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PrepareError(
            f"--out {out}: the folder {folder} cannot be written (read-only?); choose another --out"
        )


def check_out_is_no_input(out, args):
    if not out.exists():
        return
    inputs = expand_inputs(args.input)
    for option, paths in (("--input", inputs), ("--eval", [args.eval] if args.eval else [])):
        for path in paths:
            if os.path.exists(path) and os.path.samefile(path, out):
                raise PrepareError(
                    f"--out {out} is the {option} file {path}: writing the tokenizer would "
                    f"destroy it; choose another --out"
                )


def check_plot(path, sweep):
    """--plot's checks before the training -> the picture's path ("sweep" -> sweep.png)."""
    if not sweep:
        raise UsageError("--plot draws a --sweep: give --sweep SIZES too")
    path = picture_path(path)
    if not path.parent.is_dir():
        raise PrepareError(f"--plot {path}: the folder {path.parent} does not exist")
    picture_kind(path)
    return path


class ProgressBars:
    """train_bpe's progress(stage, done, total) callback, shown as one tqdm bar per stage."""

    def __init__(self):
        self.bars = {}

    def __call__(self, stage, done, total):
        from tqdm import tqdm

        if stage not in self.bars:
            self.close()  # the previous stage is over
            unit = {"read": "B", "pretokenize": "char"}.get(stage, "merge")
            # Shown after a second: a quick run, or a bad file found at once, prints no bar.
            self.bars[stage] = tqdm(
                total=total, desc=stage, unit=unit, unit_scale=True, file=sys.stderr, delay=1
            )
        bar = self.bars[stage]
        bar.update(done - bar.n)

    def close(self):
        for bar in self.bars.values():
            bar.close()


def train(args):
    """-> (the pretoken counts as a PretokenTable, vocab, merges); warnings printed."""
    bars = ProgressBars()
    try:
        inputs = (args.input, args.pattern, args.special_tokens, args.text_column, args.max_chars)
        counts = count_table(*inputs, args.workers, progress=bars)
        if not counts:  # --max-chars named if it is what left no text
            cap = args.max_chars
            emptied = cap is not None and leaves_out(args.input, reading_of(args), cap)
            raise PrepareError(no_text_message(args.input, cap if emptied else None))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            vocab, merges = train_bpe_from_counts(
                counts, args.vocab_size, args.special_tokens, progress=bars
            )
    finally:
        bars.close()
    for warning in caught:
        print(f"note: {warning.message}")
    return counts, vocab, merges


def reading_of(args):
    return Reading(check_pattern(args.pattern), tuple(args.special_tokens), args.text_column)


def render_short(token):
    """A token in GPT-2's alphabet, a long one cut: b"x" * 1000 -> "xxx...x... (1,000 bytes)"."""
    return shortened(render_token(token), SHOW_BYTES, len(token), "bytes")


def show_merges(merges):
    def line(i, pair):
        left, right = pair
        return (
            f"  {256 + i:>6}: {render_short(left)} + {render_short(right)} -> "
            f"{render_short(left + right)}"
        )

    shown = list(enumerate(merges))
    if len(shown) > 2 * SHOW_MERGES:
        first, last = shown[:SHOW_MERGES], shown[-SHOW_MERGES:]
        print(f"first {SHOW_MERGES} merges:", *(line(i, p) for i, p in first), sep="\n")
        print(f"last {SHOW_MERGES} merges:", *(line(i, p) for i, p in last), sep="\n")
    else:
        print("merges:", *(line(i, p) for i, p in shown), sep="\n")


def compression(encoding, text):
    """Bytes per token, by the tokenizer's tiktoken export: "hello world" in 2 tokens -> 5.5."""
    ids = encoding.encode(text, allowed_special="all")
    return len(text.encode("utf-8")) / max(len(ids), 1)


def compression_of_counts(encoding, counts):
    """Bytes per token of a text given as its pretoken counts: {"hello": 1, " world": 1} in 2
    tokens -> 5.5 (each distinct pretoken encoded once)."""
    tokens = sum(n * len(encoding.encode_ordinary(p)) for p, n in counts.items())
    return int(np.dot(counts.lengths.astype(np.int64), counts.counts)) / max(tokens, 1)


def main(argv=None):
    parser = make_parser()
    args = parse_args(argv, parser)
    try:
        check_args(args)
    except UsageError as exc:
        parser.error(str(exc))  # one line, exit code 2
    with says_if_written(args.out):
        if args.format == "nanochat":
            train_nanochat(args)
        elif args.kind == "sentencepiece":
            train_sentencepiece(args)
        elif args.engine == "datatrove":
            train_with_tasks(args)
        else:
            train_here(args)


@contextlib.contextmanager
def says_if_written(out):
    """Ctrl-C or SIGTERM in the block says whether `out` was written (renamed into place whole)."""
    before = file_state(out) if out else None
    try:
        yield
    except KeyboardInterrupt as exc:
        if not out:  # --sweep without --out writes no file
            raise
        what = "terminated" if isinstance(exc, Terminated) else "interrupted"
        when = "before" if file_state(out) == before else "after"
        raise type(exc)(f"{what} {when} {out} was written") from None


def file_state(path):
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino, status.st_mtime_ns


def train_here(args):
    eval_text = read_text(args.eval) if args.eval else None

    start = time.perf_counter()
    counts, vocab, merges = train(args)
    seconds = time.perf_counter() - start
    print(
        f"learned {len(merges):,} merges in {seconds:.2f} s "
        f"({len(merges) / max(seconds, 1e-9):,.0f} merges/s); vocab size {len(vocab):,}"
    )
    if args.trace:
        print(*trace_lines(counts.to_counter(), merges, args.trace, small_corpus(args)), sep="\n")
    show_merges(merges)

    tokenizer = Tokenizer(vocab, merges, args.special_tokens, args.pattern)  # ids as in vocab
    encoding = tokenizer.to_tiktoken()
    print(
        f"compression on the training text: {compression_of_counts(encoding, counts):.3f} "
        "bytes/token"
    )
    if eval_text is not None:
        print(f"compression on {args.eval}: {compression(encoding, eval_text):.3f} bytes/token")
    if args.sweep:
        show_sweep(args, vocab, merges, counts, eval_text)
    if args.out:
        make_default_folder(args.out)
        atomic_write_text(args.out, tokenizer.to_json())
        print(f"wrote {args.out}")


def train_nanochat(args):
    from formats import nanochat

    eval_text = read_text(args.eval) if args.eval else None
    start, bars = time.perf_counter(), ProgressBars()
    try:
        texts = documents(expand_inputs(args.input), args.text_column)
        doc_cap, max_chars = args.doc_cap or nanochat.DOC_CAP, args.max_chars or nanochat.MAX_CHARS
        tokenizer = nanochat.train_tokenizer(texts, args.vocab_size, doc_cap, max_chars, bars)
    finally:
        bars.close()
    seconds = time.perf_counter() - start
    print(
        f"learned {len(tokenizer.merges):,} merges in {seconds:.2f} s; vocab size "
        f"{tokenizer.vocab_size:,}"
    )
    show_merges(tokenizer.merges)
    encoding = nanochat.nanochat_encoding(tokenizer)
    if eval_text is not None:
        print(f"compression on {args.eval}: {compression(encoding, eval_text):.3f} bytes/token")
    names = nanochat.write_tokenizer_dir(args.out, encoding)
    print(f"wrote {', '.join(str(Path(args.out) / name) for name in names)}")
    if names[-1].endswith(".npy"):
        print(nanochat.torch_note(Path(args.out) / names[-1]))


def train_sentencepiece(args):
    from formats import golf

    prefix = Path(args.out)
    texts = sentencepiece_texts(expand_inputs(args.input), args.text_column)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=prefix.parent, prefix=".sentencepiece-") as staging:
        names = " ".join(map(str, args.input))
        golf.train_sentencepiece(texts, args.vocab_size, Path(staging) / prefix.name, names)
        for suffix in (".vocab", ".model"):  # renamed whole; the model last
            os.replace(Path(staging) / f"{prefix.name}{suffix}", f"{prefix}{suffix}")
    pieces = golf.SentencePieceTokens(f"{prefix}.model").vocab_size
    print(f"trained {pieces:,} pieces in {time.perf_counter() - start:.2f} s")
    print(f"wrote {prefix}.model, {prefix}.vocab")


def sentencepiece_texts(paths, text_column):
    """Each line of a .txt file, as spm_train reads one (a whole file would be over its limit of
    4,192 bytes, and skipped), and each document of the others."""
    for path in paths:
        if file_kind(path) == "text":
            yield from read_text(path, newlines=False).split("\n")  # as spm_train splits
        else:
            yield from documents([path], text_column)


def train_with_tasks(args):
    from engine.training import train_with_datatrove

    make_default_folder(args.out)
    out = Path(args.out).resolve()
    options = ["pattern", "text_column", "max_chars", "tasks", "workers", "executor", "verbose"]
    options += ["slurm_partition", "slurm_time", "slurm_cpus_per_task", "slurm_mem_per_cpu_gb"]
    folder = train_with_datatrove(
        args.input,
        args.vocab_size,
        args.special_tokens,
        out=out,
        work_dir=args.work_dir or out.parent / ".datatrove-work",
        **{option: getattr(args, option) for option in options},
    )
    if args.executor == "slurm":
        print(
            f"submitted to Slurm; {args.out} appears when the learn job ends (logs: "
            f"{folder / 'logs'}); run the same command again to resume"
        )
        return
    show_merges(Tokenizer.load(out).merges)
    print(f"wrote {args.out} (count tables in {folder})")


def small_corpus(args):
    """For --trace: the training text's pretokens in order, if it is a few hundred bytes."""
    paths = expand_inputs(args.input)
    if any(file_kind(path) != "text" for path in paths):
        return None
    if sum(Path(path).stat().st_size for path in paths) > TRACE_CORPUS_BYTES:
        return None
    reading = reading_of(args)
    pieces = plan_pieces(paths, reading)
    if args.max_chars is not None:
        pieces = cap_pieces(pieces, reading, args.max_chars)
    texts = [text for piece in pieces for text in piece_texts(piece, reading)]
    return corpus_pretokens(texts, args.pattern, args.special_tokens)


def show_sweep(args, vocab, merges, counts, eval_text):
    names = ["training text"] + ([Path(args.eval).name] if eval_text is not None else [])
    rows = []
    for size, encoding in prefix_encodings(
        vocab, merges, args.sweep, args.special_tokens, args.pattern
    ):
        figures = [compression_of_counts(encoding, counts)]
        if eval_text is not None:
            figures.append(compression(encoding, eval_text))
        rows.append((size, figures))
    print(
        f"sweep: trained once, to vocab_size {len(vocab):,}. Training is greedy, so a smaller\n"
        f"vocabulary's merges are the first ones of a larger one's: each size is a prefix."
    )
    if rows:
        print(*sweep_table(rows, names), *sweep_bars(rows, names), sep="\n")
    if len(rows) < len(args.sweep):
        print(f"not reached (no pair left to merge): {args.sweep[len(rows) :]}")
    if args.plot and rows:
        # drawn beside it, then renamed: a full disk leaves the old picture, and names it
        with atomic_path(args.plot) as tmp:
            plot_sweep(rows, names, tmp, picture_kind(args.plot))
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    run_main(main)
