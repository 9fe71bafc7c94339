"""`anima recall`: find what was really said, with the exact source of every result.

Matching (anima.recall.fts): a turn's words are cut, case-folded and stemmed by SQLite FTS5's
`porter unicode61` tokenizer, each CJK character a token of its own; a term is a phrase of
such tokens, found where they follow each other with nothing but spaces and punctuation
between ("parked car" matches "park, cars"; 绿茶 matches 绿茶 and 绿，茶). A term given twice
weighs more, each repetition less (1, 1/2, 1/3, ...). A question in plain language becomes
terms and dates first (anima.recall.ask).

Ranking: each turn that holds a term is scored alone by BM25 (k1 1.2, b 0.75; idf log(1 + (N -
df + 0.5)/(df + 0.5)) over every turn of every session, lengths in tokens); in a query of
several terms, a Chinese (CJK) term of two or more characters also lets each of its characters
add to the score of the best window.DEEP turns, at half weight and with an idf over those turns
only (a query of one term finds only turns holding all its characters, which then tell them
apart no more). The best of them (window.depth), and the turns around them, are then scored
with their neighbours and the dates the query names (anima.recall.window). Turns holding every
term come first (for a question, not one that asks it again or lies outside a date it names:
window.first), then the rest, those holding some terms marked relaxed; within each, the user's
own words, then mine, then delegated (`--no-tiers`: score alone), then score, then the newer turn.

The scan looks for each term's tokens in the raw bytes first and parses only the lines that
may hold them (prescan.scan), puts those turns in an in-memory FTS5 table and asks it
what the index would be asked; it keeps small candidate records, and the text of the few
results printed is read back from the transcripts afterwards.
"""

import functools
import math
import time

from anima.infra.text import printable
from anima.recall.ranking import K1, TIERS, B, Candidate, Result, Stats, answers, asks, part  # noqa: F401 (the engine's names)


def is_cjk(ch: str) -> bool:
    """Kana, CJK ideographs, Hangul (fts.CJK_RANGES): each such character is a token of its own."""
    from anima.recall import fts

    return fts.is_cjk(ord(ch))


def _lower(text: str) -> str:
    """`text` lower-cased as FTS5's unicode61 folds it: str.lower() makes the Turkish capital
    dotted I (U+0130) an i and a combining dot, which is no letter and would cut "İstanbul"
    in two; FTS5 leaves it as it is, one word."""
    if "\u0130" not in text:
        return text.lower()
    return "\u0130".join(part.lower() for part in text.split("\u0130"))


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens and single CJK characters, in order (before stemming).

    Written out rather than as a regular expression: a character class of the CJK ranges
    costs several milliseconds to compile in every process, more than a query's tokens.
    """
    out, word = [], []
    for ch in _lower(text):
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


def needles(term: str, stems: dict[str, str]) -> list[bytes] | None:
    """What the raw, lower-cased bytes of a line holding `term` must contain; None when the bytes
    cannot tell (a word they do not fold as FTS5 does, or a term only FTS5 makes a token
    of: an emoji newer than its Unicode, 🤔). A word stands for every word with its stem,
    and every such word holds the stem itself, but for a final e or i the stemmer wrote
    (hope: hoping, happi: happy) or a bl it made of bil (sensibl: sensibility): then all
    but that last letter."""
    out = set()
    for tok in tokens(term):
        if is_cjk(tok[0]):
            out.add(tok.encode("utf-8"))
        elif tok.isascii():
            stem = stems.get(tok, tok)
            if stem.endswith(("e", "i", "bl")) and len(stem) > 1:
                stem = stem[:-1]
            out.add(stem.encode("ascii"))
        else:
            return None
    return sorted(out, key=len, reverse=True) or None


def sieve(term: str, stems: dict[str, str]):
    """A pattern every turn holding `term` matches in its FTS5 body (fts.body; it may match
    more): its words as words starting with their needle, CJK characters as they are, only
    non-word characters between. It keeps the scan from handing FTS5 every turn with "eat"
    inside "great". It is searched in the body, not the text, so that where a word starts
    and ends is where FTS5 sees it: in "标记77号" the body spaces the CJK characters, and "77"
    is a word of its own there, as it is to the index."""
    import re

    parts = []
    for tok, needle in zip(tokens(term), (needles(tok, stems) or [None] for tok in tokens(term)), strict=True):
        if is_cjk(tok[0]):
            parts.append(re.escape(tok))
        elif needle[0] is None:
            parts.append(r"[^\W_]+")  # a word whose folding bytes cannot show: any word
        else:
            parts.append(r"(?<![^\W_])" + re.escape(needle[0].decode()) + r"[^\W_]*")
    return re.compile(r"[\W_]*".join(parts), re.IGNORECASE)


RELAXED = "no turn has every term; showing turns with any of them (relaxed)"  # (said of a relaxed answer)


class Query:
    """The terms of one query, each an FTS5 phrase, with its weight (repetitions weigh less),
    the spans of time [start, end) it names (anima.recall.ask; turns near them rank higher),
    and whether it asks when (turns that tell a time rank higher: anima.recall.window)."""

    def __init__(self, terms: list[str], near: list[tuple[float, float]] = (), asked: bool = False,
                 when: bool = False):
        from anima.recall import fts

        # asked: a question, whose answer may hold none of its words
        self.near, self.asked, self.when = list(near), asked, when
        counts: dict[str, int] = {}
        for t in terms:
            # a term FTS5 makes no token of is no term; one only FTS5 sees (an emoji newer than
            # its Unicode, 🤔) is one all the same: its needles are none, and FTS5 decides
            if tokens(t) or not t.isascii() and fts.token_count(t):
                counts[t] = counts.get(t, 0) + 1
        self.raw = list(counts)
        self.weights = [sum(1 / k for k in range(1, n + 1)) for n in counts.values()]
        self.matches = [fts.phrase(t) for t in self.raw]
        self._tokens: dict[int, str | None] = {}
        self.extras: list[tuple[str, int]] = []  # (a single CJK character, its term; see backoff)
        for i, t in enumerate(self.raw if len(self.raw) > 1 else ()):
            chars = [tok for tok in tokens(t) if is_cjk(tok[0])]
            if len(chars) > 1:
                self.extras += [(ch, i) for ch in dict.fromkeys(chars)]

    def token(self, i: int) -> str | None:
        """Term i as the one token FTS5 makes of its phrase (case-folded, stemmed), or None
        when it is more than one."""
        from anima.recall import fts

        if i not in self._tokens:
            text = fts.spaced(self.raw[i])
            self._tokens[i] = fts.stems([text]).get(text) if len(tokens(self.raw[i])) == 1 else None
        return self._tokens[i]


def parse_since(value: str | None, what: str = "--since") -> float | None:
    """The time a --since (a date, YYYY-MM-DD, or an RFC 3339 time) names; None for none."""
    if value is None:
        return None
    from anima.infra import clock
    from anima.infra.errors import UsageError

    day = isinstance(value, str) and len(value) == 10  # YYYY-MM-DD: its midnight UTC (anything longer is a time)
    moment = value + "T00:00:00+00:00" if day else value
    if clock.seconds_of(moment) is None:
        raise UsageError(f"{what}: not a date (YYYY-MM-DD) or an RFC 3339 time: {value!r}")
    try:
        return clock.parse(moment, what)
    except UsageError:  # a date or time all the same, of a year anima does not take
        raise UsageError(f"{what}: {value!r} is outside the years anima takes (1970 to 8999)") from None


class Filters:
    def __init__(self, since: float | None = None, who: str | None = None):
        self.since, self.who = since, who

    def admit(self, ts: float, who: str) -> bool:
        return (self.since is None or ts >= self.since) and (self.who is None or who == self.who)


def _collect(queries: list[Query], rows: dict, meta, filters: Filters, found, stats, source) -> None:
    """Turn each term's rows {rowid: (count, size, ...)} into candidates and document counts.
    `meta(rowid)` gives (session, path, line, ts, who, asks), or None for a row to leave out. Rows
    the filters refuse are candidates too: they lend their words to their neighbours
    (anima.recall.window), and `rank` leaves them out of the results."""
    for q, st, out in zip(queries, stats, found, strict=True):
        counts = [rows[m] for m in q.matches]
        seen: dict[int, tuple | None] = {}
        for i, c in enumerate(counts):
            for r in c:
                if r not in seen:
                    seen[r] = meta(r)
                if seen[r] is not None:
                    st.df[i] += 1
        for r in sorted(r for r, m in seen.items() if m is not None):
            session, path, line, ts, who, asks = seen[r]
            size = next(c[r][1] for c in counts if r in c)
            out.append(Candidate(session, path, line, ts, who, size,
                                 tuple(c[r][0] if r in c else 0 for c in counts), source, r, asks))


def scan(sessions, queries: list[Query], filters: Filters, found=None, stats=None, sieves=None):
    """One pass for every query: candidates (any term matched) and corpus statistics, added
    to `found` and `stats` when given (what an index answered).

    `sessions` yields prescan.Scanned: each session's totals, and its turns that may match;
    `sieves` (a _Filters) narrow those down before FTS5 is asked.
    """
    from anima.recall import fts

    stats = stats or [Stats(len(q.matches)) for q in queries]
    found = found or [[] for _ in queries]
    memory = fts.Memory()
    where: list[tuple] = []
    for session in sessions:
        for st in stats:
            st.turns += session.turns_total
            st.tokens += session.tokens_total
        for turn in session.turns:
            spaced = fts.body(turn.text) if sieves is None else sieves.body(turn.text)
            if spaced is not None:
                memory.add_body(spaced)
                where.append((turn.session, turn.path, turn.line, turn.ts, turn.who, asks(turn.text)))
    rows = {m: memory.phrase_rows(m) for q in queries for m in q.matches}
    _collect(queries, rows, lambda r: where[r - 1], filters, found, stats, memory)
    return found, stats


def index_stats(idx, queries: list[Query]) -> list[Stats]:
    """Statistics of the turns the index covers now (document counts come with the terms)."""
    stats = [Stats(len(q.matches)) for q in queries]
    n_turns, n_tokens = idx.totals()
    for st in stats:
        st.turns, st.tokens = n_turns, n_tokens
    return stats


def from_index(idx, queries: list[Query], filters: Filters, found, stats, limits: list[int]):
    """Add what `scan` would find in the sessions the index covers now, without reading them,
    to `found` and `stats` (which already hold every other session's: the ranking inside
    SQLite needs the final statistics): every turn that can be among a query's first `limits`
    (what rank keeps: window.depth) by (all terms before some, `score`, newer, session, line),
    with its exact counts, and exact document counts. FTS5 does the AND: see `_from_subsets`,
    for a query of a few terms each in at least `limit` turns (see SUBSET_TERMS)."""
    for q, st, out, limit in zip(queries, stats, found, limits, strict=True):
        if not q.matches:
            continue
        if len(q.matches) == 1:
            _top_from_index(idx, q, st, filters, out, limit)
        elif len(q.matches) <= SUBSET_TERMS and min(sum(idx.hits(m, t) for t in idx.tables)
                                                     for m in q.matches) >= limit:
            _from_subsets(idx, q, st, filters, out, limit)
        else:
            _any_from_index(idx, q, st, filters, out, limit)


# Up to how many terms a query's turns holding some but not all of them are found by FTS5,
# one set of terms at a time (2^n - 2 sets, most pruned by their best possible score); past
# it, SQLite scores every turn holding any term (_any_from_index). The sets pay only when
# the AND of all the terms may fill the turns kept: when a term is in fewer turns than
# that, the sets that hold a common term are walked one after the other, each its rows
# again, and one pass over every turn is cheaper. Measured on the bench's 150 questions
# (bench/index.py, 300 sessions; the first stage): sets for every query of 2 to 4 terms 2.0
# s, sets only where each term is in enough turns 1.35 s; all by one pass 3.5 s (a query of
# two common terms takes 3x as long so); sets up to 6 terms 1.34 s, no better.
SUBSET_TERMS = 4


def _df(idx, match: str, tables: list[str], where: str, named: dict) -> int:
    """How many turns the index covers now hold the phrase (dead rows and others left out)."""
    if idx.clean():
        return sum(idx.hits(match, t) for t in tables)
    return sum(idx.con.execute(f"SELECT count(*) FROM {t} JOIN turns t ON t.id = {t}.rowid "
                               f"WHERE {t} MATCH :match{where}", {**named, "match": match}).fetchone()[0]
               for t in tables if idx.hits(match, t))


def _others(idx) -> tuple[str, dict]:
    """SQL leaving out the turns of files indexed but not current (their rows are not the
    index's to answer), and its parameters."""
    others = idx.plan.others
    if not others:
        return "", {}
    named = {f"o{i}": file_id for i, file_id in enumerate(others)}
    return f" AND t.file NOT IN ({','.join(f':o{i}' for i in range(len(others)))})", named


def _filtered(filters: Filters, where: str, named: dict) -> str:
    """`where` with the filters' SQL added (their parameters put in `named`)."""
    from anima.recall import index

    if filters.since is not None:
        where += " AND t.ts >= :since"
        named["since"] = filters.since
    if filters.who is not None:
        where += " AND t.who = :who"
        named["who"] = index.WHO.index(filters.who)
    return where


def _terms(idx, q: Query, st: Stats, filters: Filters) -> tuple[list[str], str, dict]:
    """The shards holding some term of `q`, the SQL leaving out what the index may not answer
    and the filters refuse, and its parameters; each term's document count added to `st`."""
    where, named = _others(idx)
    tables = [t for t in idx.tables if any(idx.hits(m, t) for m in q.matches)]
    for i, m in enumerate(q.matches):
        st.df[i] += _df(idx, m, tables, where, named)
    return tables, _filtered(filters, where, named), named


def _count_sql(g: str, dl: str, avgdl: str) -> str:
    """fts.counter's count in SQL, the same arithmetic in the same order: `g` is a phrase's part
    of a shard's bm25() over its idf, `avgdl` that shard's average length."""
    return f"max(1, round({g} * (:k1 * (1 - :b + :b * {dl} / {avgdl})) / (:k2 - {g})))"


def _part_sql(tf: str) -> str:
    """ranking.part in SQL, the same arithmetic in the same order (over the turns the index
    covers, :avgdl; a turn's length, dl)."""
    return f"({tf} * :k2 / ({tf} + :k1 * (1 - :b + :b * dl / :avgdl)))"


def _from_subsets(idx, q: Query, st: Stats, filters: Filters, out: list, k: int) -> None:
    """The candidates of a query of several terms, from the index, by the set of terms each
    turn holds: for a set S, the turns matching "S's phrases AND-ed, NOT any other", in
    SQLite, ordered by (score, newer, session, line) with `score`'s own arithmetic, the
    first `k` taken. All the terms first: if fewer than `k` turns hold them all, every other
    set gives its first `k` minus those, in the order of the best score it could give (a set
    that cannot beat what is already found is not asked).

    Each term's count in a turn comes from FTS5's bm25() of the set's query, which sums a
    part per phrase: with one phrase of the set repeated ("a AND b AND a") the sum gains that
    phrase's part once more, so |S| queries over the same turns give every part, and each
    part gives its count as fts.counter does."""
    import itertools

    n = len(q.matches)
    tables, where, named = _terms(idx, q, st, filters)
    avgdl = st.avgdl
    weights = [q.weights[i] * st.idf(i) for i in range(n)]

    def order(c):
        return -score(c, st, q), -c.ts, c.session, c.line

    everything = tuple(range(n))
    strict = _subset(idx, q, everything, tables, where, named, weights, avgdl, k)
    out += strict
    need = k - len(strict)
    if need <= 0:
        return
    subsets = [s for size in range(n - 1, 0, -1) for s in itertools.combinations(everything, size)]
    # a part is below K1 + 1 whatever the count: a set's turns score below its bound (and a
    # hair more, for the rounding of the sums)
    bounds = {s: sum(weights[i] * (K1 + 1) for i in s) * (1 + 1e-9) for s in subsets}
    subsets.sort(key=lambda s: -bounds[s])
    relaxed: list = []
    for s in subsets:
        if len(relaxed) >= need:
            relaxed.sort(key=order)
            worst = relaxed[need - 1]
            if bounds[s] < score(worst, st, q):
                continue
            del relaxed[need:]
        relaxed += _subset(idx, q, s, tables, where, named, weights, avgdl, need)
    out += relaxed


def _subset(idx, q: Query, s: tuple, tables: list, where: str, named: dict, weights: list, avgdl: float,
            k: int) -> list:
    """The first `k` turns of each shard holding exactly the terms of `s` (see _from_subsets).

    For a set of two terms or more, the set's bm25() sums a part per term; each term but one
    (the dearest to walk, `_dearest`) has its part asked alone, by its own phrase (q1 ...),
    only for the rows kept, and the last is what remains of the sum. Asked alone, a phrase
    costs one walk of its rows and one more for bm25()'s count of them; asked as the set's
    query with the phrase repeated, every phrase of the set would be walked again, twice for
    bm25()'s counts ("eating 比赛", 3,000 sessions: 6.7 ms a shard, 2.5 alone).
    bm25() for each row costs more than the walk (an AND of two words each in a third of
    300,000 turns: 25 ms a walk, 110 with bm25()). So the counts are asked first only for the
    set's TOP * k best rows by its own bm25(), and that answer is kept when no row below them
    can score above its k-th (`_beyond`); else every row is asked for."""
    from anima.recall import fts, index

    inside = [q.matches[i] for i in s]
    outside = [q.matches[i] for i in range(len(q.matches)) if i not in s]
    base = " AND ".join(inside)
    if outside:
        base = f"({base}) NOT ({' OR '.join(outside)})"
    got = []
    for table in tables:
        if not all(idx.hits(m, table) for m in inside):
            continue
        counts = [fts.counter(idx.con, idx.hits(m, table), table) for m in inside]
        params = {**named, "k": k, "k1": K1, "k2": K1 + 1, "b": B, "avgdl": avgdl, "m0": base, "top": TOP * k}
        last = _dearest(idx, q, s, table)
        alone = [j for j in range(len(s)) if j != last]  # (the terms asked alone: q1 ...)
        for j, count in enumerate(counts):
            params[f"idf{j}"], params[f"fa{j}"], params[f"w{j}"] = count.idf, count.avgdl, weights[s[j]]
        for n, j in enumerate(alone, 1):
            params[f"m{n}"] = inside[j]
        walk = f"SELECT rowid AS r, bm25({table}) AS b FROM {table} WHERE {table} MATCH :m"
        rows = None
        if len(s) > 1:
            first = (_top(walk, where, len(s))
                     + _scored(len(s), last, [f"q0.b{j}" for j in range(len(s))], where, "", "top"))
            rows = idx.con.execute(first, params).fetchall()
            if rows and rows[0][-2] == params["top"] and not (
                    len(rows) == k and rows[-1][-3] > _beyond(counts, params, avgdl, -rows[0][-1])):
                rows = None  # (the top rows were not all of them, and a row below them may be among the first k)
        if rows is None:
            every = ", ".join([f"q0 AS MATERIALIZED ({walk}0)"]
                              + [f"q{n} AS MATERIALIZED ({walk}{n} AND +rowid IN (SELECT r FROM q0))"
                                 for n in range(1, len(s))])
            joins = "".join(f" JOIN q{n} ON q{n}.r = q0.r" for n in range(1, len(s)))
            rows = idx.con.execute(f"WITH {every}" + _scored(len(s), last, [f"q{n}.b" for n in range(len(s))], where,
                                                              joins), params).fetchall()
        for rowid, dl, line, ts, who, session, file_path, asked, *rest in rows:
            tf = [0] * len(q.matches)
            for i, value in zip(s, rest[:-3], strict=True):
                tf[i] = int(value)
            got.append(Candidate(session, file_path, line, ts, index.WHO[who], dl, tuple(tf), idx, rowid, asked))
    return got


def _dearest(idx, q: Query, s: tuple, table: str) -> int:
    """Which term of the set `s` (its place in `s`) is left to what remains of the set's bm25():
    the one dearest to walk alone, by its rows in the shard times its tokens (a phrase of
    several tokens matches their positions), the last of equals."""
    if len(s) == 1:
        return 0
    cost = [idx.hits(q.matches[i], table) * max(1, len(tokens(q.raw[i]))) for i in s]
    return max(range(len(s)), key=lambda j: (cost[j], j))


def _top(walk: str, where: str, n: int) -> str:
    """`_subset`'s CTEs for its first pass: the set's walk (all0), its :top best rows by its
    own bm25() among those `where` admits (top), each term asked alone only for them (q1 ...),
    and their values one row each (q0: r, and b0 ... the bm25() of each walk; a join of the
    small CTEs got no automatic index, and went quadratic)."""
    names = [f"b{j}" for j in range(n)]
    arms = [f"SELECT r, {', '.join(('b' if i == j else 'NULL') + f' AS {x}' for i, x in enumerate(names))} "
            f"FROM {'top' if j == 0 else f'q{j}'}" for j in range(n)]
    admitted = f" JOIN turns t ON t.id = all0.r WHERE 1{where}" if where else ""
    return (f"WITH all0 AS MATERIALIZED ({walk}0), top AS MATERIALIZED (SELECT all0.r AS r, all0.b AS b FROM all0"
            f"{admitted} ORDER BY all0.b LIMIT :top), "
            + "".join(f"q{j} AS MATERIALIZED ({walk}{j} AND +rowid IN (SELECT r FROM top)), " for j in range(1, n))
            + f"q0 AS (SELECT r, {', '.join(f'max({x}) AS {x}' for x in names)} "
            f"FROM ({' UNION ALL '.join(arms)}) GROUP BY r)")


def _scored(n: int, last: int, bs: list[str], where: str, joins: str, first: str | None = None) -> str:
    """`_subset`'s SELECT over q0 (and `joins`): each row's counts from the bm25() of the set's
    query (`bs`[0]) and of each term but the `last`-th alone (`bs`[1] ...: the terms in order,
    that one left out), the `last`-th's what remains of the sum; its score, the first :k by
    (score, newer, session, line); and, for the bound, how many rows CTE `first` (whose `b`
    is bs[0]'s) holds and its worst bm25() (NULL, NULL without one)."""
    alone = [j for j in range(n) if j != last]
    parts: list[str | None] = [None] * n
    for m, j in enumerate(alone, 1):
        parts[j] = f"(-{bs[m]})"
    parts[last] = f"(-{bs[0]} - {' - '.join(p for p in parts if p)})" if n > 1 else f"(-{bs[0]})"
    tfs = [f"{_count_sql(f'({piece} / :idf{j})', 't.dl', f':fa{j}')} AS tf{j}" for j, piece in enumerate(parts)]
    terms = [f":w{j} * {_part_sql(f'tf{j}')}" for j in range(n)]
    bound = f"(SELECT count(*) FROM {first}), (SELECT max(b) FROM {first})" if first else "NULL, NULL"
    return (f" SELECT *, {' + '.join(terms)} AS score, {bound} "
            f"FROM (SELECT q0.r AS rowid, t.dl AS dl, t.line AS line, t.ts AS ts, t.who AS who, "
            f"fl.session AS session, fl.path AS path, t.asks AS asks, {', '.join(tfs)} FROM q0{joins} "
            f"JOIN turns t ON t.id = q0.r JOIN files fl ON fl.id = t.file WHERE 1{where}) "
            "ORDER BY score DESC, ts DESC, session, line LIMIT :k")


# How many rows of a set of terms `_subset` asks each term's count for first, per turn kept.
TOP = 8


def _beyond(counts: list, params: dict, avgdl: float, worst: float) -> float:
    """The most a row of `_subset`'s set can score whose bm25() (the sum of its terms' parts)
    is at most `worst`. A term's bm25() part P = idf * (K1 + 1) tf / (tf + K') is below idf *
    (K1 + 1) whatever the count, and its part of the score is w / idf * P * (tf + K') / (tf +
    K), K' by the shard's average length and K by the whole index's: that last factor lies
    between 1 and (1 + K') / (1 + K) for a count of 1 or more, so at most max(1, avgdl / the
    shard's). The sum goes to the terms that weigh most first, each up to its ceiling."""
    left, most = worst, 0.0
    for w, idf in sorted(((params[f"w{j}"], c.idf) for j, c in enumerate(counts)), key=lambda x: -x[0] / x[1]):
        part = min(left, idf * (K1 + 1))
        most += w / idf * part
        left -= part
    return most * max(1.0, avgdl / counts[0].avgdl) * (1 + 1e-9)


def _any_from_index(idx, q: Query, st: Stats, filters: Filters, out: list, k: int) -> None:
    """The candidates of a query of more than SUBSET_TERMS terms, from the index: SQLite
    scores every turn holding any term, each term's count recovered from its bm25() or, for a
    one-token term in many rows, counted in the instance list, as in _top_from_index, with
    `score`'s own arithmetic in the same order (a term a turn lacks adds 0.0, as `score` skips
    it: the same doubles), and keeps the first `k` by (all terms before some, score, newer,
    session, line), as `rank` orders them."""
    from anima.recall import fts, index

    n = len(q.matches)
    tables, where, named = _terms(idx, q, st, filters)
    params = {**named, "k": k, "n": n, "k1": K1, "k2": K1 + 1, "b": B, "avgdl": st.avgdl}
    arms = []
    vocab = [q.token(i) if sum(idx.hits(m, t) for t in tables) >= VOCAB_ROWS else None
             for i, m in enumerate(q.matches)]
    for s, table in enumerate(tables):
        for i, m in enumerate(q.matches):
            hits = idx.hits(m, table)
            if not hits:
                continue
            if vocab[i] is not None:
                params[f"t{s}_{i}"] = vocab[i]
                arms.append(f"SELECT doc AS r, {i} AS i, count(*) AS tf FROM temp.{fts.instances(idx.con, table)} "
                            f"WHERE term = :t{s}_{i} GROUP BY doc")
                continue
            count = fts.counter(idx.con, hits, table)
            params[f"m{s}_{i}"], params[f"idf{s}_{i}"], params[f"fa{s}_{i}"] = m, count.idf, count.avgdl
            g = f"(-b / :idf{s}_{i})"
            tf = _count_sql(g, "dl", f":fa{s}_{i}")
            arms.append(f"SELECT r, {i} AS i, {tf} AS tf FROM (SELECT {table}.rowid AS r, bm25({table}) AS b, "
                        f"t.dl AS dl FROM {table} JOIN turns t ON t.id = {table}.rowid "
                        f"WHERE {table} MATCH :m{s}_{i} LIMIT -1)")  # (LIMIT: bm25() computed once a row)
    if not arms:
        return
    pivot = ", ".join(f"max(CASE i WHEN {i} THEN tf END) AS tf{i}" for i in range(n))
    parts = []
    for i in range(n):
        params[f"w{i}"] = q.weights[i] * st.idf(i)
        parts.append(f"coalesce(:w{i} * {_part_sql(f'tf{i}')}, 0.0)")
    sql = (f"WITH h AS ({' UNION ALL '.join(arms)}), g AS (SELECT r, count(*) AS held, {pivot} FROM h GROUP BY r) "
           f"SELECT *, {' + '.join(parts)} AS score FROM (SELECT g.*, t.dl AS dl, t.line AS line, t.ts AS ts, "
           "t.who AS who, fl.session AS session, fl.path AS path, t.asks AS asks FROM g "
           f"JOIN turns t ON t.id = g.r JOIN files fl ON fl.id = t.file WHERE 1{where}) "
           "ORDER BY held < :n, score DESC, ts DESC, session, line LIMIT :k")
    for rowid, _, *rest in idx.con.execute(sql, params):
        tfs, (dl, line, ts, who, session, file_path, asked, _) = rest[:n], rest[n:]
        out.append(Candidate(session, file_path, line, ts, index.WHO[who], dl, tuple(int(tf or 0) for tf in tfs),
                             idx, rowid, asked))


def _top_from_index(idx, q: Query, st: Stats, filters: Filters, out: list, k: int) -> None:
    """The index's candidates for a one-term query that can be among the first `k` results:
    SQLite orders the turns holding the term, from every shard, by (score, newer,
    session, line) with the score computed by `score` itself, so the first `k` are exactly
    the ones `rank` would keep."""
    from anima.recall import fts, index

    match = q.matches[0]
    hits = {table: idx.hits(match, table) for table in idx.tables}
    tables = [table for table in idx.tables if hits[table]]
    if not tables:
        return
    where, named = _others(idx)
    st.df[0] += _df(idx, match, tables, where, named)
    where = _filtered(filters, where, named)
    named["match"] = match
    # The score, in SQL, is `score`'s own arithmetic in the same order (so the same doubles):
    # weight * idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl)), the count tf
    # recovered from the shard's bm25() as fts.counter does it, or, for a term of one token
    # in many rows, counted in the shard's instance list (see VOCAB_ROWS).
    token = q.token(0) if sum(hits.values()) >= VOCAB_ROWS else None
    params = {**named, "wi": q.weights[0] * st.idf(0), "k1": K1, "k2": K1 + 1, "b": B, "avgdl": st.avgdl,
              "token": token}
    turn = ("t.dl AS dl, t.file AS file, t.line AS line, t.ts AS ts, t.who AS who, fl.session AS session, fl.path, "
            "t.asks "
            "FROM {} JOIN turns t ON t.id = {} JOIN files fl ON fl.id = t.file")
    counts, arms = [], []
    for n, table in enumerate(tables):
        if token is None:
            count = fts.counter(idx.con, hits[table], table)  # from this shard's own bm25() statistics
            params[f"idf{n}"], params[f"avgdl{n}"] = count.idf, count.avgdl
            tf = _count_sql(f"(-b / :idf{n})", "dl", f":avgdl{n}")
            rows = (f"SELECT {n} AS n, {table}.rowid AS rowid, bm25({table}) AS b, "
                    + turn.format(table, f"{table}.rowid")
                    + f" WHERE {table} MATCH :match{where} LIMIT -1")  # (LIMIT: bm25() computed once a row)
        else:
            count, tf = None, "b"
            rows = (f"SELECT {n} AS n, v.doc AS rowid, v.tf AS b, "
                    + turn.format(f"(SELECT doc, count(*) AS tf FROM temp.{fts.instances(idx.con, table)} "
                                  "WHERE term = :token GROUP BY doc) v", "v.doc")
                    + f" WHERE 1{where}")
        counts.append(count)
        arms.append(f"SELECT *, :wi * {_part_sql(tf)} AS score "
                    f"FROM ({rows})")
    rows = _top_first(idx, tables, where, params, counts, turn, st.avgdl, k) if token is None else None
    if rows is None:
        rows = idx.con.execute(" UNION ALL ".join(arms) + " ORDER BY score DESC, ts DESC, session, line LIMIT :k",
                               {**params, "k": k})
    for n, rowid, b, dl, _, line, ts, who, session, file_path, asked, _ in rows:  # (others are left out above)
        tf = b if counts[n] is None else counts[n](b, dl)
        out.append(Candidate(session, file_path, line, ts, index.WHO[who], dl, (tf,), idx, rowid, asked))


def _top_first(idx, tables: list, where: str, params: dict, counts: list, turn: str, avgdl: float,
               k: int) -> list | None:
    """`_top_from_index`'s rows for a term whose counts come from bm25(), when its first `k`
    lie among each shard's TOP * k best rows by the shard's own bm25(), as `_subset` asks a
    set's: only those rows are joined to their turns and files, scored and ordered (every
    row of "比赛", 24,000 a shard at 3,000 sessions, scored and ordered: 2.2x the time);
    None when a shard has more rows, and one below its best may score above the k-th
    (`_beyond`): then every row is scored."""
    ctes, arms, bounds = [], [], []
    for n, table in enumerate(tables):
        admitted = f" JOIN turns t ON t.id = {table}.rowid" if where else ""
        ctes.append(f"top{n} AS MATERIALIZED (SELECT {table}.rowid AS r, bm25({table}) AS b FROM {table}{admitted} "
                    f"WHERE {table} MATCH :match{where} ORDER BY b LIMIT :top)")
        tf = _count_sql(f"(-b / :idf{n})", "dl", f":avgdl{n}")
        arms.append(f"SELECT *, :wi * {_part_sql(tf)} AS score FROM (SELECT {n} AS n, top{n}.r AS rowid, "
                    f"top{n}.b AS b, " + turn.format(f"top{n}", f"top{n}.r") + ")")
        bounds.append(f"(SELECT count(*) FROM top{n}), (SELECT max(b) FROM top{n})")
    sql = (f"WITH {', '.join(ctes)} SELECT *, {', '.join(bounds)} FROM ({' UNION ALL '.join(arms)}) "
           "ORDER BY score DESC, ts DESC, session, line LIMIT :k")
    rows = idx.con.execute(sql, {**params, "k": k, "top": TOP * k}).fetchall()
    if not rows:
        return rows
    extra = 2 * len(tables)
    for n, count in enumerate(counts):
        kept, worst = rows[0][-extra + 2 * n], rows[0][-extra + 2 * n + 1]
        if kept == TOP * k and not (len(rows) == k and rows[-1][-extra - 1] > _beyond([count], {"w0": params["wi"]},
                                                                                        avgdl, -worst)):
            return None  # (a shard's best rows were not all of them, and one below them may be among the first k)
    return [row[:-extra] for row in rows]


# From how many rows (every shard's) a one-token term's counts are read from FTS5's instance
# list (~0.9 µs a row, measured on the bench corpus) rather than recovered from bm25() (~2.4
# µs a row); below it, the token's stem is not worth finding (an in-memory FTS5 table, ~0.7 ms).
VOCAB_ROWS = 1000


BACKOFF = 0.5  # what a single character of a CJK term weighs, against the term


def score(c: Candidate, st: Stats, q: Query) -> float:
    avgdl = st.avgdl
    return sum(w * st.idf(i) * part(tf, c.dl, avgdl)
               for i, (tf, w) in enumerate(zip(c.tfs, q.weights, strict=True)) if tf)


def backoff(results: list, st: Stats, q: Query) -> None:
    """Add the characters of the query's CJK terms to these results' scores: each character
    at half its term's weight, with an idf over these results only."""
    by_source: dict = {}
    for r in results:
        by_source.setdefault(id(r.c.source), (r.c.source, []))[1].append(r)
    counts = [{} for _ in q.extras]  # per character: {candidate: count}
    for source, rs in by_source.values():
        rowids = {r.c.rowid: r.c for r in rs}
        for j, (char, _) in enumerate(q.extras):
            got = source.token_counts(char, list(rowids))
            for rowid, tf in got.items():
                counts[j][id(rowids[rowid])] = tf
    n = len(results)
    for j, (_, parent) in enumerate(q.extras):
        df = len(counts[j])
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for r in results:
            tf = counts[j].get(id(r.c), 0)
            if tf:
                added = BACKOFF * q.weights[parent] * idf * part(tf, r.c.dl, st.avgdl)
                r.score += added
                r.extra += added


def rank(cands: list[Candidate], st: Stats, q: Query, limit: int, tiers: bool, turns=None) -> list[Result]:
    """Turns that hold every term first (window.first), then the rest. Each admitted candidate is
    scored alone, the best of them (window.depth; a CJK term's characters added, see
    backoff) are then scored with their neighbours, and so are the neighbours themselves
    (anima.recall.window); `turns` (a window.Turns) reads the sessions they are in. Without
    `turns` (texts with no conversation around them: her own past) every candidate is
    ranked by its own score, times its nearness to the dates the query names. Every result
    scored, best first: the caller keeps the first `limit` it shows (see `fold`)."""
    from anima.recall import window

    admitted = cands if turns is None else [c for c in cands if turns.filters.admit(c.ts, c.who)]
    results = [Result(c, score(c, st, q), [t for t, tf in zip(q.raw, c.tfs, strict=True) if tf], not all(c.tfs))
               for c in admitted]

    def order(r):
        return r.relaxed, -r.score, -r.c.ts, r.c.session, r.c.line

    results.sort(key=order)
    kept, scored = window.depth(q, limit)
    pool = results[:kept]
    if q.extras:
        backoff(pool, st, q)
        pool.sort(key=order)
    del pool[scored:]
    if turns is None:
        for r in pool if q.near else ():
            r.score *= window.nearness(r.c.ts, q.near)
        pool.sort(key=lambda r: (not window.first(r, q), TIERS[r.c.who] if tiers else 0, -r.score, -r.c.ts,
                                 r.c.session, r.c.line))
        return pool
    return window.rerank(pool, cands, st, q, turns, tiers)


def attach_text(results: list[Result]) -> None:
    """Read the printed results' text back from their transcripts (each file read once, only
    the lines wanted parsed)."""
    from anima.recall import sessions

    by_path: dict[str, list[Result]] = {}
    for r in results:
        by_path.setdefault(r.c.path, []).append(r)
    for path, rs in by_path.items():
        turns = sessions.turns_at(path, rs[0].c.session, {r.c.line for r in rs})
        for r in rs:
            r.text = turns[r.c.line].text if r.c.line in turns else ""


def run(home, cfg, queries: list[Query], filters: Filters, limit: int, tiers: bool, warn,
        note=None, jobs: int = 1) -> list[list[Result]]:
    """Every query answered, at most `limit` results with their text, a turn said again word
    for word folded into the first (`fold`): from the index for what it covers when it is on,
    by one pass over the transcripts for everything else.
    `note` takes what the user should know about how (the index's coverage). With `jobs` > 1
    and the index on, a batch is shared among that many processes (anima.recall.shared)."""
    import os

    from anima.infra.errors import Refused
    from anima.recall import index, sources

    indexed = cfg["index.enabled"] and os.path.exists(index.path(home))
    if jobs > 1 and len(queries) >= SHARED_FROM and indexed:
        return _shared(home, cfg, queries, filters, limit, tiers, warn, note, jobs)

    read = {} if sources.setting(cfg, "recall.sources", []) else None  # what each file gave, to name a silent source
    idx = None
    if indexed:
        try:
            idx = index.Open(home, cfg)
        except index.Unusable as e:
            warn(f"{e}; scanning the transcripts instead")
        except Refused as e:  # the index is derived: a link in its place is no index, not a failed recall
            warn(f"{e}; scanning the transcripts instead")
    import sqlite3

    notes: list[str] = []  # said once, of the last answer (a recheck may ask again)

    def answer(idx):
        from anima.recall import window

        notes.clear()
        found, stats = _search(home, cfg, queries, filters, idx, warn, notes.append if note else None,
                               [window.depth(q, limit)[0] for q in queries], read)
        turns = window.Turns(idx, filters)
        return [shown(rank(c, st, q, limit, tiers, turns), limit) if q.raw else []
                for c, st, q in zip(found, stats, queries, strict=True)]

    try:
        ranked = answer(idx)
        # a file the index trusted without a stat is stat-ed before its text is read
        if idx is not None and idx.recheck({r.c.path for rs in ranked for r in rs if r.c.source is idx}):
            ranked = answer(idx)
    except sqlite3.DatabaseError as e:  # damage deeper than opening it showed
        if idx is None:
            raise
        warn(f"{index.damaged(index.path(home), e)}; scanning the transcripts instead")
        idx.close()
        idx = None
        ranked = answer(None)
    finally:
        if idx is not None:
            idx.close()
    for line in notes:
        note(line)
    if read is not None:
        from anima.recall import silent

        for line in silent.report(home, cfg, read):
            warn(line)
    attach_text([r for rs in ranked for r in rs])
    return [fold(rs, limit) for rs in ranked]


def shown(results: list[Result], limit: int) -> list[Result]:
    """The results that may be printed: the first `limit` that differ from every one before
    them in speaker, length or counts of the terms, and those among them that do not (they
    may say word for word what one before them said: only their text tells, see `fold`)."""
    seen, out = set(), []
    for r in results:
        key = (r.c.who, r.c.dl, r.c.tfs)
        if key not in seen:
            if len(seen) == limit:
                break
            seen.add(key)
        out.append(r)
    return out


def fold(results: list[Result], limit: int) -> list[Result]:
    """`shown`'s results, their text read, at most `limit`: a turn that says word for word what
    one ranked before it said (the same speaker; a host that logs a turn twice, a resumed
    session that copies the one before) is not shown again, and the one shown lists it in
    `also`."""
    kept: list[Result] = []
    first: dict[tuple, Result] = {}
    for r in results:
        twin = first.get((r.c.who, r.text)) if r.text else None
        if twin is not None:
            twin.also.append(r.c)
            continue
        if len(kept) == limit:
            break
        first[r.c.who, r.text] = r
        kept.append(r)
    return kept


# From how many queries a batch is shared (recall.jobs), in parts of at least half as many:
# forking costs a few milliseconds a process, and each part opens the index and reads the
# sessions its results are in anew (the batch of bench/index.py, 150 questions at 300
# sessions: 3.9-4.3 s in one process, 2.4-2.6 s in two, in parts of 38).
SHARED_FROM = 16


def _shared(home, cfg, queries, filters, limit, tiers, warn, note, jobs) -> list[list[Result]]:
    """`run` for a batch in parts, from `jobs` processes. What the parts warn of and note is
    said once each, when every part is answered.
    Not for a scan: it reads every transcript once for the whole batch, and each part would
    read them all again (150 questions at 300 sessions: 35-44 s in one process, 41-49 in two)."""
    from anima.recall import shared

    def part(start: int, end: int):
        said = []
        ranked = run(home, cfg, queries[start:end], filters, limit, tiers, lambda m: said.append((False, m)),
                     (lambda m: said.append((True, m))) if note is not None else None)
        for c in (c for rs in ranked for r in rs for c in (r.c, *r.also)):
            c.source = None  # (an open index or an in-memory table: it stays in the process)
        return ranked, said

    ranked, said = [], {}
    for got, lines in shared.run(part, len(queries), jobs, SHARED_FROM // 2):
        ranked += got
        said.update(dict.fromkeys(lines))
    for to_note, line in said:
        (note if to_note else warn)(line)
    return ranked


class _Filters:
    """What the scan looks for in raw bytes and text, made only when a scan happens (an index
    that covers everything never needs the stems)."""

    def __init__(self, queries: list[Query]):
        from anima.recall import fts

        terms = list(dict.fromkeys(t for q in queries for t in q.raw))
        words = sorted({tok for t in terms for tok in tokens(t) if tok.isascii()})
        stems = fts.stems(words) if words else {}
        self.phrases = [needles(t, stems) for t in terms]
        self.sieves = [sieve(t, stems) for t in terms]
        # the sieves whose match the body can change: a word of the term may touch a CJK
        # character in a turn ("77" in "标记77号"), and only the body makes it a word there
        self.worded = [s for t, s in zip(terms, self.sieves, strict=True)
                       if any(not is_cjk(tok[0]) for tok in tokens(t))]

    def body(self, text: str) -> str | None:
        """The FTS5 body (fts.body) of a turn that may hold a term, None for one that cannot.
        A sieve is searched in the body, where words begin and end as FTS5 sees them; the
        text as written is tried first, as it costs no body for a turn that fails, and is
        looser (a word runs on into CJK there): what it lets through, FTS5 still decides."""
        from anima.recall import fts

        if any(s.search(text) for s in self.sieves):
            return fts.body(text)
        if self.worded and not text.isascii():
            spaced = fts.body(text)
            if any(s.search(spaced) for s in self.worded):
                return spaced
        return None


def _search(home, cfg, queries, filters, idx, warn, note, limits, read=None):
    """Candidates and statistics: a scan's for what the index does not cover, then the index's
    (each query's first `limits`, see from_index).
    `read`, when given, gets {path: (turns, format)} of every file (anima.recall.silent)."""
    from anima.recall import prescan

    if idx is not None:
        if read is not None:
            from anima.recall import silent

            silent.of_index(idx, read)
        found, stats = [[] for _ in queries], index_stats(idx, queries)
        plan = idx.plan
        if note and plan.hot:
            note(f"index excludes {len(plan.hot)} sessions modified in the last {cfg['index.hot_minutes']} minutes "
                 "(scanned directly)")
        if note and (plan.stale or plan.missing):
            note(f"index is stale: {len(plan.stale)} sessions changed or new since it was updated (scanned "
                 f"directly), {len(plan.missing)} gone; `anima index update` catches up")
        if plan.uncovered:
            indexed_ids = {sid for _, sid in idx.covered().values()}
            f = _Filters(queries)
            uncovered = (s for s in prescan.scan(home, cfg, f.phrases, warn, paths=plan.uncovered, read=read)
                         if s.id not in indexed_ids)
            scan(uncovered, queries, filters, found, stats, f)
        from_index(idx, queries, filters, found, stats, limits)
        return found, stats
    f = _Filters(queries)
    return scan(prescan.scan(home, cfg, f.phrases, warn, read=read), queries, filters, sieves=f)


def snippet(text: str, terms: list[str], width: int) -> str:
    """About `width` characters of the text around the first match, on one line: where a
    term's sieve (a word beginning with its stem, as the scan looks for it) first matches,
    else where the start of its first word first stands, else the text's start."""
    flat = " ".join(text.split())
    found = [m.start() for pattern in _sieves(tuple(terms)) for m in [pattern.search(flat)] if m]
    if not found:
        lower = flat.lower()
        heads = [tok[:max(1, len(tok) - 2)] for t in terms for tok in tokens(t)[:1]]  # a stem differs at the end
        found = [p for p in (lower.find(h) for h in heads) if p >= 0]
    at = min(found, default=0)
    start = max(0, min(at - width // 3, len(flat) - width))
    piece = flat[start:start + width]
    return ("…" if start > 0 else "") + piece + ("…" if start + width < len(flat) else "")


@functools.lru_cache(maxsize=64)
def _sieves(terms: tuple) -> list:
    """The sieves of these terms (a snippet's results hold the same few terms)."""
    from anima.recall import fts

    words = sorted({tok for t in terms for tok in tokens(t) if tok.isascii()})
    stems = fts.stems(words) if words else {}
    return [sieve(t, stems) for t in terms]


def date(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def as_json(r: Result) -> dict:
    return {"session": r.c.session, "line": r.c.line, "date": date(r.c.ts), "who": r.c.who, "text": r.text,
            "score": round(r.score, 4), "terms": r.terms, "relaxed": r.relaxed, "path": r.c.path,
            "also": [{"session": c.session, "line": c.line, "date": date(c.ts), "path": c.path} for c in r.also]}


def as_line(r: Result, width: int) -> str:
    return f"{r.c.session}\t{r.c.line}\t{date(r.c.ts)}\t{r.c.who}\t{printable(snippet(r.text, r.terms, width))}\n"
