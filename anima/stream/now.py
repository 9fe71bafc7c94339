"""Pool A, the self-stream: now.md, its bookkeeping (pipeline/stream.jsonl) and its daily archive.

self/stream/now.md is first-person Markdown and nothing else: a run of entries, each

    ## 2026-11-30 21:05

    The text, in her own words; any number of lines of Markdown.

(a blank line after the heading, one after the text; the time is UTC, like the diary's).
Nothing machine-readable ever enters it. Which lines are whose lives on the Pool B side, in
pipeline/stream.jsonl, one JSON line per change of now.md, appended under the same lock:

    {"gen": 3, "lines": [41, 45], "by": "think", "at": "2026-11-30T21:05:07Z", "sha256": "..."}
    {"gen": 4, "by": "roll", "at": "2026-11-30T22:00:00Z", "moved": 45, "archive": ["2026-11-30"]}

`gen` counts rollovers: each roll starts a new generation of now.md, numbered from line 1,
so that [first, last] (1-based, inclusive, the heading included) always names the lines of
one generation, and sha256 is of exactly those lines (the block appended) to tell that they
are still there unchanged.

Rollover (`anima stream roll`): when now.md holds more than stream.max_lines lines, or its
first entry is from an earlier UTC hour than now, every entry moves to
self/stream/archive/DATE.md (appended; DATE the UTC day in the entry's heading, so a stream
spanning midnight goes to two days; text before the first heading goes with the first
entry), then the roll is recorded, then now.md is emptied. A crash in between leaves the text
in both places, never in neither; the roll run again finds the archive already ending with
what it would append and does not append it twice.
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

        `extra`: more fields for the record (never replacing gen, lines, by, at, sha256).
        `held`: the caller already holds `lock()` (to check and append in one locked step).
        `before(record)`: called under the lock once the record is known, before now.md is
        written (a write-ahead note of what is about to be appended)."""
        import contextlib

        body = clean(text, max_chars)
        block = f"{heading(at)}\n\n{body}\n\n"
        with contextlib.nullcontext() if held else self.lock():
            if changeset.is_pending(self.home, "consolidate"):
                # its change set replaces now.md when it is finished: an entry added now would be lost
                raise Busy("now.md: an interrupted consolidate is pending; the next `anima tick` finishes it "
                           "(or run `anima consolidate`)")
            current = fs.read_text(self.now_path) or ""
            # a hand edit that left the last line open is closed first: never glue onto it
            opening = "\n" if current and not current.endswith("\n") else ""
            first = _count_lines(current) + 1
            last = first + block.count("\n") - 1
            record = {**(extra or {}), "gen": self.generation(), "lines": [first, last], "by": by,
                      "at": clock.iso(at), "sha256": sha(block)}
            record = {k: record[k] for k in ("gen", "lines", "by", "at", "sha256")} | record
            if before is not None:
                before(record)
            fs.append(self.now_path, opening + block)
            self.write_record(record)
        return record

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

    def due(self, text: str, max_lines: int, now: float) -> str | None:
        """Why now.md holding `text` must roll at `now` ("lines" or "hour"), or None."""
        if not text:
            return None
        if _count_lines(text) > max_lines:
            return "lines"
        for line in text.split("\n"):
            started = parse_heading(line)
            if started is not None:
                return "hour" if int(started // 3600) < int(now // 3600) else None
        return None

    def roll(self, max_lines: int, now: float, force: bool = False) -> dict | None:
        """Move now.md into the archive if it is due (or `force`); return the roll record."""
        with self.lock():
            text = self.text()
            why = ("forced" if text else None) if force else self.due(text, max_lines, now)
            if why is None:
                return None
            days = split_days(text, clock.iso(now)[:10])
            for day, chunk in days:
                path = os.path.join(self.archive_dir, day + ".md")
                if not (fs.read_text(path) or "").endswith(chunk):
                    fs.append(path, chunk)
            record = {"gen": self.generation() + 1, "by": "roll", "why": why, "at": clock.iso(now),
                      "moved": _count_lines(text), "archive": [day for day, _ in days]}
            fs.append(self.book, json.dumps(record, ensure_ascii=False) + "\n")
            fs.atomic_write(self.now_path, "")
        return record

    def archive_path(self, day: str) -> str:
        return os.path.join(self.archive_dir, day + ".md")


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


def _gens(data: bytes) -> list[int]:
    """The generations the whole JSON lines of `data` name (a torn last line, from a crash
    mid-append, or the cut start of a tail, skipped)."""
    found = []
    for line in data.split(b"\n"):
        try:
            record = jsontext.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("gen"), int) and not isinstance(record["gen"], bool):
            found.append(record["gen"])
    return found


def _count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _tail(path: str, size: int) -> bytes:
    try:
        fd = fs.open_file(path)
    except FileNotFoundError:
        return b""
    with os.fdopen(fd, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - size))
        return f.read()
