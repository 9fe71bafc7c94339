"""Reading sessions: a transcript file read into turns, the unit recall, facts and forget use.

A file is read line by line in the format anima.recall.formats tells, and kept in the cache
(anima.recall.cache) while it is unchanged. `sessions` reads every file sources.session_files
lists; `turns_at` parses only the lines asked for; `find_turns` finds turns by session and line.

Line. A turn's line is its 1-based line number in the decompressed file, so
`zstdcat F | sed -n Np` shows it.

Two files with the same session id (anima.recall.formats tells it): the first in path order is
read, the later one is skipped with a warning.

Damage. A line that is not valid UTF-8, not JSON or not a JSON object is skipped with a
warning naming the file and line (at most 10 such warnings a file, then one saying how many
more), but for a last line without its newline in a file that has not settled: a host is
writing it. A corrupt or truncated zstd file keeps every complete line before the damage,
with one warning naming the file and the last line kept; if no line is complete before it,
or the file cannot be read at all, the file is skipped with one warning. An empty file is a session with
no turns, and no warning.
"""

import os

from anima.infra import clock, fs, jsontext
from anima.recall import formats, sources, zstd
from anima.recall.cache import CACHE_FORMAT, Cache

MAX_LINE_WARNINGS = 10


class Turn:
    """One message body: where it is (session, path, line), when, who said it, and what."""

    __slots__ = ("session", "line", "ts", "who", "text", "path")

    def __init__(self, session: str, line: int, ts: float, who: str, text: str, path: str):
        self.session, self.line, self.ts, self.who, self.text, self.path = session, line, ts, who, text, path

    def __repr__(self):
        return f"Turn({self.session!r}, {self.line}, {self.ts}, {self.who!r}, {self.text!r}, {self.path!r})"


class Session:
    """One transcript file read into turns (in line order)."""

    __slots__ = ("id", "path", "format", "delegated", "turns")

    def __init__(self, id: str, path: str, format: str, delegated: bool, turns: list[Turn]):
        self.id, self.path, self.format, self.delegated, self.turns = id, path, format, delegated, turns

    def __repr__(self):
        return f"Session({self.id!r}, {self.path!r}, {self.format!r}, delegated={self.delegated}, " \
               f"{len(self.turns)} turns)"


class Unreadable(Exception):
    """Nothing can be read from the file; the message is the warning."""


def extract(path: str, sig: list, data: bytes | None = None) -> dict:
    """Read `path` into a cache entry: id, format, turns as [line, ts, who, text], warnings;
    `data`, when given, is its bytes as the caller read them (what it then knows was read).

    Raise Unreadable when nothing can be read from it. A last line without its newline that
    is not JSON, in a file that has not settled (fs.settled), is being written: it is skipped
    without a word, as fs.new_json_lines waits for a torn line.
    """
    warnings: list[str] = []
    bad = 0
    detector = formats.Detector()
    turns: list[list] = []
    number = 0
    escaped = False  # \uXXXX escapes: the raw bytes then do not show the text's characters
    writing = not fs.settled([sig], clock.files_now_ns())
    ends = [b"\n"]  # the last byte read: whether the last line has its newline

    def chunks():
        for chunk in zstd.chunks(path) if data is None else (data,):
            if chunk:
                ends[0] = chunk[-1:]
            yield chunk

    last_bad = warned = None  # the last bad line's number, and its warning's place if it has one
    try:
        for number, raw in enumerate(zstd.lines(chunks()), 1):
            if not raw.strip():
                continue
            escaped = escaped or b"\\u" in raw
            obj, why = _object(raw, number)
            if why:
                bad += 1
                last_bad, warned = number, None
                if bad <= MAX_LINE_WARNINGS:
                    warned = len(warnings)
                    warnings.append(f"{path}:{number}: {why}; line skipped")
                continue
            if not detector.may_hold_turn(obj):
                continue
            turn = formats.turn(obj, detector.format, detector.delegated)
            if turn is not None:
                turns.append([number, turn[2], turn[0], turn[1]])
    except zstd.Damaged as e:
        writing = False  # (its last line came whole: the damage is what is said)
        if number == 0:
            raise Unreadable(f"{path}: {e}; file skipped") from None
        warnings.append(f"{path}: {e} after line {number}; kept lines 1-{number}")
    except OSError as e:
        raise Unreadable(f"{path}: cannot read ({e.strerror or e}); file skipped") from None
    if last_bad == number and writing and ends[0] != b"\n":  # (a line being written, not a damaged one)
        bad -= 1
        if warned is not None:
            del warnings[warned]
    if bad > MAX_LINE_WARNINGS:
        warnings.append(f"{path}: {bad - MAX_LINE_WARNINGS} more bad lines skipped")
    mtime = sig[0] / 1e9
    for turn in turns:
        if turn[1] is None:
            turn[1] = mtime
    return {"v": CACHE_FORMAT, "path": path, "sig": sig, "id": formats.session_id(path, detector.id),
            "format": detector.format or formats.UNKNOWN, "delegated": detector.delegated, "warnings": warnings,
            "turns": turns, "escaped": escaped}


def _session(entry: dict) -> Session:
    sid, path = entry["id"], entry["path"]
    turns = [Turn(sid, line, ts, who, text, path) for line, ts, who, text in entry["turns"]]
    return Session(sid, path, entry["format"], entry["delegated"], turns)


def read_session(path: str, cache_dir: str | None, cache_max: int, warn) -> Session | None:
    """The session in `path`, from the cache under `cache_dir` while the file is unchanged.

    None, after one warning, when nothing can be read from the file.
    """
    cache = Cache(cache_dir, cache_max) if cache_dir and cache_max > 0 else None
    return read(os.path.abspath(path), cache, warn)


def read(path: str, cache, warn, summary=None, started=None, sig=None) -> Session | None:
    """The session in the file at absolute `path`: from `cache` while its entry matches, else
    read whole and, if the file had settled and is unchanged, put in `cache` and `summary`;
    None after one warning when nothing can be read. `started` and `sig`: when a pass looked
    at the file, and its signature then (taken now without them)."""
    if started is None:
        started, sig = clock.files_now_ns(), fs.signature(path)
    if cache is not None and sig is not None:
        entry = cache.get(path, sig)
        if entry is not None:
            try:
                session, messages = _session(entry), entry["warnings"]
                if not isinstance(messages, list):
                    raise TypeError
            except (KeyError, TypeError, ValueError):
                pass
            else:
                for message in messages:
                    warn(message)
                if summary is not None and summary.known(path, sig) is None:
                    summary.put(path, entry)  # (one a person damaged, or deleted, is made again)
                return session
    try:
        entry = extract(path, sig or [0, 0, 0, 0])
    except Unreadable as e:
        warn(str(e))
        return None
    for message in entry["warnings"]:
        warn(message)
    if fs.settled([sig], started) and fs.signature(path) == sig:
        if cache is not None:
            cache.put(path, entry)
        if summary is not None:
            summary.put(path, entry)
    return _session(entry)


def _every_file(home, cfg, warn):
    """(path, Session or None when nothing can be read from it) for every transcript file."""
    root = sources.home_root(home)
    cache_max = sources.setting(cfg, "recall.cache_sessions", 60)
    cache = None
    if cache_max > 0 and os.path.isdir(root):
        cache = Cache(os.path.join(root, "cache", "sessions"), cache_max)
        cache.trim()
    for path in sources.session_files(home, cfg):
        yield path, read(path, cache, lambda message, path=path: warn(message, path))


def sessions(home, cfg, warn):
    """Every session, in sources.session_files order; a second file with an id already read is skipped."""
    first: dict[str, str] = {}
    for path, session in _every_file(home, cfg, lambda message, path: warn(message)):
        if session is None:
            continue
        if session.id in first:
            warn(f"{path}: session {session.id} was already read from {first[session.id]}; file skipped")
            continue
        first[session.id] = path
        yield session


def files_of(home, cfg, sid: str, warn) -> list[tuple[str, bool]]:
    """Every file that holds session `sid`, and whether anything can be read from it: also
    the later files with that id, which `sessions` skips, and a file too damaged to read,
    known by its name (formats.session_id without a header). Forgetting a session must find
    them all: a damaged copy holds the words as much as a whole one. Warnings come only for
    the other files (these are about to go)."""
    found, said = [], []
    for path, session in _every_file(home, cfg, lambda message, path: said.append((path, message))):
        if (session.id if session is not None else formats.session_id(path, None)) == sid:
            found.append((path, session is not None))
    for path, message in said:
        if path not in {p for p, _ in found}:
            warn(message)
    return found


def turns_at(path: str, session_id: str, lines) -> dict[int, Turn]:
    """The turns on these lines of `path`, parsing only them (and the lines before the one
    that decides the format). A damaged file is read as `read_session` reads it."""
    lines = set(lines)
    sig = fs.signature(path)
    last = max(lines, default=0)
    try:
        raw = zstd.head(path, last)
    except (OSError, zstd.Damaged):
        session = read_session(path, None, 0, lambda message: None)
        return {t.line: t for t in session.turns if t.line in lines} if session else {}
    detector, out = formats.Detector(), {}
    mtime = sig[0] / 1e9 if sig else 0.0
    for number, line in enumerate(raw.split(b"\n", last)[:last], 1):
        if detector.format is not None and number not in lines:
            continue
        turn = line_turn(line, number, detector)
        if turn is not None and number in lines:
            who, text, ts = turn
            out[number] = Turn(session_id, number, mtime if ts is None else ts, who, text, path)
    return out


def _object(line: bytes, number: int) -> tuple[dict | None, str | None]:
    """The JSON object on line `number` (its raw bytes; a byte order mark on the first is no
    part of it), or None and why it is none."""
    if number == 1 and line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]
    try:
        obj = jsontext.loads(line.decode("utf-8"))
    except UnicodeDecodeError as e:
        return None, f"not valid UTF-8 (byte {e.start})"
    except jsontext.NotJSON as e:  # (JSON to Python's parser: say why it is none to anima's)
        return None, f"not JSON ({e.msg})"
    except ValueError:
        return None, "not JSON"
    return (obj, None) if isinstance(obj, dict) else (None, "not a JSON object")


def line_turn(line: bytes, number: int, detector) -> tuple | None:
    """(who, text, ts) of line `number` (its raw bytes) of a transcript read in part, or None
    when it holds no turn; `detector` (a formats.Detector) has seen the lines before it
    until the format was decided, and sees this one."""
    obj, _ = _object(line, number)
    if obj is None or not detector.may_hold_turn(obj):
        return None
    return formats.turn(obj, detector.format, detector.delegated)


def find_turn(home, cfg, session_id: str, line: int, warn) -> Turn | None:
    """The turn on `line` of session `session_id`, or None when there is no such turn."""
    return find_turns(home, cfg, [(session_id, line)], warn).get((session_id, line))


def find_turns(home, cfg, wanted, warn) -> dict:
    """{(session id, line): Turn} for those of the `wanted` pairs that are real turns, in one pass."""
    wanted = set(wanted)
    ids = {sid for sid, _ in wanted}
    found = {}
    for session in sessions(home, cfg, warn):
        if session.id in ids:
            found.update(((session.id, t.line), t) for t in session.turns if (session.id, t.line) in wanted)
            ids.discard(session.id)
            if not ids:
                break
    return found
