"""llm.c's dev/data/fineweb.py and its readers, as the reference for tests (not product code).

Written in our own words from the sources (karpathy/llm.c: dev/data/fineweb.py,
dev/data/data_common.py `write_datafile`, llmc/dataloader.h, train_gpt2.py, train_llama3.py),
single process, so that tests can compare our shards with what llm.c writes from the same
documents in the same order. What llm.c does, and so what this does:

- every document becomes [<|endoftext|>] + encode_ordinary(text): the end-of-text token comes
  FIRST (it delimits documents), as a numpy array checked to fit the dtype
  (`0 <= ids < 2**16` for gpt-2) and cast to it;
- a buffer of `shard_size` tokens fills in document order; while `count + len(doc) < shard_size`
  the document is appended; otherwise the shard is topped up with the document's first
  `shard_size - count` tokens, written, and the next shard starts with the rest of the document;
- shard 0 is `val`, the others `train`: `{name}_{split}_{index:06d}.bin`, name `edu_fineweb`
  (--type edu) or `fineweb` (--type classic, llm.c's default);
- after the last document, the partial shard is written if it holds any token (never an empty
  shard, so a corpus that ends exactly on a boundary has no extra file);
- a shard file is a header of 256 int32 (header[0] magic, header[1] version, header[2] the number
  of tokens, the rest 0), then the tokens: gpt-2 -> magic 20240520, version 1, uint16;
  llama-3 -> magic 20240801, version 7, uint32. `write_datafile` asserts fewer than 2**31 tokens.

Where llm.c's own script stops with a traceback, so does this (a test can show that our product
handles the case): its progress bar is created only when a document is appended, so a document
that reaches the end of a shard before any document was appended to that shard (the very first
document filling shard 0, or two boundary-crossing documents in a row) hits `None.update` (an
AttributeError); a document whose rest is longer than a whole shard does not fit the buffer
(numpy's ValueError "could not broadcast").

    write_llmc_shards(documents, encoding, out_dir, shard_size=10**8, type="classic",
                      model_desc="gpt-2") -> [Path, ...]
"""

from pathlib import Path

import numpy as np

HEADER_INTS = 256
FORMATS = {  # model_desc -> (magic, version, token dtype), as data_common.HEADERS_INFO
    "gpt-2": (20240520, 1, np.uint16),
    "llama-3": (20240801, 7, np.uint32),
}
NAMES = {"edu": "edu_fineweb", "classic": "fineweb"}


class ReferenceCrash(Exception):
    """Where llm.c's fineweb.py would stop with a traceback (see the module's docstring)."""


def document_tokens(text, encoding, model_desc="gpt-2"):
    """One document as llm.c tokenizes it: end of text first, then the text's ids."""
    dtype = FORMATS[model_desc][2]
    tokens = np.array([encoding.eot_token, *encoding.encode_ordinary(text)])
    assert (tokens >= 0).all() and (tokens < 2 ** (8 * np.dtype(dtype).itemsize)).all()
    return tokens.astype(dtype)


def write_datafile(path, tokens, model_desc="gpt-2"):
    """A .bin shard: the 256-int32 header, then the tokens."""
    magic, version, dtype = FORMATS[model_desc]
    assert len(tokens) < 2**31, "token count too large"
    header = np.zeros(HEADER_INTS, dtype=np.int32)
    header[0], header[1], header[2] = magic, version, len(tokens)
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.asarray(tokens, dtype=dtype).tobytes())


def write_llmc_shards(
    documents, encoding, out_dir, shard_size=10**8, type="classic", model_desc="gpt-2"
):
    """Write the shards llm.c's fineweb.py writes from `documents` (texts, in order); return
    their paths in order. Raises ReferenceCrash where llm.c's script would crash."""
    out_dir = Path(out_dir)
    dtype = FORMATS[model_desc][2]
    buffer = np.empty(shard_size, dtype=dtype)
    count, index, paths = 0, 0, []
    bar_open = False  # llm.c's progress bar: made by an append, dropped by a write

    def shard_path():
        split = "val" if index == 0 else "train"
        return out_dir / f"{NAMES[type]}_{split}_{index:06d}.bin"

    for text in documents:
        tokens = document_tokens(text, encoding, model_desc)
        if count + len(tokens) < shard_size:
            buffer[count : count + len(tokens)] = tokens
            count += len(tokens)
            bar_open = True
            continue
        if not bar_open:
            raise ReferenceCrash("llm.c: 'NoneType' object has no attribute 'update'")
        room = shard_size - count
        buffer[count:] = tokens[:room]
        paths.append(shard_path())
        write_datafile(paths[-1], buffer, model_desc)
        index += 1
        bar_open = False
        rest = tokens[room:]
        if len(rest) > shard_size:
            raise ReferenceCrash("llm.c: could not broadcast the rest of a document into a shard")
        buffer[: len(rest)] = rest
        count = len(rest)
    if count != 0:
        paths.append(shard_path())
        write_datafile(paths[-1], buffer[:count], model_desc)
    return paths


# ---------------------------------------------------------------------------------------------
# llm.c's readers of a shard: what train_gpt2 (C and Python) and train_llama3.py check


def llmc_check_shard(path, min_tokens=1):
    """llmc/dataloader.h's checks of a uint16 shard; return its token count.

    Magic 20240520 ("Bad magic"), version 1 ("Bad version"), header[2] > 0, and the file size
    exactly 256*4 + 2*header[2] bytes. dataloader_init also asserts that every shard holds at
    least num_processes*B*T + 1 tokens: pass that as min_tokens to apply it.
    """
    data = Path(path).read_bytes()
    header = np.frombuffer(data[: HEADER_INTS * 4], dtype=np.int32)
    assert header[0] == 20240520, "Bad magic in the data file"
    assert header[1] == 1, "Bad version in data file"
    ntok = int(header[2])
    assert ntok > 0
    assert len(data) == HEADER_INTS * 4 + ntok * 2, "Error: file size is not as expected"
    assert ntok >= min_tokens, "dataloader_init: a shard smaller than one batch + 1"
    return ntok


def llmc_python_load(path):
    """train_gpt2.py's (uint16) or train_llama3.py's (uint32) `_load_data_shard`: the tokens."""
    data = Path(path).read_bytes()
    header = np.frombuffer(data[: HEADER_INTS * 4], dtype=np.int32)
    formats = {20240520: (1, np.uint16), 20240801: (7, np.uint32)}
    assert int(header[0]) in formats, "magic number mismatch in the data .bin file"
    version, dtype = formats[int(header[0])]
    assert header[1] == version, "unsupported version"
    tokens = np.frombuffer(data[HEADER_INTS * 4 :], dtype=dtype)
    assert len(tokens) == header[2], "number of tokens read does not match header?"
    return tokens
