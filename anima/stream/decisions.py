"""Her decisions: the explicit phrases that, said by her, become actions.

A decision is one of these phrases at the start of a sentence of her line (the line's start,
or after . ! ? 。！？), outside any quotation (anima.stream.quoting), its TEXT running to the
end of the line (a TEXT wholly inside one pair of quotation marks is taken without them):

    I decide to reply to NAME: TEXT           我决定回复NAME：TEXT      -> reply
    I decide to write in my diary: TEXT       我决定写日记：TEXT        -> diary.write
    I decide to remember about TOPIC: TEXT    我决定记住关于TOPIC：TEXT -> memory.write
    I decide to note: TEXT                    我决定记一笔：TEXT        -> note.add
    I decide to update my state: TEXT         我决定更新状态：TEXT      -> state.update

(the colon ':' or '：'). No decision, no action: silence is normal.

The phrases are found by what they look like (anima.infra.text.looks): "I dеcide to note"
with a Cyrillic е, "i DECIDE to note", full-width letters, a zero-width space inside or
我決定 in traditional characters are each the phrase, so that no decision can be written in
a form the echo guard would not see; NAME, TOPIC and TEXT are taken as written.
"""

import functools
import re

from anima.infra.text import looks
from anima.stream.quoting import sentence_starts, unquote

# (the fixed words of the phrase, what follows them, its command)
_TEXT = r"\s*[:：]\s*(?P<text>.+)"
_NAME = r"(?P<name>[^:：]{1,80}?)"
_TOPIC = r"(?P<topic>[A-Za-z0-9][A-Za-z0-9._-]*)"
GRAMMAR = (
    ("I decide to reply to ", _NAME + _TEXT, "reply"),
    ("I decide to write in my diary", _TEXT, "diary.write"),
    ("I decide to remember about ", _TOPIC + _TEXT, "memory.write"),
    ("I decide to note", _TEXT, "note.add"),
    ("I decide to update my state", _TEXT, "state.update"),
    ("我决定回复", _NAME + _TEXT, "reply"),
    ("我决定写日记", _TEXT, "diary.write"),
    ("我决定记住关于", _TOPIC + _TEXT, "memory.write"),
    ("我决定记一笔", _TEXT, "note.add"),
    ("我决定更新状态", _TEXT, "state.update"),
)
COMMANDS = ("reply", "diary.write", "memory.write", "note.add", "state.update")
# matched on the looks form: the topic's letters folded as looks folds them
PHRASES = [(re.compile(re.escape(looks(words)) + rest.replace("A-Za-z", "a-z"), re.S), command)
           for words, rest, command in GRAMMAR]
# The phrases' own words, which are hers whoever else says them (the echo guard leaves them out).
STEMS = tuple(words.strip() for words, _, _ in GRAMMAR)
_STARTS = tuple(looks(s) for s in ("I decide to ", "我决定"))
_MARKERS = tuple(looks(s) for s in ("decide", "决定"))


@functools.lru_cache(maxsize=4096)
def _looks_of(ch: str) -> str:
    return looks(ch)


def _mapped(text: str) -> tuple[str, list[int]]:
    """The looks form of `text`, made character by character, and for each of its characters
    the index in `text` of the one it came from."""
    out, where = [], []
    for i, ch in enumerate(text):
        shown = _looks_of(ch)
        out.append(shown)
        where.extend([i] * len(shown))
    return "".join(out), where


def decisions(line: str) -> list[dict]:
    """Every decision a line of hers states: {"command", and "text", "name" or "topic"}."""
    seen, where = _mapped(line)
    if not any(m in seen for m in _MARKERS):
        return []

    def raw(m, group: str) -> str:
        # what shows nothing around a group is its own: a bidi control must reach the guard
        a, b = m.span(group)
        if b <= a:
            return ""
        return line[where[a - 1] + 1 if a else 0:where[b] if b < len(where) else len(line)]

    found = []
    for start in sentence_starts(line):
        at = next((k for k, i in enumerate(where) if i >= start), None)
        if at is None or not seen.startswith(_STARTS, at):
            continue
        for pattern, command in PHRASES:
            m = pattern.match(seen, at)
            if not m:
                continue
            text = unquote(raw(m, "text"))
            if not text:
                break
            decision = {"command": command, "text": text}
            if command == "reply":
                name = unquote(raw(m, "name"))
                if not name:
                    break
                decision["name"] = name
            if command == "memory.write":
                decision["topic"] = raw(m, "topic")
            found.append(decision)
            break
    return found
