"""`anima metrics`: how Pool B is doing, from the files alone (nothing is counted on the side).

Per queue: files waiting, claimed, done and dead (dead letters whose reason names it), and
the age of the oldest waiting one; events that arrived per hour over the last day (inbox
files by their time of writing); dispatch results from its journal; model calls from
log/llm.jsonl (when there is one); when the last tick ran (pipeline/heartbeat/tick.json: the
natural alert that cron stopped); the facts waiting for a person (candidates).
"""

import os

from anima.infra import clock, fs, jsontext
from anima.infra.errors import AnimaError
from anima.pipeline import queues


def _names(directory: str) -> list[str]:
    try:
        return [n for n in fs.listdir(directory) if n.endswith(".json") and not n.startswith(".")]
    except FileNotFoundError:
        return []


def _mtime(path: str) -> float | None:
    """A file's mtime, or None when it moved on between listing and looking (a consumer's claim)."""
    try:
        return os.stat(path).st_mtime
    except FileNotFoundError:
        return None


def collect(home) -> dict:
    now = clock.files_now_ns() / 1e9  # every age here is a file's: by the clock that stamps them
    dead_dir = home.path("pipeline", queues.DEAD)
    dead_by_queue: dict[str, int] = {}
    for name in _names(dead_dir):
        reason = fs.read_text(os.path.join(dead_dir, name + ".reason"))
        try:
            queue = jsontext.loads(reason)["queue"] if reason else "unknown"
        except (ValueError, KeyError, TypeError):
            queue = "unknown"
        dead_by_queue[queue] = dead_by_queue.get(queue, 0) + 1
    out: dict = {"queues": {}}
    for name in queues.QUEUES:
        q = queues.Queue(home, name)
        ready = _names(q.dir)
        oldest = min((m for m in (_mtime(os.path.join(q.dir, n)) for n in ready) if m is not None), default=None)
        out["queues"][name] = {
            "waiting": len(ready), "claimed": len(_names(os.path.join(q.dir, "cur"))),
            "done": len(_names(os.path.join(q.dir, "done"))), "dead": dead_by_queue.get(name, 0),
            "oldest_age_sec": None if oldest is None else round(max(0.0, now - oldest), 3),
        }
    per_hour = [0] * 24
    inbox = queues.Queue(home, "pending")
    for part in ("", "cur", "done"):
        directory = os.path.join(inbox.dir, part)
        for n in _names(directory):
            mtime = _mtime(os.path.join(directory, n))
            age = now - mtime if mtime is not None else -1
            if 0 <= age < 86400:
                per_hour[23 - int(age // 3600)] += 1
    out["events_per_hour"] = per_hour  # oldest hour first, the current hour last
    states: dict[str, str] = {}
    for line in (fs.read_text(home.path("pipeline", "dispatch.journal")) or "").splitlines():
        try:
            entry = jsontext.loads(line)
            states[entry["id"]] = entry["state"]
        except (ValueError, KeyError, TypeError):
            continue
    out["dispatch"] = {"done": sum(s == "done" for s in states.values()),
                       "failed": sum(s == "failed" for s in states.values())}
    out["llm_calls"] = out["llm_failures"] = out["llm_fallbacks"] = 0
    for line in (fs.read_text(home.path("log", "llm.jsonl")) or "").splitlines():
        try:
            entry = jsontext.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("ok"), bool):  # a call; a fallback to the rules is not one
            out["llm_calls"] += 1
            out["llm_failures"] += entry["ok"] is False
        elif "fallback" in entry:
            out["llm_fallbacks"] += 1
    out["dead_letters"] = sum(dead_by_queue.values())
    out["last_tick"] = _last_tick(home)
    out["facts_waiting"] = _candidates(home)
    return out


def _last_tick(home) -> str | None:
    """When the heartbeat last ran, as tick.json says (None: never, or a file anima cannot read)."""
    try:
        at = jsontext.loads(fs.read_text(home.path("pipeline", "heartbeat", "tick.json")) or "null")
        return clock.iso(clock.parse(at["at"], "at")) if isinstance(at, dict) else None
    except (ValueError, KeyError, TypeError, AnimaError):
        return None


def _candidates(home) -> int:
    """Facts staged and waiting for a person to approve or retire them."""
    from anima.facts.store import FactStore

    try:
        return sum(f.get("status") == "candidate" for f in FactStore(home).load())
    except AnimaError:  # a damaged facts file is `anima check`'s to report, not a metric's
        return 0


def prometheus(m: dict) -> str:
    """The Prometheus text exposition format (for node_exporter's textfile collector), as
    `promtool check metrics` wants it: counters end in _total, units in the name."""
    from anima import __version__

    lines = []

    def metric(name, kind, help_text, samples):
        lines.append(f"# HELP anima_{name} {help_text}")
        lines.append(f"# TYPE anima_{name} {kind}")
        for labels, value in samples:
            label = ",".join(f'{k}="{v}"' for k, v in labels.items())
            lines.append(f"anima_{name}{{{label}}} {value}" if label else f"anima_{name} {value}")

    metric("build_info", "gauge", "The version of anima that wrote these metrics.", [({"version": __version__}, 1)])
    for field, help_text in (("waiting", "Files waiting in a queue."), ("claimed", "Files claimed by a consumer."),
                             ("done", "Files finished with."), ("dead", "Dead letters from a queue.")):
        metric(f"queue_{field}", "gauge", help_text,
               [({"queue": q}, v[field]) for q, v in m["queues"].items()])
    metric("queue_oldest_age_seconds", "gauge", "Age of the oldest waiting file.",
           [({"queue": q}, v["oldest_age_sec"]) for q, v in m["queues"].items() if v["oldest_age_sec"] is not None])
    metric("events_last_hour", "gauge", "Events that arrived in the last hour.", [({}, m["events_per_hour"][-1])])
    metric("events_last_day", "gauge", "Events that arrived in the last 24 hours.", [({}, sum(m["events_per_hour"]))])
    if m["last_tick"] is not None:
        metric("last_tick_timestamp_seconds", "gauge", "When anima tick last ran (Unix time).",
               [({}, int(clock.parse(m["last_tick"], "last_tick")))])
    metric("facts_waiting", "gauge", "Facts staged and waiting for a person.", [({}, m["facts_waiting"])])
    metric("dispatch_actions_total", "counter", "Actions dispatch carried out or failed.",
           [({"result": "done"}, m["dispatch"]["done"]), ({"result": "failed"}, m["dispatch"]["failed"])])
    metric("llm_calls_total", "counter", "Model calls logged in log/llm.jsonl.", [({}, m["llm_calls"])])
    metric("llm_failures_total", "counter", "Model calls that failed or answered invalidly.",
           [({}, m["llm_failures"])])
    metric("llm_fallbacks_total", "counter", "Times the rules backend took over, the model budget spent.",
           [({}, m["llm_fallbacks"])])
    return "\n".join(lines) + "\n"


def text(m: dict) -> str:
    rows = [f"queue.{q}.{k}\t{'-' if v is None else v}" for q, d in m["queues"].items() for k, v in d.items()]
    rows.append(f"events.last_hour\t{m['events_per_hour'][-1]}")
    rows.append(f"events.last_day\t{sum(m['events_per_hour'])}")
    rows += [f"dispatch.{k}\t{v}" for k, v in m["dispatch"].items()]
    rows += [f"dead_letters\t{m['dead_letters']}", f"llm_calls\t{m['llm_calls']}",
             f"llm_failures\t{m['llm_failures']}", f"llm_fallbacks\t{m['llm_fallbacks']}",
             f"last_tick\t{m['last_tick'] or '-'}", f"facts.waiting\t{m['facts_waiting']}"]
    return "\n".join(rows) + "\n"
