"""OpenAI chat-completions messages, one a line (a chat loop that logs what it sends).

Seen in: the OpenAI chat-completions API's message objects (`role`, `content` as a string or
text/image parts, `tool_calls`, `reasoning_content` from DeepSeek-style servers), as the
openai SDK and LiteLLM take and return them. Decided by a first object with "role", without
"ts", "type" or a "message" object. Read as anima's turns are; "timestamp" is the time.
"""

import anima.recall.formats.common as common

NAME = "openai"
HEADER = None  # the "type" of a line that is the session's header, not a turn


def detect(obj: dict) -> bool:
    return "role" in obj and not isinstance(obj.get("message"), dict)



def delegated(obj: dict) -> bool:
    return False


def line_id(obj: dict) -> str | None:
    return None


def turn(obj: dict, delegated: bool) -> tuple | None:
    return common.message(obj, delegated, obj.get("ts", obj.get("timestamp")))
