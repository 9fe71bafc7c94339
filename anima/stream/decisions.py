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
"""

import re

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
PHRASES = [(re.compile(re.escape(words) + rest), command) for words, rest, command in GRAMMAR]
# The phrases' own words, which are hers whoever else says them (the echo guard leaves them out).
STEMS = tuple(words.strip() for words, _, _ in GRAMMAR)
_STARTS = ("I decide to ", "我决定")


def decisions(line: str) -> list[dict]:
    """Every decision a line of hers states: {"command", and "text", "name" or "topic"}."""
    if "决定" not in line and "decide" not in line:
        return []
    found = []
    for start in sentence_starts(line):
        rest = line[start:]
        if not rest.startswith(_STARTS):
            continue
        for pattern, command in PHRASES:
            m = pattern.match(rest)
            if not m:
                continue
            text = unquote(m["text"])
            if not text:
                break
            decision = {"command": command, "text": text}
            if command == "reply":
                name = unquote(m["name"])
                if not name:
                    break
                decision["name"] = name
            if command == "memory.write":
                decision["topic"] = m["topic"]
            found.append(decision)
            break
    return found
