"""Proposed changes to the personality baseline: a job proposes, only a person accepts.

self/proposals/ID.md, one file per proposal: YAML front matter (every value JSON) and, as
the body, the whole block body proposed:

    ---
    id: "p1a2b3c4d"
    key: "personality_baseline"
    status: "open"                  open | accepted | rejected
    proposed: "2026-12-01T04:00:00Z"
    by: "rules"                     rules | agent | the model's name
    base_sha256: "..."              of the block body the proposal was made against (null: no block yet)
    evidence: ["note n0b869a0f, injected 24 times (last 2026-11-30T21:00:00Z): I tend to ..."]
    note: "n0b869a0f"
    decided: "2026-12-01T09:12:00Z"  once accepted or rejected
    ---
    The proposed body.

`anima consolidate` writes new ones (never the block), and so does the agent's own
`update_self_block` tool for this key (propose, by "agent"); `anima self accept ID` makes the
body the block's through blocks.write (a locked block, or a body holding the user's private
data, is refused, exit 77), and only if the block is still the one the proposal was made
against; `anima self reject ID` closes it.
"""

import os
import re

from anima.infra import clock, frontmatter, fs
from anima.infra.digest import sha
from anima.infra.errors import NotFound, Refused
from anima.self import blocks

KEY = "personality_baseline"
ID = re.compile(r"p[0-9a-f]{8}")


def directory(home) -> str:
    return home.path("self", "proposals")


def path(home, pid: str) -> str:
    if not ID.fullmatch(pid):
        raise NotFound(f"no proposal {pid!r}: ids look like p1a2b3c4d; `anima self proposals` lists them")
    return os.path.join(directory(home), pid + ".md")


def render(meta: dict, body: str) -> str:
    return frontmatter.render(meta, body)


def parse(text: str, path: str) -> tuple[dict, str]:
    return frontmatter.document(text, path, "a proposal")


def new_id(key: str, basis: str) -> str:
    import zlib

    return f"p{zlib.crc32((key + chr(0) + basis).encode('utf-8')):08x}"


def all_(home) -> list[tuple[dict, str]]:
    """(front matter, proposed body) of every proposal, by when it was proposed, then id."""
    try:
        names = sorted(n for n in fs.listdir(directory(home)) if n.endswith(".md") and ID.fullmatch(n[:-3]))
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        file = os.path.join(directory(home), name)
        out.append(parse(fs.read_text(file) or "", file))
    return sorted(out, key=lambda p: (str(p[0].get("proposed", "")), str(p[0].get("id", ""))))


def read(home, pid: str) -> tuple[dict, str]:
    file = path(home, pid)
    text = fs.read_text(file)
    if text is None:
        raise NotFound(f"no proposal {pid}: `anima self proposals` lists them")
    return parse(text, file)


def propose(home, body: str, by: str, evidence: list[str], cap: int, now: float,
            private: dict) -> tuple[str, bool, str]:
    """Propose `body` as the whole new personality baseline at `now`: (id, new, status).

    Refused, nothing written, for what `self set` without --force refuses (an empty body, one
    over `cap`, one holding the user's private data, a locked block); blocks.Unchanged for
    the current body. A change is proposed once: the same body against the same block file
    answers with the proposal already made, as it stands (a rejected one stays rejected).
    """
    body = blocks.checked_body(KEY, body, cap)
    blocks.refuse_private(KEY, body, private)
    block_file = blocks.block_path(home.blocks, KEY)
    text = fs.read_text(block_file)
    current = None if text is None else blocks.parse(text, KEY, block_file)
    if current is not None and current.locked:
        raise Refused(_locked(KEY))
    if current is not None and current.body == body:
        raise blocks.Unchanged(KEY)
    # the whole block file, `updated` included: once the block has moved on (an accepted
    # proposal, a revert), the same body is a new proposal against a new base
    pid = new_id(KEY, by + chr(0) + sha(text or "") + chr(0) + sha(body))
    file = path(home, pid)
    with fs.locked(file, what=f"proposal {pid}"):
        made = fs.read_text(file)
        if made is not None:
            return pid, False, str(parse(made, file)[0].get("status"))
        meta = {"id": pid, "key": KEY, "status": "open", "proposed": clock.iso(now), "by": by,
                "base_sha256": sha(current.body) if current is not None else None, "evidence": evidence}
        fs.atomic_write(file, render(meta, body))
    return pid, True, "open"


def decide(home, pid: str, accept: bool, cap: int, lang: str, now: float, private: dict) -> None:
    """Accept (write the block) or reject an open proposal at `now`, then record the decision.
    `private`: the private-data settings blocks.write refuses a body by."""
    file = path(home, pid)
    _check(home, pid, accept, private)  # refused before even the lock file is made; again under the lock
    with fs.locked(file, what=f"proposal {pid}"):
        meta, body = _check(home, pid, accept, private)
        if accept:
            def unchanged_since(old_body):  # under the block's lock: a `self set` meanwhile wins
                if old_body is not None and sha(old_body) != meta.get("base_sha256"):
                    raise Refused(_changed(pid, str(meta.get("key", KEY))))
            try:
                blocks.write(home.blocks, str(meta.get("key", KEY)), body, force=False, max_chars=cap, lang=lang,
                             now=now, private=private, expect=unchanged_since)
            except blocks.Unchanged:
                pass
        meta = {**meta, "status": "accepted" if accept else "rejected", "decided": clock.iso(now)}
        fs.atomic_write(file, render(meta, body))


def _check(home, pid: str, accept: bool, private: dict) -> tuple[dict, str]:
    meta, body = read(home, pid)
    if meta.get("status") != "open":
        raise Refused(f"proposal {pid} is already {meta.get('status')}")
    if accept:
        key = blocks.check_key(str(meta.get("key", KEY)))
        blocks.refuse_private(key, blocks.normalise(body), private)
        current = blocks.read(home.blocks, key)
        if current is not None and current.locked:
            raise Refused(_locked(key))
        if current is not None and sha(current.body) != meta.get("base_sha256"):
            raise Refused(_changed(pid, key))
    return meta, body


def _locked(key: str) -> str:
    return f"{key}: block is locked; a proposal cannot change it (`anima self set {key} --force` can)"


def _changed(pid: str, key: str) -> str:
    return (f"proposal {pid}: {key} changed since it was proposed; "
            f"`anima self reject {pid}` and let the next consolidate propose again")
