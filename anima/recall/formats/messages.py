"""A whole conversation a line: `{"messages": [{"role", "content"}, ...], ...}`.

Seen in: OpenAI's fine-tuning and evals JSONL (one `{"messages": [...]}` a line), and request
logs that keep each chat-completions request body (`{"model", "messages", ...}`) a line.
Decided by a first object with a "messages" list and no "role". A turn is known by its line,
so a line gives one turn: the person's messages of the conversation (role user), their bodies
joined with newlines; a line with none of the person's words gives the agent's (role
assistant). Each message is read as an openai chat message (text parts, injected content and
the other roles skipped). A log that repeats the history in every request repeats it here.
"""

import anima.recall.formats.common as common

NAME = "messages"
HEADER = None  # the "type" of a line that is the session's header, not a turn


def detect(obj: dict) -> bool:
    return isinstance(obj.get("messages"), list) and "role" not in obj



def delegated(obj: dict) -> bool:
    return False


def line_id(obj: dict) -> str | None:
    return None


def turn(obj: dict, delegated: bool) -> tuple | None:
    messages = obj.get("messages")
    if not isinstance(messages, list):
        return None
    said = {"user": [], "assistant": []}
    for m in messages:
        if isinstance(m, dict) and m.get("role") in said and not common.injected(m, m["role"]):
            text = common.body(m.get("content"), m["role"])
            if text.strip():
                said[m["role"]].append(text)
    role = "user" if said["user"] else "assistant"
    if not said[role]:
        return None
    who = "delegated" if delegated else common.WHO[role]
    return who, "\n".join(said[role]), common.ts(obj.get("ts", obj.get("timestamp", obj.get("created"))))
