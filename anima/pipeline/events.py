"""Events in (`anima say`), and preprocessing: every event into message_queue, one envelope.

An event is a JSON object: the payload of what happened. Any event may carry `source_type`
(message, system or reflection; default message), `trace_id` (to continue a chain) and
`ttl_sec`, which go into the envelope, not the payload. A message needs `text` and `speaker`
(a string each); a reflection (a thought a host offers her) needs `text`; a system event is
any fields (internalize tells what happened from them). A rhythm trigger is tick's alone,
and an event never says it is her action's result: only `anima dispatch` tells of what
she did. Preprocessing makes no distinction between a person's words, a
system trigger, a rhythm or her own action's result: each becomes one msg_*.json with the
same envelope, the event's trace id carried on.
"""


from anima.infra import jsontext
from anima.infra.errors import DataError
from anima.infra.text import plain
from anima.pipeline import queues

EVENT_TYPES = ("message", "system", "reflection")
NEEDS = {"message": ("text", "speaker"), "reflection": ("text",)}  # fields each kind needs
ENVELOPE_FIELDS = ("source_type", "trace_id", "ttl_sec")


def event(obj, what: str, node: str, now: float) -> dict:
    """The envelope for one event object, said at `now`, or DataError saying what is missing."""
    if not isinstance(obj, dict):
        raise DataError(f"{what}: an event is a JSON object")
    payload = {k: v for k, v in obj.items() if k not in ENVELOPE_FIELDS}
    source_type = obj.get("source_type", "message")
    if source_type == "action":
        raise DataError(f"{what}: source_type action: only anima dispatch tells of what she did")
    if source_type not in EVENT_TYPES:
        raise DataError(f"{what}: source_type must be one of {', '.join(EVENT_TYPES)}, not {source_type!r}")
    for field in NEEDS.get(source_type, ()):
        if not isinstance(payload.get(field), str) or not payload[field].strip():
            raise DataError(f"{what}: a {source_type} needs \"{field}\" (a non-empty string)")
    _plain(payload, what)
    trace_id = obj.get("trace_id")
    if trace_id is not None and (not isinstance(trace_id, str) or not trace_id):
        raise DataError(f"{what}: trace_id must be a non-empty string")
    ttl = obj.get("ttl_sec")
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0):
        raise DataError(f"{what}: ttl_sec must be a whole number of seconds")
    return queues.envelope(source_type, node, payload, "event", trace_id, ttl, now=now)


def _plain(payload: dict, what: str) -> None:
    """Refuse a control character in any string of the event: internalize narrates its words
    into now.md, and from there they reach every system prompt."""
    stack = [payload]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                plain(item, "an event")
            except DataError as e:
                raise DataError(f"{what}: {e}") from None


def parse_events(text: str, what: str, node: str, now: float) -> list[dict]:
    """One JSON object, or NDJSON of many: all valid, or DataError naming the bad line."""
    stripped = text.strip()
    if not stripped:
        raise DataError(f"{what}: no event")
    try:
        return [event(jsontext.loads(stripped), what, node, now)]
    except ValueError:
        pass  # not one document: NDJSON, line by line
    events = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = jsontext.loads(line)
        except ValueError as e:
            raise DataError(f"{what}:{number}: not valid JSON ({e.msg})") from None
        events.append(event(obj, f"{what}:{number}", node, now))
    return events


def say(home, events: list[dict]) -> list[str]:
    """Deliver events to inbox/pending; return their ids."""
    inbox = queues.Queue(home, "pending")
    return [inbox.deliver(e)[: -len(".json")] for e in events]


def preprocess(home, now: float, by: str = "anima preprocess") -> dict:
    """Move every waiting event (inbox/pending, inbox/system, rhythm/triggers) into
    message_queue; a malformed one goes to dead_letter/ with the reason, the rest flow.

    Exactly once: a message's name comes from its event's, so an event a crashed run had
    already delivered (and that `recover` gave back) is finished, not delivered again.
    """
    out = queues.Queue(home, "message")
    counts = {"delivered": 0, "dead": 0}
    for name in ("pending", "system", "rhythm"):
        source = queues.Queue(home, name)
        source.recover()
        dead: list = []
        for file, doc in source.take(by, now, dead):
            env = doc["envelope"]
            msg_name = "msg_" + env["id"].split("_", 1)[-1] + ".json"
            if not out.has(msg_name):
                msg = queues.envelope(env["source_type"], "preprocess", doc["payload"], "msg", env["trace_id"],
                                      env.get("ttl_sec"), now=now)
                msg["envelope"]["id"] = msg_name[: -len(".json")]
                msg["payload"] = {**doc["payload"], "event": env["id"], "happened": env["timestamp"]}
                out.deliver(msg)
                counts["delivered"] += 1
            source.finish(file)
        counts["dead"] += len(dead)
    return counts
