"""`anima mcp`: the SDK's own client (ClientSession over stdio_client) against the installed
`anima mcp` in a real subprocess, on a home made through the CLI."""

import json
import os
import subprocess

import anyio
import mcp_types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

SENTENCE = "Green tea after dinner keeps me awake, so I switch to barley tea."


def anima(anima_bin, *args, input=None):
    proc = subprocess.run([anima_bin, *args], input=input, capture_output=True, text=True, timeout=30,
                          env=dict(os.environ, ANIMA_NOW="2026-11-30T10:00:00Z"))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


async def session_run(anima_bin, cwd, body, errlog):
    server = StdioServerParameters(command=anima_bin, args=["mcp"], cwd=str(cwd),
                                   env={"ANIMA_HOME": os.environ["ANIMA_HOME"], "ANIMA_NOW": "2026-11-30T10:00:00Z"})
    with anyio.fail_after(20):
        async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "anima"
            return await body(session)


def serve(anima_bin, tmp_path, body):
    with open(tmp_path / "mcp.stderr", "w+") as errlog:
        result = anyio.run(session_run, anima_bin, tmp_path, body, errlog)
        errlog.seek(0)
        return result, errlog.read()


def test_a_real_client_session(anima_bin, tmp_path):
    anima(anima_bin, "init", "--lang", "en")
    anima(anima_bin, "session", "append", "--session", "s2", "--role", "user", SENTENCE)
    schemas = json.loads(anima(anima_bin, "tools", "--json"))

    async def body(s):
        listed = await s.list_tools()
        recalled = await s.call_tool("memory_recall", {"terms": ["barley"]})
        noted = await s.call_tool("self_note", {"text": "I check the transcripts before I answer from memory."})
        refused = await s.call_tool("self_note", {"text": "The user lives at alice@example.com."})
        bad = await s.call_tool("memory_recall", {"terms": "barley"})
        resources = await s.list_resources()
        resource = await s.read_resource("anima://prompt")
        block = await s.read_resource("anima://self/direction")
        prompts = await s.list_prompts()
        prompt = await s.get_prompt("anima")
        return listed, recalled, noted, refused, bad, resources, resource, block, prompts, prompt

    (listed, recalled, noted, refused, bad, resources, resource, block, prompts, prompt), stderr = \
        serve(anima_bin, tmp_path, body)

    # the tools are `anima tools --json`'s, schema for schema
    assert [(t.name, t.description, t.input_schema) for t in listed.tools] == \
        [(f["name"], f["description"], f["parameters"]) for f in (s["function"] for s in schemas)]

    assert not recalled.is_error
    [hit] = recalled.structured_content["results"]
    assert (hit["session"], hit["who"], hit["text"]) == ("s2", "user", SENTENCE)
    assert json.loads(recalled.content[0].text) == recalled.structured_content

    assert not noted.is_error
    nid = noted.structured_content["id"]
    listing = anima(anima_bin, "note", "list")
    assert f"{nid}\t" in listing and "I check the transcripts before I answer from memory." in listing
    assert "alice@example.com" not in listing

    # refusals are tool errors carrying `anima call`'s one line, and the session goes on
    assert refused.is_error and refused.structured_content["exit"] == 77
    assert refused.content[0].text == refused.structured_content["error"]
    assert "\n" not in refused.content[0].text and refused.content[0].text in stderr
    assert bad.is_error and bad.structured_content == {"error": "memory_recall: 'terms' must be of type array",
                                                       "exit": 2}

    # the prompt, as a resource and as a prompt, is what `anima prompt` prints in the same directory
    printed = subprocess.run([anima_bin, "prompt"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert "I check the transcripts before I answer from memory." in printed
    assert resource.contents[0].text == printed
    assert [p.name for p in prompts.prompts] == ["anima"]
    assert [(m.role, m.content.text) for m in prompt.messages] == [("user", printed)]
    assert [r.uri for r in resources.resources] == ["anima://prompt"] + [
        f"anima://self/{k}" for k in ("existence_anchor", "self_model", "personality_baseline", "direction",
                                      "metacognition", "autobiography_summary")]
    assert block.contents[0].text == anima(anima_bin, "self", "get", "direction")


def test_a_tool_call_changes_what_the_next_read_says(anima_bin, tmp_path):
    """No caching between the two: the prompt read after update_self_block shows the new body."""
    anima(anima_bin, "init", "--lang", "en")

    async def body(s):
        updated = await s.call_tool("update_self_block", {"key": "direction", "body": "Focus: the MCP server."})
        locked = await s.call_tool("update_self_block", {"key": "existence_anchor", "body": "I am someone else."})
        return updated, locked, (await s.read_resource("anima://prompt")).contents[0].text

    (updated, locked, text), _ = serve(anima_bin, tmp_path, body)
    assert updated.structured_content == {"key": "direction", "changed": True, "previous_revision": 1}
    assert locked.is_error and locked.structured_content["exit"] == 2
    assert "Focus: the MCP server." in text
    assert anima(anima_bin, "self", "get", "direction") == "Focus: the MCP server.\n"


def test_the_baseline_is_proposed_over_mcp_as_over_call(anima_bin, tmp_path):
    """update_self_block of personality_baseline writes a proposal, never the block; a person accepts it."""
    anima(anima_bin, "init", "--lang", "en")
    home = os.environ["ANIMA_HOME"]
    with open(os.path.join(home, "self/blocks/personality_baseline.md"), "rb") as f:
        before = f.read()

    async def body(s):
        return await s.call_tool("update_self_block", {"key": "personality_baseline", "body": "I am calm and direct."})

    proposed, stderr = serve(anima_bin, tmp_path, body)
    pid = proposed.structured_content["proposal"]
    assert not proposed.is_error and stderr == ""
    assert proposed.structured_content == {
        "key": "personality_baseline", "changed": False, "proposal": pid, "new": True, "status": "open",
        "accept": f"anima self accept {pid}",
        "note": f"not written: proposed as {pid}; the personality baseline changes when a person accepts it "
                f"(`anima self accept {pid}`)"}
    assert json.loads(proposed.content[0].text) == proposed.structured_content
    with open(os.path.join(home, "self/blocks/personality_baseline.md"), "rb") as f:
        assert f.read() == before
    assert anima(anima_bin, "self", "proposals").split("\t")[:3] == [pid, "open", "personality_baseline"]
    anima(anima_bin, "self", "accept", pid)
    assert anima(anima_bin, "self", "get", "personality_baseline") == "I am calm and direct.\n"


# What each tool's MCP hints promise, as anima-mcp(1) gives them: (readOnly, destructive, idempotent).
HINTS = {"self_note": (False, False, False), "memory_recall": (True, False, True), "self_recall": (True, False, True),
         "memory_stage": (False, False, True), "get_self_blocks": (True, False, True),
         "update_self_block": (False, False, True), "outbox_take": (False, False, False),
         "outbox_ack": (False, True, True)}


def test_every_tool_keeps_its_output_schema_and_its_hints(anima_bin, tmp_path, home):
    """Each tool called for real: its structured content validates against the outputSchema it
    lists (the SDK client checks it too, and raises if not), and what it did to the files on
    disk is what its hints say: a read-only call changes nothing, an idempotent one called again
    changes nothing more, any other changes something."""
    from jsonschema import Draft202012Validator

    from conftest import act, snapshot

    anima(anima_bin, "init", "--lang", "en")
    anima(anima_bin, "session", "append", "--session", "s2", "--role", "user", SENTENCE)
    act(home, "reply", {"to": "Alice", "text": "Barley tea, then.", "scene": "chat", "cites": {"gen": 0, "lines": [1]}})
    anima(anima_bin, "dispatch")
    seen = {}

    async def body(s):
        listed = {t.name: t for t in (await s.list_tools()).tools}

        async def call(name, args):
            before = snapshot(home)
            result = await s.call_tool(name, args)
            assert not result.is_error, (name, result.content)
            schema = listed[name].output_schema
            Draft202012Validator.check_schema(schema)
            Draft202012Validator(schema).validate(result.structured_content)
            after = snapshot(home)
            read_only, _, idempotent = HINTS[name]
            assert (after == before) == read_only, name
            if idempotent:
                again = await s.call_tool(name, args)
                assert not again.is_error and snapshot(home) == after, name
            seen.setdefault(name, []).append(result.structured_content)
            return result.structured_content

        await call("self_note", {"text": "I check the transcripts before I answer from memory."})
        [hit] = (await call("memory_recall", {"terms": ["barley"], "limit": None, "who": None, "since": None}))["results"]
        await call("self_recall", {"query": "barley tea", "limit": None, "since": None})
        await call("memory_stage", {"session": hit["session"], "line": hit["line"], "quote": "Green tea after dinner",
                                    "tags": None, "importance": None})
        await call("get_self_blocks", {"key": None})
        await call("get_self_blocks", {"key": "direction"})
        await call("update_self_block", {"key": "direction", "body": "I want to learn to sail."})
        await call("update_self_block", {"key": "personality_baseline", "body": "I am calm and direct."})
        [message] = (await call("outbox_take", {"limit": None}))["messages"]
        await call("outbox_ack", {"ids": [message["id"]]})
        return listed

    listed, _ = serve(anima_bin, tmp_path, body)
    assert set(seen) == set(HINTS) == set(listed)
    for name, tool in listed.items():
        a = tool.annotations
        assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint) == (*HINTS[name], False)
    assert len(seen["get_self_blocks"][0]["blocks"]) == 6 and seen["update_self_block"][1]["status"] == "open"


def test_the_blocks_have_a_resource_template(anima_bin, tmp_path):
    """resources/templates/list answers (MCP Inspector stops at -32601), and the template expanded
    with each key is a resource that reads as `anima self get KEY` prints it."""
    anima(anima_bin, "init", "--lang", "en")
    anima(anima_bin, "self", "set", "direction", input="I want to learn to sail.\n")

    async def body(s):
        [template] = (await s.list_resource_templates()).resource_templates
        uris = [r.uri for r in (await s.list_resources()).resources if r.uri.startswith("anima://self/")]
        keys = [u.removeprefix("anima://self/") for u in uris]
        read = {k: (await s.read_resource(template.uri_template.replace("{key}", k))).contents[0].text for k in keys}
        try:
            await s.read_resource(template.uri_template.replace("{key}", "nobody"))
        except Exception as e:  # the SDK raises the JSON-RPC error
            missing = str(e)
        ref = mcp_types.ResourceTemplateReference(uri=template.uri_template)
        completed = (await s.complete(ref, {"name": "key", "value": "m"})).completion.values
        return template, keys, read, missing, completed

    (template, keys, read, missing, completed), _ = serve(anima_bin, tmp_path, body)
    assert completed == ["metacognition"]
    assert (template.uri_template, template.mime_type) == ("anima://self/{key}", "text/markdown")
    assert len(keys) == 6 and all(k in template.description for k in keys)
    assert read == {k: anima(anima_bin, "self", "get", k) for k in keys}
    assert read["direction"] == "I want to learn to sail.\n"
    assert "no such resource: anima://self/nobody" in missing


def test_the_wire_names_are_the_protocols(anima_bin, tmp_path):
    """What a client that is not the SDK reads (MCP Inspector): camelCase names, and the
    templates list answered rather than -32601."""
    anima(anima_bin, "init", "--lang", "en")
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "resources/templates/list"},
    ]
    proc = subprocess.run([anima_bin, "mcp"], input="".join(json.dumps(r) + "\n" for r in requests), cwd=tmp_path,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    replies = {r["id"]: r for r in map(json.loads, proc.stdout.splitlines())}
    recall = next(t for t in replies[2]["result"]["tools"] if t["name"] == "memory_recall")
    assert recall["annotations"] == {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True,
                                     "openWorldHint": False}
    assert recall["outputSchema"]["required"] == ["results", "relaxed"]
    assert replies[3]["result"]["resourceTemplates"] == [{
        "name": "self_block", "title": "My self block", "uriTemplate": "anima://self/{key}",
        "mimeType": "text/markdown", "description": "My self block KEY, its Markdown body: existence_anchor, "
        "self_model, personality_baseline, direction, metacognition, autobiography_summary"}]


def test_stdout_is_only_the_protocol_and_eof_ends_it(anima_bin, tmp_path):
    """A host reading the pipe line by line gets JSON-RPC and nothing else; closing stdin ends it, 0."""
    anima(anima_bin, "init", "--lang", "en")
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "approve", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "anima://nothing"}},
    ]
    proc = subprocess.run([anima_bin, "mcp"], input="".join(json.dumps(r) + "\n" for r in requests), cwd=tmp_path,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2, 3]
    assert replies[1]["result"]["isError"] is True
    assert replies[1]["result"]["structuredContent"]["exit"] == 2
    assert replies[2]["error"] == {"code": -32602, "message": "no such resource: anima://nothing"}
    assert proc.stderr == "anima: unknown tool 'approve'; tools: " \
        "self_note, memory_recall, self_recall, memory_stage, get_self_blocks, update_self_block, outbox_take, outbox_ack\n"


def test_each_tool_call_is_its_own_commit(anima_bin, tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    anima(anima_bin, "init", "--lang", "en")
    home = os.environ["ANIMA_HOME"]
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"]):
        subprocess.run(["git", "-C", home, *args], check=True)
    anima(anima_bin, "config", "set", "git.autocommit", "true")

    async def body(s):
        first = await s.call_tool("self_note", {"text": "I check the transcripts before I answer."})
        second = await s.call_tool("update_self_block", {"key": "direction", "body": "I want to learn to sail."})
        return first, second

    (first, second), _ = serve(anima_bin, tmp_path, body)
    assert not first.is_error and not second.is_error, (first, second)
    log = subprocess.run(["git", "-C", home, "log", "--format=%s"], capture_output=True, text=True).stdout.split("\n")
    assert log[:2] == ["mcp update_self_block: self/blocks/direction.md and 1 more",
                       "mcp self_note: notes/meta.json, notes/notes.md"]

    # a quote of the person's words is theirs to keep in facts/, not in the commit message
    anima(anima_bin, "session", "append", "--session", "s1", "--role", "user", "Text me at 415-555-0132 after six.")

    async def stage(s):
        return await s.call_tool("memory_stage", {"session": "s1", "line": 2, "quote": "Text me at 415-555-0132"})

    staged, _ = serve(anima_bin, tmp_path, stage)
    assert not staged.is_error, staged
    log = subprocess.run(["git", "-C", home, "log", "--format=%B"], capture_output=True, text=True).stdout
    assert log.startswith("mcp memory_stage: facts/facts.jsonl\n") and "0132" not in log



INIT = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"}]
RECALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
          "params": {"name": "memory_recall", "arguments": {"terms": ["tea"]}}}


def test_a_line_that_is_no_message_is_answered_and_the_session_goes_on(anima_bin, tmp_path):
    """A cancel naming a list or an object (no request has such an id) ended the server in exit
    70; a line that is not JSON, or JSON but no JSON-RPC message, or a request whose id is no
    string or integer, got no answer at all. They get -32700 and -32600 with the id null, and
    the call after them its answer."""
    anima(anima_bin, "init", "--lang", "en")
    lines = [json.dumps(r) for r in INIT] + [
        json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"a": 1}}}),
        "garbage{", json.dumps({"a": 1}),
        *(json.dumps({"jsonrpc": "2.0", "id": bad, "method": "ping"}) for bad in ([1], None, 1.5, True)),
        json.dumps(RECALL)]
    proc = subprocess.run([anima_bin, "mcp"], input="".join(line + "\n" for line in lines), cwd=tmp_path,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(r["id"], r.get("error", {}).get("code")) for r in replies] == [
        (0, None), (None, -32700), (None, -32600), *[(None, -32600)] * 4, (1, None)]
    assert replies[-1]["result"]["structuredContent"] == {"results": [], "relaxed": False}


def test_a_client_gone_mid_call_ends_the_session_quietly(anima_bin, tmp_path):
    """The client closes its end of stdout, then asks: the answer meets a broken pipe, which is
    the end of the session (exit 0, as when stdin closes), not exit 70."""
    anima(anima_bin, "init", "--lang", "en")
    proc = subprocess.Popen([anima_bin, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=tmp_path)
    proc.stdin.write("".join(json.dumps(r) + "\n" for r in INIT).encode())
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 0
    proc.stdout.close()  # gone: every answer from now on is written to no one
    proc.stdin.write((json.dumps(RECALL) + "\n").encode())
    proc.stdin.close()
    assert proc.wait(30) == 0
    assert b"internal error" not in proc.stderr.read()
