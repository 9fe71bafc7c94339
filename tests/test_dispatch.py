import json
import os
import subprocess

import pytest

from anima.infra.home import Home
from anima.pipeline import dispatch, queues

from conftest import NOW_TS, act, kill_after, unwoken, write_hook


def events(home):
    d = home / "pipeline" / "inbox" / "pending"
    return [json.loads(p.read_text()) for p in sorted(d.glob("*.json"))]


def dead(home):
    d = home / "pipeline" / "dead_letter"
    return {p.name[: -len(".reason")]: json.loads(p.read_text()) for p in d.glob("*.reason")}


@pytest.fixture
def inited(run, home):
    run("init", "--lang", "en")
    unwoken(home)
    return home


def test_builtins_and_their_results(run, inited, monkeypatch):
    monkeypatch.setenv("ANIMA_NOW", "2026-11-30T21:05:00Z")  # when the action was decided: the diary's time
    act(inited, "diary.write", {"text": "Today I learned to wait."})
    act(inited, "state.update", {"text": "mood: calm"})
    act(inited, "memory.write", {"topic": "about_alice", "text": "Alice likes rain."})
    act(inited, "note.add", {"text": "I wait before I answer."})
    r = run("dispatch", env={"ANIMA_NOW": "2026-12-01T08:00:00Z"})  # carried out later
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")
    assert (inited / "self" / "diary" / "2026-11-30.md").read_text() == "## 21:05\n\nToday I learned to wait.\n\n"
    assert (inited / "self" / "state.md").read_text() == "mood: calm\n"
    assert (inited / "self" / "memories" / "about_alice.md").read_text() == "Alice likes rain.\n\n"
    assert "I wait before I answer." in (inited / "notes" / "notes.md").read_text()
    results = events(inited)
    assert [(e["envelope"]["source_type"], e["envelope"]["trace_id"], e["payload"]["ok"]) for e in results] == \
        [("action", "trace_t1", True)] * 4
    assert sorted(e["payload"]["command"] for e in results) == sorted(set(dispatch.BUILTINS) - {"reply"})
    # each result says what was done: the params to whom and what, never the citations
    memory = next(e["payload"] for e in results if e["payload"]["command"] == "memory.write")
    assert memory["params"] == {"topic": "about_alice", "text": "Alice likes rain."}
    assert set(memory) == {"command", "ok", "action", "params", "result"}


def test_unknown_and_refused_actions_go_to_dead_letter(run, inited):
    a = act(inited, "launch.rockets", {})
    b = act(inited, "note.add", {"text": "I should write to alice@example.com."})
    c = act(inited, "memory.write", {"topic": "../../etc/passwd", "text": "x"})
    run("dispatch")
    reasons = dead(inited)
    assert "unknown command 'launch.rockets'" in reasons[a]["why"]
    assert "private data" in reasons[b]["why"]
    assert "is not a plain name" in reasons[c]["why"]
    assert not (inited.parent / "etc").exists()
    assert [e["payload"]["ok"] for e in events(inited)] == [False, False, False]


def test_a_hook_gets_the_action_as_inert_data(run, inited, tmp_path):
    out = tmp_path / "got.json"
    write_hook(inited, "reply", f"#!/bin/sh\ncat > {out}\n")
    evil = "$(touch /tmp/anima-pwned); rm -rf ~"
    act(inited, "reply", {"to": "Alice", "text": evil})
    assert run("dispatch").exit_code == 0
    got = json.loads(out.read_text())
    assert got["payload"]["params"]["text"] == evil
    assert not os.path.exists("/tmp/anima-pwned")
    assert events(inited)[0]["payload"]["ok"] is True


def test_a_hook_without_the_exec_bit_is_no_hook(run, inited):
    path = write_hook(inited, "reply", "#!/bin/sh\nexit 0\n")
    path.chmod(0o600)
    name = act(inited, "reply", {})
    run("dispatch")
    assert name in dead(inited)


def test_a_failing_hook_is_dead_lettered_with_its_message(run, inited):
    write_hook(inited, "reply", "#!/bin/sh\necho 'no network' >&2\nexit 3\n")
    name = act(inited, "reply", {})
    run("dispatch")
    assert dead(inited)[name]["why"].endswith("exited 3: no network")


def test_an_argv_from_config_never_sees_a_shell(run, inited, tmp_path):
    out = tmp_path / "argv.txt"
    run("config", "set", "dispatch.commands",
        json.dumps({"echo.to": ["/bin/sh", "-c", f'printf "%s" "$1" > {out}', "sh", "{text}"]}))
    evil = "$(touch /tmp/anima-pwned2); `id`"
    act(inited, "echo.to", {"text": evil})
    run("dispatch")
    assert out.read_text() == evil and not os.path.exists("/tmp/anima-pwned2")
    act(inited, "echo.to", {})
    run("dispatch")
    assert any("needs params.text" in r["why"] for r in dead(inited).values())


def test_a_crash_after_the_effect_never_applies_it_twice(run, inited):
    from anima.infra import config

    h = Home(str(inited))
    name = act(inited, "diary.write", {"text": "Only once."})
    doc = json.loads((inited / "pipeline" / "action_queue" / name).read_text())
    journal = dispatch.Journal(h, NOW_TS)
    journal.mark(doc["envelope"]["id"], "begun", "diary.write")   # began...
    dispatch.run_builtin(h, config.load(h.config), "diary.write", {"text": "Only once."}, False, NOW_TS)  # ...applied...
    # ...and died: the action is still waiting, its journal says begun
    run("dispatch")
    [diary] = (inited / "self" / "diary").iterdir()
    assert diary.read_text().count("Only once.") == 1
    run("dispatch")
    assert diary.read_text().count("Only once.") == 1


def test_a_hook_begun_before_a_crash_is_never_run_again(run, inited, tmp_path):
    count = tmp_path / "count"
    write_hook(inited, "ping", f"#!/bin/sh\necho x >> {count}\n")
    name = act(inited, "ping", {})
    doc = json.loads((inited / "pipeline" / "action_queue" / name).read_text())
    dispatch.Journal(Home(str(inited)), NOW_TS).mark(doc["envelope"]["id"], "begun", "ping")
    run("dispatch")
    assert not count.exists()
    assert "never run twice" in dead(inited)[name]["why"]


def test_a_bad_argv_table_is_refused(run, inited):
    assert run("config", "set", "dispatch.commands", '{"x": "not a list"}').exit_code == 78
    assert run("config", "set", "dispatch.commands", '{"../x": ["a"]}').exit_code == 78


def test_kill_9_dispatch_applies_nothing_twice_and_loses_nothing(anima_bin, inited):
    import random

    env = {**os.environ, "ANIMA_HOME": str(inited)}
    names = [act(inited, "diary.write", {"text": f"entry number {i}"}) for i in range(60)]
    rng = random.Random(4)
    for _ in range(10):
        kill_after([anima_bin, "dispatch"], env, rng.uniform(0.03, 0.12))
    h = Home(str(inited))
    queues.Queue(h, "action").recover(0)  # as a later run does once the claims are old
    from anima.infra import config

    dispatch.dispatch(h, config.load(h.config), NOW_TS)
    text = "".join(p.read_text() for p in (inited / "self" / "diary").iterdir())
    assert all(text.count(f"entry number {i}\n") == 1 for i in range(60))
    places = {}
    for part in ("", "cur", "done"):
        d = inited / "pipeline" / "action_queue" / part
        for n in (d.glob("*.json") if d.exists() else []):
            places.setdefault(n.name, []).append(part or "queue")
    for n in (inited / "pipeline" / "dead_letter").glob("*.json"):
        places.setdefault(n.name, []).append("dead")
    assert {n: places.get(n) for n in names} == {n: ["done"] for n in names}


def test_a_resumed_diary_entry_is_found_even_minutes_later(run, inited):
    from anima.infra import config

    h = Home(str(inited))
    when = 1796074800.0  # 2026-11-30T21:40:00Z, the action's own time
    name = act(inited, "diary.write", {"text": "Only once, later."}, now=when)
    doc = json.loads((inited / "pipeline" / "action_queue" / name).read_text())
    dispatch.Journal(h, when).mark(doc["envelope"]["id"], "begun", "diary.write")
    dispatch.run_builtin(h, config.load(h.config), "diary.write", {"text": "Only once, later."}, False, when)
    run("dispatch", env={"ANIMA_NOW": "2026-11-30T21:47:00Z"})  # the re-run, minutes after the crash
    [diary] = (inited / "self" / "diary").iterdir()
    assert diary.read_text() == "## 21:40\n\nOnly once, later.\n\n"


def test_a_crash_after_the_result_loses_and_repeats_nothing(run, inited):
    name = act(inited, "state.update", {"text": "mood: calm"})
    doc = json.loads((inited / "pipeline" / "action_queue" / name).read_text())
    inbox = queues.Queue(Home(str(inited)), "pending")
    dispatch.Journal(Home(str(inited)), NOW_TS).mark(doc["envelope"]["id"], "begun", "state.update")
    dispatch._result(inbox, doc["envelope"]["id"], "done", doc["envelope"]["trace_id"],
                     {"command": "state.update", "ok": True, "result": {}, "action": doc["envelope"]["id"]}, NOW_TS)
    run("dispatch")  # resumes: the result is there already
    assert [e["payload"]["command"] for e in events(inited)] == ["state.update"]


def test_config_get_prints_the_table_as_json(run, inited):
    run("config", "set", "dispatch.commands", '{"reply": ["notify-send", "{text}"]}')
    assert json.loads(run("config", "get", "dispatch.commands").stdout) == {"reply": ["notify-send", "{text}"]}


def test_a_retried_action_reports_its_success_too(run, inited, tmp_path):
    name = act(inited, "remind", {"text": "water the plants"})
    run("dispatch")  # no such command yet: dead letter, a failure event
    write_hook(inited, "remind", f"#!/bin/sh\ncat > {tmp_path / 'got'}\n")
    assert run("queue", "retry", name).exit_code == 0
    run("dispatch")
    assert sorted(e["payload"]["ok"] for e in events(inited)) == [False, True]


def test_a_command_that_is_a_path_is_never_run(run, inited, tmp_path):
    evil = tmp_path / "evil.sh"
    evil.write_text("#!/bin/sh\ntouch /tmp/anima-evil-ran\n")
    evil.chmod(0o700)
    name = act(inited, f"../../..{evil}", {})
    run("dispatch")
    assert not os.path.exists("/tmp/anima-evil-ran")
    assert "is not a plain name" in dead(inited)[name]["why"]


def test_one_action_that_cannot_be_carried_out_never_blocks_the_others(inited, anima_bin, tmp_path):
    """A topic too long for a file name, a link where state.md should be: each action ends in
    dead_letter/ with its reason, the actions after it are carried out, dispatch exits 0, and a
    second run finds nothing left claimed."""
    outside = tmp_path / "elsewhere.md"
    outside.write_text("not hers\n")
    (inited / "self" / "state.md").symlink_to(outside)
    bad = [act(inited, "memory.write", {"topic": "A" * 300, "text": "x"}),
           act(inited, "state.update", {"text": "calm"})]
    good = act(inited, "diary.write", {"text": "Still written."})
    env = {**os.environ, "ANIMA_HOME": str(inited)}
    r = subprocess.run([anima_bin, "dispatch"], env=env, capture_output=True, text=True)
    assert (r.returncode, r.stderr) == (0, "")
    reasons = dead(inited)
    assert set(reasons) == set(bad)
    assert "over 200" in reasons[bad[0]]["why"] and "symbolic link" in reasons[bad[1]]["why"]
    assert "Still written." in "".join(p.read_text() for p in (inited / "self" / "diary").iterdir())
    assert (good in os.listdir(inited / "pipeline" / "action_queue" / "done")) and outside.read_text() == "not hers\n"
    assert os.listdir(inited / "pipeline" / "action_queue" / "cur") == []
    failed = [e["payload"] for e in events(inited) if e["payload"].get("ok") is False]
    assert sorted(p["command"] for p in failed) == ["memory.write", "state.update"]


def test_a_param_never_becomes_an_option_of_an_argv_program(run, inited, tmp_path):
    out = tmp_path / "argv.txt"
    run("config", "set", "dispatch.commands",
        json.dumps({"reply": ["/bin/sh", "-c", f'printf "%s" "$1" > {out}', "sh", "{to}"]}))
    name = act(inited, "reply", {"to": "--version", "text": "hi"})
    assert run("dispatch").exit_code == 0
    assert not out.exists()
    assert "would begin with '-'" in dead(inited)[name]["why"]
    act(inited, "reply", {"to": "alice", "text": "hi"})
    assert run("dispatch").exit_code == 0 and out.read_text() == "alice"


# --- a list of actions, as the design writes an action file --------------------------------

def act_list(home, items, trace="trace_t1", now=NOW_TS) -> str:
    """An action file of the design's form, {"actions": [...]}; its file name."""
    doc = queues.envelope("action", "externalize", {"actions": items}, "act", trace, now=now)
    return queues.Queue(Home(str(home)), "action").deliver(doc)


def journal(home):
    return [json.loads(x) for x in (home / "pipeline" / "dispatch.journal").read_text().splitlines()]


def cli(anima_bin, home, *args, input=None):
    env = {**os.environ, "ANIMA_HOME": str(home)}
    return subprocess.run([anima_bin, *args], env=env, input=input, capture_output=True, text=True)


def test_a_list_of_three_actions_is_carried_out_in_order_once(anima_bin, inited):
    name = act_list(inited, [
        {"command": "diary.write", "params": {"text": "Alice asked about six."}},
        {"command": "reply", "params": {"to": "Alice", "text": "See you at six.", "scene": "chat",
                                        "cites": {"gen": 0, "lines": [3]}}},
        {"command": "memory.write", "params": {"topic": "about_alice", "text": "Alice meets at six."}},
    ])
    fid = name[:-len(".json")]
    r = cli(anima_bin, inited, "dispatch")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    # each item its own id (FILEID-N), journal lines in order, its own result event
    assert [(j["id"], j["state"], j["command"]) for j in journal(inited)] == [
        (f"{fid}-0", "begun", "diary.write"), (f"{fid}-0", "done", "diary.write"),
        (f"{fid}-1", "begun", "reply"), (f"{fid}-1", "done", "reply"),
        (f"{fid}-2", "begun", "memory.write"), (f"{fid}-2", "done", "memory.write")]
    suffix = fid.split("_", 1)[1]
    results = {e["envelope"]["id"]: e["payload"] for e in events(inited)}
    assert sorted(results) == [f"event_{suffix}-{i}_done" for i in range(3)]
    reply = results[f"event_{suffix}-1_done"]
    assert reply == {"command": "reply", "action": f"{fid}-1", "ok": True,
                     "params": {"to": "Alice", "text": "See you at six.", "scene": "chat"},
                     "result": {"outbox": f"out_{suffix}-1"}}
    assert all(e["envelope"]["trace_id"] == "trace_t1" for e in events(inited))
    assert (inited / "self" / "diary" / "2026-11-30.md").read_text() == "## 21:05\n\nAlice asked about six.\n\n"
    assert (inited / "self" / "memories" / "about_alice.md").read_text() == "Alice meets at six.\n\n"
    assert os.listdir(inited / "pipeline" / "action_queue" / "done") == [name]
    # run again: nothing is done twice
    before = (journal(inited), len(events(inited)))
    assert cli(anima_bin, inited, "dispatch").returncode == 0
    assert (journal(inited), len(events(inited))) == before


def test_a_malformed_item_fails_alone_and_a_retry_runs_only_it(run, inited, tmp_path):
    name = act_list(inited, [
        {"command": "diary.write", "params": {"text": "First."}},
        "not an object",
        {"command": 5},
        {"command": "remind", "params": {"text": "water the plants"}},
        {"command": "diary.write", "params": {"text": "Last."}},
    ])
    fid = name[:-len(".json")]
    assert run("dispatch").exit_code == 0
    [(dead_name, reason)] = dead(inited).items()
    assert dead_name == name
    assert reason["what"] == "payload.actions[1] (?), payload.actions[2] (?), payload.actions[3] (remind)"
    assert reason["why"].startswith("payload.actions[1] must be an object {\"command\", \"params\"}; "
                                    "payload.actions[2].command must name the command; "
                                    "payload.actions[3]: unknown command 'remind'")
    assert reason["why"].endswith("(the other 2 carried out; `anima queue retry` runs only the failed)")
    outcomes = sorted((e["payload"]["action"], e["payload"]["ok"]) for e in events(inited))
    assert outcomes == [(f"{fid}-0", True), (f"{fid}-1", False), (f"{fid}-2", False), (f"{fid}-3", False),
                        (f"{fid}-4", True)]
    assert (inited / "self" / "diary" / "2026-11-30.md").read_text() == "## 21:05\n\nFirst.\n\n## 21:05\n\nLast.\n\n"
    # remind gets a hook; the retry carries out what failed, and nothing that was done
    write_hook(inited, "remind", f"#!/bin/sh\ncat > {tmp_path / 'got'}\n")
    assert run("queue", "retry", name).exit_code == 0
    assert run("dispatch").exit_code == 0
    got = json.loads((tmp_path / "got").read_text())  # the hook gets its item as one action
    assert got["envelope"]["id"] == f"{fid}-3" and got["payload"] == {"command": "remind",
                                                                        "params": {"text": "water the plants"}}
    assert (inited / "self" / "diary" / "2026-11-30.md").read_text() == "## 21:05\n\nFirst.\n\n## 21:05\n\nLast.\n\n"
    assert [j["state"] for j in journal(inited) if j["id"] == f"{fid}-3"] == ["begun", "failed", "begun", "done"]
    assert [j["state"] for j in journal(inited) if j["id"] == f"{fid}-0"] == ["begun", "done"]


@pytest.mark.parametrize("payload, why", [
    ({"actions": []}, "payload.actions must be a non-empty list"),
    ({"actions": "diary.write"}, "payload.actions must be a non-empty list"),
    ({"actions": [{"command": "diary.write", "params": {"text": "x"}}], "command": "diary.write"},
     "payload holds both \"actions\" and \"command\""),
    ({"params": {"text": "x"}}, "payload.command must name the command (or payload.actions list the actions)"),
    ({"command": None}, "payload.command must name the command"),
])
def test_a_file_that_holds_no_action_says_why_never_none(run, inited, payload, why):
    doc = queues.envelope("action", "externalize", payload, "act", "trace_t1", now=NOW_TS)
    name = queues.Queue(Home(str(inited)), "action").deliver(doc)
    assert run("dispatch").exit_code == 0
    reason = dead(inited)[name]
    assert why in reason["why"] and "None" not in reason["what"] and reason["what"]
    [event] = events(inited)
    assert event["payload"]["ok"] is False and why in event["payload"]["error"]


def test_kill_9_between_items_does_each_exactly_once(anima_bin, inited, tmp_path):
    """dispatch killed right after the first item's effect, right after the reply is in the
    outbox, and while a hook's item runs (never run twice), then run to the end: each item
    carried out exactly once, in order."""
    from conftest import kill_when

    effects = tmp_path / "effects"
    # its effect, then a second's work: the kill lands while it runs, after its effect
    write_hook(inited, "ping", f"#!/bin/sh\necho ran >> {effects}; sleep 1\n")
    name = act_list(inited, [
        {"command": "diary.write", "params": {"text": "One."}},
        {"command": "reply", "params": {"to": "Alice", "text": "Two."}},
        {"command": "ping", "params": {"text": "three"}},
        {"command": "memory.write", "params": {"topic": "lists", "text": "Four."}},
    ])
    fid = name[:-len(".json")]
    suffix = fid.split("_", 1)[1]
    env = {**os.environ, "ANIMA_HOME": str(inited)}
    diary = inited / "self" / "diary" / "2026-11-30.md"
    message = inited / "pipeline" / "outbox" / f"out_{suffix}-1.json"
    for effect in (diary, message, effects):  # killed right after each of these appears
        assert kill_when([anima_bin, "dispatch"], env, effect)
        queues.Queue(Home(str(inited)), "action").recover(0)  # as a later run does once the claim is old
    r = cli(anima_bin, inited, "dispatch")
    assert r.returncode == 0, r.stderr
    assert diary.read_text() == "## 21:05\n\nOne.\n\n"
    assert outbox_messages(inited) == [f"out_{suffix}-1.json"]
    assert effects.read_text() == "ran\n"
    assert (inited / "self" / "memories" / "lists.md").read_text() == "Four.\n\n"
    done = [j["id"] for j in journal(inited) if j["state"] == "done"]
    assert done == [f"{fid}-0", f"{fid}-1", f"{fid}-3"]  # in order, each once
    outcomes = {}
    for e in events(inited):
        outcomes.setdefault(e["payload"]["action"], []).append(e["payload"]["ok"])
    assert outcomes == {f"{fid}-0": [True], f"{fid}-1": [True], f"{fid}-2": [False], f"{fid}-3": [True]}
    # the hook was begun when killed: never run again, its item failed with the reason
    assert "payload.actions[2]: was begun before a crash; a hook is never run twice" in dead(inited)[name]["why"]


def outbox_messages(home):
    d = home / "pipeline" / "outbox"
    return sorted(p.name for part in ("", "cur", "done") for p in (d / part).glob("*.json"))
