"""`anima forget`: remove a source and everything derived from it, leaving only a tombstone.

Targets and what goes:
- a session (--session ID): its transcript files under the home, every fact staged from it;
- a fact (--fact ID): the fact, text and history;
- a turn (--source PATH:LINE, PATH a transcript under the home): the turn's line, replaced in
  place by {"type": "forgotten", "at": ...} so every other line keeps its number (facts and
  recall name turns by line), and every fact staged from that turn;
- a line of the self-stream (--source self/stream/now.md:LINE or self/stream/archive/DATE.md:LINE):
  the line, replaced in place by a first-person tombstone line without content, and so is
  every copy consolidate carried into a new day; every memory line derived from it
  (pipeline/derived.jsonl) removed; every autobiography entry citing it made a tombstone
  (anima.self.autobiography.tombstone) and the autobiography_summary block written without it;
  the queued event files of the message it was (pipeline/**, done or dead), since they hold
  its words; and the stream's bookkeeping hashes (pipeline/stream.jsonl,
  pipeline/internalize.journal) made those of the new text, so that no hash of the
  forgotten words stays (same length: the byte offsets consolidate keeps still hold).
  These changes are one change set (anima.infra.changeset), journalled in
  pipeline/forget.pending before any is made; a forget killed midway is finished by the next
  forget of a stream line, consolidate or tick, so every file is always old or new;
and with each of them the whole cache/ (the prompt and transcript caches hold text) and, for
a session or a turn, the recall index, rebuilt without it when there is one (its tokens are
as private as the text).

A transcript outside the home (recall.sources) is never touched: anima writes only under
its home. It is listed as left where it is; what was derived from it is removed all the same.

log/forgotten.jsonl gets the tombstone: when, what was asked, and what was removed (paths
and ids), never the content or a hash of it (a hash would let a guess be confirmed).
"""

import contextlib
import json
import os

from anima.infra import changeset, clock, fs, jsontext, phrases
from anima.infra.digest import sha
from anima.infra.errors import Busy, DataError, NotFound, UsageError


class Step:
    __slots__ = ("what", "where", "apply")

    def __init__(self, what: str, where: str, apply=None):
        self.what, self.where, self.apply = what, where, apply  # apply None: listed, not done


class Plan:
    def __init__(self, target: str):
        self.target = target
        self.steps: list[Step] = []
        self.hold = None   # the locks to carry it out under, when any
        self.again = None  # the same plan computed again (under the locks): the home may have changed
        self.ops = None    # a change set (pipeline/forget.pending) that carries it out, instead of each step's apply

    def add(self, what: str, where: str, apply=None) -> None:
        self.steps.append(Step(what, where, apply))


def _facts_step(home, plan: Plan, keep) -> None:
    """Plan the removal of every fact for which keep(fact) is False."""
    from anima.facts import store as facts

    store = facts.FactStore(home)
    gone = [f["id"] for f in store.load() if not keep(f)]
    for fid in gone:
        plan.add("fact", fid)
    if gone:
        def apply():
            with fs.locked(store.file, what="facts"):
                fs.atomic_write(store.file, "".join(json.dumps(f, ensure_ascii=False) + "\n"
                                                    for f in store.load() if keep(f)))
        plan.steps[-1].apply = apply


def _derived_steps(home, plan: Plan, index_too: bool = True) -> None:
    cache = home.cache
    if os.path.isdir(cache):
        plan.add("cache", "cache/ (rebuilt as it is used)", lambda: fs.rmtree(cache))
    from anima.recall import index

    if index_too and os.path.exists(index.path(home)):
        plan.add("index entries", f"{home.rel(index.path(home))} (rebuilt)", None)
        plan.steps[-1].apply = lambda: _rebuild_index(home)


def _rebuild_index(home) -> None:
    from anima.infra import config
    from anima.recall import index

    cfg = config.load(home.config)
    index.rebuild(home, cfg, cfg["index.jobs"])


def session(home, cfg, sid: str, warn) -> Plan:
    from anima.recall import sessions

    plan = Plan(f"session {sid}")
    for path, readable in sessions.files_of(home, cfg, sid, warn):
        what = "transcript" if readable else "unreadable transcript"
        if home.holds(path):
            plan.add(what, home.rel(path), lambda p=path: fs.remove(p))
        else:
            plan.add(f"{what} outside the home, left where it is", path)
    _facts_step(home, plan, lambda f: (f.get("source") or {}).get("session") != sid)
    if not plan.steps:
        raise NotFound(f"no session {sid!r}: no transcript and no fact names it")
    _derived_steps(home, plan)
    return plan


def fact(home, cfg, fid: str) -> Plan:
    plan = Plan(f"fact {fid}")
    _facts_step(home, plan, lambda f: f["id"] != fid)
    if not plan.steps:
        raise NotFound(f"no fact {fid!r} (`anima facts` lists them)")
    _derived_steps(home, plan, index_too=False)  # the index holds transcripts, not facts
    return plan


def source(home, cfg, spec: str, now: float, warn) -> Plan:
    from anima.recall import formats, sessions, sources, zstd

    path, _, line = spec.rpartition(":")
    if not path or not line.isdigit() or int(line) < 1:
        raise UsageError(f"--source {spec!r}: give PATH:LINE, a transcript and a line number")
    number = int(line)
    full = os.path.join(home.root, path) if not os.path.isabs(path) else path
    short = home.path("self", "stream", path)
    if not os.path.isabs(path) and not os.path.exists(full) and _in_stream(home, short):
        full = short  # now.md:LINE, archive/DATE.md:LINE
    if _in_stream(home, full):
        return stream_line(home, cfg, full, number, now)
    if not (os.path.isfile(full) and full.endswith(sources.SUFFIXES)):
        raise NotFound(f"--source {spec!r}: {path} is not a transcript (*.jsonl, *.jsonl.zst)")
    if not home.holds(full):
        raise UsageError(f"--source {spec!r}: outside the home; anima writes only under {home.root}")
    session = next((s for s in sessions.sessions(home, cfg, warn)
                    if os.path.realpath(s.path) == os.path.realpath(full)), None)
    broken = zstd.damage(full)
    if broken is not None:  # recompressed, the file would lose its unreadable tail with the turn
        named = session.id if session is not None else formats.session_id(full, None)
        raise DataError(f"--source {spec!r}: {home.rel(full)} is damaged ({broken}), so one turn cannot be "
                        f"blanked in place; `anima forget --session {named}` removes the whole file")
    if session is None:
        raise NotFound(f"--source {spec!r}: not a session anima reads")
    if not any(t.line == number for t in session.turns):
        raise NotFound(f"--source {spec!r}: line {number} is not a turn of session {session.id}")
    session_id = session.id
    plan = Plan(f"turn {home.rel(full)}:{number}")
    plan.add("turn", f"{home.rel(full)}:{number} (the line stays, empty)", lambda: _blank_line(full, number, now))
    _facts_step(home, plan, lambda f: ((f.get("source") or {}).get("session"),
                                       (f.get("source") or {}).get("line")) != (session_id, number))
    _derived_steps(home, plan)
    return plan


def _blank_line(path: str, number: int, now: float) -> None:
    """Replace line `number` of a transcript (plain or zstd) by a forgotten marker, in place."""
    from anima.recall.zstd import ZSTD_SUFFIXES, chunks

    with fs.locked(path, what="the transcript"):
        data = b"".join(chunks(path))
        packed = path.endswith(ZSTD_SUFFIXES)
        lines = data.split(b"\n")
        lines[number - 1] = json.dumps({"type": "forgotten", "at": clock.iso(now)}).encode()
        data = b"\n".join(lines)
        if packed:
            import zstandard

            data = zstandard.ZstdCompressor().compress(data)
        fs.atomic_write(path, data)


def carry_out(home, plan: Plan, now: float, warn) -> list[dict]:
    """Do every step, then write the tombstone; return what was removed."""
    with plan.hold() if plan.hold is not None else contextlib.nullcontext():
        if plan.again is not None:
            fresh = plan.again()
            if [(s.what, s.where) for s in fresh.steps] != [(s.what, s.where) for s in plan.steps]:
                raise Busy("forget: the home changed since the list was shown; nothing forgotten, run it again")
            plan = fresh
        return _carry_out(home, plan, now, warn)


def _carry_out(home, plan: Plan, now: float, warn) -> list[dict]:
    if plan.ops is not None:
        removed = [{"what": s.what, "where": s.where} for s in plan.steps]
        tomb = {"at": clock.iso(now), "forgot": plan.target, "removed": removed}
        plan.ops.append(home.path("log", "forgotten.jsonl"), json.dumps(tomb, ensure_ascii=False) + "\n")
        plan.ops.apply(clock.iso(now), warn)
        return removed
    removed = []
    for step in plan.steps:
        if step.apply is not None:
            try:
                step.apply()
            except Busy as e:  # only the index can be busy: the rest is done, say what is left
                warn(f"warning: {step.what} not removed ({e}); run `anima index rebuild` when it is free")
                continue
        removed.append({"what": step.what, "where": step.where})
    tomb = {"at": clock.iso(now), "forgot": plan.target, "removed": removed}
    fs.append(home.path("log", "forgotten.jsonl"), json.dumps(tomb, ensure_ascii=False) + "\n")
    return removed


# --- a line of the self-stream --------------------------------------------------------------

def _in_stream(home, full: str) -> bool:
    stream = os.path.realpath(home.path("self", "stream"))
    rel = os.path.relpath(os.path.realpath(full), stream)
    return not rel.startswith("..") and (rel == "now.md" or (os.path.dirname(rel) == "archive"
                                                             and rel.endswith(".md")))


def stream_line(home, cfg, full: str, number: int, now: float) -> Plan:
    rel = os.path.relpath(os.path.realpath(full), os.path.realpath(home.root))
    if not os.path.isfile(full):
        raise NotFound(f"--source {rel}:{number}: no such file in the self-stream")
    if changeset.is_pending(home, "forget"):
        with _stream_locks(home):  # an earlier forget killed midway is finished before this one is listed
            pass
    plan = _StreamForget(home, cfg, rel, number, now).plan()
    plan.hold = lambda: _stream_locks(home)
    plan.again = lambda: _StreamForget(home, cfg, rel, number, now).plan()
    return plan


@contextlib.contextmanager
def _stream_locks(home):
    """The change sets' lock (a night must not distil what is being forgotten), then the stream's."""
    from anima.stream.now import Stream

    with Stream(home).changing():
        if changeset.is_pending(home, "consolidate"):
            raise Busy("forget: an interrupted consolidate is pending (its change set holds the stream's text); "
                       "run `anima consolidate` first")
        changeset.finish_pending(home, lambda message: None, ("forget",))  # an earlier forget killed midway
        yield


class _StreamForget:
    """What forgetting one line of the stream changes, computed without writing anything."""

    def __init__(self, home, cfg, rel: str, number: int, now: float):
        from anima.stream import bookkeeping
        from anima.stream.now import Stream

        self.home, self.cfg, self.rel, self.number = home, cfg, rel, number
        self.lang = cfg["core.lang"]
        self.now = now
        self.today = clock.iso(now)[:10]
        self.stream = Stream(home)
        self.texts: dict[str, list[str]] = {}
        self.book = bookkeeping.Reader(self.stream.book).read()[0]

    def lines(self, rel: str) -> list[str]:
        if rel not in self.texts:
            self.texts[rel] = (fs.read_text(os.path.join(self.home.root, rel)) or "").splitlines(keepends=True)
        return self.texts[rel]

    def blocks(self, rel: str) -> list[tuple[int, int]]:
        """[start, end) of each entry of a stream file (0-based; heading to the next heading)."""
        from anima.stream.now import HEADING

        lines = self.lines(rel)
        starts = [i for i, x in enumerate(lines) if HEADING.fullmatch(x.rstrip("\n"))]
        return [(s, starts[k + 1] if k + 1 < len(starts) else len(lines)) for k, s in enumerate(starts)]

    def located(self, record: dict):
        """(file, start, end) of the entry a bookkeeping record names, found by its sha256."""

        day = str(record.get("at", ""))[:10]
        for rel in ("self/stream/now.md", f"self/stream/archive/{day}.md"):
            for s, e in self.blocks(rel):
                if sha("".join(self.lines(rel)[s:e])) == record.get("sha256"):
                    yield rel, s, e

    def targets(self) -> tuple[set, set]:
        """Every (file, line) to make a tombstone: the line, and the copies consolidate carried of
        it (or, given a carried copy, its original); and the events the entries came from."""
        from anima.stream import derived
        from anima.stream.now import HEADING

        lines = self.lines(self.rel)
        if self.number > len(lines):
            raise NotFound(f"--source {self.rel}:{self.number}: {self.rel} has {len(lines)} lines")
        first = lines[self.number - 1].rstrip("\n")
        if HEADING.fullmatch(first):
            raise UsageError(f"--source {self.rel}:{self.number}: a heading holds no words; give a line of the entry")
        if not first.strip():
            raise NotFound(f"--source {self.rel}:{self.number}: a blank line; nothing to forget")
        found, events, queue = set(), set(), [(self.rel, self.number)]
        while queue:
            rel, n = queue.pop()
            if (rel, n) in found:
                continue
            found.add((rel, n))
            text = self.lines(rel)[n - 1].rstrip("\n")
            block = next(((s, e) for s, e in self.blocks(rel) if s <= n - 1 < e), None)
            if derived.is_tombstone(text) or block is None:
                continue
            entry_sha = sha("".join(self.lines(rel)[block[0]:block[1]]))
            related = []
            for r in (r for r in self.book if r.get("sha256") == entry_sha and isinstance(r.get("lines"), list)):
                if isinstance(r.get("event"), str) and r.get("by") == "internalize":
                    events.add(r["event"])
                if r.get("by") == "consolidate":
                    carried = [c for c in r.get("carried") or [] if isinstance(c, list) and len(c) == 3]
                    related += [y for y in self.book if [y.get("gen"), *(y.get("lines") or [])] in carried
                                and y.get("by") != "consolidate"]
                else:
                    related += [y for y in self.book if y.get("by") == "consolidate"
                                and [r.get("gen"), *r["lines"]] in (y.get("carried") or [])]
            for y in related:
                for f, s, e in self.located(y):
                    queue += [(f, i + 1) for i in range(s, e) if self.lines(f)[i].rstrip("\n") == text]
        return found, events

    def plan(self) -> Plan:
        """The list of what goes, and the change set (Plan.ops) that makes it go, phase by
        phase: what was derived from the line, then the line itself, then the hashes kept of it."""
        from anima.stream import derived

        targets, events = self.targets()
        plan = Plan(f"line {self.rel}:{self.number}")
        plan.ops = changeset.ChangeSet(self.home, "forget")
        new_texts = self._new_texts(targets)
        records = derived.load(self.home)
        kept, gone_lines, entries = self._derivations(records, targets)
        self._drop_memory_lines(plan, gone_lines, kept)
        self._tombstone_entries(plan, entries, kept)
        for path in self._event_files(events):
            plan.add("event", self.home.rel(path))
            plan.ops.remove(path)
        for rel, n in sorted(targets):
            plan.add("stream line", f"{rel}:{n} (a tombstone line in its place)")
            plan.ops.line(rel, n, self.lines(rel)[n - 1], new_texts[rel][n - 1])
        self._rehash(plan, new_texts)
        self._rewrite_records(plan, records, kept, new_texts, targets)
        if os.path.isdir(self.home.cache):
            plan.add("cache", "cache/ (rebuilt as it is used)")
            plan.ops.rmtree("cache")
        return plan

    @staticmethod
    def _cites(sources, targets) -> bool:
        """Whether any of `sources` ({"path", "lines"} each) covers a line being forgotten."""
        for s in sources:
            span = s.get("lines") if isinstance(s, dict) else None
            if isinstance(span, list) and len(span) == 2 and \
                    any(f == s.get("path") and span[0] <= n <= span[1] for f, n in targets):
                return True
        return False

    def _new_texts(self, targets) -> dict[str, list[str]]:
        """The stream files' lines with a tombstone line in place of each forgotten one."""
        from anima.stream import derived

        tomb = derived.tombstone_line(self.today, self.lang)
        new_texts: dict[str, list[str]] = {}
        for rel, n in sorted(targets):
            lines = new_texts.setdefault(rel, list(self.lines(rel)))
            end = "\n" if lines[n - 1].endswith("\n") else ""
            if not derived.is_tombstone(lines[n - 1]):  # forgotten before (a re-run): kept as it is
                lines[n - 1] = tomb + end
        return new_texts

    def _derivations(self, records: list[dict], targets) -> tuple[list[dict], dict, dict]:
        """The provenance records that stay (copies, to be rewritten), the memory lines to drop
        by file, and the autobiography entries citing a forgotten line (id -> front matter)."""
        from anima.self import autobiography

        kept, gone_lines, entries = [], {}, {}
        for r in (json.loads(json.dumps(r)) for r in records):  # copies: `records` stays what was read
            if not self._cites(r.get("sources") or [], targets):
                kept.append(r)
            elif "entry" in r:
                entries[str(r["entry"])] = None
                kept.append(r)
            else:
                at = self._memory_line(r)
                if at is not None:
                    gone_lines.setdefault(r["path"], set()).add(at)
        for eid, meta, body in autobiography.entries(self.home):
            named = [_range(x) for x in meta.get("sources") or []]
            if eid in entries or self._cites([x for x in named if x], targets):
                entries[eid] = meta if not meta.get("forgotten") else None
                if meta.get("forgotten"):  # by a forget that was killed before its records were written
                    for r in kept:
                        if str(r.get("entry")) == eid:
                            r["sha256"], r["forgotten"] = sha(body), meta["forgotten"]
        return kept, gone_lines, {k: v for k, v in entries.items() if v is not None}

    def _drop_memory_lines(self, plan: Plan, gone_lines: dict, kept: list[dict]) -> None:
        for path, gone in sorted(gone_lines.items()):
            old = self.lines(path)
            for i in sorted(gone):
                plan.add("memory line", f"{path}:{i + 1}")
            for i in sorted(gone, reverse=True):  # from the bottom: each drop leaves the lines above in place
                plan.ops.drop(path, i + 1, old[i])
            for r in kept:  # the lines after a removed one move up
                if r.get("path") == path and "line" in r:
                    at = self._memory_line(r)
                    if at is not None:
                        r["line"] = at + 1 - sum(1 for i in gone if i < at)

    def _tombstone_entries(self, plan: Plan, entries: dict, kept: list[dict]) -> None:
        """Each entry citing a forgotten line becomes a tombstone, and the summary block is
        written without them."""
        from anima.self import autobiography

        written = {}
        for eid, meta in sorted(entries.items()):
            path = os.path.join(autobiography.directory(self.home), eid + ".md")
            rel = self.home.rel(path)
            new_meta, body = autobiography.tombstone(meta, self.today, self.lang)
            data = autobiography.render(new_meta, body)
            written[eid] = (new_meta, body)
            plan.add("autobiography entry", f"{rel} (its body a tombstone)")
            plan.ops.replace(rel, data)
            for r in kept:
                if str(r.get("entry")) == eid:
                    r["sha256"] = sha(autobiography.parse(data, path)[1])
                    r["forgotten"] = self.today
        if written:
            self._summary(plan, written, [(str(m.get("date", ""))[:10], str(m.get("summary") or "").strip())
                                          for m in entries.values()])

    def _rehash(self, plan: Plan, new_texts: dict[str, list[str]]) -> None:
        """The stream's bookkeeping keeps the hash of each entry that changes: of its new text."""
        hashes = {}
        for rel, lines in new_texts.items():
            for s, e in self.blocks(rel):
                old, new = "".join(self.lines(rel)[s:e]), "".join(lines[s:e])
                if old != new:
                    hashes[sha(old)] = sha(new)
        pairs = sorted(hashes.items())
        for path in (self.stream.book, self.home.path("pipeline", "internalize.journal")):
            data = fs.read_text(path) or ""
            if any(old in data for old, _ in pairs):
                plan.add("stream hashes", self.home.rel(path))
                plan.ops.rehash(path, pairs)

    def _rewrite_records(self, plan: Plan, records: list[dict], kept: list[dict], new_texts, targets) -> None:
        """pipeline/derived.jsonl without what was dropped, its sources' hashes of the new text."""
        from anima.stream import derived

        for r in kept:
            for s in r.get("sources") or []:
                if self._cites([s], targets) and s.get("path") in new_texts:
                    s["sha256"] = sha(derived.source_text(new_texts[s["path"]], *s["lines"]))
        text = derived.render(kept)
        if text != derived.render(records):
            rel = self.home.rel(derived.path(self.home))
            plan.add("provenance records", rel)
            plan.ops.replace(rel, text)

    def _summary(self, plan: Plan, written: dict, told: list[tuple[str, str]]) -> None:
        from anima.self import autobiography, blocks

        key = "autobiography_summary"
        path = blocks.block_path(self.home.blocks, key)
        rel = self.home.rel(path)
        current = blocks.read(self.home.blocks, key)
        # the versions kept in history told those entries too (a model's summary may quote the
        # day): their line of each keeps the day, not the words
        gone = phrases.word(self.lang, "autobiography", "summary_forgotten")
        hist = blocks.history_dir(self.home.blocks, key)
        revs = blocks.revisions(self.home.blocks, key)
        for n in revs:
            old = fs.read_text(os.path.join(hist, f"{n}.md")) or ""
            new = "".join(_untold(line, told, gone) for line in old.splitlines(keepends=True))
            if new != old:
                where = self.home.rel(os.path.join(hist, f"{n}.md"))
                plan.add(f"{key} line", f"{where} (the day kept, not the words)")
                plan.ops.replace(where, new)
        if current is None:
            return
        old_text = fs.read_text(path) or ""
        scrubbed = "".join(_untold(line, told, gone) for line in old_text.splitlines(keepends=True))
        found = [(eid, *written.get(eid, (meta, body))) for eid, meta, body in autobiography.entries(self.home)]
        body = blocks.normalise(autobiography.summary(found, self.lang, self.cfg["consolidate.recent_days"],
                                                      self.cfg["self.block_max_chars"], self.today))
        body = body or blocks.normalise(blocks.starter_body(self.lang, key))
        if current.body == body or current.locked:
            if scrubbed != old_text:
                plan.add(f"{key} line", f"{rel} (the day kept, not the words)")
                plan.ops.replace(rel, scrubbed)
            if current.body != body:
                plan.add(f"{key} block is locked, not written without it", rel)
            return
        # as blocks.write does it: the current version (scrubbed) into history, then the new one
        version = os.path.relpath(os.path.join(hist, f"{(revs[-1] if revs else 0) + 1}.md"), self.home.root)
        new = blocks.Block(key, current.title, current.locked, clock.iso(self.now), body, current.extra)
        plan.add(f"{key} block", f"{rel} (written without it; the version before kept in {version})")
        plan.ops.create(version, scrubbed)
        plan.ops.replace(rel, blocks.render(new))

    def _memory_line(self, r: dict) -> int | None:
        """The 0-based line a memory record names, found by its hash (a hand may have moved it)."""

        if not self.home.holds(os.path.join(self.home.root, r["path"])):
            return None  # a record naming a file outside the home (edited by hand): anima writes only under it
        lines = self.lines(r["path"])
        line = r.get("line")
        if isinstance(line, int) and 1 <= line <= len(lines) and sha(lines[line - 1].rstrip("\n")) == \
                r.get("sha256"):
            return line - 1
        return next((i for i, x in enumerate(lines) if sha(x.rstrip("\n")) == r.get("sha256")), None)

    def _event_files(self, events: set) -> list[str]:
        """The queue files (and their .reason) of the events the forgotten entries were."""
        found = []
        if not events:
            return found
        for top, dirs, names in os.walk(self.home.path("pipeline")):
            dirs.sort()
            for name in sorted(names):
                if not name.endswith(".json"):
                    continue
                path = os.path.join(top, name)
                try:
                    obj = jsontext.loads(fs.read_text(path) or "")
                except ValueError:
                    continue
                if not isinstance(obj, dict):
                    continue
                envelope, payload = obj.get("envelope") or {}, obj.get("payload") or {}
                if (isinstance(envelope, dict) and envelope.get("id") in events) or \
                        (isinstance(payload, dict) and payload.get("event") in events):
                    found.append(path)
                    if os.path.exists(path + ".reason"):
                        found.append(path + ".reason")
        return found


def _untold(line: str, told: list[tuple[str, str]], gone: str) -> str:
    for day, summary in told:
        if day and summary and line.startswith(f"- {day}") and summary in line:
            line = line.replace(summary, gone)
    return line


def _range(source) -> dict | None:
    """{"path", "lines"} of an entry's front-matter source FILE:FIRST-LAST."""
    import re

    m = re.fullmatch(r"(.+):(\d+)-(\d+)", str(source))
    return {"path": m[1], "lines": [int(m[2]), int(m[3])]} if m else None
