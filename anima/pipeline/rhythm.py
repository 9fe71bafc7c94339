"""Rhythm: cron rules that strike the hours of her day, and the chores of each heartbeat.

A rule is a name and a 5-field cron expression (config.toml, [rhythm.rules]). It is read in
the machine's local time (TZ respected), as cron reads a crontab; the instants compared and
stored are UTC. Each scheduled minute fires at most once, however often or late `anima tick`
runs:

- a rule fires its latest scheduled minute at or before now, if that minute is after the
  one it last fired and at most `rhythm.catch_up` minutes ago; after downtime only the
  latest missed minute fires, and older ones never;
- a scheduled minute stands for the first instant at which the local clock shows it (or a
  later minute): the hour repeated when daylight saving time ends holds the same scheduled
  minutes twice, fired once, on their first pass; a minute skipped when it begins fires at
  the jump;
- the last fired instant only moves forward, so a clock set backwards fires nothing again.

pipeline/heartbeat/rhythm.json keeps, per rule, its expression, the instant it last fired and
the instant its next scheduled minute begins; a tick before the earliest of those does no
cron arithmetic at all (and never imports the cron library).
"""

import json
import os
import time
import zlib

from anima.infra import clock, fs, jsontext
from anima.infra.errors import DataError, Refused
from anima.pipeline import queues

LABELS = {  # what a rule's trigger says, in core.lang; a rule of another name is labelled by its name
    "hourly": {"zh": "整点", "en": "the hour strikes"},
    "morning": {"zh": "早晨", "en": "morning"},
    "evening": {"zh": "夜晚", "en": "evening"},
    "midnight": {"zh": "午夜", "en": "midnight"},
    "nudge": {"zh": "很久没有做决定了", "en": "a long while without deciding anything"},
}
NUDGE = "nudge"  # the rule that fires only when she has decided nothing for reflect.nudge_hours
RULES_TABLE = "rhythm.rules"
OFF = "off"
NODE = "tick"
SWEPT = ("pending", "system", "message", "action", "rhythm")


def rules(values: dict) -> dict[str, str]:
    """The rules switched on in a loaded config: name -> cron expression."""
    prefix = RULES_TABLE + "."
    return {key[len(prefix):]: value for key, value in values.items() if key.startswith(prefix) and value != OFF}


def label(name: str, lang: str) -> str:
    return LABELS.get(name, {}).get(lang, name)


def _wall(t: float) -> tuple:
    """The local clock's minute at instant `t`: (year, month, day, hour, minute)."""
    return tuple(time.localtime(t)[:5])


def _instant(wall: tuple) -> int:
    """The first instant at which the local clock shows the minute `wall` or later.

    That is the minute's first pass in the hour repeated when daylight saving time ends, and
    for a minute skipped when it begins, the jump itself. Later minutes never get earlier
    instants.
    """
    from datetime import datetime, timezone

    as_utc = int(datetime(*wall, tzinfo=timezone.utc).timestamp())
    offsets = {time.localtime(as_utc + d).tm_gmtoff for d in (-86400, 0, 86400)}
    candidates = sorted(as_utc - offset for offset in offsets)
    for t in candidates:
        if _wall(t) == wall:
            return t
    lo, hi = candidates[0], candidates[-1]  # in a gap: before the jump, and after it
    if not _wall(lo) < wall <= _wall(hi):
        return candidates[0]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _wall(mid) >= wall:
            hi = mid
        else:
            lo = mid
    return hi


def _occurrences(expr: str, now: float) -> tuple[float | None, float | None]:
    """Instants of the latest scheduled minute at or before `now` and of the next after it."""
    from datetime import datetime, timedelta

    from croniter import CroniterBadDateError, croniter

    here = datetime(*_wall(now))
    try:
        last = _instant(croniter(expr, here + timedelta(minutes=1)).get_prev(datetime).timetuple()[:5])
    except CroniterBadDateError:
        last = None
    try:
        following = _instant(croniter(expr, here).get_next(datetime).timetuple()[:5])
    except CroniterBadDateError:
        following = None
    return last, following


def _load_state(path: str) -> dict:
    text = fs.read_text(path)
    if text is None:
        return {}
    try:
        state = jsontext.loads(text)
    except ValueError as e:
        raise DataError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(state, dict) or not isinstance(state.get("rules"), dict):
        raise DataError(f"{path}: not a rhythm state (needs a \"rules\" object)")
    return state["rules"]


def _when(entry: dict, key: str, path: str) -> float | None:
    value = entry.get(key)
    return None if value is None else clock.parse(value, f"{path}: {key}", DataError)


def _next(entry: dict, path: str) -> float | None:
    """When the rule is next due; -inf (due now) when the file's "next" is no time anima takes.
    "next" is only the cron arithmetic saved, made again from the rule whenever it is due: an
    older anima wrote 9000-01-01 after the last minute of 8999, and refusing it here would stop
    every tick for good."""
    try:
        return _when(entry, "next", path)
    except DataError:
        return float("-inf")


def problems(home) -> list[tuple[str, bool, str]]:
    """(rule, whether it stops tick, what) for each time in rhythm.json that anima does not
    take: a "fired" stops tick (it is what keeps a minute from firing twice, and is never
    guessed), a "next" the next tick makes again. DataError when the file is no rhythm state."""
    path = home.path("pipeline", "heartbeat", "rhythm.json")
    found = []
    for name, entry in sorted(_load_state(path).items()):
        for key in ("fired", "next"):
            try:
                _when(entry if isinstance(entry, dict) else {}, key, path)
            except DataError as e:
                then = ("anima tick fails once the rule is due, until it is corrected" if key == "fired"
                        else "the next tick makes it again")
                found.append((name, key == "fired", f"{str(e).removeprefix(path + ': ')}; {then}"))
    return found


def _trigger(name: str, at: float, lang: str, now: float, extra: dict | None = None) -> dict:
    """A rule's trigger. Its id is made from the rule and the scheduled minute, so a tick
    killed before it saved its state delivers the same file again, and preprocess passes it
    on only once."""
    doc = queues.envelope("rhythm", NODE, {"rule": name, "label": label(name, lang), "at": clock.iso(at),
                                           **(extra or {})}, "trigger", now=now)
    doc["envelope"]["id"] = f"trigger_{int(at) * 10**9:020d}{zlib.crc32(name.encode()):08x}"
    return doc


def _idle(entry: dict, at: float, nudge, path: str) -> tuple[bool, dict, str]:
    """Whether the nudge fires at its scheduled minute `at`, what its trigger adds, and the
    "since" to keep.

    `nudge` is (hours, last_decision): she is idle since last_decision() (when she last
    decided something, or None), or, if she never decided anything, since the nudge was
    first looked at ("since" in rhythm.json). It fires once she has been idle that many
    hours, and once per idle stretch: not again until a decision newer than the last nudge
    ("fired") starts a new stretch."""
    nudge_hours, last_decision = nudge
    decided = last_decision()
    try:
        since = _when(entry, "since", path)
    except DataError:  # only where a stretch began: the nudge looks again from now
        since = None
    since = at if since is None else since
    start = decided if decided is not None else since
    fired = _when(entry, "fired", path)
    if fired is not None and (decided is None or decided <= fired):
        return False, {}, clock.iso(since)  # this stretch had its nudge
    if at - start < nudge_hours * 3600:
        return False, {}, clock.iso(since)
    return True, {"idle_since": None if decided is None else clock.iso(decided)}, clock.iso(since)


def fire(home, rule_exprs: dict[str, str], catch_up_min: int, lang: str, now: float,
         consolidate_rule: str | None = None, nudge=None) -> list[dict]:
    """Fire every rule that is due at `now` into rhythm/triggers; return what fired
    ({"rule", "at"} each). The caller holds the tick lock. The trigger of `consolidate_rule`
    carries "consolidate": true; the rule "nudge" fires only when she has decided nothing
    for a while (`_idle`, with `nudge` = (hours, last_decision); None: like any rule)."""
    path = home.path("pipeline", "heartbeat", "rhythm.json")
    state = _load_state(path)
    due = []
    for name, expr in rule_exprs.items():
        entry = state.get(name)
        if not isinstance(entry, dict) or entry.get("cron") != expr:
            due.append(name)
            continue
        following = _next(entry, path)
        if following is not None and now >= following:
            due.append(name)
    if not due and set(state) <= set(rule_exprs):
        return []  # nothing can be due: no cron arithmetic, no cron library
    minute = now - now % 60
    fired = []
    rhythm = queues.Queue(home, "rhythm")
    new_state = {}
    for name, expr in rule_exprs.items():
        entry = state.get(name) if isinstance(state.get(name), dict) else {}
        if name not in due:
            new_state[name] = entry
            continue
        last_fired = _when(entry, "fired", path)
        latest, following = _occurrences(expr, now)
        extra: dict = {"consolidate": True} if name == consolidate_rule else {}
        since = entry.get("since") if name == NUDGE and nudge is not None else None
        if (latest is not None and latest <= now and (last_fired is None or latest > last_fired)
                and minute - latest <= catch_up_min * 60):
            go = True
            if name == NUDGE and nudge is not None:
                go, more, since = _idle(entry, latest, nudge, path)
                extra.update(more)
            if go:
                rhythm.deliver(_trigger(name, latest, lang, now, extra))
                fired.append({"rule": name, "at": clock.iso(latest)})
                last_fired = latest
        if latest is not None and latest > now:  # cannot happen with sane zones; look again then
            following = latest if following is None else min(latest, following)
        new_state[name] = {"cron": expr, "fired": None if last_fired is None else clock.iso(last_fired),
                           "next": None if following is None else clock.iso(following)}
        if since is not None:
            new_state[name]["since"] = since
        if following is not None and following >= clock.LATEST:
            # never write a time anima would refuse to read back: the rule rests, and says why
            new_state[name]["next"] = None
            new_state[name]["note"] = (f"no scheduled minute before {clock.iso(clock.LATEST)}, "
                                       "the end of the years anima takes")
    fs.atomic_write(path, json.dumps({"rules": new_state}, ensure_ascii=False, indent=1) + "\n")
    return fired


def sweep(home, now: float, by: str) -> int:
    """Move every waiting file whose envelope timestamp + ttl_sec is past to dead_letter/
    (why: "ttl"); return how many. A file a consumer claimed first is left to it; a file that
    is not a valid envelope is left for preprocess to dead-letter."""
    moved = 0
    for name in SWEPT:
        queue = queues.Queue(home, name)
        for file in queue.ready():
            path = os.path.join(queue.dir, file)
            try:
                doc = queue.read(path)
            except (DataError, OSError, Refused):
                continue
            env = doc["envelope"]
            ttl = env.get("ttl_sec")
            if ttl is None or clock.parse(env["timestamp"], path, DataError) + ttl >= now:
                continue
            if queue.claim(file) is None:
                continue  # a consumer took it first
            queue.fail(file, file, "ttl", by, now)
            moved += 1
    return moved
