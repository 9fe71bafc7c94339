"""The host formats of a transcript: how a file's format is told, and how its lines are read.

Formats, detected per file. The first line that is a JSON object and says enough decides:
- `{"type": "session", ...}` -> anima; that line is the session header (`id`, `delegated`),
  not a turn.
- it has a "role" (and no "message" object) -> anima if it also has a "ts", else openai
  (plain chat-completions messages). Both are read alike: one message per line.
- it has a string "type" and no "role" -> claude (Claude Code project transcripts:
  `{"type", "message": {"role", "content"}, "isSidechain", "timestamp", "sessionId"}`).
- anything else (say `{}`) decides nothing: the next object line decides.
A file where nothing decides (an empty file) is an anima file with no turns.

Only message bodies are turns. A body is a string content, or the `text` of the
`{"type": "text"}` parts of a list content (blank ones left out), joined with "\\n".
Skipped: reasoning (`reasoning_content`, thinking and redacted_thinking parts), tool calls and
tool results (`tool_calls`, tool_use and tool_result parts, roles "tool" and "function"),
images, system and developer messages, Claude Code lines whose type is not user or assistant and lines marked
isMeta or isCompactSummary (the summary Claude Code writes into a "user" line when it compacts
a conversation), and injected content: a line, message or part carrying
`"source": {"kind": K}` where K is not the speaker's own ("user" for a user line; "assistant",
"agent" or "me" for an assistant line). A turn whose body is blank after this is no turn.

Who. "user" for user turns, "me" for assistant turns, and "delegated" for every turn of an
anima session whose header says `"delegated": true` and for every Claude Code line with
`"isSidechain": true` (a sub-agent's session: its "user" messages are briefs written by the
delegating agent).

Time. A turn's time is its own `ts` (anima, openai) or `timestamp` (claude): RFC 3339 (no
zone means UTC) or epoch seconds (a number above 1e11 is taken as milliseconds); without one,
or with one that does not parse, the file's mtime.

Session id. The header's `id`; else, in a Claude Code file, the `sessionId` of the first line
that has one, with `.agent-<agentId>` added when that line is a sidechain line carrying an
`agentId` (Claude Code keeps each sub-agent in a file of its own under the parent's sessionId,
and the two must not collide); else the file name without its suffix. An id must be a
non-empty string without spaces or control characters, or it is not used.
"""

import math
import os
from datetime import datetime, timezone

from anima.recall import sources

WHO = {"user": "user", "assistant": "me"}
OWN_KINDS = {"user": ("user",), "assistant": ("assistant", "agent", "me")}


def _detect(obj: dict) -> str | None:
    if obj.get("type") == "session":
        return "anima"
    if "role" in obj and not isinstance(obj.get("message"), dict):
        return "anima" if "ts" in obj else "openai"
    if isinstance(obj.get("type"), str) and "role" not in obj:
        return "claude"
    return None


class Detector:
    """A file's format, told from its object lines fed in order: the first that says enough
    decides; an anima header line decides and is the session header, not a turn."""

    __slots__ = ("format", "header", "delegated")

    def __init__(self):
        self.format, self.header, self.delegated = None, None, False

    def may_hold_turn(self, obj: dict) -> bool:
        """Whether line `obj` is one to read a turn from: not before the format is decided,
        nor the header that decides it."""
        if self.format is None:
            self.format = _detect(obj)
            if self.format is None:
                return False
            if obj.get("type") == "session":
                self.header, self.delegated = obj, obj.get("delegated") is True
                return False
        return True


def _injected(obj: dict, role: str) -> bool:
    source = obj.get("source")
    return isinstance(source, dict) and "kind" in source and source["kind"] not in OWN_KINDS[role]


def _body(content, role: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif (isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
              and not _injected(part, role)):
            texts.append(part["text"])
    return "\n".join(t for t in texts if t.strip())


def _ts(value) -> float | None:
    """Epoch seconds of an RFC 3339 string or an epoch number; None when it is neither."""
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            try:
                value = float(value)
            except ValueError:
                return None
        else:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=timezone.utc)
            return moment.timestamp()
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return value / 1000 if value > 1e11 else float(value)


def turn(obj: dict, fmt: str, delegated: bool) -> tuple | None:
    """(who, text, ts) of one line of a file in format `fmt`, or None when it holds no turn."""
    if fmt == "claude":
        role = obj.get("type")
        message = obj.get("message")
        if (role not in WHO or not isinstance(message, dict) or obj.get("isMeta") is True
                or obj.get("isCompactSummary") is True or _injected(obj, role) or _injected(message, role)):
            return None
        who = "delegated" if obj.get("isSidechain") is True else WHO[role]
        content, ts = message.get("content"), obj.get("timestamp")
    else:
        role = obj.get("role")
        if role not in WHO or _injected(obj, role):
            return None
        who = "delegated" if delegated else WHO[role]
        content, ts = obj.get("content"), obj.get("ts", obj.get("timestamp"))
    text = _body(content, role)
    return (who, text, _ts(ts)) if text.strip() else None


def plain_id(value) -> bool:
    """Whether `value` may be a session id: a non-empty string without spaces or control characters."""
    return isinstance(value, str) and value != "" and value.isprintable() and not any(c.isspace() for c in value)


def session_id(path: str, header: dict | None) -> str:
    """The id of the session in `path`.

    `header` is the anima header line, or the first Claude Code line with a sessionId, or None.
    """
    if header:
        if header.get("type") == "session" and plain_id(header.get("id")):
            return header["id"]
        sid = header.get("sessionId")
        if plain_id(sid):
            agent = header.get("agentId")
            if header.get("isSidechain") is True and plain_id(agent):
                return f"{sid}.agent-{agent}"
            return sid
    name = os.path.basename(path)
    for suffix in sources.SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name
