"""A turn read with its neighbours: the second stage of recall's ranking.

The evidence often answers a question asked in the turn before it ("What have you been
reading?" / "Dune, again."): the words searched for stand beside it, not in it. So the best
POOL turns by their own score (anima.recall.search.rank) are scored again, each together with
the turns around it in the same session, and so are the turns around them that hold no term
at all (when the query is a question; given as terms, a result holds one of them): a
turn's window is itself and up to len(WEIGHTS) turns on each side, the neighbour at
distance d counting WEIGHTS[d - 1] of its term counts and of its length. The window is scored
by the same BM25 as a turn, its length against the average turn's times the window's weight
(1 plus the weights of the neighbours it has): a session of one turn is scored as before.
A CJK character's extra score (search.backoff) is carried over with the same weights.

A turn that ends in a question mark scores ASKING times its score for a question: it asks
rather than answers (the answer is its neighbour, which it lifts all the same). For a
question that asks when (anima.recall.ask), a turn that tells a time (holds a word of
anima/data/time_words.txt: "last week", "yesterday", 去年) scores 1 + TIME_WEIGHT times its
score: it more likely says when than a turn that only shares the question's words.

A question that names a date (anima.recall.ask) raises each turn's score by up to DATE_WEIGHT
times, the more the nearer the turn is to the span named (exp(-days / DATE_DAYS), days 0
inside it).

Turns that fail the filters (--since, --who) lend their words to their neighbours' windows
but are not results themselves. Where a session's turns come from: the index's table of turns
for a file it covers (their term counts, when they are not candidates, asked of FTS5 by rowid),
the transcript itself for a file that is scanned (whose candidates are every turn holding a term).
"""

import functools
import math

WEIGHTS = (0.5, 0.35, 0.25, 0.15)
POOL = 200
DATE_WEIGHT = 1.0
DATE_DAYS = 7.0
ASKING = 0.8
TIME_WEIGHT = 0.6


class Turns:
    """The turns of the sessions the pool falls in, each as a ranking.Candidate (with term
    counts), in line order; read from the index for a file it covers, else from the file."""

    def __init__(self, idx, filters, warn=lambda m: None):
        self.idx, self.filters, self.warn = idx, filters, warn
        self._files: dict[str, list] = {}
        self._texts: dict[str, dict[int, str]] = {}  # path -> {line: text} of a scanned file
        self._ids = None

    def of(self, c) -> list:
        """Every turn of c's file, in order, with counts None (a query's `fill` gives them)."""
        from anima.recall import ranking

        if c.path not in self._files:
            self._files[c.path] = self._read(c)
        return [ranking.Candidate(c.session, c.path, line, ts, who, dl, None, c.source, rowid, asked)
                for rowid, line, ts, who, dl, asked in self._files[c.path]]

    def _read(self, c) -> list[tuple]:
        """(rowid, line, ts, who, dl, asks) of every turn of c's file, read once a run."""
        from anima.recall import index

        if self.idx is not None and c.source is self.idx:
            if self._ids is None:
                self._ids = {p: i for i, (p, _) in self.idx.covered().items()}
            rows = self.idx.con.execute("SELECT id, line, ts, who, dl, asks FROM turns WHERE file = ? ORDER BY line",
                                        (self._ids[c.path],))
            return [(rowid, line, ts, index.WHO[who], dl, asked) for rowid, line, ts, who, dl, asked in rows]
        from anima.recall import fts, ranking, sessions

        session = sessions.read_session(c.path, None, 0, lambda m: None)
        turns = session.turns if session else []
        self._texts[c.path] = {t.line: t.text for t in turns}
        return [(0, t.line, t.ts, t.who, fts.token_count(t.text), ranking.asks(t.text)) for t in turns]

    def telling(self, turns: list) -> set[tuple[str, int]]:
        """(path, line) of those of `turns` that tell a time: FTS5 asked for the time words, of
        the index's rows by rowid, of a scanned file's turns in an in-memory table, so that
        both find them as a term is found."""
        from anima.recall import fts

        match = _time_match()
        out = set()
        indexed = {t.rowid: t for t in turns if self.idx is not None and t.source is self.idx}
        for table in self.idx.tables if indexed else ():
            out.update((indexed[r].path, indexed[r].line) for r in fts.rows_matching(
                self.idx.con, match, list(indexed), table))
        scanned = [t for t in turns if self.idx is None or t.source is not self.idx]
        if scanned:
            memory = fts.Memory()
            for t in scanned:
                memory.add(self._texts.get(t.path, {}).get(t.line, ""))
            memory.flush()
            out.update((scanned[r - 1].path, scanned[r - 1].line) for r in fts.rows_matching(
                memory.con, match, list(range(1, len(scanned) + 1))))
        return out

    def fill(self, q, turns: list) -> None:
        """Give term counts to those of `turns` that have none: zeros for a scanned file (its
        candidates are all that hold a term), FTS5's counts by rowid for an indexed one."""
        from anima.recall import fts

        zero = (0,) * len(q.matches)
        asked = [t for t in turns if t.tfs is None and t.source is self.idx and self.idx is not None]
        for t in turns:
            if t.tfs is None and t not in asked:
                t.tfs = zero
        if not asked:
            return
        by_rowid = {t.rowid: t for t in asked}
        counts = [{} for _ in q.matches]
        for table in self.idx.tables:
            for i, m in enumerate(q.matches):
                hits = self.idx.hits(m, table)
                if hits:
                    counts[i].update(fts.rows_counts(self.idx.con, m, list(by_rowid), hits, table))
        for rowid, t in by_rowid.items():
            t.tfs = tuple(c.get(rowid, 0) for c in counts)


def rerank(pool: list, cands: list, st, q, turns: Turns, limit: int, tiers: bool) -> list:
    """The pool's turns and their neighbours scored by their windows, strict (holding every
    term themselves) first; ranking.Result each, at most `limit`."""
    from anima.recall import ranking

    known = {(c.path, c.line): c for c in cands}
    extra = {(r.c.path, r.c.line): r.extra for r in pool}
    wanted: dict[tuple, object] = {}
    sessions: dict[str, list] = {}
    places: dict[str, dict] = {}  # path -> {line: its place in sessions[path]}
    for r in pool:
        order = sessions.get(r.c.path)
        if order is None:
            order = sessions[r.c.path] = [known.get((t.path, t.line), t) for t in turns.of(r.c)]
            places[r.c.path] = {t.line: i for i, t in enumerate(order)}
        at = places[r.c.path][r.c.line]
        for i in range(max(0, at - len(WEIGHTS)), min(len(order), at + len(WEIGHTS) + 1)):
            wanted[(r.c.path, i)] = order[i]
    around = []
    for (path, i) in wanted:
        order = sessions[path]
        around += order[max(0, i - len(WEIGHTS)):i + len(WEIGHTS) + 1]
    turns.fill(q, list({id(t): t for t in around}.values()))
    timed = turns.telling(list(wanted.values())) if q.when else set()
    avgdl = st.avgdl
    idfs = [w * st.idf(i) for i, w in enumerate(q.weights)]
    results = []
    for (path, i), c in wanted.items():
        if not turns.filters.admit(c.ts, c.who) or not (q.asked or any(c.tfs)):
            continue
        order = sessions[path]
        tfw = list(c.tfs)
        dl, norm, bonus = c.dl, 1.0, extra.get((c.path, c.line), 0.0)
        for d, w in enumerate(WEIGHTS, 1):
            for j in (i - d, i + d):
                if 0 <= j < len(order):
                    n = order[j]
                    norm += w
                    dl += w * n.dl
                    tfw = [a + w * b for a, b in zip(tfw, n.tfs, strict=True)]
                    bonus += w * extra.get((n.path, n.line), 0.0)
        score = sum(idf * ranking.part(tf, dl, avgdl * norm) for idf, tf in zip(idfs, tfw, strict=True) if tf) + bonus
        if q.near:
            score *= 1 + DATE_WEIGHT * math.exp(-_days(c.ts, q.near) / DATE_DAYS)
        if q.asked and c.asks:
            score *= ASKING
        if (c.path, c.line) in timed:
            score *= 1 + TIME_WEIGHT
        if score > 0:
            results.append(ranking.Result(c, score, [t for t, tf in zip(q.raw, c.tfs, strict=True) if tf],
                                         not all(c.tfs)))

    def order_key(r):
        return r.relaxed, ranking.TIERS[r.c.who] if tiers else 0, -r.score, -r.c.ts, r.c.session, r.c.line

    results.sort(key=order_key)
    return results[:limit]


@functools.cache
def _time_match() -> str:
    """The FTS5 query for a turn that tells a time: any word of anima/data/time_words.txt."""
    from anima.infra.text import data
    from anima.recall import fts

    words = [w for ln in data("time_words.txt").splitlines() if not ln.startswith("#") for w in ln.split()]
    return " OR ".join(fts.phrase(w) for w in words)


def _days(ts: float, near: list) -> float:
    """How many days `ts` lies from the nearest span of `near` (0 inside one)."""
    return min(max(0.0, start - ts, ts - end) for start, end in near) / 86400
