"""nanoGPT's data/shakespeare/prepare.py, as the oracle for tests (not product code). The code is
nanoGPT's, changed only where it must be to run here: the folder it reads input.txt from and
writes to is its first argument, input.txt must already be there, and GPT-2's files come through
formats.tokenizers.gpt2_encoding (the same encoding as tiktoken.get_encoding("gpt2"), offline).

    python tests/references/nanogpt_shakespeare.py DIR
"""

import os
import sys

import numpy as np

from formats.tokenizers import gpt2_encoding

folder = sys.argv[1]  # nanoGPT: os.path.dirname(__file__)

# --- from here on, nanoGPT's code ---
# fmt: off
input_file_path = os.path.join(folder, 'input.txt')
with open(input_file_path, encoding='utf-8') as f:
    data = f.read()
n = len(data)
train_data = data[:int(n*0.9)]
val_data = data[int(n*0.9):]

# encode with tiktoken gpt2 bpe
enc = gpt2_encoding()  # nanoGPT: tiktoken.get_encoding("gpt2")
train_ids = enc.encode_ordinary(train_data)
val_ids = enc.encode_ordinary(val_data)
print(f"train has {len(train_ids):,} tokens")
print(f"val has {len(val_ids):,} tokens")

# export to bin files
train_ids = np.array(train_ids, dtype=np.uint16)
val_ids = np.array(val_ids, dtype=np.uint16)
train_ids.tofile(os.path.join(folder, 'train.bin'))
val_ids.tofile(os.path.join(folder, 'val.bin'))
