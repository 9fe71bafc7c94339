"""`anima internalize` (Pool B -> Pool A): each event becomes her first-person experience.

For each message_queue item (claimed, oldest first) or one envelope on stdin, it reads the
event, the tail of now.md and its bookkeeping, state.md and the memories relevant to the
event (by speaker: about_<speaker>.md or a topic naming the speaker; by words: a topic named
by a word of the text), composes a narrative with the rules backend (deterministic templates
in core.lang) and appends it to now.md through Stream.append, by "internalize".

Each kind of event has its meaning: a message is who said what, when she last heard from
them; a system event is told from its fields (system_fields); a rhythm trigger is her sense
of time, late when it fired past its minute, with who waits for her answer and a promise
(rhythm); a reflection is a thought offered to her, hers to consider and never her decision
(externalize acts only on think and externalize records); an action result is her deed.

Others' words are always quoted, “…” in English, 「…」 in Chinese, and neutralised first
(anima.stream.quoting); so are speaker names and scenes unless one plain word. Her own
action results are narrated as her deeds, with what they were ("I replied to Alice: “See
you at six.”.", `narrate_action`), never as an interruption of her thought and never with a
program's output as someone answering her, only when the result is the one
anima dispatch wrote: its event named event_<action>_done or event_<action>_failedN, its "ok"
saying that outcome, and pipeline/dispatch.journal holding that outcome for that action
(anima.pipeline.dispatch.forged); else the event is dead-lettered with the reason: only
anima dispatch tells of what she did. Text in them that came from outside (an error, a command's output) is quoted.

With a model backend (anima.infra.llm, prompt INTERNALIZER) the sentence of what happened stays the
rules' and the model adds her experience on the lines after it, checked by the echo guard
(anima.stream.echo): no heading, no decision, no words of others outside quotation. The model is
asked before the lock is taken, and the event looked up again under it.

Once per event. The key is payload.event (the inbox event preprocess carried on), else the
envelope id. Under the lock of now.md, in one step: the key is looked up in the records of
pipeline/stream.jsonl (each internalize record carries "event"); if absent,
pipeline/internalize.journal gets {"event", "gen", "lines", "sha256", "at"} (what is about to
be appended), then now.md the entry, then stream.jsonl the record. A crash after the journal
line but before the record is resolved by the next run under the same lock: the journal's
lines still there with that sha256 (in now.md, or in the archive after a roll) means the
entry is in: the record is written and nothing is appended; otherwise it is narrated.
"""

import json
import os
import re
import time

from anima.infra import clock, fs, phrases
from anima.infra.errors import AnimaError, DataError
from anima.pipeline import dispatch, queues
from anima.pipeline.rhythm import LABELS
from anima.self import memories
from anima.self.memories import TOPIC
from anima.stream import bookkeeping, context
from anima.stream.now import Stream, clean, heading
from anima.stream.quoting import NAME_MAX, fold, is_quoted, name, nest, quote, speaker_key, unquote

BY = "internalize"
BATCH = 64  # events lived between two syncs of the journal and the bookkeeping


# --- what she knows: bookkeeping, state, memories -----------------------------------------

class Book:
    """What pipeline/stream.jsonl and internalize.journal say, read incrementally."""

    def __init__(self, stream: Stream):
        self.stream = stream
        self.journal_path = stream.home.path("pipeline", "internalize.journal")
        self.records = bookkeeping.Reader(stream.book)
        self.journal = bookkeeping.Reader(self.journal_path)
        self.narrated: set[str] = set()
        self.heard: dict[str, float] = {}  # speaker key -> when last heard (event time)
        self.names: dict[str, str] = {}  # speaker key -> how she named them last
        self.waiting: dict[str, dict] = {}  # speaker key -> {"name", "since", "n"}: not yet answered
        self.last: dict | None = None
        self.gen = 0
        self.begun: dict[str, dict] = {}  # event -> its last journal line

    def refresh(self) -> None:
        records, replaced = self.records.read()
        if replaced:  # the bookkeeping was replaced: what was read of it stands for nothing
            self.narrated, self.heard, self.names, self.waiting, self.last, self.gen = set(), {}, {}, {}, None, 0
        for record in records:
            if isinstance(record.get("gen"), int):
                self.gen = max(self.gen, record["gen"])  # a late record keeps its older one
            self.last = record
            if isinstance(record.get("event"), str):
                self.narrated.add(record["event"])
            if isinstance(record.get("speaker"), str) and isinstance(record.get("happened"), str):
                try:
                    when = clock.parse(record["happened"], "happened", DataError)
                except DataError:
                    continue
                key = record["speaker"]
                self.heard[key] = max(when, self.heard.get(key, when))
                if isinstance(record.get("name"), str):
                    self.names[key] = record["name"]
                if record.get("source_type") == "message":
                    name_ = record.get("name") if isinstance(record.get("name"), str) else key
                    owed = self.waiting.setdefault(key, {"since": when, "last": when, "n": 0})
                    owed.update(name=name_, n=owed["n"] + 1, since=min(owed["since"], when),
                                last=max(owed["last"], when))
            to = answered(record)
            if to is not None:
                self.waiting.pop(to, None)

    def pending(self, now: float) -> list[dict]:
        """Those she has not answered since their message, as heard by `now` and last heard
        from within WAITING_HOURS of it, longest waiting first."""
        return sorted((dict(w, key=k) for k, w in self.waiting.items()
                       if w["since"] <= now and now - w["last"] <= WAITING_HOURS * 3600),
                      key=lambda w: (w["since"], w["key"]))

    def journaled(self, key: str) -> dict | None:
        """The last journal line for `key`, read incrementally like the records."""
        entries, replaced = self.journal.read()
        if replaced:
            self.begun = {}
        for entry in entries:
            if isinstance(entry.get("event"), str):
                self.begun[entry["event"]] = entry
        return self.begun.get(key)

    def begin(self, key: str, record: dict) -> None:
        entry = {"event": key, **{k: record[k] for k in ("gen", "lines", "sha256", "at")}}
        fs.append(self.journal_path, json.dumps(entry, ensure_ascii=False) + "\n")

    def landed(self, entry: dict) -> bool:
        """Whether the journaled entry's lines are in now.md (or were archived by a roll)."""
        return bookkeeping.block(self.stream, entry, self.gen) is not None


def answered(record: dict) -> str | None:
    """The speaker key a record says she replied to: the record of a reply deed (source_type
    action, command reply, "to" in the record or its params) that did not fail; else None."""
    if record.get("source_type") != "action" or record.get("command") != "reply" or record.get("ok") is False:
        return None
    params = record.get("params") if isinstance(record.get("params"), dict) else {}
    to = record.get("to", params.get("to"))
    return speaker_key(to) if isinstance(to, str) and to.strip() else None


# --- what happened, in her words ------------------------------------------------------------

_COMMAND = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")


def deed(payload: dict) -> dict:
    """What a record keeps of her action's result: its command, whether it was done, the
    topic of a memory she wrote (what consolidate tells of her day from), and to whom she
    replied (as internalize keys a speaker)."""
    command = payload.get("command")
    out = {"command": command if isinstance(command, str) and _COMMAND.fullmatch(command) else None,
           "ok": payload.get("ok") is True}
    result = payload.get("result") if isinstance(payload.get("result"), dict) else {}
    path = result.get("path")
    if out["command"] == "memory.write" and isinstance(path, str) and path.endswith(".md") \
            and TOPIC.fullmatch(os.path.basename(path)[:-3]):
        out["topic"] = os.path.basename(path)[:-3]
    to = _params(payload).get("to")
    if out["command"] == "reply" and isinstance(to, str) and to.strip():
        out["to"] = speaker_key(to)
    return out


def _params(payload: dict) -> dict:
    """The params a result says the action had (to, text, topic, scene), strings only."""
    params = payload.get("params") if isinstance(payload.get("params"), dict) else {}
    return {k: v for k, v in params.items() if isinstance(v, str) and v.strip()}


def narrate_action(payload: dict, lang: str, qmax: int, names: dict | None = None) -> list[str]:
    """Her action's result as her own deed, with what it was: to whom she replied and what
    she said, what she wrote (her words quoted, as anyone's are); a failure as her attempt
    and its reason. `names`: how she names a speaker, by key (else the name as the action has
    it). What a command printed is told, quoted, only for a command that is none of her known
    deeds: a deed told with its content needs no word from the program that carried it out,
    and a program's output is never someone answering her."""
    def say(key, **values):
        return phrases.say(lang, "action", key, **values)

    command = payload.get("command")
    command = command if isinstance(command, str) and _COMMAND.fullmatch(command) else None
    params = _params(payload)
    done, told, trying = (phrases.word(lang, "action", k) for k in ("done", "told", "trying"))
    text = quote(params["text"], lang, qmax) if "text" in params else None
    who = where = None
    if command == "reply" and "to" in params:
        who = (names or {}).get(speaker_key(params["to"])) or name(params["to"], lang)
        where = name(params["scene"], lang) if "scene" in params else None
    result = payload.get("result") if isinstance(payload.get("result"), dict) else {}
    topic = params.get("topic")
    if command == "memory.write" and isinstance(result.get("path"), str) and result["path"].endswith(".md"):
        topic = os.path.basename(result["path"])[:-3]  # the file written says it best
    topic = topic if command == "memory.write" and isinstance(topic, str) and TOPIC.fullmatch(topic) else None
    if payload.get("ok") is True:
        if who and text:
            return [say("replied_in", who=who, where=where, said=text) if where
                    else say("replied", who=who, said=text)]
        if who:  # a record keeps to whom, not the words (consolidate tells her day from it)
            return [say("replied_to", who=who)]
        if topic:
            return [say("memory_said", topic=topic, said=text) if text else say("memory_about", topic=topic)]
        if command in told and text:
            return [told[command].format(said=text)]
        if command in done:
            return [done[command]]
        stdout = result.get("stdout")
        if command and isinstance(stdout, str) and stdout.strip():
            return [say("printed", command=command, stdout=quote(stdout, lang, qmax))]
        return [say("did", command=command) if command else say("did_something")]
    error = payload.get("error")
    error = error if isinstance(error, str) and error.strip() else say("no_reason")
    if who:
        what = say("reply_to_in", who=who, where=where) if where else say("reply_to", who=who)
    elif topic:
        what = say("memory_trying", topic=topic)
    else:
        what = trying[command] if command in trying else say("run", command=command) if command \
            else say("something")
    return [say("failed", what=what, error=quote(error, lang, qmax))]


SYSTEM_TEXT = ("text", "what", "message", "summary")  # what happened, the first of them there
SYSTEM_FIELDS = 8  # other fields told, at most
FIELD_MAX = 100  # characters of a field's value
NOT_TOLD = ("event", "happened")  # what preprocess added


def system_fields(payload: dict) -> tuple[str | None, str | None]:
    """What a system event says happened: its first non-empty SYSTEM_TEXT field, and its other
    plain fields (strings, numbers) as "key: value; ...", in the event's order, at most
    SYSTEM_FIELDS of them, each value cut at FIELD_MAX. Both are others' words: quoted."""
    main_key = next((k for k in SYSTEM_TEXT if isinstance(payload.get(k), str) and payload[k].strip()), None)
    fields = []
    for key, value in payload.items():
        if key == main_key or key in NOT_TOLD:
            continue
        if isinstance(value, str) and value.strip():
            value = fold(value, FIELD_MAX)
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and value == value \
                and abs(value) != float("inf"):
            value = str(value)
        else:
            continue  # an object, a list, true or null: not a plain fact to tell
        fields.append(f"{fold(key, NAME_MAX)}: {value}")
    if len(fields) > SYSTEM_FIELDS:
        fields = fields[:SYSTEM_FIELDS] + ["…"]
    return (payload[main_key] if main_key else None), ("; ".join(fields) or None)


LATE = 60  # seconds after its scheduled minute past which a trigger is told as late
WAITING_HOURS = 24  # a message unanswered longer than this, with nothing since, waits no more
WAITING_SHOWN = 3  # people she has not answered, named in a rhythm entry
PROMISE_TOPICS = 50  # memories looked through for a promise when none of theirs holds one


def _clock(at: float, now: float) -> str:
    """A time as she says it: HH:MM, with the date when it is not today."""
    day = time.localtime(at)[:3] != time.localtime(now)[:3]
    return time.strftime("%Y-%m-%d %H:%M" if day else "%H:%M", time.localtime(at))


def rhythm(home, book: Book, payload: dict, now: float, lang: str) -> tuple[list[str], int, list[str]]:
    """A rhythm trigger as her sense of time: the hour (late if it fired after its minute),
    how long she has decided nothing (rule nudge), the night's putting in order
    (consolidate), and what waits for her: who she has not answered, a promise she made.
    The sentences, how many of them say what happened (a model's experience may stand for
    the rest), and the words in them that are others'."""
    def say(key, **values):
        return phrases.say(lang, "internalize", key, **values)

    theirs: list[str] = []
    moment = payload.get("at") if isinstance(payload.get("at"), str) else None
    at = clock.parse(moment, "payload.at", DataError) if moment else now
    label = payload.get("label") if isinstance(payload.get("label"), str) else payload.get("rule")
    label = fold(label, NAME_MAX) if isinstance(label, str) and label.strip() else ""
    if label and label not in (by_lang.get(lang) for by_lang in LABELS.values()):
        label = name(label, lang)  # a rule's own name: quoted unless one plain word (a file may lie)
        if is_quoted(label):
            theirs.append(unquote(label))
    nudge = payload.get("rule") == "nudge" or "idle_since" in payload
    if nudge:
        label = ""  # what it means is the sentence of her idleness, not a rule's name
    values = {"label": label, "Label": label[:1].upper() + label[1:], "time": _clock(at, now),
              "part": context.part_of_day(at, lang), "now": _clock(now, now)}
    key = "rhythm_late" if now - at > LATE else "rhythm"
    told = [say(key if label else key + "_plain", **values)]
    if nudge:
        since = payload.get("idle_since")
        try:
            idle = clock.parse(since, "payload.idle_since", DataError) if isinstance(since, str) else None
        except DataError:
            idle = None
        told.append(say("idle", since=_clock(idle, now), lasted=context.lasted(now - idle, lang))
                    if idle is not None and idle <= now else say("idle_never"))
    if payload.get("consolidate") is True:
        told.append(say("consolidate"))
    lived = len(told)  # what happened: the hour, her idleness, the night; the rest is what waits
    waiting = book.pending(now)
    if waiting:
        items = [phrases.counted(lang, "internalize", "waiting", w["n"], who=w["name"], time=_clock(w["since"], now))
                 for w in waiting]
        what = phrases.listing(lang, items, WAITING_SHOWN, "others")
        told.append(phrases.counted(lang, "internalize", "unanswered", sum(w["n"] for w in waiting), what=what))
        theirs += [unquote(w["name"]) for w in waiting if is_quoted(w["name"])]
    topics = [t for w in waiting for t in context.relevant(home, w["key"], "")]
    anywhere = [t for t, _ in memories.topics(home)][:PROMISE_TOPICS]
    owed = context.promise(home, topics) or context.promise(home, anywhere)
    if owed:
        told.append(say("promise", topic=owed[0], line=quote(owed[1], lang, 200)))
        theirs.append(owed[1])
    if not waiting and not owed:
        told.append(say("nothing_waiting"))
    return told, lived, theirs


def join(sentences: list[str], lang: str) -> str:
    return phrases.word(lang, "internalize", "join").join(sentences)


def parts(home, book: Book, doc: dict, lang: str, qmax: int) -> tuple[list[str], list[str], dict, list[str]]:
    """The sentences saying what happened (others' words quoted: kept as they are whatever
    backend narrates), the sentences of what the rules can tell about it (time of day, when
    she last heard from the speaker, memories, a promise, her state), the record's fields,
    and the words others said in it (for the echo guard)."""
    def say(key, **values):
        return phrases.say(lang, "internalize", key, **values)

    env, payload = doc["envelope"], doc["payload"]
    kind = env["source_type"]
    happened = payload.get("happened") if isinstance(payload.get("happened"), str) else env["timestamp"]
    at = clock.parse(happened, "payload.happened", DataError)
    extra = {"source_type": kind, "trace_id": env["trace_id"], "happened": clock.iso(at)}
    sentences: list[str] = []
    theirs: list[str] = []
    head = 1
    if kind == "message":
        text, speaker = payload.get("text"), payload.get("speaker")
        if not (isinstance(text, str) and text.strip() and isinstance(speaker, str) and speaker.strip()):
            raise DataError("a message needs \"text\" and \"speaker\" (non-empty strings)")
        who = name(speaker, lang)
        scene = payload.get("scene")
        where = name(scene, lang) if isinstance(scene, str) and scene.strip() else None
        said = quote(text, lang, qmax)
        # a name she may say (a plain word) is hers to use; one that had to be quoted is theirs
        theirs += [text] + [x for x, shown in ((speaker, who), (scene, where)) if is_quoted(shown)]
        sentences.append(say("said_in", who=who, where=where, said=said) if where else say("said", who=who, said=said))
        key = speaker_key(speaker)
        extra["speaker"], extra["name"] = key, who  # how she knows them, how she names them
        extra["from"] = fold(speaker, NAME_MAX)  # as the host named them: where a reply goes, case and all
        extra["said"] = sum(map(is_quoted, (who, where)))  # which quotation of the line is their words
        if where:  # where a reply to this message goes (anima externalize)
            extra["scene"] = fold(scene, NAME_MAX)
        before = book.heard.get(key)
        since = say("first_heard", who=who) if before is None or before > at else \
            say("last_heard", who=who, ago=context.ago(at - before, lang))
        sentences.append(say("it_is", part=context.part_of_day(at, lang)) + since)
        found = context.relevant(home, fold(speaker, NAME_MAX), text)
        if found:
            sentences.append(say("memories", topics=", ".join(found)))
            owed = context.promise(home, found)
            if owed:
                sentences.append(say("promise", topic=owed[0], line=quote(owed[1], lang, 200)))
    elif kind == "rhythm":
        told, head, words = rhythm(home, book, payload, at, lang)
        sentences += told
        theirs += words
        if isinstance(payload.get("rule"), str):
            extra["rule"] = payload["rule"]
        if payload.get("consolidate") is True:
            extra["consolidate"] = True  # she has lived the night rule: tick may put her day in order
    elif kind == "action":
        event = payload.get("event") if isinstance(payload.get("event"), str) and payload["event"] else env["id"]
        why = dispatch.forged(home, event, payload)
        if why:
            raise DataError(f"an action result that is not the one anima dispatch wrote ({why}): "
                            "only anima dispatch tells of what she did")
        sentences.extend(narrate_action(payload, lang, qmax, book.names))
        extra.update(deed(payload))
        head = len(sentences)
        result = payload.get("result") if isinstance(payload.get("result"), dict) else {}
        # her words are quoted in the sentence too: a model may not repeat them outside quotation
        theirs += [payload.get("error"), result.get("stdout"), *_params(payload).values()]
    elif kind == "system":
        main, details = system_fields(payload)
        theirs += [main, details]
        text = quote(main, lang, qmax) if main else None
        told = quote(details, lang, qmax) if details else None
        sentences.append(say("system_details", text=text, details=told) if text and told
                         else say("system", text=text) if text
                         else say("system_only_details", details=told) if told else say("system_plain"))
    elif kind == "reflection":
        text = payload.get("text")
        if not (isinstance(text, str) and text.strip()):
            raise DataError("a reflection needs \"text\" (a non-empty string)")
        theirs.append(text)  # offered from outside the stream: never her words, never her decision
        sentences.append(say("reflection", text=quote(text, lang, qmax)))
    else:
        raise DataError(f"source_type {kind!r}: not an event internalize narrates")
    # her own deed follows her own thought: it breaks into nothing
    if kind != "action" and book.last and book.last.get("by") in ("think", "externalize") \
            and book.last.get("gen") == book.gen:
        try:
            since = at - clock.parse(book.last.get("at", ""), "at", DataError)
        except DataError:
            since = None
        if since is not None and 0 <= since <= 600:
            sentences.append(say("breaks_in"))
    state = context.state_line(home)
    if state:
        sentences.append(say("state", state=nest(state).replace("#", "").rstrip(".。")))
    return sentences[:head], sentences[head:], extra, [t for t in theirs if isinstance(t, str)]


# --- with a model ---------------------------------------------------------------------------

EXPERIENCE_MAX = 1000  # characters of her experience a model may add to an entry
SCHEMA = {"type": "object", "required": ["experience"],
          "properties": {"experience": {"type": "string", "maxLength": EXPERIENCE_MAX}}}


def experience_lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip()]


# --- the run ------------------------------------------------------------------------------

class Internalizer:
    def __init__(self, home, cfg, now: float, backend: str | None = None):
        self.home = home
        self.cfg = cfg
        self.now = now  # the run's time: what it appends is stamped with it
        self.lang = cfg["core.lang"]
        self.qmax = cfg["internalize.quote_max_chars"]
        self.backend = cfg["llm.backend"] if backend is None else backend
        self.stream = Stream(home)
        self.book = Book(self.stream)

    def experience(self, doc: dict) -> str | None:
        """What a model adds to the entry: her experience of the event, checked (no heading,
        no decision, no words of others outside quotation); None when the rules narrate.
        Unavailable, Invalid (after one retry) or DataError (an event that cannot be narrated)."""
        from anima.infra import llm
        from anima.stream import echo

        head, told, _, theirs = parts(self.home, self.book, doc, self.lang, self.qmax)
        words = echo.Words(theirs)
        payload = doc["payload"]
        speaker = payload.get("speaker") if isinstance(payload.get("speaker"), str) else None
        text = payload.get("text") if isinstance(payload.get("text"), str) else ""
        state = (fs.read_text(self.home.path("self", "state.md")) or "").strip()[:2000]
        none = phrases.word(self.lang, "internalize", "none")
        variables = {
            "event": join(head, self.lang), "context": join(told, self.lang) or none, "state": state or none,
            "memories": context.knowing(self.home, context.relevant(self.home, fold(speaker, NAME_MAX) if speaker
                                                                    else None, text))
            or none,
            "recent": self.stream.tail(20).strip() or none, "max_chars": str(EXPERIENCE_MAX),
        }

        def check(answer: dict) -> str | None:
            lines = experience_lines(answer["experience"])
            if not lines:
                return "the experience is empty"
            for line in answer["experience"].split("\n"):
                problem = echo.line_problem(line.strip(), words, decisions_allowed=False)
                if problem:
                    return problem
            return None

        answer = llm.ask(self.home, self.cfg, "internalizer", self.lang, variables, SCHEMA, self.now,
                         self.backend, check)
        return None if answer is None else "\n".join(experience_lines(answer["experience"]))

    def key(self, doc: dict) -> str:
        event = doc["payload"].get("event")
        return event if isinstance(event, str) and event else doc["envelope"]["id"]

    def one(self, doc: dict) -> str | None:
        """Narrate one event unless it already was; return the entry appended, or None.
        DataError when the event cannot be narrated (nothing written)."""
        key = self.key(doc)
        lived = None
        if self.backend != "rules":  # the call takes seconds: never under the lock
            self.book.refresh()
            if key in self.book.narrated:
                return None
            lived = self.experience(doc)
        with self.stream.lock():
            self.book.refresh()
            if key in self.book.narrated:
                return None
            head, told, extra, _ = parts(self.home, self.book, doc, self.lang, self.qmax)
            text = join(head, self.lang) + "\n" + lived if lived else join(head + told, self.lang)
            entry = self.book.journaled(key)
            if entry is not None and self.book.landed(entry):  # a crash after the append
                self.stream.write_record({"gen": entry["gen"], "lines": entry["lines"], "by": BY, "at": entry["at"],
                                          "sha256": entry["sha256"], "event": key, **extra})
                self.book.refresh()
                return None
            record = self.stream.append(text, BY, self.now, extra={"event": key, **extra}, held=True,
                                        before=lambda r: self.book.begin(key, r))
            self.book.refresh()
        return f"{heading(clock.parse(record['at'], 'at'))}\n\n{clean(text)}\n\n"

    def drain(self, limit: int | None = None, emit=None) -> dict:
        from anima.infra.llm import Invalid

        queue = queues.Queue(self.home, "message")
        queue.recover()
        counts = {"narrated": 0, "skipped": 0, "dead": 0}
        dead: list = []
        taken = 0
        # durability per batch (anima.infra.fs.batch): each entry is on disk before its record,
        # the journal and the records once a batch, and an event is finished only after that
        with fs.batch() as batch:
            for file, doc in queue.take(f"anima {BY}", self.now, dead):
                try:
                    entry = self.one(doc)
                except DataError as e:
                    queue.fail(file, file, str(e), f"anima {BY}", self.now)
                    counts["dead"] += 1
                except Invalid as e:
                    queue.fail(file, file, f"{e}; raw answer: {e.raw}", f"anima {BY}", self.now)
                    counts["dead"] += 1
                except AnimaError:
                    # not this event's fault (no model, a bad setting): it waits for the next run
                    fs.move(os.path.join(queue.dir, "cur", file), os.path.join(queue.dir, file))
                    raise
                else:
                    if entry is None:
                        counts["skipped"] += 1
                    else:
                        counts["narrated"] += 1
                        if emit:
                            batch.then(emit, entry)
                    batch.then(queue.finish, file)
                taken += 1
                if len(batch) >= BATCH or self.backend != "rules":  # (a model's seconds dwarf an fsync)
                    batch.sync()
                if limit is not None and taken >= limit:
                    break
        counts["dead"] += len(dead)
        return counts
