"""The recall pre-scan: the turns a search may match, found in a transcript's raw bytes.

A search's terms come as phrases: for each, the byte strings (lower-cased) its line must all
contain (anima.recall.search.needles), or None when that cannot be told from the bytes. A pass
yields every session, in sources.session_files order, as Scanned: its totals (turns, tokens)
and the turns that hold all the needles of some phrase, a superset of the matching ones (the
search decides). A file the summary knows (anima.recall.cache), unchanged and not escaped, is
decompressed and searched in its raw lower-cased bytes, and only the lines holding a needle
are parsed; any other file is read whole (anima.recall.sessions), which summarises it for the
next pass. A second file with an id already read is skipped with a warning, as sessions does.
"""

import os

from anima.infra import clock, fs
from anima.recall import formats, sessions, sources, zstd
from anima.recall.cache import SUMMARY, Cache, Summary, token_total


class Scanned:
    """One session as a recall pass sees it: its totals, and the turns that may match."""

    __slots__ = ("id", "path", "turns_total", "tokens_total", "turns", "format")

    def __init__(self, sid: str, path: str, turns_total: int, tokens_total: int, turns: list, fmt: str):
        self.id, self.path, self.turns = sid, path, turns
        self.turns_total, self.tokens_total, self.format = turns_total, tokens_total, fmt


# The Kelvin sign and the long s: FTS5 folds them to k and s, which neither bytes.lower()
# (the Kelvin sign) nor str.lower() (the long s) does; where either stands, an ASCII needle
# cannot tell ("\u212aitten" holds kitten)
_UNFOLDED = ("\u212a".encode(), "\u017f".encode())


def unfolded(low: bytes) -> bool:
    """Whether lower-cased bytes hold a character FTS5 folds to ASCII that lower() leaves:
    no needle can tell what they hold."""
    return any(u in low for u in _UNFOLDED)


def may_hold(low: bytes, phrases) -> bool:
    """Whether lower-cased bytes may hold one of the phrases (needles each, or None): all of
    one's needles, or any at all where they are `unfolded`."""
    return any(found is None or all(n in low for n in found) for found in phrases) or unfolded(low)


def scan(home, cfg, phrases, warn, paths: list[str] | None = None, read: dict | None = None):
    """Every session for recall, in sources.session_files order, as Scanned.

    `phrases`: for each phrase searched, the byte strings (lower-cased) that its line must
    contain, or None when it cannot be told from the bytes. A file read before keeps a summary
    (cache/sessions/summary.json: its id, format, turn and token totals, warnings), so
    that a later pass decompresses it, looks for the needles in its raw bytes and parses only
    the lines that hold them; a file whose text is escaped (\\uXXXX) or not summarised yet is
    read whole, as `sessions` reads it. Turns returned are a superset of the matching ones.
    `paths` limits the pass to those files (the ones an index does not cover). `read`, when
    given, gets {path: (turns, format)} of every file read, a second file of a session too.
    With no phrases, a summarised file is not even opened: its totals are all that is asked.
    """
    root = sources.home_root(home)
    cache_max = sources.setting(cfg, "recall.cache_sessions", 60)
    cache = summary = None
    if os.path.isdir(root):
        directory = os.path.join(root, "cache", "sessions")
        cache = Cache(directory, cache_max) if cache_max > 0 else None
        if cache is not None:
            cache.trim()
        summary = Summary(os.path.join(directory, SUMMARY))
    first: dict[str, str] = {}
    for path in sources.session_files(home, cfg) if paths is None else paths:
        started = clock.files_now_ns()
        sig = fs.signature(path)
        known = summary.get(path, sig) if summary is not None else None
        scanned = None
        if known is not None and not phrases:
            scanned = Scanned(known["id"], path, known["turns"], known["tokens"], [], known["format"])
            for message in known["warnings"]:
                warn(message)
        elif known is not None:  # (cheaper than even a cache entry: most files hold no needle at all)
            scanned = _scan_raw(path, sig, known, phrases)
            if scanned is None:
                summary.drop(path)  # (read whole below, and summarised again)
            else:
                for message in known["warnings"]:
                    warn(message)
        if scanned is None:
            session = sessions.read(path, cache, warn, summary, started, sig)
            if session is None:
                continue
            kept = [t for t in session.turns if may_hold(t.text.lower().encode("utf-8"), phrases)]
            known = summary.get(path, sig) if summary is not None else None  # just written: its totals
            tokens = known["tokens"] if known else token_total(t.text for t in session.turns)
            scanned = Scanned(session.id, path, len(session.turns), tokens, kept, session.format)
        if read is not None:
            read[path] = (scanned.turns_total, scanned.format)
        if scanned.id in first:
            warn(f"{path}: session {scanned.id} was already read from {first[scanned.id]}; file skipped")
            continue
        first[scanned.id] = path
        yield scanned
    if summary is not None:
        summary.save(first.values(), prune=paths is None)


def _scan_raw(path: str, sig: list, known: dict, phrases) -> Scanned | None:
    """The session from its raw bytes, parsing only the lines that hold a needle; None if the
    file now fails to read (the whole read then says why), or holds more turns or tokens than
    its summary says it has."""
    try:
        raw = b"".join(zstd.chunks(path))
    except (OSError, zstd.Damaged):
        return None
    low = raw.lower()
    turns = []
    if may_hold(low, phrases):
        sid, mtime = known["id"], sig[0] / 1e9
        # the lines that decide the format, read in order as a whole read reads them: a line
        # before the deciding one, or a header, holds no turn whatever it says
        detector, first, at = formats.Detector(), {}, 0
        while detector.format is None and at < len(raw):
            end = raw.find(b"\n", at)
            end = len(raw) if end == -1 else end
            first[len(first) + 1] = sessions.line_turn(raw[at:end], len(first) + 1, detector)
            at = end + 1
        for number, start, end in _lines_holding(low, phrases):
            turn = first[number] if number in first else sessions.line_turn(raw[start:end], number, detector)
            if turn is not None:
                who, text, ts = turn
                turns.append(sessions.Turn(sid, number, mtime if ts is None else ts, who, text, path))
    if len(turns) > known["turns"] or turns and token_total(t.text for t in turns) > known["tokens"]:
        return None  # (a summary that lies, damaged by hand: read whole, and summarised again)
    return Scanned(known["id"], path, known["turns"], known["tokens"], turns, known["format"])


def _lines_holding(low: bytes, phrases):
    """(number, start, end) of each line of `low` that holds all of some phrase's needles, in
    order. The first needle is searched for through the whole buffer (C speed); only the
    lines it is on are looked at."""
    if unfolded(low):
        return _all_lines(low)
    spans = set()
    for needles in phrases:
        if needles is None:
            return _all_lines(low)
        first, rest = needles[0], needles[1:]
        at = low.find(first)
        while at != -1:
            start = low.rfind(b"\n", 0, at) + 1
            end = low.find(b"\n", at)
            end = len(low) if end == -1 else end
            if all(n in low[start:end] for n in rest):
                spans.add((start, end))
            at = low.find(first, end)
    found, number, counted = [], 1, 0
    for start, end in sorted(spans):
        number += low.count(b"\n", counted, start)
        counted = start
        found.append((number, start, end))
    return found


def _all_lines(low: bytes):
    start = 0
    for number, line in enumerate(low.split(b"\n"), 1):
        yield number, start, start + len(line)
        start += len(line) + 1
