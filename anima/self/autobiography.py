"""Her autobiography: self/autobiography/ENTRY.md, narrative entries, only ever appended.

One Markdown file per entry, named ENTRY.md where ENTRY is the UTC day the entry begins
(YYYY-MM-DD), or YYYY-MM-DD.N for a second, third ... entry beginning that day. YAML front
matter, every value written as JSON (which YAML reads as it is):

    ---
    id: "2026-11-30"
    title: "30 November 2026: Alice and Bob"
    date: "2026-11-30"
    written: "2026-12-01T04:00:00Z"
    period: ["2026-11-30T09:00:00Z", "2026-11-30T21:05:00Z"]
    by: "rules"
    summary: "I heard from Alice and Bob; I decided to reply to Alice."
    heard: {"Alice": 3, "Bob": 1}
    sources: ["self/stream/archive/2026-11-30.md:1-48"]
    ---
    The content: first-person prose, no headings.

`sources` are the archive lines the entry was distilled from (FILE:FIRST-LAST, the lines of
the records it read; adjacent ranges merged); their sha256 and the body's are in
pipeline/derived.jsonl (anima.trust.provenance), never here. An entry is never edited or deleted:
to deprecate one, a new entry is written whose front matter holds `deprecates: "ID"` (and a
`reason`); readers then leave the deprecated entry out of the summary. The one exception is
`anima forget` of a line the entry cites: its body becomes a tombstone without content
(`forgotten`), and the summary leaves it out.
"""

import os
import re

from anima.infra import frontmatter, fs, phrases

ENTRY_NAME = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})(?:\.([0-9]+))?\.md")


def directory(home) -> str:
    return home.path("self", "autobiography")


def render(meta: dict, body: str) -> str:
    return frontmatter.render(meta, body)


def parse(text: str, path: str) -> tuple[dict, str]:
    return frontmatter.document(text, path, "an autobiography entry")


def names(home) -> list[str]:
    """Entry file names in order (by day, then by number)."""
    try:
        found = [n for n in fs.listdir(directory(home)) if ENTRY_NAME.fullmatch(n)]
    except FileNotFoundError:
        return []

    def order(name):
        m = ENTRY_NAME.fullmatch(name)
        return m[1], int(m[2] or 1)
    return sorted(found, key=order)


def entries(home) -> list[tuple[str, dict, str]]:
    """(id, front matter, content) of every entry, oldest first."""
    out = []
    for name in names(home):
        path = os.path.join(directory(home), name)
        meta, body = parse(fs.read_text(path) or "", path)
        out.append((name[:-3], meta, body))
    return out


def tombstone(meta: dict, day: str, lang: str) -> tuple[dict, str]:
    """The front matter and body of an entry whose source was forgotten: no word of what it
    said (no title, summary, people or period), only its id, date, when it was written, its
    sources (line numbers) and when it was forgotten."""
    date = str(meta.get("date", ""))[:10]
    when = day_words(date, lang) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", date) else date
    kept = {"id": meta.get("id"), "title": phrases.say(lang, "autobiography", "forgotten_title", when=when),
            "date": meta.get("date")}
    kept.update({k: meta[k] for k in ("written", "deprecates", "sources") if k in meta})
    kept["forgotten"] = day
    body = phrases.say(lang, "autobiography", "forgotten_body", day=day)
    return {k: v for k, v in kept.items() if v is not None}, body


def free_id(taken: set[str], day: str) -> str:
    if day not in taken:
        return day
    n = 2
    while f"{day}.{n}" in taken:
        n += 1
    return f"{day}.{n}"


def day_words(day: str, lang: str) -> str:
    y, m, d = (int(x) for x in day.split("-"))
    return phrases.say(lang, "autobiography", "day", day=d, month=phrases.word(lang, "autobiography", "months")[m - 1],
                       year=y)


def people(heard: dict, lang: str, most: int = 3) -> str:
    """Who she heard from, the most often first, and how many others."""
    names_ = [n for n, _ in sorted(heard.items(), key=lambda kv: (-kv[1], kv[0]))]
    return phrases.listing(lang, names_, most, "others")


def summary(found: list[tuple[str, dict, str]], lang: str, recent_days: int, max_chars: int,
            now_day: str) -> str:
    """The autobiography_summary block: the last `recent_days` days one line each, earlier
    entries of the last twelve months by month, older ones by year; oldest lines dropped to
    stay within `max_chars`."""
    deprecated = {str(m.get("deprecates")) for _, m, _ in found if m.get("deprecates")}
    live = [(i, m) for i, m, _ in found if i not in deprecated and not m.get("deprecates")
            and not m.get("forgotten")]
    if not live:
        return ""
    by_day: dict[str, list[dict]] = {}
    for _, m in live:
        by_day.setdefault(str(m.get("date", ""))[:10], []).append(m)
    days = sorted(by_day, reverse=True)
    recent, older = days[:recent_days], days[recent_days:]
    lines_recent = []
    for day in recent:
        said = " ".join(str(m.get("summary", "")).strip() for m in by_day[day] if m.get("summary"))
        lines_recent.append(f"- {day}: {said}" if said else f"- {day}")
    groups: dict[str, list[str]] = {}
    y, mo = int(now_day[:4]), int(now_day[5:7])
    year_ago = f"{y - 1:04d}-{mo:02d}"
    for day in older:
        key = day[:7] if day[:7] > year_ago else day[:4]
        groups.setdefault(key, []).append(day)
    lines_older = []
    for key in sorted(groups, reverse=True):
        heard: dict[str, int] = {}
        for day in groups[key]:
            for m in by_day[day]:
                for who, n in (m.get("heard") or {}).items():
                    if isinstance(n, int):
                        heard[str(who)] = heard.get(str(who), 0) + n
        count = len(groups[key])
        when = phrases.say(lang, "autobiography", "month", year=key[:4],
                           month=phrases.word(lang, "autobiography", "months")[int(key[5:7]) - 1]) \
            if len(key) == 7 else phrases.say(lang, "autobiography", "year", year=key)
        what = phrases.say(lang, "autobiography", "heard_most", people=people(heard, lang)) if heard \
            else phrases.word(lang, "autobiography", "own_thoughts")
        lines_older.append(phrases.counted(lang, "autobiography", "period", count, when=when, count=count, what=what))
    head_recent = phrases.word(lang, "autobiography", "recent")
    head_older = phrases.word(lang, "autobiography", "earlier")

    def assemble(r, o):
        parts = [head_recent, *r]
        if o:
            parts += ["", head_older, *o]
        return "\n".join(parts)

    while lines_older and len(assemble(lines_recent, lines_older)) > max_chars:
        lines_older.pop()
    while len(lines_recent) > 1 and len(assemble(lines_recent, lines_older)) > max_chars:
        lines_recent.pop()
    body = assemble(lines_recent, lines_older)
    if len(body) > max_chars:
        body = body[: max_chars - 1].rstrip() + "…"
    return body
