"""Recall: the transcripts (where, formats, zstd, caches), the search, FTS5 and the index."""
