"""Codex CLI rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`.

Seen in: openai/codex's rollout recorder (codex-rs core/src/rollout, protocol RolloutLine:
`{"timestamp", "type", "payload"}`), and rollouts as tools that read them show them
(session_meta first, then response_item, event_msg, turn_context and compacted lines).
Decided by a first object whose "type" is one of TYPES and whose "payload" is an object.
The session id is the first session_meta's payload "id"; a rollout whose session_meta says
`"source": {"subagent": ...}` is a sub-agent's, delegated throughout. A turn is a
response_item whose payload is a user or assistant message (read as a Responses item: its
input_text and output_text parts). Skipped: session_meta, turn_context, compacted (a
compaction summary and the history it replaces), world_state (the AGENTS.md baseline),
inter_agent_communication (what agents send each other), event_msg (Codex's events repeat
the messages, `user_message` and `agent_message`, and add reasoning and token counts), every
item that is not a message, developer messages (the permissions and sandbox instructions),
and the context Codex writes as the user's (AGENTS.md, `<environment_context>`, and the
others responses.CONTEXTUAL names).
"""

import anima.recall.formats.common as common
import anima.recall.formats.responses as responses

NAME = "codex"
HEADER = "session_meta"  # the "type" of a line that is the session's header, not a turn
# codex-rs protocol RolloutItem's tags (`#[serde(tag = "type", content = "payload")]`), newer ones too
TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted", "world_state",
                   "inter_agent_communication", "inter_agent_communication_metadata"})


def detect(obj: dict) -> bool:
    return obj.get("type") in TYPES and isinstance(obj.get("payload"), dict)



def delegated(obj: dict) -> bool:
    if obj.get("type") != "session_meta":
        return False
    source = obj["payload"].get("source") if isinstance(obj.get("payload"), dict) else None
    return isinstance(source, dict) and "subagent" in source


def line_id(obj: dict) -> str | None:
    payload = obj.get("payload")
    if obj.get("type") == "session_meta" and isinstance(payload, dict) and common.plain_id(payload.get("id")):
        return payload["id"]
    return None


def turn(obj: dict, delegated: bool) -> tuple | None:
    payload = obj.get("payload")
    if obj.get("type") != "response_item" or not isinstance(payload, dict):
        return None
    return responses.item(payload, delegated, obj.get("timestamp"))
