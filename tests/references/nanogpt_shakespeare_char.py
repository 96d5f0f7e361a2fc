"""nanoGPT's data/shakespeare_char/prepare.py, as the oracle for tests and benchmarks (not product
code). The code is nanoGPT's, changed only where it must be to run here: the folder it reads
input.txt from and writes to is its first argument instead of its own folder, and input.txt must
already be there (nanoGPT downloads it with requests, which it still imports).

    python tests/references/nanogpt_shakespeare_char.py DIR
"""

import os
import pickle
import sys

import numpy as np
import requests  # noqa: F401  (nanoGPT imports it to download input.txt: part of its start-up)

folder = sys.argv[1]  # nanoGPT: os.path.dirname(__file__)

# --- from here on, nanoGPT's code ---
# fmt: off
input_file_path = os.path.join(folder, 'input.txt')
with open(input_file_path) as f:
    data = f.read()
print(f"length of dataset in characters: {len(data):,}")

# get all the unique characters that occur in this text
chars = sorted(list(set(data)))
vocab_size = len(chars)
print("all the unique characters:", ''.join(chars))
print(f"vocab size: {vocab_size:,}")

# create a mapping from characters to integers
stoi = { ch:i for i,ch in enumerate(chars) }
itos = { i:ch for i,ch in enumerate(chars) }
def encode(s):
    return [stoi[c] for c in s] # encoder: take a string, output a list of integers
def decode(l):  # noqa: E741
    return ''.join([itos[i] for i in l]) # decoder: take a list of integers, output a string

# create the train and test splits
n = len(data)
train_data = data[:int(n*0.9)]
val_data = data[int(n*0.9):]

# encode both to integers
train_ids = encode(train_data)
val_ids = encode(val_data)
print(f"train has {len(train_ids):,} tokens")
print(f"val has {len(val_ids):,} tokens")

# export to bin files
train_ids = np.array(train_ids, dtype=np.uint16)
val_ids = np.array(val_ids, dtype=np.uint16)
train_ids.tofile(os.path.join(folder, 'train.bin'))
val_ids.tofile(os.path.join(folder, 'val.bin'))

# save the meta information as well, to help us encode/decode later
meta = {
    'vocab_size': vocab_size,
    'itos': itos,
    'stoi': stoi,
}
with open(os.path.join(folder, 'meta.pkl'), 'wb') as f:
    pickle.dump(meta, f)
