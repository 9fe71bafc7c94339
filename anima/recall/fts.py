"""What a recall term matches, and how often: SQLite FTS5's tokenizer and phrase queries.

One definition serves the index and the scan alike, so the two can only agree: a turn's
text becomes an FTS5 body (a space around each CJK character, so that each is a token of
its own), FTS5's `porter unicode61` tokenizer cuts it into words, case-folded and stemmed
(an English "parked" matches "park"), and a term is a phrase query over those tokens (its
tokens in order, anything but tokens between them). The scan puts its candidate turns into
an in-memory FTS5 table and asks it the same questions the index answers.

How often a phrase stands in a row is not something the stdlib's sqlite3 can ask FTS5, but
FTS5's bm25() for that one phrase is a function of exactly that count and of numbers FTS5
keeps (its rows, its tokens, the row's size, the phrase's rows), so the count is recovered
from it exactly.
"""

import math
import re

TOKENIZE = "porter unicode61 remove_diacritics 0"
CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF))
K1 = 1.2  # FTS5's bm25() constants, needed to invert it
B = 0.75
_SPACING: list | None = None
_ASTRAL: re.Pattern | str | None = None  # FTS5's separators past the BMP, which a list table leaves as they are
_NON_ASCII = re.compile(r"([^\x00-\x7f]+)")
# After `body`, the only separators left are ASCII's: a token is a run of anything else, but
# for FTS5's marks (a few combining accents), which go on a token and begin none
_SEPARATOR = r"\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f"
_ASCII_TOKEN = re.compile(f"[^{_SEPARATOR}]+")
_TOKEN: re.Pattern | None = None
_WIDE = re.compile("[\U00010000-\U0010ffff]")  # (a class of FTS5's separators past the BMP is slow to scan)


def body(text: str) -> str:
    """The text FTS5 tokenises: a space around each CJK character, so that each is a token of
    its own; the BMP's private-use characters (tokens to FTS5, not to recall) and FTS5's own
    separators past ASCII (anima/data/separators.json: unicode61's table is Unicode 6.1's,
    which Python's str.isalnum does not follow) made spaces, so that `count_tokens` counts
    what FTS5 cuts with a simple pattern. str.translate does it at C speed, with a list
    for a table (an index, not a dict lookup, per character: 1.75x faster; characters past
    its end are left as they are), given only the runs of non-ASCII characters: on the rest
    it would look each character up all the same (the bench corpus's mixed Chinese and
    English: 1.3x faster)."""
    global _ASTRAL
    if text.isascii():  # nothing to space: no CJK, no private use, only ASCII's separators
        return text
    if _SPACING is None:
        _tables()
    parts = _NON_ASCII.split(text)
    parts[1::2] = [p.translate(_SPACING) for p in parts[1::2]]
    out = "".join(parts)
    if _WIDE.search(out):
        if isinstance(_ASTRAL, str):
            _ASTRAL = re.compile(_ASTRAL)  # (~10 ms: only for a text past the BMP)
        out = _ASTRAL.sub(" ", out)
    return out


def _tables() -> None:
    """Build body's translation table (by joins and splits, in C: 8 ms, where a loop takes
    13), the pattern of FTS5's separators past the BMP (compiled when a text needs it) and
    the one of a token."""
    global _SPACING, _ASTRAL, _TOKEN
    import json

    from anima.infra.text import data

    table = list(map(chr, range(0x10000)))
    for lo, hi in CJK_RANGES:
        table[lo:hi + 1] = (" " + " \0 ".join(table[lo:hi + 1]) + " ").split("\0")
    table[0xE000:0xF900] = [" "] * (0xF900 - 0xE000)
    tokenizer = json.loads(data("separators.json"))
    astral = []
    for lo, hi in tokenizer["separators"]:
        bmp = range(max(lo, 0x80), min(hi, 0xFFFF) + 1)  # (ASCII's are left for FTS5 to cut at)
        table[bmp.start:bmp.stop] = [" "] * len(bmp)
        if hi >= 0x10000:
            astral.append(f"\\U{max(lo, 0x10000):08x}-\\U{hi:08x}")
    marks = "".join(f"\\u{lo:04x}-\\u{hi:04x}" for lo, hi in tokenizer["marks"])
    _ASTRAL = f"[{''.join(astral)}]"
    _TOKEN = re.compile(f"[{marks}]*[^{_SEPARATOR}{marks}][^{_SEPARATOR}]*")
    _SPACING = table


def token_count(text: str) -> int:
    """How many tokens a text has, as FTS5 counts them in its body (each CJK character one):
    for lengths. (A text that is not ASCII takes ~1.8x the one pass of Python's \\w it took
    before, which miscounted what FTS5 and Python's Unicode disagree on.)"""
    return count_tokens(body(text))


def count_tokens(spaced: str) -> int:
    """How many tokens a body (see `body`) has."""
    if spaced.isascii():
        return len(_ASCII_TOKEN.findall(spaced))
    if _TOKEN is None:
        _tables()
    return len(_TOKEN.findall(spaced))


def is_cjk(o: int) -> bool:
    """Whether code point `o` is in CJK_RANGES: a token of its own, whatever stands beside it."""
    return any(lo <= o <= hi for lo, hi in CJK_RANGES)


def spaced(term: str) -> str:
    """A term spaced like `body`, without building its translation table: a query is a few
    characters, and the table costs ~10 ms to build."""
    return "".join(f" {ch} " if is_cjk(ord(ch)) else " " if 0xE000 <= ord(ch) < 0xF900 else ch for ch in term)


def phrase(term: str) -> str:
    """The FTS5 query for `term` as one phrase. FTS5 reads a query as a C string, which a NUL
    would end ("unterminated string"); its tokenizer takes a NUL for a separator, so a space
    stands for one."""
    return '"' + spaced(term).replace('"', '""').replace("\0", " ") + '"'


def varints(blob: bytes) -> list[int]:
    """SQLite's variable-length integers, as FTS5 stores its sizes."""
    out, i = [], 0
    while i < len(blob):
        value = 0
        for k in range(9):
            byte = blob[i]
            i += 1
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


def totals(con, table: str = "f") -> tuple[int, int]:
    """FTS5's own row and token counts: what its bm25() uses."""
    row = con.execute(f"SELECT block FROM {table}_data WHERE id=1").fetchone()
    if not row or not row[0]:
        return 0, 0
    n_row, n_tok = varints(row[0])[:2]
    return n_row, n_tok


def phrase_rows(con, match: str, columns: str = "", join: str = "", table: str = "f") -> dict[int, tuple]:
    """{rowid: (count, size in tokens, *more)} of every row holding the phrase; `columns`
    (", t.a, t.b") and `join` ("LEFT JOIN t ON ...") add more to each row."""
    sql = (f"SELECT {table}.rowid, bm25({table}), d.sz{columns} FROM {table} "
           f"JOIN {table}_docsize d ON d.id = {table}.rowid {join} WHERE {table} MATCH ?")
    rows = con.execute(sql, (match,)).fetchall()
    if not rows:
        return {}
    count = counter(con, len(rows), table)
    out = {}
    for rowid, score, sz, *more in rows:
        size = varints(sz)[0]
        out[rowid] = (count(score, size), size, *more)
    return out


def rows_counts(con, match: str, rowids: list[int], n_hit: int, table: str = "f") -> dict[int, int]:
    """{rowid: how often the phrase stands in it} for those of `rowids` that hold it; `n_hit`:
    how many rows of the table hold it. The rowids are a filter SQLite applies to what FTS5
    yields (`+rowid`), not a constraint handed to FTS5: given one, FTS5 starts the phrase's
    query, bm25()'s count of its rows included, over again for each rowid (0.2 ms each); this
    way the phrase's rows are walked once, at C speed, and bm25() computed for the few kept.
    The rowids go in as one JSON array, so that one statement walks them however many there
    are (in lists of 900 parameters, each list walked the phrase's rows again: 3.5x slower)."""
    import json

    count = counter(con, n_hit, table)
    sql = (f"SELECT {table}.rowid, bm25({table}), d.sz FROM {table} JOIN {table}_docsize d ON d.id = "
           f"{table}.rowid WHERE {table} MATCH ? AND +{table}.rowid IN (SELECT value FROM json_each(?))")
    return {rowid: count(score, varints(sz)[0]) for rowid, score, sz in con.execute(sql, (match, json.dumps(rowids)))}


def rows_matching(con, match: str, rowids: list[int], table: str = "f") -> list[int]:
    """Those of `rowids` whose row matches the FTS5 query `match`: a filter on what FTS5
    yields, the rowids one JSON array, as in rows_counts."""
    import json

    sql = f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND +rowid IN (SELECT value FROM json_each(?))"
    return [r for (r,) in con.execute(sql, (match, json.dumps(rowids)))]


def counter(con, n_hit: int, table: str = "f"):
    """count(bm25, size): how often a phrase that `n_hit` rows hold stands in a row of `size`
    tokens whose bm25() for it alone is `bm25`."""
    n_row, n_tok = totals(con, table)
    avgdl = n_tok / n_row
    idf = math.log((n_row - n_hit + 0.5) / (n_hit + 0.5))
    if idf <= 0.0:
        idf = 1e-6

    def count(score: float, size: int) -> int:
        g = -score / idf
        k = K1 * (1 - B + B * size / avgdl)
        return max(1, round(g * k / ((K1 + 1) - g)))

    count.idf, count.avgdl = idf, avgdl  # (for the same arithmetic in SQL)
    return count


def hits(con, match: str, table: str = "f") -> int:
    """How many rows hold the phrase."""
    return con.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (match,)).fetchone()[0]


def token_counts(con, token: str, rowids, table: str = "f") -> dict[int, int]:
    """{rowid: how often the token stands in it} for those of `rowids` that hold it, read from
    FTS5's own instance list (fts5vocab): no bm25(), which would count the token's rows over
    the whole table first. `token` is as the tokenizer makes it (a CJK character is itself)."""
    vocab = instances(con, table)
    rowids = sorted(rowids)
    out: dict[int, int] = {}
    for i in range(0, len(rowids), 900):
        part = rowids[i:i + 900]
        out.update(con.execute(f"SELECT doc, count(*) FROM temp.{vocab} WHERE term = ? AND doc IN "
                               f"({','.join('?' * len(part))}) GROUP BY doc", (token, *part)))
    return out


def instances(con, table: str = "f") -> str:
    """The name of a temp fts5vocab table of the table's instance list (term, doc, col,
    offset), made if need be: what a token's counts are read from."""
    vocab = f"anima_{table}_instances"
    con.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{vocab} USING fts5vocab(main, {table}, instance)")
    return vocab


def create(con, table: str = "f") -> None:
    con.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(body, content='', detail=full, tokenize='{TOKENIZE}')")


class Memory:
    """An in-memory FTS5 table of texts, rowids 1, 2, ... in the order added."""

    def __init__(self):
        import sqlite3

        self.con = sqlite3.connect(":memory:")
        create(self.con)
        self.rows = 0
        self.pending: list[tuple[int, str]] = []

    def add(self, text: str) -> int:
        return self.add_body(body(text))

    def add_body(self, spaced: str) -> int:
        """Add a text already made a body (`body`)."""
        self.rows += 1
        self.pending.append((self.rows, spaced))
        if len(self.pending) >= 1000:
            self._insert()
        return self.rows

    def _insert(self) -> None:
        self.con.executemany("INSERT INTO f(rowid, body) VALUES(?,?)", self.pending)
        self.pending = []

    def flush(self) -> None:
        self._insert()
        # FTS5 writes its totals (which bm25() reads) when the transaction ends; one
        # transaction for all the rows (one a thousand rows: 10% slower)
        self.con.commit()

    def phrase_rows(self, match: str) -> dict[int, tuple]:
        self.flush()
        return phrase_rows(self.con, match) if self.rows else {}

    def token_counts(self, token: str, rowids: list[int]) -> dict[int, int]:
        self.flush()
        return token_counts(self.con, token, rowids) if self.rows else {}


def stems(words: list[str]) -> dict[str, str]:
    """Each word as FTS5's tokenizer makes it (case-folded, stemmed); a word it splits or
    drops is left out."""
    import sqlite3

    con = sqlite3.connect(":memory:")
    con.execute(f"CREATE VIRTUAL TABLE s USING fts5(w, tokenize='{TOKENIZE}')")
    con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(s, instance)")
    con.executemany("INSERT INTO s(rowid, w) VALUES(?,?)", enumerate(words, 1))
    got: dict[int, list[str]] = {}
    for term, doc in con.execute("SELECT term, doc FROM v"):
        got.setdefault(doc, []).append(term)
    con.close()
    return {w: got[i][0] for i, w in enumerate(words, 1) if len(got.get(i, [])) == 1}
