"""Reading a source by a token budget: only the part of it that N tokens need.

- budget.py: `--max-tokens N` (`token_budget`), and `budgeted_documents`, which reads a pinned
  hub dataset's parquet files in order, a row group at a time through HTTP range requests, until
  the documents hold N tokens of the folder's tokenizer; every piece cached, checked, resumable;
  `count_documents`, the documents of those files by their footers.
- prefix.py: `Prefix`, the first bytes of a file read front to back (TinyStories' .tar.gz,
  parameter-golf's docs_selected.jsonl), fetched a piece at a time by HTTP Range requests as
  they are read, kept and hashed in the cache, resumable; `pinned_prefix` (a RemoteFile, its
  mirror honoured) and `hub_prefix` (a hub file, at the commit `hub_commit` finds its branch
  at) make one.

Layers: it imports safety and documents (the hub's listing), nothing above them.
"""

from .budget import budgeted_documents, count_documents, document_tokens, token_budget

__all__ = ["budgeted_documents", "count_documents", "document_tokens", "token_budget"]
