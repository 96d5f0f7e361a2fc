"""nanochat's files, as its dataset.py, dataloader.py, tokenizer.py and tok_train.py read them:
parquet shards of a `text` column (the last is val), and its tokenizer directory (tokenizer.pkl,
a pickled tiktoken.Encoding; token_bytes.pt, each id's UTF-8 byte length, 0 for a special token).
"""

import functools
import io
import pickle
import warnings
from pathlib import Path

import numpy as np

from bpe import NANOCHAT_PATTERN, Tokenizer, train_bpe_from_counts
from bpe import checks as bpe_checks
from bpe.fragments import FragmentCounter
from safety.errors import PrepareError
from safety.files import atomic_path, read_small_file

from .schema import NANOCHAT_TOKEN_BYTES, NANOCHAT_TOKENIZER, TOKEN_BYTES
from .shards import write_npy

ROW_GROUP_SIZE = 1024  # dev/repackage_data_reference.py: "multiple of 2, nicer for DDP"
PARQUET_OPTIONS = dict(  # the reference's pq.write_table arguments
    row_group_size=ROW_GROUP_SIZE,
    use_dictionary=False,
    compression="zstd",
    compression_level=3,
    write_statistics=False,
)
SHARD_CHARS = 250_000_000  # the reference's chars_per_shard
BOS = "<|bos|>"
# nanochat/tokenizer.py's, numbered in this order right after the merges: BOS, <|user_start|>, ...
ROLES = ("user", "assistant", "python", "output")
SPECIAL_TOKENS = (BOS, *(f"<|{role}_{end}|>" for role in ROLES for end in ("start", "end")))
DOC_CAP = 10_000  # scripts/tok_train.py: each document's first 10,000 characters...
MAX_CHARS = 2_000_000_000  # ...up to 2B characters in all
ENCODING_NAME = "rustbpe"  # the name tok_train gives its Encoding: the same merges, the same pickle
TORCH_LINE = (  # the one line that makes token_bytes.pt from its .npy copy, where torch is
    "python -c \"import numpy, torch; torch.save(torch.from_numpy(numpy.load('{npy}')), '{pt}')\""
)


def torch_note(npy):
    """What to tell a user with no torch, whose token_bytes.pt was written as `npy`."""
    return (
        f"torch is not importable here: {TOKEN_BYTES} in its place; where torch is, run\n"
        + TORCH_LINE.format(npy=npy, pt=Path(npy).with_suffix(".pt"))
    )


def cut_shards(documents, shard_chars=SHARD_CHARS):
    """The reference's cut: lists of documents, each closed once it holds shard_chars characters
    and a multiple of 1,024 documents; the rest is the last list (kept, unlike the reference's).

    2,048 documents of 1 character, shard_chars 1,000 -> [1,024 documents], [1,024 documents]
    """
    shard, chars = [], 0
    for text in documents:
        shard.append(text)
        chars += len(text)
        if chars >= shard_chars and len(shard) % ROW_GROUP_SIZE == 0:
            yield shard
            shard, chars = [], 0
    if shard:
        yield shard


def write_text_shard(path, texts):
    """One parquet shard of a `text` column, written as the reference writes it, atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with atomic_path(path) as tmp:
        pq.write_table(pa.Table.from_pydict({"text": list(texts)}), tmp, **PARQUET_OPTIONS)


def shard_texts(path):
    """A shard's documents, a row group at a time, as nanochat's parquets_iter_batched reads."""
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    for group in range(parquet.num_row_groups):
        yield parquet.read_row_group(group).column("text").to_pylist()


def split_batches(folder, shards, split):
    """A split's documents in nanochat's order, a row group at a time, of meta.json's shards."""
    for shard in shards:
        if shard["split"] == split:
            yield from shard_texts(Path(folder) / shard["file"])


def check_vocab_size(vocab_size):
    """A vocabulary with room for the 256 bytes, a merge and the nine specials, its ids 32-bit
    (bpe's bound): 266 -> 266; 265, 2**31 + 9 -> a PrepareError."""
    if vocab_size < 256 + 1 + len(SPECIAL_TOKENS):
        raise PrepareError(
            f"--vocab-size {vocab_size:,} leaves no room for a merge: nanochat needs 256 bytes + "
            f"9 special tokens, so at least 266"
        )
    try:
        bpe_checks.check_vocab_size(vocab_size, SPECIAL_TOKENS)
    except ValueError as exc:
        raise PrepareError(f"--vocab-size: {exc}") from None
    return vocab_size


def train_tokenizer(documents, vocab_size, doc_cap=DOC_CAP, max_chars=MAX_CHARS, progress=None):
    """tok_train.py with our trainer: vocab_size - 9 ids learned on the capped documents, then the
    nine special tokens -> a bpe.Tokenizer. progress(stage, done, total): as bpe's trainers call it.
    """
    num_learned = check_vocab_size(vocab_size) - len(SPECIAL_TOKENS)
    counter, done = FragmentCounter(NANOCHAT_PATTERN), 0
    for text in documents:  # tok_train.py's text_iterator: each cut, until past max_chars
        text = text[:doc_cap]
        counter.add(text)
        done += len(text)
        if progress:
            progress("pretokenize", done, None)
        if done > max_chars:
            break
    with warnings.catch_warnings():  # the trainer's short fall counts without the specials
        warnings.simplefilter("ignore")
        counts = counter.pretoken_counts()
        vocab, merges = train_bpe_from_counts(counts, num_learned, progress=progress)
    if not merges:
        raise PrepareError("the documents hold no pair of bytes to merge: nothing to train on")
    if len(vocab) < num_learned:
        print(
            f"note: asked for --vocab-size {vocab_size:,}, got {len(vocab) + len(SPECIAL_TOKENS):,}"
            f": no pair left to merge after {len(vocab) - 256:,} merge(s); the documents are few"
        )
    return Tokenizer(vocab, merges, special_tokens=list(SPECIAL_TOKENS), pattern="nanochat")


def nanochat_encoding(tokenizer):
    """The tiktoken.Encoding nanochat pickles: its pattern, the ranks in id order, the specials."""
    return tokenizer.to_tiktoken(name=ENCODING_NAME)


@functools.lru_cache(maxsize=4)
def token_byte_lengths(encoding):
    """tok_train.py's token_bytes, for any tiktoken Encoding: each id's bytes of text as int32 (0
    for a gap in the ids and a special token). GPT-2's [15496] ("Hello") -> 5."""
    pieces = token_pieces(encoding)
    lengths = np.fromiter(map(len, pieces), dtype=np.int32, count=len(pieces))
    lengths[list(encoding._special_tokens.values())] = 0
    return lengths


@functools.lru_cache(maxsize=4)
def token_pieces(encoding):
    """Each id's bytes (b"" for a gap): b"".join(pieces[ids]) is encoding.decode_bytes(ids), twice
    as fast. GPT-2's pieces[[15496, 995]] -> [b"Hello", b" world"]."""
    pieces = np.full(encoding.n_vocab, b"", dtype=object)
    for token, token_id in encoding._mergeable_ranks.items():  # decode_single_token_bytes',
        pieces[token_id] = token  # without a call a token: 30 times faster
    for token, token_id in encoding._special_tokens.items():
        pieces[token_id] = token.encode()
    return pieces


def write_tokenizer_dir(folder, encoding):
    """nanochat's tokenizer directory in `folder`: tokenizer.pkl, and token_bytes.pt (its .npy
    copy without torch, see torch_note) -> the names written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    pkl, pt = Path(NANOCHAT_TOKENIZER).name, Path(NANOCHAT_TOKEN_BYTES).name
    with atomic_path(folder / pkl) as tmp, open(tmp, "wb") as f:
        pickle.dump(encoding, f)  # tokenizer.py's save(): pickle.dump(self.enc, f)
    lengths = token_byte_lengths(encoding)
    try:
        import torch
    except ImportError:
        with atomic_path(folder / TOKEN_BYTES) as tmp, open(tmp, "wb") as f:
            write_npy(f, lengths)
        return [pkl, TOKEN_BYTES]
    with atomic_path(folder / pt) as tmp, open(tmp, "wb") as f:
        torch.save(torch.from_numpy(lengths), f)  # tok_train.py's torch.save(token_bytes, f)
    return [pkl, pt]


ENCODING_STATE = {"name": str, "pat_str": str, "mergeable_ranks": dict, "special_tokens": dict}


class _EncodingState:
    """A tokenizer.pkl's tiktoken.Encoding, its state kept as data: tiktoken's own __setstate__
    would look a registered name up (a download)."""

    def __setstate__(self, state):
        self.state = state


class _EncodingUnpickler(pickle.Unpickler):
    """Reads a tokenizer.pkl as data: every global but tiktoken.Encoding is refused."""

    def find_class(self, module, name):
        if (module, name) == ("tiktoken.core", "Encoding"):
            return _EncodingState
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a tiktoken.Encoding")


def load_encoding(path):
    """The tiktoken.Encoding of a tokenizer.pkl, read as data; else a PrepareError naming it."""
    import tiktoken

    data = read_small_file(path)
    try:
        state = _EncodingUnpickler(io.BytesIO(data)).load()
    except Exception as exc:  # a truncated or foreign pickle
        raise PrepareError(f"{path} is not a pickled tiktoken.Encoding ({exc})") from None
    state = getattr(state, "state", state)
    if not (
        isinstance(state, dict)
        and set(state) == set(ENCODING_STATE)
        and all(isinstance(state[key], kind) for key, kind in ENCODING_STATE.items())
        and all(type(k) is bytes and type(v) is int for k, v in state["mergeable_ranks"].items())
        and all(type(k) is str and type(v) is int for k, v in state["special_tokens"].items())
    ):
        what = repr(state)[:60] if isinstance(state, str) else type(state).__name__
        raise PrepareError(
            f"{path} holds {what}, not a tiktoken.Encoding's name, pattern, ranks and special "
            f"tokens (a registered encoding's name is refused: it would be downloaded)"
        )
    try:
        return tiktoken.Encoding(**state)
    except Exception as exc:  # a pattern tiktoken cannot compile, ranks that clash
        raise PrepareError(f"{path}: tiktoken cannot build its encoding ({exc})") from None


def special_tokens_problem(encoding):
    """What is wrong with the encoding's special tokens for nanochat (its nine after the merges)."""
    first = len(encoding._mergeable_ranks)
    expected = {token: first + i for i, token in enumerate(SPECIAL_TOKENS)}
    if encoding._special_tokens != expected:
        return (
            f"its special tokens are {encoding._special_tokens}, not nanochat's nine from id "
            f"{first:,}"
        )
    return None
