"""The host formats of a transcript: how a file's format is told, and how its lines are read.

One module a format, each with `detect(obj)` (whether a line says the file is in it),
HEADER (the "type" of a line that is a header, not a turn), `delegated(obj)` (whether
the deciding line makes the whole file a sub-agent's), `line_id(obj)` (the session id a line
names, if any) and `turn(obj, delegated)` ((who, text, ts) of a line, or None). Its docstring
says where its shape was seen, what is read and what is skipped.

The first line that is a JSON object and that some format detects decides the file's format,
the formats asked in the order of FORMATS (the more particular first); a line no format
detects (say `{}`) decides nothing, and the next one decides. A file where nothing decides is
of format "unknown": no turns, and recall says so (anima.recall.silent).

Who: "user" for the person's words, "me" for the agent's, "delegated" for a sub-agent's
session (an anima header's `"delegated": true`, a Claude Code sidechain line, a Codex
sub-agent's rollout). Time: the line's own time, RFC 3339 (no zone means UTC) or epoch
seconds (a number above 1e11 is taken as milliseconds); without one, the file's mtime.
Session id: the first id a line names (the anima header, a Claude Code sessionId, a Codex
session_meta); else the file name without its suffix. An id must be a non-empty string
without spaces or control characters, or it is not used.
"""

import os

from anima.recall import sources
from anima.recall.formats import anima, claude, codex, common, messages, openai, responses

WHO = common.WHO
UNKNOWN = "unknown"  # no line decided: no turns
FORMATS = (codex, responses, anima, openai, messages, claude)
BY_NAME = {f.NAME: f for f in FORMATS}
_TURN = {f.NAME: f.turn for f in FORMATS}
plain_id = common.plain_id


def detect(obj: dict):
    """The format module the line `obj` decides, or None."""
    for fmt in FORMATS:
        if fmt.detect(obj):
            return fmt
    return None


class Detector:
    """A file's format, told from its object lines fed in order: the first that says enough
    decides; a header line decides and is not a turn. `id` is the first session id a line
    named."""

    __slots__ = ("module", "format", "delegated", "id", "header")

    def __init__(self):
        self.module, self.format, self.delegated, self.id, self.header = None, None, False, None, None

    def may_hold_turn(self, obj: dict) -> bool:
        """Whether line `obj` is one to read a turn from: not before the format is decided,
        nor a header."""
        module = self.module
        if module is None:
            module = detect(obj)
            if module is None:
                return False
            self.module, self.format, self.delegated, self.header = module, module.NAME, module.delegated(obj), \
                module.HEADER
            if module is anima:  # only a deciding header names an anima session
                self.id = obj.get("id") if obj.get("type") == "session" and plain_id(obj.get("id")) else None
                return obj.get("type") != "session"
        if self.id is None:
            self.id = module.line_id(obj)
        return self.header is None or obj.get("type") != self.header


def turn(obj: dict, fmt: str, delegated: bool) -> tuple | None:
    """(who, text, ts) of one line of a file in format `fmt`, or None when it holds no turn."""
    read = _TURN.get(fmt)
    return read(obj, delegated) if read is not None else None


def session_id(path: str, found: str | None) -> str:
    """The id of the session in `path`: `found` (the id a line named), else the file name
    without its suffix."""
    if found:
        return found
    name = os.path.basename(path)
    for suffix in sources.SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name
