"""self/memories/TOPIC.md: what I know, one Markdown file per topic ("about_alice").

consolidate appends what it distils from a day (about_SPEAKER.md for what someone said),
her decision to remember (dispatch's memory.write) appends to the topic she named; a person
may edit any of them.
"""

import os
import re

from anima.infra import fs
from anima.infra.errors import NotFound, Refused, UsageError

TOPIC = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # as memory.write accepts it (anima.pipeline.dispatch)
_PLAIN_TOPIC = re.compile(r"[a-z0-9][a-z0-9._-]*")


def topic_of(speaker: str) -> str:
    """about_NAME, the memory topic of what a speaker (an internalize speaker key) said to me;
    characters a topic cannot hold are written uXXXX."""
    slug = speaker.replace(" ", "_")
    if not (_PLAIN_TOPIC.fullmatch(slug) and ".." not in slug):
        slug = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "_-") else f"u{ord(ch):04x}" for ch in slug)
    return "about_" + slug


def directory(home) -> str:
    return home.path("self", "memories")


def topics(home) -> list[tuple[str, int]]:
    """(topic, size in bytes) of every self/memories/*.md, by name."""
    found_in = directory(home)
    try:
        names = sorted(fs.listdir(found_in))
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        path = os.path.join(found_in, name)
        if name.endswith(".md") and TOPIC.fullmatch(name[:-3]) and os.path.isfile(path) \
                and not os.path.islink(path):
            found.append((name[:-3], os.path.getsize(path)))
    return found


def check_topic(topic: str) -> str:
    if not TOPIC.fullmatch(topic) or ".." in topic:
        raise Refused(f"{topic!r} is not a memory topic: a plain name (letters, digits, '_', '-', '.'; no '/')")
    return topic


def read(home, topic: str) -> str:
    text = fs.read_text(os.path.join(directory(home), check_topic(topic) + ".md"))
    if text is None:
        raise NotFound(f"no memory {topic!r}: `anima memories list` shows them")
    return text


def search(home, terms: list[str]) -> list[tuple[str, int, str]]:
    """(topic, line number, line) of every memory line holding all `terms`, any case."""
    wanted = [t.casefold() for t in terms if t.strip()]
    if not wanted:
        raise UsageError("memories search: give at least one term")
    hits = []
    for topic, _ in topics(home):
        text = fs.read_text(os.path.join(directory(home), topic + ".md")) or ""
        for number, line in enumerate(text.split("\n"), 1):
            folded = line.casefold()
            if line.strip() and all(t in folded for t in wanted):
                hits.append((topic, number, line))
    return hits
