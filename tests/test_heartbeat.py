"""The heartbeat, `anima tick` with all its steps: the loop closed in one tick, tick.steps, the
night's consolidation after she lived it, the nudge, the reflection timer with a real local
HTTP model, a failing step, and the cheap tick with nothing due."""

import json
import os
import subprocess
import sys

import pytest
import test_llm

from anima.infra.home import QUEUES
from anima.stream import heartbeat

from conftest import NOW_TS, file_time

pytestmark = pytest.mark.usefixtures("utc")
model = test_llm.model  # the fixture: a real chat-completions server on 127.0.0.1

STEPS = ("rhythm", "sweep", "preprocess", "internalize", "reflect", "externalize", "dispatch", "roll", "index",
         "consolidate")
ALL = ",".join(STEPS)


def setup(run, **settings):
    assert run("init", "--lang", "en").exit_code == 0
    for key, value in settings.items():
        r = run("config", "set", key.replace("__", "."), str(value))
        assert r.exit_code == 0, r.stderr


def tick(run, at, **env):
    r = run("tick", "--now", at, env=env or None)
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", ""), r.stderr
    return beat(os.environ["ANIMA_HOME"])


def beat(home):
    with open(os.path.join(home, "pipeline", "heartbeat", "tick.json"), encoding="utf-8") as f:
        return json.load(f)


def say(run, text, speaker, at):
    r = run("say", text, "--speaker", speaker, env={"ANIMA_NOW": at})
    assert r.exit_code == 0, r.stderr


def think(run, text, at):
    r = run("think", text, env={"ANIMA_NOW": at})
    assert r.exit_code == 0, r.stderr


def now_md(home):
    path = home / "self" / "stream" / "now.md"
    return path.read_text() if path.exists() else ""


def lived(home):
    """now.md and the archive: all she lived, in order."""
    archive = home / "self" / "stream" / "archive"
    days = "".join(p.read_text() for p in sorted(archive.glob("*.md"))) if archive.exists() else ""
    return days + now_md(home)


def waiting(home, queue):
    d = home / "pipeline" / queue
    return sorted(p.name for p in d.glob("*.json")) if d.exists() else []


def records(home):
    path = home / "pipeline" / "stream.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_one_tick_drives_the_whole_loop(run, home):
    setup(run)
    say(run, "Are you coming tonight?", "Alice", "2026-11-30T21:04:00Z")
    think(run, "I decide to write in my diary: the loop closed in one tick.", "2026-11-30T21:04:30Z")
    tick(run, "2026-11-30T21:05:00Z")
    text = now_md(home)
    assert "Alice said: “Are you coming tonight?”" in text
    # her decision was carried out, and she lived its result in the same tick
    (diary,) = (home / "self" / "diary").glob("*.md")
    assert "the loop closed in one tick." in diary.read_text()
    assert text.index("I wrote in my diary") > text.index("I decide to write in my diary")
    for queue in ("inbox/pending", "message_queue", "action_queue", "rhythm/triggers"):
        assert waiting(home, queue) == [], queue
    assert beat(home)["failed"] == []
    before = now_md(home)
    tick(run, "2026-11-30T21:06:00Z")  # nothing twice
    assert now_md(home) == before and diary.read_text().count("the loop closed in one tick.") == 1


def test_tick_steps_says_what_tick_drives(run, home):
    setup(run, tick__steps="rhythm,sweep,preprocess")
    say(run, "hello", "Bob", "2026-11-30T21:04:00Z")
    think(run, "I decide to write in my diary: not yet.", "2026-11-30T21:04:30Z")
    tick(run, "2026-11-30T21:05:00Z")
    assert "msg_" in waiting(home, "message_queue")[0]  # preprocessed, not lived
    assert "“hello”" not in now_md(home) and not list((home / "self" / "diary").glob("*.md"))
    assert run("config", "set", "tick.steps", "internalize").exit_code == 0
    tick(run, "2026-11-30T21:06:00Z")
    assert "Bob said: “hello”" in now_md(home) and not list((home / "self" / "diary").glob("*.md"))
    assert run("config", "set", "tick.steps", ALL).exit_code == 0
    tick(run, "2026-11-30T21:07:00Z")
    assert "not yet." in next((home / "self" / "diary").glob("*.md")).read_text()
    r = run("config", "set", "tick.steps", "rhythm,dream")
    assert r.exit_code == 78 and "tick.steps: must be a list drawn from rhythm, sweep" in r.stderr


def test_the_night_rule_consolidates_once_after_she_lived_it(run, home):
    setup(run)
    cursor = home / "pipeline" / "consolidate.cursor"
    say(run, "good night", "Alice", "2026-11-30T01:30:00Z")
    tick(run, "2026-11-30T01:30:00Z")
    assert "“good night”" in now_md(home) and not cursor.exists()
    # the night rule fires, but she does not live it yet: no consolidation
    assert run("config", "set", "tick.steps", ALL.replace("internalize,", "")).exit_code == 0
    assert ("midnight", "2026-11-30T02:00:00Z") in [(f["rule"], f["at"]) for f in tick(run, "2026-11-30T02:00:00Z")
                                                    ["fired"]]
    (night,) = [json.loads((home / "pipeline" / "message_queue" / n).read_text())
                for n in waiting(home, "message_queue")
                if json.loads((home / "pipeline" / "message_queue" / n).read_text())["payload"]["rule"] == "midnight"]
    assert night["payload"]["consolidate"] is True
    tick(run, "2026-11-30T02:01:00Z")
    assert not cursor.exists() and not list((home / "self" / "autobiography").glob("*.md"))
    # she lives it: the consolidation follows in the same tick
    assert run("config", "set", "tick.steps", ALL).exit_code == 0
    tick(run, "2026-11-30T02:02:00Z")
    assert json.loads(cursor.read_text())["at"] == "2026-11-30T02:02:00Z"
    assert "“good night”" in (home / "self" / "stream" / "archive" / "2026-11-30.md").read_text()
    assert not (home / "pipeline" / "heartbeat" / "consolidate.json").exists()
    # once: later ticks that night, with more lived, do not consolidate again
    say(run, "still awake?", "Alice", "2026-11-30T02:03:00Z")
    tick(run, "2026-11-30T02:03:00Z")
    tick(run, "2026-11-30T03:00:00Z")
    assert json.loads(cursor.read_text())["at"] == "2026-11-30T02:02:00Z"
    # the next night, again
    tick(run, "2026-12-01T02:00:00Z")
    assert json.loads(cursor.read_text())["at"] == "2026-12-01T02:00:00Z"


def test_a_consolidation_by_hand_after_the_trigger_is_the_night_slept(run, home):
    setup(run, tick__steps=ALL.replace("internalize,", ""))
    say(run, "hi", "Alice", "2026-11-30T01:50:00Z")
    tick(run, "2026-11-30T02:00:00Z")
    assert (home / "pipeline" / "heartbeat" / "consolidate.json").exists()
    assert run("internalize", env={"ANIMA_NOW": "2026-11-30T02:05:00Z"}).exit_code == 0
    assert run("consolidate", "--now", "2026-11-30T02:06:00Z").exit_code == 0
    cursor = (home / "pipeline" / "consolidate.cursor").read_text()
    assert run("config", "set", "tick.steps", ALL).exit_code == 0
    tick(run, "2026-11-30T02:07:00Z")
    assert (home / "pipeline" / "consolidate.cursor").read_text() == cursor
    assert not (home / "pipeline" / "heartbeat" / "consolidate.json").exists()


def nudges(home):
    out = []
    for n in waiting(home, "message_queue"):
        doc = json.loads((home / "pipeline" / "message_queue" / n).read_text())
        if doc["payload"].get("rule") == "nudge":
            out.append({k: doc["payload"][k] for k in ("rule", "label", "at", "idle_since")})
    return sorted(out, key=lambda p: p["at"])


def test_the_nudge_fires_once_per_idle_stretch(run, home):
    # her triggers wait in message_queue to be looked at; externalize records her decisions
    setup(run, reflect__nudge_hours=1, tick__steps="rhythm,sweep,preprocess,externalize")
    for h, m in [(h, m) for h in (10, 11, 12) for m in (0, 15, 30, 45)] + [(13, 0)]:
        tick(run, f"2026-11-30T{h:02d}:{m:02d}:00Z")
    assert nudges(home) == [{"rule": "nudge", "label": "a long while without deciding anything",
                             "at": "2026-11-30T11:00:00Z", "idle_since": None}]
    # a decision starts a new stretch, and its nudge comes an hour after it
    think(run, "I decide to note: call the plumber.", "2026-11-30T13:05:00Z")
    tick(run, "2026-11-30T13:05:00Z")
    journal = (home / "pipeline" / "externalize.journal").read_text()
    assert '"outcome": "queued"' in journal
    for h, m in [(13, 15), (13, 30), (13, 45), (14, 0)]:
        tick(run, f"2026-11-30T{h:02d}:{m:02d}:00Z")
    assert len(nudges(home)) == 1  # 55 minutes idle at 14:00
    for h, m in [(14, 15), (14, 30), (14, 45), (15, 0), (16, 0)]:
        tick(run, f"2026-11-30T{h:02d}:{m:02d}:00Z")
    assert nudges(home)[1:] == [{"rule": "nudge", "label": "a long while without deciding anything",
                                 "at": "2026-11-30T14:15:00Z", "idle_since": "2026-11-30T13:05:00Z"}]


def test_a_failing_step_is_named_and_the_others_run(run, home):
    setup(run)
    tick(run, "2026-11-30T21:00:00Z")
    state = home / "pipeline" / "heartbeat" / "rhythm.json"
    state.write_text("{not json")
    say(run, "are you there?", "Carol", "2026-11-30T21:10:00Z")
    r = run("tick", "--now", "2026-11-30T21:10:00Z")
    assert r.exit_code == 65 and r.stdout == ""
    assert r.stderr == f"anima: tick: rhythm: {state}: not valid JSON (Expecting property name enclosed in double " \
                       "quotes: line 1 column 2 (char 1))\n"
    assert "Carol said: “are you there?”" in now_md(home)  # the loop ran
    assert beat(home)["failed"] == ["rhythm"] and state.read_text() == "{not json"
    doctor = {line.split("\t")[1]: line.split("\t") for line in run("doctor").stdout.splitlines()}
    assert doctor["tick"][0] == "FAIL" and "not valid JSON" in doctor["tick"][2]  # it names the file first
    state.unlink()
    say(run, "hello?", "Carol", "2026-11-30T21:11:00Z")
    tick(run, "2026-11-30T21:11:00Z")
    assert beat(home)["failed"] == []


# --- reflection with a model ------------------------------------------------------------------

def tasks(model):
    """Which prompt each request was: the internalizer's or the externalizer's (reflection)."""
    return ["reflect" if "reflection" in r["body"]["messages"][0]["content"] else "live" for r in model.requests]


def test_she_reflects_after_new_experience_and_on_her_timer(run, home, model):
    setup(run, llm__backend="openai", reflect__every_minutes=30, llm__max_calls_per_hour=3,
          tick__steps=ALL.replace("rhythm,", ""))
    say(run, "hello there", "Alice", "2026-11-30T08:01:00Z")
    model.answer({"experience": "I smile."}, {"reflection": ["Alice greeted me."], "actions": []})
    tick(run, "2026-11-30T08:01:00Z")
    assert tasks(model) == ["live", "reflect"]  # she lived it, then reflected on it
    assert now_md(home).endswith("\n\nAlice greeted me.\n\n")
    tick(run, "2026-11-30T08:10:00Z")
    tick(run, "2026-11-30T08:30:00Z")
    assert len(model.requests) == 2  # nothing new, and not yet her time
    model.answer({"reflection": ["I am still thinking of Alice."], "actions": []})
    tick(run, "2026-11-30T08:31:00Z")  # 30 minutes after her last reflection
    assert tasks(model) == ["live", "reflect", "reflect"]
    assert "“hello there”" in model.prompt(2)  # she read her recent stream again
    assert now_md(home).endswith("\n\nI am still thinking of Alice.\n\n")
    assert [r["by"] for r in records(home)].count("externalize") == 2
    # the budget (3 calls an hour) is spent: she lives the next event by the rules, no reflection
    say(run, "are you busy?", "Bob", "2026-11-30T08:40:00Z")
    tick(run, "2026-11-30T08:40:00Z")
    assert len(model.requests) == 3
    assert "Bob said: “are you busy?”" in now_md(home)
    assert [r["by"] for r in records(home)].count("externalize") == 2


def test_with_the_rules_there_is_no_reflection(run, home, model):
    setup(run, reflect__every_minutes=1)
    say(run, "hello", "Alice", "2026-11-30T08:01:00Z")
    for m in range(1, 5):
        tick(run, f"2026-11-30T08:0{m}:00Z")
    assert model.requests == [] and "externalize" not in [r["by"] for r in records(home)]
    assert not (home / "pipeline" / "heartbeat" / "reflect.json").exists()


# --- nothing due --------------------------------------------------------------------------------

def test_the_queues_due_looks_at_are_animas():
    # all but the outbox, which the host drains: a reply waiting there is no work for tick
    assert set(heartbeat.WAITING) == {where for name, (where, _) in QUEUES.items() if name != "outbox"}
    from anima.infra.config import TICK_STEPS

    assert STEPS == TICK_STEPS


def test_due_says_what_a_tick_would_find(run, home):
    setup(run)
    tick(run, "2026-11-30T21:00:00Z")
    root = str(home)
    at = NOW_TS - 5 * 60  # 21:00
    assert not heartbeat.due(root, at + 60)  # 21:01: nothing waiting, no timer
    say(run, "hi", "Dan", "2026-11-30T21:01:00Z")
    assert heartbeat.due(root, at + 60)  # a waiting event
    tick(run, "2026-11-30T21:01:00Z")
    assert not heartbeat.due(root, at + 120)
    think(run, "a thought by hand", "2026-11-30T21:02:00Z")
    assert heartbeat.due(root, at + 120)  # the stream grew: a decision may be in it
    tick(run, "2026-11-30T21:02:00Z")
    assert not heartbeat.due(root, at + 180)
    assert heartbeat.due(root, at + 15 * 60)  # 21:15: the nudge looks
    assert run("config", "set", "reflect.nudge_hours", "2").exit_code == 0
    assert heartbeat.due(root, at + 180)  # a setting changed


def test_a_tick_with_nothing_due_loads_neither_config_nor_the_loop(anima_bin, home):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANIMA_", "PYTHON"))}
    env.update(ANIMA_HOME=str(home), ANIMA_NOW="2026-11-30T21:00:00Z", TZ="UTC", LANG="C.UTF-8")
    assert subprocess.run([anima_bin, "init", "--lang", "en"], env=env, capture_output=True).returncode == 0
    assert subprocess.run([anima_bin, "tick"], env=env, timeout=30).returncode == 0
    probe = ("import sys\nfrom anima.cli import main\nsys.argv = ['anima', 'tick']\n"
             "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
             "print(sorted(m for m in sys.modules if m in ('tomllib', 'anima.infra.config', 'anima.stream.now',"
             " 'anima.pipeline.events', 'croniter')))\n")
    env["ANIMA_NOW"] = "2026-11-30T21:01:00Z"
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=30)
    assert (p.returncode, p.stdout) == (0, "[]\n"), p.stderr
    assert json.loads((home / "pipeline" / "heartbeat" / "tick.json").read_text())["at"] == "2026-11-30T21:01:00Z"


def test_doctor_tells_of_the_steps_the_last_tick_failed(run, home):
    setup(run)
    say(run, "hi", "Eve", "2026-11-30T21:00:00Z")
    tick(run, "2026-11-30T21:00:00Z")
    archive = home / "self" / "stream" / "archive"
    archive.rmdir()
    archive.write_text("not a directory\n")
    r = run("tick", "--now", "2026-11-30T22:25:00Z")  # the roll is due (her waking at 21:05, +75 min)
    assert r.exit_code == 73 and r.stderr.startswith("anima: tick: roll: "), r.stderr  # cannot write there
    assert r.stderr.count("\n") == 1
    assert beat(home)["failed"] == ["roll"]
    doctor = run("doctor", env={"ANIMA_NOW": "2026-11-30T22:29:00Z"}).stdout.splitlines()
    doctor = {line.split("\t")[1]: line.split("\t") for line in doctor}
    assert doctor["tick"] == ["WARN", "tick", "the last tick was 4 min ago; steps that failed in it: roll",
                              "anima tick (it says why on stderr)"]


def test_the_index_is_kept_up_to_date_every_ten_minutes(run, home):
    setup(run)
    assert run("session", "append", "--session", "s1", "--role", "user", "green tea").exit_code == 0
    (path,) = (home / "sessions").glob("s1*.jsonl")

    def grow(text):
        assert run("session", "append", "--session", "s1", "--role", "user", text).exit_code == 0
        os.utime(path, (file_time(-3600), file_time(-3600)))  # cold: the index takes it

    grow("black coffee")
    assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0
    grow("a quokka line")
    assert run("index", "verify").exit_code == 1  # stale
    tick(run, "2026-11-30T21:06:00Z")
    assert run("index", "verify").exit_code == 0 and beat(home)["indexed"] == "2026-11-30T21:06:00Z"
    grow("another quokka")
    tick(run, "2026-11-30T21:10:00Z")  # within 10 minutes of the last update: recall scans meanwhile
    assert run("index", "verify").exit_code == 1
    tick(run, "2026-11-30T21:16:00Z")
    assert run("index", "verify").exit_code == 0 and beat(home)["indexed"] == "2026-11-30T21:16:00Z"


def test_a_new_home_gets_its_index_from_the_heartbeat(run, home):
    """On by default: no `index` command, and the first tick builds it."""
    setup(run)
    assert run("config", "get", "index.enabled").stdout == "true\n"
    assert run("session", "append", "--session", "s1", "--role", "user", "green tea").exit_code == 0
    (path,) = (home / "sessions").glob("s1*.jsonl")
    os.utime(path, (file_time(-3600), file_time(-3600)))
    assert not (home / "index" / "recall.sqlite").exists()
    tick(run, "2026-11-30T21:06:00Z")
    status = json.loads(run("index", "status", "--json").stdout)
    assert (status["exists"], status["indexed"], status["stale"]) == (True, 1, 0)
    r = run("recall", "tea")
    assert r.stdout.startswith("s1\t") and r.stderr == ""


def test_the_stream_is_rolled_when_due(run, home):
    setup(run)
    say(run, "hi", "Eve", "2026-11-30T21:00:00Z")
    tick(run, "2026-11-30T21:00:00Z")
    assert "“hi”" in now_md(home)
    tick(run, "2026-11-30T21:30:00Z")  # not due yet
    assert "“hi”" in now_md(home)
    tick(run, "2026-11-30T22:30:00Z")
    assert "“hi”" not in now_md(home)
    assert "“hi”" in (home / "self" / "stream" / "archive" / "2026-11-30.md").read_text()
