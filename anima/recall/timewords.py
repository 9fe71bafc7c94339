"""The words that tell a time: a turn that holds one ("yesterday", "last week", a weekday or
month, 去年: anima/data/time_words.txt) more likely says when than one that only shares a
question's words, and a question that asks when favours it (anima.recall.window).

Whether a turn holds one is asked of FTS5, as a term is found: for the index once, when it
indexes the turn (anima.recall.index keeps the answer, and its version names these words, so
that an index made with other words is made again), for a scanned turn in an in-memory table.
"""

import functools


@functools.cache
def match() -> str:
    """The FTS5 query for a turn that tells a time: any of the words, each a phrase."""
    from anima.infra.text import data
    from anima.recall import fts

    words = [w for ln in data("time_words.txt").splitlines() if not ln.startswith("#") for w in ln.split()]
    return " OR ".join(fts.phrase(w) for w in words)


@functools.cache
def digest() -> str:
    """Eight hex digits that change when the words do (their CRC-32: hashlib's import alone
    costs a query 4 ms)."""
    import zlib

    return f"{zlib.crc32(match().encode()):08x}"
