"""Recall: the transcripts (sources, zstd, formats, cache, sessions, append), the pre-scan,
the search, FTS5 and the index; and her own past searched the same way (past)."""
