"""The built-in reply and pipeline/outbox/: her replies handed to the host, taken and
acknowledged through the installed `anima outbox` in other processes, and over MCP."""

import json
import os
import subprocess
import time

import anyio
import pytest

from conftest import NOW, act, wait_until, write_hook


def anima(anima_bin, home, *args, input=None, timeout=60):
    env = {**os.environ, "ANIMA_HOME": str(home)}
    return subprocess.run([anima_bin, *args], env=env, input=input, capture_output=True, text=True, timeout=timeout)


def lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def outbox_files(home, part=""):
    d = home / "pipeline" / "outbox" / part
    return sorted(p.name for p in d.glob("*.json")) if d.exists() else []


@pytest.fixture
def inited(anima_bin, home):
    assert anima(anima_bin, home, "init", "--lang", "en").returncode == 0
    return home


def replies(anima_bin, home, n):
    """`n` replies decided and dispatched; their action ids."""
    names = [act(home, "reply", {"to": "Alice", "text": f"reply {i}", "scene": "chat",
                                 "cites": {"gen": 0, "lines": [1]}}) for i in range(n)]
    r = anima(anima_bin, home, "dispatch")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    return [n[:-len(".json")] for n in names]


def test_a_reply_with_no_hook_lands_in_the_outbox_and_another_process_drains_it(anima_bin, inited):
    [aid] = replies(anima_bin, inited, 1)
    mid = "out_" + aid.split("_", 1)[1]
    assert outbox_files(inited) == [mid + ".json"]
    r = anima(anima_bin, inited, "outbox")
    assert (r.returncode, r.stderr) == (0, "")
    [message] = lines(r.stdout)
    trace = message.pop("trace_id")
    assert message == {"id": mid, "to": "Alice", "text": "reply 0", "scene": "chat", "in_reply_to": None,
                       "at": NOW, "action": aid}
    assert trace == "trace_t1"  # the action's: the thread it answers
    # claimed: no one else gets it until it comes back
    assert outbox_files(inited) == [] and outbox_files(inited, "cur") == [mid + ".json"]
    assert anima(anima_bin, inited, "outbox").stdout == ""
    # the result tells what she did, and her deed is not an interruption
    [event] = [json.loads(p.read_text()) for p in (inited / "pipeline" / "inbox" / "pending").glob("*.json")]
    assert event["payload"]["result"] == {"outbox": mid}


def test_claim_and_acknowledge(anima_bin, inited):
    aids = replies(anima_bin, inited, 3)
    mids = ["out_" + a.split("_", 1)[1] for a in aids]
    first = lines(anima(anima_bin, inited, "outbox", "-n", "2").stdout)
    assert [m["id"] for m in first] == mids[:2]
    # the host crashed: not acknowledged, they come back on --requeue (or after --timeout)
    r = anima(anima_bin, inited, "outbox", "--requeue")
    assert (r.returncode, r.stdout) == (0, "") and r.stderr.count("back in the outbox") == 2
    again = lines(anima(anima_bin, inited, "outbox").stdout)
    assert [m["id"] for m in again] == mids
    assert anima(anima_bin, inited, "outbox", "--timeout", "0").stdout.count('"id"') == 3  # timed out at once
    # acknowledged: never given again, not after a requeue, not after any timeout
    r = anima(anima_bin, inited, "outbox", "--ack", mids[0], mids[1])
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    anima(anima_bin, inited, "outbox", "--requeue")
    assert [m["id"] for m in lines(anima(anima_bin, inited, "outbox", "--timeout", "0").stdout)] == [mids[2]]
    # ack from what `anima outbox` printed, on stdin; twice is fine
    r = anima(anima_bin, inited, "outbox", "--ack", input=json.dumps({"id": mids[2]}) + "\n" + mids[0] + "\n")
    assert (r.returncode, r.stderr) == (0, "")
    assert outbox_files(inited, "done") == sorted(m + ".json" for m in mids)
    assert anima(anima_bin, inited, "outbox", "--timeout", "0").stdout == ""
    # an id the outbox never had: exit 1, named; the others acknowledged all the same
    r = anima(anima_bin, inited, "outbox", "--ack", "out_nothing", mids[0])
    assert (r.returncode, r.stdout, r.stderr) == \
        (1, "", "anima: outbox: not in the outbox: out_nothing (the others are acknowledged)\n")


def test_an_ack_after_the_timeout_still_counts(anima_bin, inited):
    """A slow host acknowledges a message that already came back to the queue: it is done."""
    [aid] = replies(anima_bin, inited, 1)
    [message] = lines(anima(anima_bin, inited, "outbox").stdout)
    anima(anima_bin, inited, "outbox", "--requeue")
    assert anima(anima_bin, inited, "outbox", "--ack", message["id"]).returncode == 0
    assert anima(anima_bin, inited, "outbox", "--timeout", "0").stdout == ""


@pytest.mark.parametrize("args", [["out_1"], ["--ack", "--requeue"], ["--requeue", "-n", "1"], ["--ack", "-f"]])
def test_usage_errors(anima_bin, inited, args):
    r = anima(anima_bin, inited, "outbox", *args)
    assert (r.returncode, r.stdout) == (2, "") and len(r.stderr.strip().splitlines()) == 1


def test_two_racing_consumers_never_get_the_same_message(anima_bin, inited):
    aids = replies(anima_bin, inited, 40)
    env = {**os.environ, "ANIMA_HOME": str(inited)}
    # each takes one message a run, as fast as it can, until the outbox is empty for it
    script = f"while :; do out=$({anima_bin} outbox -n 1); [ -z \"$out\" ] && break; printf '%s\\n' \"$out\"; done"
    procs = [subprocess.Popen(["sh", "-c", script], env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    got = [lines(p.communicate(timeout=300)[0]) for p in procs]
    ids = [[m["id"] for m in g] for g in got]
    assert all(ids), "both consumers took messages"
    assert set(ids[0]).isdisjoint(ids[1])
    assert sorted(ids[0] + ids[1]) == sorted("out_" + a.split("_", 1)[1] for a in aids)


def test_follow_gives_each_message_as_it_arrives(anima_bin, inited):
    env = {**os.environ, "ANIMA_HOME": str(inited)}
    p = subprocess.Popen([anima_bin, "outbox", "-f"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)
        [aid] = replies(anima_bin, inited, 1)
        line = p.stdout.readline()
        assert json.loads(line)["action"] == aid
        wait_until(lambda: outbox_files(inited, "cur"), what="the claim")
    finally:
        p.terminate()
    assert p.wait(timeout=10) == 0


def test_a_hook_or_an_argv_for_reply_overrides_the_outbox(anima_bin, inited, tmp_path):
    write_hook(inited, "reply", f"#!/bin/sh\ncat > {tmp_path / 'hooked'}\n")
    replies(anima_bin, inited, 1)
    assert (tmp_path / "hooked").exists() and outbox_files(inited) == []
    os.remove(inited / "hooks" / "reply")
    out = tmp_path / "argv.txt"
    assert anima(anima_bin, inited, "config", "set", "dispatch.commands",
                 json.dumps({"reply": ["/bin/sh", "-c", f'printf "%s" "$1" > {out}', "sh", "{text}"]})).returncode == 0
    replies(anima_bin, inited, 1)
    assert out.read_text() == "reply 0" and outbox_files(inited) == []


def test_a_reply_needs_to_whom_and_what(anima_bin, inited):
    act(inited, "reply", {"text": "hi"})
    act(inited, "reply", {"to": "Alice", "text": "  "})
    assert anima(anima_bin, inited, "dispatch").returncode == 0
    reasons = sorted(json.loads(p.read_text())["why"] for p in (inited / "pipeline" / "dead_letter").glob("*.reason"))
    assert reasons == ["params.text must be a non-empty string", "params.to must say to whom (a non-empty string)"]
    assert outbox_files(inited) == []


def test_the_outbox_over_mcp(anima_bin, inited, tmp_path):
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    aids = replies(anima_bin, inited, 3)
    mids = ["out_" + a.split("_", 1)[1] for a in aids]
    server = StdioServerParameters(command=anima_bin, args=["mcp"], cwd=str(tmp_path),
                                   env={"ANIMA_HOME": str(inited), "ANIMA_NOW": NOW})

    async def body():
        with open(tmp_path / "mcp.stderr", "w") as errlog, anyio.fail_after(30):
            async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                listed = [t.name for t in (await s.list_tools()).tools]
                taken = await s.call_tool("outbox_take", {"limit": 2})
                empty_for_others = anima(anima_bin, inited, "outbox", "-n", "1").stdout  # the third
                acked = await s.call_tool("outbox_ack", {"ids": [m["id"] for m in
                                                                taken.structured_content["messages"]]})
                unknown = await s.call_tool("outbox_ack", {"ids": ["out_nothing"]})
                bad = await s.call_tool("outbox_take", {"limit": 0})
                return listed, taken, empty_for_others, acked, unknown, bad

    listed, taken, third, acked, unknown, bad = anyio.run(body)
    assert {"outbox_take", "outbox_ack"} <= set(listed)
    assert not taken.is_error
    assert [(m["id"], m["to"], m["text"]) for m in taken.structured_content["messages"]] == \
        [(mids[0], "Alice", "reply 0"), (mids[1], "Alice", "reply 1")]
    assert json.loads(third)["id"] == mids[2]  # a message taken over MCP is no one else's
    assert acked.structured_content == {"acknowledged": mids[:2]}
    assert unknown.is_error and unknown.structured_content["exit"] == 1
    assert bad.is_error and bad.structured_content == {"error": "outbox_take: 'limit' must be at least 1", "exit": 2}
    assert outbox_files(inited, "done") == sorted(m + ".json" for m in mids[:2])
    assert outbox_files(inited, "cur") == [mids[2] + ".json"]
