"""`anima dispatch`: carry out the actions in action_queue; each result becomes an event.

An action file's payload is one action, {"command": NAME, "params": {...}}, or as the design
writes it a list, {"actions": [{"command", "params"}, ...]}: each item carried out once, in
order, under the id FILEID-N (N its index), with its own journal lines and result; a
malformed item fails alone. Built-in commands:
- reply        {to, text[, scene, in_reply_to]}  the message into pipeline/outbox/ for the
               host (anima.pipeline.outbox), unless [dispatch.commands] or hooks/ has reply
- diary.write  {text}          append to self/diary/DATE.md (DATE of now, UTC)
- state.update {text}          replace self/state.md
- note.add     {text}          as `anima note add`, with every refusal
- memory.write {topic, text}   append to self/memories/TOPIC.md (TOPIC a plain name)
Any other command runs only if configured: an argv in config ([dispatch.commands], {param}
filled from the params, never through a shell), else an executable $ANIMA_HOME/hooks/NAME
(the action JSON on stdin; exit 0 = done; only a regular file of hooks/ itself with an exec
bit, no link, one hard link, owned by the user running anima and writable by no one else, in
a hooks/ owned by that user and writable by no one else). Unknown or failing: the action
goes to dead_letter/ with the reason (a list with a failed item: the file, its reason
naming each failed item; a retry carries out only those).

Nothing twice: pipeline/dispatch.journal records each action id as begun and as done. An
action begun but not done (a crash) is checked before it is run again: a built-in whose
effect is already there is only recorded as done; a hook is never run twice (at most once).
Every result, done or failed, goes to the inbox as an event of source_type "action" with the
action's trace id, after the journal's first line for that action, and says what was done
(command, the params to/text/topic/scene): her action becomes her experience, and
internalize tells a result as hers only when the journal holds its action.
"""
import json
import os
import re
import stat
import subprocess

from anima.infra import clock, fs, jsontext
from anima.infra.errors import SOFTWARE, AnimaError, DataError
from anima.pipeline import queues

BUILTINS = ("reply", "diary.write", "state.update", "note.add", "memory.write")
OVERRIDABLE = ("reply",)  # a built-in an argv in [dispatch.commands] or hooks/NAME replaces
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
HOOK_TIMEOUT_SEC = 60


class Failed(Exception):
    """The action could not be carried out: why, in one line."""


def _text(params: dict, key: str = "text") -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value.strip():
        raise Failed(f"params.{key} must be a non-empty string")
    return value.strip()


NAME_MAX = 200  # a name a file is made of (with .md, under any file system's 255 bytes)


def _plain(name: str, what: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise Failed(f"{what} {name!r} is not a plain name (no '/' or '..')")
    if len(name) > NAME_MAX:
        raise Failed(f"{what} is {len(name)} characters long, over {NAME_MAX}")
    return name


class Journal:
    """pipeline/dispatch.journal: one JSON line per action begun, done or failed; an action's
    last line is its state (a failed one may be retried: it had no effect)."""

    def __init__(self, home, now: float):
        self.path = home.path("pipeline", "dispatch.journal")
        self.now = now  # the time its lines say: the run's
        self.state: dict[str, str] = {}
        self.command: dict[str, str | None] = {}  # what each action was (older lines do not say)
        self.failures: dict[str, int] = {}  # how often each action failed (a retry may fail again)
        self.done: set[str] = set()
        for line in (fs.read_text(self.path) or "").splitlines():
            try:
                entry = jsontext.loads(line)
            except ValueError:
                continue  # a line torn by a crash: as if never written
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                self.state[entry["id"]] = entry.get("state")
                self.command.setdefault(entry["id"], entry.get("command"))
                if entry.get("state") == "failed":
                    self.failures[entry["id"]] = self.failures.get(entry["id"], 0) + 1
                if entry.get("state") == "done":
                    self.done.add(entry["id"])

    def mark(self, action_id: str, state: str, command) -> None:
        line = {"id": action_id, "state": state, "command": command if isinstance(command, str) else None,
                "at": clock.iso(self.now)}
        fs.append(self.path, json.dumps(line) + "\n")
        self.state[action_id] = state
        self.command.setdefault(action_id, line["command"])
        if state == "failed":
            self.failures[action_id] = self.failures.get(action_id, 0) + 1
        if state == "done":
            self.done.add(action_id)

    def carried_out(self, action_id, command) -> bool:
        """Whether a result of `command` for `action_id` can be hers: dispatch took that action
        up (a result is delivered only after its action's first line here)."""
        if not isinstance(action_id, str) or action_id not in self.state:
            return False
        recorded = self.command.get(action_id)
        return recorded is None or recorded == command


_OUTCOME = re.compile(r"(done|failed([1-9][0-9]{0,5}))")


def result_name(action_id: str, outcome: str) -> str:
    """The id of the event that tells an action's outcome ("done", "failed1", "failed2"...)."""
    return "event_" + action_id.split("_", 1)[-1] + "_" + outcome


def forged(home, event_id, payload: dict) -> str | None:
    """Why an action result is not the one anima dispatch wrote, or None when it is: its event
    is named after its action and outcome (`result_name`), its "ok" says that outcome, and the
    journal holds that outcome for that action of that command. The result is delivered just
    before the journal's line for it (a crash repeats nothing), so an action still "begun"
    there may have it: a result of the outcome the next line is to say."""
    aid, command = payload.get("action"), payload.get("command")
    journal = Journal(home, 0.0)
    if not journal.carried_out(aid, command):
        return "its action is not in pipeline/dispatch.journal"
    prefix = result_name(aid, "")
    outcome = event_id[len(prefix):] if isinstance(event_id, str) and event_id.startswith(prefix) else ""
    m = _OUTCOME.fullmatch(outcome)
    if not m:
        return f"its id {event_id!r} is not {prefix}done or {prefix}failedN, as dispatch names a result"
    pending = journal.state.get(aid) == "begun"
    if m[1] == "done":
        if payload.get("ok") is not True:
            return "a result named done that does not say ok"
        if aid not in journal.done and not pending:
            return f"pipeline/dispatch.journal says {aid} was not done"
        return None
    if payload.get("ok") is not False:
        return "a result named failed that says ok"
    n, failures = int(m[2]), journal.failures.get(aid, 0)
    if n > failures and not (pending and n == failures + 1):
        return f"pipeline/dispatch.journal says {aid} failed {failures} times, not {n}"
    return None


def _append_once(path: str, block: str, resumed: bool) -> None:
    """Append `block` unless this is a resumed action whose block is already there."""
    if resumed and block in (fs.read_text(path) or ""):
        return
    fs.append(path, block)


def run_builtin(home, cfg, command: str, params: dict, resumed: bool, when: float, action_id: str = "",
                trace_id: str | None = None) -> dict:
    """Carry out a built-in; `when` (the action's time) dates a diary entry, so that a resumed
    action finds the block it may already have written."""
    now = when
    if command == "reply":
        from anima.pipeline import outbox

        to = params.get("to")
        if not isinstance(to, str) or not to.strip():
            raise Failed("params.to must say to whom (a non-empty string)")
        text = _text(params)
        for key in ("scene", "in_reply_to"):
            if params.get(key) is not None and not isinstance(params[key], str):
                raise Failed(f"params.{key} must be a string")
        # named after the action: a resumed one finds its message there and hands it over once
        return {"outbox": outbox.deliver(home, action_id, {**params, "to": to.strip(), "text": text},
                                         trace_id or queues.new_id("trace"), now)}
    if command == "diary.write":
        text = _text(params)
        path = home.path("self", "diary", clock.iso(now)[:10] + ".md")
        _append_once(path, f"## {clock.iso(now)[11:16]}\n\n{text}\n\n", resumed)
        return {"path": path}
    if command == "state.update":
        path = home.path("self", "state.md")
        fs.atomic_write(path, _text(params) + "\n")
        return {"path": path}
    if command == "memory.write":
        topic = _plain(params.get("topic"), "memory topic")
        path = home.path("self", "memories", topic + ".md")
        _append_once(path, _text(params) + "\n\n", resumed)
        return {"path": path}
    from anima.notes.store import Store, check_note, note_id

    text = _text(params)
    store = Store(home)
    if resumed and note_id(check_note(text, cfg)) in {n.id for n in store.notes()}:
        return {"id": note_id(check_note(text, cfg))}
    try:
        nid, _ = store.add(text, cfg, now)
    except AnimaError as e:
        raise Failed(str(e)) from None
    return {"id": nid}


def run_configured(home, cfg, command: str, action: dict) -> dict:
    """A command from [dispatch.commands] (an argv) or hooks/NAME; never a shell."""
    params = action["payload"].get("params") or {}
    argv_template = cfg["dispatch.commands"].get(command)
    if argv_template is not None:
        def fill(match):
            key = match.group(1)
            if key not in params:
                raise Failed(f"the argv of {command} needs params.{key}")
            value = params[key]
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        argv = []
        for arg in argv_template:
            filled = re.sub(r"\{(\w+)\}", fill, arg)
            if filled.startswith("-") and not arg.startswith("-"):  # a param would become an option
                raise Failed(f"an argument of {command} would begin with '-' ({filled[:40]!r}): "
                             "the program would take it for an option")
            argv.append(filled)
        stdin = None
    else:
        hook = _hook(home, _plain(command, "command"))
        argv, stdin = [hook], json.dumps(action, ensure_ascii=False)
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=HOOK_TIMEOUT_SEC,
                              cwd=home.root, shell=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Failed(f"{argv[0]}: {e}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise Failed(f"{argv[0]} exited {done.returncode}: {last}")
    return {"stdout": done.stdout[-2000:]}


def _owner(uid: int) -> str:
    import pwd

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def trust_problem(st, what: str) -> str | None:
    """Why a hook, or hooks/, with status `st` could hold what the user running anima did not
    put there (another user owns it, or others may write it), or None."""
    if st.st_uid != os.geteuid():
        return f"{what} is owned by {_owner(st.st_uid)}, not by the user running anima ({_owner(os.geteuid())})"
    if st.st_mode & 0o022:
        who = {0o020: "group", 0o002: "others"}.get(st.st_mode & 0o022, "group and others")
        return f"{what} is writable by {who} (mode {stat.S_IMODE(st.st_mode):04o}; chmod go-w to trust it)"
    return None


def hook_problem(home, name: str) -> str | None:
    """Why hooks/NAME may not run, or None: it must be a regular file of hooks/ itself with an
    exec bit, owned by the user running anima, writable by no one else, with one link (a hard
    link shares its content with a file elsewhere, which anyone who may write that file can
    change); hooks/ must be owned by that user and writable by no one else (else a hook could be
    swapped in). None of it a symbolic link."""
    hook = home.path("hooks", name)
    try:
        st = fs.status(hook)
        top = fs.status(home.path("hooks"))
    except AnimaError as e:  # hooks/ itself a link, or not a directory
        return f"hook {name}: {e}; not run"
    if st is None:
        return f"unknown command {name!r}: not built in, not in [dispatch.commands], no executable {hook}"
    problem = trust_problem(top, home.path("hooks"))
    if problem:
        return f"hook {name}: {problem}; not run"
    if stat.S_ISLNK(st.st_mode):
        return f"hook {name}: {hook} is a symbolic link; a hook must be a regular file in hooks/; not run"
    if not stat.S_ISREG(st.st_mode):
        return f"hook {name}: {hook} is not a regular file; not run"
    if not st.st_mode & 0o111:
        return f"hook {name}: {hook} is not executable (chmod +x to enable it); not run"
    problem = trust_problem(st, hook)
    if problem:
        return f"hook {name}: {problem}; not run"
    if st.st_nlink != 1:
        return f"hook {name}: {hook} has {st.st_nlink} hard links; a hook must have one (its content " \
            "is shared with a file elsewhere); not run"
    return None


def _hook(home, name: str) -> str:
    """hooks/NAME if it may run (hook_problem), else Failed saying why."""
    problem = hook_problem(home, name)
    if problem:
        raise Failed(problem)
    return home.path("hooks", name)


SHOWN = ("to", "text", "topic", "scene")  # the params a result carries: to whom and what (never cites)


def plan(file_id: str, payload: dict) -> tuple[list[tuple[str, object]], str | None]:
    """The actions of a file as (id, action), and why the file as a whole is not actions
    (None: it is). One action (payload.command/params) has the file's id; the items of
    payload.actions have FILEID-N, N their index: the same however often the file is read."""
    if "actions" not in payload:
        if not isinstance(payload.get("command"), str):
            return [], "payload.command must name the command (or payload.actions list the actions)"
        return [(file_id, payload)], None
    if "command" in payload:
        return [], "payload holds both \"actions\" and \"command\": give a list of actions, or one"
    items = payload["actions"]
    if not isinstance(items, list) or not items:
        return [], "payload.actions must be a non-empty list of {\"command\", \"params\"} objects"
    return [(f"{file_id}-{i}", item) for i, item in enumerate(items)], None


def _problem(where: str, item) -> str | None:
    """Why one action (`where`: payload or payload.actions[N]) is malformed, or None."""
    if not isinstance(item, dict):
        return f"{where} must be an object {{\"command\", \"params\"}}"
    if not isinstance(item.get("command"), str):
        return f"{where}.command must name the command"
    if not isinstance(item.get("params", {}), dict):
        return f"{where}.params must be an object"
    return None


def _overridden(home, cfg, command: str) -> bool:
    """Whether a person gave a built-in that may be overridden (reply) an argv or a hook: then
    it runs, not the built-in (a hook that may not run fails the action, it is no fallback)."""
    if command not in OVERRIDABLE:
        return False
    if command in cfg["dispatch.commands"]:
        return True
    try:
        return fs.status(home.path("hooks", command)) is not None
    except AnimaError:  # hooks/ a link or no directory: meant as hooks, and refused as such
        return True


def dispatch(home, cfg, now: float, by: str = "anima dispatch") -> dict:
    """Carry out every waiting action at `now`, each item of a list in order; return counts."""
    actions = queues.Queue(home, "action")
    inbox = queues.Queue(home, "pending")
    actions.recover()
    journal = Journal(home, now)
    counts = {"done": 0, "failed": 0, "skipped": 0}
    malformed: list = []
    bugs: list[str] = []
    for name, doc in actions.take(by, now, malformed):
        env, payload = doc["envelope"], doc["payload"]
        steps, whole = plan(env["id"], payload)
        if whole:  # nothing in it is an action: it fails as one, under the file's id
            steps = [(env["id"], payload)]
        listed = "actions" in payload and not whole
        failed: list[tuple[str, str]] = []
        for index, (aid, item) in enumerate(steps):
            where = f"payload.actions[{index}]" if listed else "payload"
            why = whole or _problem(where, item)
            command = item.get("command") if isinstance(item, dict) else None
            params = (item.get("params") or {}) if isinstance(item, dict) and not why else {}
            outcome, error = _carry_out(home, cfg, journal, inbox, name, doc, aid, command, params, why, now,
                                        bugs, listed)
            counts[outcome] += 1
            if outcome == "failed":
                named = command if isinstance(command, str) else None
                failed.append((f"{where} ({named or '?'})" if listed else named or where,
                               error if not listed or error.startswith(where) else f"{where}: {error}"))
        if not failed:
            actions.finish(name)
            continue
        what = ", ".join(w for w, _ in failed)
        why = "; ".join(e for _, e in failed) if listed else failed[0][1]
        if listed and len(failed) < len(steps):
            why += f" (the other {len(steps) - len(failed)} carried out; `anima queue retry` runs only the failed)"
        actions.fail(name, what, why, by, now)
    counts["failed"] += len(malformed)
    if bugs:
        raise AnimaError(f"dispatch: carrying out {bugs[0]} failed (a bug in anima; the action is in "
                         f"dead_letter/ and the others were carried out)", SOFTWARE)
    return counts


def _carry_out(home, cfg, journal, inbox, name, doc, aid, command, params, malformed, now, bugs,
               listed) -> tuple[str, str]:
    """Carry out one action (`malformed`: why it cannot be, or None): ("done" | "failed" |
    "skipped" (done before), why it failed). Its result goes to the inbox before the journal
    says how it ended."""
    env = doc["envelope"]
    if journal.state.get(aid) == "done":
        return "skipped", ""
    resumed = journal.state.get(aid) == "begun"
    shown = {k: params[k] for k in SHOWN if isinstance(params, dict) and k in params}
    base = {"command": command, "action": aid, "params": shown}
    try:
        # begun before anything else: a result, even a refusal's, is hers only when the
        # journal holds its action (anima internalize looks)
        journal.mark(aid, "begun", command)
        if malformed:
            raise Failed(malformed)
        builtin = command in BUILTINS and not _overridden(home, cfg, command)
        if resumed and not builtin:
            raise Failed("was begun before a crash; a hook is never run twice")
        if builtin:
            when = clock.parse(env["timestamp"], f"{name}: envelope.timestamp", DataError)
            result = run_builtin(home, cfg, command, params, resumed, when, aid, env["trace_id"])
        else:
            # an item of a list reaches its hook as one action: the file's envelope under the item's id
            single = {"envelope": {**env, "id": aid}, "payload": {"command": command, "params": params}}
            result = run_configured(home, cfg, command, single if listed else doc)
    except Exception as e:
        # whatever goes wrong carrying out one action ends it, and the others go on: a
        # refusal (a link where a file should be), a fault of the home
        why = f"{e.filename}: {e.strerror}" if isinstance(e, OSError) and e.filename else str(e)
        if not isinstance(e, (Failed, AnimaError, OSError)):  # a bug of ours: said, after the others
            why = f"internal error: {type(e).__name__}: {e}"
            bugs.append(f"{name}: {why}")
        attempt = journal.failures.get(aid, 0) + 1  # each failure its own event, a retry's too
        _result(inbox, aid, f"failed{attempt}", env["trace_id"], {**base, "ok": False, "error": why}, now)
        journal.mark(aid, "failed", command)
        return "failed", why
    # the result first (named after the action: delivered once however often we get here),
    # then done: a crash in between repeats nothing and loses no result
    _result(inbox, aid, "done", env["trace_id"], {**base, "ok": True, "result": result}, now)
    journal.mark(aid, "done", command)
    return "done", ""


def _result(inbox: queues.Queue, action_id: str, outcome: str, trace_id: str, payload: dict, now: float) -> None:
    """Deliver a result event named after its action and outcome: once, however often a crash
    makes us come back here."""
    doc = queues.envelope("action", "dispatch", payload, "event", trace_id, now=now)
    doc["envelope"]["id"] = result_name(action_id, outcome)
    if not inbox.has(doc["envelope"]["id"] + ".json"):
        inbox.deliver(doc)


def action(command: str, params: dict, now: float, trace_id: str | None = None) -> dict:
    """A new action envelope (what `anima externalize` will write; tests and hosts too)."""
    return queues.envelope("action", "externalize", {"command": command, "params": params}, "act", trace_id, now=now)

