"""`anima tick`: rhythm rules fire once per scheduled minute, TTL sweep, preprocess, one at a time.

Here tick drives only its first steps (tick.steps = rhythm, sweep, preprocess), so that what
fired waits in message_queue to be looked at, and the nudge is off; tests/test_heartbeat.py
has the whole heartbeat."""

import fcntl
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta

import pytest

from conftest import snapshot


@pytest.fixture(autouse=True)
def local_zone(monkeypatch):
    """Rules are read in local time: every test here sets its zone (UTC unless it says)."""
    before = os.environ.get("TZ")

    def set_zone(name):
        monkeypatch.setenv("TZ", name)
        time.tzset()

    set_zone("UTC")
    yield set_zone
    if before is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = before
    time.tzset()


NO_HOME = ("test_a_rule_name_must_be_plain", "test_a_bad_now_is_a_usage_error")  # they prove none is made


@pytest.fixture(autouse=True)
def first_steps(run, home, request):
    if request.node.name in NO_HOME:
        return
    for key, value in (("tick.steps", "rhythm,sweep,preprocess"), ("rhythm.rules.nudge", "off")):
        assert run("config", "set", key, value).exit_code == 0


def tick(run, at, **env):
    r = run("tick", "--now", at, env=env or None)
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")
    return heartbeat_fired()



def files(directory):
    try:
        return sorted(n for n in os.listdir(directory) if n.endswith(".json"))
    except FileNotFoundError:
        return []


def read(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def heartbeat_fired():
    return [(f["rule"], f["at"]) for f in read(os.path.join(os.environ["ANIMA_HOME"], "pipeline", "heartbeat",
                                                            "tick.json"))["fired"]]


def messages(home):
    queue = home / "pipeline" / "message_queue"
    return [read(queue / name) for name in files(queue)]


def rhythm_fired(home):
    """(rule, at) of every rhythm message in message_queue, in the order they were scheduled."""
    return sorted(((m["payload"]["rule"], m["payload"]["at"]) for m in messages(home)
                   if m["envelope"]["source_type"] == "rhythm"), key=lambda x: (x[1], x[0]))


def minutes(start, end, step=1):
    t = datetime.fromisoformat(start)
    stop = datetime.fromisoformat(end)
    while t <= stop:
        yield t.strftime("%Y-%m-%dT%H:%M:%SZ")
        t += timedelta(minutes=step)


def test_two_ticks_in_the_same_minute_fire_once(run, home):
    assert tick(run, "2026-06-01T11:00:00Z") == [("hourly", "2026-06-01T11:00:00Z")]
    assert tick(run, "2026-06-01T11:00:40Z") == []
    assert rhythm_fired(home) == [("hourly", "2026-06-01T11:00:00Z")]
    beat = read(home / "pipeline" / "heartbeat" / "tick.json")
    assert beat["at"] == "2026-06-01T11:00:40Z" and isinstance(beat["pid"], int) and beat["fired"] == []


def test_late_and_repeated_ticks_fire_the_hour_once(run, home):
    assert tick(run, "2026-06-01T11:00:00Z") == [("hourly", "2026-06-01T11:00:00Z")]
    assert tick(run, "2026-06-01T11:00:30Z") == []
    assert tick(run, "2026-06-01T11:01:00Z") == []
    assert tick(run, "2026-06-01T11:59:59Z") == []
    assert tick(run, "2026-06-01T12:03:00Z") == [("hourly", "2026-06-01T12:00:00Z")]  # three minutes late
    assert rhythm_fired(home) == [("hourly", "2026-06-01T11:00:00Z"), ("hourly", "2026-06-01T12:00:00Z")]


def test_every_minute_of_a_day_fires_each_rule_at_its_times(run, home):
    for at in minutes("2026-06-01T00:00:00+00:00", "2026-06-01T23:59:00+00:00", 1):
        tick(run, at)
    fired = rhythm_fired(home)
    assert [at for rule, at in fired if rule == "hourly"] == [f"2026-06-01T{h:02d}:00:00Z" for h in range(24)]
    assert [(rule, at) for rule, at in fired if rule != "hourly"] == [
        ("evening", "2026-05-31T22:00:00Z"),  # the first tick, at 00:00, is 2 h late for it: within catch_up
        ("midnight", "2026-06-01T02:00:00Z"), ("morning", "2026-06-01T08:00:00Z"), ("evening", "2026-06-01T22:00:00Z")]


@pytest.mark.parametrize("catch_up, expected", [
    # after 5 hours down only the latest hour fires; 02:00 was 4.5 h ago, beyond the default 2 h
    (None, [("hourly", "2026-06-01T06:00:00Z")]),
    # with a 10 h window 02:00 is still in it, and fires (once, for all the missed hours)
    ("600", [("midnight", "2026-06-01T02:00:00Z"), ("hourly", "2026-06-01T06:00:00Z")]),
])
def test_after_downtime_only_the_latest_occurrence_within_catch_up_fires(run, home, catch_up, expected):
    assert tick(run, "2026-06-01T01:30:00Z") == [("hourly", "2026-06-01T01:00:00Z")]
    if catch_up:
        assert run("config", "set", "rhythm.catch_up", catch_up).exit_code == 0
    assert sorted(tick(run, "2026-06-01T06:30:00Z"), key=lambda x: x[1]) == expected
    assert tick(run, "2026-06-01T06:31:00Z") == []
    assert rhythm_fired(home) == [("hourly", "2026-06-01T01:00:00Z")] + expected


def test_the_first_tick_fires_only_what_is_within_catch_up(run, home):
    # 22:00 yesterday is 10.5 h ago, 02:00 is 6.5 h ago, 08:00 is 30 minutes ago
    assert sorted(tick(run, "2026-06-01T08:30:00Z")) == [("hourly", "2026-06-01T08:00:00Z"),
                                                         ("morning", "2026-06-01T08:00:00Z")]


def test_catch_up_zero_fires_only_in_the_scheduled_minute(run, home):
    assert run("config", "set", "rhythm.catch_up", "0").exit_code == 0
    assert tick(run, "2026-06-01T10:01:00Z") == []
    assert tick(run, "2026-06-01T11:00:59Z") == [("hourly", "2026-06-01T11:00:00Z")]


def test_a_clock_set_backwards_does_not_fire_again(run, home):
    assert tick(run, "2026-06-01T12:00:00Z") == [("hourly", "2026-06-01T12:00:00Z")]
    assert tick(run, "2026-06-01T11:00:00Z") == []  # 11:00 is before what already fired
    assert tick(run, "2026-06-01T11:30:00Z") == []
    assert tick(run, "2026-06-01T12:00:00Z") == []
    assert tick(run, "2026-06-01T13:00:00Z") == [("hourly", "2026-06-01T13:00:00Z")]
    assert rhythm_fired(home) == [("hourly", "2026-06-01T12:00:00Z"), ("hourly", "2026-06-01T13:00:00Z")]


def test_dst_end_does_not_fire_the_repeated_hour_twice(run, home, local_zone):
    """Berlin, 2026-10-25: at 03:00 CEST (01:00Z) the clock goes back to 02:00 CET, so
    02:00-02:59 is shown twice. Each scheduled minute fires on its first pass only."""
    local_zone("Europe/Berlin")
    assert run("config", "set", "rhythm.rules.half", "30 2 * * *").exit_code == 0
    for at in minutes("2026-10-24T23:00:00+00:00", "2026-10-25T03:05:00+00:00"):
        tick(run, at)
    assert rhythm_fired(home) == [
        ("hourly", "2026-10-24T23:00:00Z"),    # 01:00 CEST
        ("hourly", "2026-10-25T00:00:00Z"),    # 02:00 CEST, and not again at 02:00 CET (01:00Z)
        ("midnight", "2026-10-25T00:00:00Z"),  # 02:00, once
        ("half", "2026-10-25T00:30:00Z"),      # 02:30 CEST, not again at 02:30 CET
        ("hourly", "2026-10-25T02:00:00Z"),    # 03:00 CET
        ("hourly", "2026-10-25T03:00:00Z"),    # 04:00 CET
    ]


def test_dst_end_with_a_tick_only_in_the_second_pass(run, home, local_zone):
    """New York, 2026-11-01: 01:00-01:59 is shown twice (EDT, then EST from 06:00Z)."""
    local_zone("America/New_York")
    assert tick(run, "2026-11-01T05:00:00Z") == [("hourly", "2026-11-01T05:00:00Z")]  # 01:00 EDT
    assert tick(run, "2026-11-01T06:00:00Z") == []  # 01:00 EST: the same scheduled minute
    assert tick(run, "2026-11-01T06:30:00Z") == []
    assert tick(run, "2026-11-01T07:00:00Z") == [("hourly", "2026-11-01T07:00:00Z"),  # 02:00 EST
                                                 ("midnight", "2026-11-01T07:00:00Z")]


def test_dst_start_fires_a_skipped_minute_at_the_jump(run, home, local_zone):
    """Berlin, 2026-03-29: at 02:00 CET (01:00Z) the clock jumps to 03:00 CEST."""
    local_zone("Europe/Berlin")
    for at in minutes("2026-03-29T00:30:00+00:00", "2026-03-29T02:10:00+00:00"):
        tick(run, at)
    assert rhythm_fired(home) == [
        ("hourly", "2026-03-29T00:00:00Z"),    # 01:00 CET
        ("hourly", "2026-03-29T01:00:00Z"),    # 03:00 CEST (02:00 never shows): once
        ("midnight", "2026-03-29T01:00:00Z"),  # 02:00 does not exist: fires at the jump
        ("hourly", "2026-03-29T02:00:00Z"),
    ]


def test_triggers_reach_message_queue_with_rule_label_and_time(run, home):
    tick(run, "2026-06-01T08:00:10Z")
    msgs = sorted(messages(home), key=lambda m: m["payload"]["rule"])
    assert [m["envelope"]["source_type"] for m in msgs] == ["rhythm", "rhythm"]
    assert [{k: m["payload"][k] for k in ("rule", "label", "at")} for m in msgs] == [
        {"rule": "hourly", "label": "the hour strikes", "at": "2026-06-01T08:00:00Z"},
        {"rule": "morning", "label": "morning", "at": "2026-06-01T08:00:00Z"},
    ]
    env = msgs[0]["envelope"]
    assert env["timestamp"] == "2026-06-01T08:00:10Z" and env["ttl_sec"] is None and env["trace_id"]
    assert msgs[0]["payload"]["happened"] == "2026-06-01T08:00:10Z"
    triggers = home / "pipeline" / "rhythm" / "triggers"
    assert files(triggers) == [] and len(files(triggers / "done")) == 2


def test_labels_follow_core_lang(run, home):
    tick(run, "2026-06-01T22:00:00Z", ANIMA_LANG="zh")
    assert sorted(m["payload"]["label"] for m in messages(home)) == ["夜晚", "整点"]


def test_a_rule_of_ones_own_and_a_rule_switched_off(run, home):
    assert run("config", "set", "rhythm.rules.nap", "30 14 * * 1-5").exit_code == 0
    assert run("config", "set", "rhythm.rules.hourly", "off").exit_code == 0
    assert run("config", "get", "rhythm.rules.nap").stdout == "30 14 * * 1-5\n"
    assert tick(run, "2026-06-01T14:30:00Z") == [("nap", "2026-06-01T14:30:00Z")]  # a Monday
    assert [m["payload"]["label"] for m in messages(home)] == ["nap"]
    assert tick(run, "2026-06-06T14:30:00Z") == []  # a Saturday


def test_a_changed_rule_is_read_again(run, home):
    assert tick(run, "2026-06-01T07:40:00Z") == [("hourly", "2026-06-01T07:00:00Z")]
    assert run("config", "set", "rhythm.rules.morning", "30 7 * * *").exit_code == 0
    assert tick(run, "2026-06-01T07:41:00Z") == [("morning", "2026-06-01T07:30:00Z")]


@pytest.mark.parametrize("value, problem", [
    ("0 8 * *", "needs 5 fields (minute hour day-of-month month day-of-week)"),
    ("0 8 * * * *", "needs 5 fields (minute hour day-of-month month day-of-week)"),
    ("@hourly", "needs 5 fields (minute hour day-of-month month day-of-week)"),
    ("61 * * * *", "is not a valid cron expression"),
    ("0 8 * * funday", "is not a valid cron expression"),
    ("0 8 30 2 *", "never occurs"),
])
def test_an_invalid_cron_expression_is_refused_and_changes_nothing(run, home, value, problem):
    run("init", "--lang", "en")
    before = snapshot(home)
    r = run("config", "set", "rhythm.rules.morning", value)
    assert (r.exit_code, r.stdout) == (78, "")
    assert r.stderr == f'anima: rhythm.rules.morning: must be a 5-field cron expression or "off"; "{value}" {problem}\n'
    assert snapshot(home) == before


def test_a_rule_name_must_be_plain(run, home):
    r = run("config", "set", "rhythm.rules.a/b", "0 8 * * *")
    assert r.exit_code == 2 and not home.exists()


def test_an_invalid_rule_in_the_file_is_a_config_error(run, home):
    run("init", "--lang", "en")
    path = home / "config.toml"
    path.write_text(path.read_text().replace('morning = "0 8 * * *"', 'morning = "0 25 * * *"'))
    r = run("tick", "--now", "2026-06-01T10:00:00Z")
    assert r.exit_code == 78 and r.stderr.startswith(f"anima: {path}: rhythm.rules.morning: must be")
    assert not (home / "pipeline" / "heartbeat" / "tick.json").exists()


def test_a_damaged_state_file_is_named_and_left_alone(run, home):
    tick(run, "2026-06-01T10:00:00Z")
    state = home / "pipeline" / "heartbeat" / "rhythm.json"
    state.write_text("{not json")
    r = run("tick", "--now", "2026-06-01T11:00:00Z")
    assert r.exit_code == 65 and r.stderr.startswith(f"anima: tick: rhythm: {state}: not valid JSON")
    assert state.read_text() == "{not json"


def test_a_bad_now_is_a_usage_error(run, home):
    r = run("tick", "--now", "yesterday")
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", "anima: --now: not an RFC 3339 time: 'yesterday'\n")
    assert not home.exists()


def say(run, now, **event):
    r = run("say", "--json", input=json.dumps({"text": "hi", "speaker": "alice", **event}),
            env={"ANIMA_NOW": now})
    assert r.exit_code == 0, r.stderr
    return r.stdout.strip()


def test_expired_files_go_to_dead_letter_the_rest_flow(run, home):
    expired = say(run, "2026-06-01T10:00:00Z", ttl_sec=60)
    fresh = say(run, "2026-06-01T10:00:00Z", ttl_sec=3600)
    forever = say(run, "2026-06-01T09:00:00Z")
    action = home / "pipeline" / "action_queue" / "act_1.json"
    action.parent.mkdir(parents=True)
    action.write_text(json.dumps({"envelope": {"id": "act_1", "trace_id": "t", "timestamp": "2026-06-01T09:00:00Z",
                                               "source_node": "x", "source_type": "reflection", "ttl_sec": 600},
                                  "payload": {}}))
    r = run("tick", env={"ANIMA_NOW": "2026-06-01T10:01:01Z"})
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")
    dead = home / "pipeline" / "dead_letter"
    assert sorted(os.listdir(dead)) == ["act_1.json", "act_1.json.reason", expired + ".json", expired + ".json.reason"]
    reason = read(dead / (expired + ".json.reason"))
    assert reason == {"what": expired + ".json", "why": "ttl", "when": "2026-06-01T10:01:01Z", "by": "anima tick",
                      "queue": "pending"}
    assert read(dead / "act_1.json.reason")["queue"] == "action"
    assert sorted(m["payload"]["event"] for m in messages(home) if m["envelope"]["source_type"] == "message") == \
        sorted([fresh, forever])


def test_a_file_expiring_exactly_now_is_kept(run, home):
    eid = say(run, "2026-06-01T10:00:00Z", ttl_sec=60)
    tick(run, "2026-06-01T10:01:00Z")
    assert [m["payload"]["event"] for m in messages(home) if m["envelope"]["source_type"] == "message"] == [eid]


def test_a_malformed_file_is_left_to_preprocess(run, home):
    pending = home / "pipeline" / "inbox" / "pending"
    pending.mkdir(parents=True)
    (pending / "event_bad.json").write_text("{nope")
    (pending / "event_odd.json").write_text(json.dumps({"envelope": {"ttl_sec": 1}, "payload": {}}))
    tick(run, "2026-06-01T10:30:00Z")
    dead = home / "pipeline" / "dead_letter"
    assert read(dead / "event_bad.json.reason")["why"].endswith("not valid JSON (Expecting property name enclosed "
                                                                 "in double quotes: line 1 column 2 (char 1))")
    assert read(dead / "event_odd.json.reason")["by"] == "anima tick"
    assert "ttl" not in {read(dead / n)["why"] for n in os.listdir(dead) if n.endswith(".reason")}


def test_a_claimed_file_is_left_to_its_consumer(run, home):
    eid = say(run, "2026-06-01T10:00:00Z", ttl_sec=1)
    pending = home / "pipeline" / "inbox" / "pending"
    (pending / "cur").mkdir()
    os.rename(pending / (eid + ".json"), pending / "cur" / (eid + ".json"))  # a consumer took it
    tick(run, "2026-06-01T10:00:30Z")
    assert os.listdir(pending / "cur") == [eid + ".json"]
    assert not (home / "pipeline" / "dead_letter").exists()


def clean_env(home, now):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANIMA_", "PYTHON"))}
    env.update(ANIMA_HOME=str(home), ANIMA_NOW=now, TZ="UTC", LANG="C.UTF-8")
    return env


def test_a_tick_while_another_holds_the_lock_exits_75_silently(anima_bin, home):
    lock = home / "pipeline" / "heartbeat" / ".tick.json.lock"
    lock.parent.mkdir(parents=True)
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        p = subprocess.run([anima_bin, "tick"], capture_output=True, text=True, timeout=30,
                           env=clean_env(home, "2026-06-01T11:00:00Z"), stdin=subprocess.DEVNULL)
    assert (p.returncode, p.stdout, p.stderr) == (75, "", "")
    assert not (home / "pipeline" / "heartbeat" / "tick.json").exists()
    assert rhythm_fired(home) == []
    p = subprocess.run([anima_bin, "tick"], capture_output=True, text=True, timeout=30,
                       env=clean_env(home, "2026-06-01T11:00:00Z"), stdin=subprocess.DEVNULL)
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")
    assert rhythm_fired(home) == [("hourly", "2026-06-01T11:00:00Z")]


def test_ticks_racing_fire_once(anima_bin, home):
    env = clean_env(home, "2026-06-01T11:00:00Z")
    procs = [subprocess.Popen([anima_bin, "tick"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                              stdin=subprocess.DEVNULL) for _ in range(6)]
    results = [(p.wait(timeout=60), p.stdout.read(), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert {code for code, _, _ in results} <= {0, 75}
    assert all(out == b"" and err == b"" for _, out, err in results)
    assert rhythm_fired(home) == [("hourly", "2026-06-01T11:00:00Z")]
    assert files(home / "pipeline" / "rhythm" / "triggers") == []


def test_nothing_due_never_loads_the_cron_library(anima_bin, home, tmp_path):
    env = clean_env(home, "2026-06-01T10:00:00Z")
    assert subprocess.run([anima_bin, "tick"], env=env, timeout=30).returncode == 0
    probe = ("import sys\nfrom anima.cli import main\nsys.argv = ['anima', 'tick']\n"
             "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('croniter', 'dateutil')))\n")
    for now, loaded in [("2026-06-01T10:30:00Z", "[]\n"), ("2026-06-01T11:00:00Z", "['croniter', 'croniter.croniter'")]:
        env["ANIMA_NOW"] = now
        p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=30)
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith(loaded)
