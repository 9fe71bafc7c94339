"""What she knows around an event: the time of day, how long since, her state, the memories
relevant to it and a promise she made; what internalize tells beside what happened, and
what a model is shown of her.
"""

import os
import re
import time

from anima.infra import fs, phrases
from anima.self import memories, state
from anima.stream.quoting import fold

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{2,}")
_PROMISE = re.compile(r"答应|承诺|保证|promised?\b|\bowe\b", re.I)


def state_line(home) -> str | None:
    """The first line of state.md that says something (headings and bullets stripped)."""
    text = fs.read_text(state.path(home)) or ""
    for line in text.split("\n"):
        if line.lstrip().startswith("#"):
            continue  # a title, not a state
        line = line.strip().lstrip("-*").strip()
        if line:
            return fold(line, 200)
    return None


def relevant(home, speaker: str | None, text: str) -> list[str]:
    """Memory topics relevant to an event: about the speaker (by name), or named by a word."""
    names = [t for t, _ in memories.topics(home)]
    found = []
    who = speaker.casefold() if speaker else None
    own = memories.topic_of(who) if who else None  # consolidate's file for this speaker (u5c0f... for 小)
    words = {w.casefold() for w in _WORD.findall(text)}
    for topic in names:
        folded = topic.casefold()
        parts = set(re.split(r"[._-]", folded))
        if who and (folded in (f"about_{who}", own) or (len(who) >= 2 and who in folded)):
            found.append(topic)
        elif parts & words:
            found.append(topic)
    return found


def promise(home, topics: list[str]) -> tuple[str, str] | None:
    """(topic, line) of the first memory line holding an open promise, if any."""
    for topic in topics:
        text = fs.read_text(os.path.join(memories.directory(home), topic + ".md")) or ""
        for line in text.split("\n"):
            if _PROMISE.search(line) and not line.lstrip().startswith("#"):
                return topic, line
    return None


def part_of_day(at: float, lang: str) -> str:
    hour = time.localtime(at).tm_hour
    index = 1 if 5 <= hour < 12 else 2 if 12 <= hour < 18 else 3 if 18 <= hour < 22 else 0
    return phrases.word(lang, "internalize", "parts_of_day")[index]


def ago(seconds: float, lang: str) -> str:
    minutes = int(max(0, seconds) // 60)
    if minutes < 1:
        return phrases.word(lang, "internalize", "just_now")
    return phrases.say(lang, "internalize", "ago", **_span(minutes, lang))


def lasted(seconds: float, lang: str) -> str:
    """How long something has lasted ("3 hours"), in its largest unit, at least a minute."""
    return phrases.say(lang, "internalize", "lasted", **_span(max(1, int(max(0, seconds) // 60)), lang))


def _span(minutes: int, lang: str) -> dict:
    for size, unit in ((1440, "day"), (60, "hour"), (1, "minute")):
        if minutes >= size:
            n = minutes // size
            return {"n": n, "unit": phrases.word(lang, "internalize", "units")[unit][0 if n == 1 else 1]}
    raise ValueError(minutes)


def knowing(home, topics: list[str], limit: int = 1500) -> str:
    """The memories named, each cut at `limit` characters, for a prompt."""
    out = []
    for topic in topics[:3]:
        text = (fs.read_text(os.path.join(memories.directory(home), topic + ".md")) or "").strip()
        if text:
            out.append(f"[{topic}]\n{text[:limit]}")
    return "\n\n".join(out)
