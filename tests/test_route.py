import json

import pytest

from conftest import snapshot


def routes(home, text):
    path = home / "config.toml"
    path.write_text(path.read_text() + "\n" + text)


def files(home, queue):
    d = home / "pipeline" / queue
    return [json.loads(p.read_text()) for p in sorted(d.glob("*.json"))] if d.exists() else []


@pytest.fixture
def inited(run, home):
    run("init", "--lang", "en")
    return home


SWITCH = """
[[routes.rules]]
name = "by-speaker"
kind = "switch"
from = "message"
cases = [{when = [["payload.speaker", "==", "Alice"]], to = "alice"},
         {when = [["payload.text", "matches", "(?i)urgent"], ["envelope.source_type", "in", ["message"]]], to = "urgent"}]
default = "calm"
"""


def test_switch_first_matching_case_wins_else_default(run, inited):
    routes(inited, SWITCH)
    run("say", "hi", "--speaker", "Alice")
    run("say", "URGENT: the kettle", "--speaker", "Bob")
    run("say", "just saying", "--speaker", "Bob")
    run("preprocess")
    assert run("route").exit_code == 0
    assert [m["payload"]["text"] for m in files(inited, "alice")] == ["hi"]
    assert [m["payload"]["text"] for m in files(inited, "urgent")] == ["URGENT: the kettle"]
    assert [m["payload"]["text"] for m in files(inited, "calm")] == ["just saying"]
    assert files(inited, "message_queue") == []
    assert run("route").exit_code == 0 and len(files(inited, "calm")) == 1  # one pass moved each once


def test_anima_queue_looks_into_a_routes_own_queues(run, inited):
    routes(inited, SWITCH)
    run("say", "hi", "--speaker", "Alice")
    run("preprocess")
    run("route")
    r = run("queue", "ls", "alice")
    assert r.exit_code == 0 and r.stdout.count("\n") == 1
    name = r.stdout.split("\t")[0]
    assert json.loads(run("queue", "show", "alice", name).stdout)["payload"]["text"] == "hi"
    assert run("queue", "ls", "calm").stdout == ""  # named by a route, empty so far
    r = run("queue", "ls", "nowhere")
    assert r.exit_code == 2 and "'nowhere' is not a queue" in r.stderr and "alice" in r.stderr


def test_broadcast_copies_to_every_queue(run, inited):
    routes(inited, """
[[routes.rules]]
name = "fan"
kind = "broadcast"
from = "message"
to = ["log", "action_mirror"]
""")
    run("say", "hello", "--speaker", "a")
    run("preprocess")
    run("route")
    assert [m["payload"]["text"] for m in files(inited, "log")] == ["hello"]
    assert [m["payload"]["text"] for m in files(inited, "action_mirror")] == ["hello"]


def test_merge_all_waits_for_every_part_then_delivers_one(run, inited):
    routes(inited, """
[[routes.rules]]
name = "pair"
kind = "merge"
from = "message"
to = "pairs"
expect = 2
""")
    run("say", "--json", input='{"text": "one", "speaker": "a", "trace_id": "trace_x"}\n')
    run("preprocess")
    run("route")
    assert files(inited, "pairs") == [] and len(files(inited, "message_queue")) == 1
    run("say", "--json", input='{"text": "two", "speaker": "b", "trace_id": "trace_x"}\n')
    run("preprocess")
    run("route")
    [merged] = files(inited, "pairs")
    assert [p["text"] for p in merged["payload"]["parts"]] == ["one", "two"]
    assert merged["envelope"]["trace_id"] == "trace_x" and files(inited, "message_queue") == []


def test_an_incomplete_merge_times_out_to_dead_letter(run, inited):
    routes(inited, """
[[routes.rules]]
name = "pair"
kind = "merge"
from = "message"
to = "pairs"
expect = 2
timeout_sec = 60
""")
    run("say", "--json", input='{"text": "alone", "speaker": "a", "trace_id": "trace_y"}\n',
        env={"ANIMA_NOW": "2026-11-30T10:00:00Z"})
    run("preprocess", env={"ANIMA_NOW": "2026-11-30T10:00:00Z"})
    run("route", env={"ANIMA_NOW": "2026-11-30T10:00:30Z"})
    assert len(files(inited, "message_queue")) == 1
    run("route", env={"ANIMA_NOW": "2026-11-30T10:05:00Z"})
    assert files(inited, "message_queue") == []
    [reason] = (inited / "pipeline" / "dead_letter").glob("*.reason")
    assert json.loads(reason.read_text())["why"] == "merge timeout"


@pytest.mark.parametrize("text, why", [
    ('[[routes.rules]]\nname = "x"\nkind = "teleport"\nfrom = "message"\n', "kind must be one of"),
    ('[[routes.rules]]\nname = "x"\nkind = "switch"\nfrom = "message"\ncases = [{when = [["a", "~", 1]], to = "q"}]\n'
     'default = "d"\n', "a condition is [PATH, OP, VALUE]"),
    ('[[routes.rules]]\nname = "x"\nkind = "broadcast"\nfrom = "../etc"\nto = ["q"]\n', "must name a queue"),
    ('[[routes.rules]]\nname = "x"\nkind = "switch"\nfrom = "message"\ncases = [{when = [], to = "q"}]\n',
     "default: must name a queue"),
])
def test_an_invalid_topology_moves_nothing(run, inited, text, why):
    run("say", "hello", "--speaker", "a")
    run("preprocess")
    routes(inited, text)
    before = snapshot(inited)
    r = run("route")
    assert r.exit_code == 78 and why in r.stderr and len(r.stderr.splitlines()) == 1
    assert snapshot(inited) == before


@pytest.mark.parametrize("cond, doc, result", [
    (["payload.n", "<", 5], {"payload": {"n": 3}}, True),
    (["payload.n", ">", 5], {"payload": {"n": 3}}, False),
    (["payload.n", ">", 5], {"payload": {"n": "x"}}, False),           # does not compare: no match
    (["payload.tags", "contains", "tea"], {"payload": {"tags": ["tea", "cat"]}}, True),
    (["payload.speaker", "!=", "Alice"], {"payload": {}}, False),        # missing path: no match
    (["payload.speaker", "exists"], {"payload": {"speaker": None}}, True),
])
def test_conditions(cond, doc, result):
    from anima.pipeline.route import holds

    assert holds(cond, doc) is result


def test_loops_and_anima_directories_are_no_queues_of_a_route(run, inited):
    for text, why in [('[[routes.rules]]\nname = "x"\nkind = "broadcast"\nfrom = "message"\nto = ["message"]\n', "a loop"),
                      ('[[routes.rules]]\nname = "x"\nkind = "broadcast"\nfrom = "heartbeat"\nto = ["q"]\n',
                       "must name a queue")]:
        path = inited / "config.toml"
        saved = path.read_text()
        routes(inited, text)
        r = run("route")
        assert r.exit_code == 78 and why in r.stderr
        path.write_text(saved)


def test_config_get_and_set_of_routes(run, inited):
    rules = [{"name": "fan", "kind": "broadcast", "from": "message", "to": ["log"]}]
    assert run("config", "set", "routes.rules", json.dumps(rules)).exit_code == 0
    assert json.loads(run("config", "get", "routes.rules").stdout) == rules
    assert run("config", "list").exit_code == 0
