"""Self-notes: the agent's first-person notes about itself, one per line in notes/notes.md.

notes.md is the truth, and any editor is a client of it. Beside it, keyed by note id (a hash
of the note's text, so an edited line is simply a new note and a vanished line's entries are
dropped):

- meta.json: what was decided about each note: when it was added, by whom, its importance.
- heat.json: how each note was used (anima.notes.heat).

This module is imported on the hot path of `anima prompt` (to count injections), so it keeps
its own imports light; the heavy ones live inside the functions that need them.
"""

import functools
import os
import re

from anima.infra import clock, fs
from anima.infra.digest import sha
from anima.infra.errors import DataError, NotFound, Refused, os_error_code
from anima.notes import heat
from anima.notes.heat import DEFAULT_IMPORTANCE


class Note:
    def __init__(self, id: str, text: str, line: int):
        self.id, self.text, self.line = id, text, line


class DuplicateNote(Refused):
    """A near-duplicate of a live note: refused, and that note's heat was refreshed."""


def note_id(text: str) -> str:
    """n + 8 hex digits of the CRC-32 of the text: as unique as 8 hex digits of any hash, and
    cheaper to load than hashlib on every `note add`."""
    import zlib

    return f"n{zlib.crc32(text.encode('utf-8')):08x}"


def parse_notes(text: str) -> list[Note]:
    """Notes in file order; blank lines are skipped and a repeated line is one note."""
    notes, seen = [], set()
    for number, line in enumerate(text.split("\n"), 1):
        line = line.strip()
        if line:
            nid = note_id(line)
            if nid not in seen:
                seen.add(nid)
                notes.append(Note(nid, line, number))
    return notes


class Store:
    """The notes directory of one home."""

    def __init__(self, home):
        self.dir = home.path("notes")
        self.file = os.path.join(self.dir, "notes.md")
        self.meta_path = os.path.join(self.dir, "meta.json")
        self.heat_path = heat.usage_path(home)
        self.archive_dir = os.path.join(self.dir, "archive")
        self.heat = heat.Usage(self.heat_path)

    # --- reading -------------------------------------------------------------------------

    def notes(self, text: str | None = None) -> list[Note]:
        if text is None:
            text = fs.read_text(self.file) or ""
        return parse_notes(text)

    def meta(self, text: str | None = None) -> dict:
        meta = heat.keyed(self.meta_path, text)
        for nid, entry in meta["notes"].items():
            importance = entry.get("importance", DEFAULT_IMPORTANCE) if isinstance(entry, dict) else None
            if isinstance(importance, bool) or importance not in (0, 1, 2, 3):
                raise DataError(f"{self.meta_path}: {nid}: importance must be 0, 1, 2 or 3")
        return meta

    def usage(self) -> dict:
        return self.heat.read()

    def lock(self):
        """The lock every change of notes.md, meta.json and heat.json is made under."""
        return fs.locked(self.file, what="notes")

    def created(self, meta: dict, nid: str, now: float) -> float:
        """When a note was added; for a line a person wrote, when notes.md last changed (`now`
        when there is no notes.md)."""
        entry = meta["notes"].get(nid)
        if entry and entry.get("created"):
            return clock.parse(entry["created"], f"{self.meta_path}: {nid}: created", DataError)
        try:
            return os.stat(self.file).st_mtime
        except FileNotFoundError:
            return now

    def facts(self, note: Note, meta: dict, usage: dict, half_life: int, now: float) -> dict:
        """Every factor of a note's heat at `now` (anima.notes.heat)."""
        return heat.factors(note, meta, usage, self.created(meta, note.id, now), half_life, now)

    def ranked(self, notes: list[Note], meta: dict, usage: dict, half_life: int, now: float) -> list[Note]:
        return heat.ranked(notes, meta, usage, lambda nid: self.created(meta, nid, now), half_life, now)

    # --- writing -------------------------------------------------------------------------

    def _write_notes(self, notes: list[Note]) -> None:
        fs.atomic_write(self.file, "".join(n.text + "\n" for n in notes))

    def _archive(self, notes: list[Note], reason: str, now: float) -> str:
        """Append notes to this month's archive file (before they leave notes.md: never lost)."""
        stamp = clock.iso(now)
        path = os.path.join(self.archive_dir, stamp[:7] + ".md")
        fs.append(path, f"## {stamp} {reason}\n" + "".join(n.text + "\n" for n in notes))
        return path

    def _synced_meta(self, meta: dict, notes: list[Note], now: float) -> dict:
        """meta.json for exactly these notes: orphans dropped, hand-written lines recorded."""
        live = {}
        for n in notes:
            entry = dict(meta["notes"].get(n.id) or {})
            if not entry.get("created"):
                entry["created"] = clock.iso(self.created(meta, n.id, now))
            entry.setdefault("importance", DEFAULT_IMPORTANCE)
            entry.setdefault("author", "person")
            live[n.id] = entry
        return {**meta, "notes": live}

    def add(self, text: str, cfg, now: float) -> tuple[str, list[Note]]:
        """Add a note; return its id and the notes the caps moved to the archive."""
        text = check_note(text, cfg)
        from rapidfuzz import fuzz, process

        with self.lock():
            notes = self.notes()
            meta = self.meta()
            nid = note_id(text)
            match = process.extractOne(text, {n.id: n.text for n in notes}, scorer=fuzz.ratio,
                                       score_cutoff=cfg["notes.dup_threshold"])
            if match is not None:
                _, score, dup = match
                self.heat.bump(dup, now)
                raise DuplicateNote(f"near-duplicate of note {dup} ({score:.0f}% similar, notes.dup_threshold "
                                    f"{cfg['notes.dup_threshold']}); refreshed its heat instead")
            kept = notes + [Note(nid, text, (notes[-1].line if notes else 0) + 1)]
            archived = []
            while len(kept) > 1 and (len(kept) > cfg["notes.max_entries"]
                                     or sum(len(n.text) for n in kept) > cfg["notes.max_chars"]):
                archived.append(kept.pop(0))
            if sum(len(n.text) for n in kept) > cfg["notes.max_chars"]:
                raise Refused(f"note has {len(text)} characters, more than notes.max_chars "
                              f"({cfg['notes.max_chars']}) allows in all")
            meta = self._synced_meta(meta, notes, now)
            if archived:
                self._archive(archived, "over the cap", now)
            self._write_notes(kept)
            if archived:
                self.heat.forget({n.id for n in archived})
            meta["notes"] = {n.id: meta["notes"].get(n.id) for n in kept if n.id != nid}
            meta["notes"][nid] = {"created": clock.iso(now), "importance": DEFAULT_IMPORTANCE, "author": "agent"}
            heat.write_keyed(self.meta_path, meta)
        return nid, archived

    def set_importance(self, nid: str, importance: int, now: float) -> None:
        with self.lock():
            notes = self.notes()
            if nid not in {n.id for n in notes}:
                raise NotFound(f"no live note {nid}; `anima note list` shows them")
            meta = self._synced_meta(self.meta(), notes, now)
            meta["notes"][nid]["importance"] = importance
            heat.write_keyed(self.meta_path, meta)

    def clear(self, now: float) -> int:
        """Move every note to the archive; return how many."""
        with self.lock():
            notes = self.notes()
            if notes:
                self._archive(notes, "cleared", now)
            self._write_notes([])
            heat.write_keyed(self.meta_path, {"notes": {}})
            self.heat.forget({n.id for n in notes})
        return len(notes)

    # --- the prompt ----------------------------------------------------------------------

    def prompt_order(self, notes_text: str, meta_text: str | None, half_life: int, now: float,
                     freeze: bool = True) -> list[Note]:
        """The notes in injection order, frozen while notes.md and meta.json stay as they are
        (`freeze` False: a ranking not frozen yet is made, and not stored)."""
        notes = parse_notes(notes_text)
        if not notes:
            return []
        key = sha(f"{half_life}\0{notes_text}\0{meta_text or ''}")
        usage = self.usage()
        frozen = usage.get("ranking") or {}
        by_id = {n.id: n for n in notes}
        if frozen.get("key") == key and set(frozen.get("order", [])) == set(by_id):
            return [by_id[i] for i in frozen["order"]]
        order = None
        if not freeze:
            return self.ranked(notes, self.meta(meta_text), usage, half_life, now)
        try:
            with self.lock():
                usage = self.usage()
                order = self.ranked(notes, self.meta(meta_text), usage, half_life, now)
                usage["ranking"] = {"key": key, "order": [n.id for n in order]}
                usage["notes"] = {i: u for i, u in usage["notes"].items() if i in by_id}
                self.heat.write(usage)
        except OSError as e:  # a home that takes no write (read-only): ranked now, not frozen
            if os_error_code(e) is None:
                raise
        return order if order is not None else self.ranked(notes, self.meta(meta_text), usage, half_life, now)

    def record_injections(self, ids: list[str], now: float) -> None:
        """Count one injection per printed note, at most one per note per hour (no lock taken
        when none is due: this runs on every prompt)."""
        if ids and self.heat.due(ids, now):
            with self.lock():
                self.heat.inject(ids, now)


@functools.cache
def _note_rules():
    """(where a sentence ends, a first-person word): compiled when a note is checked, not on
    the prompt's hot path, which imports this module only to count injections."""
    return (re.compile(r"(?<!\b[A-Za-z])[.!?]+(?=\s|$)|[。！？]+"),
            re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself)\b|我", re.IGNORECASE))


def fold(text: str) -> str:
    """One line: every run of whitespace, line breaks included, becomes one space."""
    return " ".join(text.split())


def check_note(text: str, cfg) -> str:
    """The note as it will be stored, or Refused saying why it may not be."""
    from anima.infra.text import plain

    sentence_end, first_person = _note_rules()
    text = fold(text)
    if not text:
        raise Refused("refusing an empty note")
    plain(text, "a note")
    cap = cfg["notes.note_max_chars"]
    if len(text) > cap:
        raise Refused(f"note has {len(text)} characters, over the cap of {cap} (notes.note_max_chars)")
    sentences = len([s for s in sentence_end.split(text) if s.strip()])
    if sentences > 3:
        raise Refused(f"a note is 1 to 3 sentences; this one has {sentences}")
    if not first_person.search(text):
        raise Refused("a note is about me, in the first person (I, me, my, 我); this one is not")
    from anima.notes import privacy

    privacy.refuse(text, "refusing a note", "a note is about me, not the user's private data", **privacy.settings(cfg))
    return text
