"""llm.c's dev/data/tinystories.py, as the reference for tests (not product code).

Written in our own words from the source (karpathy/llm.c: dev/data/tinystories.py and
dev/data/data_common.py `write_datafile`), single process, so that tests can compare our files
with what llm.c writes from the same archive. What llm.c does, and so what this does:

- it downloads TinyStories_all_data.tar.gz (the hub's `main`, unpinned, unchecked) and unpacks
  it with `tar -xzf` into a folder TinyStories_all_data/; the JSON files are
  sorted(glob("TinyStories_all_data/*.json")): the folder's top only, sorted by name. (Its
  docstring reports 50 of them, so the archive holds data00.json ... data49.json at its top.)
- the first file is val, the others train;
- each split's files are submitted, in that order, to a ProcessPoolExecutor as
  process_shard(shard_index, filename), shard_index counting from 0 WITHIN the split: val's
  data00.json is 0, and so is train's first file (data01.json), data02.json is 1, ...;
- process_shard json.load()s the file (a list of objects), shuffles the list in place with
  random.Random(1337 + shard_index), and for each object takes example["story"].strip() and
  appends the end-of-text id (50256), then encode_ordinary(story) (a story that strips to
  nothing gives the end-of-text id alone);
- the split's tokens are the files' lists concatenated in the order the futures complete
  (`as_completed`), which is the order they were submitted only with one worker: this module
  gives that one-worker order, the files' sorted order;
- write_datafile(TinyStories_{split}.bin): 256 int32 (20240520, 1, number of tokens, then 0),
  then np.array(tokens, dtype=np.uint16); it asserts fewer than 2**31 tokens. Val is written
  before train. (The llama-3 variant, uint32 with magic 20240801, is not modelled.)

    write_llmc_tinystories(data_dir, encoding, out_dir) -> [val path, train path]
"""

import json
import random
from pathlib import Path

import numpy as np

HEADER_INTS = 256
MAGIC, VERSION = 20240520, 1


def shard_tokens(shard_index, filename, encoding):
    """llm.c's process_shard for gpt-2: the file's stories shuffled, each [eot] + its ids."""
    with open(filename, encoding="utf-8") as f:
        data = json.load(f)
    rng = random.Random(1337 + shard_index)
    rng.shuffle(data)
    tokens = []
    for example in data:
        text = example["story"].strip()
        tokens.append(encoding.eot_token)
        tokens.extend(encoding.encode_ordinary(text))
    return tokens


def write_datafile(path, tokens):
    """llm.c's write_datafile for gpt-2: the header, then the tokens as uint16."""
    assert len(tokens) < 2**31, "token count too large"
    header = np.zeros(HEADER_INTS, dtype=np.int32)
    header[0], header[1], header[2] = MAGIC, VERSION, len(tokens)
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.array(tokens, dtype=np.uint16).tobytes())


def split_files(data_dir):
    """(val files, train files): the folder's *.json, sorted, the first one val."""
    names = sorted(Path(data_dir).glob("*.json"))
    return names[:1], names[1:]


def split_tokens(data_dir, encoding):
    """{"val": [...], "train": [...]}: each split's tokens, its files in sorted order."""
    val, train = split_files(data_dir)
    return {
        split: [t for index, name in enumerate(files) for t in shard_tokens(index, name, encoding)]
        for split, files in (("val", val), ("train", train))
    }


def write_llmc_tinystories(data_dir, encoding, out_dir):
    """What llm.c writes into its tinystories/ folder from the unpacked JSON files in
    `data_dir`: TinyStories_val.bin, then TinyStories_train.bin; their paths."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)  # llm.c's os.makedirs
    paths = []
    for split, tokens in split_tokens(data_dir, encoding).items():
        paths.append(Path(out_dir) / f"TinyStories_{split}.bin")
        write_datafile(paths[-1], tokens)
    return paths
