"""`anima recall`: find what was really said, with the exact source of every result.

Matching: a term is a phrase of tokens, found contiguously in a turn's tokens. A token is a
run of letters and digits outside the CJK ranges, case-folded (English by words), or one CJK
character (so a Chinese term is found wherever its characters stand together: character
bigrams and longer, without a dictionary). Every term must match (AND); only if no turn
matches them all, any term may (OR), and every result is marked relaxed.

Ranking: tier (the user's own words, then mine, then delegated), then BM25 over the phrase
terms (k1 1.2, b 0.75; document length in characters, idf over every turn of every session),
then the newer turn. `--no-tiers` ranks by score alone.

The scan keeps only small candidate records; the text of the few results printed is read
back from the transcripts afterwards, so memory stays flat however large the corpus.
"""

import math
import re
import time

K1 = 1.2
B = 0.75
TIERS = {"user": 0, "me": 1, "delegated": 2}
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.casefold())


class Query:
    """The terms of one query: each a tuple of tokens (a phrase)."""

    def __init__(self, terms: list[str]):
        self.raw = [t for t in terms if tokens(t)]
        self.phrases = [tuple(tokens(t)) for t in self.raw]


def count_phrase(doc: list[str], phrase: tuple) -> int:
    """How often `phrase` occurs contiguously in `doc`."""
    first, n = phrase[0], len(phrase)
    if n == 1:
        return doc.count(first)
    hits = 0
    for i, tok in enumerate(doc):
        if tok == first and tuple(doc[i:i + n]) == phrase:
            hits += 1
    return hits


class Candidate:
    __slots__ = ("session", "path", "line", "ts", "who", "dl", "tfs")

    def __init__(self, turn, dl: int, tfs: tuple):
        self.session, self.path, self.line, self.ts, self.who = turn.session, turn.path, turn.line, turn.ts, turn.who
        self.dl, self.tfs = dl, tfs


class Stats:
    """Corpus statistics for idf and length normalisation: every turn counts, filtered or not."""

    def __init__(self, nterms: int):
        self.turns = 0
        self.chars = 0
        self.df = [0] * nterms

    def idf(self, i: int) -> float:
        df = self.df[i]
        return math.log(1 + (self.turns - df + 0.5) / (df + 0.5))

    @property
    def avgdl(self) -> float:
        return self.chars / self.turns if self.turns else 1.0


class Filters:
    def __init__(self, since: float | None = None, who: str | None = None):
        self.since, self.who = since, who

    def admit(self, turn) -> bool:
        return (self.since is None or turn.ts >= self.since) and (self.who is None or turn.who == self.who)


def scan(turns, queries: list[Query], filters: Filters):
    """One pass over the turns for every query: candidates (any term matched) and statistics."""
    stats = [Stats(len(q.phrases)) for q in queries]
    found: list[list[Candidate]] = [[] for _ in queries]
    for turn in turns:
        lower = turn.text.casefold()
        dl = len(turn.text)
        admitted = filters.admit(turn)
        doc = None
        for q, st, out in zip(queries, stats, found, strict=True):
            st.turns += 1
            st.chars += dl
            tfs = []
            for i, phrase in enumerate(q.phrases):
                tf = 0
                if all(tok in lower for tok in phrase):  # cheap necessary condition first
                    if doc is None:
                        doc = tokens(turn.text)
                    tf = count_phrase(doc, phrase)
                if tf:
                    st.df[i] += 1
                tfs.append(tf)
            if admitted and any(tfs):
                out.append(Candidate(turn, dl, tuple(tfs)))
    return found, stats


def score(c: Candidate, st: Stats) -> float:
    norm = K1 * (1 - B + B * c.dl / st.avgdl)
    return sum(st.idf(i) * tf * (K1 + 1) / (tf + norm) for i, tf in enumerate(c.tfs) if tf)


class Result:
    def __init__(self, c: Candidate, score: float, terms: list[str], relaxed: bool):
        self.c, self.score, self.terms, self.relaxed = c, score, terms, relaxed
        self.text = ""


def rank(cands: list[Candidate], st: Stats, q: Query, limit: int, tiers: bool) -> list[Result]:
    """AND first; OR, marked relaxed, only if nothing has every term."""
    strict = [c for c in cands if all(c.tfs)]
    relaxed = not strict
    chosen = cands if relaxed else strict
    results = [Result(c, score(c, st), [t for t, tf in zip(q.raw, c.tfs, strict=True) if tf], relaxed)
               for c in chosen]
    results.sort(key=lambda r: (TIERS[r.c.who] if tiers else 0, -r.score, -r.c.ts, r.c.session, r.c.line))
    return results[:limit]


def attach_text(results: list[Result], read_turns) -> None:
    """Read the printed results' text back from their transcripts (each file read once)."""
    by_path: dict[str, list[Result]] = {}
    for r in results:
        by_path.setdefault(r.c.path, []).append(r)
    for path, rs in by_path.items():
        lines = {t.line: t.text for t in read_turns(path)}
        for r in rs:
            r.text = lines.get(r.c.line, "")


def run(home, cfg, queries: list[Query], filters: Filters, limit: int, tiers: bool, warn) -> list[list[Result]]:
    """Every query answered from one pass over the transcripts, results with their text."""
    from anima import transcripts

    turns = (t for s in transcripts.sessions(home, cfg, warn) for t in s.turns)
    found, stats = scan(turns, queries, filters)
    ranked = [rank(c, st, q, limit, tiers) if q.raw else [] for c, st, q in zip(found, stats, queries, strict=True)]
    cache_dir, cache_max = home.path("cache", "sessions"), cfg["recall.cache_sessions"]

    def read_turns(path):  # its warnings were given during the scan
        session = transcripts.read_session(path, cache_dir, cache_max, lambda message: None)
        return session.turns if session else []

    attach_text([r for rs in ranked for r in rs], read_turns)
    return ranked


def snippet(text: str, terms: list[str], width: int) -> str:
    """About `width` characters of the text around the first match, on one line."""
    flat = " ".join(text.split())
    lower = flat.casefold()
    at = min((p for p in (lower.find(tokens(t)[0]) for t in terms) if p >= 0), default=0)
    start = max(0, min(at - width // 3, len(flat) - width))
    piece = flat[start:start + width]
    return ("…" if start > 0 else "") + piece + ("…" if start + width < len(flat) else "")


def date(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def as_json(r: Result) -> dict:
    return {"session": r.c.session, "line": r.c.line, "date": date(r.c.ts), "who": r.c.who, "text": r.text,
            "score": round(r.score, 4), "terms": r.terms, "relaxed": r.relaxed}


def as_line(r: Result, width: int) -> str:
    return f"{r.c.session}\t{r.c.line}\t{date(r.c.ts)}\t{r.c.who}\t{snippet(r.text, r.terms, width)}\n"
