"""What every transcript format reads alike: who a role is, a message's body, a time."""

from anima.infra import clock

WHO = {"user": "user", "assistant": "me"}
OWN_KINDS = {"user": ("user",), "assistant": ("assistant", "agent", "me")}
# The text parts of a content list: chat's "text", and the Responses API's input and output text.
TEXT_PARTS = ("text", "input_text", "output_text")


def injected(obj: dict, role: str) -> bool:
    """Whether `obj` carries `"source": {"kind": K}` with K not the speaker's own."""
    source = obj.get("source")
    return isinstance(source, dict) and "kind" in source and source["kind"] not in OWN_KINDS[role]


def body(content, role: str, keep=None) -> str:
    """A message body: a string content, or the text parts of a list content joined with
    newlines, the blank ones left out. `keep(text)` gives the part's text to keep (harness
    text taken out), or "" to drop it."""
    if isinstance(content, str):  # (most lines: kept fast)
        return content if keep is None else keep(content)
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif (isinstance(part, dict) and part.get("type") in TEXT_PARTS and isinstance(part.get("text"), str)
                  and not injected(part, role)):
                texts.append(part["text"])
    else:
        return ""
    if keep is not None:
        texts = [keep(t) for t in texts]
    return "\n".join(t for t in texts if t.strip())


def ts(value) -> float | None:
    """Epoch seconds of an RFC 3339 string or an epoch number (in milliseconds past 1e11);
    None when it is neither, or lies outside the years anima takes (1970 to 8999, as
    clock.parse: a time no date can be printed for is no time, 1e300 or year 1)."""
    if isinstance(value, str):
        try:
            return clock.parse(value, "ts", ValueError)
        except ValueError:
            try:
                value = float(value)
            except ValueError:
                return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = float(value)
    except OverflowError:  # (an integer past any float: 1 and 309 zeros)
        return None
    if seconds > 1e11:
        seconds /= 1000
    return seconds if clock.EARLIEST <= seconds < clock.LATEST else None


def message(obj: dict, delegated: bool, when) -> tuple | None:
    """(who, text, ts) of one chat message `{"role", "content"}`, or None: a role that is not
    user or assistant, injected content, or a blank body."""
    role = obj.get("role")
    if role not in WHO or injected(obj, role):
        return None
    text = body(obj.get("content"), role)
    return ("delegated" if delegated else WHO[role], text, ts(when)) if text.strip() else None


def plain_id(value) -> bool:
    """Whether `value` may be a session id: a non-empty string without spaces or control characters."""
    return isinstance(value, str) and value != "" and value.isprintable() and not any(c.isspace() for c in value)
