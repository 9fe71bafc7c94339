"""`anima mcp --http`: the installed binary serving Streamable HTTP in a real process on a free
port, driven by the official SDK's own client (streamable_http_client), next to the same
session over stdio (test_mcp.serve)."""

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import urllib.error
import urllib.request

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from test_mcp import SENTENCE, anima
from test_mcp import serve as over_stdio

from conftest import snapshot, wait_until

STDIO_NOW = "2026-11-30T10:00:00Z"  # the clock test_mcp.serve gives its server
TOKEN = "9f2c4e7a1b8d3f6e0a5c2b7d4e1f8a3c"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}


@contextlib.contextmanager
def http_server(anima_bin, tmp_path, *args, env=None, address="127.0.0.1:0"):
    """`anima mcp --http 127.0.0.1:0` running; yields (process, URL, stderr file). Stops it with
    SIGTERM and asserts it ended with 0 and said nothing but the serving line."""
    env = dict(os.environ, ANIMA_MCP_TOKEN=TOKEN) if env is None else env
    errlog = tmp_path / "http.stderr"
    with open(errlog, "w") as err:
        proc = subprocess.Popen([anima_bin, "mcp", "--http", address, *args], cwd=tmp_path, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        said = wait_until(lambda: re.search(r"serving (http://\S+)", errlog.read_text()) or proc.poll() is not None,
                          what="the serving line")
        assert proc.poll() is None, errlog.read_text()
        yield proc, said.group(1), errlog
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0, errlog.read_text()
        assert proc.stdout.read() == ""  # stdout is not the protocol here, and stays empty


async def http_session_run(url, token, body):
    with anyio.fail_after(20):
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as client, \
                streamable_http_client(url, http_client=client) as (read, write), \
                ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "anima"
            return await body(session)


def over_http(url, body, token=TOKEN):
    return anyio.run(http_session_run, url, token, body)


def post(url, headers, payload) -> tuple[int, dict, str]:
    """A raw JSON-RPC POST: status, headers, body (for what a client library would hide)."""
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def make_home(anima_bin, root):
    """A home made through the CLI, the same way each time (the clock is fixed)."""
    env = dict(os.environ, ANIMA_HOME=str(root))
    for args in (["init", "--lang", "en"], ["session", "append", "--session", "s2", "--role", "user", SENTENCE]):
        subprocess.run([anima_bin, *args], env=env, check=True, capture_output=True, timeout=30)
    return env


async def the_session(s):
    """The calls a host makes, as plain data to compare across transports."""
    def dump(x):
        return x.model_dump(mode="json", exclude_none=True)

    return {
        "tools": dump(await s.list_tools()),
        "recall": dump(await s.call_tool("memory_recall", {"terms": ["barley"]})),
        "note": dump(await s.call_tool("self_note", {"text": "I check the transcripts before I answer."})),
        "refused": dump(await s.call_tool("self_note", {"text": "The user lives at alice@example.com."})),
        "block": dump(await s.call_tool("update_self_block", {"key": "direction", "body": "Focus: MCP over HTTP."})),
        "resources": dump(await s.list_resources()),
        "prompt": dump(await s.read_resource("anima://prompt")),
        "direction": dump(await s.read_resource("anima://self/direction")),
        "prompts": dump(await s.get_prompt("anima")),
    }


def test_the_same_session_over_stdio_and_http(anima_bin, tmp_path, monkeypatch):
    """Two homes made alike; one session over each transport: the same answers, the same files."""
    make_home(anima_bin, tmp_path / "a")
    monkeypatch.setenv("ANIMA_HOME", str(tmp_path / "a"))
    by_stdio, _ = over_stdio(anima_bin, tmp_path, the_session)

    http_env = make_home(anima_bin, tmp_path / "b")
    with http_server(anima_bin, tmp_path, env=dict(http_env, ANIMA_MCP_TOKEN=TOKEN, ANIMA_NOW=STDIO_NOW)) as (_, url, _):
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        by_http = over_http(url, the_session)

    def same(answers, root):  # a recall hit names the file it came from, in its own home
        return json.loads(json.dumps(answers).replace(str(root), "HOME"))

    assert same(by_http, tmp_path / "b") == same(by_stdio, tmp_path / "a")
    assert by_http["recall"]["structured_content"]["results"][0]["path"] == str(tmp_path / "b/sessions/s2.jsonl")
    assert by_http["note"]["is_error"] is False and by_http["refused"]["is_error"] is True
    assert "Focus: MCP over HTTP." in by_http["prompt"]["contents"][0]["text"]
    # the HTTP session wrote her files as the stdio one did
    for rel in ("notes/notes.md", "self/blocks/direction.md"):
        assert (tmp_path / "b" / rel).read_text() == (tmp_path / "a" / rel).read_text()
    listing = subprocess.run([anima_bin, "note", "list"], env=http_env, capture_output=True, text=True).stdout
    assert "I check the transcripts before I answer." in listing
    assert subprocess.run([anima_bin, "self", "get", "direction"], env=http_env, capture_output=True,
                          text=True).stdout == "Focus: MCP over HTTP.\n"


def test_no_token_no_call(anima_bin, tmp_path, home):
    """Without the right bearer token: 401 before the SDK sees the request, and nothing written."""
    anima(anima_bin, "init", "--lang", "en")
    before = snapshot(home)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "self_note", "arguments": {"text": "I was called without a token."}}}
    with http_server(anima_bin, tmp_path) as (_, url, errlog):
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {TOKEN}x"},
                        {"Authorization": TOKEN}, {"Authorization": f"Basic {TOKEN}"}):
            for payload in (INIT, call):
                status, answer_headers, body = post(url, headers, payload)
                assert status == 401, (headers, body)
                assert answer_headers["www-authenticate"].startswith("Bearer ")
                assert "resource_metadata" not in answer_headers["www-authenticate"]  # no OAuth to go looking for

        opened = []

        async def wrong(s):
            opened.append(s)

        try:
            over_http(url, wrong, token="wrong")
        except Exception as e:  # the SDK client's own failure, through its task groups
            while isinstance(e, ExceptionGroup) and len(e.exceptions) == 1:
                e = e.exceptions[0]
            assert isinstance(e, MCPError), repr(e)
        assert opened == [], "the SDK client got a session with a wrong token"
        assert snapshot(home) == before

        # the right token through the same door is answered (so the 401s above were the token's)
        status, _, body = post(url, {"Authorization": f"Bearer {TOKEN}"}, INIT)
        assert status == 200, body
        # and the token never shows in what the server prints
        assert TOKEN not in errlog.read_text()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_token_file_and_a_stop_with_a_session_open(anima_bin, tmp_path, stop):
    """--token-file (here stdin, `-`) instead of the environment; SIGTERM or ^C while a client
    still holds its session ends the server with 0 and nothing said but the serving line."""
    anima(anima_bin, "init", "--lang", "en")
    env = {k: v for k, v in os.environ.items() if k != "ANIMA_MCP_TOKEN"}
    errlog = tmp_path / "http.stderr"
    with open(errlog, "w") as err:
        proc = subprocess.Popen([anima_bin, "mcp", "--http", "127.0.0.1:0", "--token-file", "-"], cwd=tmp_path,
                                env=env, stdin=subprocess.PIPE, stderr=err, text=True)
    proc.stdin.write(f"{TOKEN}\n")
    proc.stdin.close()
    url = wait_until(lambda: re.search(r"serving (http://\S+)", errlog.read_text()), what="the serving line").group(1)

    answered = []

    async def body(s):
        answered.append(await s.call_tool("get_self_blocks", {}))
        proc.send_signal(stop)
        while proc.poll() is None:
            await anyio.sleep(0.02)

    with contextlib.suppress(Exception):  # the client, closing a session whose server has gone, may fail
        over_http(url, body)
    assert proc.wait(timeout=20) == 0
    [blocks] = answered
    assert not blocks.is_error and "direction" in json.dumps(blocks.structured_content)
    assert errlog.read_text() == f"anima: mcp: serving {url} (each request needs Authorization: Bearer TOKEN)\n"


def failing(anima_bin, tmp_path, *args, env=None):
    proc = subprocess.run([anima_bin, "mcp", *args], cwd=tmp_path, capture_output=True, text=True, timeout=30,
                          env=dict(os.environ, ANIMA_MCP_TOKEN=TOKEN) if env is None else env)
    assert proc.stdout == ""
    return proc.returncode, proc.stderr


def test_what_it_refuses_to_start_with(anima_bin, tmp_path, home):
    anima(anima_bin, "init", "--lang", "en")
    before = snapshot(home)
    no_token = {k: v for k, v in os.environ.items() if k != "ANIMA_MCP_TOKEN"}
    assert failing(anima_bin, tmp_path, "--http", "127.0.0.1:0", env=no_token) == (
        78, "anima: mcp: --http needs a bearer token: set ANIMA_MCP_TOKEN or give --token-file FILE\n")
    assert failing(anima_bin, tmp_path, "--http", "127.0.0.1:0", env=dict(no_token, ANIMA_MCP_TOKEN=" ")) == (
        78, "anima: mcp: --http needs a bearer token: set ANIMA_MCP_TOKEN or give --token-file FILE\n")
    (tmp_path / "empty").write_text("\n")
    assert failing(anima_bin, tmp_path, "--http", "127.0.0.1:0", "--token-file", str(tmp_path / "empty")) == (
        78, f"anima: mcp: {tmp_path / 'empty'} is empty: put the bearer token in it\n")
    code, err = failing(anima_bin, tmp_path, "--http", "0.0.0.0:0")
    assert code == 2 and err.startswith("anima: mcp: --http 0.0.0.0:0 is not a loopback address: ") \
        and "--allow-remote" in err and err.count("\n") == 1
    assert failing(anima_bin, tmp_path, "--http", "8765")[0] == 2
    assert failing(anima_bin, tmp_path, "--token-file", str(tmp_path / "empty"))[0] == 2  # without --http

    # a port in use: one line, 75, as for a lock another process holds
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert failing(anima_bin, tmp_path, "--http", f"127.0.0.1:{port}") == (
            75, f"anima: mcp: --http 127.0.0.1:{port}: address already in use (another server listens there; "
                "give another port, or port 0 for any free one)\n")
    assert snapshot(home) == before


def test_a_web_page_cannot_reach_it_by_another_name(anima_bin, tmp_path):
    """DNS rebinding: a request whose Host is not a loopback name is refused even with the token."""
    anima(anima_bin, "init", "--lang", "en")
    with http_server(anima_bin, tmp_path) as (_, url, _):
        status, _, _ = post(url, {"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"}, INIT)
        assert status == 421
        status, _, _ = post(url, {"Authorization": f"Bearer {TOKEN}", "Origin": "http://evil.example"}, INIT)
        assert status == 403


@pytest.mark.parametrize("address, shown", [("[::1]:0", "http://[::1]:"), ("localhost:0", "http://127.0.0.1:")])
def test_other_loopback_spellings(anima_bin, tmp_path, address, shown):
    anima(anima_bin, "init", "--lang", "en")
    with http_server(anima_bin, tmp_path, address=address) as (_, url, _):
        assert url.startswith(shown)

        async def body(s):
            return await s.call_tool("get_self_blocks", {})

        assert not over_http(url, body).is_error


def test_allow_remote_listens_beyond_loopback(anima_bin, tmp_path):
    """With --allow-remote any address, reached by any name (the token is then the only guard)."""
    anima(anima_bin, "init", "--lang", "en")
    with http_server(anima_bin, tmp_path, "--allow-remote", address="0.0.0.0:0") as (_, url, _):
        assert url.startswith("http://0.0.0.0:")
        port = url.split(":")[2].split("/")[0]
        there = f"http://127.0.0.1:{port}/mcp"
        assert post(there, {"Authorization": f"Bearer {TOKEN}", "Host": "anima.example"}, INIT)[0] == 200
        assert post(there, {"Host": "anima.example"}, INIT)[0] == 401
