"""Pool A, the self-stream: now.md, its bookkeeping (pipeline/stream.jsonl) and its daily archive.

self/stream/now.md is first-person Markdown and nothing else: a run of entries, each

    ## 2026-11-30 21:05

    The text, in her own words; any number of lines of Markdown.

(a blank line after the heading, one after the text; the time is UTC, like the diary's).
Nothing machine-readable ever enters it. Which lines are whose lives on the Pool B side, in
pipeline/stream.jsonl, one JSON line per change of now.md, appended under the same lock:

    {"gen": 3, "lines": [41, 45], "by": "think", "at": "2026-11-30T21:05:07Z", "sha256": "...", "size": 2050}
    {"gen": 4, "by": "roll", "why": "age", "at": "2026-11-30T22:20:00Z", "moved": 30, "kept": 15,
     "size": 690, "archive": ["2026-11-30"]}

`gen` counts rollovers: each roll starts a new generation of now.md, numbered from line 1,
so that [first, last] (1-based, inclusive, the heading included) always names the lines of
one generation, and sha256 is of exactly those lines (the block appended) to tell that they
are still there unchanged. `size` is now.md's size in bytes once the change is made: an
append finds where now.md ends from the last record (its last line, or a roll's `kept`)
when now.md still has that size and was not modified after the bookkeeping, and counts the
lines of now.md only when it was (a hand edit), so that an append costs the same whatever
now.md holds.

Rollover (`anima stream roll`): due when now.md holds more than stream.max_lines lines, or
its oldest entry is older than stream.keep_minutes and a quarter of that again (the slack,
at least a minute: a roll every quarter hour, not every minute). The entries older than
stream.keep_minutes go to self/stream/archive/DATE.md (appended; DATE the UTC day in the
entry's heading, so a stream spanning midnight goes to two days; text before the first
heading goes with the first entry); the later ones stay, her working memory, as the first
lines of the new generation (a roll forced by stream.max_lines keeps only those of them
that fit in half of it). The kept entries keep their records: line n of the old generation
is line n - moved of the new one, and a record of an earlier generation is looked for at
its lines so moved, then by its sha256 (anima.stream.bookkeeping.block). The roll is a
change set (anima.infra.changeset, pipeline/roll.pending): the archive appended, the roll
recorded, now.md replaced by what it keeps, each applied at most once; a crash in between
is finished by the next change of the stream (an append, a roll, `anima tick`), and until
then the text is in both places, never in neither.
"""

import contextlib
import json
import os
import re
import time

from anima.infra import changeset, clock, fs, jsontext
from anima.infra.digest import sha
from anima.infra.errors import Busy, Refused
from anima.infra.text import heading_like, text_lines

HEADING = re.compile(r"## (\d{4}-\d{2}-\d{2}) (\d{2}):(\d{2})$")
# A line of a thought that could pass for structure: any ATX heading (up to three spaces of
# indent, then '#'), looked for on the visible form (anima.infra.text.heading_like: nothing
# invisible, no braille blank, no stray combining mark and no ＃ hides one). It is escaped
# with a backslash, which Markdown shows as the '#' it was.
_TAIL_BYTES = 8192
KEEP_MINUTES = 60  # stream.keep_minutes' default
ROLL = "roll"  # its change set: pipeline/roll.pending


class Stream:
    """The self-stream of one home."""

    def __init__(self, home):
        self.home = home
        self.dir = home.path("self", "stream")
        self.now_path = os.path.join(self.dir, "now.md")
        self.archive_dir = os.path.join(self.dir, "archive")
        self.book = home.path("pipeline", "stream.jsonl")

    # --- appending -----------------------------------------------------------------------

    def append(self, text: str, by: str, at: float, max_chars: int | None = None,
               extra: dict | None = None, held: bool = False, before=None) -> dict:
        """Append one entry of `text` (cleaned, see `clean`) and record it as `by`'s; return the
        record written to the bookkeeping file.

        `extra`: more fields for the record (never replacing gen, lines, by, at, sha256, size).
        `held`: the caller already holds `lock()` (to check and append in one locked step).
        `before(record)`: called under the lock once the record is known, before now.md is
        written (a write-ahead note of what is about to be appended)."""
        body = clean(text, max_chars)
        block = f"{heading(at)}\n\n{body}\n\n"
        with contextlib.nullcontext() if held else self.lock():
            if changeset.is_pending(self.home, "consolidate"):
                # its change set replaces now.md when it is finished: an entry added now would be lost
                raise Busy("now.md: an interrupted consolidate is pending; the next `anima tick` finishes it "
                           "(or run `anima consolidate`)")
            self.finish_roll()
            gen, lines, size, closed = self.end()
            # a hand edit that left the last line open is closed first: never glue onto it
            opening = "" if closed else "\n"
            first = lines + 1
            last = first + block.count("\n") - 1
            data = (opening + block).encode("utf-8")
            record = {**(extra or {}), "gen": gen, "lines": [first, last], "by": by,
                      "at": clock.iso(at), "sha256": sha(block), "size": size + len(data)}
            record = {k: record[k] for k in ("gen", "lines", "by", "at", "sha256", "size")} | record
            if before is not None:
                before(record)
            # on disk before its record is (a barrier even in a batch): a power failure may lose a
            # record and leave its entry, which the journal resolves, never the other way round
            fs.append(self.now_path, data, barrier=True)
            self.write_record(record)
        return record

    def end(self) -> tuple[int, int, int, bool]:
        """(generation, lines, bytes, whether its last line is closed) of now.md, under `lock()`.

        From the last record when it still describes now.md: its `size` is now.md's, and now.md
        was not modified after the bookkeeping was (a hand edit of the same size). Else, and
        without a `size` (a record written late, a consolidate), by counting now.md's lines."""
        data = _tail(self.book, _TAIL_BYTES)
        records = _records(data)
        if len(data) == _TAIL_BYTES and not records:  # an unusually long record: read it all
            records = _records(fs.read_bytes(self.book) or b"")
        gen = max((r["gen"] for r in records), default=0)
        now, book = fs.status(self.now_path), fs.status(self.book)
        size = now.st_size if now is not None else 0
        if records and book is not None and (now is None or now.st_mtime_ns <= book.st_mtime_ns):
            last = records[-1]
            span = last.get("lines")
            lines = last.get("kept") if last.get("by") == "roll" else \
                span[1] if isinstance(span, list) and len(span) == 2 else None
            if last.get("size") == size and last["gen"] == gen and _is_count(lines) and (size == 0) == (lines == 0):
                return gen, lines, size, size == 0 or self._last_byte() == b"\n"
        text = fs.read_text(self.now_path) or ""
        return gen, _count_lines(text), len(text.encode("utf-8")), not text or text.endswith("\n")

    def _last_byte(self) -> bytes:
        fd = fs.open_file(self.now_path)
        try:
            return os.pread(fd, 1, max(0, os.fstat(fd).st_size - 1))
        finally:
            os.close(fd)

    def lock(self):
        """The lock every change of now.md and its bookkeeping is made under."""
        return fs.locked(self.now_path)

    @contextlib.contextmanager
    def changing(self):
        """The locks a change set over the stream (consolidate, forget) is planned and made
        under: the change sets' (Busy at once when another holds it), then the stream's."""
        with changeset.lock(self.home), self.lock():
            yield

    def write_record(self, record: dict) -> None:
        """Append one record to the bookkeeping file (under `lock()`)."""
        fs.append(self.book, json.dumps(record, ensure_ascii=False) + "\n")

    def generation(self) -> int:
        """The generation now.md is in: the highest `gen` recorded (a generation never goes
        back; a record written late, for an entry a roll already archived, carries its own
        older one). The records at the end of the file are enough: they hold the last roll or
        what was appended since."""
        data = _tail(self.book, _TAIL_BYTES)
        if len(data) == _TAIL_BYTES and not _gens(data):  # an unusually long record: read it all
            data = fs.read_bytes(self.book) or b""
        return max(_gens(data), default=0)

    # --- reading -------------------------------------------------------------------------

    def text(self) -> str:
        return fs.read_text(self.now_path) or ""

    def head(self, size: int) -> str:
        """The whole lines of now.md's first `size` bytes (its oldest entry's heading is there)."""
        try:
            fd = fs.open_file(self.now_path)
        except FileNotFoundError:
            return ""
        with os.fdopen(fd, "rb") as f:
            data = f.read(size)
        if len(data) == size:  # the cut may fall inside a line or a character: end at a \n
            data = data[: data.rfind(b"\n") + 1]
        return fs.decode(data, self.now_path)

    def tail(self, n: int) -> str:
        """The last `n` lines of now.md, reading only as much of its end as they need (a
        stream nobody rolled may be large; `anima stream` runs often)."""
        if n <= 0:
            return ""
        try:
            fd = fs.open_file(self.now_path)
        except FileNotFoundError:
            return ""
        with os.fdopen(fd, "rb") as f:
            end = f.seek(0, os.SEEK_END)
            size = max(_TAIL_BYTES, 160 * n)
            while True:
                start = max(0, end - size)
                f.seek(start)
                data = f.read(end - start)
                if start:  # the cut may fall inside a line or a character: start after a \n
                    cut = data.find(b"\n") + 1
                    data = data[cut:] if cut else b""
                lines = fs.decode(data, self.now_path).splitlines(keepends=True)
                if start == 0 or len(lines) > n:
                    return "".join(lines[-n:])
                size *= 4

    # --- rollover ------------------------------------------------------------------------

    def due(self, text: str, max_lines: int, now: float, keep_minutes: int = KEEP_MINUTES) -> str | None:
        """Why now.md holding `text` must roll at `now` ("lines" or "age"), or None: more than
        `max_lines` lines, or its oldest entry older than `keep_minutes` and the slack."""
        if not text:
            return None
        if _count_lines(text) > max_lines:
            return "lines"
        for line in text.split("\n"):
            started = parse_heading(line)
            if started is not None:
                return "age" if now - started >= (keep_minutes + slack(keep_minutes)) * 60 else None
        return None

    def roll(self, max_lines: int, now: float, force: bool = False, keep_minutes: int = KEEP_MINUTES,
             warn=None) -> dict | None:
        """Archive the entries of now.md older than `keep_minutes` if a roll is due (or `force`),
        keeping the later ones; return the roll record, or None when nothing was archived."""
        with self.lock():
            self.finish_roll(warn)
            text = self.text()
            why = ("forced" if text else None) if force else self.due(text, max_lines, now, keep_minutes)
            if why is None:
                return None
            lines = text.splitlines(keepends=True)
            cut = kept_from(lines, now, keep_minutes, max_lines // 2 if _count_lines(text) > max_lines else None)
            if cut == 0:
                return None  # every entry is recent enough to stay (a forced roll of a fresh stream)
            moved, kept = "".join(lines[:cut]), "".join(lines[cut:])
            days = split_days(moved, clock.iso(now)[:10])
            changes = changeset.ChangeSet(self.home, ROLL)
            for day, chunk in days:
                changes.append(self.archive_path(day), chunk)
            record = {"gen": self.generation() + 1, "by": "roll", "why": why, "at": clock.iso(now), "moved": cut,
                      "kept": len(lines) - cut, "size": len(kept.encode("utf-8")),
                      "archive": [day for day, _ in days]}
            changes.append(self.book, json.dumps(record, ensure_ascii=False) + "\n")
            changes.replace(self.now_path, kept, old=text)
            changes.apply(clock.iso(now), warn or (lambda message: None))
        return record

    def finish_roll(self, warn=None) -> None:
        """Finish a roll a crash interrupted (under `lock()`)."""
        if changeset.is_pending(self.home, ROLL):
            changeset.finish_pending(self.home, warn or (lambda message: None), (ROLL,))

    def archive_path(self, day: str) -> str:
        return os.path.join(self.archive_dir, day + ".md")


def wake(home, lang: str, now: float) -> list[str]:
    """What `anima init` gives her to wake up with (anima/data/self/LANG/): her first state,
    self/state.md, and her first entry in now.md, her waking up, recorded as by "init" (not a
    thought of hers that could decide anything); neither over what is there (a stream that was
    ever written has its bookkeeping, even when now.md is gone). Return the paths written."""
    from anima.infra.text import data
    from anima.self import state

    def starter(name: str) -> str:
        return data(f"self/{lang}/{name}")

    written = []
    if fs.create(state.path(home), starter("state.md")):
        written.append(state.path(home))
    stream = Stream(home)
    with stream.lock():
        if fs.status(stream.now_path) is None and fs.status(stream.book) is None:
            stream.append(starter("now.md"), "init", now, held=True)
            written.append(stream.now_path)
    return written


def heading(at: float) -> str:
    return time.strftime("## %Y-%m-%d %H:%M", time.gmtime(at))


def parse_heading(line: str) -> float | None:
    """Seconds since the epoch of an entry heading (UTC), or None if `line` is not one."""
    import calendar

    m = HEADING.fullmatch(line)
    if not m:
        return None
    try:
        moment = time.strptime(f"{m[1]} {m[2]}:{m[3]}", "%Y-%m-%d %H:%M")
    except ValueError:
        return None
    return float(calendar.timegm(moment))


def clean(text: str, max_chars: int | None = None) -> str:
    """A thought made safe to append: every kind of line break made \\n, control characters
    dropped, blank lines at either end and trailing spaces removed, and every line that
    could pass for a heading escaped with a backslash. Empty or too long is refused."""
    lines = [line.rstrip() for line in text_lines(text).split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        raise Refused("empty thought: nothing to append")
    body = "\n".join("\\" + line.lstrip(" \t") if heading_like(line) else line for line in lines)
    if max_chars is not None and len(body) > max_chars:
        raise Refused(f"thought too long: {len(body)} characters, over stream.thought_max_chars ({max_chars})")
    return body


def split_days(text: str, fallback: str) -> list[tuple[str, str]]:
    """`text` cut at entry headings into (UTC day, chunk) runs, in order; text before the first
    heading goes with the first entry, and `fallback` is the day when there is no heading."""
    runs: list[list] = []
    for line in text.splitlines(keepends=True):
        m = HEADING.fullmatch(line.rstrip("\n"))
        day = m[1] if m else None
        if not runs:
            runs.append([day, line])
        elif day and runs[-1][0] is None:
            runs[-1] = [day, runs[-1][1] + line]
        elif day and day != runs[-1][0]:
            runs.append([day, line])
        else:
            runs[-1][1] += line
    if runs and not runs[-1][1].endswith("\n"):
        runs[-1][1] += "\n"
    return [(day or fallback, chunk) for day, chunk in runs]


def slack(keep_minutes: int) -> int:
    """Minutes past `keep_minutes` the oldest entry may be before a roll is due: a quarter of
    them, at least one (a roll every quarter hour by default, not at every tick)."""
    return max(1, keep_minutes // 4)


def kept_from(lines: list[str], now: float, keep_minutes: int, fit: int | None = None) -> int:
    """The index of the first line a roll at `now` keeps (len(lines): none): the first entry
    whose heading is less than `keep_minutes` before `now`, and every entry after it; with
    `fit`, only as many of those last entries as fit in `fit` lines. A cut is always at a
    heading: text before the first one goes with the first entry."""
    if keep_minutes <= 0:
        return len(lines)  # (an entry dated after `now` too: 0 keeps none)
    heads = [(i, parse_heading(line.rstrip("\n"))) for i, line in enumerate(lines) if line.startswith("## ")]
    entries = [(0 if k == 0 else i, t) for k, (i, t) in enumerate((i, t) for i, t in heads if t is not None)]
    cut = next((i for i, started in entries if now - started < keep_minutes * 60), len(lines))
    if fit is not None:
        cut = next((i for i, _ in entries if i >= cut and len(lines) - i <= fit), len(lines))
    return cut


def _gens(data: bytes) -> list[int]:
    """The generations the whole JSON lines of `data` name."""
    return [r["gen"] for r in _records(data)]


def _count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _is_count(n) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n >= 0


def _records(data: bytes) -> list[dict]:
    """The records on the whole JSON lines of `data` that name a generation (a torn last line,
    or the cut start of a tail, skipped)."""
    found = []
    for line in data.split(b"\n"):
        try:
            record = jsontext.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("gen"), int) and not isinstance(record["gen"], bool):
            found.append(record)
    return found


def _tail(path: str, size: int) -> bytes:
    try:
        fd = fs.open_file(path)
    except FileNotFoundError:
        return b""
    with os.fdopen(fd, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - size))
        return f.read()
