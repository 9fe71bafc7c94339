"""`anima recall --self`: her own past searched as recall searches the transcripts.

What is searched, in this order (paths relative to the home), each file a KIND:

    autobiography  self/autobiography/ENTRY.md   (the body; the front matter is left out)
    archive        self/stream/archive/DATE.md
    now            self/stream/now.md            (what has not been archived yet)
    memories       self/memories/TOPIC.md
    diary          self/diary/DATE.md

A result is a paragraph: a run of non-blank lines, each list item ("- ", "* ", "+ ", "1. ",
nested at any depth) one of its own, headings not (the lines of a fenced code block, ``` or
~~~, are text as they stand); its LINE is its first line's (1-based), so that `sed -n LINEp`
prints where it begins. Its date is the nearest real one (in ASCII digits) above it: an entry
heading ("## DATE HH:MM" in the stream, "## HH:MM" under a day known above it, as in the
diary), the date of a memory line ("- DATE HH:MM ...", "- DATE: ..."), else the day the file is
named after, if that is a day; a paragraph without one has none. A memory is searched together
with the heading above it, else its topic's name (what about_alice.md holds is about Alice:
"Alice dog" finds "- ... her dog Coco"); what it shows is the paragraph alone.

The engine is the transcripts' (anima.recall.search and anima.recall.fts): FTS5's porter
unicode61 tokens, each term a phrase, the paragraphs holding every term first (for a question
naming a date, those within its span: anima.recall.window.first) and then the rest, those with
some of the terms marked relaxed, BM25 over every paragraph of these files (including those --since
leaves out), then the newer one first, then by file and line. Paths are composed here rather
than taken from anima.stream.now: anima.stream imports recall, and recall may not import it
back.
"""

import math
import os
import re

KINDS = ("autobiography", "archive", "now", "memories", "diary")
_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_DATED = re.compile(r"(?:(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}):(\d{2}))?|(\d{2}):(\d{2}))")
_FENCE = re.compile(r" {0,3}(`{3,}(?=[^`]*$)|~{3,})")  # (```ls``` at a line's start is inline code)
_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")  # (nested ones at any depth)
_ITEM_DATE = re.compile(r"[ \t]*[-*+][ \t]+(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}):(\d{2}))?(?![\d-])")
_DAY_NAME = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})(?:\.[0-9]+)?\.md")


class Unit:
    """One paragraph of her past: where it is, when, and its text."""

    __slots__ = ("file", "line", "date", "time", "kind", "text", "context")

    def __init__(self, file: str, line: int, date: str | None, at: str | None, kind: str, text: str,
                 context: str = ""):
        self.file, self.line, self.date, self.time, self.kind = file, line, date, at, kind
        self.text, self.context = text, context

    @property
    def searched(self) -> str:
        """The text matched and scored: the paragraph, after its context (a memory's heading)."""
        return f"{self.context}\n{self.text}" if self.context else self.text

    @property
    def ts(self) -> float | None:
        if self.date is None:
            return None
        hh, _, mm = (self.time or "").partition(":")
        return _moment(self.date, hh or None, mm or None)


class Hit:
    """A paragraph found: its score, the terms it holds, whether it was found relaxed."""

    def __init__(self, unit: Unit, score: float, terms: list[str], relaxed: bool):
        self.unit, self.score, self.terms, self.relaxed = unit, score, terms, relaxed


_MOMENTS: dict[tuple, float | None] = {}


def _moment(day: str | None, hh: str | None = None, mm: str | None = None) -> float | None:
    """Seconds since the epoch of DAY HH:MM (UTC; midnight without a time), None when it is no
    date (or no time). The callers' patterns put digits in their places, of any script to
    Python's \\d: only ASCII ones make a date. Built from the numbers rather than by strptime
    (~10 µs, paid once for every entry of a stream archive: each has its own minute), and kept."""
    key = (day, hh, mm)
    if key not in _MOMENTS:
        import calendar

        y, mo, d = (int(part) for part in (day or "2000-01-01").split("-"))
        h, m = int(hh or 0), int(mm or 0)
        real = (f"{day}{hh}{mm}".isascii() and y >= 1 and 1 <= mo <= 12
                and 1 <= d <= calendar.monthrange(y, mo)[1] and h < 24 and m < 60)
        _MOMENTS[key] = float(calendar.timegm((y, mo, d, h, m, 0))) if real else None
    return _MOMENTS[key]


def _valid(day: str | None, hh: str | None = None, mm: str | None = None) -> bool:
    return _moment(day, hh, mm) is not None


def _real(day: str) -> str | None:
    """The day a file is named after, if it is one (2026-02-30.md is named after none)."""
    return day if _valid(day) else None


def topic_words(topic: str) -> str:
    """A memory topic's name as words: about_alice is "about alice"."""
    return topic.replace("_", " ").replace("-", " ")


def paragraphs(text: str, kind: str, file: str, day: str | None, topic: str = "") -> list[Unit]:
    """The paragraphs of one file's `text` (see the module's docstring); `day` is the date the
    file is named after, `topic` a memory file's name (its context until a heading gives one)."""
    lines = text.removeprefix("\ufeff").split("\n")  # (a byte order mark, as some editors write one)
    start = 0
    if kind == "autobiography" and lines and lines[0].rstrip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
        if end is not None:
            start = end + 1
    out: list[Unit] = []
    date, at = day, None
    context = topic_words(topic) if kind == "memories" else ""
    first, block, when = 0, [], (day, None)

    def close():
        if block:
            out.append(Unit(file, first, when[0], when[1], kind, "\n".join(block), context))
            block.clear()

    fence = ""  # the fence of the code block a line is in ("```", "~~~~"), its lines text as they are
    for i in range(start, len(lines)):
        line = lines[i].rstrip("\r")
        if not line.strip():
            close()
            continue
        mark = _FENCE.match(line)
        if fence or mark:
            if not fence:
                fence = mark[1]
            elif mark and mark[1][0] == fence[0] and len(mark[1]) >= len(fence) and not line[mark.end():].strip():
                fence = ""
            if not block:
                first, when = i + 1, (date, at)
            block.append(line)
            continue
        heading = _HEADING.fullmatch(line)
        if heading:
            close()
            words = (heading[2] or "").strip()
            dated = _DATED.fullmatch(words)
            if dated and dated[1] and _valid(dated[1], dated[2], dated[3]):
                date, at = dated[1], f"{dated[2]}:{dated[3]}" if dated[2] else None
            elif dated and dated[4] and date is not None and _valid(date, dated[4], dated[5]):
                at = f"{dated[4]}:{dated[5]}"  # (of the day known above it; with none, no time)
            elif kind == "memories" and words:
                context = words
            continue
        if block and not _ITEM.match(line):
            block.append(line)
            continue
        close()
        first, when = i + 1, (date, at)
        own = _ITEM_DATE.match(line) if kind == "memories" else None
        if own and _valid(own[1], own[2], own[3]):
            when = (own[1], f"{own[2]}:{own[3]}" if own[2] else None)
        block.append(line)
    close()
    return out


def files(home, warn=lambda message: None) -> list[tuple[str, str, str | None, str]]:
    """(kind, path, the day it is named after, topic) of every file searched, in order; a
    directory that cannot be listed (a link in its place) is skipped with a warning."""
    from anima.infra import fs
    from anima.infra.errors import AnimaError
    from anima.self import autobiography, diary, memories

    def each(directory: str, names) -> list:
        try:
            return names()
        except AnimaError as e:
            warn(f"{e}; skipped")
        except (NotADirectoryError, PermissionError):
            warn(f"{directory}: not a directory anima can read; skipped")
        return []

    def remembered() -> list[str]:
        """The memory topics, and a warning for each *.md that is no topic's (a name
        memory.write would refuse): a link or a FIFO is a topic, for reading to refuse aloud."""
        try:
            names = sorted(n[:-3] for n in fs.listdir(memories.directory(home)) if n.endswith(".md"))
        except FileNotFoundError:
            return []
        for name in names:
            if not memories.TOPIC.fullmatch(name):
                warn(f"{os.path.join(memories.directory(home), name)}.md: not a memory topic's name "
                     "(letters, digits, '_', '-', '.'); skipped")
        return [n for n in names if memories.TOPIC.fullmatch(n)]

    def archived() -> list[str]:
        try:
            return sorted(n for n in fs.listdir(archive) if diary.DATE.fullmatch(n[:-3]) and n.endswith(".md"))
        except FileNotFoundError:
            return []

    found = []
    for name in each(autobiography.directory(home), lambda: autobiography.names(home)):
        found.append(("autobiography", os.path.join(autobiography.directory(home), name),
                      _real(_DAY_NAME.fullmatch(name)[1]), ""))
    archive = home.path("self", "stream", "archive")
    for name in each(archive, archived):
        found.append(("archive", os.path.join(archive, name), _real(name[:-3]), ""))
    found.append(("now", home.path("self", "stream", "now.md"), None, ""))
    for topic in each(memories.directory(home), remembered):
        found.append(("memories", os.path.join(memories.directory(home), topic + ".md"), None, topic))
    for day in each(diary.directory(home), lambda: diary.dates(home)):
        found.append(("diary", os.path.join(diary.directory(home), day + ".md"), _real(day), ""))
    return found


CACHE_FORMAT = 1


def _read(home, warn):
    """(kind, path, text, day, topic, signature, when it was examined) of
    every file searched; a file that cannot be read (not UTF-8, a link) is skipped with a
    warning, as a damaged transcript is."""
    from anima.infra import clock, fs
    from anima.infra.errors import AnimaError

    for kind, path, day, topic in files(home, warn):
        started = clock.files_now_ns()
        try:
            sig = fs.signature(path)
            text = fs.read_text(path)
        except AnimaError as e:
            warn(f"{e}; skipped")
            continue
        except OSError as e:
            warn(f"{path}: {e.strerror or e}; skipped")
            continue
        if text:
            yield kind, path, text, day, topic, sig, started


def _cached(home) -> dict:
    """cache/past.json's {file: {"sig", "units", "tokens"}}, or nothing when there is none to use."""
    from anima.infra import fs, jsontext

    try:
        doc = jsontext.loads(fs.read_cache(os.path.join(home.cache, "past.json")) or b"null")
    except ValueError:
        return {}
    if isinstance(doc, dict) and doc.get("v") == CACHE_FORMAT and isinstance(doc.get("files"), dict):
        return doc["files"]
    return {}


def _fits(entry, sig, text: str, kind: str, topic: str) -> bool:
    """Whether a cache/past.json entry can stand for the file whose signature is `sig` and
    text `text`: the same signature, and totals that file could have. A cache is anima's to
    rebuild, whatever a person or a crash left in it: a count below zero or past what the
    text can hold (a paragraph is a line at least; its tokens are a character each at least,
    its own and, for a memory, its heading's, a line of the text, or its topic's name) is
    counted again instead."""
    if not isinstance(entry, dict) or entry.get("sig") != sig:
        return False
    units, tokens = entry.get("units"), entry.get("tokens")
    heading = max(len(text), len(topic)) if kind == "memories" else 0
    return (type(units) is int and type(tokens) is int and 0 <= units <= text.count("\n") + 1
            and 0 <= tokens <= len(text) + units * heading)


def _holds(text: str, needles: list) -> bool:
    """Whether `text` may hold a term (anima.recall.prescan.may_hold)."""
    from anima.recall.prescan import may_hold

    return may_hold(text.lower().encode("utf-8"), needles)


def search(home, q, since: float | None, limit: int, warn) -> list[Hit]:
    """The best `limit` paragraphs for the anima.recall.search.Query `q` (terms, or a
    question: the dates it names favour the paragraphs near them), those dated before `since`
    (and undated ones, when it is given) left out.

    Only the files that may hold a term are cut into paragraphs, as the transcripts' scan
    narrows its turns before FTS5 decides: a file's paragraphs are in its text, so a file
    without every needle of some term (anima.recall.search.needles) has no paragraph holding
    one, and the paragraphs of the others are narrowed down by the terms' sieves; a file left
    out gives its totals (how many paragraphs, how many tokens) from cache/past.json while its
    signature holds. A memory is searched with its heading or topic, which a term of several
    tokens may run on from: such a term reads every memory."""
    import json

    from anima.infra import fs
    from anima.infra.errors import UsageError
    from anima.recall import fts
    from anima.recall import search as recall

    if not q.raw:
        raise UsageError("give at least one search term (letters, digits or CJK characters)")
    narrowing = recall._Filters([q])  # the transcripts' scan's needles and sieves, term by term
    sieves, needles = narrowing.sieves, narrowing.phrases
    phrases = any(len(recall.tokens(t)) > 1 for t in q.raw)
    st = recall.Stats(len(q.matches))
    memory = fts.Memory()
    kept: list[Unit] = []
    known, totals = _cached(home), {}
    for kind, path, text, day, topic, sig, started in _read(home, warn):
        rel = os.path.relpath(path, home.root)
        may = _holds(text, needles) or kind == "memories" and (phrases or _holds(topic_words(topic), needles))
        entry = known.get(rel)
        if not may and _fits(entry, sig, text, kind, topic):
            st.turns += entry["units"]
            st.tokens += entry["tokens"]
            totals[rel] = entry
            continue
        found = paragraphs(text, kind, rel, day, topic)
        tokens = 0
        for u in found:
            spaced = fts.body(u.searched)
            tokens += fts.count_tokens(spaced)  # (token_count's count, with a simpler pattern once spaced)
            if may and any(s.search(spaced) for s in sieves):
                memory.add_body(spaced)
                kept.append(u)
        st.turns += len(found)
        st.tokens += tokens
        if fs.settled([sig], started) and fs.signature(path) == sig:
            totals[rel] = {"sig": sig, "units": len(found), "tokens": tokens}
    if totals != known:
        fs.write_cache(os.path.join(home.cache, "past.json"),
                       json.dumps({"v": CACHE_FORMAT, "files": totals}, ensure_ascii=False))
    rows = [memory.phrase_rows(m) for m in q.matches]
    cands, by_row = [], {}
    for r in sorted(set().union(*rows)):
        for i, found in enumerate(rows):
            st.df[i] += r in found
        u = kept[r - 1]
        ts = u.ts
        if since is not None and (ts is None or ts < since):
            continue
        size = next(found[r][1] for found in rows if r in found)
        # who is no tier here (ranked with tiers off): every word of these files is hers; an
        # undated paragraph is older than any, and near no date a question names
        cands.append(recall.Candidate(u.file, u.file, u.line, -math.inf if ts is None else ts, "me", size,
                                      tuple(found[r][0] if r in found else 0 for found in rows), memory, r))
        by_row[r] = u
    ranked = recall.rank(cands, st, q, limit, False)[:limit]
    return [Hit(by_row[r.c.rowid], r.score, r.terms, r.relaxed) for r in ranked]


def as_json(h: Hit) -> dict:
    u = h.unit
    return {"file": u.file, "line": u.line, "date": u.date, "time": u.time, "kind": u.kind, "text": u.text,
            "score": round(h.score, 4), "terms": h.terms, "relaxed": h.relaxed}


def as_line(h: Hit, width: int) -> str:
    from anima.infra.text import printable
    from anima.recall.search import snippet

    u = h.unit
    return f"{u.file}\t{u.line}\t{u.date or ''}\t{u.kind}\t{printable(snippet(u.text, h.terms, width))}\n"
