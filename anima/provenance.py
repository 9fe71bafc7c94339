"""Where each derived thing came from, re-derived: `anima verify` and `anima check`'s stale check.

A problem is one of:
- orphan: the source is gone (a fact's turn no longer in any transcript);
- drift: the source is there but its text changed (the turn's sha256 is not the one recorded);
- stale: the derivation no longer says what its source says (a fact whose quote no longer
  occurs in its turn).
Nothing here writes.
"""

from anima import facts as facts_mod


class Problem:
    __slots__ = ("kind", "where", "what", "source")

    def __init__(self, kind: str, where: str, what: str, source: str):
        self.kind, self.where, self.what, self.source = kind, where, what, source

    def as_dict(self) -> dict:
        return {"kind": self.kind, "where": self.where, "what": self.what, "source": self.source}


def fact_problems(home, cfg, warn=lambda message: None) -> list[Problem]:
    from anima import transcripts

    store = facts_mod.FactStore(home)
    known = [f for f in store.load() if f.get("status") != "retired"]
    pairs = {(f["source"]["session"], f["source"]["line"]) for f in known if isinstance(f.get("source"), dict)}
    turns = transcripts.find_turns(home, cfg, pairs, warn) if pairs else {}
    problems = []
    for f in known:
        src = f.get("source") or {}
        where = f"facts/facts.jsonl {f['id']}"
        source = f"{src.get('session')}:{src.get('line')}"
        turn = turns.get((src.get("session"), src.get("line")))
        if turn is None:
            problems.append(Problem("orphan", where, f"its turn {source} is in no transcript", source))
        elif facts_mod.turn_hash(turn.text) != src.get("sha256"):
            if facts_mod.normalise(f.get("text", "")) not in facts_mod.normalise(turn.text):
                problems.append(Problem("stale", where, f"the quote no longer occurs in its turn {source}", source))
            else:
                problems.append(Problem("drift", where, f"its turn {source} changed since it was staged", source))
    return problems


def verify(home, cfg, warn=lambda message: None) -> list[Problem]:
    """Every provenance problem in the home, by store."""
    return fact_problems(home, cfg, warn)
