"""`anima externalize` (Pool A -> Pool B): only her own decisions become actions.

It reads what was appended to now.md since its cursor, by way of the records of
pipeline/stream.jsonl: only the lines of a record by "think" or "externalize" (her
reflection) whose sha256 still matches the lines in now.md (or in the archive, after a roll)
are hers.

With a model backend she reflects first (`Externalizer.reflect`): the entries since her last
reflection go to the model (anima.infra.llm, prompt EXTERNALIZER), its reflection is checked (the
echo guard, anima.stream.echo) and appended as hers, by "externalize", its record carrying "upto"
(the last line it read) so that no line is reflected on twice and the reflection itself
never. The model's list of actions decides nothing: the decision pass below reads the
reflection's lines like any of hers, and a listed action its line does not state is
dead-lettered as unjustified. internalize's entries narrate
events: nothing in them is ever a decision, and nothing inside a quotation ever is.

Rules backend: a decision is one of her explicit phrases (anima.stream.decisions), outside
any quotation, found by what it looks like. A decision whose TEXT or NAME holds a bidi
control (U+202A-202E, U+2066-2069, U+200E, U+200F, U+061C) is dead-lettered, "unjustified":
shown in another order than it is compared in, it could show others' words as hers.

reply is answered from the event: the latest internalized message whose speaker is NAME
(compared as internalize keys it: folded, any case) gives the trace id, the scene, the
event id and params.to, the speaker as the event named them (its record's "from"); nobody
of that name has spoken -> unjustified.

Every action's params.cites = {"gen", "lines": [n]} names the line that decided it; `justify`
re-reads that line before the action is queued: it must lie in a think record whose lines
are unchanged, and say, outside quotation, the very decision. Otherwise the action goes to
dead_letter/ with why "unjustified: ...".

Once per decision: the action id is made of the record's time, gen and line, so it is the
same however often the line is read; an id already in action_queue/ (waiting, claimed,
done) or dead_letter/ is not queued again. pipeline/externalize.journal gets one line per
decision acted on; pipeline/externalize.cursor {"gen", "line"} the last line read. A crash
between queueing and moving the cursor re-reads the line and finds its action there.
"""

import json
import os

from anima.infra import clock, fs, jsontext, phrases
from anima.infra.text import BIDI
from anima.pipeline import queues
from anima.stream import bookkeeping
from anima.stream.decisions import COMMANDS, decisions
from anima.stream.now import Stream
from anima.stream.quoting import NAME_MAX, fold, speaker_key, split

BY = "anima externalize"
READ_RECORDS = 40  # a reflection reads at most the last 40 entries since the last one
READ_CHARS = 12000  # ... and their last 12,000 characters
REFLECTION_LINES = 12
SCHEMA = {
    "type": "object", "required": ["reflection", "actions"],
    "properties": {
        "reflection": {"type": "array", "maxItems": REFLECTION_LINES, "items": {"type": "string", "maxLength": 500}},
        "actions": {"type": "array", "maxItems": REFLECTION_LINES, "items": {
            "type": "object", "required": ["command", "text", "line"],
            "properties": {"command": {"type": "string", "enum": list(COMMANDS)},
                           "to": {"type": "string", "maxLength": 80}, "topic": {"type": "string", "maxLength": 80},
                           "text": {"type": "string", "maxLength": 2000}, "line": {"type": "integer", "minimum": 0}}}},
    },
}

HERS = ("think", "externalize")  # the records whose lines are her own words


class View:
    """What pipeline/stream.jsonl says: records by gen, the current gen, who spoke last;
    read incrementally (one process may run many times)."""

    def __init__(self, stream: Stream):
        self.stream = stream
        self.records_read = bookkeeping.Reader(stream.book)
        self._start()

    def _start(self) -> None:
        self.gen = 0
        self.records: list[dict] = []  # her records (think, externalize) in order
        self.read: list[dict] = []  # every record of lines, in order
        self.by_gen: dict[int, list[dict]] = {}
        self.spoke: dict[str, dict] = {}  # speaker key -> latest internalized message record
        self.reflected = (-1, 0)  # the last line a reflection of hers was about
        self._now = None

    def refresh(self) -> None:
        self._now = None
        records, replaced = self.records_read.read()
        if replaced:  # the bookkeeping was replaced: what was read of it stands for nothing
            self._start()
        for record in records:
            if not isinstance(record.get("gen"), int):
                continue
            self.gen = max(self.gen, record["gen"])  # a late record keeps its older one
            if bookkeeping.span(record) is None:
                continue
            self.read.append(record)
            if record.get("by") in HERS:
                self.records.append(record)
                self.by_gen.setdefault(record["gen"], []).append(record)
                upto = record.get("upto")
                if record["by"] == "externalize" and isinstance(upto, list) and len(upto) == 2 \
                        and all(isinstance(n, int) for n in upto):
                    self.reflected = max(self.reflected, (upto[0], upto[1]))
            elif record.get("by") == "internalize" and record.get("source_type") == "message" \
                    and isinstance(record.get("speaker"), str) and isinstance(record.get("trace_id"), str):
                self.spoke[record["speaker"]] = record

    def block(self, record: dict) -> list[str] | None:
        """The lines of a record as they still are (no line ends), or None if changed or gone."""
        if self._now is None:  # (a record of an earlier generation may be kept in it by a roll)
            self._now = self.stream.text().splitlines(keepends=True)
        lines = bookkeeping.block(self.stream, record, self.gen, self._now)
        return None if lines is None else [x.rstrip("\n") for x in lines]

    def hers(self, gen: int, n: int) -> str | None:
        """Line `n` of generation `gen` if it is hers and still there, else None."""
        for record in self.by_gen.get(gen, ()):
            first, last = record["lines"]
            if first <= n <= last:
                lines = self.block(record)
                return None if lines is None else lines[n - first]
        return None


def justify(view: View, payload: dict) -> str | None:
    """Why an action is unjustified (its citation does not hold), or None if it is justified:
    params.cites = {"gen", "lines": [n]} must name a line of hers (a think record whose lines
    are unchanged) that states, outside any quotation, this very decision."""
    params = payload.get("params") if isinstance(payload, dict) else None
    cites = params.get("cites") if isinstance(params, dict) else None
    if not isinstance(cites, dict):
        return "no citation"
    gen, lines = cites.get("gen"), cites.get("lines")
    if not (isinstance(gen, int) and isinstance(lines, list) and lines
            and all(isinstance(n, int) and not isinstance(n, bool) for n in lines)):
        return "a citation is {\"gen\": N, \"lines\": [N, ...]}"
    command = payload.get("command")
    for n in lines:
        line = view.hers(gen, n)
        if line is None:
            return f"line {n} of gen {gen} is not hers, or no longer there"
        for d in decisions(line):
            if d["command"] != command or d["text"] != params.get("text"):
                continue
            if command == "reply" and speaker_key(d["name"]) != speaker_key(str(params.get("to", ""))):
                continue
            if command == "memory.write" and d["topic"] != params.get("topic"):
                continue
            return None
    return "the cited line does not state this decision outside quotation"


class Externalizer:
    def __init__(self, home, cfg=None, backend: str | None = None):
        self.home = home
        self.cfg = cfg
        self.backend = backend if backend is not None else cfg["llm.backend"] if cfg is not None else "rules"
        self.stream = Stream(home)
        self.view = View(self.stream)
        self.cursor_path = home.path("pipeline", "externalize.cursor")
        self.journal_path = home.path("pipeline", "externalize.journal")
        self.actions = queues.Queue(home, "action")
        self._journal_ids: set[str] | None = None

    def cursor(self) -> tuple[int, int]:
        try:
            c = jsontext.loads(fs.read_text(self.cursor_path) or "")
            return int(c["gen"]), int(c["line"])
        except (ValueError, KeyError, TypeError):
            return -1, 0

    def reflected(self) -> tuple[int, int]:
        """The last line reflected on: by the cursor file (a reflection that came to nothing
        moves it too) or by her last reflection's record."""
        try:
            c = jsontext.loads(fs.read_text(self.cursor_path) or "")["reflected"]
            mark = (int(c[0]), int(c[1]))
        except (ValueError, KeyError, TypeError, IndexError):
            mark = (-1, 0)
        return max(mark, self.view.reflected)

    def action_for(self, record: dict, n: int, d: dict, now: float) -> tuple[dict, str | None]:
        """The action envelope a decision makes, and why it is unjustified (None: it is not)."""
        params = {"text": d["text"]}
        trace = None
        why = None
        if d["command"] == "reply":
            key = speaker_key(d["name"])
            heard = self.view.spoke.get(key)
            params = {"to": d["name"], "text": d["text"]}
            if heard is None:
                why = f"nobody called {fold(d['name'], NAME_MAX)!r} has spoken to me"
            else:
                trace = heard["trace_id"]
                # as the host named them (a record before "from" was kept: her key for them)
                params["to"] = heard["from"] if isinstance(heard.get("from"), str) else key
                for field, name in (("scene", "scene"), ("event", "in_reply_to")):
                    if isinstance(heard.get(field), str):
                        params[name] = heard[field]
        elif d["command"] == "memory.write":
            params = {"topic": d["topic"], "text": d["text"]}
        params["cites"] = {"gen": record["gen"], "lines": [n]}
        doc = queues.envelope("action", "externalize", {"command": d["command"], "params": params}, "act",
                              trace, now=now)
        return doc, why

    def run(self, now: float, emit=None) -> dict:
        """Act on every decision of hers since the cursor, at `now`; return counts."""
        counts = {"queued": 0, "unjustified": 0, "already": 0}
        self._journal_ids = None
        with fs.locked(self.cursor_path, what="anima externalize"):
            self.view.refresh()
            cgen, cline = self.cursor()
            last = (cgen, cline)
            reflected = None
            if self.backend != "rules":
                reflected = self.reflect(max(self.reflected(), last), now, counts)
                self.view.refresh()
            with fs.batch():  # the journal's lines synced once, before the cursor moves past them
                for record in self.view.records:
                    first, end = record["lines"]
                    if (record["gen"], end) <= (cgen, cline):
                        continue
                    lines = self.view.block(record)
                    if lines is not None:
                        for n in range(max(first, cline + 1 if record["gen"] == cgen else first), end + 1):
                            for k, d in enumerate(decisions(lines[n - first])):
                                self._act(record, n, k, d, now, counts, emit)
                    last = max(last, (record["gen"], end))
            if last != (cgen, cline) or reflected is not None:
                mark = {"gen": last[0], "line": last[1]}
                if reflected is not None or self.reflected() > (-1, 0):
                    mark["reflected"] = list(max(reflected or (-1, 0), self.reflected()))
                fs.atomic_write(self.cursor_path, json.dumps(mark) + "\n")
        return counts

    # --- reflection (a model backend) ----------------------------------------------------

    def reflect_now(self, now: float, again: bool = False) -> tuple[int, int] | None:
        """Reflect without acting on the decisions (anima tick's reflect step; the decisions are
        the externalize step's): on what is new since her last reflection, or with `again` (her
        timer), on her recent stream even when nothing is. Return what `reflect` returns."""
        with fs.locked(self.cursor_path, what="anima externalize"):
            self.view.refresh()
            cursor = self.cursor()
            reflected = self.reflect(max(self.reflected(), cursor), now, {"unjustified": 0}, again)
            if reflected is not None:
                mark = {"gen": cursor[0], "line": cursor[1], "reflected": list(max(reflected, self.reflected()))}
                fs.atomic_write(self.cursor_path, json.dumps(mark) + "\n")
        return reflected

    def reflect(self, start: tuple[int, int], now: float, counts: dict, again: bool = False) -> tuple[int, int] | None:
        """Let her reflect on the lines after `start` (all of them, not only hers), append the
        reflection to now.md as hers, and dead-letter every action the model listed that the
        reflection does not state. With `again` and nothing new, she reads her last entries
        (her reflections too) once more. Return the last line reflected on, or None when there
        was nothing to read or the rules take over (the budget). Unavailable: nothing changed."""
        from anima.infra import llm
        from anima.stream import context, echo

        fresh = [r for r in self.view.read if (r["gen"], r["lines"][1]) > start and r.get("by") != "externalize"]
        if not fresh and again:
            fresh = [r for r in self.view.read if r["gen"] == self.view.gen][-READ_RECORDS:]
        if not fresh:
            return None
        upto = max((r["gen"], r["lines"][1]) for r in fresh)
        texts, quoted, speakers = [], [], []
        for record in fresh[-READ_RECORDS:]:
            lines = self.view.block(record)
            if lines is None:
                continue
            texts.append("\n".join(lines).strip())
            if record.get("by") == "internalize":
                for line in lines:
                    parts = split(line)
                    quoted.extend(parts[1] if parts is not None else [line])
                if isinstance(record.get("speaker"), str) and record["speaker"] not in speakers:
                    speakers.append(record["speaker"])
        if not texts:
            return None
        read = "\n\n".join(texts)[-READ_CHARS:]
        words = echo.Words(quoted)
        lang = self.cfg["core.lang"]
        none = phrases.word(lang, "internalize", "none")
        topics: list[str] = []
        for who in speakers or [None]:
            topics += [t for t in context.relevant(self.home, who, read) if t not in topics]
        state = (fs.read_text(self.home.path("self", "state.md")) or "").strip()[:2000]
        variables = {"lines": read, "state": state or none, "memories": context.knowing(self.home, topics) or none,
                     "speakers": ", ".join(speakers) or none, "max_lines": str(REFLECTION_LINES)}

        def check(answer: dict) -> str | None:
            lines = answer["reflection"]
            for i, line in enumerate(lines):
                if not line.strip():
                    return f"reflection[{i}] is empty"
                problem = echo.line_problem(line.strip(), words, decisions_allowed=True)
                if problem:
                    return f"reflection[{i}]: {problem}"
            for k, action in enumerate(answer["actions"]):
                if not 0 <= action["line"] < len(lines):
                    return f"actions[{k}].line {action['line']} is not a line of the reflection"
            return None

        try:
            answer = llm.ask(self.home, self.cfg, "externalizer", lang, variables, SCHEMA, now, self.backend,
                             check)
        except llm.Invalid as e:
            doc = queues.envelope("reflection", "externalize", {"upto": list(upto), "raw": e.raw}, "reflection",
                                  now=now)
            doc["envelope"]["id"] = f"reflection_g{upto[0]}l{upto[1]}"
            if not os.path.exists(os.path.join(self.actions.dead, doc["envelope"]["id"] + ".json")):
                bury(self.actions, doc, f"{e}; raw answer: {e.raw}", now, queue_name=None)
            return upto
        if answer is None:
            return None
        lines = [line.strip() for line in answer["reflection"]]
        if not lines:
            return upto  # she had nothing to say: silence is normal
        record = self.stream.append("\n".join(lines), "externalize", now, extra={"upto": list(upto)})
        self.view.refresh()
        stated = self.view.block(record) or []
        at = int(clock.parse(record["at"], "at"))
        for k, action in enumerate(answer["actions"]):
            n = record["lines"][0] + 2 + action["line"]
            line = stated[n - record["lines"][0]] if n - record["lines"][0] < len(stated) else ""
            if any(_same(d, action) for d in decisions(line)):
                continue  # the decision pass acts on it, from the line
            params = {key: action[key] for key in ("to", "topic", "text") if key in action}
            params["cites"] = {"gen": record["gen"], "lines": [n]}
            doc = queues.envelope("action", "externalize", {"command": action["command"], "params": params}, "act",
                                  now=now)
            doc["envelope"]["id"] = f"act_{at * 10**9:020d}g{record['gen']}l{n}m{k}"
            bury(self.actions, doc, f"unjustified: line {n} of gen {record['gen']} (her reflection) does not "
                                    "state this decision", now)
            counts["unjustified"] += 1
            self._journal(record, n, doc["envelope"]["id"], "unjustified", now)
        return upto

    def _act(self, record, n, k, d, now, counts, emit) -> None:
        doc, why = self.action_for(record, n, d, now)
        try:
            at = clock.parse(record.get("at"), "at")
        except Exception:
            at = 0
        doc["envelope"]["id"] = f"act_{int(at) * 10**9:020d}g{record['gen']}l{n}d{k}"
        name = doc["envelope"]["id"] + ".json"
        dead = os.path.exists(os.path.join(self.actions.dead, name))
        if dead or self.actions.has(name):
            counts["already"] += 1
            if doc["envelope"]["id"] not in self._journaled():  # a run killed between the two
                buried = dead and _why(os.path.join(self.actions.dead, name + ".reason")).startswith("unjustified")
                self._journal(record, n, doc["envelope"]["id"], "unjustified" if buried else "queued", now)
            return
        if why is None and any(BIDI.search(d.get(k) or "") for k in ("text", "name")):
            # a text shown in another order than it is read could show others' words as hers
            why = "the decision's text holds a bidi control (U+202A-202E, U+2066-2069, U+200E, U+200F, U+061C)"
        if why is None:
            why = justify(self.view, doc["payload"])
        if why is not None:
            bury(self.actions, doc, "unjustified: " + why, now)
            counts["unjustified"] += 1
        else:
            self.actions.deliver(doc)
            counts["queued"] += 1
            if emit:
                emit(json.dumps(doc, ensure_ascii=False) + "\n")
        self._journal(record, n, doc["envelope"]["id"], "unjustified" if why else "queued", now)

    def _journaled(self) -> set[str]:
        """The action ids the journal names (read once a run, on the first decision already made)."""
        if self._journal_ids is None:
            entries, _ = fs.new_json_lines(self.journal_path, 0)
            self._journal_ids = {e.get("action") for e in entries or ()}
        return self._journal_ids

    def _journal(self, record, n, action, outcome, now) -> None:
        fs.append(self.journal_path, json.dumps({"gen": record["gen"], "line": n, "action": action,
                                                 "outcome": outcome, "at": clock.iso(now)}) + "\n")
        if self._journal_ids is not None:
            self._journal_ids.add(action)


TAIL_BYTES = 65536


def last_decision(home) -> float | None:
    """When she last decided something: the "at" of the last line of
    pipeline/externalize.journal whose outcome is "queued" (a decision of hers that became an
    action; an unjustified one decided nothing). None when she never has. Reads the journal's
    last 64 KiB, all of it only when they hold no such line."""
    path = home.path("pipeline", "externalize.journal")
    st = fs.status(path)
    if st is None:
        return None
    for start in (max(0, st.st_size - TAIL_BYTES), 0):
        lines, _ = fs.new_json_lines(path, start)
        for line in reversed(lines or []):
            if line.get("outcome") == "queued" and isinstance(line.get("at"), str):
                try:
                    return clock.parse(line["at"], "at")
                except Exception:  # a hand-edited line: an older one says it
                    continue
        if start == 0:
            break
    return None


def _why(reason_path: str) -> str:
    try:
        return str(jsontext.loads(fs.read_text(reason_path) or "").get("why", ""))
    except (ValueError, AttributeError):
        return ""


def _same(d: dict, action: dict) -> bool:
    """Whether a decision stated in a line is the action a model listed."""
    if d["command"] != action["command"] or d["text"] != action.get("text"):
        return False
    if d["command"] == "reply":
        return speaker_key(d["name"]) == speaker_key(str(action.get("to", "")))
    if d["command"] == "memory.write":
        return d["topic"] == action.get("topic")
    return True


def bury(queue: queues.Queue, doc: dict, why: str, now: float, queue_name: str | None = "") -> str:
    """Put an action straight into dead_letter/ beside its reason (the reason first). A
    reflection that came to nothing names no queue (`anima queue retry` cannot put it back)."""
    name = doc["envelope"]["id"] + ".json"
    fs.ensure_dir(queue.dead)
    reason = {"what": doc["payload"].get("command", doc["envelope"]["source_type"]), "why": why,
              "when": clock.iso(now), "by": BY}
    if queue_name is not None:
        reason["queue"] = queue_name or queue.name
    fs.atomic_write(os.path.join(queue.dead, name + ".reason"), json.dumps(reason, ensure_ascii=False) + "\n")
    fs.atomic_write(os.path.join(queue.dead, name), json.dumps(doc, ensure_ascii=False) + "\n")
    return name


def check_and_queue(home, doc: dict, now: float, view: View | None = None) -> str:
    """Queue an action that came from anywhere only if its citation holds; else dead_letter.
    Return "queued" or "unjustified"."""
    if view is None:
        view = View(Stream(home))
        view.refresh()
    queue = queues.Queue(home, "action")
    why = justify(view, doc.get("payload"))
    if why is not None:
        bury(queue, doc, "unjustified: " + why, now)
        return "unjustified"
    queue.deliver(doc)
    return "queued"
