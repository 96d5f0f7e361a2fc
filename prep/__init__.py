"""What the data/*/prepare.py scripts share, one module per job; each script imports every name
from the module that defines it.

Read in this order:

- errors.py: PrepareError, a problem the user can fix, and run_main, which prints it as one line
- files.py: files on disk: read a text strictly, hash a file, write one atomically
- downloads.py: pinned remote files, fetched (or copied from the offline mirror) and checksummed
- tokenizers.py: the tiktoken Encoding a BPE pipeline encodes with: GPT-2's or a trained one
- documents.py: collections of documents (OpenWebText, local files): load, check, tokenize
- datatrove_engine.py, datatrove_stages.py: the same, as datatrove pipeline steps (--engine datatrove)
- binfiles.py: token ids and the .bin files: dtype, id checks, streaming writer
- meta.py: meta.json and nanoGPT's meta.pkl beside the outputs, and `verify`, which re-checks them
- show.py: one block of a prepared folder as nanoGPT's get_batch reads it, x and y, decoded
- datatrove_training.py: tokenizer training whose counting runs as datatrove tasks (a cluster)
- folder.py: the output folder changes as one transaction (`with output_folder(out_dir) as out:`),
  locked against a second run
"""
