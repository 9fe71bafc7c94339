import json
import os

import click

from anima.commands._io import out, read_input, warn

ANIMA = click.option("--anima", "anima", metavar="PATH",
                     help="The anima the host runs.  [default: `anima` on PATH, made absolute]")


@click.group("hooks")
def cli():
    """Print what a host's settings need to run anima: one subcommand per host.

    Each prints the host's own format on stdout and writes nothing: the person puts it
    where the host reads it. anima-hosts(7) has the whole recipe for each host.
    """


@cli.command("claude-code")
@click.option("--event", "events", multiple=True, type=click.Choice(["SessionStart", "UserPromptSubmit"]),
              help="Hook event that runs `anima prompt`; repeatable.  [default: SessionStart]")
@ANIMA
@click.option("--home", metavar="DIR", help="Pin this home in the command.  [default: none: the hook's "
              "environment decides, ANIMA_HOME or ~/.anima]")
@click.option("--sections", metavar="LIST", help="Sections the hook prints, passed to `anima prompt`.  "
              "[default: prompt.sections]")
@click.option("--merge", metavar="FILE", help="Print FILE, a settings.json (`-`: stdin; missing: {}), with "
              "these hooks added; hooks already there are kept, and these are not added twice.")
@click.pass_obj
def claude_code(home_obj, events, anima, home, sections, merge):
    """Print the hooks of a Claude Code settings.json that put `anima prompt` into the context.

    A SessionStart hook (on startup, resume, clear and compact) runs `anima prompt --cwd
    "$CLAUDE_PROJECT_DIR"`; what it prints becomes context. A failed anima exits 1 there:
    Claude Code shows its error and the session goes on without it.
    """
    from anima.host import prompt, recipes
    from anima.infra.errors import DataError
    from anima.infra.home import Home

    names = prompt.section_names(sections)  # refuse a bad list here, not at every session's start
    recipe = recipes.claude_code(recipes.anima_path(anima), home, events or ("SessionStart",), sections)
    too_long(home_obj if home is None else Home(os.path.expanduser(home)), names)
    if merge is not None:
        missing = merge != "-" and not os.path.lexists(merge)  # a settings.json not yet written
        raw = "" if missing else read_input(None if merge == "-" else merge, 16 * 1024 * 1024,
                                            "hooks --merge", "as a file or `-` for stdin")
        try:
            recipe = recipes.merge(json.loads(raw) if raw.strip() else {}, recipe)
        except ValueError as e:  # (a JSONDecodeError is one)
            raise DataError(f"hooks claude-code --merge {merge}: {e}") from None
    out(json.dumps(recipe, ensure_ascii=False, indent=2) + "\n")


def too_long(home, names) -> None:
    """Warn when the prompt for this directory is longer than Claude Code shows the model whole."""
    from anima.host import recipes
    from anima.infra import clock
    from anima.infra.errors import AnimaError

    try:
        chars = recipes.prompt_chars(home, os.getcwd(), names, clock.now())
    except (AnimaError, OSError) as e:  # the hook says so at each session's start; the snippet is right
        warn(f"warning: cannot tell how long the prompt is: {e}")
        return
    if chars > recipes.CLAUDE_CODE_CONTEXT_CHARS:
        warn(f"warning: the prompt for {os.getcwd()} is {chars} characters; Claude Code gives the model "
             f"a preview of hook output over {recipes.CLAUDE_CODE_CONTEXT_CHARS} (see anima-hosts(7))")


PINNED = ("Pin this home in the command.  [default: the home this anima uses: these hosts pass a "
          "server only a few environment variables, not ANIMA_HOME]")


@cli.command("codex")
@ANIMA
@click.option("--home", metavar="DIR", help=PINNED)
@click.pass_obj
def codex(home_obj, anima, home):
    """Print the [mcp_servers.anima] table of Codex's ~/.codex/config.toml."""
    from anima.host import recipes

    out(recipes.codex_toml(recipes.anima_path(anima), home or home_obj.root))


@cli.command("mcp")
@ANIMA
@click.option("--home", metavar="DIR", help=PINNED)
@click.pass_obj
def mcp(home_obj, anima, home):
    """Print the mcpServers JSON of an MCP host (Claude Desktop, Cursor, a .mcp.json)."""
    from anima.host import recipes

    out(json.dumps(recipes.mcp_servers(recipes.anima_path(anima), home or home_obj.root),
                   ensure_ascii=False, indent=2) + "\n")
