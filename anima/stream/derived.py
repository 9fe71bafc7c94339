"""What consolidate derives from the self-stream's lines, and what a forgotten line becomes.

pipeline/derived.jsonl (Pool B: self/ stays first-person Markdown, no ids or hashes) holds
one JSON line per memory line and autobiography entry consolidate wrote, with the archive
lines it came from and their sha256 (anima.trust.provenance checks them):

    {"path": "self/memories/about_alice.md", "line": 3, "sha256": "...",
     "sources": [{"path": "self/stream/archive/2026-11-30.md", "lines": [1, 4], "sha256": "..."}],
     "by": "consolidate", "at": "2026-12-01T04:00:00Z"}
    {"path": "self/autobiography/2026-11-30.md", "entry": "2026-11-30", "sha256": "...", "sources": [...], ...}

sha256 of a memory line is of its text without the line break; of an entry, of its body
(what follows the front matter, without the blank lines at either end); of a source, of its
lines FIRST..LAST (1-based, inclusive) as they are in the file, line breaks included.

A line `anima forget` took out of the stream becomes a tombstone line in her words, with
the day and no content.
"""

import functools
import json
import re

from anima.infra import fs, phrases

DERIVED = ("pipeline", "derived.jsonl")
def tombstone_line(day: str, lang: str) -> str:
    return phrases.say(lang, "forget", "line", day=day)


@functools.cache
def _tombstone() -> re.Pattern:
    """A tombstone line in any language anima speaks."""
    return re.compile("|".join(re.escape(phrases.word(lang, "forget", "line")).replace(re.escape("{day}"),
                                                                                      r"\d{4}-\d{2}-\d{2}")
                               for lang in phrases.LANGS))


def is_tombstone(line: str) -> bool:
    return bool(_tombstone().fullmatch(line.rstrip("\n")))


def path(home) -> str:
    return home.path(*DERIVED)


def load(home) -> list[dict]:
    """The records of pipeline/derived.jsonl (a torn last line, from a crash, is skipped)."""
    records, _ = fs.new_json_lines(path(home), 0)
    return [r for r in records or () if isinstance(r.get("path"), str)]


def render(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def source_text(lines: list[str], first: int, last: int) -> str:
    return "".join(lines[first - 1:last])
