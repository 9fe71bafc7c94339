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


def test_roll_by_lines_keeps_what_fits_in_half(run, home):
    run("config", "set", "stream.max_lines", "8")
    think(run, "one")
    think(run, "two")
    assert run("stream", "roll", "--now", "2026-11-30T21:30:00Z").exit_code == 0
    assert now_md(home).count("\n") == 8  # not over the limit: stays
    think(run, "three")
    result = run("stream", "roll", "--now", "2026-11-30T21:30:00Z")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert now_md(home) == "## 2026-11-30 21:05\n\nthree\n\n"  # 4 lines: half of stream.max_lines
    archive = home / "self" / "stream" / "archive" / "2026-11-30.md"
    assert archive.read_text() == "".join(f"## 2026-11-30 21:05\n\n{w}\n\n" for w in ("one", "two"))
    roll = book(home)[-1]
    assert roll == {"gen": 1, "by": "roll", "why": "lines", "at": "2026-11-30T21:30:00Z", "moved": 8, "kept": 4,
                    "size": 28, "archive": ["2026-11-30"]}
    think(run, "four")
    assert book(home)[-1]["gen"] == 1 and book(home)[-1]["lines"] == [5, 8]
    assert not (home / "pipeline" / "roll.pending").exists()
    assert run("check", "--only", "stream").exit_code == 0


def test_roll_keeps_the_last_hour_exactly(run, home):
    for when in ("20:00", "20:30", "20:45", "20:46", "21:40"):
        think(run, f"at {when}", when=f"2026-11-30T{when}:00Z")
    entry = {w: f"## 2026-11-30 {w}\n\nat {w}\n\n" for w in ("20:00", "20:30", "20:45", "20:46", "21:40")}
    archive = home / "self" / "stream" / "archive" / "2026-11-30.md"
    # the oldest entry 74 minutes old: not yet due (60 minutes kept, and a quarter of that again)
    assert run("stream", "roll", "--now", "2026-11-30T21:14:59Z").exit_code == 0
    assert not archive.exists() and len(book(home)) == 5
    # 75 minutes: due; only what is an hour old or more goes
    assert run("stream", "roll", "--now", "2026-11-30T21:15:00Z").exit_code == 0
    assert archive.read_text() == entry["20:00"]
    assert now_md(home) == "".join(entry[w] for w in ("20:30", "20:45", "20:46", "21:40"))
    # 20:45 is exactly 60 minutes old at 21:45: archived; 20:46 (59 minutes) kept
    assert run("stream", "roll", "--now", "2026-11-30T21:45:00Z").exit_code == 0
    assert archive.read_text() == "".join(entry[w] for w in ("20:00", "20:30", "20:45"))
    assert now_md(home) == entry["20:46"] + entry["21:40"]
    rolls = [r for r in book(home) if r["by"] == "roll"]
    assert [(r["gen"], r["why"], r["moved"], r["kept"]) for r in rolls] == [(1, "age", 4, 16), (2, "age", 8, 8)]
    # the kept entries are hers still, at their lines moved up (line n is line n - moved)
    think(run, "after", when="2026-11-30T21:46:00Z")
    assert book(home)[-1]["lines"] == [9, 12] and book(home)[-1]["gen"] == 2
    assert run("check", "--only", "stream").exit_code == 0
    # a forced roll keeps the last hour all the same; --keep 0 keeps nothing
    assert run("stream", "roll", "--force", "--now", "2026-11-30T21:45:30Z").exit_code == 0
    assert now_md(home).startswith(entry["20:46"]) and len(book(home)) == 8  # nothing old enough: no roll
    assert run("stream", "roll", "--force", "--keep", "0", "--now", "2026-11-30T21:50:00Z").exit_code == 0
    assert now_md(home) == "" and archive.read_text().endswith(entry["21:40"] + "## 2026-11-30 21:46\n\nafter\n\n")
    assert run("check", "--only", "stream").exit_code == 0


def test_roll_by_age_across_midnight_and_archive_append_only(run, home, monkeypatch):
    think(run, "late", when="2026-11-30T23:00:00Z")
    think(run, "after midnight", when="2026-12-01T00:00:30Z")
    assert run("stream", "roll", "--keep", "30", "--now", "2026-12-01T00:20:00Z").exit_code == 0  # 30 + 7
    archive = home / "self" / "stream" / "archive"
    day1 = (archive / "2026-11-30.md").read_text()
    assert day1 == "## 2026-11-30 23:00\n\nlate\n\n"
    assert not (archive / "2026-12-01.md").exists()
    assert run("stream", "roll", "--keep", "30", "--now", "2026-12-01T01:00:00Z").exit_code == 0
    assert (archive / "2026-12-01.md").read_text() == "## 2026-12-01 00:00\n\nafter midnight\n\n"
    assert (archive / "2026-11-30.md").read_text() == day1
    assert now_md(home) == ""
    assert [r.get("gen") for r in book(home)] == [0, 0, 1, 2]


def test_an_interrupted_roll_is_finished_by_the_next_append(run, home):
    """A roll killed after its first operation (its change set journalled, the archive
    appended, not yet recorded nor now.md replaced): the next think finishes it before it
    appends, and every entry is in exactly one place."""
    from anima.infra import changeset
    from anima.infra.home import Home
    from anima.stream.now import Stream

    think(run, "old", when="2026-11-30T19:00:00Z")
    think(run, "recent", when="2026-11-30T20:30:00Z")
    before = snapshot(home)
    assert run("stream", "roll", "--now", "2026-11-30T21:00:00Z").exit_code == 0
    after = snapshot(home)
    record = after["pipeline/stream.jsonl"][len(before["pipeline/stream.jsonl"]):].decode()
    for rel in set(after) - set(before):
        (home / rel).unlink()
    for rel, data in before.items():
        (home / rel).write_bytes(data)
    s = Stream(Home(str(home)))
    plan = changeset.ChangeSet(s.home, "roll")
    plan.append(s.archive_path("2026-11-30"), "## 2026-11-30 19:00\n\nold\n\n")
    plan.append(s.book, record)
    plan.replace(s.now_path, "## 2026-11-30 20:30\n\nrecent\n\n")
    (home / "pipeline" / "roll.pending").write_text(json.dumps({"by": "roll", "at": "x", "ops": plan.ops}))
    (home / "self" / "stream" / "archive" / "2026-11-30.md").write_text("## 2026-11-30 19:00\n\nold\n\n")
    think(run, "next", when="2026-11-30T21:01:00Z")
    assert not (home / "pipeline" / "roll.pending").exists()
    assert (home / "self" / "stream" / "archive" / "2026-11-30.md").read_text() == "## 2026-11-30 19:00\n\nold\n\n"
    assert now_md(home) == "## 2026-11-30 20:30\n\nrecent\n\n## 2026-11-30 21:01\n\nnext\n\n"
    assert (home / "pipeline" / "stream.jsonl").read_bytes().startswith(after["pipeline/stream.jsonl"])
    assert book(home)[-1]["gen"] == 1 and book(home)[-1]["lines"] == [5, 8]
    assert run("check", "--only", "stream").exit_code == 0


def test_kill_9_during_a_keeping_roll_loses_nothing(anima_bin, home, run, tmp_path):
    """Real `anima stream roll` processes killed at random moments of a roll that keeps half
    the stream, then a think: every entry exactly once in the archive or now.md (the one
    it belongs in), the bookkeeping in step."""
    import random
    import shutil

    from conftest import kill_after

    for k in range(30):
        think(run, f"entry {k}", when=f"2026-11-30T{19 + k // 15}:{(k % 15) * 4 + 2:02d}:00Z")
    start = tmp_path / "start"
    shutil.copytree(home, start)
    rng = random.Random(15)
    env = {**os.environ, "ANIMA_HOME": str(home), "ANIMA_NOW": "2026-11-30T21:00:00Z"}
    for trial in range(6):
        shutil.rmtree(home)
        shutil.copytree(start, home)
        kill_after([anima_bin, "stream", "roll"], env, rng.uniform(0.05, 0.25))
        think(run, "after the crash", when="2026-11-30T21:01:00Z")
        archived = (home / "self" / "stream" / "archive" / "2026-11-30.md")
        archived = archived.read_text() if archived.exists() else ""
        kept = now_md(home)
        for k in range(30):
            old = k < 15  # 19:xx: over an hour old at 21:00
            where = (archived if old else kept, kept if old else archived)
            assert (where[0].count(f"\nentry {k}\n"), where[1].count(f"\nentry {k}\n")) in ((1, 0), (0, 1)), trial
        assert kept.count("after the crash") == 1
        assert run("check", "--only", "stream").exit_code == 0, trial
        assert run("stream", "roll", "--now", "2026-11-30T21:00:00Z").exit_code == 0
        archived = (home / "self" / "stream" / "archive" / "2026-11-30.md").read_text()
        assert [archived.count(f"\nentry {k}\n") for k in range(30)] == [1] * 15 + [0] * 15
        assert [now_md(home).count(f"\nentry {k}\n") for k in range(30)] == [0] * 15 + [1] * 15


def test_a_decision_kept_across_a_roll_is_acted_on_once(run, home):
    """Her decision at 21:00 stays in now.md when the 19:50 entry is archived at 21:05: the
    externalize after the roll finds it hers (its record of the old generation, its line now
    4 lines up) and acts on it; neither another roll nor another run acts on it again, and a
    decision read before a roll is not acted on again after it."""
    def actions():
        queue = home / "pipeline" / "action_queue"
        return sorted((json.loads(p.read_text())["payload"]["params"]["text"], p.name) for p in queue.glob("*.json"))

    think(run, "An old thought.", when="2026-11-30T19:50:00Z")
    think(run, "I decide to note: read before the roll", when="2026-11-30T20:30:00Z")
    assert run("externalize", "--now", "2026-11-30T20:31:00Z").exit_code == 0
    think(run, "I decide to note: kept across the roll", when="2026-11-30T21:00:00Z")
    assert run("stream", "roll", "--now", "2026-11-30T21:05:00Z").exit_code == 0
    assert now_md(home).startswith("## 2026-11-30 20:30\n") and book(home)[-1]["moved"] == 4
    r = run("externalize", "--now", "2026-11-30T21:06:00Z")
    assert r.exit_code == 0
    [acted] = [json.loads(line) for line in r.stdout.splitlines()]
    assert acted["payload"]["params"] == {"text": "kept across the roll", "cites": {"gen": 0, "lines": [11]}}
    once = actions()
    assert [text for text, _ in once] == ["kept across the roll", "read before the roll"]
    assert run("stream", "roll", "--now", "2026-11-30T21:50:00Z").exit_code == 0  # 20:30 archived now
    assert "kept across the roll" in now_md(home) and "read before the roll" not in now_md(home)
    (home / "pipeline" / "externalize.cursor").unlink()  # everything read again: nothing acted on twice
    r = run("externalize", "--now", "2026-11-30T21:51:00Z")
    assert (r.exit_code, r.stdout) == (0, "")
    assert actions() == once
    assert run("dispatch").exit_code == 0
    assert run("check", "--only", "stream").exit_code == 0


def test_an_append_after_a_hand_edit_records_its_lines(run, home):
    """An append finds where now.md ends from its last record unless now.md changed since:
    a line added, the same size with a line more (a modification time after the
    bookkeeping's), a last line left open. Each time the new record names its lines."""
    path = home / "self" / "stream" / "now.md"

    def appended(text, expect):
        think(run, text)
        r = book(home)[-1]
        data = path.read_bytes()
        lines = data.decode().splitlines(keepends=True)
        block = "".join(lines[r["lines"][0] - 1:r["lines"][1]])
        assert (r["lines"], r["size"]) == (expect, len(data))
        assert hashlib.sha256(block.encode()).hexdigest() == r["sha256"] and block.endswith(f"\n{text}\n\n")

    appended("one", [1, 4])
    appended("two", [5, 8])
    time.sleep(0.01)  # (a person's edit comes after the bookkeeping)
    path.write_text("A line a person added at the top.\n" + now_md(home))
    appended("three", [10, 13])
    time.sleep(0.01)
    path.write_text(now_md(home).replace("one", "o\ne", 1))  # the same size, a line more
    appended("four", [15, 18])
    time.sleep(0.01)
    path.write_text(now_md(home) + "an open line")
    appended("five", [20, 23])
    assert now_md(home).endswith("an open line\n## 2026-11-30 21:05\n\nfive\n\n")
    appended("six", [24, 27])  # from the last record again


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
