"""anima's own sessions (`anima session append`): an optional header, then one message a line.

Seen in: anima's own writer, anima/recall/append.py. Decided by a header line
`{"type": "session", "id", "delegated"}` (not a turn), or by a first object with "role" and
"ts" and no "message" object. A turn is `{"role", "content", "ts"}` as in a chat message.
"""

import anima.recall.formats.common as common

NAME = "anima"
HEADER = "session"  # the "type" of a line that is the session's header, not a turn


def detect(obj: dict) -> bool:
    return obj.get("type") == "session" or ("role" in obj and "ts" in obj and not isinstance(obj.get("message"), dict))



def delegated(obj: dict) -> bool:
    return obj.get("type") == "session" and obj.get("delegated") is True


def line_id(obj: dict) -> str | None:
    return None  # only the header names the session, and only as the deciding line


def turn(obj: dict, delegated: bool) -> tuple | None:
    return common.message(obj, delegated, obj.get("ts", obj.get("timestamp")))
