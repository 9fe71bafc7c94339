"""`anima why`: what the agent was told about itself and the person at a moment, and where
each piece came from.

Every `anima prompt` appends one line to log/injections.jsonl (anima.host.prompt.log_injection):
the time, the whole text's sha256 and size, and per section its size, body sha256, the ids
of the items it printed (notes, facts, profile lines, habits) and the files it printed whole
(the blocks, the project file) with their sha256 — hashes and ids, never text. `why` finds
the last line at or before a time and traces each piece back to where it lives now: a block
to its current file or the .history version with the same sha256, a note to notes.md or its
archive, a fact to facts/facts.jsonl and from there to its turn.
"""

import os
import re

from anima.infra import fs
from anima.infra.digest import sha as sha256

LOG = ("log", "injections.jsonl")


def records(home):
    """Every injection record, oldest first (unparseable lines, and lines not shaped as
    anima.host.prompt writes them, skipped)."""
    records, _ = fs.new_json_lines(home.path(*LOG), 0)
    yield from (r for r in records or () if isinstance(r.get("at"), str) and _shaped(r.get("sections", [])))


def _shaped(sections) -> bool:
    return isinstance(sections, list) and all(
        isinstance(s, dict) and isinstance(s.get("files") or {}, dict) and isinstance(s.get("items") or [], list)
        for s in sections)


def find(home, at: float | None) -> dict | None:
    """The last record at or before `at` (any time when None)."""
    from anima.infra import clock

    found = None
    for record in records(home):
        try:
            when = clock.parse(record["at"], "at")
        except Exception:
            continue
        if at is None or when <= at:
            found = record
    return found


class Tracer:
    """Looks pieces up where they live now; each lookup reads its store once."""

    def __init__(self, home):
        self.home = home
        self._notes = None
        self._facts = None

    def block(self, key: str, sha: str) -> tuple[str, str]:
        from anima.self import blocks

        path = blocks.block_path(self.home.blocks, key)
        data = fs.read_bytes(path)
        if data is not None and sha256(data) == sha:
            return "current", self.home.rel(path)
        for rev in reversed(blocks.revisions(self.home.blocks, key)):
            old = os.path.join(blocks.history_dir(self.home.blocks, key), f"{rev}.md")
            if sha256(fs.read_bytes(old) or b"") == sha:
                return f"revision {rev}, replaced since", self.home.rel(old)
        return "drift: no version of the block has this text (edited by hand, or history removed)", \
            self.home.rel(path)

    def file(self, path: str, sha: str) -> tuple[str, str]:
        try:
            with open(path, "rb") as f:  # the project file may be a symlink, as prompt allows
                data = f.read()
        except OSError:
            return "gone", path
        if sha256(data) == sha:
            return "unchanged", path
        return "changed since", path

    def note(self, nid: str) -> tuple[str, str, str]:
        from anima.notes import store as notes

        if self._notes is None:
            store = notes.Store(self.home)
            meta = store.meta().get("notes", {})
            self._notes = {n.id: ("live, by " + meta.get(n.id, {}).get("author", "person"),
                                  f"{self.home.rel(store.file)}:{n.line}", n.text) for n in store.notes()}
            try:
                months = sorted(fs.listdir(store.archive_dir))
            except FileNotFoundError:
                months = []
            for month in months:
                path = os.path.join(store.archive_dir, month)
                for line in (fs.read_text(path) or "").split("\n"):
                    if line.strip() and not line.startswith("## "):
                        self._notes.setdefault(notes.note_id(line), ("archived", self.home.rel(path), line))
        return self._notes.get(nid, ("gone: in neither notes.md nor its archive", "", ""))

    def fact(self, fid: str) -> tuple[str, str, str]:
        from anima.facts import store as facts

        if self._facts is None:
            self._facts = {f["id"]: f for f in facts.FactStore(self.home).load()}
        f = self._facts.get(fid)
        if f is None:
            return "gone: not in facts/facts.jsonl", "", ""
        src = f.get("source") or {}
        where = f"{src.get('session')}:{src.get('line')} ({src.get('who')}, {src.get('said')})"
        return f.get("status", "?"), where, f.get("text", "")

    def item(self, section: str, iid: str) -> dict:
        if section == "notes":
            state, where, text = self.note(iid)
            return {"kind": "note", "id": iid, "state": state, "where": where, "text": text}
        m = re.fullmatch(r"profile:(\d+)", iid)
        if m:
            from anima.facts import store as facts

            path = facts.FactStore(self.home).profile_path
            n = int(m.group(1))  # the file's line, from 0 (a prompt over budget may have shown its end only)
            lines = (fs.read_text(path) or "").split("\n")
            text = lines[n].strip() if n < len(lines) else ""
            return {"kind": "profile line", "id": iid, "state": "hand-written" if text else "gone: no such line now",
                    "where": f"{self.home.rel(path)}#{n + 1}", "text": text}
        if iid.startswith("habit:"):
            from anima.facts import store as facts

            path = facts.FactStore(self.home).habits_path
            return {"kind": "habit", "id": iid, "state": "promoted", "where": self.home.rel(path), "text": ""}
        state, where, text = self.fact(iid)
        return {"kind": "fact", "id": iid, "state": state, "where": where, "text": text}


def explain(home, record: dict) -> list[dict]:
    """One row per piece of the prompt `record` describes: section, kind, id, state, where, text."""
    tracer = Tracer(home)
    rows = []
    for section in record.get("sections", []):
        name = section.get("name", "?")
        for key, sha in (section.get("files") or {}).items():
            if name == "self":
                state, where = tracer.block(key, sha)
                rows.append({"section": name, "kind": "block", "id": key, "state": state, "where": where, "text": ""})
            else:
                state, where = tracer.file(key, sha)
                rows.append({"section": name, "kind": "file", "id": os.path.basename(key), "state": state,
                             "where": where, "text": ""})
        for iid in section.get("items", []):
            rows.append({"section": name, **tracer.item(name, iid)})
    return rows
