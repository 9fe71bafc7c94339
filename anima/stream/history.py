"""`anima import-history`: an old user/assistant history.json becomes her past, in her words.

The file is a JSON array of messages, or an object whose "messages" is one:

    [{"role": "user", "content": "Hi!", "timestamp": "2024-05-01T09:30:00Z", "name": "Alice"},
     {"role": "assistant", "content": [{"type": "text", "text": "Hello, Alice."}]}, ...]

content is a string, or a list of parts (OpenAI style) whose text parts ({"type": "text",
"text": ...}, or plain strings) are joined; other parts (images, audio) are left out.
"timestamp" (or "ts", "created_at") is RFC 3339 (a time without a zone is UTC) or Unix
seconds (milliseconds when over 10^11).

Each user or assistant turn becomes one entry of the self-stream archive, quoted exactly as
internalize quotes what is said (anima.stream.quoting.quote and name):

    ## 2024-05-01 09:30

    Alice said: “Hi!”.           (zh: Alice 说：「Hi!」。)

and her own turns "I said: “…”." (我说：「…」。): words she said, never decisions, so nothing
imported can become an action (externalize reads only `anima think` entries, and these are
not even in now.md). system, developer, tool and function turns are instructions and
machinery, not something said to her or by her: left out. Empty turns are left out.

Where: self/stream/archive/DATE.md, DATE the UTC day of each message, appended (the archive
is append-only) in the file's order, day by day. An undated message takes the time of the
dated message before it (or, at the start, the first one after it); a file with no dates at
all is dated by its modification time, the latest it can have been said. now.md is never
written: it is what is happening now, and an old conversation is not.

Once per file content: pipeline/import.jsonl gets {"sha256", "file", "state": "begun", ...}
before the first append and {"sha256", "state": "done", ...} after the last, under one lock.
A file whose sha256 is done is not imported again. A run killed in between is finished by
the next: a day whose whole chunk is already in its archive file is not appended again.
"""

import errno
import json
import os
import stat
import time

from anima.infra import clock, digest, fs, jsontext, phrases
from anima.infra.errors import DataError, UsageError
from anima.stream.now import Stream, clean, heading
from anima.stream.quoting import name, quote

BY = "import-history"
MAX_BYTES = 256 * 1024 * 1024
ROLES = ("user", "assistant", "system", "developer", "tool", "function")
SPOKEN = ("user", "assistant")
_TIME_KEYS = ("timestamp", "ts", "created_at")


def read(path: str) -> tuple[bytes, float]:
    """The file's bytes and modification time; a symlink, a directory or a file too large is
    bad input (DataError), a missing one a usage error."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise DataError(f"{path}: is a symbolic link; give the file itself") from None
        raise DataError(f"{path}: {e.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise DataError(f"{path}: not a regular file")
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise DataError(f"{path}: over {MAX_BYTES // (1024 * 1024)} MiB; split it")
    return data, st.st_mtime


def _text(content, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    texts.append(part["text"])
            else:
                raise DataError(f"{where}: a content part is neither an object nor a string")
        return "\n".join(texts)
    raise DataError(f"{where}: content is not a string or a list of parts")


def _when(value, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise DataError(f"{where}: timestamp is not an RFC 3339 time or Unix seconds")
    if isinstance(value, str):
        return clock.parse(value, f"{where}: timestamp", DataError)
    seconds = value / 1000 if value > 1e11 else float(value)
    if not 0 <= seconds < 253402300800:  # year 10000
        raise DataError(f"{where}: timestamp {value} is out of range")
    return seconds


def messages(data: bytes, path: str) -> list[dict]:
    """The turns of a history file: [{"role", "text", "name", "at"}] (at: None if undated);
    DataError naming what is wrong."""
    try:
        doc = jsontext.loads(fs.decode(data, path))
    except ValueError as e:
        raise DataError(f"{path}: not valid JSON ({e})") from None
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        doc = doc["messages"]
    if not isinstance(doc, list):
        raise DataError(f"{path}: not a history: a JSON array of messages, or an object with \"messages\"")
    turns = []
    for i, message in enumerate(doc):
        where = f"{path}: message {i}"
        if not isinstance(message, dict):
            raise DataError(f"{where}: not an object")
        role = message.get("role")
        if role not in ROLES:
            raise DataError(f"{where}: role {role!r} is not one of {', '.join(ROLES)}")
        text = _text(message.get("content"), where)
        stamp = next((message[k] for k in _TIME_KEYS if message.get(k) is not None), None)
        who = message.get("name")
        if who is not None and not isinstance(who, str):
            raise DataError(f"{where}: name is not a string")
        turns.append({"role": role, "text": text, "name": who, "at": _when(stamp, where)})
    return turns


def date(turns: list[dict], fallback: float) -> None:
    """Give every undated turn a time: the dated turn before it, else the first after it,
    else `fallback` (the file's modification time)."""
    last = None
    for turn in turns:
        if turn["at"] is None:
            turn["at"] = last
        else:
            last = turn["at"]
    following = None
    for turn in reversed(turns):
        if turn["at"] is None:
            turn["at"] = following if following is not None else fallback
        following = turn["at"]


def entry(turn: dict, speaker: str, lang: str, qmax: int) -> str | None:
    """The stream entry of one turn, or None if it is not words said (or says nothing)."""
    if turn["role"] not in SPOKEN or not turn["text"].strip():
        return None
    said = quote(turn["text"], lang, qmax)
    if turn["role"] == "assistant":
        body = phrases.say(lang, "history", "i_said", said=said)
    else:
        who = name(turn["name"] if turn["name"] and turn["name"].strip() else speaker, lang)
        body = phrases.say(lang, "internalize", "said", who=who, said=said)
    return f"{heading(turn['at'])}\n\n{clean(body)}\n\n"


def plan(turns: list[dict], speaker: str, lang: str, qmax: int) -> tuple[dict[str, str], int]:
    """UTC day -> the chunk of entries to append to archive/DAY.md (in the file's order), and
    how many entries in all."""
    days: dict[str, list[str]] = {}
    for turn in turns:
        text = entry(turn, speaker, lang, qmax)
        if text is not None:
            days.setdefault(time.strftime("%Y-%m-%d", time.gmtime(turn["at"])), []).append(text)
    return {day: "".join(days[day]) for day in sorted(days)}, sum(map(len, days.values()))


class Importer:
    def __init__(self, home, cfg, now: float):
        self.home = home
        self.now = now
        self.lang = cfg["core.lang"]
        self.qmax = cfg["internalize.quote_max_chars"]
        self.stream = Stream(home)
        self.record_path = home.path("pipeline", "import.jsonl")

    def states(self, sha: str) -> list[dict]:
        records, _ = fs.new_json_lines(self.record_path, 0)
        return [r for r in records or () if r.get("sha256") == sha]

    def run(self, path: str, speaker: str = "user", dry_run: bool = False, emit=None) -> dict:
        """Import `path`; return what was done: {"sha256", "state", "days", "entries",
        "skipped"}, state "done", "already" or "dry-run". Bad input raises before any write."""
        data, mtime = read(path)
        sha = digest.sha(data)
        turns = messages(data, path)
        date(turns, mtime)
        chunks, entries = plan(turns, speaker, self.lang, self.qmax)
        summary = {"sha256": sha, "days": list(chunks), "entries": entries, "skipped": len(turns) - entries}
        if dry_run:
            if any(r.get("state") == "done" for r in self.states(sha)):
                return {**summary, "state": "already"}
            if emit:
                for day, chunk in chunks.items():
                    emit(f"==> {os.path.relpath(self.stream.archive_path(day), self.home.root)} <==\n{chunk}")
            return {**summary, "state": "dry-run"}
        with fs.locked(self.record_path, what="anima import-history"):
            states = [r.get("state") for r in self.states(sha)]
            if "done" in states:
                return {**summary, "state": "already"}
            if not chunks:
                return {**summary, "state": "done"}
            resuming = "begun" in states
            if not resuming:
                self._record({**summary, "file": os.path.abspath(path), "state": "begun"})
            for day, chunk in chunks.items():
                target = self.stream.archive_path(day)
                with self.stream.lock():  # as a roll appends to the archive
                    if resuming and chunk in (fs.read_text(target) or ""):
                        continue  # appended by the run that was killed
                    fs.append(target, chunk)
            self._record({"sha256": sha, "state": "done"})
        return {**summary, "state": "done"}

    def _record(self, record: dict) -> None:
        record = {**record, "at": clock.iso(self.now)}
        fs.append(self.record_path, json.dumps(record, ensure_ascii=False) + "\n")
