"""`anima recall`: find what was really said, with the exact source of every result.

Matching: a term is a phrase of tokens. A token is a run of letters and digits outside the CJK
ranges (English by words, any case), or one CJK character (so a Chinese term is found wherever
its characters stand together: bigrams and longer, without a dictionary). A phrase matches
where its tokens follow each other with nothing but spaces and punctuation between them, a
word token never inside a longer word; its term frequency counts every such place. Every term
must match (AND); only if no turn matches them all, any term may (OR), marked relaxed.

Ranking: tier (the user's own words, then mine, then delegated), then BM25 over the phrase
terms (k1 1.2, b 0.75; document length in characters, idf over every turn of every session),
then the newer turn. `--no-tiers` ranks by score alone.

The pass looks for each phrase's tokens in the raw bytes first and parses only the lines that
hold them (transcripts.scan); it keeps only small candidate records, and the text of the few
results printed is read back from the transcripts afterwards, so memory stays flat however
large the corpus.
"""

import math
import re
import time

K1 = 1.2
B = 0.75
TIERS = {"user": 0, "me": 1, "delegated": 2}


def is_cjk(ch: str) -> bool:
    """Kana, CJK ideographs, Hangul: each such character is a token of its own."""
    o = ord(ch)
    return 0x3040 <= o <= 0x30FF or 0x3400 <= o <= 0x4DBF or 0x4E00 <= o <= 0x9FFF \
        or 0xAC00 <= o <= 0xD7AF or 0xF900 <= o <= 0xFAFF


def is_word(ch: str) -> bool:
    """A character of a word token: a letter or digit that is not CJK."""
    return ch.isalnum() and not is_cjk(ch)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens and single CJK characters, in order.

    Written out rather than as a regular expression: a character class of the CJK ranges
    costs several milliseconds to compile in every process, more than a query's tokens.
    """
    out, word = [], []
    for ch in text.lower():
        if not ch.isalnum():
            if word:
                out.append("".join(word))
                word = []
        elif is_cjk(ch):
            if word:
                out.append("".join(word))
                word = []
            out.append(ch)
        else:
            word.append(ch)
    if word:
        out.append("".join(word))
    return out


class Phrase:
    """Where a phrase of tokens stands in a text: its tokens in order with only non-word
    characters (spaces, punctuation) between them, a word token never inside a longer word.
    The same rule as a phrase query over the tokens, which is what the index answers.

    The pattern consumes the first token and looks ahead for the rest, so overlapping places
    all count ("哈哈" twice in "哈哈哈"); the word boundaries are checked in Python for the same
    reason as in `tokens`.
    """

    def __init__(self, toks: tuple):
        self.toks = toks
        tail = "".join(rf"[\W_]*({re.escape(t)})" for t in toks[1:])
        self.pattern = re.compile(re.escape(toks[0]) + (f"(?={tail})" if tail else ""), re.IGNORECASE)
        self.word = [not is_cjk(t[0]) for t in toks]

    def count(self, text: str) -> int:
        n, size = 0, len(text)
        for m in self.pattern.finditer(text):
            start, end = m.span()
            if self.word[0] and ((start and is_word(text[start - 1])) or (end < size and is_word(text[end]))):
                continue
            if all(not self.word[i] or m.end(i) >= size or not is_word(text[m.end(i)])
                   for i in range(1, len(self.toks))):
                n += 1
        return n


def needles(phrase: tuple) -> list[bytes] | None:
    """What the raw, lower-cased bytes of a line holding `phrase` must contain; None when the
    bytes cannot tell (a letter whose case bytes.lower() does not fold)."""
    if not all(tok.isascii() or is_cjk(tok[0]) for tok in phrase):
        return None
    return sorted({tok.encode("utf-8") for tok in phrase}, key=len, reverse=True)


class Query:
    """The terms of one query: each a phrase of tokens."""

    def __init__(self, terms: list[str]):
        self.raw = [t for t in terms if tokens(t)]
        self.phrases = [tuple(tokens(t)) for t in self.raw]
        self.matchers = [Phrase(p) for p in self.phrases]


class Candidate:
    """A turn that holds at least one term: where it is and what the score needs, no text."""

    __slots__ = ("session", "path", "line", "ts", "who", "dl", "tfs")

    def __init__(self, session: str, path: str, line: int, ts: float, who: str, dl: int, tfs: tuple):
        self.session, self.path, self.line, self.ts, self.who = session, path, line, ts, who
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


def scan(sessions, queries: list[Query], filters: Filters, found=None, stats=None):
    """One pass for every query: candidates (any term matched) and corpus statistics, added
    to `found` and `stats` when given (what an index answered).

    `sessions` yields transcripts.Scanned: each session's totals, and its turns that may match.
    """
    stats = stats or [Stats(len(q.phrases)) for q in queries]
    found = found or [[] for _ in queries]
    for session in sessions:
        for st in stats:
            st.turns += session.turns_total
            st.chars += session.chars_total
        for turn in session.turns:
            admitted = filters.admit(turn)
            for q, st, out in zip(queries, stats, found, strict=True):
                tfs = tuple(p.count(turn.text) for p in q.matchers)
                for i, tf in enumerate(tfs):
                    if tf:
                        st.df[i] += 1
                if admitted and any(tfs):
                    out.append(Candidate(turn.session, turn.path, turn.line, turn.ts, turn.who, len(turn.text), tfs))
    return found, stats


def from_index(idx, queries: list[Query], filters: Filters):
    """What `scan` finds, for the sessions the index covers now, without reading them."""
    from anima import index

    totals = index._fts_totals(idx.con)
    rows, raw_meta = {}, {}
    for p in {p for q in queries for p in q.phrases}:
        rows[p], more = index.phrase_rows(idx.con, p, totals)
        raw_meta.update(more)
    meta = idx.turns(raw_meta)
    n_turns, n_chars = idx.totals()
    stats, found = [], []
    for q in queries:
        st = Stats(len(q.phrases))
        st.turns, st.chars = n_turns, n_chars
        counts = [rows[p] for p in q.phrases]
        for i, c in enumerate(counts):
            st.df[i] = sum(1 for r in c if r in meta)
        out = []
        for r in sorted({r for c in counts for r in c if r in meta}):
            path, sid, line, ts, who, chars = meta[r]
            if (filters.since is None or ts >= filters.since) and (filters.who is None or who == filters.who):
                out.append(Candidate(sid, path, line, ts, who, chars, tuple(c.get(r, 0) for c in counts)))
        stats.append(st)
        found.append(out)
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


def attach_text(results: list[Result]) -> None:
    """Read the printed results' text back from their transcripts (each file read once, only
    the lines wanted parsed)."""
    from anima import transcripts

    by_path: dict[str, list[Result]] = {}
    for r in results:
        by_path.setdefault(r.c.path, []).append(r)
    for path, rs in by_path.items():
        turns = transcripts.turns_at(path, rs[0].c.session, {r.c.line for r in rs})
        for r in rs:
            r.text = turns[r.c.line].text if r.c.line in turns else ""


def run(home, cfg, queries: list[Query], filters: Filters, limit: int, tiers: bool, warn,
        note=None) -> list[list[Result]]:
    """Every query answered, results with their text: from the index for what it covers when
    it is on (and can answer), by one pass over the transcripts for everything else.
    `note` takes what the user should know about how (the index's coverage)."""
    import os

    from anima import index, transcripts

    phrases = list({p: needles(p) for q in queries for p in q.phrases}.values())
    if cfg["index.enabled"] and os.path.exists(index.path(home)) and index.answerable(queries):
        files = transcripts.session_files(home, cfg)
        idx = index.Open(home, cfg, files)
        try:
            found, stats = from_index(idx, queries, filters)
            indexed_ids = {sid for _, sid in idx.plan.current.values()}
        finally:
            idx.close()
        plan = idx.plan
        if note and plan.hot:
            note(f"index excludes {len(plan.hot)} sessions modified in the last {cfg['index.hot_minutes']} minutes "
                 "(scanned directly)")
        if note and (plan.stale or plan.missing):
            note(f"index is stale: {len(plan.stale)} sessions changed or new since it was updated (scanned "
                 f"directly), {len(plan.missing)} gone; `anima index update` catches up")
        uncovered = (s for s in transcripts.scan(home, cfg, phrases, warn, paths=plan.uncovered)
                     if s.id not in indexed_ids)
        found, stats = scan(uncovered, queries, filters, found, stats)
    else:
        found, stats = scan(transcripts.scan(home, cfg, phrases, warn), queries, filters)
    ranked = [rank(c, st, q, limit, tiers) if q.raw else [] for c, st, q in zip(found, stats, queries, strict=True)]
    attach_text([r for rs in ranked for r in rs])
    return ranked


def snippet(text: str, terms: list[str], width: int) -> str:
    """About `width` characters of the text around the first match, on one line."""
    flat = " ".join(text.split())
    lower = flat.lower()
    at = min((p for p in (lower.find(tokens(t)[0]) for t in terms) if p >= 0), default=0)
    start = max(0, min(at - width // 3, len(flat) - width))
    piece = flat[start:start + width]
    return ("…" if start > 0 else "") + piece + ("…" if start + width < len(flat) else "")


def date(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def as_json(r: Result) -> dict:
    return {"session": r.c.session, "line": r.c.line, "date": date(r.c.ts), "who": r.c.who, "text": r.text,
            "score": round(r.score, 4), "terms": r.terms, "relaxed": r.relaxed, "path": r.c.path}


def as_line(r: Result, width: int) -> str:
    return f"{r.c.session}\t{r.c.line}\t{date(r.c.ts)}\t{r.c.who}\t{snippet(r.text, r.terms, width)}\n"
