import json
import os
import random
import subprocess

import pytest

from conftest import NOW_TS, kill_after, snapshot


def queue(home, *parts):
    d = home.joinpath("pipeline", *parts)
    return sorted(p.name for p in d.iterdir() if p.suffix == ".json") if d.exists() else []


def msgs(home):
    d = home / "pipeline" / "message_queue"
    return [json.loads((d / n).read_text()) for n in queue(home, "message_queue")]


def test_say_then_preprocess(run, home):
    r = run("say", "今天天气真好", "--speaker", "Alice", "--scene", "群聊")
    assert r.exit_code == 0 and r.stdout.startswith("event_") and r.stderr == ""
    [event] = queue(home, "inbox", "pending")
    assert event == r.stdout.strip() + ".json"
    assert run("preprocess").exit_code == 0
    assert queue(home, "inbox", "pending") == []
    assert queue(home, "inbox", "pending", "done") == [event]
    [m] = msgs(home)
    assert m["envelope"]["source_type"] == "message" and m["envelope"]["source_node"] == "preprocess"
    assert m["payload"]["text"] == "今天天气真好" and m["payload"]["speaker"] == "Alice"
    assert m["payload"]["event"] == event[:-5]


def test_json_events_carry_their_trace_and_type(run, home):
    lines = [{"text": "hi", "speaker": "Bob"},
             {"source_type": "system", "text": "backup done", "trace_id": "trace_abc"}]
    r = run("say", "--json", input="".join(json.dumps(x) + "\n" for x in lines))
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 2
    run("preprocess")
    by_type = {m["envelope"]["source_type"]: m for m in msgs(home)}
    assert by_type["system"]["envelope"]["trace_id"] == "trace_abc"
    assert by_type["system"]["payload"]["text"] == "backup done"
    assert "source_type" not in by_type["system"]["payload"]


@pytest.mark.parametrize("stdin, message", [
    ('{"text": "hi"}', "anima: stdin: a message needs \"speaker\" (a non-empty string)\n"),
    ('{"text": "hi", "speaker": "a"}\n{oops\n', None),
    ('{"text": "hi", "speaker": "a"}\n{"text": "x", "speaker": "b", "source_type": "gossip"}\n', None),
    ("[1, 2]", None),
    ("", "anima: stdin: no event\n"),
])
def test_bad_input_writes_nothing(run, home, stdin, message):
    run("init")
    before = snapshot(home)
    r = run("say", "--json", input=stdin)
    assert r.exit_code == 65 and len(r.stderr.splitlines()) == 1
    if message:
        assert r.stderr == message
    assert snapshot(home) == before


def test_ndjson_error_names_the_line(run, home):
    r = run("say", "--json", input='{"text": "a", "speaker": "b"}\n\n{"text": 1, "speaker": "c"}\n')
    assert r.stderr == "anima: stdin:3: a message needs \"text\" (a non-empty string)\n"


def test_a_malformed_file_is_dead_lettered_and_the_rest_flow(run, home):
    run("say", "first", "--speaker", "a")
    pending = home / "pipeline" / "inbox" / "pending"
    (pending / "event_00000000000000000000broken.json").write_text("{not json")
    run("say", "second", "--speaker", "b")
    assert run("preprocess").exit_code == 0
    assert sorted(m["payload"]["text"] for m in msgs(home)) == ["first", "second"]
    dead = home / "pipeline" / "dead_letter"
    reason = json.loads((dead / "event_00000000000000000000broken.json.reason").read_text())
    assert reason["by"] == "anima preprocess" and "not valid JSON" in reason["why"]


def test_a_crash_after_delivering_never_duplicates(run, home):
    """Preprocess delivered the message, then died before finishing its event: the recovered
    event is finished, not delivered again."""
    from anima.infra.home import Home
    from anima.pipeline import events as events_
    from anima.pipeline import queues

    run("say", "once", "--speaker", "a")
    h = Home(str(home))
    inbox = queues.Queue(h, "pending")
    [name] = inbox.ready()
    path = inbox.claim(name)
    doc = inbox.read(path)
    msg = queues.envelope("message", "preprocess", doc["payload"], "msg", doc["envelope"]["trace_id"], now=NOW_TS)
    msg["envelope"]["id"] = "msg_" + name[: -len(".json")].split("_", 1)[1]
    queues.Queue(h, "message").deliver(msg)  # ...and the process dies here
    inbox.recover(0)
    events_.preprocess(h, NOW_TS)
    assert [m["payload"]["text"] for m in msgs(home)] == ["once"]
    assert queue(home, "inbox", "pending") == []


def test_producers_and_consumers_racing(anima_bin, home):
    env = {**os.environ, "ANIMA_HOME": str(home)}
    producers = [subprocess.Popen(
        ["bash", "-c", f'for i in $(seq 1 12); do "{anima_bin}" say "p{p}-$i" --speaker p{p} >/dev/null; done'],
        env=env) for p in range(8)]
    consumers = [subprocess.Popen(["bash", "-c", f'for i in $(seq 1 25); do "{anima_bin}" preprocess; done'], env=env)
                 for _ in range(2)]
    for p in producers + consumers:
        assert p.wait(timeout=300) == 0
    subprocess.run([anima_bin, "preprocess"], env=env, check=True)
    texts = sorted(m["payload"]["text"] for m in msgs(home))
    assert texts == sorted(f"p{p}-{i}" for p in range(8) for i in range(1, 13))  # each exactly once
    left = [p for q in ("inbox/pending", "message_queue") for part in ("tmp", "cur")
            for p in (home / "pipeline" / q / part).glob("*")]
    assert left == []


def test_kill_9_preprocess_loses_and_duplicates_nothing(anima_bin, home):
    env = {**os.environ, "ANIMA_HOME": str(home)}
    events = "".join(json.dumps({"text": f"e{i}", "speaker": "s"}) + "\n" for i in range(60))
    subprocess.run([anima_bin, "say", "--json"], input=events, text=True, env=env, check=True, capture_output=True)
    rng = random.Random(9)
    for _ in range(10):
        kill_after([anima_bin, "preprocess"], env, rng.uniform(0.03, 0.15))
    from anima.infra.home import Home
    from anima.pipeline import events as events_
    from anima.pipeline import queues

    queues.Queue(Home(str(home)), "pending").recover(0)  # as a later run would, after the claim timeout
    events_.preprocess(Home(str(home)), NOW_TS)
    texts = sorted(m["payload"]["text"] for m in msgs(home))
    assert texts == sorted(f"e{i}" for i in range(60))


def test_queue_ls_show_retry_purge(run, home):
    run("say", "good", "--speaker", "a")
    pending = home / "pipeline" / "inbox" / "pending"
    (pending / "event_00000000000000000000broken.json").write_text("{not json")
    run("preprocess")
    dead = run("queue", "ls", "dead").stdout.splitlines()
    assert len(dead) == 1 and dead[0].startswith("event_00000000000000000000broken.json\t")
    assert "\tpending\t" in dead[0] and "not valid JSON" in dead[0]
    assert run("queue", "show", "dead", "event_00000000000000000000broken.json").stdout.startswith("{not json\n")
    [m] = run("queue", "ls", "message", "-0").stdout.split("\0")[:-1]
    assert json.loads(run("queue", "show", "message", m).stdout)["payload"]["text"] == "good"
    # mend it by hand, then retry: it flows
    (home / "pipeline" / "dead_letter" / "event_00000000000000000000broken.json").write_text(
        json.dumps({"envelope": {"id": "event_00000000000000000000broken", "trace_id": "t", "timestamp":
                                 "2026-11-30T00:00:00Z", "source_node": "x", "source_type": "message",
                                 "ttl_sec": None}, "payload": {"text": "mended", "speaker": "me"}}))
    assert run("queue", "retry", "event_00000000000000000000broken.json").exit_code == 0
    run("preprocess")
    assert sorted(m["payload"]["text"] for m in msgs(home)) == ["good", "mended"]
    assert len(list((home / "pipeline" / "dead_letter" / "retried").iterdir())) == 1
    assert run("queue", "retry", "nope.json").exit_code == 1
    assert run("queue", "purge", "pending").exit_code == 2
    assert run("queue", "purge", "pending", "--yes").exit_code == 0
    assert queue(home, "inbox", "pending", "done") == []


def test_an_id_that_is_a_path_is_dead_lettered_not_followed(run, home):
    pending = home / "pipeline" / "inbox" / "pending"
    pending.mkdir(parents=True, exist_ok=True)
    (pending / "event_1.json").write_text(json.dumps({"envelope": {
        "id": "trigger_x/../../../../escaped", "trace_id": "t", "timestamp": "2026-11-30T00:00:00Z",
        "source_node": "x", "source_type": "message", "ttl_sec": None}, "payload": {"text": "x", "speaker": "y"}}))
    assert run("preprocess").exit_code == 0
    assert not (home / "escaped.json").exists() and not list(home.rglob("escaped*"))
    reason = json.loads((home / "pipeline" / "dead_letter" / "event_1.json.reason").read_text())
    assert "is not a plain name" in reason["why"]


def test_metrics_count_the_files(run, home):
    run("say", "one", "--speaker", "a")
    run("say", "two", "--speaker", "b")
    pending = home / "pipeline" / "inbox" / "pending"
    (pending / "event_00000000000000000000broken.json").write_text("{not json")
    run("preprocess")
    m = json.loads(run("metrics", "--json").stdout)
    assert m["queues"]["message"]["waiting"] == 2 and m["queues"]["pending"]["done"] == 2
    assert m["queues"]["pending"]["dead"] == 1 and m["dead_letters"] == 1
    assert m["events_per_hour"][-1] == 2 and sum(m["events_per_hour"]) == 2
    assert m["queues"]["message"]["oldest_age_sec"] >= 0
    text = run("metrics").stdout
    assert "queue.message.waiting\t2\n" in text and "dead_letters\t1\n" in text
    prom = run("metrics", "--prom").stdout
    assert 'anima_queue_waiting{queue="message"} 2\n' in prom
    for line in prom.splitlines():  # every sample line: name{labels} value
        assert line.startswith("# ") or line.split()[-1].replace(".", "").isdigit()


def test_prometheus_metrics_pass_promtool_and_say_when_the_heart_last_beat(run, home):
    """promtool (make tools installs it) is the check Prometheus users run on a textfile."""
    import shutil
    import subprocess

    from anima import __version__

    run("init", "--lang", "en")
    assert "anima_last_tick_timestamp_seconds" not in run("metrics", "--prom").stdout  # never ticked
    run("say", "one", "--speaker", "a")
    assert run("tick", "--now", "2026-12-01T10:00:00Z").exit_code == 0
    run("session", "append", "--session", "s1", "--role", "user", "I like tea.")
    assert run("stage", "--session", "s1", "--line", "2", "--quote", "I like tea").exit_code == 0
    prom = run("metrics", "--prom").stdout
    assert f'anima_build_info{{version="{__version__}"}} 1\n' in prom
    assert "anima_last_tick_timestamp_seconds 1796119200\n" in prom
    assert "anima_facts_waiting 1\n" in prom
    assert 'anima_dispatch_actions_total{result="done"} 0\n' in prom and "anima_llm_calls_total 0\n" in prom
    assert shutil.which("promtool"), "promtool is missing: make tools installs it (Debian package prometheus)"
    checked = subprocess.run(["promtool", "check", "metrics"], input=prom, capture_output=True, text=True)
    assert (checked.returncode, checked.stdout, checked.stderr) == (0, "", "")
    text = run("metrics").stdout
    assert "last_tick\t2026-12-01T10:00:00Z\n" in text and "facts.waiting\t1\n" in text
