"""What a host's own settings file needs to run anima: `anima hooks HOST` prints it.

Each recipe is the host's format, built as data and serialized by the host's rules, so a
snippet is never a string pasted together: Claude Code's hook settings (JSON), Codex's
`[mcp_servers.anima]` table (TOML) and the `mcpServers` entry most MCP hosts read (JSON).
anima-hosts(7) says why each is what it is.
"""

import os
import shlex
import shutil
import sys

from anima.infra.errors import UsageError

# Claude Code's SessionStart sources: a new session, `--resume`, `/clear`, and after a
# compaction (which drops what the start put in): the self is put back each time.
SESSION_START_MATCHER = "startup|resume|clear|compact"
EVENTS = ("SessionStart", "UserPromptSubmit")
# Claude Code puts hook output longer than this in a file and gives the model a preview of it
# (its hooks reference): a prompt over it would reach the model cut.
CLAUDE_CODE_CONTEXT_CHARS = 10_000


def anima_path(given: str | None = None, which=shutil.which, argv0: str | None = None) -> str:
    """The absolute path of the anima a host should run: the one given, else `anima` on
    PATH, else this very program when it is called anima.

    Absolute, because a host starts hooks and servers from its own directory and may not
    have the PATH the person's shell has."""
    if given:
        return os.path.abspath(os.path.expanduser(given))
    found = which("anima")
    if found:
        return os.path.abspath(found)
    argv0 = sys.argv[0] if argv0 is None else argv0
    if os.path.basename(argv0) == "anima" and os.access(argv0, os.X_OK):
        return os.path.abspath(argv0)
    raise UsageError("hooks: no `anima` on PATH to point the host at: give --anima PATH")


def argv(anima: str, home: str | None, *args: str) -> list[str]:
    """anima's command line, with the home pinned when one is given."""
    pinned = ["--home", os.path.abspath(os.path.expanduser(home))] if home else []
    return [anima, *pinned, *args]


def prompt_command(anima: str, home: str | None, sections: str | None) -> str:
    """The shell command of the hook: `anima prompt` for the session's project directory.

    Claude Code runs it with its shell; exit 0 puts stdout into the context. Any failure
    becomes status 1, a non-blocking error: Claude Code shows anima's one line of stderr and
    goes on without the context. anima's own 2 (a usage error) would be exit 2, which on
    UserPromptSubmit erases the person's prompt: a failed anima must never do that."""
    words = argv(anima, home, "prompt")
    if sections:
        words += ["--sections", sections]
    return " ".join(map(shlex.quote, words)) + ' --cwd "$CLAUDE_PROJECT_DIR" || exit 1'


def claude_code(anima: str, home: str | None, events, sections: str | None) -> dict:
    """The `hooks` settings of .claude/settings.json (or ~/.claude/settings.json)."""
    hook = {"type": "command", "command": prompt_command(anima, home, sections)}
    hooks = {}
    for event in EVENTS:
        if event in events:
            group = {"matcher": SESSION_START_MATCHER} if event == "SessionStart" else {}
            hooks[event] = [{**group, "hooks": [dict(hook)]}]
    return {"hooks": hooks}


def prompt_chars(home, cwd: str, names: list[str] | None, now: float) -> int:
    """How long `anima prompt --cwd CWD` is now, found with none of its side effects (no cache
    entry, no injection counted, no log line): this only looks."""
    from anima.host import prompt

    made, _ = prompt.fresh(home, os.path.abspath(cwd), None, names, now, os.environ, freeze=False)
    return len(made.text)


def merge(settings: dict, recipe: dict) -> dict:
    """`settings` with the recipe's hook groups added to each event's list; a group whose
    commands are there already is not added twice, and every other key is kept."""
    if not isinstance(settings, dict) or not isinstance(settings.get("hooks", {}), dict):
        raise ValueError("not a settings object with a \"hooks\" object")
    out = dict(settings)
    hooks = dict(out.get("hooks", {}))
    for event, groups in recipe["hooks"].items():
        present = hooks.get(event, [])
        if not isinstance(present, list):
            raise ValueError(f"hooks.{event} is not a list")
        have = {h.get("command") for g in present if isinstance(g, dict)
                for h in g.get("hooks", []) if isinstance(h, dict)}
        hooks[event] = present + [g for g in groups if not {h["command"] for h in g["hooks"]} <= have]
    out["hooks"] = hooks
    return out


def mcp_server(anima: str, home: str | None) -> dict:
    """One stdio server entry: command and args, as Claude Desktop, Cursor, Claude Code's
    .mcp.json and most MCP hosts take it."""
    command, *args = argv(anima, home, "mcp")
    return {"command": command, "args": args}


def mcp_servers(anima: str, home: str | None) -> dict:
    return {"mcpServers": {"anima": mcp_server(anima, home)}}


def codex_toml(anima: str, home: str | None) -> str:
    """Codex's ~/.codex/config.toml table for the MCP server, as TOML."""
    from anima.infra.config import toml_value  # the one TOML writer

    server = mcp_server(anima, home)
    return f"[mcp_servers.anima]\ncommand = {toml_value(server['command'])}\nargs = {toml_value(server['args'])}\n"
