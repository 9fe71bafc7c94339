"""The self-stream's bookkeeping, pipeline/stream.jsonl, read: one reader for every consumer.

internalize, externalize, consolidate and forget each read the records (the format is in
anima.stream.now) and keep what they need of them; here is how they are read, and how the
lines a record names are found again: in now.md at its lines while the record is of the
current generation, else (kept by a roll, or archived) at a heading of now.md or of the
archive of its day, by the sha256 of exactly those lines. A record whose lines are nowhere
unchanged names nothing any more.
"""

import re

from anima.infra import fs
from anima.infra.digest import sha

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


class Reader:
    """A JSON-lines file (the bookkeeping, a journal) read incrementally, from byte `offset`:
    one process may read it many times."""

    def __init__(self, path: str, offset: int = 0):
        self.path, self.offset = path, offset

    def read(self) -> tuple[list[dict], bool]:
        """The records appended since the last read, and whether the file was replaced in
        between (it is shorter than what was read): then they are all of its records, and the
        caller starts over. A torn last line waits until it is whole."""
        records, offset = fs.new_json_lines(self.path, self.offset)
        replaced = records is None
        if replaced:
            records, offset = fs.new_json_lines(self.path, 0)
        self.offset = offset
        return records or [], replaced


def is_day(text: str) -> bool:
    return bool(_DAY.fullmatch(text))


def span(record: dict) -> tuple[int, int] | None:
    """The [first, last] lines a record names (1-based, inclusive), or None if it names none."""
    lines = record.get("lines")
    if isinstance(record.get("gen"), int) and isinstance(lines, list) and len(lines) == 2 \
            and all(isinstance(n, int) and not isinstance(n, bool) for n in lines) and 1 <= lines[0] <= lines[1]:
        return lines[0], lines[1]
    return None


def at_heading(lines: list[str], size: int, want) -> int | None:
    """The first index of `lines` where a heading starts `size` lines whose sha256 is `want`."""
    for i in range(len(lines) - size + 1):
        if lines[i].startswith("## ") and sha("".join(lines[i:i + size])) == want:
            return i
    return None


def block(stream, record: dict, gen: int, now_lines: list[str] | None = None) -> list[str] | None:
    """The lines a record names as they still are (line breaks kept), or None when they
    changed or are gone. `gen` is now.md's generation; `now_lines`, now.md's lines if the
    caller has them already.

    A record of the current generation: its lines in now.md. Of an earlier one: its entry
    kept by a roll (at a heading of now.md, by its sha256: line n of a generation is line
    n - moved of the next, and a roll a crash interrupted leaves the old generation's text
    in now.md until it is finished) or archived (in the archive of its day, likewise)."""
    where = span(record)
    if where is None:
        return None
    first, last = where
    want, size = record.get("sha256"), last - first + 1
    current = stream.text().splitlines(keepends=True) if now_lines is None else now_lines
    if record["gen"] == gen:
        lines = current[first - 1:last]
        return lines if sha("".join(lines)) == want else None
    i = at_heading(current, size, want)
    if i is not None:
        return current[i:i + size]
    day = str(record.get("at", ""))[:10]
    if not is_day(day):
        return None
    archived = (fs.read_text(stream.archive_path(day)) or "").splitlines(keepends=True)
    i = at_heading(archived, size, want)
    return None if i is None else archived[i:i + size]
