"""The agent-facing commands as tools, and running one from JSON.

One table, TOOLS, says each tool's arguments, its result and its MCP hints; every shape a host
takes is made from it: OpenAI function calling (plain or strict), Anthropic's input_schema, MCP's
input and output schemas and annotations.

Only what the agent may do itself is a tool: write a self-note, search the transcripts and
her own past, stage a fact, read its blocks, rewrite an unlocked block, propose a change to the personality
baseline, take the replies she decided from her outbox and acknowledge them once sent (a host
whose model delivers them). Approving, retiring, promoting, accepting a proposal and forcing a
locked block are a person's, and are not tools.
"""

from anima.infra.errors import AnimaError, UsageError
from anima.recall.index import WHO
from anima.recall.past import KINDS


class Tool:
    """One tool: its arguments (JSON Schema properties, those required), what its result holds
    (the properties of the object it returns, those always there) and its MCP hints."""

    def __init__(self, name: str, description: str, properties: dict, required: list[str],
                 result: dict, always: list[str], **hints: bool):
        self.name, self.description, self.properties, self.required = name, description, properties, required
        self.result, self.always, self.hints = result, always, hints


# The MCP hints (readOnlyHint, destructiveHint, idempotentHint, openWorldHint), decided from what
# each tool writes; none reaches beyond her home, so openWorld is false for all. Destructive means
# undoable by nothing she or a person has: a rewritten block keeps its previous version, an
# archived note and a staged fact stay on disk, a claimed message comes back unacknowledged; but
# an acknowledged message is never delivered again, sent or not.
READ = {"read_only": True, "destructive": False, "idempotent": True, "open_world": False}
ADD = {"read_only": False, "destructive": False, "open_world": False}

_STR, _INT, _BOOL = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
_IDS = {"type": "array", "items": _STR}
# anyOf rather than a list of types: MCP Inspector warns that clients mapping schemas onto one
# `type` (Gemini's OpenAPI subset) drop the constraint
_OR_NULL = {"anyOf": [_STR, {"type": "null"}]}
_PLACE = {"type": "object", "required": ["session", "line", "date", "path"],
          "properties": {"session": _STR, "line": _INT, "date": _STR, "path": _STR}}
_HIT = {"type": "object",
        "required": ["session", "line", "date", "who", "text", "score", "terms", "relaxed", "path", "also"],
        "properties": {"session": _STR, "line": _INT, "date": _STR, "who": _STR, "text": _STR,
                       "score": {"type": "number"}, "terms": _IDS, "relaxed": _BOOL, "path": _STR,
                       "also": {"type": "array", "items": _PLACE}}}
_PAST = {"type": "object", "required": ["file", "line", "date", "time", "kind", "text", "score", "terms", "relaxed"],
         "properties": {"file": _STR, "line": _INT, "date": _OR_NULL, "time": _OR_NULL,
                        "kind": {"type": "string", "enum": list(KINDS)}, "text": _STR, "score": {"type": "number"},
                        "terms": _IDS, "relaxed": _BOOL}}
_BLOCK = {"type": "object", "required": ["key", "title", "locked", "body"],
          "properties": {"key": _STR, "title": _STR, "locked": _BOOL, "body": _STR}}
_MESSAGE = {"type": "object", "required": ["id", "to", "text", "scene", "in_reply_to", "trace_id", "at", "action"],
            "properties": {"id": _STR, "to": _OR_NULL, "text": _OR_NULL, "scene": _OR_NULL, "in_reply_to": _OR_NULL,
                           "trace_id": _STR, "at": _STR, "action": _OR_NULL}}

# How long a recall tool's question (or its terms together) may be. A search's time grows with
# its terms: a model led to paste a document as its query (300,000 CJK characters: ~30 s and
# ~380 MB) would hold its host for it. A question is seldom a paragraph.
QUERY_MAX_CHARS = 4096


TOOLS = [
    Tool("self_note",
         "Write a note about yourself for later sessions: 1 to 3 first-person sentences about how you "
         "work, never about the user (private data is refused). Returns the note's id.",
         {"text": {"type": "string", "description": "The note, in the first person."}}, ["text"],
         {"id": _STR, "archived": _IDS}, ["id", "archived"],
         **ADD, idempotent=False),  # a near-duplicate is refused, but refreshes the heat of the note it repeats
    Tool("memory_recall",
         "Search your past conversations for what was really said: ask a question in plain language "
         "(query) or give exact terms. Turns holding every term come first, then those holding some of them (relaxed); "
         "for a query, a turn that only asks it again or is far from a date it names is not first for its words. "
         "Returns results with session, line, date, who and text; the same words said again elsewhere "
         "are one result, the other places in also.",
         {"query": {"type": "string", "description": "A question, as you would ask it: 'When did Maria get Coco?' "
                                                     f"(at most {QUERY_MAX_CHARS} characters)."},
          "terms": {"type": "array", "items": {"type": "string"},
                    "description": "Exact search terms instead of a query: each word or phrase searched as given."},
          "limit": {"type": "integer", "description": "At most this many results (default 10)."},
          "who": {"type": "string", "enum": list(WHO), "description": "Only these turns."},
          "since": {"type": "string", "description": "Only turns on or after this date (YYYY-MM-DD)."}},
         [],
         {"results": {"type": "array", "items": _HIT}, "relaxed": _BOOL}, ["results", "relaxed"], **READ),
    Tool("self_recall",
         "Search your own past: your autobiography, your stream and its archive, your memories and your "
         "diary. Ask in plain words; paragraphs holding every word (and of the time a date you name) come "
         "first, then the rest, those with some of the words marked relaxed. Returns results with file, "
         "line, date, time, kind and text.",
         {"query": {"type": "string",
                    "description": f"What to look for, in plain words (at most {QUERY_MAX_CHARS} characters)."},
          "limit": {"type": "integer", "description": "At most this many results (default 10)."},
          "since": {"type": "string", "description": "Only paragraphs dated on or after this date (YYYY-MM-DD)."}},
         ["query"],
         {"results": {"type": "array", "items": _PAST}, "relaxed": _BOOL}, ["results", "relaxed"], **READ),
    Tool("memory_stage",
         "Propose a fact about the user from a real turn that memory_recall found: the session and line "
         "must exist and the quote must occur in that turn. A person approves it before it is used.",
         {"session": {"type": "string"}, "line": {"type": "integer"},
          "quote": {"type": "string", "description": "The user's words, as they occur in the turn."},
          "tags": {"type": "array", "items": {"type": "string"}},
          "importance": {"type": "integer", "description": "0 to 3 (default 1)."}},
         ["session", "line", "quote"],
         {"id": _STR, "new": _BOOL, "status": {"type": "string", "enum": ["candidate", "approved", "retired"]}},
         ["id", "new", "status"],
         **ADD, idempotent=True),  # the same fact again is the same id, "new": false
    Tool("get_self_blocks",
         "Read your self blocks (who you are): all six, or the one named by key.",
         {"key": {"type": "string", "enum": ["existence_anchor", "self_model", "personality_baseline", "direction",
                                            "metacognition", "autobiography_summary"]}}, [],
         {"blocks": {"type": "array", "items": _BLOCK}}, ["blocks"], **READ),
    Tool("update_self_block",
         "Rewrite one of your self blocks, in the first person, about yourself: the existence anchor is "
         "locked, and a body holding the user's private data is refused. The previous version is kept. "
         "personality_baseline is not rewritten but proposed: it changes when a person accepts the proposal "
         "the result names.",
         {"key": {"type": "string", "enum": ["self_model", "personality_baseline", "direction", "metacognition",
                                            "autobiography_summary"]},
          "body": {"type": "string", "description": "The new Markdown body."}}, ["key", "body"],
         {"key": _STR, "changed": _BOOL, "previous_revision": {"anyOf": [_INT, {"type": "null"}]},
          "proposal": _STR, "new": _BOOL, "status": {"type": "string", "enum": ["open", "accepted", "rejected"]},
          "accept": _OR_NULL, "note": _STR}, ["key", "changed"],
         **ADD, idempotent=True),  # the same body again changes nothing: "changed": false
    Tool("outbox_take",
         "Take the replies you decided to send and that wait in your outbox, oldest first: each with id, "
         "to, text, scene, in_reply_to, trace_id, at. Send each where it belongs, then acknowledge it with "
         "outbox_ack; one not acknowledged within 300 seconds is given again.",
         {"limit": {"type": "integer", "description": "At most this many messages (default 10)."}}, [],
         {"messages": {"type": "array", "items": _MESSAGE}}, ["messages"],
         **ADD, idempotent=False),  # each call claims other messages
    Tool("outbox_ack",
         "Acknowledge replies taken with outbox_take once they are sent: they are never given again.",
         {"ids": {"type": "array", "items": {"type": "string"}, "description": "The ids of the messages sent."}},
         ["ids"],
         {"acknowledged": _IDS}, ["acknowledged"],
         read_only=False, destructive=True, idempotent=True, open_world=False),  # again: nothing more changes
]
NAMES = [t.name for t in TOOLS]


def _closed(schema: dict) -> dict:
    """`schema` with "additionalProperties": false on every object in it, as strict mode requires."""
    if not isinstance(schema, dict):
        return schema
    out = {k: ({p: _closed(v) for p, v in schema["properties"].items()} if k == "properties" else
               _closed(v) if k == "items" else v) for k, v in schema.items()}
    if schema.get("type") == "object":
        out["additionalProperties"] = False
    return out


def parameters(t: Tool, strict: bool = False) -> dict:
    """The JSON Schema of the tool's arguments. Strict, for OpenAI's strict mode: every property
    required, an optional one nullable, null meaning not given (check_args drops it)."""
    props = t.properties
    if strict:
        props = {k: v if k in t.required else _nullable(v) for k, v in props.items()}
    return _closed({"type": "object", "properties": props, "required": list(props) if strict else t.required})


def _nullable(spec: dict) -> dict:
    out = dict(spec, type=[spec["type"], "null"])
    if "enum" in spec:
        out["enum"] = [*spec["enum"], None]
    return out


def output_schema(t: Tool) -> dict:
    """The JSON Schema the tool's result (its MCP structured content) conforms to."""
    return _closed({"type": "object", "properties": t.result, "required": t.always})


def openai(strict: bool = False) -> list[dict]:
    """The tools as the OpenAI chat API takes them in "tools"; strict adds "strict": true."""
    flag = {"strict": True} if strict else {}
    return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": parameters(t, strict), **flag}} for t in TOOLS]


def anthropic(strict: bool = False) -> list[dict]:
    """The tools as the Anthropic Messages API takes them in "tools"; strict (its strict tool use)
    adds "strict": true beside the plain schema: its strict mode takes optional properties, and
    the anthropic SDK's own strict transform fails on a list of types, ["integer", "null"]."""
    flag = {"strict": True} if strict else {}
    return [{"name": t.name, "description": t.description, "input_schema": parameters(t), **flag} for t in TOOLS]


_TYPES = {"string": str, "integer": int, "array": list, "boolean": bool}


def check_args(name: str, args) -> dict:
    """The arguments if they fit the tool's schema, else UsageError saying what is wrong."""
    if name not in NAMES:
        raise UsageError(f"unknown tool {name!r}; tools: {', '.join(NAMES)}")
    params = parameters(TOOLS[NAMES.index(name)])
    if not isinstance(args, dict):
        raise UsageError(f"{name}: the arguments must be a JSON object")
    # null is "not given": a host in strict mode sends every optional argument, null when unused
    args = {k: v for k, v in args.items() if v is not None}
    for key in params["required"]:
        if key not in args:
            raise UsageError(f"{name}: missing argument {key!r}")
    for key, value in args.items():
        spec = params["properties"].get(key)
        if spec is None:
            raise UsageError(f"{name}: unknown argument {key!r}")
        kind = _TYPES[spec["type"]]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise UsageError(f"{name}: {key!r} must be of type {spec['type']}")
        if spec["type"] == "array" and not all(isinstance(v, str) for v in value):
            raise UsageError(f"{name}: {key!r} must be a list of strings")
        if "enum" in spec and value not in spec["enum"]:
            raise UsageError(f"{name}: {key!r} must be one of {', '.join(spec['enum'])}")
    return args


def call(home, name: str, args: dict, now: float, warn) -> dict:
    """Run a tool with checked arguments at `now`; its result as a JSON-ready dict."""
    from anima.infra import config

    args = check_args(name, args)
    cfg = config.load(home.config)
    if name == "self_note":
        from anima.notes.store import Store

        nid, archived = Store(home).add(args["text"], cfg, now)
        return {"id": nid, "archived": [n.id for n in archived]}
    if name == "memory_recall":
        from anima.recall import ask
        from anima.recall import search as recall

        if ("query" in args) == ("terms" in args):
            raise UsageError("memory_recall: give 'query' (a question) or 'terms', one of them")
        _asked(name, args)
        q = ask.query(args["query"]) if "query" in args else recall.Query(args["terms"])
        if not q.raw:
            raise UsageError("memory_recall: give at least one search term")
        filters = recall.Filters(recall.parse_since(args.get("since"), "memory_recall: since"), args.get("who"))
        limit = args.get("limit", cfg["recall.limit"])
        if limit < 1:
            raise UsageError("memory_recall: 'limit' must be at least 1")
        [results] = recall.run(home, cfg, [q], filters, limit, True, warn)
        return {"results": [recall.as_json(r) for r in results],
                "relaxed": bool(results) and not recall.answers(results)}
    if name == "self_recall":
        return _self_recall(home, cfg, args, warn)
    if name == "memory_stage":
        from anima.facts.store import FactStore, Request, check_tags
        from anima.recall import sessions

        importance = args.get("importance", 1)
        if importance not in (0, 1, 2, 3):
            raise UsageError("memory_stage: 'importance' must be 0 to 3")
        request = Request(args["session"], args["line"], args["quote"], check_tags(args.get("tags", [])), importance)
        store = FactStore(home)
        [(fid, new)] = store.stage([request], lambda s, n: sessions.find_turn(home, cfg, s, n, warn), now)
        status = next(f["status"] for f in store.load() if f["id"] == fid)
        return {"id": fid, "new": new, "status": status}
    if name in ("outbox_take", "outbox_ack"):
        return _outbox(home, name, args, now)
    from anima.self import blocks

    if name == "get_self_blocks":
        found = [blocks.read(home.blocks, args["key"])] if "key" in args else blocks.read_all(home.blocks)
        return {"blocks": [{"key": b.key, "title": b.title, "locked": b.locked, "body": b.body}
                           for b in found if b is not None]}
    from anima.notes import privacy
    from anima.self import proposals

    if args["key"] == proposals.KEY:  # her baseline changes only when a person accepts the change
        try:
            pid, new, status = proposals.propose(home, args["body"], "agent", [EVIDENCE], cfg["self.block_max_chars"],
                                                 now, privacy.settings(cfg))
        except blocks.Unchanged:
            return {"key": args["key"], "changed": False}
        return {"key": args["key"], "changed": False, "proposal": pid, "new": new, "status": status,
                "accept": f"anima self accept {pid}" if status == "open" else None, "note": _proposed(pid, status)}
    try:
        rev = blocks.write(home.blocks, args["key"], args["body"], force=False,
                           max_chars=cfg["self.block_max_chars"], lang=cfg["core.lang"], now=now,
                           private=privacy.settings(cfg))
    except blocks.Unchanged:
        return {"key": args["key"], "changed": False}
    return {"key": args["key"], "changed": True, "previous_revision": rev}


def _self_recall(home, cfg, args: dict, warn) -> dict:
    from anima.recall import ask, past
    from anima.recall import search as recall

    _asked("self_recall", args)
    q = ask.query(args["query"])  # a question: function words dropped, dates read (anima.recall.ask)
    if not q.raw:
        raise UsageError("self_recall: give at least one word to look for")
    limit = args.get("limit", cfg["recall.limit"])
    if limit < 1:
        raise UsageError("self_recall: 'limit' must be at least 1")
    found = past.search(home, q, recall.parse_since(args.get("since"), "self_recall: since"), limit, warn)
    return {"results": [past.as_json(h) for h in found], "relaxed": bool(found) and not recall.answers(found)}


def _asked(name: str, args: dict) -> None:
    """UsageError for a query or terms past QUERY_MAX_CHARS."""
    size = len(args["query"]) if "query" in args else sum(map(len, args["terms"]))
    if size > QUERY_MAX_CHARS:
        what = "'query' is" if "query" in args else "'terms' are"
        raise UsageError(f"{name}: {what} {size} characters long; at most {QUERY_MAX_CHARS}: a question, "
                         "not a document")


EVIDENCE = "the agent asked for it, with update_self_block"


def _proposed(pid: str, status: str) -> str:
    if status == "open":
        return (f"not written: proposed as {pid}; the personality baseline changes when a person accepts it "
                f"(`anima self accept {pid}`)")
    return f"not written: this very change was proposed before as {pid}, and a person has {status} it"


OUTBOX_TAKE_DEFAULT = 10


def _outbox(home, name: str, args: dict, now: float) -> dict:
    from anima.infra.errors import NotFound
    from anima.pipeline import outbox

    if name == "outbox_take":
        limit = args.get("limit", OUTBOX_TAKE_DEFAULT)
        if limit < 1:
            raise UsageError("outbox_take: 'limit' must be at least 1")
        return {"messages": outbox.take(home, now, limit, by="anima mcp")}
    try:
        return {"acknowledged": outbox.ack(home, args["ids"])}
    except outbox.Unknown as e:
        raise NotFound(f"outbox_ack: not in the outbox: {', '.join(e.args[0])} (the others are "
                       "acknowledged)") from None


def error(e: AnimaError) -> dict:
    return {"error": str(e), "exit": e.exit_code}
