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
question that asks when (anima.recall.ask), a turn that tells a time (anima.recall.timewords:
"last week", "yesterday", 去年) scores 1 + TIME_WEIGHT times its score: it more likely says
when than a turn that only shares the question's words.

A turn that opens with a term of the query (its first token begins the term's phrase) scores
1 + OPENS times its score: in a transcript of "Name: ..." turns it is the turn of the one the
question names ("Which club does John support?" / "John: As a City fan, ..."), elsewhere a turn
about what the query names first.

A question that names a date (anima.recall.ask) multiplies each turn's score by 1 + DATE_WEIGHT
* exp(-days / DATE_DAYS), days being how far the turn lies from the span named (0 inside
it): asked about a day or a month, the turns of that time are what is asked about, whatever
words they share with the question, so nearness weighs almost as a filter would.

Turns holding every term come first (`first`), then the rest by score, those holding some of
them marked relaxed. For a question, neither a turn that ends in a question mark (the question
asked again, its answer beside it) nor one outside the span of a date it names is first for
holding every word: ranked with the rest, the answer and the turns of that time (9 times their
score) come before them. Terms are not a question and name no date: a turn holding every term
is always first.

Turns that fail the filters (--since, --who) lend their words to their neighbours' windows
but are not results themselves. Where a session's turns come from: the index's table of turns
for a file it covers (their term counts, when they are not candidates, asked of FTS5 by rowid),
the transcript itself for a file that is scanned (whose candidates are every turn holding a term).
"""

import math

WEIGHTS = (0.5, 0.35, 0.25, 0.15)
POOL = 30
DEEP = 200
DATE_WEIGHT = 8.0
DATE_DAYS = 7.0
ASKING = 0.8
TIME_WEIGHT = 0.6
OPENS = 0.6


class Turns:
    """The turns of the sessions the pool falls in, each as a ranking.Candidate (with term
    counts), in line order; read from the index for a file it covers, else from the file.
    Only the turns near a pool turn are read, not the whole file. From the index: a turn's
    neighbours are the rows of its file just before and after it in the turns table's
    index on file, which orders them by rowid, and a file's rowids rise with its lines
    (anima.recall.index). From a file: its lines are parsed outwards from the pool turn's
    until `reach` turns are found on each side (after the lines that decide its format, as
    sessions.turns_at does), and the stretches so read are its turns, in line order. A window
    never reaches past its stretch (it spans at most `reach` turns from a pool turn), so two
    stretches side by side in that list are never taken for neighbours."""

    def __init__(self, idx, filters, warn=lambda m: None):
        self.idx, self.filters, self.warn = idx, filters, warn
        self._rows: dict[str, list] = {}  # path -> (rowid, line, ts, who, dl, asks) by place, None where unread
        self._places: dict[int, int] = {}  # rowid -> its place in its file, for the turns read around
        self._texts: dict[str, dict[int, str]] = {}  # path -> {line: text} of a scanned file
        self._lines: dict[str, dict[int, int]] = {}  # path -> {line: place} of a scanned file
        self._format: dict[str, tuple | None] = {}  # path -> (its formats.Detector, mtime); None: read whole
        self._parsed: dict[str, dict[int, tuple | None]] = {}  # path -> {line: its row, None if no turn}
        self._reached: set[tuple[str, int]] = set()  # (path, line) of the turns read around (a batch asks again)
        self._timed: dict[tuple[str, int], bool] = {}  # (path, line) -> tells a time (a batch asks again)
        self._tells: dict[int, bool] = {}  # rowid -> tells a time, as the index says, for the turns read

    def read(self, cands: list, reach: int) -> None:
        """Read the turns within `reach` places of each of these (from the index, in one
        statement for them all: a turn's place is how many rows of its file come before it,
        and its neighbours the `reach` rows either side, in the index on file)."""
        from anima.recall import index

        scanned: dict[str, list[int]] = {}
        for c in cands:
            if (self.idx is None or c.source is not self.idx) and (c.path, c.line) not in self._reached:
                scanned.setdefault(c.path, []).append(c.line)
        for path, lines in scanned.items():
            self._read_file(path, lines, reach)
        todo = {c.rowid: c for c in cands if self.idx is not None and c.source is self.idx
                and c.rowid not in self._places}
        if not todo:
            return
        import json

        rows = self.idx.con.execute("""
            WITH p AS (SELECT t.id AS r, t.file AS f FROM json_each(:p) j JOIN turns t ON t.id = j.value),
            b AS MATERIALIZED (SELECT r, f,
                coalesce((SELECT id FROM turns WHERE file = p.f AND id < p.r ORDER BY id DESC LIMIT 1 OFFSET :k - 1),
                         0) AS lo,
                coalesce((SELECT id FROM turns WHERE file = p.f AND id > p.r ORDER BY id LIMIT 1 OFFSET :k - 1),
                         1 << 62) AS hi,
                (SELECT count(*) FROM turns WHERE file = p.f AND id < p.r) AS at,
                (SELECT count(*) FROM turns WHERE file = p.f) AS n FROM p)
            SELECT b.r, b.at, b.n, u.id, u.line, u.ts, u.who, u.dl, u.asks, u.tells
            FROM b JOIN turns u ON u.file = b.f AND u.id BETWEEN b.lo AND b.hi ORDER BY b.r, u.id""",
                                    {"p": json.dumps(list(todo)), "k": reach})
        groups: dict[int, list] = {}
        for r, at, n, *row in rows:
            groups.setdefault(r, [at, n]).append(row)
        for r, (at, n, *got) in groups.items():
            path = todo[r].path
            kept = self._rows.get(path)
            if kept is None:
                kept = self._rows[path] = [None] * n
            before = sum(1 for row in got if row[0] < r)
            for place, (rowid, line, ts, who, dl, asked, tells) in enumerate(got, at - before):
                kept[place] = (rowid, line, ts, index.WHO[who], dl, asked)
                self._tells[rowid] = bool(tells)
            self._places[r] = at

    def around(self, c, known: dict, reach: int, orders: dict) -> tuple[list, int]:
        """The turns of c's file by place (those within `reach` places of c, and of every turn
        asked before; None for the rest; `orders`: {path: that list} of one query) and c's
        place among them; a turn in `known` ({(path, line): candidate}) is that candidate, any
        other has counts None (`fill` gives them). The rows read are kept for the next query."""
        from anima.recall import fts, ranking

        self.read([c], reach)
        if self.idx is None or c.source is not self.idx:
            rows, at = self._rows[c.path], self._lines[c.path][c.line]
        else:
            rows, at = self._rows[c.path], self._places[c.rowid]
        order = orders.get(c.path)
        if order is None:
            order = orders[c.path] = [None] * len(rows)
        for place in range(max(0, at - reach), min(len(rows), at + reach + 1)):
            if order[place] is None:
                rowid, line, ts, who, dl, asked = rows[place]
                if dl is None:  # (a scanned turn's length, counted only when it is near a result)
                    dl = fts.token_count(self._texts[c.path][line])
                order[place] = known.get((c.path, line)) or ranking.Candidate(c.session, c.path, line, ts, who, dl,
                                                                               None, c.source, rowid, asked)
        return order, at

    def _read_file(self, path: str, lines: list[int], reach: int) -> None:
        """Parse the lines of a file the index does not cover within `reach` turns of each of
        these lines (each a turn), and make its rows (rowid 0, line, ts, who, dl None, asks)
        those of every turn parsed so far, in line order; `around` counts a turn's length if
        it needs it. A damaged file is read whole, as read_session reads it. The decompressed
        file is not kept: a later query of a batch that needs more of it reads it again."""
        from anima.infra import fs
        from anima.recall import formats, ranking, sessions

        raw = None
        if path not in self._parsed:
            parsed = self._parsed[path] = {}
            self._texts[path] = {}
            raw = _lines_of(path)
            if raw is None:
                self._format[path] = None
                session = sessions.read_session(path, None, 0, lambda m: None)
                for t in session.turns if session else []:
                    self._texts[path][t.line] = t.text
                    parsed[t.line] = (0, t.line, t.ts, t.who, None, ranking.asks(t.text))
            else:
                sig = fs.signature(path)
                detector = formats.Detector()
                self._format[path] = detector, sig[0] / 1e9 if sig else 0.0
                number = 0
                while detector.format is None and number < len(raw):  # the lines that decide its format
                    number += 1
                    parsed[number] = self._parse(path, raw, number)
        elif self._format[path] is not None:
            raw = _lines_of(path)
        parsed = self._parsed[path]
        if raw is not None:
            for line in lines:
                if line not in parsed:
                    parsed[line] = self._parse(path, raw, line)
                for step in (-1, 1):
                    found, number = 0, line + step
                    while found < reach and 1 <= number <= len(raw):
                        if number not in parsed:
                            parsed[number] = self._parse(path, raw, number)
                        found += parsed[number] is not None
                        number += step
        self._reached.update((path, line) for line in lines)
        rows = [row for _, row in sorted(parsed.items()) if row is not None]
        self._rows[path] = rows
        self._lines[path] = {row[1]: place for place, row in enumerate(rows)}

    def _parse(self, path: str, raw: list, number: int) -> tuple | None:
        """The row of line `number` of a file being read in part (`raw`: its lines), or None
        when it holds no turn (sessions.line_turn); its text kept in _texts. Before the
        file's format is decided, lines must come in order."""
        from anima.recall import ranking, sessions

        detector, mtime = self._format[path]
        turn = sessions.line_turn(raw[number - 1], number, detector)
        if turn is None:
            return None
        who, text, ts = turn
        self._texts[path][number] = text
        return 0, number, mtime if ts is None else ts, who, None, ranking.asks(text)

    def telling(self, turns: list) -> set[tuple[str, int]]:
        """(path, line) of those of `turns` that tell a time (anima.recall.timewords): as the
        index found when it indexed them (read with them), for a scanned file's turns FTS5
        asked in an in-memory table, so that both find them as a term is found."""
        from anima.recall import timewords

        unknown = {(t.path, t.line): t for t in turns if (t.path, t.line) not in self._timed}
        told = {key for key, t in unknown.items() if self._tells.get(t.rowid)
                and self.idx is not None and t.source is self.idx}
        told |= self._scanned_matching(unknown.values(), timewords.match())
        self._timed.update((key, key in told) for key in unknown)
        return {(t.path, t.line) for t in turns if self._timed[t.path, t.line]}

    def opening(self, q, turns: list) -> set[tuple[str, int]]:
        """(path, line) of those of `turns` whose first token begins a term of `q`, asked of
        FTS5 (an initial-token query, ^"phrase") by rowid in the index, in an in-memory table
        of their texts for a scanned file's turns. Only a turn holding a term can open with one."""
        from anima.recall import fts

        turns = [t for t in turns if any(t.tfs)]
        found = set()
        indexed = {t.rowid: t for t in turns if self.idx is not None and t.source is self.idx}
        for table in self.idx.tables if indexed else ():
            match = " OR ".join("^" + m for m in q.matches if self.idx.hits(m, table))
            if match:
                found.update((indexed[r].path, indexed[r].line)
                             for r in fts.rows_matching(self.idx.con, match, list(indexed), table))
        return found | self._scanned_matching(turns, " OR ".join("^" + m for m in q.matches))

    def _scanned_matching(self, turns, match: str) -> set[tuple[str, int]]:
        """(path, line) of those of `turns` from scanned files whose text matches the FTS5
        query `match`, asked of an in-memory table of their texts."""
        from anima.recall import fts

        scanned = [t for t in turns if self.idx is None or t.source is not self.idx]
        if not scanned:
            return set()
        memory = fts.Memory()
        for t in scanned:
            memory.add(self._texts.get(t.path, {}).get(t.line, ""))
        memory.flush()
        return {(scanned[r - 1].path, scanned[r - 1].line)
                for r in fts.rows_matching(memory.con, match, list(range(1, len(scanned) + 1)))}

    def fill(self, q, turns: list) -> None:
        """Give term counts to those of `turns` that have none: zeros for a scanned file (its
        candidates are all that hold a term), FTS5's counts by rowid for an indexed one."""
        from anima.recall import fts

        zero = (0,) * len(q.matches)
        by_rowid = {}
        for t in turns:
            if t.tfs is None:
                if self.idx is not None and t.source is self.idx:
                    by_rowid[t.rowid] = t
                else:
                    t.tfs = zero
        if not by_rowid:
            return
        counts = [{} for _ in q.matches]
        for table in self.idx.tables:
            for i, m in enumerate(q.matches):
                hits = self.idx.hits(m, table)
                if hits:
                    counts[i].update(fts.rows_counts(self.idx.con, m, list(by_rowid), hits, table))
        for rowid, t in by_rowid.items():
            t.tfs = tuple(c.get(rowid, 0) for c in counts)


def depth(q, limit: int) -> tuple[int, int]:
    """How many turns the first stage keeps for query `q`, and how many of them the window
    stage scores again (`limit` at least). POOL in general: the best 30 by their own score
    hold the turns the windows lift (on the long-conversation benchmark, MADial and the
    generated conversations 50 and 200 found the same, for 5/3 and 20/3 as many turns; 20
    lost a little: hit@5 73.7 to 73.6). DEEP for a query naming a date, whose nearness counts
    only here (the generated dated questions: hit@5 37.5 with 200, 22.5 with 50), and kept
    for one with a CJK term of two or more characters, whose characters' idf is over the
    turns kept (search.backoff)."""
    pool = max(DEEP if q.near else POOL, limit)
    return max(DEEP if q.extras else 0, pool), pool


def rerank(pool: list, cands: list, st, q, turns: Turns, tiers: bool) -> list:
    """The pool's turns and their neighbours scored by their windows, strict (holding every
    term themselves) first; ranking.Result each."""
    from anima.recall import ranking

    known = {(c.path, c.line): c for c in cands}
    extra = {(r.c.path, r.c.line): r.extra for r in pool if r.extra}  # (a CJK term's characters)
    wanted: dict[tuple, object] = {}
    sessions: dict[str, list] = {}
    turns.read([r.c for r in pool], 2 * len(WEIGHTS))  # (a pool turn's window, and its turns' windows)
    for r in pool:
        order, at = turns.around(r.c, known, 2 * len(WEIGHTS), sessions)
        for i in range(max(0, at - len(WEIGHTS)), min(len(order), at + len(WEIGHTS) + 1)):
            wanted[(r.c.path, i)] = order[i]
    around = []
    for (path, i) in wanted:
        order = sessions[path]
        around += order[max(0, i - len(WEIGHTS)):i + len(WEIGHTS) + 1]
    around = list({id(t): t for t in around}.values())
    turns.fill(q, around)
    held = {id(t) for t in around if any(t.tfs)}  # a neighbour holding no term adds only its length
    timed = turns.telling(list(wanted.values())) if q.when else set()
    opened = turns.opening(q, list(wanted.values()))
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
                    if id(n) in held:
                        tfw = [a + w * b for a, b in zip(tfw, n.tfs, strict=True)]
                    if extra:
                        bonus += w * extra.get((n.path, n.line), 0.0)
        score = sum(idf * ranking.part(tf, dl, avgdl * norm) for idf, tf in zip(idfs, tfw, strict=True) if tf) + bonus
        if q.near:
            score *= nearness(c.ts, q.near)
        if q.asked and c.asks:
            score *= ASKING
        if (c.path, c.line) in opened:
            score *= 1 + OPENS
        if (c.path, c.line) in timed:
            score *= 1 + TIME_WEIGHT
        if score > 0:
            results.append(ranking.Result(c, score, [t for t, tf in zip(q.raw, c.tfs, strict=True) if tf],
                                         not all(c.tfs)))

    def order_key(r):
        return not first(r, q), ranking.TIERS[r.c.who] if tiers else 0, -r.score, -r.c.ts, r.c.session, r.c.line

    results.sort(key=order_key)
    return results


def first(r, q) -> bool:
    """Whether result `r` goes in the first tier for query `q`: it holds every term and, for a
    question, it does not itself ask (ends in a question mark: the question asked again, its
    answer beside it) and lies within the span of a date the question names (a turn holding
    every word a year away is not about that day). The rest follow by score, whatever they hold."""
    if r.relaxed:
        return False
    return not (q.asked and r.c.asks) and not (q.near and _days(r.c.ts, q.near) > 0)


def _lines_of(path: str) -> list[bytes] | None:
    """The decompressed lines of a transcript; None when it is damaged or cannot be read."""
    from anima.recall import zstd

    try:
        return b"".join(zstd.chunks(path)).split(b"\n")
    except (OSError, zstd.Damaged):
        return None


def nearness(ts: float, near: list) -> float:
    """What a turn at `ts` scores times its score for a query naming the spans `near`."""
    return 1 + DATE_WEIGHT * math.exp(-_days(ts, near) / DATE_DAYS)


def _days(ts: float, near: list) -> float:
    """How many days `ts` lies from the nearest span of `near` (0 inside one)."""
    return min(max(0.0, start - ts, ts - end) for start, end in near) / 86400
