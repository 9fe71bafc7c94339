"""`anima hooks`: each host's snippet is in the host's documented format, and what it tells the
host to run works when a real shell (Claude Code's hooks) or a real MCP client (Codex, any MCP
host) runs it, with the environment those hosts give it."""

import json
import os
import re
import shutil
import subprocess
import tomllib

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from test_llm import Model

from conftest import NOW, snapshot

DIRECTION = "I answer in plain words and say when I am unsure."

# Claude Code's hook settings, as its hooks reference documents them: "hooks" maps an event
# to a list of matcher groups; a group has an optional "matcher" (a regex; for SessionStart
# over the sources below) and a non-empty "hooks" list of {"type": "command", "command": ...,
# "timeout": seconds (optional)}.
EVENTS = {"PreToolUse", "PostToolUse", "Notification", "UserPromptSubmit", "Stop", "SubagentStop",
          "PreCompact", "SessionStart", "SessionEnd"}
SESSION_SOURCES = {"startup", "resume", "clear", "compact"}


def settings_problems(settings) -> list[str]:
    """What makes `settings` not Claude Code hook settings ([] when it is)."""
    if not isinstance(settings, dict) or not isinstance(settings.get("hooks"), dict):
        return ["no \"hooks\" object"]
    problems = []
    for event, groups in settings["hooks"].items():
        if event not in EVENTS:
            problems.append(f"unknown event {event}")
        if not isinstance(groups, list):
            problems.append(f"{event}: not a list")
            continue
        for group in groups:
            if not isinstance(group, dict) or set(group) - {"matcher", "hooks"}:
                problems.append(f"{event}: a group with keys {sorted(group)}")
                continue
            matcher = group.get("matcher", "")
            if not isinstance(matcher, str):
                problems.append(f"{event}: matcher not a string")
            elif event == "SessionStart" and matcher and not set(matcher.split("|")) <= SESSION_SOURCES:
                problems.append(f"SessionStart: matcher {matcher!r} names no source")
            hooks = group.get("hooks")
            if not isinstance(hooks, list) or not hooks:
                problems.append(f"{event}: no hooks")
                continue
            for hook in hooks:
                if not isinstance(hook, dict) or hook.get("type") != "command" \
                        or not isinstance(hook.get("command"), str) or set(hook) - {"type", "command", "timeout"}:
                    problems.append(f"{event}: a hook {hook!r}")
    return problems


def test_the_shape_check_can_fail():
    assert settings_problems({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "x"}]}]}}) == []
    assert settings_problems({"SessionStart": []}) == ["no \"hooks\" object"]
    assert settings_problems({"hooks": {"SessionBegin": []}}) == ["unknown event SessionBegin"]
    assert settings_problems({"hooks": {"SessionStart": [{"matcher": "start", "hooks": [
        {"type": "command", "command": "x"}]}]}}) == ["SessionStart: matcher 'start' names no source"]
    assert settings_problems({"hooks": {"SessionStart": [{"hooks": [{"command": "x"}]}]}}) \
        == ["SessionStart: a hook {'command': 'x'}"]


@pytest.fixture
def her(anima_bin, home, tmp_path):
    """A home with a direction block, and a project with an AGENTS.md."""
    env = dict(os.environ, ANIMA_NOW=NOW)
    subprocess.run([anima_bin, "init", "--lang", "en"], env=env, check=True, capture_output=True)
    subprocess.run([anima_bin, "self", "set", "direction"], input=DIRECTION, text=True, env=env, check=True,
                   capture_output=True)
    project = tmp_path / "my project"  # a space: the command must quote the directory
    project.mkdir()
    (project / "AGENTS.md").write_text("# Rules\n\nRun the tests first.\n")
    return project


def hooks(anima_bin, *args, input=None):
    """`anima hooks ARGS` with this anima first on PATH: the one the snippet is to name."""
    env = dict(os.environ, PATH=os.path.dirname(anima_bin) + os.pathsep + os.environ["PATH"])
    return subprocess.run([anima_bin, "hooks", *args], capture_output=True, text=True, timeout=30,
                          env=env, input=input, cwd=os.path.dirname(os.environ["ANIMA_HOME"]))  # no AGENTS.md


def shell_env(**extra):
    """What a hook gets: the person's environment (PATH and HOME), and CLAUDE_PROJECT_DIR."""
    return {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "LANG": "C.UTF-8",
            "ANIMA_NOW": NOW, **extra}


def commands(settings, event):
    return [h["command"] for g in settings["hooks"][event] for h in g["hooks"]]


def test_claude_code_prints_hook_settings_of_the_documented_shape(anima_bin):
    r = hooks(anima_bin, "claude-code")
    assert (r.returncode, r.stderr) == (0, "")
    settings = json.loads(r.stdout)
    assert settings_problems(settings) == []
    assert list(settings["hooks"]) == ["SessionStart"]
    assert settings["hooks"]["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"
    assert commands(settings, "SessionStart") == [
        f'{anima_bin} prompt --cwd "$CLAUDE_PROJECT_DIR" || exit 1']

    both = json.loads(hooks(anima_bin, "claude-code", "--event", "UserPromptSubmit", "--event",
                            "SessionStart").stdout)
    assert settings_problems(both) == []
    assert list(both["hooks"]) == ["SessionStart", "UserPromptSubmit"]
    assert "matcher" not in both["hooks"]["UserPromptSubmit"][0]  # it has none to match


@pytest.mark.parametrize("shell", ["/bin/sh", "bash"])
def test_the_hook_command_prints_the_prompt_in_a_real_shell(anima_bin, home, her, shell):
    """Claude Code runs the command with the person's shell and environment: it prints exactly
    what `anima prompt --cwd` prints for the project, and exits 0."""
    if not shutil.which(shell):
        pytest.skip(f"no {shell}")
    command = commands(json.loads(hooks(anima_bin, "claude-code").stdout), "SessionStart")[0]
    want = subprocess.run([anima_bin, "prompt", "--cwd", str(her)], capture_output=True, text=True,
                          env=shell_env(ANIMA_HOME=str(home)), check=True).stdout
    assert DIRECTION in want and "Run the tests first." in want
    p = subprocess.run([shell, "-c", command], capture_output=True, text=True, timeout=30,
                       env=shell_env(ANIMA_HOME=str(home), CLAUDE_PROJECT_DIR=str(her)))
    assert (p.returncode, p.stdout, p.stderr) == (0, want, "")


def test_a_failed_anima_exits_1_with_nothing_on_stdout(anima_bin, home, her, tmp_path):
    """Exit 1 is Claude Code's non-blocking error: the person sees the one line, the session goes
    on without the context. Never anima's own 2 (a usage error), which on UserPromptSubmit would
    erase the person's prompt, nor 78."""
    command = commands(json.loads(hooks(anima_bin, "claude-code", "--event", "UserPromptSubmit").stdout),
                       "UserPromptSubmit")[0]
    gone = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30,
                          env=shell_env(ANIMA_HOME=str(home), CLAUDE_PROJECT_DIR=str(tmp_path / "gone")))
    assert (gone.returncode, gone.stdout) == (1, "")
    assert f"'{tmp_path / 'gone'}' does not exist" in gone.stderr  # (click's usage error, status 2)

    (home / "config.toml").write_text("this is = = not toml\n")
    broken = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30,
                            env=shell_env(ANIMA_HOME=str(home), CLAUDE_PROJECT_DIR=str(her)))
    assert (broken.returncode, broken.stdout) == (1, "")
    assert broken.stderr.startswith("anima: ") and "config.toml" in broken.stderr

    unset = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30,
                           env=shell_env(ANIMA_HOME=str(home)))  # CLAUDE_PROJECT_DIR unset: --cwd ""
    assert (unset.returncode, unset.stdout) == (1, "")


def test_home_and_sections_are_pinned_in_the_command(anima_bin, home, her):
    """With --home the hook finds her without ANIMA_HOME; --sections reaches `anima prompt`."""
    r = hooks(anima_bin, "claude-code", "--home", str(home), "--sections", "self")
    command = commands(json.loads(r.stdout), "SessionStart")[0]
    p = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=30,
                       env=shell_env(CLAUDE_PROJECT_DIR=str(her)))
    assert p.returncode == 0, p.stderr
    assert DIRECTION in p.stdout and "Run the tests first." not in p.stdout

    (her / "a file").write_text("")
    nowhere = hooks(anima_bin, "claude-code", "--home", str(her / "a file" / "home"))
    assert nowhere.returncode == 0 and settings_problems(json.loads(nowhere.stdout)) == []
    assert nowhere.stderr.startswith("anima: warning: cannot tell how long the prompt is: ")  # the hook will say

    bad = hooks(anima_bin, "claude-code", "--sections", "self,bogus")
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr == "anima: --sections: unknown section 'bogus'; " \
        "sections: self, notes, profile, conclusions, habits, project\n"


def test_merge_adds_the_hooks_once_and_keeps_the_rest(anima_bin, tmp_path):
    path = tmp_path / "settings.json"
    mine = {"model": "opus", "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "date"}]}],
                                       "Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}
    path.write_text(json.dumps(mine))
    once = hooks(anima_bin, "claude-code", "--event", "SessionStart", "--event", "UserPromptSubmit",
                 "--merge", str(path))
    assert once.returncode == 0, once.stderr
    merged = json.loads(once.stdout)
    assert settings_problems(merged) == []
    assert merged["model"] == "opus" and merged["hooks"]["Stop"] == mine["hooks"]["Stop"]
    assert commands(merged, "SessionStart")[0] == "date"
    assert len(commands(merged, "SessionStart")) == 2 and len(commands(merged, "UserPromptSubmit")) == 1
    path.write_text(once.stdout)
    twice = hooks(anima_bin, "claude-code", "--event", "SessionStart", "--event", "UserPromptSubmit",
                  "--merge", "-", input=once.stdout)
    assert json.loads(twice.stdout) == merged
    assert json.loads(path.read_text()) == merged  # printed, never written

    fresh = hooks(anima_bin, "claude-code", "--merge", str(tmp_path / "none.json"))
    assert json.loads(fresh.stdout) == json.loads(hooks(anima_bin, "claude-code").stdout)

    path.write_text("{not json")
    bad = hooks(anima_bin, "claude-code", "--merge", str(path))
    assert (bad.returncode, bad.stdout) == (65, "")
    assert bad.stderr.startswith(f"anima: hooks claude-code --merge {path}: ")
    path.write_text('{"hooks": []}')
    assert hooks(anima_bin, "claude-code", "--merge", str(path)).returncode == 65


def test_no_anima_on_path_is_a_usage_error(run, home):
    r = run("hooks", "mcp", env={"PATH": ""})
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == "anima: hooks: no `anima` on PATH to point the host at: give --anima PATH\n"
    given = run("hooks", "mcp", "--anima", "/opt/anima/bin/anima", env={"PATH": ""})
    assert json.loads(given.stdout)["mcpServers"]["anima"]["command"] == "/opt/anima/bin/anima"


async def _first_blocks(server: StdioServerParameters) -> str:
    with anyio.fail_after(20):
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("get_self_blocks", {})
            return " ".join(c.text for c in result.content)


def serve_as(command: str, args: list[str], cwd) -> str:
    """What get_self_blocks answers when a real MCP client starts the server as the snippet says,
    with only PATH and HOME in its environment (no ANIMA_HOME: Codex and Claude Desktop pass a
    server a few variables and no others)."""
    server = StdioServerParameters(command=command, args=args, cwd=str(cwd),
                                   env={"PATH": os.environ["PATH"], "HOME": str(cwd), "ANIMA_NOW": NOW})
    return anyio.run(_first_blocks, server)


def test_codex_prints_a_config_toml_table_that_starts_her(anima_bin, home, her, tmp_path):
    r = hooks(anima_bin, "codex")
    assert (r.returncode, r.stderr) == (0, "")
    config = tomllib.loads(r.stdout)
    assert config == {"mcp_servers": {"anima": {"command": anima_bin, "args": ["--home", str(home), "mcp"]}}}
    server = config["mcp_servers"]["anima"]
    assert DIRECTION in serve_as(server["command"], server["args"], tmp_path)

    other = tomllib.loads(hooks(anima_bin, "codex", "--home", "~/elsewhere").stdout)
    assert other["mcp_servers"]["anima"]["args"] == ["--home", os.path.expanduser("~/elsewhere"), "mcp"]


def test_mcp_prints_the_mcp_servers_json_that_starts_her(anima_bin, home, her, tmp_path):
    r = hooks(anima_bin, "mcp")
    assert (r.returncode, r.stderr) == (0, "")
    entry = json.loads(r.stdout)
    assert list(entry) == ["mcpServers"] and list(entry["mcpServers"]) == ["anima"]
    server = entry["mcpServers"]["anima"]
    assert set(server) == {"command", "args"} and os.path.isabs(server["command"])
    assert DIRECTION in serve_as(server["command"], server["args"], tmp_path)


def test_the_hosts_page_shows_what_the_commands_print(anima_bin):
    """anima-hosts(7)'s MCP line puts the name first, as `claude mcp add` wants it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "man", "anima-hosts.7"), encoding="utf-8") as f:
        page = f.read().replace("\\-", "-").replace("\\e", "\\")
    assert re.search(r"claude mcp add anima (--env ANIMA_HOME=\S+ )?-- anima mcp", page)
    assert "claude mcp add --env" not in page
    from anima.host import recipes

    assert json.loads(example('{"type": "command"'))["command"] == recipes.prompt_command("/usr/local/bin/anima",
                                                                                          None, None)


# the recipes of anima-hosts(7), run as the page prints them -----------------------------------

def example(starts: str) -> str:
    """The EXAMPLES block of anima-hosts(7) that starts with `starts`, as the reader sees it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "man", "anima-hosts.7"), encoding="utf-8") as f:
        page = f.read()
    for block in re.findall(r"^\.EX\n(.*?)^\.EE\n", page, re.M | re.S):
        text = block.replace("\\(aq", "'").replace("\\-", "-").replace("\\&", "").replace("\\e", "\\")
        if text.startswith(starts):
            return text
    raise AssertionError(f"anima-hosts(7) has no example starting {starts!r}")


def test_the_codex_function_writes_the_prompt_where_codex_reads_it(anima_bin, home, her, tmp_path):
    """The page's codex() wrapper: the prompt, with the person's own ~/.codex/AGENTS.md as its
    project section, is in AGENTS.override.md when Codex starts; when anima fails, no override
    is left and Codex starts on the person's own file."""
    person = tmp_path / "person"
    (person / ".codex").mkdir(parents=True)
    (person / ".codex" / "AGENTS.md").write_text("# Mine\n\nAlways use tabs.\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "codex").write_text('#!/bin/sh\necho "codex $*"\ncat ~/.codex/AGENTS.override.md 2>/dev/null '
                                   '|| echo "no override"\n')
    (bin_dir / "codex").chmod(0o755)
    env = shell_env(HOME=str(person), ANIMA_HOME=str(home),
                    PATH=f"{bin_dir}:{os.path.dirname(anima_bin)}:{os.environ['PATH']}")
    script = example("codex() {") + 'cd "$1" && codex --model x\n'
    want = subprocess.run([anima_bin, "prompt", "--cwd", str(person / ".codex")], capture_output=True,
                          text=True, env=env, check=True).stdout
    assert DIRECTION in want and "Always use tabs." in want
    p = subprocess.run(["bash", "-c", script, "bash", str(her)], capture_output=True, text=True, env=env, timeout=30)
    assert (p.returncode, p.stdout, p.stderr) == (0, "codex --model x\n" + want, "")

    (home / "config.toml").write_text("not = = toml\n")
    p = subprocess.run(["bash", "-c", script, "bash", str(her)], capture_output=True, text=True, env=env, timeout=30)
    assert (p.returncode, p.stdout) == (0, "codex --model x\nno override\n")
    assert p.stderr.startswith("anima: ")
    assert sorted(os.listdir(person / ".codex")) == ["AGENTS.md"]


def test_the_python_chat_loop_runs_against_an_openai_compatible_endpoint(anima_bin, home, her):
    """The page's loop with the real openai SDK: the prompt is the system message, the tools are
    `anima tools --json`, a tool call's result goes back to the model, and both turns are recorded."""
    model = Model()  # test_llm's endpoint: a tool call first, then a plain answer
    model.script += [{"message": {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call_1", "type": "function", "function": {"name": "get_self_blocks", "arguments": "{}"}}]}},
        {"content": "Hello back."}]
    env = shell_env(ANIMA_HOME=str(home), OPENAI_BASE_URL=model.url, OPENAI_API_KEY="sk-test",
                    PATH=os.path.dirname(anima_bin) + os.pathsep + os.environ["PATH"])
    try:
        p = subprocess.run([os.path.join(os.path.dirname(anima_bin), "python"), "-c", example("import json")],
                           input="Hi, it's Alice.\nquit\n", cwd=her, capture_output=True, text=True, env=env,
                           timeout=60)
    finally:
        model.server.shutdown()
        model.server.server_close()
    assert (p.returncode, p.stdout, p.stderr) == (0, "Hello back.\n", "")
    first, second = (r["body"] for r in model.requests)
    assert [r["path"] for r in model.requests] == ["/v1/chat/completions"] * 2
    prompt = subprocess.run([anima_bin, "prompt", "--cwd", str(her)], capture_output=True, text=True, env=env,
                            check=True).stdout
    assert first["messages"] == [{"role": "system", "content": prompt}, {"role": "user", "content": "Hi, it's Alice."}]
    tools = subprocess.run([anima_bin, "tools", "--json"], capture_output=True, text=True, check=True).stdout
    assert first["tools"] == json.loads(tools)
    tool = second["messages"][-1]
    assert tool["role"] == "tool" and tool["tool_call_id"] == "call_1" and DIRECTION in tool["content"]
    [session] = [n for n in os.listdir(home / "sessions") if n.endswith(".jsonl")]
    turns = [json.loads(line) for line in (home / "sessions" / session).read_text().splitlines()][1:]
    assert [(t.get("role"), t.get("text", t.get("content"))) for t in turns] == \
        [("user", "Hi, it's Alice."), ("assistant", "Hello back.")]


def test_a_prompt_over_claude_codes_limit_is_warned_of_and_nothing_is_written(anima_bin, home, her):
    """Claude Code shows the model a preview of hook output over 10,000 characters: printing the
    hooks in a project whose prompt is longer says so on stderr, and looking writes nothing."""
    (her / "AGENTS.md").write_text("# Rules\n\n" + "Run the tests first, then read the diff again.\n" * 250)
    before = snapshot(home)
    p = subprocess.run([anima_bin, "hooks", "claude-code"], cwd=her, capture_output=True, text=True,
                       env=dict(os.environ, ANIMA_NOW=NOW), timeout=30)
    assert p.returncode == 0 and settings_problems(json.loads(p.stdout)) == []
    assert snapshot(home) == before and not (home / "cache" / "prompt").exists()  # no injection, no cache
    chars = len(subprocess.run([anima_bin, "prompt"], cwd=her, capture_output=True, text=True,
                               env=dict(os.environ, ANIMA_NOW=NOW), check=True).stdout)
    assert chars > 10_000
    assert p.stderr == f"anima: warning: the prompt for {her} is {chars} characters; Claude Code gives the " \
        "model a preview of hook output over 10000 (see anima-hosts(7))\n"

    short = subprocess.run([anima_bin, "hooks", "claude-code", "--sections", "self"], cwd=her,
                           capture_output=True, text=True, env=dict(os.environ, ANIMA_NOW=NOW), timeout=30)
    assert (short.returncode, short.stderr) == (0, "")
