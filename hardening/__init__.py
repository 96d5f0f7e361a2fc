"""The hardening behind prepare_common.py: what makes the lessons' helpers safe, not what they teach.

prepare_common.py states each contract in a few lines and imports the implementation from here:

- errors.py: PrepareError, and naming the file an unexpected exception was reading
- signals.py: Ctrl-C and SIGTERM as exceptions, held back while a commit renames its files
- cli.py: run_main (one `error:` line, never a traceback) and the argument parser
- files.py: strict and bounded readers, atomic writes, a pickle read without running it
- commit.py: the folder commit (lock, staging, replace, meta.json last)
- http.py: a download with retries of what may pass
- tokenizers.py: a tokenizer's fingerprint, and the check that its pattern loses no text
- documents.py: document collections loaded with `datasets`, their edge cases refused
- formats.py: the names and headers of the files a prepared folder holds, and their readers
- audit.py, show.py: `verify` and `show`, the auditor of a prepared folder
- archive.py: the JSON files of a .tar.gz read in place, every member checked (TinyStories)
- spool.py, pool.py: arrays written in order whatever order they come in; a pool whose results
  come back in order, a few items read ahead (memory flat in the input's size)
- stories.py: TinyStories' splits, and a vocabulary trained on its stories
- packing.py: `packing`, what nanoGPT's get_batch draws from a split, and what BOS alignment keeps

Layers: bpe < hardening < prepare_common < the lessons < engine < the commands. Nothing here
imports prepare_common or a lesson, and importing a module runs nothing but definitions.
"""
