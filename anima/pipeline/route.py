"""`anima route`: move files between Pool B's queues by a topology in config.toml.

[[routes.rules]] entries, tried in order, each taking every file waiting in its `from`
queue (a queue of anima's, or a plain name: pipeline/NAME/):

- switch:    `cases` = [{when = [[PATH, OP, VALUE], ...], to = Q}, ...], first case whose
             conditions all hold wins; `default` = Q takes the rest.
- broadcast: `to` = [Q, ...], a copy to each.
- merge:     files grouped by trace id; `mode` "all" waits for `expect` of them and delivers
             one file whose payload is {"parts": [...]} (oldest first); "any" passes on the
             first of a group and finishes the others; a group older than `timeout_sec`
             that is still incomplete goes to dead_letter/ (why "merge timeout").

A condition is [PATH, OP, VALUE]: PATH dotted into the file ("payload.speaker",
"envelope.source_type"); OP one of == != < > in contains exists matches (a regular
expression, searched); `exists` takes no VALUE. A file a condition cannot be evaluated on
(a path that is missing, values that do not compare) does not match. One pass per call; an
invalid topology is a configuration error before anything moves.
"""

import json
import os
import re
import zlib

from anima.infra import clock
from anima.infra.errors import DataError
from anima.pipeline import queues

_MISSING = object()


def _get(doc, path: str):
    node = doc
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def holds(cond: list, doc: dict) -> bool:
    value = _get(doc, cond[0])
    if cond[1] == "exists":
        return value is not _MISSING
    if value is _MISSING:
        return False
    want = cond[2]
    try:
        if cond[1] == "==":
            return value == want
        if cond[1] == "!=":
            return value != want
        if cond[1] == "<":
            return value < want
        if cond[1] == ">":
            return value > want
        if cond[1] == "in":
            return value in want
        if cond[1] == "contains":
            return want in value
        return isinstance(value, str) and re.search(str(want), value) is not None
    except TypeError:
        return False


def _copy(doc: dict, target: queues.Queue, suffix: str) -> None:
    """Deliver a copy named after the original (and the route), once."""
    copy = json.loads(json.dumps(doc))
    copy["envelope"]["id"] = f"{doc['envelope']['id']}_{suffix}"
    if not target.has(copy["envelope"]["id"] + ".json"):
        target.deliver(copy)


def run(home, rules: list, now: float, by: str = "anima route") -> dict:
    """One pass of every rule at `now`, under a lock (a second route at once is Busy: exit 75)."""
    from anima.infra import fs

    with fs.locked(home.path("pipeline", "route"), wait=False, what="anima route (another one is running)"):
        return _run(home, rules, now, by)


def _run(home, rules: list, now: float, by: str) -> dict:
    counts = {"moved": 0, "merged": 0, "dead": 0}
    for rule in rules:
        source = queues.Queue.of(home, rule["from"])
        source.recover()  # what a killed route left claimed
        if rule["kind"] == "merge":
            _merge(home, rule, source, counts, now, by)
            continue
        dead: list = []
        for name, doc in source.take(by, now, dead):
            if rule["kind"] == "broadcast":
                targets = rule["to"]
            else:
                targets = [next((c["to"] for c in rule["cases"] if all(holds(w, doc) for w in c["when"])),
                                rule["default"])]
            for t in targets:
                _copy(doc, queues.Queue.of(home, t), rule["name"])
            source.finish(name)
            counts["moved"] += 1
        counts["dead"] += len(dead)
    return counts


def _merge(home, rule: dict, source: queues.Queue, counts: dict, now: float, by: str) -> None:
    mode, expect, timeout = rule.get("mode", "all"), rule.get("expect", 2), rule.get("timeout_sec", 600)
    target = queues.Queue.of(home, rule["to"])
    groups: dict[str, list] = {}
    for name in source.ready():
        try:
            doc = source.read(os.path.join(source.dir, name))
        except DataError:
            continue  # left for the consumer of that queue to dead-letter
        groups.setdefault(doc["envelope"]["trace_id"], []).append((name, doc))
    for trace, parts in groups.items():
        merged_id = f"msg_merge{zlib.crc32((rule['name'] + chr(0) + trace).encode()):08x}"
        merged_name = merged_id + ".json"
        already = target.has(merged_name)
        if mode == "any" or len(parts) >= expect or already:
            claimed = [(n, d) for n, d in parts if source.claim(n) is not None]
            if not claimed:
                continue
            if not already:
                first = claimed[0][1]
                payload = first["payload"] if mode == "any" else {"parts": [d["payload"] for _, d in claimed[:expect]]}
                doc = queues.envelope(first["envelope"]["source_type"], f"route:{rule['name']}", payload, "msg", trace,
                                      now=now)
                doc["envelope"]["id"] = merged_id
                target.deliver(doc)
                counts["merged"] += 1
            for n, _ in claimed:
                source.finish(n)
            continue
        oldest = min(clock.parse(d["envelope"]["timestamp"], n, DataError) for n, d in parts)
        if now - oldest > timeout:
            for n, _ in parts:
                if source.claim(n) is not None:
                    source.fail(n, n, "merge timeout", by, now)
                    counts["dead"] += 1

