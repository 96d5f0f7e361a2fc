"""GPT-2's two tokenizer files, pinned once for the whole project: URL and sha256.

Every reader of them (`python -m bpe show`, the lessons' tiktoken "gpt2", `verify`) checks the
bytes against these.
"""

# GPT-2's two files as tiktoken fetches and caches them (tiktoken_ext.openai_public.gpt2): URL, sha256.
GPT2_FILES = {
    "encoder.json": (
        "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/encoder.json",
        "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    ),
    "vocab.bpe": (
        "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe",
        "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
    ),
}
