"""Where each derived thing came from, re-derived: `anima verify` and `anima check`'s stale check.

Two kinds of derivation are checked:
- facts (facts/facts.jsonl): each names its turn (session, line) and the sha256 of its text;
- what `anima consolidate` distils from the self-stream's archive: each memory line and each
  autobiography entry, recorded in pipeline/derived.jsonl (anima.stream.derived has the
  format). An entry written before these records checks only that its front matter
  `sources` exist.

A problem is one of:
- orphan: the source is gone (a fact's turn in no transcript; an archive file gone, or
  shorter than the lines cited);
- drift: the source is there but its text changed (its sha256 is not the one recorded);
- stale: the derivation no longer says what its source says (a fact whose quote no longer
  occurs in its turn; a memory line or entry that is not the one recorded; a source that
  now holds a forget's tombstone line).
Nothing here writes.
"""

import os
import re

from anima.facts import store as facts_mod
from anima.infra import fs
from anima.infra.digest import sha
from anima.stream import derived
from anima.stream.derived import is_tombstone, source_text


class Problem:
    __slots__ = ("kind", "where", "what", "source")

    def __init__(self, kind: str, where: str, what: str, source: str):
        self.kind, self.where, self.what, self.source = kind, where, what, source

    def as_dict(self) -> dict:
        return {"kind": self.kind, "where": self.where, "what": self.what, "source": self.source}


def fact_problems(home, cfg, warn=lambda message: None) -> list[Problem]:
    from anima.recall import sessions

    store = facts_mod.FactStore(home)
    known = [f for f in store.load() if f.get("status") != "retired"]
    pairs = {(f["source"]["session"], f["source"]["line"]) for f in known if isinstance(f.get("source"), dict)}
    turns = sessions.find_turns(home, cfg, pairs, warn) if pairs else {}
    problems = []
    for f in known:
        src = f.get("source") or {}
        where = f"facts/facts.jsonl {f['id']}"
        source = f"{src.get('session')}:{src.get('line')}"
        turn = turns.get((src.get("session"), src.get("line")))
        if turn is None:
            problems.append(Problem("orphan", where, f"its turn {source} is in no transcript", source))
        elif sha(turn.text) != src.get("sha256"):
            if facts_mod.normalise(f.get("text", "")) not in facts_mod.normalise(turn.text):
                problems.append(Problem("stale", where, f"the quote no longer occurs in its turn {source}", source))
            else:
                problems.append(Problem("drift", where, f"its turn {source} changed since it was staged", source))
    return problems


class _Files:
    """Lines of the home's files, each read once."""

    def __init__(self, home):
        self.home, self.seen = home, {}

    def lines(self, rel: str) -> list[str] | None:
        if rel not in self.seen:
            full = os.path.join(self.home.root, rel)
            text = fs.read_text(full) if self.home.holds(full) and os.path.isfile(full) else None
            self.seen[rel] = None if text is None else text.splitlines(keepends=True)
        return self.seen[rel]


def _source_problem(files: _Files, where: str, s: dict) -> Problem | None:
    try:
        rel, (first, last) = s["path"], s["lines"]
        first, last = int(first), int(last)
    except (KeyError, TypeError, ValueError):
        return Problem("orphan", where, "a source it names is not PATH and [FIRST, LAST]", "?")
    name = f"{rel}:{first}-{last}"
    lines = files.lines(rel)
    if lines is None:
        return Problem("orphan", where, f"its source {rel} is gone", name)
    if last > len(lines) or first < 1 or first > last:
        return Problem("orphan", where, f"{rel} has {len(lines)} lines, fewer than the {name} it came from", name)
    if s.get("sha256") is not None and sha(source_text(lines, first, last)) != s["sha256"]:
        if any(is_tombstone(x) for x in lines[first - 1:last]):
            return Problem("stale", where, f"its source {name} was forgotten", name)
        return Problem("drift", where, f"its source {name} changed since it was derived", name)
    return None


def derived_problems(home) -> list[Problem]:
    from anima.self import autobiography

    files = _Files(home)
    problems = []
    recorded = set()
    for r in derived.load(home):
        entry = r.get("entry")
        where = r["path"] if entry is not None else f"{r['path']}:{r.get('line')}"
        sources = r.get("sources") if isinstance(r.get("sources"), list) else []
        for s in sources:
            p = _source_problem(files, where, s if isinstance(s, dict) else {})
            if p is not None:
                problems.append(p)
        cited = ", ".join(f"{s.get('path')}:{'-'.join(map(str, s.get('lines', [])))}"
                          for s in sources if isinstance(s, dict)) or "-"
        if entry is not None:
            recorded.add(str(entry))
            text = fs.read_text(os.path.join(home.root, r["path"]))
            if text is None:
                problems.append(Problem("stale", where, "the entry is gone", cited))
                continue
            _, body = autobiography.parse(text, r["path"])
            if sha(body) != r.get("sha256"):
                problems.append(Problem("stale", where, "the entry is not the one derived (edited since)", cited))
        else:
            lines = files.lines(r["path"])
            line = r.get("line")
            if lines is None or not isinstance(line, int) or not 1 <= line <= len(lines) \
                    or sha(lines[line - 1].rstrip("\n")) != r.get("sha256"):
                problems.append(Problem("stale", where, "the line is not the one derived (edited, moved or gone)",
                                        cited))
    # entries written before the records: their front matter names the lines, without hashes
    for eid, meta, _ in autobiography.entries(home):
        if eid in recorded or not isinstance(meta.get("sources"), list):
            continue
        where = os.path.relpath(os.path.join(autobiography.directory(home), eid + ".md"), home.root)
        for s in meta["sources"]:
            m = re.fullmatch(r"(.+):(\d+)-(\d+)", str(s))
            p = _source_problem(files, where, {"path": m[1], "lines": [int(m[2]), int(m[3])]} if m else {})
            if p is not None:
                problems.append(p)
    return problems


def verify(home, cfg, warn=lambda message: None) -> list[Problem]:
    """Every provenance problem in the home: facts, then what consolidate derived."""
    return fact_problems(home, cfg, warn) + derived_problems(home)
