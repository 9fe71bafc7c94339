import hashlib
import json
import os
import subprocess

import pytest

from conftest import snapshot
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
        "self_note", "memory_recall", "self_recall", "memory_stage", "get_self_blocks", "update_self_block",
        "outbox_take", "outbox_ack"]
    for s in schemas:
        assert s["type"] == "function"
        params = s["function"]["parameters"]
        assert params["type"] == "object" and set(params["required"]) <= set(params["properties"])
    names = [line.split("\t")[0] for line in run("tools").stdout.splitlines()]
    assert "approve" not in names and len(names) == 8


def objects(schema):
    """Every object schema in `schema`, itself included."""
    if schema.get("type") == "object":
        yield schema
        for spec in schema["properties"].values():
            yield from objects(spec)
    if "items" in schema:
        yield from objects(schema["items"])


def test_strict_schemas_keep_openais_strict_mode_rules(run):
    """As OpenAI documents strict mode: "strict": true, every object closed with every property
    required, and an optional property made nullable (null added to its type and its enum)."""
    from jsonschema import Draft202012Validator

    plain = json.loads(run("tools", "--json").stdout)
    strict = json.loads(run("tools", "--strict").stdout)
    assert [s["function"]["name"] for s in strict] == [s["function"]["name"] for s in plain]
    for p, s in zip(plain, strict, strict=True):
        fn, was = s["function"], p["function"]
        assert fn["strict"] is True and fn["description"] == was["description"] and "strict" not in was
        params = fn["parameters"]
        for obj in objects(params):
            assert obj["additionalProperties"] is False and obj["required"] == list(obj["properties"])
        nulls = {}
        for key, spec in params["properties"].items():
            old = was["parameters"]["properties"][key]
            if key in was["parameters"]["required"]:
                assert spec == old
                continue
            assert spec["type"] == [old["type"], "null"]
            assert spec.get("enum") == (old["enum"] + [None] if "enum" in old else None)
            nulls[key] = None
        # what a strict-mode model sends for "none of the optional ones" fits the strict schema, not the plain one
        given = {k: [] if k in ("terms", "ids", "tags") else 1 if k == "line" else "self_model" if k == "key"
                 else "x" for k in was["parameters"]["required"]}
        Draft202012Validator(params).validate({**given, **nulls})
        if nulls:
            assert not Draft202012Validator(was["parameters"]).is_valid({**given, **nulls})


def test_openais_own_sdk_finds_nothing_to_make_strict(run):
    """The openai package makes a schema strict for its pydantic helpers: ours it leaves as they
    are, while in the plain ones it would require the optional properties."""
    import copy

    strictify = pytest.importorskip("openai.lib._pydantic")._ensure_strict_json_schema
    from openai.types.shared_params import FunctionDefinition

    def strict(schema):
        return strictify(copy.deepcopy(schema), path=(), root=copy.deepcopy(schema))

    for s in json.loads(run("tools", "--strict").stdout):
        assert set(s["function"]) == set(FunctionDefinition.__annotations__)
        assert strict(s["function"]["parameters"]) == s["function"]["parameters"]
    plain = {s["function"]["name"]: s["function"]["parameters"] for s in json.loads(run("tools", "--json").stdout)}
    assert strict(plain["memory_recall"]) != plain["memory_recall"]


def test_the_anthropic_shape_is_the_same_table(run):
    plain = json.loads(run("tools", "--json").stdout)
    shaped = json.loads(run("tools", "--format", "anthropic").stdout)
    assert shaped == [{"name": f["name"], "description": f["description"], "input_schema": f["parameters"]}
                      for f in (s["function"] for s in plain)]
    assert run("tools", "--format", "openai").stdout == run("tools", "--json").stdout
    # strict tool use: "strict": true beside the same schemas, closed already; Anthropic's strict
    # mode takes optional properties (its SDK's transform fails on a list of types)
    assert json.loads(run("tools", "--strict", "--format", "anthropic").stdout) == [
        {**t, "strict": True} for t in shaped]


@pytest.mark.parametrize("name, nulls, absent", [
    ("memory_recall", {"terms": ["miso"], "limit": None, "who": None, "since": None}, {"terms": ["miso"]}),
    ("get_self_blocks", {"key": None}, {}),
    ("outbox_take", {"limit": None}, {}),
])
def test_null_is_not_given(run, corpus, name, nulls, absent):
    """A host in strict mode sends every optional argument, null when it has none: the same answer."""
    assert call(run, name, nulls) == call(run, name, absent)
    assert call(run, name, nulls)[0] == 0


def test_a_fact_staged_with_null_options_has_the_defaults(run, corpus):
    code, staged = call(run, "memory_stage", {"session": "s1", "line": 2, "quote": "My cat is called Miso.",
                                              "tags": None, "importance": None})
    assert code == 0, staged
    fact = json.loads(run("facts", "--json").stdout)
    assert (fact["id"], fact["tags"], fact["importance"]) == (staged["id"], [], 1)


def test_null_for_a_required_argument_is_a_missing_one(run, corpus):
    assert call(run, "self_note", {"text": None}) == (2, {"error": "self_note: missing argument 'text'", "exit": 2})


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


def test_a_recall_tools_question_is_a_question_not_a_document(run, corpus):
    """A model led to paste a document as its query held the host for it (300,000 CJK
    characters: ~30 s); past QUERY_MAX_CHARS it is a usage error, said before any search, and
    the schema tells the model the bound. At the bound it is searched."""
    from anima.host.tools import QUERY_MAX_CHARS

    for name, args in (("memory_recall", {"query": "茶" * (QUERY_MAX_CHARS + 1)}),
                       ("memory_recall", {"terms": ["miso"] * (QUERY_MAX_CHARS // 4 + 1)}),
                       ("self_recall", {"query": "x" * (QUERY_MAX_CHARS + 1)})):
        got, res = call(run, name, args)
        assert got == 2 and f"at most {QUERY_MAX_CHARS}: a question, not a document" in res["error"], name
    got, res = call(run, "memory_recall", {"query": "miso " + "x" * (QUERY_MAX_CHARS - 5)})
    assert got == 0 and [r["line"] for r in res["results"]][:1] == [2]
    schemas = {t["function"]["name"]: t["function"]["parameters"]["properties"]
               for t in json.loads(run("tools", "--json").stdout)}
    assert all(f"at most {QUERY_MAX_CHARS} characters" in schemas[n]["query"]["description"]
               for n in ("memory_recall", "self_recall"))


def test_a_block_holding_the_users_private_data_is_refused_and_unchanged(run, corpus):
    before = call(run, "get_self_blocks", {"key": "direction"})[1]
    code, res = call(run, "update_self_block", {"key": "direction", "body": "I will text 415-555-0132 tonight."})
    assert (code, res["error"]) == (77, "direction: refusing a body that holds a phone number (********32): a block "
                                        "is about me, not the user's private data; --force writes it anyway")
    assert call(run, "get_self_blocks", {"key": "direction"})[1] == before


BASELINE = "self/blocks/personality_baseline.md"


def proposed(pid, new=True):
    return {"key": "personality_baseline", "changed": False, "proposal": pid, "new": new, "status": "open",
            "accept": f"anima self accept {pid}",
            "note": f"not written: proposed as {pid}; the personality baseline changes when a person accepts it "
                    f"(`anima self accept {pid}`)"}


def test_the_agent_proposes_its_baseline_and_a_person_accepts_it(run, corpus, anima_bin):
    before = (corpus / BASELINE).read_bytes()
    args = json.dumps({"key": "personality_baseline", "body": "I am calm and direct."})
    p = subprocess.run([anima_bin, "call", "update_self_block"], input=args, capture_output=True, text=True)
    [name] = [n for n in os.listdir(corpus / "self/proposals") if not n.startswith(".")]
    pid = name.removesuffix(".md")
    assert (p.returncode, json.loads(p.stdout), p.stderr) == (0, proposed(pid), "")
    # the block is as it was: no write, no history
    assert (corpus / BASELINE).read_bytes() == before
    assert not (corpus / "self/blocks/.history/personality_baseline").exists()
    assert (corpus / "self/proposals" / name).read_text() == (
        f'---\nid: "{pid}"\nkey: "personality_baseline"\nstatus: "open"\nproposed: "2026-11-30T21:05:00Z"\n'
        f'by: "agent"\nbase_sha256: "{hashlib.sha256(block_body(before).encode()).hexdigest()}"\n'
        'evidence: ["the agent asked for it, with update_self_block"]\n---\nI am calm and direct.\n')
    listed = run("self", "proposals")
    assert (listed.exit_code, listed.stdout) == (
        0, f"{pid}\topen\tpersonality_baseline\t2026-11-30T21:05:00Z\tthe agent asked for it, with update_self_block\n")

    # asked again: the same proposal, nothing new written
    proposal = (corpus / "self/proposals" / name).read_bytes()
    assert call(run, "update_self_block", {"key": "personality_baseline", "body": "I am calm and direct.\n"}) == \
        (0, proposed(pid, new=False))
    assert (corpus / "self/proposals" / name).read_bytes() == proposal

    # the person's decision writes it, the old version kept
    assert run("self", "accept", pid).exit_code == 0
    assert run("self", "get", "personality_baseline").stdout == "I am calm and direct.\n"
    assert (corpus / "self/blocks/.history/personality_baseline/1.md").read_bytes() == before
    # now it is the body: unchanged, and no proposal
    assert call(run, "update_self_block", {"key": "personality_baseline", "body": "I am calm and direct."}) == \
        (0, {"key": "personality_baseline", "changed": False})
    assert len([n for n in os.listdir(corpus / "self/proposals") if not n.startswith(".")]) == 1


def test_a_rejected_baseline_change_is_not_proposed_again(run, corpus):
    code, res = call(run, "update_self_block", {"key": "personality_baseline", "body": "I am blunt."})
    pid = res["proposal"]
    assert (code, res) == (0, proposed(pid))
    assert run("self", "reject", pid).exit_code == 0
    proposal = (corpus / "self/proposals" / f"{pid}.md").read_bytes()
    assert call(run, "update_self_block", {"key": "personality_baseline", "body": "I am blunt."}) == (0, {
        "key": "personality_baseline", "changed": False, "proposal": pid, "new": False, "status": "rejected",
        "accept": None, "note": f"not written: this very change was proposed before as {pid}, and a person has "
                                "rejected it"})
    assert (corpus / "self/proposals" / f"{pid}.md").read_bytes() == proposal
    # another body is another proposal
    code, other = call(run, "update_self_block", {"key": "personality_baseline", "body": "I am gentle."})
    assert code == 0 and other["proposal"] != pid and other["new"] is True


def test_a_person_still_sets_the_baseline_at_once(run, corpus):
    r = run("self", "set", "personality_baseline", input="I am a person's choice.\n")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")
    assert run("self", "get", "personality_baseline").stdout == "I am a person's choice.\n"
    assert not (corpus / "self/proposals").exists()


@pytest.mark.parametrize("body, locked, error", [
    ("I keep the user's PIN, 4821, for later.", False,
     "personality_baseline: refusing a body that holds a password or PIN (*******21): a block is about me, not "
     "the user's private data; --force writes it anyway"),
    ("x" * 2001, False, "personality_baseline: body has 2001 characters, over the cap of 2000 (self.block_max_chars)"),
    ("I am someone else.", True,
     "personality_baseline: block is locked; a proposal cannot change it "
     "(`anima self set personality_baseline --force` can)"),
])
def test_a_baseline_proposal_is_refused_as_a_write_would_be(run, corpus, body, locked, error):
    if locked:
        block = corpus / BASELINE
        block.write_text(block.read_text().replace("locked: false", "locked: true"))
    before = snapshot(corpus)
    r = run("call", "update_self_block", input=json.dumps({"key": "personality_baseline", "body": body}))
    assert (r.exit_code, json.loads(r.stdout), r.stderr) == (77, {"error": error, "exit": 77}, f"anima: {error}\n")
    assert snapshot(corpus) == before


def test_the_anchor_stays_refused(run, corpus):
    before = snapshot(corpus)
    r = run("call", "update_self_block", input=json.dumps({"key": "existence_anchor", "body": "I am someone else."}))
    error = ("update_self_block: 'key' must be one of self_model, personality_baseline, direction, metacognition, "
             "autobiography_summary")
    assert (r.exit_code, json.loads(r.stdout), r.stderr) == (2, {"error": error, "exit": 2}, f"anima: {error}\n")
    assert snapshot(corpus) == before


def block_body(raw: bytes) -> str:
    return raw.decode().split("\n---\n", 1)[1].rstrip()


def test_the_same_change_asked_for_at_once_is_one_proposal(run, corpus, anima_bin):
    """Eight real processes race to propose one body: one proposal, one of them new, all the same id."""
    args = json.dumps({"key": "personality_baseline", "body": "I am calm and direct."})
    procs = [subprocess.Popen([anima_bin, "call", "update_self_block"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(8)]
    answers = [json.loads(p.communicate(args, timeout=60)[0]) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8
    [name] = [n for n in os.listdir(corpus / "self/proposals") if not n.startswith(".")]
    assert {a["proposal"] for a in answers} == {name.removesuffix(".md")}
    assert sorted(a["new"] for a in answers) == [False] * 7 + [True]
