import json

import pytest

from sessions import write_session


@pytest.fixture
def corpus(run, home):
    run("init", "--lang", "en")
    write_session(home, "s1", [("user", "My cat is called Miso.", "2026-11-01T10:00:00Z")])
    return home


def call(run, name, args):
    r = run("call", name, input=json.dumps(args) if not isinstance(args, str) else args)
    return r.exit_code, json.loads(r.stdout)


def test_schemas_are_openai_function_tools(run):
    schemas = json.loads(run("tools", "--json").stdout)
    assert [s["function"]["name"] for s in schemas] == [
        "self_note", "memory_recall", "memory_stage", "get_self_blocks", "update_self_block", "outbox_take",
        "outbox_ack"]
    for s in schemas:
        assert s["type"] == "function"
        params = s["function"]["parameters"]
        assert params["type"] == "object" and set(params["required"]) <= set(params["properties"])
    names = [line.split("\t")[0] for line in run("tools").stdout.splitlines()]
    assert "approve" not in names and len(names) == 7


def test_recall_then_stage_through_tools(run, corpus):
    code, found = call(run, "memory_recall", {"terms": ["miso"]})
    assert code == 0 and found["relaxed"] is False
    [hit] = found["results"]
    code, staged = call(run, "memory_stage", {"session": hit["session"], "line": hit["line"],
                                              "quote": "My cat is called Miso.", "tags": ["pets"]})
    assert code == 0 and staged["status"] == "candidate" and staged["new"] is True
    assert json.loads(run("facts", "--json").stdout)["id"] == staged["id"]


def test_self_note_and_blocks(run, corpus):
    code, note = call(run, "self_note", {"text": "I keep my answers short."})
    assert code == 0 and note["id"].startswith("n")
    code, res = call(run, "update_self_block", {"key": "direction", "body": "Focus: tools."})
    assert (code, res["changed"]) == (0, True)
    code, res = call(run, "get_self_blocks", {"key": "direction"})
    assert res["blocks"][0]["body"] == "Focus: tools."
    code, res = call(run, "get_self_blocks", {})
    assert len(res["blocks"]) == 6


@pytest.mark.parametrize("name, args, code", [
    ("approve", {"ids": ["f1"]}, 2),
    ("self_note", {}, 2),
    ("self_note", {"text": 5}, 2),
    ("self_note", {"text": "x", "extra": 1}, 2),
    ("memory_recall", {"terms": "miso"}, 2),
    ("memory_recall", {"terms": ["miso"], "who": "them"}, 2),
    ("update_self_block", {"key": "existence_anchor", "body": "I am someone else."}, 2),
    ("self_note", {"text": "The user lives at alice@example.com."}, 77),
    ("update_self_block", {"key": "direction", "body": "I keep the user's PIN, 4821, for later."}, 77),
    ("memory_stage", {"session": "s1", "line": 2, "quote": "My dog"}, 77),
    ("self_note", "{not json", 65),
])
def test_errors_are_json_with_the_exit_status(run, corpus, name, args, code):
    got, res = call(run, name, args)
    assert got == code and res["exit"] == code and res["error"]


def test_a_block_holding_the_users_private_data_is_refused_and_unchanged(run, corpus):
    before = call(run, "get_self_blocks", {"key": "direction"})[1]
    code, res = call(run, "update_self_block", {"key": "direction", "body": "I will text 415-555-0132 tonight."})
    assert (code, res["error"]) == (77, "direction: refusing a body that holds a phone number (********32): a block "
                                        "is about me, not the user's private data; --force writes it anyway")
    assert call(run, "get_self_blocks", {"key": "direction"})[1] == before
