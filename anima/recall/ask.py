"""A question in plain language as recall terms, and the dates it names.

A host or a model asks "When did Maria get Coco?", not `maria coco`. Taken word for word,
"when" and "did" are terms like any other, and in short chat turns they keep an idf of 2 to
3: turns full of question words outrank the evidence. So a question is read as a person
would search with it:

- a date it names ("14 March 2023", "March 14, 2023", "March 2023", "2023-03-14", an RFC 3339
  time's day, "2023年3月14日" in ASCII or full-width digits, "2023年3月", a year "in 2023") is
  taken out of the words and kept as a span of time (UTC days), which the ranking favours
  turns near (anima.recall.window);
- a part in double quotes ("parked car") stays one term, as given, whatever words it holds;
- an English possessive is its noun ("Melanie's", "James'": Melanie, James), so that it
  matches where the name stands alone ("Melanie: ...");
- English words are case-folded and the function words of anima/data/function_words/en.txt
  dropped; a run of Chinese (CJK) characters is cut at its function characters and words
  (zh.txt), which are dropped, and each piece is searched as its pairs of adjacent
  characters (a piece of one character as that character);
- if nothing would be left, every word is kept: a question made only of function words still
  asks for them;
- a question that asks when ("When did ...", "what day", "how long ago", 什么时候, 哪天) is
  marked so: the ranking favours the turns that tell a time (anima.recall.window).
"""

import calendar
import functools
import re

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
_MONTH = {m: i for i, m in enumerate(MONTHS, 1)} | {m[:3]: i for i, m in enumerate(MONTHS, 1)} | {"sept": 9}
DAY = 86400


@functools.cache
def _dates() -> list[tuple[re.Pattern, str]]:
    month = "(" + "|".join(sorted(_MONTH, key=len, reverse=True)) + r")\.?"
    day = r"(\d{1,2})(?:st|nd|rd|th)?"
    year = r"((?:19|20)\d\d)"
    return [(re.compile(p, re.IGNORECASE), kind) for p, kind in (
        (rf"\b{day}\s+(?:of\s+)?{month},?\s+{year}\b", "dmy"),
        (rf"\b{month}\s+{day},?\s+{year}\b", "mdy"),
        (rf"\b{year}-(\d\d)-(\d\d)(?:T\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?(?![\d-])", "ymd"),
        (rf"{year}\s*年\s*(\d{{1,2}})\s*月\s*(\d{{1,2}})\s*[日号]", "ymd"),
        (rf"\b{month},?\s+{year}\b", "my"),
        (rf"\b{year}-(\d\d)\b", "ym"),
        (rf"{year}\s*年\s*(\d{{1,2}})\s*月", "ym"),
        (rf"\b(?:in|during|of|since|from|until|before|after)\s+{year}\b", "y"),
        (rf"{year}\s*年", "y"),
    )]


def _span(kind: str, groups: tuple) -> tuple[float, float] | None:
    """The UTC days [start, end) a matched date names; None for no such day."""
    g = list(groups)
    try:
        if kind == "dmy":
            d, m, y = int(g[0]), _MONTH[g[1].lower()], int(g[2])
        elif kind == "mdy":
            m, d, y = _MONTH[g[0].lower()], int(g[1]), int(g[2])
        elif kind == "ymd":
            y, m, d = int(g[0]), int(g[1]), int(g[2])
        elif kind == "my":
            m, y, d = _MONTH[g[0].lower()], int(g[1]), 0
        elif kind == "ym":
            y, m, d = int(g[0]), int(g[1]), 0
        else:
            start = calendar.timegm((int(g[0]), 1, 1, 0, 0, 0))
            return start, calendar.timegm((int(g[0]) + 1, 1, 1, 0, 0, 0))
        if d:
            if not 1 <= d <= calendar.monthrange(y, m)[1]:  # (31 April; monthrange refuses month 13)
                return None
            start = calendar.timegm((y, m, d, 0, 0, 0))
            return start, start + DAY
        start = calendar.timegm((y, m, 1, 0, 0, 0))
        return start, start + calendar.monthrange(y, m)[1] * DAY
    except (ValueError, KeyError, IndexError):
        return None


# Full-width digits, as a Chinese keyboard may type a date (２０２３年３月): read as ASCII ones,
# one character for one, so that a match's place is the same in the text as written.
_FULL_WIDTH_DIGITS = {0xFF10 + i: 0x30 + i for i in range(10)}


def dates(text: str) -> tuple[list[tuple[float, float]], str]:
    """The spans of time a text names, and the text without them."""
    spans = []
    for pattern, kind in _dates():
        kept, at = [], 0
        for m in pattern.finditer(text.translate(_FULL_WIDTH_DIGITS)):
            span = _span(kind, m.groups())
            if span is not None:
                spans.append(span)
                kept += [text[at:m.start()], " "]
                at = m.end()
        text = "".join(kept) + text[at:]
    return spans, text


@functools.cache
def _function_words(lang: str) -> tuple[frozenset, frozenset]:
    """(words, single characters) of anima/data/function_words/LANG.txt."""
    from anima.infra.text import data

    lines = [ln.strip() for ln in data(f"function_words/{lang}.txt").splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    if lang == "zh":
        return frozenset(w for ln in lines[1:] for w in ln.split()), frozenset(lines[0])
    return frozenset(w for ln in lines for w in ln.split()), frozenset()


_WHEN = re.compile(r"\bwhen\s+(?:did|does|do|was|were|is|are|will|would|has|have|had)\b"
                   r"|\b(?:what|which)\s+(?:time|date|day|month|year)\b|\bhow\s+long\s+ago\b"
                   r"|什么时候|哪天|哪一天|几号|几月|哪年|哪一年|何时|多久以前", re.IGNORECASE)
_POSSESSIVE = re.compile(r"(?<=[^\W\d_])['’ʼ](?:s\b|(?=\s|$))", re.IGNORECASE)  # (ʼ U+02BC: a letter to isalnum)
_QUOTED = re.compile(r'"([^"]*)"|“([^”]*)”|「([^」]*)」')


class Question:
    """A question read for recall: its terms (for search.Query), the spans of time it names,
    and whether it asks when."""

    def __init__(self, terms: list[str], near: list[tuple[float, float]], when: bool = False):
        self.terms, self.near, self.when = terms, near, when


def parse(text: str) -> Question:
    from anima.recall.search import is_cjk, tokens

    when = bool(_WHEN.search(text))
    quoted = []

    def keep(m):
        quoted.append(next(g for g in m.groups() if g is not None))
        return " "

    text = _QUOTED.sub(keep, text)
    near, text = dates(text)
    text = _POSSESSIVE.sub("", text)
    en_stop, _ = _function_words("en")
    zh_words, zh_chars = _function_words("zh")
    kept, every = [], []
    for run, cjk in _runs(text, is_cjk):
        if not cjk:
            words = tokens(run)
            every += words
            kept += [w for w in words if w not in en_stop]
        else:
            every += _pairs(run)
            for piece in _content(run, zh_words, zh_chars):
                kept += _pairs(piece)
    quoted = [q for q in quoted if tokens(q)]
    return Question(quoted + (kept or ([] if quoted else every)), near, when)


def _pairs(run: str) -> list[str]:
    """A run of CJK characters as its pairs of adjacent characters (one character as itself)."""
    return [run[i:i + 2] for i in range(len(run) - 1)] or [run]


def _content(run: str, words: frozenset, chars: frozenset) -> list[str]:
    """A run of CJK characters cut at its function words and characters, which are left out
    (the longest word first, from the left): the pieces between them. A pair across a cut
    (得老 in 记得老师) belongs to no word of the question."""
    longest = max(map(len, words), default=0)
    pieces, start, i = [], 0, 0
    while i < len(run):
        word = next((n for n in range(min(longest, len(run) - i), 1, -1) if run[i:i + n] in words), 0)
        if word or run[i] in chars:
            pieces.append(run[start:i])
            i += word or 1
            start = i
        else:
            i += 1
    pieces.append(run[start:])
    return [p for p in pieces if p]


def _runs(text: str, is_cjk):
    """The text cut into (piece, whether it is CJK characters)."""
    piece, cjk = [], False
    for ch in text:
        c = is_cjk(ch)
        if piece and c != cjk:
            yield "".join(piece), cjk
            piece = []
        piece.append(ch)
        cjk = c
    if piece:
        yield "".join(piece), cjk


def query(text: str):
    """The search.Query a question asks."""
    from anima.recall.search import Query

    asked = parse(text)
    return Query(asked.terms, asked.near, asked=True, when=asked.when)
