"""The heartbeat: what one `anima tick` does to run her day, and whether anything is due.

`run` takes the steps of tick.steps, always in this order, each the work of a command that
also runs alone:

    rhythm       fire the due rules of [rhythm.rules]          (anima.pipeline.rhythm)
    sweep        waiting files past their ttl_sec to dead_letter/
    preprocess   waiting events into message_queue              anima preprocess
    internalize  she lives them, in now.md                      anima internalize
    reflect      with a model, she reflects (below)
    externalize  her decisions become actions                   anima externalize
    dispatch     the actions are carried out                    anima dispatch
    preprocess, internalize again: the results, lived as her deeds, in the same minute
    roll         now.md into the archive when due               anima stream roll
    index        the recall index, when it is on, every INDEX_EVERY_MIN  anima index update
    consolidate  after the night she lived (below)              anima consolidate

A step that fails is reported (`run` returns (step, message, exit status) for each) and the
others still run, but for a home that takes no write (UNWRITABLE): the tick ends there. A
step whose work another process holds (exit 75 when run alone) is left to it, quietly.

reflect: with a model backend (llm.backend, ANIMA_LLM) she reflects when something is new
since her last reflection, and when reflect.every_minutes have passed since the last one
tick let her make, on her recent stream even if nothing is new (pipeline/heartbeat/reflect.json,
{"at"}); the model-call budget is llm.ask's. With the rules backend nothing happens.

consolidate: when the rhythm step fires consolidate.rule, pipeline/heartbeat/consolidate.json
({"rule", "at"}) remembers it. The step consolidates once she has lived that night: a record
of pipeline/stream.jsonl by internalize carrying that rule, after the last consolidation (the
records since pipeline/consolidate.cursor). Then the file goes; it goes too when a
consolidation ran after the trigger's time (`anima consolidate` by hand).

pipeline/heartbeat/tick.json, rewritten by every tick: {"at", "pid", "fired", "failed" (the
steps that failed in the last tick that ran its steps), "book" (the size of
pipeline/stream.jsonl after the tick), "now" (now.md's [size, mtime in ns] after it), "indexed"
(the last index update), "wake" (seconds
since the epoch: the earliest time a timer is due, a rule's next minute, the reflection's,
the index's; null: none)}. `due` reads it.
"""

import errno
import os

from anima.infra.errors import AnimaError

HEARTBEAT = ("pipeline", "heartbeat", "tick.json")
NIGHT = ("pipeline", "heartbeat", "consolidate.json")
REFLECTED = ("pipeline", "heartbeat", "reflect.json")
INDEX_EVERY_MIN = 10  # the recall answers right meanwhile: it scans what the index lacks
# a home that takes no write at all (a full disk, a quota, a size limit, a read-only mount): the
# tick ends at the step that met it
UNWRITABLE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})
# the queues a step takes files from (anima.infra.home.QUEUES; importing it costs 5 ms)
# what reading a small state file of ours may raise when it is damaged, or not one anima wrote
UNREADABLE = (ValueError, KeyError, TypeError, AttributeError, AnimaError)
WAITING = ("inbox/pending", "inbox/system", "rhythm/triggers", "message_queue", "action_queue")


def due(root: str, now: float) -> bool:
    """Whether `anima tick` at `now` has anything to do in the home at `root`; when it says
    no, a tick only refreshes the heartbeat. It imports nothing but anima.infra.fs (and json)
    and reads small files: tick.json's "wake", "book" and its time against config.toml's and
    rhythm.json's (a changed setting or rule state may change what is due), whether any queue of WAITING holds a *.json
    file, whether pipeline/stream.jsonl grew (a thought to act on), a pending change set or
    night (pipeline/*.pending, heartbeat/consolidate.json), and whether now.md changed since
    (the roll's own time, when its oldest entry is old enough, is one of "wake"'s). It may
    say yes when a full tick then finds nothing to do; it never says no when one would find
    something, but a claimed file a killed command left in a queue's cur/ waits for the next
    tick that is due.

    A click-free entry point wires it as `anima tick` does: `now` from --now, ANIMA_NOW or
    the clock; the lock (fs.locked on HEARTBEAT's path, wait=False; held: exit 75, silent);
    then, when due() says no, beat_only() and exit 0; else the command itself."""
    import json

    from anima.infra import fs

    def path(*names):
        return os.path.join(root, *names)

    try:
        beat = json.loads(fs.read_bytes(path(*HEARTBEAT)) or b"")
        beat_time = fs.status(path(*HEARTBEAT)).st_mtime_ns
        wake, book = beat["wake"], beat["book"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return True  # never ticked (or a tick of an older anima): a full one
    if wake is not None and now >= wake:
        return True
    for changed in (path("config.toml"), path("pipeline", "heartbeat", "rhythm.json")):  # by hand, say
        st = fs.status(changed)
        if st is not None and st.st_mtime_ns >= beat_time:  # the same coarse tick of the clock: changed after, maybe
            return True
    for queue in WAITING:
        try:
            if any(n.endswith(".json") and not n.startswith(".") for n in fs.listdir(path("pipeline", queue))):
                return True
        except FileNotFoundError:
            pass
    stream = fs.status(path("pipeline", "stream.jsonl"))
    if (0 if stream is None else stream.st_size) != book:
        return True
    if any(fs.status(path("pipeline", name)) is not None for name in ("consolidate.pending", "forget.pending")) \
            or fs.status(path(*NIGHT)) is not None:
        return True
    # the roll's time is in "wake"; now.md other than the last tick left it (an edit by hand) is news
    return _seen(fs.status(path("self", "stream", "now.md"))) != beat.get("now")


def _seen(st) -> list | None:
    """now.md as a tick saw it: [size, mtime in ns], None when there is none."""
    return None if st is None else [st.st_size, st.st_mtime_ns]


def run(home, cfg, now: float, warn, by: str = "anima tick", debug: bool = False) -> list[tuple[str, str, int]]:
    """One heartbeat at `now`, the caller holding the tick lock: the steps of tick.steps, in
    order; (step, message, exit status) for each that failed. `warn` says what a step wants a
    person to know (a consolidation's warnings) on stderr. With `debug` (ANIMA_DEBUG=1) a bug
    in a step is raised, traceback and all, instead of being reported."""
    from anima.infra import clock, fs, jsontext
    from anima.infra.errors import SOFTWARE

    steps = set(cfg["tick.steps"])
    failed: list[tuple[str, str, int]] = []
    beat_path = home.path(*HEARTBEAT)
    try:
        before = jsontext.loads(fs.read_text(beat_path) or "{}")
        before = before if isinstance(before, dict) else {}
    except ValueError:
        before = {}
    beat = {"at": clock.iso(now), "pid": os.getpid(), "fired": [], "failed": [],
            "indexed": before.get("indexed")}

    stopped = []

    def step(name, work, *args):
        if name not in steps or stopped:
            return
        try:
            work(*args)
        except Exception as e:
            problem = _problem(e)
            if debug and problem is not None and problem[1] == SOFTWARE:
                raise
            if problem is not None and (name, *problem) not in failed:
                failed.append((name, *problem))
            if isinstance(e, OSError) and e.errno in UNWRITABLE:
                stopped.append(name)  # every step after it would meet the same, and leave half a step

    step("rhythm", _rhythm, home, cfg, now, beat)
    step("sweep", _sweep, home, now, by)
    step("preprocess", _preprocess, home, now, by)
    step("internalize", _internalize, home, cfg, now)
    step("reflect", _reflect, home, cfg, now)
    step("externalize", _externalize, home, cfg, now)
    step("dispatch", _dispatch, home, cfg, now)
    if "dispatch" in steps:  # the results, lived in the same minute
        step("preprocess", _preprocess, home, now, by)
        step("internalize", _internalize, home, cfg, now)
    step("roll", _roll, home, cfg, now)
    step("index", _index, home, cfg, now, beat, warn)
    step("consolidate", _consolidate, home, cfg, now, warn)
    if stopped:
        return failed  # the heartbeat cannot be written either
    beat["failed"] = sorted({name for name, _, _ in failed}, key=list(cfg["tick.steps"]).index)
    book = fs.status(home.path("pipeline", "stream.jsonl"))
    beat["book"] = 0 if book is None else book.st_size
    beat["now"] = _seen(fs.status(home.path("self", "stream", "now.md")))
    beat["wake"] = _wake(home, cfg, steps, beat)
    fs.atomic_write(beat_path, _json(beat), durable=False)  # a heartbeat lost is the next minute's
    return failed


def beat_only(home, now: float) -> None:
    """A tick with nothing due (`due` said no): the heartbeat's time moves, nothing else."""
    import json

    from anima.infra import clock, fs

    path = home.path(*HEARTBEAT)
    beat = json.loads(fs.read_bytes(path) or b"")
    beat.update(at=clock.iso(now), pid=os.getpid(), fired=[])  # "failed" stays the last steps' own
    fs.atomic_write(path, _json(beat), durable=False)


def _json(doc: dict) -> str:
    import json

    return json.dumps(doc, ensure_ascii=False) + "\n"


def _problem(e: Exception) -> tuple[str, int] | None:
    """A step's failure as (message, exit status); None when another process holds its work."""
    from anima.infra.errors import SOFTWARE, AnimaError, Busy, os_error_code, os_error_message

    if isinstance(e, Busy):
        return None
    if isinstance(e, AnimaError):
        return " ".join(str(e).split()), e.exit_code
    if isinstance(e, OSError) and os_error_code(e) is not None:
        return os_error_message(e), os_error_code(e)
    return f"internal error: {type(e).__name__}: {e}", SOFTWARE


# --- the steps --------------------------------------------------------------------------------

def _rhythm(home, cfg, now, beat) -> None:
    from anima.infra import fs
    from anima.pipeline import rhythm
    from anima.stream.externalize import last_decision

    rule = cfg["consolidate.rule"]

    fired = rhythm.fire(home, rhythm.rules(cfg.values), cfg["rhythm.catch_up"], cfg["core.lang"], now,
                        consolidate_rule=rule, nudge=(cfg["reflect.nudge_hours"], lambda: last_decision(home)))
    beat["fired"] = fired
    for f in fired:
        if f["rule"] == rule:
            fs.atomic_write(home.path(*NIGHT), _json({"rule": rule, "at": f["at"]}))


def _sweep(home, now, by) -> None:
    from anima.pipeline import rhythm

    rhythm.sweep(home, now, by)


def _preprocess(home, now, by) -> None:
    from anima.pipeline import events

    events.preprocess(home, now, by)


def _internalize(home, cfg, now) -> None:
    from anima.stream.internalize import Internalizer

    Internalizer(home, cfg, now).drain()


def _reflect(home, cfg, now) -> None:
    from anima.infra import clock, fs
    from anima.stream.externalize import Externalizer

    if cfg["llm.backend"] == "rules":
        return  # no model: no reflection
    path = home.path(*REFLECTED)
    every = cfg["reflect.every_minutes"]
    last = _last(path)
    timer = bool(every) and (last is None or now >= last + every * 60)
    reflected = Externalizer(home, cfg).reflect_now(now, again=timer)
    if reflected is not None or timer:
        fs.atomic_write(path, _json({"at": clock.iso(now)}))


def _last(path: str) -> float | None:
    from anima.infra import clock, fs, jsontext

    try:
        return clock.parse(jsontext.loads(fs.read_text(path) or "")["at"], "at")
    except UNREADABLE:  # none yet, or not one anima wrote: the timer is due
        return None


def _externalize(home, cfg, now) -> None:
    from anima.stream.externalize import Externalizer

    Externalizer(home, cfg).run(now)


def _dispatch(home, cfg, now) -> None:
    from anima.pipeline import dispatch

    dispatch.dispatch(home, cfg, now)


def _roll(home, cfg, now) -> None:
    from anima.stream.now import Stream

    Stream(home).roll(cfg["stream.max_lines"], now, keep_minutes=cfg["stream.keep_minutes"])


def _index(home, cfg, now, beat, warn) -> None:
    from anima.infra import clock
    from anima.recall import index

    if not cfg["index.enabled"]:
        return
    last = _last_iso(beat.get("indexed"))
    if last is not None and 0 <= now - last < INDEX_EVERY_MIN * 60:
        return
    index.update(home, cfg, lambda m: warn(f"warning: {m}"))
    beat["indexed"] = clock.iso(now)


def lived_night(home, rule: str) -> bool:
    """Whether she has lived a trigger of `rule` since the last consolidation: a record of
    pipeline/stream.jsonl by internalize, of a rhythm event carrying that rule, after the
    byte offset pipeline/consolidate.cursor names (or after the last consolidation's roll)."""
    from anima.infra import fs, jsontext
    from anima.stream import bookkeeping

    book = home.path("pipeline", "stream.jsonl")
    try:
        offset = int(jsontext.loads(fs.read_text(home.path("pipeline", "consolidate.cursor")) or "")["offset"])
    except (ValueError, KeyError, TypeError):
        offset = 0
    records, replaced = bookkeeping.Reader(book, offset).read()
    if replaced or not offset:
        records, _ = bookkeeping.Reader(book).read()
        for i in range(len(records) - 1, -1, -1):
            if records[i].get("by") == "roll" and records[i].get("why") == "consolidate":
                records = records[i + 1:]
                break
    return any(r.get("by") == "internalize" and r.get("source_type") == "rhythm" and r.get("rule") == rule
               for r in records)


def _consolidate(home, cfg, now, warn) -> None:
    from anima.infra import clock, fs, jsontext
    from anima.stream import consolidate

    path = home.path(*NIGHT)
    text = fs.read_text(path)
    if text is None:
        return
    try:
        night = jsontext.loads(text)
        rule, at = str(night["rule"]), clock.parse(night["at"], "at")
    except UNREADABLE:
        fs.remove(path)  # not one tick wrote: no night to wait for
        return
    last = _last(home.path("pipeline", "consolidate.cursor"))
    if last is not None and last >= at:  # consolidated since (by hand): that night is slept
        fs.remove(path)
        return
    if not lived_night(home, rule):
        return  # not lived yet: a later tick looks again
    _, c = consolidate.run(home, cfg, now)
    for message in c.warnings:
        warn(message)
    fs.remove(path)


def _wake(home, cfg, steps: set, beat: dict) -> float | None:
    """The earliest instant a timer of the next ticks is due (tick.json's "wake")."""
    from anima.infra import clock, fs, jsontext

    times = []
    if "rhythm" in steps:
        try:
            state = jsontext.loads(fs.read_text(home.path("pipeline", "heartbeat", "rhythm.json")) or "")["rules"]
            for entry in state.values():
                if entry.get("next") is not None:
                    times.append(clock.parse(entry["next"], "next"))
        except UNREADABLE:  # damaged, or none: look every minute (the rhythm step says what is wrong)
            return 0.0
        from anima.pipeline import rhythm

        if set(rhythm.rules(cfg.values)) - set(state):
            return 0.0
    if "reflect" in steps and cfg["llm.backend"] != "rules" and cfg["reflect.every_minutes"]:
        last = _last(home.path(*REFLECTED))
        times.append(0.0 if last is None else last + cfg["reflect.every_minutes"] * 60)
    if "roll" in steps:
        when = _roll_time(home, cfg["stream.keep_minutes"])
        if when is not None:
            times.append(when)
    if "index" in steps and cfg["index.enabled"]:
        last = _last_iso(beat.get("indexed"))
        times.append(0.0 if last is None else last + INDEX_EVERY_MIN * 60)
    return min(times) if times else None


def _roll_time(home, keep_minutes: int) -> float | None:
    """When the roll is due by age: the oldest entry's time, keep_minutes and their slack on
    (now, for text before any heading); None for an empty now.md. Over stream.max_lines it is
    due at once, but then the stream grew, which `due` sees."""
    from anima.stream.now import Stream, parse_heading, slack

    head = Stream(home).head(4096)
    if not head.strip():
        return None
    for line in head.split("\n"):
        started = parse_heading(line)
        if started is not None:
            return started + (keep_minutes + slack(keep_minutes)) * 60
    return 0.0


def _last_iso(value) -> float | None:
    from anima.infra import clock

    try:
        return clock.parse(value, "at")
    except UNREADABLE:
        return None
