"""Facts about the person: staged from a real turn, approved or retired only by a person.

facts/facts.jsonl holds one fact per line, every status in one file: a fact is never
deleted, only retired, and each carries its source (session, line, who said it, and a
SHA-256 of the turn's text when it was staged) and the history of its status changes.
A fact's id is a hash of its source and quote, so staging the same quote from the same
turn again finds the same fact.

The profile and the habits are views over the approved facts, never facts themselves: the
profile shows the newest approved fact per tag; a habit is a tag a person promoted, once
facts.habit_threshold approved facts carry it (or sooner, forced).
"""

import json
import os
import re

from anima.infra import clock, fs, jsontext
from anima.infra.digest import sha
from anima.infra.errors import DataError, NotFound, Refused, UsageError

STATUSES = ("candidate", "approved", "retired")
_TAG = re.compile(r"^[^\s,/\\]{1,40}$")


def normalise(text: str) -> str:
    return " ".join(text.split())


def fact_id(session: str, line: int, quote: str, taken=frozenset()) -> str:
    """f and 8 hex digits, a hash of the source and the quote: the first of them not `taken`
    (the hash of the same again, numbered 1, 2, ... after it). Two quotes may hash alike in 32
    bits, and one is found in seconds: the second must not be taken for the first."""
    import itertools
    import zlib

    key = "\0".join((session, str(line), normalise(quote)))
    for n in itertools.count():
        salted = key if n == 0 else f"{key}\0{n}"
        fid = f"f{zlib.crc32(salted.encode('utf-8')):08x}"
        if fid not in taken:
            return fid


def check_tags(tags) -> list[str]:
    from anima.infra.text import BIDI, control_at, hidden_tag

    out = []
    for tag in tags:
        # (not str.isprintable: its Unicode is 14's, and a newer emoji, or a joiner in a word of
        # Persian or an emoji family, is what a person reads all the same)
        if not _TAG.match(tag) or control_at(tag) is not None or BIDI.search(tag) or hidden_tag(tag) is not None:
            raise UsageError(f"{tag!r} is not a tag: one word, no spaces, commas or slashes, no control, "
                             "bidi or tag character, at most 40 characters")
        if tag not in out:
            out.append(tag)
    return out


def last_change(fact: dict, status: str) -> str:
    """When the fact last entered `status` (RFC 3339), or ""."""
    return next((h["at"] for h in reversed(fact.get("history", [])) if h["status"] == status), "")


def _shown_as_read(quote: str, what: str) -> None:
    """DataError unless a person sees the quote as the prompt will hold it: plain text (no
    control character), no bidi control, which shows words in another order than they are
    stored, and no tag character, which shows nothing and stands for an ASCII one (words a
    model reads and a person does not): a person would approve what they did not read."""
    from anima.infra.text import BIDI, hidden_tag, plain

    plain(quote, what)
    bidi = BIDI.search(quote)
    for at, kind, why in ((bidi and bidi.start(), "bidi control", "shows words in another order than they are stored"),
                          (hidden_tag(quote), "tag character", "shows nothing, and stands for a letter a model reads")):
        if at is not None:
            raise DataError(f"{what} holds the {kind} U+{ord(quote[at]):04X} at character {at + 1}, "
                            f"which {why}; quote the words beside it")


class Request:
    """One fact to stage: where it was said and what."""

    def __init__(self, session: str, line: int, quote: str, tags=(), importance: int = 1):
        self.session, self.line, self.quote = session, line, quote
        self.tags, self.importance = list(tags), importance


class FactStore:
    def __init__(self, home):
        self.home = home
        self.dir = home.path("facts")
        self.file = os.path.join(self.dir, "facts.jsonl")
        self.profile_path = os.path.join(self.dir, "profile.md")
        self.habits_path = os.path.join(self.dir, "habits.json")
        self.archive_dir = os.path.join(self.dir, "archive")

    # --- facts -----------------------------------------------------------------------

    def load(self, text: str | None = None) -> list[dict]:
        if text is None:
            text = fs.read_text(self.file) or ""
        facts = []
        for number, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                fact = jsontext.loads(line)
            except ValueError:
                raise DataError(f"{self.file}:{number}: not valid JSON") from None
            if not isinstance(fact, dict) or fact.get("status") not in STATUSES or not fact.get("id"):
                raise DataError(f"{self.file}:{number}: not a fact (needs an id and a status)")
            facts.append(fact)
        return facts

    def _write(self, facts: list[dict]) -> None:
        fs.atomic_write(self.file, "".join(json.dumps(f, ensure_ascii=False) + "\n" for f in facts))

    def stage(self, requests: list[Request], resolve, now: float) -> list[tuple[str, bool]]:
        """Stage every request or none: each must resolve to a real turn that holds its quote.

        `resolve(session, line)` returns the Turn or None. Returns (id, newly staged) pairs.
        """
        from anima.recall.formats.common import plain_id

        staged = []
        for r in requests:
            # (a session id as it is when it may be one, else quoted: an agent's argument in a
            # message may not start a line of its own or send an escape to a terminal)
            where = f"{r.session if plain_id(r.session) else repr(r.session)}:{r.line}"
            quote = normalise(r.quote)
            if not quote:
                raise Refused(f"{where}: refusing an empty quote")
            _shown_as_read(quote, f"{where}: the quote")
            turn = resolve(r.session, r.line)
            if turn is None:
                raise Refused(f"{where}: no such turn in the transcripts; a fact needs a real source")
            if quote not in normalise(turn.text):
                raise Refused(f"{where}: the quote does not occur in that turn; "
                              "a fact needs a real source")
            staged.append((r, quote, turn))
        at = clock.iso(now)
        result = []
        with fs.locked(self.file, what="facts"):
            facts = self.load()
            known = {f["id"] for f in facts}
            sources = {(f.get("source", {}).get("session"), f.get("source", {}).get("line"), f["text"]): f["id"]
                       for f in facts}
            for r, quote, turn in staged:
                before = sources.get((r.session, r.line, quote))  # (staged before: the same fact)
                fid = before or fact_id(r.session, r.line, quote, known)
                result.append((fid, before is None))
                if before is not None:
                    continue
                known.add(fid)
                sources[(r.session, r.line, quote)] = fid
                facts.append({
                    "id": fid, "text": quote, "status": "candidate", "tags": r.tags, "importance": r.importance,
                    "source": {"session": r.session, "line": r.line, "who": turn.who, "said": clock.iso(turn.ts),
                               "sha256": sha(turn.text)},
                    "history": [{"status": "candidate", "at": at}],
                })
            if any(new for _, new in result):
                self._write(facts)
        return result

    def set_status(self, ids: list[str], status: str, now: float, reason: str | None = None) -> None:
        """Approve or retire every id or none (an unknown id changes nothing)."""
        with fs.locked(self.file, what="facts"):
            facts = self.load()
            by_id = {f["id"]: f for f in facts}
            missing = [i for i in ids if i not in by_id]
            if missing:
                raise NotFound(f"no fact {missing[0]}; `anima facts` lists them")
            change = {"status": status, "at": clock.iso(now)}
            if reason:
                change["reason"] = reason
            for i in dict.fromkeys(ids):
                if by_id[i]["status"] != status:
                    by_id[i]["status"] = status
                    by_id[i].setdefault("history", []).append(dict(change))
            self._write(facts)

    def approved(self, facts: list[dict] | None = None) -> list[dict]:
        """Approved facts, newest approval first."""
        facts = self.load() if facts is None else facts
        chosen = [f for f in facts if f["status"] == "approved"]
        return sorted(chosen, key=lambda f: (last_change(f, "approved"), f["id"]), reverse=True)

    # --- profile ---------------------------------------------------------------------

    def profile(self, facts: list[dict] | None = None) -> list[tuple[str, dict, int]]:
        """(tag, newest approved fact with it, how many more) per tag, newest first."""
        groups: dict[str, list[dict]] = {}
        for f in self.approved(facts):
            for tag in f.get("tags", []):
                groups.setdefault(tag, []).append(f)
        return [(tag, fs_[0], len(fs_) - 1) for tag, fs_ in groups.items()]

    def handwritten(self, text: str | None = None) -> str | None:
        text = fs.read_text(self.profile_path) if text is None else text
        return text.strip() if text and text.strip() else None

    def set_handwritten(self, text: str, now: float) -> None:
        """Write the hand-written profile; the one it replaces goes to facts/archive/."""
        if not text.strip():
            raise Refused("refusing an empty profile; `anima profile reset` goes back to the facts")
        with fs.locked(self.profile_path, what="profile"):
            self._archive_profile(now)
            fs.atomic_write(self.profile_path, text.strip() + "\n")

    def reset_handwritten(self, now: float) -> str | None:
        """Move the hand-written profile to facts/archive/ (never deleted); return where."""
        with fs.locked(self.profile_path, what="profile"):
            where = self._archive_profile(now)
            if where:
                fs.remove(self.profile_path)
        return where

    def _archive_profile(self, now: float) -> str | None:
        text = fs.read_text(self.profile_path)
        if text is None:
            return None
        for n in range(1, 10000):
            path = os.path.join(self.archive_dir, f"profile-{clock.iso(now)}" + (f"-{n}" if n > 1 else "") + ".md")
            if fs.create(path, text):
                return path
        raise DataError(f"{self.archive_dir}: cannot find a free archive name")

    # --- habits ----------------------------------------------------------------------

    def habits(self, text: str | None = None) -> dict:
        text = fs.read_text(self.habits_path) if text is None else text
        if text is None:
            return {}
        try:
            data = jsontext.loads(text)
        except ValueError:
            raise DataError(f"{self.habits_path}: not valid JSON") from None
        if not isinstance(data, dict) or not isinstance(data.get("habits"), dict):
            raise DataError(f"{self.habits_path}: expected an object with a \"habits\" object")
        return data["habits"]

    def newest_by_tag(self, facts: list[dict] | None = None) -> dict[str, dict]:
        """Tag -> its newest approved fact."""
        return {tag: f for tag, f, _ in self.profile(facts)}

    def tag_counts(self, facts: list[dict] | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for f in self.approved(facts):
            for tag in f.get("tags", []):
                counts[tag] = counts.get(tag, 0) + 1
        return counts

    def promote(self, tag: str, text: str | None, now: float, threshold: int, force: bool) -> None:
        """Make `tag` a habit at `now`; Refused, nothing written, when no approved fact has
        it, or fewer than `threshold` do and not `force`."""
        # before even the lock file is made; that lock guards habits.json, not the facts it counts
        self._enough(tag, threshold, force)
        with fs.locked(self.habits_path, what="habits"):
            habits = self.habits()
            habits[tag] = {"promoted": clock.iso(now)}
            if text:
                habits[tag]["text"] = normalise(text)
            fs.atomic_write(self.habits_path, json.dumps({"habits": habits}, ensure_ascii=False, indent=1) + "\n")

    def _enough(self, tag: str, threshold: int, force: bool) -> None:
        count = self.tag_counts().get(tag, 0)
        if count == 0:
            raise Refused(f"no approved fact has the tag {tag!r}; a habit stands on approved facts")
        if count < threshold and not force:
            raise Refused(f"{tag!r} has {count} approved fact{'s' if count > 1 else ''}, fewer than the "
                          f"{threshold} a habit needs (facts.habit_threshold); --force promotes it anyway")

    def demote(self, tag: str) -> None:
        with fs.locked(self.habits_path, what="habits"):
            habits = self.habits()
            if tag not in habits:
                raise NotFound(f"{tag!r} is not a habit; `anima habits` lists them")
            del habits[tag]
            fs.atomic_write(self.habits_path, json.dumps({"habits": habits}, ensure_ascii=False, indent=1) + "\n")


def search(approved: list[dict], query) -> tuple[list[dict], bool]:
    """Approved facts holding every term of `query` (a recall.Query), newest approval first;
    if none holds them all, those holding any (relaxed). Retired facts are never searched."""
    from anima.recall.fts import Memory

    memory = Memory()
    for f in approved:
        memory.add(f["text"])
    rows = [memory.phrase_rows(m) for m in query.matches]
    hits = [(f, [i in r for r in rows]) for i, f in enumerate(approved, 1)]
    strict = [f for f, found in hits if all(found)]
    if strict:
        return strict, False
    return [f for f, found in hits if any(found)], True


def habit_text(habit: dict, newest: dict | None) -> str | None:
    """How a habit reads: the words a person gave it, else its tag's newest approved fact
    (so a retired fact never lingers in a habit); None when neither exists."""
    return habit.get("text") or (newest["text"] if newest else None)
