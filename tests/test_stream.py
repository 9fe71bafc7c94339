"""Pool A: think, stream (tail, follow, roll), state, memories, diary."""

import calendar
import hashlib
import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import interruptible, snapshot

T0 = "2026-11-30T21:05:07Z"


def now_md(home):
    return (home / "self" / "stream" / "now.md").read_text()


def book(home):
    return [json.loads(line) for line in (home / "pipeline" / "stream.jsonl").read_text().splitlines()]


def assert_no_machine(text):
    assert "{" not in text and "}" not in text
    assert not re.search(r"\b(act|event|msg)_", text)
    assert not re.search(r"[0-9a-f]{32}", text)


def think(run, text, when=T0):
    result = run("think", text, env={"ANIMA_NOW": when})
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


def test_think_appends_an_entry_and_records_it_as_hers(run, home):
    think(run, "I wonder whether Alice found the link.")
    result = run("think", "-", input="Two lines:\nthe second one.\n", env={"ANIMA_NOW": "2026-11-30T21:06:00Z"})
    assert result.exit_code == 0
    text = now_md(home)
    assert text == ("## 2026-11-30 21:05\n\nI wonder whether Alice found the link.\n\n"
                    "## 2026-11-30 21:06\n\nTwo lines:\nthe second one.\n\n")
    assert_no_machine(text)
    records = book(home)
    assert [r["lines"] for r in records] == [[1, 4], [5, 9]]
    assert {r["by"] for r in records} == {"think"}
    assert records[0]["at"] == T0 and records[0]["gen"] == 0
    lines = text.splitlines(keepends=True)
    for r in records:
        block = "".join(lines[r["lines"][0] - 1:r["lines"][1]])
        assert hashlib.sha256(block.encode()).hexdigest() == r["sha256"]
        assert r["sha256"] not in text


def test_a_thought_cannot_forge_a_heading(run, home):
    think(run, "I think.\n## 2026-11-30 20:00\n   # a title\r\nplain #tag\u2028## 2026-01-01 00:00")
    assert now_md(home) == ("## 2026-11-30 21:05\n\nI think.\n\\## 2026-11-30 20:00\n\\# a title\n"
                            "plain #tag\n\\## 2026-01-01 00:00\n\n")
    assert book(home)[0]["lines"] == [1, 8]


def test_think_refusals_change_nothing(run, home):
    think(run, "first")
    before = snapshot(home)
    for args, stdin, code in [(("think", "  \n\t"), None, 77), (("think", "-"), "\n\n", 77),
                              (("think",), b"\xff\xfe", 65), (("think", "x" * 4001), None, 77),
                              (("think", "-"), "y" * (64 * 1024 + 1), 77)]:
        result = run(*args, input=stdin)
        assert result.exit_code == code, (args, result.stderr)
        assert result.stdout == ""
        assert result.stderr.startswith("anima: ")
    assert snapshot(home) == before


def test_concurrent_thinkers_each_thought_whole_once(anima_bin, home):
    script = "for i in $(seq 1 10); do \"$0\" think \"I am thinker $1, thought $i, whole.\" || exit 1; done"
    procs = [subprocess.Popen(["sh", "-c", script, anima_bin, str(p)]) for p in range(8)]
    assert [p.wait(timeout=60) for p in procs] == [0] * 8
    text = now_md(home)
    bodies = re.findall(r"^## \d{4}-\d\d-\d\d \d\d:\d\d\n\n(.*)\n\n", text, re.M)
    expected = sorted(f"I am thinker {p}, thought {i}, whole." for p in range(8) for i in range(1, 11))
    assert sorted(bodies) == expected
    assert len(text.splitlines()) == 80 * 4
    records = book(home)
    assert len(records) == 80
    assert sorted(tuple(r["lines"]) for r in records) == [(1 + 4 * k, 4 + 4 * k) for k in range(80)]
    lines = text.splitlines(keepends=True)
    for r in records:
        block = "".join(lines[r["lines"][0] - 1:r["lines"][1]])
        assert hashlib.sha256(block.encode()).hexdigest() == r["sha256"]


def test_stream_tail(run, home):
    assert (run("stream").exit_code, run("stream").stdout) == (0, "")
    for k in range(3):
        think(run, f"thought {k}")
    assert run("stream", "-n", "2").stdout == "thought 2\n\n"
    assert run("stream").stdout == now_md(home)
    assert run("stream", "-n", "0").stdout == ""


def test_stream_follow_in_a_real_process(anima_bin, home, run):
    think(run, "before")
    proc = subprocess.Popen([anima_bin, "stream", "-n", "2", "-f"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=interruptible)
    try:
        assert proc.stdout.readline() == b"before\n"
        assert proc.stdout.readline() == b"\n"
        think(run, "after")
        assert [proc.stdout.readline() for _ in range(4)] == [b"## 2026-11-30 21:05\n", b"\n", b"after\n", b"\n"]
        assert run("stream", "roll", "--force").exit_code == 0
        think(run, "a new hour", when="2026-11-30T22:01:00Z")
        assert proc.stdout.readline() == b"## 2026-11-30 22:01\n"
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    assert proc.stderr.read() == b""
    proc = subprocess.Popen([anima_bin, "stream", "-n", "1", "-f"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"\n"  # following: its SIGTERM handler is in place
    proc.terminate()
    assert proc.wait(timeout=10) == 0
    assert proc.stderr.read() == b""


def test_stream_follow_into_a_closed_pipe(anima_bin, home, run):
    for k in range(5):
        think(run, f"thought {k}")
    proc = subprocess.run(f"set +o pipefail; '{anima_bin}' stream -n 20 -f | head -1; echo \"${{PIPESTATUS[0]}}\"",
                          shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=20)
    assert proc.stdout == "## 2026-11-30 21:05\n0\n"
    assert "Error" not in proc.stderr


def test_roll_by_lines(run, home):
    run("config", "set", "stream.max_lines", "8")
    think(run, "one")
    think(run, "two")
    assert run("stream", "roll", "--now", "2026-11-30T21:30:00Z").exit_code == 0
    assert now_md(home).count("\n") == 8  # not over the limit: stays
    think(run, "three")
    result = run("stream", "roll", "--now", "2026-11-30T21:30:00Z")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert now_md(home) == ""
    archive = home / "self" / "stream" / "archive" / "2026-11-30.md"
    assert archive.read_text() == "".join(f"## 2026-11-30 21:05\n\n{w}\n\n" for w in ("one", "two", "three"))
    roll = book(home)[-1]
    assert roll == {"gen": 1, "by": "roll", "why": "lines", "at": "2026-11-30T21:30:00Z", "moved": 12,
                    "archive": ["2026-11-30"]}
    think(run, "four")
    assert book(home)[-1]["gen"] == 1 and book(home)[-1]["lines"] == [1, 4]


def test_roll_by_hour_and_archive_append_only(run, home, monkeypatch):
    think(run, "late", when="2026-11-30T23:59:00Z")
    monkeypatch.setenv("ANIMA_NOW", "2026-11-30T23:59:59Z")
    assert run("stream", "roll").exit_code == 0
    assert now_md(home) != ""  # the same hour: not due
    think(run, "after midnight", when="2026-12-01T00:00:30Z")
    monkeypatch.setenv("ANIMA_NOW", "2026-12-01T00:01:00Z")
    assert run("stream", "roll").exit_code == 0  # first entry from 23:xx, now 00:xx
    archive = home / "self" / "stream" / "archive"
    day1 = (archive / "2026-11-30.md").read_text()
    assert day1 == "## 2026-11-30 23:59\n\nlate\n\n"
    assert (archive / "2026-12-01.md").read_text() == "## 2026-12-01 00:00\n\nafter midnight\n\n"
    think(run, "more", when="2026-12-01T00:30:00Z")
    assert run("stream", "roll", "--now", "2026-12-01T01:00:00Z").exit_code == 0
    second = (archive / "2026-12-01.md").read_text()
    assert second == "## 2026-12-01 00:00\n\nafter midnight\n\n## 2026-12-01 00:30\n\nmore\n\n"
    assert (archive / "2026-11-30.md").read_text() == day1
    assert [r.get("gen") for r in book(home)] == [0, 0, 1, 1, 2]
    assert [r["why"] for r in book(home) if r["by"] == "roll"] == ["hour", "hour"]


def test_roll_after_a_crash_between_archive_and_truncate(run, home):
    from anima.infra.home import Home
    from anima.stream.now import Stream

    think(run, "kept twice, archived once")
    s = Stream(Home(str(home)))
    path = s.archive_path("2026-11-30")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:  # what the first roll appended before it died
        f.write(now_md(home))
    assert run("stream", "roll", "--now", "2026-11-30T22:00:00Z").exit_code == 0
    with open(path) as f:
        assert f.read() == "## 2026-11-30 21:05\n\nkept twice, archived once\n\n"
    assert now_md(home) == ""


def test_state_show_and_set(run, home):
    result = run("state")
    assert (result.exit_code, result.stdout) == (1, "")
    assert "no state yet" in result.stderr
    assert run("state", "set", "I am calm,", "a little tired.").exit_code == 0
    assert run("state", "show").stdout == "I am calm, a little tired.\n"
    assert run("state", "set", "-", input="# 我现在的状态\n- 情绪：平静\n").exit_code == 0
    assert (home / "self" / "state.md").read_text() == "# 我现在的状态\n- 情绪：平静\n"
    before = snapshot(home)
    assert run("state", "set", "-", input=" \n").exit_code == 77
    assert snapshot(home) == before


def test_memories(run, home):
    assert (run("memories").exit_code, run("memories").stdout) == (0, "")
    memories = home / "self" / "memories"
    memories.mkdir(parents=True)
    (memories / "about_alice.md").write_text("# 关于 Alice\n我记得 Alice 喜欢肖邦。\nShe likes Chopin a lot.\n")
    (memories / "rust.md").write_text("I am learning Rust.\n")
    (memories / "notes.txt").write_text("not a memory\n")
    size = len((memories / "about_alice.md").read_bytes())
    assert run("memories", "list").stdout == f"about_alice\t{size}\nrust\t20\n"
    assert run("memories").stdout == run("memories", "list").stdout
    assert run("memories", "show", "rust").stdout == "I am learning Rust.\n"
    assert run("memories", "search", "chopin", "LIKES").stdout == "about_alice\t3\tShe likes Chopin a lot.\n"
    assert run("memories", "search", "肖邦").stdout == "about_alice\t2\t我记得 Alice 喜欢肖邦。\n"
    assert run("memories", "search", "i", "am").stdout == "rust\t1\tI am learning Rust.\n"
    result = run("memories", "search", "Chopin", "Rust")
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", "")
    result = run("memories", "show", "nobody")
    assert (result.exit_code, result.stdout) == (1, "")
    for bad in ("../config", "/etc/passwd", "a/b", "..", ".hidden"):
        result = run("memories", "show", bad)
        assert (result.exit_code, result.stdout) == (77, ""), bad


def test_diary(run, home, monkeypatch):
    monkeypatch.setenv("ANIMA_NOW", "2026-11-30T23:30:00Z")
    result = run("diary")
    assert (result.exit_code, result.stdout) == (1, "")
    assert run("diary", "--list").stdout == ""
    diary = home / "self" / "diary"
    diary.mkdir(parents=True)
    (diary / "2026-11-30.md").write_text("## 21:05\n\nA long day.\n\n")
    (diary / "2026-11-29.md").write_text("## 20:00\n\nQuiet.\n\n")
    assert run("diary").stdout == "## 21:05\n\nA long day.\n\n"
    assert run("diary", "2026-11-29").stdout == "## 20:00\n\nQuiet.\n\n"
    assert run("diary", "--list").stdout == "2026-11-29\n2026-11-30\n"
    for bad in ("2026-13-01", "yesterday", "../2026-11-30"):
        assert run("diary", bad).exit_code == 2


def test_dispatch_writes_what_these_commands_read(run, home, monkeypatch):
    from anima.infra import config
    from anima.infra.home import Home
    from anima.pipeline.dispatch import run_builtin

    h = Home(str(home))
    cfg = config.load(h.config)
    run_builtin(h, cfg, "diary.write", {"text": "I wrote this."}, False, when=1796072700.0)
    run_builtin(h, cfg, "state.update", {"text": "Content."}, False, when=1796072700.0)
    run_builtin(h, cfg, "memory.write", {"topic": "about_bob", "text": "Bob plays chess."}, False, when=1796072700.0)
    monkeypatch.setenv("ANIMA_NOW", "2026-12-01T12:00:00Z")
    day = time.strftime("%Y-%m-%d", time.gmtime(1796072700.0))
    assert run("diary", day).stdout.endswith("I wrote this.\n\n")
    assert run("state").stdout == "Content.\n"
    assert run("memories", "search", "chess").stdout == "about_bob\t1\tBob plays chess.\n"


def test_stream_tail_of_a_large_stream_reads_its_end(run, home):
    """-n N of a now.md far larger than the tail it reads: the same lines as splitting it all,
    whatever the breaks (\\r\\n, U+2028) and multi-byte characters where the read is cut."""
    assert run("init").exit_code == 0
    path = home / "self" / "stream" / "now.md"
    text = "".join(("é中" * (i % 300)) + str(i) + ("\n", "\r\n", "\u2028")[i % 3] for i in range(4000))
    path.write_bytes(text.encode("utf-8"))
    for n in (1, 7, 20, 500, 5000):
        r = run("stream", "-n", str(n))
        assert r.exit_code == 0 and r.stdout_bytes.decode() == "".join(text.splitlines(keepends=True)[-n:])
    path.write_bytes(text.rstrip("\n").encode("utf-8"))  # a last line left open by a hand edit
    assert run("stream", "-n", "2").stdout_bytes.decode() == "".join(text.rstrip("\n").splitlines(keepends=True)[-2:])


@pytest.mark.real_clock
def test_without_anima_now_a_command_reads_the_system_clock(run, home):
    """The one test that lives at the real time: what `think` stamps is now, to the minute."""
    before = time.time()
    think_now = run("think", "What time is it?")
    assert think_now.exit_code == 0
    stamp = calendar.timegm(time.strptime(now_md(home).split("\n")[0], "## %Y-%m-%d %H:%M"))
    assert before - 60 <= stamp <= time.time()
