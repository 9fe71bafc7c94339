"""Writing turns: `anima session append`, for a host that keeps no transcripts of its own.

A turn goes to $ANIMA_HOME/sessions/ID.jsonl as one anima line, `{"role", "content", "ts"}`
(role user or assistant, ts the time in RFC 3339). A new file is made with its header first,
`{"type": "session", "id": ID}`; appends to one file are serialised by a lock, so concurrent
writers never interleave, and a turn after half a line (a writer killed mid-way) starts a
line of its own. The line a turn lands on is its line number as anima.recall.sessions reads
it. ID must be a plain name (letters, digits, ".", "_", "-"; not starting with "."; at most
200 characters). Nothing is written for another ID or blank text (Refused), a session stored
compressed (ID.jsonl.zst or ID.jsonl.zstd exists: Refused), another role (UsageError) or text
that is not valid UTF-8 (DataError).
"""

import json
import os
import re

from anima.infra import clock, fs
from anima.infra.errors import DataError, Refused, UsageError
from anima.infra.text import plain
from anima.recall import formats, sources, zstd

ID_PATTERN = re.compile(r"[A-Za-z0-9._-]+")
MAX_ID_CHARS = 200
MAX_APPEND_BYTES = 1 << 20  # the longest text `anima session append` reads from stdin


def check_session_id(sid: str) -> str:
    """`sid` if it is a plain name a session file can be named by, else Refused."""
    if not ID_PATTERN.fullmatch(sid) or sid.startswith(".") or len(sid) > MAX_ID_CHARS:
        raise Refused(f"session id {sid!r}: must be a plain name of letters, digits, '.', '_' and '-', "
                      f"not starting with '.', at most {MAX_ID_CHARS} characters")
    return sid


def append(home, session_id: str, role: str, text: str, now: float) -> tuple[str, int]:
    """Append one turn to sessions/ID.jsonl (made, header first, if new); return (path, its line)."""
    check_session_id(session_id)
    if role not in formats.WHO:
        raise UsageError(f"role {role!r}: must be user or assistant")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise DataError(f"text: not valid UTF-8 (character {e.start})") from None
    text = plain(text, "a turn")
    if not text.strip():
        raise Refused("empty text; nothing appended")
    directory = os.path.join(sources.home_root(home), "sessions")
    for suffix in zstd.ZSTD_SUFFIXES:
        if os.path.lexists(os.path.join(directory, session_id + suffix)):
            raise Refused(f"session {session_id} is stored compressed ({session_id}{suffix}); "
                          "anima appends only to plain .jsonl files")
    path = os.path.join(directory, session_id + ".jsonl")
    record = json.dumps({"role": role, "content": text, "ts": clock.iso(now)}, ensure_ascii=False) + "\n"
    fs.create(path, json.dumps({"type": "session", "id": session_id}, ensure_ascii=False) + "\n")
    with fs.locked(path, what=f"session {session_id}"):
        data = fs.read_bytes(path) or b""
        line = data.count(b"\n") + 1
        if data and not data.endswith(b"\n"):  # a writer left half a line: ours starts on a new one
            record = "\n" + record
            line += 1
        fs.append(path, record)
    return path, line
