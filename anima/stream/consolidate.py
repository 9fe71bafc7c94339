"""`anima consolidate`: the nightly sleep of the self-stream.

What it covers: every record of pipeline/stream.jsonl since the last consolidate (the roll
record with "why": "consolidate"; pipeline/consolidate.cursor remembers its byte offset so
that a year of records is not read every night). From them, and from the lines they name in
now.md and self/stream/archive/, it makes one change set, computed once:

1. now.md is archived into archive/DATE.md as `anima stream roll` does (appended, by the day
   in each heading), the roll recorded with "why": "consolidate" (a new generation);
2. a fresh now.md starts the new day with her last unfinished thoughts (the last
   consolidate.carry_entries entries of hers) carried over, recorded as by "consolidate" -
   never as "think", so a carried decision is not acted on twice;
3. memories: one line per message heard, in memories/about_SPEAKER.md (rules backend);
4. one autobiography entry (anima.self.autobiography) with the archive lines it came from;
5. the autobiography_summary block rewritten from the entries (blocks.write, so .history
   keeps every version);
6. proposals for the personality baseline (anima.self.proposals), never the block itself.

`--dry-run` prints the change set as a unified diff; the real run writes exactly it. The
change set (anima.infra.changeset) is journalled in pipeline/consolidate.pending before
anything else is written; a run killed midway is finished by the next consolidate, forget of
a stream line or tick, so every file is always old or new.
"""

import json
import os
import re

from anima.infra import changeset, clock, fs, jsontext, phrases
from anima.infra.digest import sha
from anima.self import autobiography, blocks, proposals
from anima.self.memories import TOPIC, topic_of
from anima.stream import bookkeeping, derived
from anima.stream.internalize import narrate_action
from anima.stream.now import HEADING, Stream, clean, heading, split_days
from anima.stream.quoting import Line, is_quoted, name, split

BY = "consolidate"
ENTRY_MAX = 4000
SUMMARY_MAX = 240
DIARY_MAX = 300
THOUGHT_MAX = 200


def _fold(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


class Consolidator:
    def __init__(self, home, cfg, now: float, llm_backend: str | None = None):
        self.home = home
        self.cfg = cfg
        self.now = now
        self.lang = cfg["core.lang"]
        self.backend = llm_backend
        self.stream = Stream(home)
        self.cursor_path = home.path("pipeline", "consolidate.cursor")
        self.changes = changeset.ChangeSet(home, BY)
        self.warnings: list[str] = []
        self.counts: dict = {}
        self.model: dict | None = None
        self.texts: dict[str, list[str]] = {}  # archive file -> its lines after this run
        self.derived: list[dict] = []  # provenance records (anima.stream.derived) of what this run writes

    def rel(self, path: str) -> str:
        return self.home.rel(path)

    def abs(self, rel: str) -> str:
        return os.path.join(self.home.root, rel)

    # --- what happened since the last consolidate -----------------------------------------

    def _cursor(self) -> dict:
        try:
            c = jsontext.loads(fs.read_text(self.cursor_path) or "")
            return c if isinstance(c, dict) and isinstance(c.get("offset"), int) else {}
        except ValueError:
            return {}

    def _records(self, cursor: dict) -> list[dict]:
        """The records after the last consolidate."""
        records, replaced = bookkeeping.Reader(self.stream.book, cursor.get("offset", 0)).read()
        if replaced or not cursor:  # no cursor, or the bookkeeping was replaced: all since the last
            records, _ = bookkeeping.Reader(self.stream.book).read()
            for i in range(len(records) - 1, -1, -1):
                if records[i].get("by") == "roll" and records[i].get("why") == BY:
                    records = records[i + 1:]
                    break
        return records

    # --- the change set -------------------------------------------------------------------

    def plan(self) -> changeset.ChangeSet | None:
        """The whole change, as a change set; None when there is nothing to do."""
        cursor = self._cursor()
        text = self.stream.text()
        records = self._records(cursor)
        # (init's first entry, her waking up, is a template: not lived)
        lived = [r for r in records if r.get("by") not in (BY, "roll", "init") and isinstance(r.get("gen"), int)
                 and isinstance(r.get("lines"), list) and len(r["lines"]) == 2
                 and all(isinstance(n, int) for n in r["lines"]) and isinstance(r.get("at"), str)]
        if not lived:  # what is in now.md is the last new day (or rolled from it, or a hand's): not lived
            return None
        changes = self.changes
        today = clock.iso(self.now)[:10]

        # 1. the archive
        days = split_days(text, today) if text else []
        suffix: dict[str, str] = {}
        for day, chunk in days:
            path = self.stream.archive_path(day)
            old = fs.read_text(path) or ""
            if not old.endswith(chunk):
                suffix[day] = suffix.get(day, "") + chunk
        for day, data in suffix.items():
            path = self.stream.archive_path(day)
            changes.append(path, data)
        items = self._items(lived, suffix)
        self.counts["archived"] = text.count("\n")
        self.counts["entries"] = len(items)
        self.model = self._ask(items, items[0]["at"][:10] if items else today) if items else None

        # 3. memories
        self._memories(items)

        # 4. the autobiography entry, 5. the summary block
        entry = self._entry(items, today)
        if self.derived:
            changes.append(derived.path(self.home), derived.render(self.derived))
        self._summary(entry, today)

        # 6. proposals
        self._proposals()

        # 2. the new day (last: the archive and the records must be in before now.md changes)
        gen = self.stream.generation() + 1
        carried = [i for i in items if i["by"] in ("think", "externalize")][-self.cfg["consolidate.carry_entries"]:] \
            if self.cfg["consolidate.carry_entries"] else []
        new_now = self._new_day(carried)
        roll = {"gen": gen, "by": "roll", "why": BY, "at": clock.iso(self.now), "moved": text.count("\n"),
                "archive": [day for day, _ in days]}
        first, last = 1, new_now.count("\n")
        carry = {"gen": gen, "lines": [first, last], "by": BY, "at": clock.iso(self.now), "sha256": sha(new_now),
                 "carried": [[i["gen"], *i["lines"]] for i in carried]}
        book = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (roll, carry))
        changes.append(self.stream.book, book)
        try:
            book_size = os.path.getsize(self.stream.book)
        except FileNotFoundError:
            book_size = 0
        cursor_new = {"offset": book_size + len(book.encode("utf-8")), "gen": gen, "at": clock.iso(self.now),
                      "now_sha256": sha(new_now)}
        changes.replace(self.cursor_path, json.dumps(cursor_new) + "\n")
        changes.replace(self.stream.now_path, new_now)
        return changes

    def _items(self, lived: list[dict], suffix: dict[str, str]) -> list[dict]:
        """Each record with where its lines now are (in the archive after this run) and its text."""
        texts: dict[str, list[str]] = {}
        index: dict[str, dict[str, list[int]]] = {}
        items = []
        for r in lived:
            day = r["at"][:10]
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
                continue
            if day not in texts:
                old = fs.read_text(self.stream.archive_path(day)) or ""
                lines = (old + suffix.get(day, "")).splitlines(keepends=True)
                texts[day] = lines
                starts = [i for i, x in enumerate(lines) if HEADING.fullmatch(x.rstrip("\n"))]
                found: dict[str, list[int]] = {}
                for k, s in enumerate(starts):
                    end = starts[k + 1] if k + 1 < len(starts) else len(lines)
                    found.setdefault(sha("".join(lines[s:end])), []).append(s)
                index[day] = found
            lines = texts[day]
            size = r["lines"][1] - r["lines"][0] + 1
            candidates = index[day].get(r.get("sha256"))
            # else not a whole natural entry (a hand edit glued text to it): look at every heading
            at = candidates.pop(0) if candidates else bookkeeping.at_heading(lines, size, r.get("sha256"))
            if at is None:
                continue  # its lines were edited away: nothing to distil from
            body = "".join(lines[at + 2:at + size - 1]).strip("\n")
            items.append({**r, "file": self.rel(self.stream.archive_path(day)), "first": at + 1,
                          "last": at + size, "body": body})
        self.texts = {self.rel(self.stream.archive_path(day)): lines for day, lines in texts.items()}
        return items

    def _sources(self, items: list[dict]) -> list[dict]:
        """The archive lines of `items` with the sha256 of their text, for the provenance record."""
        return [{"path": f, "lines": [a, b], "sha256": sha(derived.source_text(self.texts[f], a, b))}
                for f, a, b in ranges(items)]

    def _record(self, rel: str, where: dict, text: str, items: list[dict]) -> None:
        self.derived.append({"path": rel, **where, "sha256": sha(text), "sources": self._sources(items),
                             "by": BY, "at": clock.iso(self.now)})

    # memories ------------------------------------------------------------------------------

    def _memories(self, items: list[dict]) -> None:
        adds: dict[str, list[str]] = {}
        came: dict[str, list[list[dict]]] = {}  # topic -> the items each line came from
        names: dict[str, str] = {}
        for i in items:
            if i["by"] != "internalize" or i.get("source_type") != "message" or not isinstance(i.get("speaker"), str):
                continue
            words = said(i, self.lang)
            if words is None:
                continue
            happened = i.get("happened") if isinstance(i.get("happened"), str) else i["at"]
            scene = i.get("scene")
            # a scene is others' words too: quoted, as the stream names it, unless one plain word
            where = f" ({name(scene, self.lang)})" if isinstance(scene, str) and scene else ""
            line = f"- {happened[:10]} {happened[11:16]}{where} {words}\n"
            topic = topic_of(i["speaker"])
            adds.setdefault(topic, []).append(line)
            came.setdefault(topic, []).append([i])
            names.setdefault(topic, speaker(i, self.lang))
        if self.model:
            day = items[0]["at"][:10]
            for m in self.model.get("memories", []):
                adds.setdefault(m["topic"], []).append(f"- {day}: {_fold(m['text'], 1000)}\n")
                came.setdefault(m["topic"], []).append(items)  # the model read the whole day
        self.counts["memories"] = 0
        for topic, lines in adds.items():
            path = os.path.join(self.home.path("self", "memories"), topic + ".md")
            old = fs.read_text(path)
            have = set((old or "").splitlines(keepends=True))
            new = [(x, came[topic][k]) for k, x in enumerate(lines) if x not in have]
            if not new:
                continue
            self.counts["memories"] += len(new)
            if old is None:
                who = names.get(topic)
                title = f"# {topic}\n\n" if who is None else \
                    phrases.say(self.lang, "consolidate", "memory_title", who=who) + "\n\n"
                self.changes.create(path, title + "".join(x for x, _ in new))
                base = title.count("\n")
            else:
                self.changes.append(path, ("" if old.endswith("\n") or not old else "\n")
                                    + "".join(x for x, _ in new))
                base = old.count("\n") + (1 if old and not old.endswith("\n") else 0)
            for k, (x, whence) in enumerate(new):
                self._record(self.rel(path), {"line": base + 1 + k}, x.rstrip("\n"), whence)

    # a model's consolidation ------------------------------------------------------------------

    def _ask(self, items: list[dict], day: str) -> dict | None:
        """The model's entry and memories by topic, checked; None: the rules write them (the
        backend is rules, the budget is spent, or the answer was invalid twice)."""
        backend = self.backend if self.backend is not None else self.cfg["llm.backend"]
        if backend == "rules":
            return None
        from anima.infra import llm
        from anima.self.memories import topics
        from anima.stream import echo

        stream = "".join(f"{heading(clock.parse(i['at'], 'at'))}\n\n{i['body']}\n\n" for i in items)[-STREAM_MAX:]
        summary = blocks.read(self.home.blocks, "autobiography_summary")
        variables = {"day": day, "stream": stream, "state": fs.read_text(self.home.path("self", "state.md")) or "",
                     "memories": ", ".join(t for t, _ in topics(self.home)),
                     "autobiography": summary.body if summary else ""}
        theirs = []  # what others said, as the stream quotes it: the model may not write it as hers
        for i in items:
            if i["by"] == "internalize":
                for line in i["body"].split("\n"):
                    parts = split(line)
                    theirs.extend(parts[1] if parts is not None else [line])
        words = echo.Words(theirs)
        try:
            answer = llm.ask(self.home, self.cfg, "consolidator", self.lang, variables, MODEL_SCHEMA, self.now,
                             backend,
                             check=lambda a: model_problem(a, self.lang, words))
        except llm.Invalid as e:
            self.warnings.append(f"the model's consolidation was invalid twice ({e}); the rules wrote it")
            return None
        return None if answer is None else {**answer, "by": backend.split(":", 1)[0]}

    # the autobiography ---------------------------------------------------------------------

    def _entry(self, items: list[dict], today: str) -> dict:
        day = items[0]["at"][:10] if items else today
        meta, body = self._rules_entry(items, day)
        if self.model:
            meta = {**meta, "title": self.model["title"].strip(), "by": self.model["by"]}
            if self.model.get("summary", "").strip():
                meta["summary"] = _fold(self.model["summary"], SUMMARY_MAX)
            body = self.model["content"].strip()
        taken = {n[:-3] for n in autobiography.names(self.home)}
        eid = autobiography.free_id(taken, day)
        meta = {"id": eid, **meta, "sources": sources(items)}
        path = os.path.join(autobiography.directory(self.home), eid + ".md")
        self.counts["entry"] = eid
        data = autobiography.render(meta, body)
        if items:
            self._record(self.rel(path), {"entry": eid}, autobiography.parse(data, path)[1], items)
        self.changes.create(path, data)
        return meta

    def _rules_entry(self, items: list[dict], day: str) -> tuple[dict, str]:
        from anima.stream.context import state_line
        from anima.stream.decisions import decisions

        lang = self.lang

        def say(key, **values):
            return phrases.say(lang, "consolidate", key, **values)

        heard: dict[str, int] = {}
        first_heard: dict[str, str] = {}
        hers, deeds, decided = [], [], []
        names: dict = {}
        for i in items:
            if i["by"] == "internalize" and i.get("source_type") == "message":
                who = speaker(i, lang)
                names[i.get("speaker")] = who
                heard[who] = heard.get(who, 0) + 1
                first_heard.setdefault(who, str(i.get("happened") or i["at"])[11:16])
            elif i["by"] == "internalize" and i.get("source_type") == "action":
                sentence = did(i, lang, names)
                if sentence and sentence not in deeds:
                    deeds.append(sentence)
            elif i["by"] in ("think", "externalize"):
                hers.append(i["body"])
                for line in i["body"].split("\n"):
                    for d in decisions(line):
                        phrase = decision_phrase(d, lang)
                        if phrase not in decided:
                            decided.append(phrase)
        when = autobiography.day_words(day, lang)
        paragraphs = []
        people = phrases.listing(lang, [say("heard_once" if n == 1 else "heard_times", who=w, n=n, time=first_heard[w])
                                        for w, n in heard.items()], 8)
        paragraphs.append(say("heard", when=when, people=people) if heard else say("heard_no_one", when=when))
        if decided:
            paragraphs.append(say("decided", what=phrases.listing(lang, decided, 6)))
        if deeds:
            paragraphs.append(say("did", what=phrases.word(lang, "internalize", "join").join(deeds[:8])))
        diary = []
        for d in sorted({i["at"][:10] for i in items} or {day}):
            text = fs.read_text(self.home.path("self", "diary", d + ".md"))
            if text:
                diary.append(" ".join(x for x in text.split("\n") if x.strip() and not x.startswith("## ")))
        if diary:
            paragraphs.append(say("diary", said=_fold(" ".join(diary), DIARY_MAX)))
        if hers:
            paragraphs.append(phrases.counted(lang, "consolidate", "thoughts", len(hers),
                                              last=_fold(hers[-1], THOUGHT_MAX)))
        state = state_line(self.home)
        if state:
            paragraphs.append(say("state", state=state))
        body = "\n\n".join(paragraphs)
        if len(body) > ENTRY_MAX:
            body = body[: ENTRY_MAX - 1].rstrip() + "…"
        everyone = autobiography.people(heard, lang)
        title = say("title", when=when, people=everyone) if heard else say("title_alone", when=when)
        summary_parts = []
        if heard:
            summary_parts.append(say("summary_heard", people=everyone))
        if decided:
            summary_parts.append(say("summary_decided", what=phrases.listing(lang, decided, 3)))
        if not summary_parts:
            summary_parts.append(say("summary_alone"))
        summary = _fold(say("summary_join").join(summary_parts) + phrases.word(lang, "internalize", "end"),
                        SUMMARY_MAX)
        times = sorted(i["at"] for i in items)
        meta = {"title": title, "date": day, "written": clock.iso(self.now),
                "period": [times[0], times[-1]] if times else [clock.iso(self.now)] * 2,
                "by": "rules", "summary": summary, "heard": heard}
        return meta, body

    def _summary(self, entry: dict, today: str) -> None:
        key = "autobiography_summary"
        current = blocks.read(self.home.blocks, key)
        if current is not None and current.locked:
            self.warnings.append(f"{key} is locked: its summary was not refreshed")
            return
        found = autobiography.entries(self.home) + [(entry["id"], entry, "")]
        body = autobiography.summary(found, self.lang, self.cfg["consolidate.recent_days"],
                                     self.cfg["self.block_max_chars"], today)
        body = blocks.normalise(body)
        if not body or (current is not None and current.body == body):
            return
        new = blocks.Block(key, current.title if current else blocks.TITLES[self.lang][key],
                           current.locked if current else False, clock.iso(self.now), body,
                           current.extra if current else {})
        # as `anima self set` writes a block: what is there is kept in its history first
        self.changes.version(blocks.block_path(self.home.blocks, key), blocks.history_dir(self.home.blocks, key),
                             blocks.render(new))

    # proposals -----------------------------------------------------------------------------

    def _proposals(self) -> None:
        from anima.notes.store import Store

        threshold = self.cfg["consolidate.proposal_min_hits"]
        base = blocks.read(self.home.blocks, proposals.KEY)
        if base is None:
            return
        store = Store(self.home)
        usage = store.usage()["notes"]
        made = 0
        folded = " ".join(base.body.split())
        for note in store.notes() if threshold else ():
            hits = int((usage.get(note.id) or {}).get("hits", 0))
            if hits < threshold or " ".join(note.text.split()) in folded:
                continue
            pid = proposals.new_id(proposals.KEY, note.id)
            path = proposals.path(self.home, pid)
            if os.path.exists(path):
                continue  # proposed once already (open, accepted or rejected)
            body = base.body + "\n" + note.text
            if len(body) > self.cfg["self.block_max_chars"]:
                self.warnings.append(f"note {note.id} would make {proposals.KEY} longer than self.block_max_chars: "
                                     "not proposed")
                continue
            last = (usage.get(note.id) or {}).get("last")
            meta = {"id": pid, "key": proposals.KEY, "status": "open", "proposed": clock.iso(self.now),
                    "by": "rules", "base_sha256": sha(base.body), "note": note.id,
                    "evidence": [f"self-note {note.id}, injected {hits} times"
                                 + (f" (last {clock.iso(last)})" if isinstance(last, (int, float)) else "")
                                 + f": {note.text}"]}
            self.changes.create(path, proposals.render(meta, body))
            made += 1
        self.counts["proposals"] = made + self._model_proposal(base, folded)

    def _model_proposal(self, base, folded: str) -> int:
        proposal = (self.model or {}).get("baseline")
        if not proposal:
            return 0
        add = " ".join(proposal["add"].split())
        pid = proposals.new_id(proposals.KEY, sha(add))
        body = base.body + "\n" + add
        if add in folded or os.path.exists(proposals.path(self.home, pid)):
            return 0
        if len(body) > self.cfg["self.block_max_chars"]:
            self.warnings.append(f"the model's proposal would make {proposals.KEY} longer than "
                                 "self.block_max_chars: not proposed")
            return 0
        meta = {"id": pid, "key": proposals.KEY, "status": "open", "proposed": clock.iso(self.now),
                "by": self.model["by"], "base_sha256": sha(base.body),
                "evidence": [" ".join(proposal["evidence"].split())]}
        self.changes.create(proposals.path(self.home, pid), proposals.render(meta, body))
        return 1

    # the new day ---------------------------------------------------------------------------

    def _new_day(self, carried: list[dict]) -> str:
        text = phrases.say(self.lang, "consolidate", "new_day")
        if carried:
            text += phrases.say(self.lang, "consolidate", "still_on_my_mind") + "\n\n" + \
                "\n\n".join(i["body"] for i in carried)
        return f"{heading(self.now)}\n\n{clean(text)}\n\n"


STREAM_MAX = 60000
MODEL_SCHEMA = {
    "type": "object",
    "required": ["title", "content", "memories"],
    "properties": {
        "title": {"type": "string", "minLength": 1, "maxLength": 120},
        "content": {"type": "string", "minLength": 1, "maxLength": ENTRY_MAX},
        "summary": {"type": "string", "maxLength": SUMMARY_MAX},
        "memories": {"type": "array", "maxItems": 20, "items": {
            "type": "object", "required": ["topic", "text"],
            "properties": {"topic": {"type": "string", "minLength": 1, "maxLength": 60},
                           "text": {"type": "string", "minLength": 1, "maxLength": 1000}}}},
        "baseline": {
            "type": "object", "required": ["add", "evidence"],
            "description": "Only if the day showed a lasting trait of yours that your personality "
                           "baseline lacks: the sentence to add to it, and what in the day shows it. "
                           "A person decides; leave it out otherwise.",
            "properties": {"add": {"type": "string", "minLength": 1, "maxLength": 300},
                           "evidence": {"type": "string", "minLength": 1, "maxLength": 500}}},
    },
}
_FIRST_PERSON = re.compile(r"\b(?:I|me|my|myself)\b|我")


def model_problem(answer: dict, lang: str, words=None) -> str | None:
    """What is wrong with a model's consolidation beyond its schema, or None; with `words`
    (anima.stream.echo.Words: what others said that day), a line that carries them outside quotation
    is wrong too, as it is in what internalize and externalize let a model write."""
    if "\n" in answer["title"] or answer["title"].lstrip().startswith("#"):
        return "the title must be one line, not a heading"
    baseline = answer.get("baseline") or {}
    texts = [answer["content"], answer.get("summary", "")] + [m["text"] for m in answer["memories"]] \
        + [baseline.get("add", ""), baseline.get("evidence", "")]
    for text in texts:
        if any(line.lstrip().startswith("#") or line.lstrip().startswith("---") for line in text.split("\n")):
            return "no headings (lines starting with '#') or '---' lines in the texts"
    if not _FIRST_PERSON.search(answer["content"]):
        return "the entry must be in the first person (I, me, my; 我)"
    if baseline and (not _FIRST_PERSON.search(baseline["add"]) or "\n" in baseline["add"]):
        return "baseline.add must be one line in the first person (I, me, my; 我)"
    for m in answer["memories"]:
        if not TOPIC.fullmatch(m["topic"]) or ".." in m["topic"]:
            return f"{m['topic']!r} is not a topic: letters, digits, _ - . only"
    if words is not None:
        from anima.stream import echo

        named = [("content", answer["content"]), ("summary", answer.get("summary", "")),
                 ("baseline.add", baseline.get("add", "")), ("baseline.evidence", baseline.get("evidence", ""))] \
            + [(f"memories[{k}].text", m["text"]) for k, m in enumerate(answer["memories"])]
        for what, text in named:
            for line in text.split("\n"):
                problem = echo.line_problem(line.strip(), words, decisions_allowed=True) if line.strip() else None
                if problem:
                    return f"{what}: {problem}"
    return None


# --- reading her day from the records --------------------------------------------------------

def said(item: dict, lang: str) -> str | None:
    """The words a message's speaker said, as her entry quotes them (marks included): the
    quotation of the entry's first line that its record names (after the speaker's name and
    the scene, where those had to be quoted); None when the line no longer holds it."""
    k = item.get("said")
    if not isinstance(k, int):  # a record written before it said so: counted as internalize counts them
        k = sum(is_quoted(name(x, lang)) for x in (item.get("speaker"), item.get("scene")) if isinstance(x, str) and x)
    line = item["body"].split("\n", 1)[0]
    spans = Line(line).spans
    return line[slice(*spans[k])] if 0 <= k < len(spans) else None


def speaker(item: dict, lang: str) -> str:
    """How she named who spoke: the record's name, else (an earlier record) the speaker's key."""
    return item["name"] if isinstance(item.get("name"), str) else name(str(item.get("speaker", "?")), lang)


def did(item: dict, lang: str, names: dict | None = None) -> str | None:
    """What she did, in her words, from an action result's record ("I replied to Alice."); None
    for a failure (it quotes words from outside) or a record that does not say. `names`: how
    she named each speaker, by key."""
    if item.get("ok") is not True or not isinstance(item.get("command"), str):
        return None
    result = {"path": item["topic"] + ".md"} if isinstance(item.get("topic"), str) else {}
    params = {"to": item["to"]} if isinstance(item.get("to"), str) else {}
    return narrate_action({"command": item["command"], "ok": True, "result": result, "params": params}, lang, 0,
                          names)[0]


def decision_phrase(d: dict, lang: str) -> str:
    phrase = phrases.word(lang, "consolidate", "decision").get(d["command"])
    return phrase.format(name=d.get("name", ""), topic=d.get("topic", "")) if phrase else d["command"]


def ranges(items: list[dict]) -> list[tuple[str, int, int]]:
    """(FILE, FIRST, LAST) for the lines of every item, adjacent ranges merged, in file order."""
    found: dict[str, list[list[int]]] = {}
    for i in sorted(items, key=lambda i: (i["file"], i["first"])):
        runs = found.setdefault(i["file"], [])
        if runs and i["first"] <= runs[-1][1] + 1:
            runs[-1][1] = max(runs[-1][1], i["last"])
        else:
            runs.append([i["first"], i["last"]])
    return [(f, a, b) for f, runs in found.items() for a, b in runs]


def sources(items: list[dict]) -> list[str]:
    """FILE:FIRST-LAST for the lines of every item, adjacent ranges merged, in file order."""
    return [f"{f}:{a}-{b}" for f, a, b in ranges(items)]


# --- the run ----------------------------------------------------------------------------------

def run(home, cfg, now: float, dry_run: bool = False, backend: str | None = None):
    """Consolidate; return (diff text or None, the Consolidator) — diff only with dry_run."""
    c = Consolidator(home, cfg, now, backend)
    with c.stream.changing():
        if dry_run:
            if changeset.is_pending(home, "forget"):
                c.warnings.append("an interrupted forget is pending: the real run finishes it first")
            pending = changeset.pending(home, BY)
            if pending is not None:
                c.warnings.append("an interrupted consolidate is pending: this is what the next run completes")
                return changeset.diff(home, pending), c
        elif BY in changeset.finish_pending(home, c.warnings.append):  # a forget first: nothing of it distilled
            c.counts["resumed"] = True
        changes = c.plan()
        if changes is None:
            return ("" if dry_run else None), c
        if dry_run:
            return changeset.diff(home, changes.ops), c
        changes.apply(clock.iso(now), c.warnings.append)
    return None, c
