"""Heat: how alive a self-note is, and notes/heat.json, where its use is counted.

    heat = (1 + ln(1 + hits)) x 0.5^(idle_days / half_life) x (1 + 0.5 x importance)

hits are the injections of the note into a prompt (at most one an hour), idle_days the days
since the last one (or since the note was added), half_life notes.half_life_days, importance
0-3, a person's. A cold note only sinks in the ranking; nothing retires it.

heat.json, keyed by note id like meta.json:

    {"notes": {"n1a2b3c4d": {"hits": 3, "last": 1796072700}}, "ranking": {"key", "order"}}

`ranking` is the order frozen for the current notes.md and meta.json, so that `anima prompt`
prints the same bytes until a note is edited even though every injection changes the hits.
"""

import json

from anima.infra import clock, fs, jsontext
from anima.infra.errors import DataError, Refused

HOUR = 3600
DAY = 86400
DEFAULT_IMPORTANCE = 1


def heat(hits: int, idle_days: float, half_life: float, importance: int) -> float:
    """(1 + ln(1 + hits)) x 0.5^(idle_days / half_life) x (1 + 0.5 x importance)."""
    import math  # only where notes are ranked: a warm prompt imports this module to count injections

    return (1 + math.log(1 + hits)) * 0.5 ** (idle_days / half_life) * (1 + 0.5 * importance)


def keyed(path: str, text: str | None = None) -> dict:
    """A notes/ JSON file keyed by note id ({"notes": {id: {...}}}: heat.json, meta.json), from
    `text` or read; an empty one when there is none, DataError naming the file when broken."""
    if text is None:
        text = fs.read_text(path)
    if text is None:
        return {"notes": {}}
    try:
        data = jsontext.loads(text)
    except ValueError as e:
        raise DataError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("notes"), dict):
        raise DataError(f"{path}: expected an object with a \"notes\" object")
    if not all(isinstance(entry, dict) for entry in data["notes"].values()):
        raise DataError(f"{path}: every entry of \"notes\" must be an object")
    return data


def write_keyed(path: str, data: dict) -> None:
    fs.atomic_write(path, json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n")


def factors(note, meta: dict, usage: dict, created: float, half_life: int, now: float) -> dict:
    """Every factor of a note's heat at `now` (`created`: when it was added), so that a person
    can recompute it."""
    m = meta["notes"].get(note.id, {})
    u = usage["notes"].get(note.id, {})
    hits, last = int(u.get("hits", 0)), u.get("last")
    idle = max(0.0, (now - (last if last is not None else created)) / DAY)
    importance = int(m.get("importance", DEFAULT_IMPORTANCE))
    return {
        "id": note.id, "text": note.text, "line": note.line, "chars": len(note.text),
        "hits": hits, "last_injected": clock.iso(last) if last is not None else None,
        "created": clock.iso(created), "author": m.get("author", "person"),
        "idle_days": idle, "half_life_days": half_life, "importance": importance,
        "heat": heat(hits, idle, half_life, importance),
    }


def ranked(notes: list, meta: dict, usage: dict, created, half_life: int, now: float) -> list:
    """Hottest first; among equals, the newer (lower in the file) first. `created(id)`: when
    a note was added."""
    scores = {n.id: factors(n, meta, usage, created(n.id), half_life, now)["heat"] for n in notes}
    return sorted(notes, key=lambda n: (-scores[n.id], -n.line))


def usage_path(home) -> str:
    """notes/heat.json of `home`."""
    return home.path("notes", "heat.json")


class Usage:
    """notes/heat.json of one home. The writes are made under the notes' lock, held by the
    caller (anima.notes.store.Store.lock)."""

    def __init__(self, path: str):
        self.path = path

    # Counts of use, and a frozen order: a note is whole without them, so a link (or what is no
    # regular file) in their place makes every note cold and unranked, not a command refused;
    # it is never written through.
    def read(self) -> dict:
        try:
            return keyed(self.path)
        except Refused as e:
            fs.went_without(e)
            return {"notes": {}}

    def write(self, usage: dict) -> None:
        try:
            write_keyed(self.path, usage)
        except Refused as e:
            fs.went_without(e)

    def bump(self, nid: str, now: float) -> None:
        """Refresh a note's heat: one more hit, idle from now."""
        usage = self.read()
        _hit(usage, nid, now)
        self.write(usage)

    def forget(self, ids: set) -> None:
        """Drop the hits of notes that left notes.md: the same text added again is a new note."""
        usage = self.read()
        if ids & set(usage["notes"]):
            usage["notes"] = {i: u for i, u in usage["notes"].items() if i not in ids}
            self.write(usage)

    def due(self, ids: list[str], now: float, usage: dict | None = None) -> list[str]:
        """The notes of `ids` whose injection at `now` counts: none was counted this past hour."""
        usage = self.read() if usage is None else usage
        return [i for i in ids if now - (usage["notes"].get(i, {}).get("last") or -HOUR) >= HOUR]

    def inject(self, ids: list[str], now: float) -> None:
        """Count one injection per note printed, at most one per note per hour."""
        usage = self.read()
        for i in self.due(ids, now, usage):
            _hit(usage, i, now)
        self.write(usage)


def _hit(usage: dict, nid: str, now: float) -> None:
    entry = usage["notes"].setdefault(nid, {"hits": 0, "last": None})
    entry["hits"] = int(entry.get("hits", 0)) + 1
    entry["last"] = int(now)
