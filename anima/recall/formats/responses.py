"""OpenAI Responses-API items, one a line: a conversation kept as the `input` and `output`
items of the Responses API (and Codex CLI rollouts before 0.32, which were bare items after a
first `{"id", "timestamp", "instructions"}` line).

Seen in: the Responses API's item shapes (`{"type": "message", "role", "content":
[{"type": "input_text" | "output_text", "text"}]}`, `function_call`, `function_call_output`,
`reasoning`), and openai/codex's codex-rs protocol `ResponseItem`, which Codex records as is.
Decided by a first object whose "type" is "message" and that has a "role", or whose "type" is
one of the items that are no message (below). A turn is a user or assistant message; its text
is its input_text, output_text and text parts. Skipped: every item that is not a message
(tool calls and their output, reasoning, web searches, compaction checkpoints), system and
developer messages, and the context Codex writes into the user's role (`contextual`).
"""

import anima.recall.formats.common as common

NAME = "responses"
HEADER = None  # the "type" of a line that is the session's header, not a turn

# Items that are no message (codex-rs ResponseItem, and the Responses API's output items).
OTHER_ITEMS = frozenset({
    "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output", "local_shell_call",
    "reasoning", "web_search_call", "file_search_call", "computer_call", "computer_call_output",
    "image_generation_call", "code_interpreter_call", "mcp_call", "mcp_list_tools", "tool_search_call",
    "tool_search_output", "compaction", "compaction_summary", "ghost_snapshot"})

# What Codex puts into a user message that the person did not type: the AGENTS.md files, the
# environment, skills, notifications, a shell command run from its prompt, an aborted turn.
# Each is a whole input_text part that starts and ends with these (codex-rs
# core/src/context/contextual_user_message.rs, and the older <user_instructions> wrapper).
CONTEXTUAL = (
    ("# agents.md instructions", "</instructions>"), ("<user_instructions>", "</user_instructions>"),
    ("<environment_context>", "</environment_context>"), ("<skill>", "</skill>"),
    ("<user_shell_command>", "</user_shell_command>"), ("<turn_aborted>", "</turn_aborted>"),
    ("<subagent_notification>", "</subagent_notification>"), ("<codex_internal_context", "</codex_internal_context>"),
    ("<recommended_plugins>", "</recommended_plugins>"), ("<hook_prompt ", "</hook_prompt>"),
    ("<user_action>", "</user_action>"), ("<goal_context>", "</goal_context>"),
    ("<agent_message_board_notification>", "</agent_message_board_notification>"),
)


def detect(obj: dict) -> bool:
    kind = obj.get("type")
    return (kind == "message" and "role" in obj) or kind in OTHER_ITEMS



def delegated(obj: dict) -> bool:
    return False


def line_id(obj: dict) -> str | None:
    return None


def _own(text: str) -> str:
    """The part's text, or "" when it is context Codex wrote (matched as Codex does: the
    whole part, case aside)."""
    low = text.strip().lower()
    for start, end in CONTEXTUAL:
        if low.startswith(start) and low.endswith(end):
            return ""
    return text


def item(obj: dict, delegated: bool, when) -> tuple | None:
    """(who, text, ts) of one Responses item, or None when it is no message of the two speakers."""
    if obj.get("type", "message") != "message":
        return None
    role = obj.get("role")
    if role not in common.WHO or common.injected(obj, role):
        return None
    text = common.body(obj.get("content"), role, _own if role == "user" else None)
    return ("delegated" if delegated else common.WHO[role], text, common.ts(when)) if text.strip() else None


def turn(obj: dict, delegated: bool) -> tuple | None:
    return item(obj, delegated, obj.get("ts", obj.get("timestamp", obj.get("created_at"))))
