"""Transcripts: anima, openai and Claude Code files, plain and zstd, read into turns; damage, the
cache, session append (the other hosts' formats and Claude Code's harness text: test_formats.py).

Every zstd file here is written by the zstandard module (one frame, several frames, a stream
with frames flushed mid-line), and every line number a turn reports is checked against
`zstd -dc F | sed -n Np` (or zstandard itself where the zstd CLI is missing).
"""

import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest
import zstandard

from anima.infra import config
from anima.infra.errors import DataError, Refused, UsageError
from anima.infra.home import Home
from anima.recall import append, formats, sessions, sources, zstd

from conftest import endless_stdin, file_time, snapshot

T0 = "2026-03-04T05:06:07Z"
T0_EPOCH = 1772600767.0


# --- helpers -------------------------------------------------------------------------------

class Warnings(list):
    """A `warn` callable that keeps every message."""

    def __call__(self, message):
        self.append(message)


def jsonl(*records) -> bytes:
    """One line per record: a dict as JSON, bytes or str as they are; a trailing newline."""
    lines = []
    for r in records:
        if isinstance(r, dict):
            r = json.dumps(r, ensure_ascii=False)
        lines.append(r.encode("utf-8") if isinstance(r, str) else r)
    return b"\n".join(lines) + b"\n"


def aged(path, seconds=60):
    """Set the file's mtime `seconds` in the past, so it is settled and may be cached."""
    t = int(file_time(-seconds) * 1e9)
    os.utime(path, ns=(t, t))
    return str(path)


def put(path, data: bytes, age=60) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return aged(path, age) if age else str(path)


def zst_single(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


def zst_multi(data: bytes) -> bytes:
    """Three frames, cut mid-line (a line may span frames)."""
    cuts = [0, len(data) // 3 + 1, 2 * len(data) // 3 + 2, len(data)]
    c = zstandard.ZstdCompressor()
    return b"".join(c.compress(data[a:b]) for a, b in zip(cuts, cuts[1:], strict=False))


def zst_stream(data: bytes) -> bytes:
    """Written as a stream in 7-byte writes, a block flushed and a frame ended mid-way."""
    import io

    out = io.BytesIO()
    writer = zstandard.ZstdCompressor(level=3).stream_writer(out, closefd=False)
    for i in range(0, len(data), 7):
        writer.write(data[i:i + 7])
        if i == 7 * 10:
            writer.flush(zstandard.FLUSH_BLOCK)
        if i == 7 * 30:
            writer.flush(zstandard.FLUSH_FRAME)
    writer.close()
    return out.getvalue()


ENCODINGS = {
    "plain": (".jsonl", lambda d: d),
    "single-frame": (".jsonl.zst", zst_single),
    "multi-frame": (".jsonl.zst", zst_multi),
    "stream": (".jsonl.zstd", zst_stream),
}


def shown_line(path: str, n: int) -> str:
    """Line n of the decompressed file, as a person would look at it."""
    compressed = path.endswith((".zst", ".zstd"))
    if shutil.which("sed") and (shutil.which("zstd") or not compressed):
        cmd = f"zstd -dc {shlex.quote(path)} | sed -n {n}p" if compressed else f"sed -n {n}p {shlex.quote(path)}"
        return subprocess.run(cmd, shell=True, check=True, capture_output=True).stdout.decode("utf-8").rstrip("\n")
    with open(path, "rb") as f:
        data = f.read()
    if compressed:
        data = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True).read()
    return data.split(b"\n")[n - 1].decode("utf-8")


def read(path, cache_dir=None, cache_max=60):
    w = Warnings()
    return sessions.read_session(str(path), cache_dir, cache_max, w), w


def rows(session):
    return [(t.line, t.who, t.text) for t in session.turns]


def cfg_with(home, **values):
    """The home's configuration with some values replaced (recall.* may not be in SETTINGS yet)."""
    cfg = config.load(str(home / "config.toml"))
    cfg.values = dict(cfg.values)
    cfg.values.update({k.replace("__", "."): v for k, v in values.items()})
    return cfg


def all_sessions(home, cfg=None):
    w = Warnings()
    return list(sessions.sessions(Home(str(home)), cfg, w)), w


# --- the three formats ---------------------------------------------------------------------

ANIMA = [
    {"type": "session", "id": "a-1", "delegated": False, "title": "tea"},                       # 1 header
    {"role": "user", "content": "I like green tea.", "ts": T0},                                  # 2
    {"role": "assistant", "content": "Noted: green tea.", "ts": T0_EPOCH + 1},                   # 3 epoch
    {"role": "system", "content": "SYSTEM PROMPT", "ts": T0},                                    # 4
    {"role": "developer", "content": "DEVELOPER NOTE"},                                          # 5
    {"role": "assistant", "content": None, "ts": T0,                                             # 6 tool call
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    {"role": "tool", "content": "TOOL OUTPUT", "tool_call_id": "c1"},                            # 7
    {"role": "assistant", "content": "Tea is good.", "reasoning_content": "SECRET REASONING"},   # 8
    {"role": "user", "content": "INJECTED MEMORY", "source": {"kind": "memory"}},               # 9
    {"role": "assistant", "content": "The agent speaks.", "source": {"kind": "agent"}},          # 10 own kind
    {"role": "user", "content": [{"type": "text", "text": "part one"},                           # 11
                                 {"type": "text", "text": "FROM A TOOL", "source": {"kind": "tool"}},
                                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                                 {"type": "text", "text": "part two"}]},
    {"role": "user", "content": "   "},                                                          # 12 blank body
    {"role": "function", "content": "FUNCTION RESULT"},                                          # 13
    {"role": "assistant", "content": "In milliseconds.", "ts": (T0_EPOCH + 2) * 1000},           # 14
    {"role": "user", "content": "No time of my own."},                                           # 15
    {"role": "user", "content": "A time that is not one.", "ts": "yesterday"},                   # 16
    "",                                                                                          # 17 blank
    {"role": "user", "content": "中文也行，我喜欢喝绿茶。", "ts": "2026-03-04T13:06:07+08:00"},      # 18
    {"role": "user", "content": "user says me", "source": {"kind": "user"}},                     # 19 own kind
]
ANIMA_ROWS = [
    (2, "user", "I like green tea."),
    (3, "me", "Noted: green tea."),
    (8, "me", "Tea is good."),
    (10, "me", "The agent speaks."),
    (11, "user", "part one\npart two"),
    (14, "me", "In milliseconds."),
    (15, "user", "No time of my own."),
    (16, "user", "A time that is not one."),
    (18, "user", "中文也行，我喜欢喝绿茶。"),
    (19, "user", "user says me"),
]
SKIPPED = ("SYSTEM PROMPT", "DEVELOPER NOTE", "TOOL OUTPUT", "SECRET REASONING", "INJECTED MEMORY", "FROM A TOOL",
           "FUNCTION RESULT", "hidden thought", "FILE CONTENTS", "Caveat", "continued from", "HOOK SAID",
           "INJECTED REMINDER", "COMPACTED", "Tea talk", "data:image")


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("chunk", [5, zstd.CHUNK])
def test_anima_format(home, tmp_path, monkeypatch, encoding, chunk):
    monkeypatch.setattr(zstd, "CHUNK", chunk)  # 5 bytes: every line spans reads
    suffix, encode = ENCODINGS[encoding]
    path = put(tmp_path / f"t{suffix}", encode(jsonl(*ANIMA)))
    mtime = os.stat(path).st_mtime_ns / 1e9
    session, warnings = read(path)
    assert warnings == []
    assert (session.id, session.path, session.format, session.delegated) == ("a-1", path, "anima", False)
    assert rows(session) == ANIMA_ROWS
    ts = {t.line: t.ts for t in session.turns}
    assert ts == {2: T0_EPOCH, 3: T0_EPOCH + 1, 8: mtime, 10: mtime, 11: mtime, 14: T0_EPOCH + 2, 15: mtime,
                  16: mtime, 18: T0_EPOCH, 19: mtime}
    assert {t.session for t in session.turns} == {"a-1"} and {t.path for t in session.turns} == {path}
    for turn in session.turns:
        content = json.loads(shown_line(path, turn.line))["content"]
        assert turn.text == (content if isinstance(content, str) else "part one\npart two")
    assert not [s for s in SKIPPED if any(s in t.text for t in session.turns)]


def test_a_delegated_anima_session_is_delegated_throughout(tmp_path):
    header = {"type": "session", "id": "sub-7", "delegated": True}
    path = put(tmp_path / "sub.jsonl.zst", zst_single(jsonl(header, *ANIMA[1:])))
    session, warnings = read(path)
    assert warnings == [] and session.delegated is True and session.id == "sub-7"
    assert rows(session) == [(line, "delegated", text) for line, _, text in ANIMA_ROWS]


OPENAI = [
    {"role": "system", "content": "SYSTEM PROMPT"},                                              # 1
    {"role": "user", "content": "What is BM25?", "name": "alice"},                               # 2
    {"role": "assistant", "content": None, "tool_calls": [                                       # 3
        {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{\"q\": \"bm25\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "TOOL OUTPUT"},                            # 4
    {"role": "assistant", "content": "BM25 ranks documents.", "reasoning_content": "SECRET REASONING"},  # 5
    {"role": "developer", "content": "DEVELOPER NOTE"},                                          # 6
    {"role": "function", "name": "f", "content": "FUNCTION RESULT"},                             # 7
    {"role": "user", "content": [{"type": "text", "text": "look at this"},                       # 8
                                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
    {"role": "user", "content": "INJECTED MEMORY", "source": {"kind": "retrieval"}},            # 9
    {"role": "assistant", "content": "", "tool_calls": []},                                      # 10
]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_openai_format(tmp_path, encoding):
    suffix, encode = ENCODINGS[encoding]
    path = put(tmp_path / f"chat-42{suffix}", encode(jsonl(*OPENAI)))
    session, warnings = read(path)
    assert warnings == []
    assert (session.id, session.format, session.delegated) == ("chat-42", "openai", False)
    assert rows(session) == [(2, "user", "What is BM25?"), (5, "me", "BM25 ranks documents."), (8, "user", "look at this")]
    assert {t.ts for t in session.turns} == {os.stat(path).st_mtime_ns / 1e9}
    assert json.loads(shown_line(path, 5))["content"] == "BM25 ranks documents."


def cc(kind, content, n, sidechain=False, **extra):
    """A Claude Code transcript line."""
    return {"parentUuid": None, "isSidechain": sidechain, "userType": "external", "cwd": "/p", "sessionId": "cc-1",
            "version": "1.0.0", "type": kind, "message": {"role": kind, "content": content}, "uuid": f"u{n}",
            "timestamp": f"2026-03-04T05:06:{n:02d}.500Z", **extra}


CLAUDE = [
    {"type": "summary", "summary": "Tea talk", "leafUuid": "u9"},                                # 1
    {"type": "file-history-snapshot", "messageId": "m1", "snapshot": {}},                        # 2
    cc("user", "Caveat: the messages below were generated by the user", 3, isMeta=True),        # 3
    cc("user", "Please refactor the parser.", 4),                                                # 4
    cc("assistant", [{"type": "thinking", "thinking": "hidden thought", "signature": "sig"},     # 5
                     {"type": "redacted_thinking", "data": "zzz"},
                     {"type": "text", "text": "I will refactor it."},
                     {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/x"}}], 5),
    cc("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "FILE CONTENTS"}], 6),   # 6
    {"type": "system", "subtype": "compact_boundary", "content": "COMPACTED", "sessionId": "cc-1"},  # 7
    cc("user", "This session is being continued from a previous conversation", 8, isCompactSummary=True),  # 8
    cc("user", "Search the repo for the tokenizer.", 9, sidechain=True),                        # 9
    cc("assistant", [{"type": "text", "text": "Found it in tok.py."}], 10, sidechain=True),      # 10
    cc("user", [{"type": "text", "text": "HOOK SAID HI", "source": {"kind": "hook"}},            # 11
                {"type": "text", "text": "my own words"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}], 11),
    cc("assistant", "A plain string answer.", 12),                                               # 12
    cc("user", "INJECTED REMINDER", 13, source={"kind": "system"}),                              # 13
    cc("assistant", [{"type": "text", "text": "As the agent.", "source": {"kind": "me"}}], 14),  # 14
]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_claude_code_format(tmp_path, encoding):
    suffix, encode = ENCODINGS[encoding]
    path = put(tmp_path / f"0f3c{suffix}", encode(jsonl(*CLAUDE)))
    session, warnings = read(path)
    assert warnings == []
    assert (session.id, session.format, session.delegated) == ("cc-1", "claude", False)
    assert rows(session) == [
        (4, "user", "Please refactor the parser."),
        (5, "me", "I will refactor it."),
        (9, "delegated", "Search the repo for the tokenizer."),
        (10, "delegated", "Found it in tok.py."),
        (11, "user", "my own words"),
        (12, "me", "A plain string answer."),
        (14, "me", "As the agent."),
    ]
    assert [t.ts for t in session.turns] == [T0_EPOCH - 7 + n + 0.5 for n in (4, 5, 9, 10, 11, 12, 14)]
    for turn in session.turns:
        assert json.loads(shown_line(path, turn.line))["uuid"] == f"u{turn.line}"
    assert not [s for s in SKIPPED if any(s in t.text for t in session.turns)]


def test_a_claude_code_sub_agent_file_is_its_own_delegated_session(home):
    """Claude Code keeps a sub-agent in a file of its own, every line under the parent's sessionId."""
    project = home / "sessions" / "claude" / "-p"
    put(project / "cc-1.jsonl", jsonl(*CLAUDE))
    agent = [dict(cc("user", "Brief: find the tokenizer.", 1, sidechain=True), agentId="a1b2"),
             dict(cc("assistant", "It is in tok.py.", 2, sidechain=True), agentId="a1b2")]
    put(project / "cc-1" / "subagents" / "agent-a1b2.jsonl", jsonl(*agent))
    found, warnings = all_sessions(home)
    assert warnings == []
    assert [(s.id, len(s.turns)) for s in found] == [("cc-1", 7), ("cc-1.agent-a1b2", 2)]
    assert rows(found[1]) == [(1, "delegated", "Brief: find the tokenizer."), (2, "delegated", "It is in tok.py.")]


def test_session_ids():
    """The id a line named, else the file name without its suffix; a named id must be plain."""
    assert formats.session_id("/x/f.jsonl", "s1") == "s1"
    assert formats.session_id("/x/f.jsonl.zst", None) == "f"
    assert formats.session_id("/x/f.g.jsonl.zstd", None) == "f.g"
    assert formats.session_id("/x/.jsonl", None) == ".jsonl"
    for header, sid in [({"type": "session", "id": "s1"}, "s1"), ({"type": "session"}, "f"),
                        ({"type": "session", "id": "has space"}, "f"), ({"type": "session", "id": 7}, "f"),
                        ({"type": "user", "sessionId": "cc-9", "message": {"role": "user", "content": "x"}}, "cc-9"),
                        ({"type": "session_meta", "payload": {"id": "019a-c0de"}}, "019a-c0de"),
                        ({"type": "session_meta", "payload": {"id": "two words"}}, "f")]:
        detector = formats.Detector()
        detector.may_hold_turn(header)
        assert formats.session_id("/x/f.jsonl", detector.id) == sid, header


def test_the_first_line_decides_the_format(tmp_path):
    cases = {
        "hdr": ([{"type": "session"}, {"role": "user", "content": "hi"}], "anima", "hdr"),
        "ts": ([{"role": "user", "content": "hi", "ts": T0}], "anima", "ts"),
        "nots": ([{}, {"role": "user", "content": "hi"}, {"role": "user", "content": "yo", "ts": T0}], "openai", "nots"),
        "cc": ([{"type": "summary", "summary": "s"}, cc("user", "hi", 2)], "claude", "cc-1"),
    }
    for name, (records, fmt, sid) in cases.items():
        session, warnings = read(put(tmp_path / f"{name}.jsonl", jsonl(*records)))
        assert (session.format, session.id, warnings) == (fmt, sid, []), name
        assert session.turns[0].text == "hi"


# --- damage --------------------------------------------------------------------------------

def test_a_bad_line_is_skipped_with_one_warning(tmp_path):
    data = jsonl(ANIMA[1], "{not json", "[1, 2]", b'{"role": "user", "content": "caf\xe9"}', "42", ANIMA[2]) \
        + b'{"role": "user", "content": "unterminated last line"}'
    for path in (put(tmp_path / "bad.jsonl", data), put(tmp_path / "bad.jsonl.zst", zst_multi(data))):
        session, warnings = read(path)
        assert warnings == [f"{path}:2: not JSON; line skipped",
                            f"{path}:3: not a JSON object; line skipped",
                            f"{path}:4: not valid UTF-8 (byte 32); line skipped",
                            f"{path}:5: not a JSON object; line skipped"]
        assert rows(session) == [(1, "user", "I like green tea."), (6, "me", "Noted: green tea."),
                                 (7, "user", "unterminated last line")]


def test_a_line_only_pythons_parser_takes_says_why_it_is_skipped(tmp_path):
    data = jsonl(ANIMA[1], '{"role": "user", "content": "\\ud800 here"}', '{"role": "user", "content": NaN}',
                 ANIMA[2])
    session, warnings = read(put(tmp_path / "odd.jsonl", data))
    path = tmp_path / "odd.jsonl"
    assert warnings == [f"{path}:2: not JSON (a lone surrogate \\ud800 is no character); line skipped",
                        f"{path}:3: not JSON (NaN is not JSON); line skipped"]
    assert rows(session) == [(1, "user", "I like green tea."), (4, "me", "Noted: green tea.")]


def test_many_bad_lines_are_summed_up(tmp_path):
    path = put(tmp_path / "junk.jsonl", jsonl(*["junk"] * 25, {"role": "user", "content": "still here"}))
    session, warnings = read(path)
    assert warnings == [f"{path}:{n}: not JSON; line skipped" for n in range(1, 11)] \
        + [f"{path}: 15 more bad lines skipped"]
    assert rows(session) == [(26, "user", "still here")]


def test_an_empty_file_is_a_session_without_turns(tmp_path):
    for name, data in (("e1.jsonl", b""), ("e2.jsonl.zst", b""), ("e3.jsonl.zst", zst_single(b"")),
                       ("e4.jsonl", b"\n\n")):
        session, warnings = read(put(tmp_path / name, data))
        assert (session.id, session.format, session.turns, warnings) == (name.split(".")[0], "unknown", [], [])


def two_frames(sid="a-1") -> tuple[bytes, bytes, int]:
    """Two zstd frames of ANIMA (as session `sid`), split after line 10; and the lines in the first."""
    data = jsonl({"type": "session", "id": sid}, *ANIMA[1:])
    cut = len(jsonl({"type": "session", "id": sid}, *ANIMA[1:10]))
    c = zstandard.ZstdCompressor(write_checksum=True)
    return c.compress(data[:cut]), c.compress(data[cut:]), 10


def test_a_truncated_zst_keeps_the_lines_before_the_break(tmp_path):
    first, second, lines = two_frames()
    path = put(tmp_path / "cut.jsonl.zst", first + second[:12])
    session, warnings = read(path)
    assert warnings == [f"{path}: truncated zstd data (the last frame is incomplete) after line 10; kept lines 1-10"]
    assert rows(session) == [r for r in ANIMA_ROWS if r[0] <= lines]


def test_a_corrupt_zst_keeps_the_lines_before_the_damage(tmp_path):
    first, second, lines = two_frames()
    path = put(tmp_path / "junk-after.jsonl.zst", first + b"\x00garbage that is not a frame\n" * 3)
    session, warnings = read(path)
    assert warnings == [f"{path}: corrupt zstd data (zstd decompressor error: Unknown frame descriptor) "
                        f"after line 10; kept lines 1-10"]
    assert rows(session) == [r for r in ANIMA_ROWS if r[0] <= lines]
    flipped = bytearray(second)
    flipped[len(flipped) // 2] ^= 0x55
    path = put(tmp_path / "flipped.jsonl.zst", first + bytes(flipped))
    session, warnings = read(path)
    assert len(warnings) == 1 and warnings[0].startswith(f"{path}: corrupt zstd data (zstd decompressor error: ")
    assert warnings[0].endswith(") after line 10; kept lines 1-10")
    assert rows(session) == [r for r in ANIMA_ROWS if r[0] <= lines]


def test_an_unreadable_zst_is_skipped_with_one_warning(tmp_path):
    first, _, _ = two_frames()
    path = put(tmp_path / "text.jsonl.zst", jsonl(*ANIMA))
    assert read(path) == (None, [f"{path}: corrupt zstd data (zstd decompressor error: Unknown frame descriptor); "
                                 "file skipped"])
    path = put(tmp_path / "stub.jsonl.zst", first[:9])
    assert read(path) == (None, [f"{path}: truncated zstd data (the last frame is incomplete); file skipped"])
    path = str(tmp_path / "gone.jsonl")
    assert read(path) == (None, [f"{path}: cannot read (No such file or directory); file skipped"])


def test_the_search_answers_from_everything_else(home):
    first, second, _ = two_frames("c-1")
    sessions_dir = home / "sessions"
    put(sessions_dir / "a.jsonl", jsonl(*ANIMA))
    bad = put(sessions_dir / "b.jsonl.zst", b"not zstd at all")
    cut = put(sessions_dir / "c.jsonl.zst", first + second[:12])
    put(sessions_dir / "d.jsonl", jsonl(*OPENAI[:2], "oops", *OPENAI[2:]))
    put(sessions_dir / "e.jsonl", b"")
    found, warnings = all_sessions(home)
    assert warnings == [
        f"{bad}: corrupt zstd data (zstd decompressor error: Unknown frame descriptor); file skipped",
        f"{cut}: truncated zstd data (the last frame is incomplete) after line 10; kept lines 1-10",
        f"{sessions_dir / 'd.jsonl'}:3: not JSON; line skipped",
    ]
    assert [(s.id, len(s.turns)) for s in found] == [("a-1", 10), ("c-1", 4), ("d", 3), ("e", 0)]


# --- where sessions are --------------------------------------------------------------------

def test_session_files(home, tmp_path, monkeypatch):
    user = tmp_path / "user"
    monkeypatch.setenv("HOME", str(user))
    s = home / "sessions"
    for rel in ("a.jsonl", "sub/b.jsonl.zst", "sub/deep/c.jsonl.zstd", "notes.txt", "x.json", ".hidden.jsonl",
                ".hid/d.jsonl"):
        put(s / rel, b"")
    for rel in ("logs/one.jsonl", "logs/two.jsonl.zst", "logs/skip.log", "logs/nested/three.jsonl"):
        put(user / rel, b"")
    for rel in ("imports/2026/four.jsonl", "imports/five.txt"):
        put(home / rel, b"")
    elsewhere = tmp_path / "elsewhere"
    put(elsewhere / "six.jsonl.zstd", b"")
    os.symlink(s / "a.jsonl", elsewhere / "link-to-a.jsonl")
    os.symlink(elsewhere, s / "linked")  # a linked directory is walked; its files counted once
    cfg = cfg_with(home, recall__sources=["~/logs/*", "imports/**/*", str(elsewhere), "nothing/*.jsonl"])
    assert sources.session_files(Home(str(home)), cfg) == sorted([
        str(s / "a.jsonl"), str(s / "sub/b.jsonl.zst"), str(s / "sub/deep/c.jsonl.zstd"),
        str(user / "logs/one.jsonl"), str(user / "logs/two.jsonl.zst"), str(user / "logs/nested/three.jsonl"),
        str(home / "imports/2026/four.jsonl"), str(elsewhere / "six.jsonl.zstd"),
    ])
    assert sources.session_files(Home(str(tmp_path / "nowhere")), None) == []


def test_a_session_id_read_twice_is_skipped_once_with_a_warning(home):
    header = {"type": "session", "id": "dup"}
    one = put(home / "sessions" / "one.jsonl", jsonl(header, {"role": "user", "content": "first", "ts": T0}))
    two = put(home / "sessions" / "two.jsonl.zst", zst_single(jsonl(header, {"role": "user", "content": "second"})))
    found, warnings = all_sessions(home)
    assert warnings == [f"{two}: session dup was already read from {one}; file skipped"]
    assert [rows(s) for s in found] == [[(2, "user", "first")]]


def test_find_turn(home):
    put(home / "sessions" / "a.jsonl.zst", zst_multi(jsonl(*ANIMA)))
    put(home / "sessions" / "z.jsonl", jsonl(*CLAUDE))
    h, w = Home(str(home)), Warnings()
    turn = sessions.find_turn(h, None, "a-1", 11, w)
    assert (turn.session, turn.line, turn.who, turn.text) == ("a-1", 11, "user", "part one\npart two")
    assert turn.path == str(home / "sessions" / "a.jsonl.zst")
    assert sessions.find_turn(h, None, "cc-1", 9, w).who == "delegated"
    for sid, line in (("a-1", 1), ("a-1", 7), ("a-1", 9), ("a-1", 99), ("a-1", 0), ("nope", 2), ("cc-1", 6)):
        assert sessions.find_turn(h, None, sid, line, w) is None, (sid, line)
    assert w == []


# --- the cache -----------------------------------------------------------------------------

def cache_entries(home) -> dict:
    d = home / "cache" / "sessions"
    if not d.is_dir():
        return {}
    return {json.loads((d / n).read_bytes())["path"]: d / n for n in os.listdir(d) if n.endswith(".json")}


def test_the_cache_is_used_while_the_file_is_unchanged(home):
    path = put(home / "sessions" / "a.jsonl.zst", zst_single(jsonl(*ANIMA)))
    found, _ = all_sessions(home)
    entry_file = cache_entries(home)[path]
    entry = json.loads(entry_file.read_bytes())
    assert entry["turns"][0] == [2, T0_EPOCH, "user", "I like green tea."]
    assert entry_file.read_bytes() == json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode()
    entry["turns"][0][3] = "DOCTORED"
    entry_file.write_bytes(json.dumps(entry).encode())
    found, _ = all_sessions(home)
    assert found[0].turns[0].text == "DOCTORED"  # served from the cache, not the file
    shutil.rmtree(home / "cache")
    again, _ = all_sessions(home)
    assert rows(again[0]) == ANIMA_ROWS  # deleting cache/ loses nothing


def test_a_change_in_mtime_or_size_invalidates_the_entry(home):
    h = Home(str(home))
    path, _ = append.append(h, "s1", "user", "first", T0_EPOCH)
    aged(path)
    assert [t.text for t in all_sessions(home)[0][0].turns] == ["first"]
    entry_file = cache_entries(home)[path]
    entry = json.loads(entry_file.read_bytes())
    entry["turns"][0][3] = "DOCTORED"
    entry_file.write_bytes(json.dumps(entry).encode())
    assert [t.text for t in all_sessions(home)[0][0].turns] == ["DOCTORED"]
    append.append(h, "s1", "assistant", "second", T0_EPOCH)
    assert [t.text for t in all_sessions(home)[0][0].turns] == ["first", "second"]
    assert json.loads(entry_file.read_bytes())["turns"][0][3] == "DOCTORED"  # a hot file is not cached
    aged(path)
    assert [t.text for t in all_sessions(home)[0][0].turns] == ["first", "second"]
    assert [t[3] for t in json.loads(entry_file.read_bytes())["turns"]] == ["first", "second"]
    # The same mtime, another size: still a change.
    st = os.stat(path)
    with open(path, "ab") as f:
        f.write(jsonl({"role": "user", "content": "third"}))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert [t.text for t in all_sessions(home)[0][0].turns] == ["first", "second", "third"]


def test_a_file_being_written_is_not_cached(home):
    put(home / "sessions" / "hot.jsonl", jsonl(*ANIMA), age=0)
    found, _ = all_sessions(home)
    assert len(found[0].turns) == 10 and cache_entries(home) == {}


def test_a_corrupt_cache_entry_is_ignored_and_rewritten(home):
    path = put(home / "sessions" / "a.jsonl", jsonl(*ANIMA))
    all_sessions(home)
    entry_file = cache_entries(home)[path]
    good = entry_file.read_bytes()
    for junk in (b"{trunc", b"[]", b'{"v": 1}', good.replace(b'[2,', b'[2,"x",'), good.replace(b'"warnings":[]', b'"x":0')):
        assert junk != good
        entry_file.write_bytes(junk)
        found, warnings = all_sessions(home)
        assert rows(found[0]) == ANIMA_ROWS and warnings == []
        assert entry_file.read_bytes() == good


def test_warnings_come_again_from_the_cache(home):
    path = put(home / "sessions" / "bad.jsonl", jsonl(ANIMA[1], "oops"))
    first = all_sessions(home)[1]
    assert first == [f"{path}:2: not JSON; line skipped"] and path in cache_entries(home)
    assert all_sessions(home)[1] == first


def test_at_most_cache_sessions_entries_are_kept(home):
    paths = [put(home / "sessions" / f"s{i}.jsonl", jsonl({"role": "user", "content": f"turn {i}"})) for i in range(5)]
    cache_dir = str(home / "cache" / "sessions")
    for path in paths:
        session, _ = read(path, cache_dir, 3)
        assert session.turns[0].text == f"turn {paths.index(path)}"
        at = file_time(-100 + paths.index(path))  # written in this order, a second apart
        os.utime(cache_entries(home)[path], (at, at))
    assert sorted(cache_entries(home)) == paths[2:]
    assert sorted(os.listdir(cache_dir)) == sorted(e.name for e in cache_entries(home).values())  # no temp files
    all_sessions(home, cfg_with(home, recall__cache_sessions=0))
    assert sorted(cache_entries(home)) == paths[2:]  # 0: no cache written


def test_a_scan_over_more_files_than_the_cache_holds_still_hits(home):
    paths = [put(home / "sessions" / f"s{i}.jsonl.zst", zst_single(jsonl({"role": "user", "content": f"turn {i}"})))
             for i in range(5)]
    cfg = cfg_with(home, recall__cache_sessions=3)
    found, _ = all_sessions(home, cfg)
    assert [s.turns[0].text for s in found] == [f"turn {i}" for i in range(5)]
    kept = {p: os.stat(e).st_mtime_ns for p, e in cache_entries(home).items()}
    assert sorted(kept) == paths[:3]
    for entry in cache_entries(home).values():  # doctored: a hit shows it
        entry.write_bytes(entry.read_bytes().replace(b'"turn ', b'"cached turn '))
        os.utime(entry, ns=(kept[json.loads(entry.read_bytes())["path"]],) * 2)
    found, _ = all_sessions(home, cfg)
    assert [s.turns[0].text for s in found] == [f"cached turn {i}" for i in range(3)] + ["turn 3", "turn 4"]
    assert {p: os.stat(e).st_mtime_ns for p, e in cache_entries(home).items()} == kept  # nothing rewritten
    # A lowered limit: the cache is trimmed to it (all three entries would be hits otherwise).
    all_sessions(home, cfg_with(home, recall__cache_sessions=1))
    assert list(cache_entries(home)) == [paths[0]]


def test_reading_plain_files_does_not_import_zstandard(home):
    put(home / "sessions" / "a.jsonl", jsonl(*ANIMA))
    code = ("import sys, anima.recall.sessions as t; from anima.infra.home import Home; "
            "assert 'zstandard' not in sys.modules; "
            "n = sum(len(s.turns) for s in t.sessions(Home(sys.argv[1]), None, print)); "
            "assert 'zstandard' not in sys.modules; print(n)")
    proc = subprocess.run([sys.executable, "-c", code, str(home)], capture_output=True, text=True, check=False)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "10\n", "")


# --- session append: the domain ------------------------------------------------------------

def test_append_makes_the_session_with_its_header(home):
    h = Home(str(home))
    path, line = append.append(h, "host-1.a_b", "user", "Hello, 世界", T0_EPOCH)
    assert (path, line) == (str(home / "sessions" / "host-1.a_b.jsonl"), 2)
    assert append.append(h, "host-1.a_b", "assistant", "Hi\nthere", T0_EPOCH + 1) == (path, 3)
    with open(path, encoding="utf-8") as f:
        assert f.read() == (
            '{"type": "session", "id": "host-1.a_b"}\n'
            '{"role": "user", "content": "Hello, 世界", "ts": "2026-03-04T05:06:07Z"}\n'
            '{"role": "assistant", "content": "Hi\\nthere", "ts": "2026-03-04T05:06:08Z"}\n')
    session, warnings = read(path)
    assert warnings == [] and session.format == "anima"
    assert [(t.session, t.line, t.ts, t.who, t.text) for t in session.turns] == [
        ("host-1.a_b", 2, T0_EPOCH, "user", "Hello, 世界"), ("host-1.a_b", 3, T0_EPOCH + 1, "me", "Hi\nthere")]


def test_append_after_half_a_line_starts_a_new_line(home):
    path = put(home / "sessions" / "s.jsonl", b'{"type": "session", "id": "s"}\n{"role": "user", "con', age=0)
    assert append.append(Home(str(home)), "s", "user", "whole", T0_EPOCH) == (path, 3)
    session, warnings = read(path)
    assert warnings == [f"{path}:2: not JSON; line skipped"] and rows(session) == [(3, "user", "whole")]


def test_append_refuses(home):
    h = Home(str(home))
    put(home / "sessions" / "packed.jsonl.zst", zst_single(jsonl({"type": "session", "id": "packed"})))
    before = snapshot(home)
    for sid in ("", ".x", "..", "a/b", "a b", "../up", "x" * 201, "tab\t", "é"):
        with pytest.raises(Refused, match="must be a plain name"):
            append.append(h, sid, "user", "text", T0_EPOCH)
    with pytest.raises(UsageError, match="must be user or assistant"):
        append.append(h, "s", "system", "text", T0_EPOCH)
    with pytest.raises(Refused, match="^empty text; nothing appended$"):
        append.append(h, "s", "user", " \n\t", T0_EPOCH)
    with pytest.raises(DataError, match=r"^text: not valid UTF-8 \(character 3\)$"):
        append.append(h, "s", "user", "caf\udce9", T0_EPOCH)
    with pytest.raises(Refused, match=r"^session packed is stored compressed \(packed.jsonl.zst\); "):
        append.append(h, "packed", "user", "text", T0_EPOCH)
    assert snapshot(home) == before
    append.append(h, "x" * 200, "user", "the longest id is fine", T0_EPOCH)


APPENDER = """
import sys
from anima.recall import append
from anima.infra.home import Home
who, n = sys.argv[2], int(sys.argv[3])
for i in range(n):
    path, line = append.append(Home(sys.argv[1]), "race", "user", f"{who} says {i}", 0)
    print(line, flush=True)
"""


def check_race(path, results: dict, n: int):
    """Every writer's every turn is on the line it was told, whole, and the header is first, once."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    assert lines[-1] == "" and lines[0] == '{"type": "session", "id": "race"}'
    records = [json.loads(line) for line in lines[1:-1]]
    assert len(records) == len(results) * n
    for who, numbers in results.items():
        assert [records[number - 2]["content"] for number in numbers] == [f"{who} says {i}" for i in range(n)]
    assert sorted(n for numbers in results.values() for n in numbers) == list(range(2, len(records) + 2))


def test_eight_processes_appending_at_once(home):
    procs = {f"w{k}": subprocess.Popen([sys.executable, "-c", APPENDER, str(home), f"w{k}", "25"],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(8)}
    results = {}
    for who, proc in procs.items():
        out, err = proc.communicate(timeout=60)
        assert (proc.returncode, err) == (0, "")
        results[who] = [int(x) for x in out.split()]
    check_race(str(home / "sessions" / "race.jsonl"), results, 25)


# --- anima session append: the command -----------------------------------------------------

def test_session_append_command(run, home):
    r = run("session", "append", "--session", "s1", "--role", "user", "I", "like", "tea.", env={"ANIMA_NOW": T0})
    assert (r.exit_code, r.stdout, r.stderr) == (0, "s1\t2\n", "")
    r = run("session", "append", "--session", "s1", "--role", "assistant", input="Noted.\n\n", env={"ANIMA_NOW": T0})
    assert (r.exit_code, r.stdout, r.stderr) == (0, "s1\t3\n", "")
    r = run("session", "append", "--session", "s1", "--role", "user", "-", input="  from - \n", env={"ANIMA_NOW": T0})
    assert (r.exit_code, r.stdout, r.stderr) == (0, "s1\t4\n", "")
    assert (home / "sessions" / "s1.jsonl").read_text(encoding="utf-8") == (
        '{"type": "session", "id": "s1"}\n'
        '{"role": "user", "content": "I like tea.", "ts": "2026-03-04T05:06:07Z"}\n'
        '{"role": "assistant", "content": "Noted.", "ts": "2026-03-04T05:06:07Z"}\n'
        '{"role": "user", "content": "  from - ", "ts": "2026-03-04T05:06:07Z"}\n')


def test_session_append_command_refuses(run, home, anima_bin):
    before = snapshot(home)
    r = run("session", "append", "--session", "../x", "--role", "user", "hi")
    assert (r.exit_code, r.stdout) == (77, "")
    assert r.stderr == "anima: session id '../x': must be a plain name of letters, digits, '.', '_' and '-', " \
                       "not starting with '.', at most 200 characters\n"
    r = run("session", "append", "--session", "s", "--role", "user", input="\n")
    assert (r.exit_code, r.stdout, r.stderr) == (77, "", "anima: empty text; nothing appended\n")
    r = run("session", "append", "--session", "s", "--role", "user", "-", input=b"caf\xe9")
    assert (r.exit_code, r.stdout, r.stderr) == (65, "", "anima: stdin: not valid UTF-8 (byte 3)\n")
    r = run("session", "append", "--session", "s", "--role", "user", "caf\udce9")
    assert (r.exit_code, r.stdout, r.stderr) == \
        (65, "", "anima: argument 7 'caf\\xe9': not valid UTF-8; anima takes UTF-8 text\n")
    r = run("session", "append", "--session", "s", "--role", "system", "hi")
    assert r.exit_code == 2 and "'system' is not one of 'user', 'assistant'" in r.stderr
    r = run("session", "append", "--role", "user", "hi")
    assert r.exit_code == 2 and "Missing option '--session'" in r.stderr
    r = endless_stdin([anima_bin, "session", "append", "--session", "s", "--role", "user"])
    assert (r.returncode, r.stdout, r.stderr) == (77, "", "anima: stdin: input too large (over 1048576 bytes)\n")
    assert snapshot(home) == before


def test_eight_anima_processes_appending_at_once(anima_bin, home):
    procs = {}
    for k in range(8):
        script = f'for i in $(seq 0 4); do "$0" session append --session race --role user "w{k} says $i" || exit 1; done'
        procs[f"w{k}"] = subprocess.Popen(["sh", "-c", script, anima_bin], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True)
    results = {}
    for who, proc in procs.items():
        out, err = proc.communicate(timeout=60)
        assert (proc.returncode, err) == (0, "")
        assert {line.split("\t")[0] for line in out.splitlines()} == {"race"}
        results[who] = [int(line.split("\t")[1]) for line in out.splitlines()]
    check_race(str(home / "sessions" / "race.jsonl"), results, 5)
