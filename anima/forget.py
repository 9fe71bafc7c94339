"""`anima forget`: remove a source and everything derived from it, leaving only a tombstone.

Targets and what goes:
- a session (--session ID): its transcript files under the home, every fact staged from it;
- a fact (--fact ID): the fact, text and history;
- a turn (--source PATH:LINE, PATH a transcript under the home): the turn's line, replaced in
  place by {"type": "forgotten", "at": ...} so every other line keeps its number (facts and
  recall name turns by line), and every fact staged from that turn;
and with each of them the whole cache/ (the prompt and transcript caches hold text) and, for
a session or a turn, the recall index, rebuilt without it when there is one (its tokens are
as private as the text).

A transcript outside the home (recall.sources) is never touched: anima writes only under
its home. It is listed as left where it is; what was derived from it is removed all the same.

log/forgotten.jsonl gets the tombstone: when, what was asked, and what was removed (paths
and ids), never the content or a hash of it (a hash would let a guess be confirmed).
"""

import json
import os
import shutil

from anima import clock, fs
from anima.errors import NotFound, UsageError


class Step:
    __slots__ = ("what", "where", "apply")

    def __init__(self, what: str, where: str, apply=None):
        self.what, self.where, self.apply = what, where, apply  # apply None: listed, not done


class Plan:
    def __init__(self, target: str):
        self.target = target
        self.steps: list[Step] = []

    def add(self, what: str, where: str, apply=None) -> None:
        self.steps.append(Step(what, where, apply))


def _rel(home, path: str) -> str:
    rel = os.path.relpath(path, home.root)
    return path if rel.startswith("..") else rel


def _inside(home, path: str) -> bool:
    return not os.path.relpath(os.path.realpath(path), os.path.realpath(home.root)).startswith("..")


def _facts_step(home, plan: Plan, keep) -> None:
    """Plan the removal of every fact for which keep(fact) is False."""
    from anima import facts

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
        plan.add("cache", "cache/ (rebuilt as it is used)", lambda: shutil.rmtree(cache))
    from anima import index

    if index_too and os.path.exists(index.path(home)):
        plan.add("index entries", f"{_rel(home, index.path(home))} (rebuilt)", None)
        plan.steps[-1].apply = lambda: _rebuild_index(home)


def _rebuild_index(home) -> None:
    from anima import config, index

    cfg = config.load(home.config)
    index.rebuild(home, cfg, cfg["index.jobs"])


def session(home, cfg, sid: str, warn) -> Plan:
    from anima import transcripts

    plan = Plan(f"session {sid}")
    for s in transcripts.sessions(home, cfg, warn):
        if s.id != sid:
            continue
        if _inside(home, s.path):
            plan.add("transcript", _rel(home, s.path), lambda p=s.path: fs.remove(p))
        else:
            plan.add("transcript outside the home, left where it is", s.path)
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


def source(home, cfg, spec: str, warn) -> Plan:
    from anima import transcripts

    path, _, line = spec.rpartition(":")
    if not path or not line.isdigit() or int(line) < 1:
        raise UsageError(f"--source {spec!r}: give PATH:LINE, a transcript and a line number")
    number = int(line)
    full = os.path.join(home.root, path) if not os.path.isabs(path) else path
    if not (os.path.isfile(full) and full.endswith(transcripts.SUFFIXES)):
        raise NotFound(f"--source {spec!r}: {path} is not a transcript (*.jsonl, *.jsonl.zst)")
    if not _inside(home, full):
        raise UsageError(f"--source {spec!r}: outside the home; anima writes only under {home.root}")
    session_id = None
    for s in transcripts.sessions(home, cfg, warn):
        if os.path.realpath(s.path) == os.path.realpath(full):
            session_id = s.id
            if not any(t.line == number for t in s.turns):
                raise NotFound(f"--source {spec!r}: line {number} is not a turn of session {s.id}")
    if session_id is None:
        raise NotFound(f"--source {spec!r}: not a session anima reads")
    plan = Plan(f"turn {_rel(home, full)}:{number}")
    plan.add("turn", f"{_rel(home, full)}:{number} (the line stays, empty)", lambda: _blank_line(full, number))
    _facts_step(home, plan, lambda f: ((f.get("source") or {}).get("session"),
                                       (f.get("source") or {}).get("line")) != (session_id, number))
    _derived_steps(home, plan)
    return plan


def _blank_line(path: str, number: int) -> None:
    """Replace line `number` of a transcript (plain or zstd) by a forgotten marker, in place."""
    from anima.transcripts import ZSTD_SUFFIXES, _chunks

    with fs.locked(path, what="the transcript"):
        data = b"".join(_chunks(path))
        packed = path.endswith(ZSTD_SUFFIXES)
        lines = data.split(b"\n")
        lines[number - 1] = json.dumps({"type": "forgotten", "at": clock.iso(clock.now())}).encode()
        data = b"\n".join(lines)
        if packed:
            import zstandard

            data = zstandard.ZstdCompressor().compress(data)
        fs.atomic_write(path, data)


def carry_out(home, plan: Plan, warn) -> list[dict]:
    """Do every step, then write the tombstone; return what was removed."""
    from anima.errors import Busy

    removed = []
    for step in plan.steps:
        if step.apply is not None:
            try:
                step.apply()
            except Busy as e:  # only the index can be busy: the rest is done, say what is left
                warn(f"warning: {step.what} not removed ({e}); run `anima index rebuild` when it is free")
                continue
        removed.append({"what": step.what, "where": step.where})
    tomb = {"at": clock.iso(clock.now()), "forgot": plan.target, "removed": removed}
    fs.append(home.path("log", "forgotten.jsonl"), json.dumps(tomb, ensure_ascii=False) + "\n")
    return removed
