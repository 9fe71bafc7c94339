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

from anima.infra import frontmatter, fs

ENTRY_NAME = re.compile(r"(\d{4}-\d{2}-\d{2})(?:\.(\d+))?\.md")
MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
             "October", "November", "December")


def directory(home) -> str:
    return home.path("self", "autobiography")


def render(meta: dict, body: str) -> str:
    return frontmatter.render(meta, body)


def parse(text: str, path: str) -> tuple[dict, str]:
    return frontmatter.document(text, path, "an autobiography entry")


def names(home) -> list[str]:
    """Entry file names in order (by day, then by number)."""
    try:
        found = [n for n in os.listdir(directory(home)) if ENTRY_NAME.fullmatch(n)]
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


_FORGOTTEN = {
    "en": ("{when}: forgotten", "(I was asked to forget what was written here, on {day}.)"),
    "zh": ("{when}：已遗忘", "（这里原来写的内容，我在 {day} 被要求忘记了。）"),
}


def tombstone(meta: dict, day: str, lang: str) -> tuple[dict, str]:
    """The front matter and body of an entry whose source was forgotten: no word of what it
    said (no title, summary, people or period), only its id, date, when it was written, its
    sources (line numbers) and when it was forgotten."""
    title, body = _FORGOTTEN.get(lang, _FORGOTTEN["en"])
    date = str(meta.get("date", ""))[:10]
    when = day_words(date, lang) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", date) else date
    kept = {"id": meta.get("id"), "title": title.format(when=when), "date": meta.get("date")}
    kept.update({k: meta[k] for k in ("written", "deprecates", "sources") if k in meta})
    kept["forgotten"] = day
    return {k: v for k, v in kept.items() if v is not None}, body.format(day=day)


def free_id(taken: set[str], day: str) -> str:
    if day not in taken:
        return day
    n = 2
    while f"{day}.{n}" in taken:
        n += 1
    return f"{day}.{n}"


def day_words(day: str, lang: str) -> str:
    y, m, d = (int(x) for x in day.split("-"))
    return f"{d} {MONTHS_EN[m - 1]} {y}" if lang == "en" else f"{y}年{m}月{d}日"


def _people(heard: dict, lang: str, most: int = 3) -> str:
    names_ = [n for n, _ in sorted(heard.items(), key=lambda kv: (-kv[1], kv[0]))]
    shown = names_[:most]
    rest = len(names_) - len(shown)
    if lang == "zh":
        return "、".join(shown) + (f" 等 {len(names_)} 人" if rest else "")
    if rest:
        return ", ".join(shown) + f" and {rest} other{'s' if rest > 1 else ''}"
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


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
        if lang == "zh":
            when = f"{key[:4]}年{int(key[5:7])}月" if len(key) == 7 else f"{key}年"
            what = f"我听得最多的是 {_people(heard, lang)}。" if heard else "多是我自己的思绪。"
            lines_older.append(f"- {when}，{count} 天：{what}")
        else:
            when = f"{MONTHS_EN[int(key[5:7]) - 1]} {key[:4]}" if len(key) == 7 else key
            what = f"I heard most from {_people(heard, lang)}." if heard else "Mostly my own thoughts."
            lines_older.append(f"- {when}, {count} day{'s' if count > 1 else ''}: {what}")
    head_recent = "最近几天：" if lang == "zh" else "Recent days:"
    head_older = "更早：" if lang == "zh" else "Earlier:"

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
