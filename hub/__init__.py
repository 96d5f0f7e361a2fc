"""Reading a source by a token budget (`--max-tokens N`): only the part of it that N tokens need.

budget.py reads a pinned hub dataset's parquet files a row group at a time; prefix.py the first
bytes of a file read front to back. Every piece is cached, checked and resumable. It imports
safety and documents, nothing above them.
"""

from .budget import budgeted_documents, count_documents, document_tokens, token_budget

__all__ = ["budgeted_documents", "count_documents", "document_tokens", "token_budget"]
