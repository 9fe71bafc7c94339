"""`anima externalize` (Pool A -> Pool B): only her own decisions become actions.

It reads what was appended to now.md since its cursor, by way of the records of
pipeline/stream.jsonl: only the lines of a record by "think" whose sha256 still matches the
lines in now.md (or in the archive, after a roll) are hers. internalize's entries narrate
events: nothing in them is ever a decision, and nothing inside a quotation ever is.

Rules backend: a decision is an explicit phrase at the start of a sentence of one of her
lines (the line's start, or after . ! ? 。！？), outside any quotation (“…” 「…」 "…"), its
TEXT running to the end of the line (a TEXT wholly inside one pair of quotation marks is
taken without them):

    I decide to reply to NAME: TEXT           我决定回复NAME：TEXT      -> reply
    I decide to write in my diary: TEXT       我决定写日记：TEXT        -> diary.write
    I decide to remember about TOPIC: TEXT    我决定记住关于TOPIC：TEXT -> memory.write
    I decide to note: TEXT                    我决定记一笔：TEXT        -> note.add
    I decide to update my state: TEXT         我决定更新状态：TEXT      -> state.update

(the colon ':' or '：'). No decision, no action: silence is normal.

reply is answered from the event: the latest internalized message whose speaker is NAME
(compared as internalize keys it: folded, any case) gives the trace id, the scene and the
event id; nobody of that name has spoken -> unjustified.

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

import hashlib
import json
import os
import re

from anima import clock, fs, queues
from anima.internalize import NAME_MAX, fold
from anima.stream import Stream

BY = "anima externalize"

_TEXT = r"\s*[:：]\s*(?P<text>.+)"
_NAMEPAT = r"(?P<name>[^:：]{1,80}?)"
_TOPICPAT = r"(?P<topic>[A-Za-z0-9][A-Za-z0-9._-]*)"
PHRASES = [  # (regex at a sentence start, command)
    (re.compile(r"I decide to reply to " + _NAMEPAT + _TEXT), "reply"),
    (re.compile(r"I decide to write in my diary" + _TEXT), "diary.write"),
    (re.compile(r"I decide to remember about " + _TOPICPAT + _TEXT), "memory.write"),
    (re.compile(r"I decide to note" + _TEXT), "note.add"),
    (re.compile(r"I decide to update my state" + _TEXT), "state.update"),
    (re.compile(r"我决定回复" + _NAMEPAT + _TEXT), "reply"),
    (re.compile(r"我决定写日记" + _TEXT), "diary.write"),
    (re.compile(r"我决定记住关于" + _TOPICPAT + _TEXT), "memory.write"),
    (re.compile(r"我决定记一笔" + _TEXT), "note.add"),
    (re.compile(r"我决定更新状态" + _TEXT), "state.update"),
]
_STARTS = ("I decide to ", "我决定")
_OPENERS = {"“": "”", "「": "」", "『": "』", "‘": "’", '"': '"', "＂": "＂"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}
_ENDS = ".!?。！？"


def sentence_starts(line: str) -> list[int]:
    """Positions in `line` where a sentence starts outside any quotation."""
    starts = []
    stack: list[str] = []
    expect = True  # the line's start (after its indent) starts a sentence
    for i, ch in enumerate(line):
        if stack:
            if ch == stack[-1]:
                stack.pop()
                if not stack:
                    expect = False
            elif ch in _OPENERS and ch != '"' and ch != "＂":
                stack.append(_OPENERS[ch])
            continue
        if ch.isspace():
            continue
        if ch in _OPENERS:
            stack.append(_OPENERS[ch])
            expect = False
            continue
        if ch in _CLOSERS:  # a closing mark with no opening: what follows may be anything
            expect = False
            continue
        if expect:
            starts.append(i)
        expect = ch in _ENDS
    return starts


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and _OPENERS.get(text[0]) == text[-1] and text[-1] not in text[1:-1]:
        return text[1:-1].strip()
    return text


def decisions(line: str) -> list[dict]:
    """Every decision a line of hers states: {"command", and "text", "name" or "topic"}."""
    if "决定" not in line and "decide" not in line:
        return []
    found = []
    for start in sentence_starts(line):
        rest = line[start:]
        if not rest.startswith(_STARTS):
            continue
        for pattern, command in PHRASES:
            m = pattern.match(rest)
            if not m:
                continue
            text = _unquote(m["text"])
            if not text:
                break
            decision = {"command": command, "text": text}
            if command == "reply":
                name = _unquote(m["name"])
                if not name:
                    break
                decision["name"] = name
            if command == "memory.write":
                decision["topic"] = m["topic"]
            found.append(decision)
            break
    return found


def speaker_key(name: str) -> str:
    return fold(name, NAME_MAX).casefold()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class View:
    """What pipeline/stream.jsonl says: records by gen, the current gen, who spoke last;
    read incrementally (one process may run many times)."""

    def __init__(self, stream: Stream):
        self.stream = stream
        self.offset = 0
        self.gen = 0
        self.records: list[dict] = []  # think records in order
        self.by_gen: dict[int, list[dict]] = {}
        self.spoke: dict[str, dict] = {}  # speaker key -> latest internalized message record
        self._now = None

    def refresh(self) -> None:
        self._now = None
        records, offset = fs.new_json_lines(self.stream.book, self.offset)
        if records is None:  # the bookkeeping was replaced: read it all again
            self.__init__(self.stream)
            records, offset = fs.new_json_lines(self.stream.book, 0)
        self.offset = offset
        for record in records:
            if not isinstance(record.get("gen"), int):
                continue
            self.gen = record["gen"]
            lines = record.get("lines")
            if not (isinstance(lines, list) and len(lines) == 2 and all(isinstance(n, int) for n in lines)):
                continue
            if record.get("by") == "think":
                self.records.append(record)
                self.by_gen.setdefault(record["gen"], []).append(record)
            elif record.get("by") == "internalize" and record.get("source_type") == "message" \
                    and isinstance(record.get("speaker"), str) and isinstance(record.get("trace_id"), str):
                self.spoke[record["speaker"]] = record

    def block(self, record: dict) -> list[str] | None:
        """The lines of a record as they still are (no line ends), or None if changed or gone."""
        first, last = record["lines"]
        if first < 1 or last < first:
            return None
        if record["gen"] == self.gen:
            if self._now is None:
                self._now = self.stream.text().splitlines(keepends=True)
            lines = self._now[first - 1:last]
            return [x.rstrip("\n") for x in lines] if _sha("".join(lines)) == record.get("sha256") else None
        day = str(record.get("at", ""))[:10]
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
            return None
        archived = (fs.read_text(self.stream.archive_path(day)) or "").splitlines(keepends=True)
        size = last - first + 1
        for i in range(len(archived) - size + 1):
            if archived[i].startswith("## ") and _sha("".join(archived[i:i + size])) == record.get("sha256"):
                return [x.rstrip("\n") for x in archived[i:i + size]]
        return None

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
    def __init__(self, home):
        self.home = home
        self.stream = Stream(home)
        self.view = View(self.stream)
        self.cursor_path = home.path("pipeline", "externalize.cursor")
        self.journal_path = home.path("pipeline", "externalize.journal")
        self.actions = queues.Queue(home, "action")
        self._journal_ids: set[str] | None = None

    def cursor(self) -> tuple[int, int]:
        try:
            c = json.loads(fs.read_text(self.cursor_path) or "")
            return int(c["gen"]), int(c["line"])
        except (ValueError, KeyError, TypeError):
            return -1, 0

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
                params["to"] = key
                for field, name in (("scene", "scene"), ("event", "in_reply_to")):
                    if isinstance(heard.get(field), str):
                        params[name] = heard[field]
        elif d["command"] == "memory.write":
            params = {"topic": d["topic"], "text": d["text"]}
        params["cites"] = {"gen": record["gen"], "lines": [n]}
        doc = queues.envelope("action", "externalize", {"command": d["command"], "params": params}, "act",
                              trace, now=now)
        return doc, why

    def run(self, now: float | None = None, emit=None) -> dict:
        """Act on every decision of hers since the cursor; return counts."""
        now = clock.now() if now is None else now
        counts = {"queued": 0, "unjustified": 0, "already": 0}
        self._journal_ids = None
        with fs.locked(self.cursor_path, what="anima externalize"):
            self.view.refresh()
            cgen, cline = self.cursor()
            last = (cgen, cline)
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
            if last != (cgen, cline):
                fs.atomic_write(self.cursor_path, json.dumps({"gen": last[0], "line": last[1]}) + "\n")
        return counts

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
        if why is None:
            why = justify(self.view, doc["payload"])
        if why is not None:
            bury(self.actions, doc, "unjustified: " + why)
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


def _why(reason_path: str) -> str:
    try:
        return str(json.loads(fs.read_text(reason_path) or "").get("why", ""))
    except (ValueError, AttributeError):
        return ""


def bury(queue: queues.Queue, doc: dict, why: str) -> str:
    """Put an action straight into dead_letter/ beside its reason (the reason first)."""
    name = doc["envelope"]["id"] + ".json"
    fs.ensure_dir(queue.dead)
    reason = {"what": doc["payload"].get("command"), "why": why, "when": clock.iso(clock.now()), "by": BY,
              "queue": queue.name}
    fs.atomic_write(os.path.join(queue.dead, name + ".reason"), json.dumps(reason, ensure_ascii=False) + "\n")
    fs.atomic_write(os.path.join(queue.dead, name), json.dumps(doc, ensure_ascii=False) + "\n")
    return name


def check_and_queue(home, doc: dict, view: View | None = None) -> str:
    """Queue an action that came from anywhere only if its citation holds; else dead_letter.
    Return "queued" or "unjustified"."""
    if view is None:
        view = View(Stream(home))
        view.refresh()
    queue = queues.Queue(home, "action")
    why = justify(view, doc.get("payload"))
    if why is not None:
        bury(queue, doc, "unjustified: " + why)
        return "unjustified"
    queue.deliver(doc)
    return "queued"
