"""What recall ranks, and how: a candidate turn, the corpus statistics, a turn's BM25 part,
a scored result. Shared by the first stage (anima.recall.search) and the second
(anima.recall.window)."""

import math

K1 = 1.2
B = 0.75
TIERS = {"user": 0, "me": 1, "delegated": 2}


def asks(text: str) -> bool:
    """Whether a turn ends in a question mark: it asks, and is less likely the answer a
    question seeks (anima.recall.window)."""
    return text.rstrip().endswith(("?", "？"))


def answers(results) -> bool:
    """Whether some of these results (Result, past.Hit) holds every term: when none does, the
    caller says that it shows turns with any of them (relaxed). Not only the first one: for a
    question, a turn holding every word may follow one that does not (anima.recall.window.first)."""
    return any(not r.relaxed for r in results)


class Candidate:
    """A turn that holds at least one term: where it is and what the score needs, no text."""

    __slots__ = ("session", "path", "line", "ts", "who", "dl", "tfs", "xtfs", "source", "rowid", "asks")

    def __init__(self, session: str, path: str, line: int, ts: float, who: str, dl: int, tfs: tuple,
                 source=None, rowid: int = 0, asks: bool = False):
        self.session, self.path, self.line, self.ts, self.who = session, path, line, ts, who
        self.dl, self.tfs, self.xtfs, self.asks = dl, tfs, (), bool(asks)
        self.source, self.rowid = source, rowid  # the FTS5 table it came from: `token_counts(token, rowids)`


class Stats:
    """Corpus statistics for idf and length normalisation: every turn counts, filtered or not."""

    def __init__(self, nterms: int):
        self.turns = 0
        self.tokens = 0
        self.df = [0] * nterms

    def idf(self, i: int) -> float:
        df = self.df[i]
        return math.log(1 + (self.turns - df + 0.5) / (df + 0.5))

    @property
    def avgdl(self) -> float:
        # (no tokens at all: no turn can hold a term; or a cache's totals that lie, which must
        # not divide by zero)
        return self.tokens / self.turns if self.turns and self.tokens > 0 else 1.0


def part(tf: int, dl: int, avgdl: float) -> float:
    return tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))


class Result:
    def __init__(self, c: Candidate, score: float, terms: list[str], relaxed: bool):
        self.c, self.score, self.terms, self.relaxed = c, score, terms, relaxed
        self.text = ""
        self.extra = 0.0  # what a CJK term's single characters added (backoff)
        self.also: list[Candidate] = []  # the same words, said again elsewhere (search.fold)
