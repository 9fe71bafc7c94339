"""The `anima` command: the root group and a lazy map of subcommands, nothing more.

A subcommand's module is imported only when that subcommand runs, so `anima prompt` never
pays for what `anima recall` needs. The one-line help for `anima --help` is kept here for
the same reason.
"""

import importlib
import os
import sys

import click

from anima import __version__
from anima.infra.errors import DATAERR, ending, line

# name -> (module:attribute, one-line help)
COMMANDS = {
    "init": ("anima.commands.init:cli", "Lay out the home: directories, config.toml, six starter blocks."),
    "config": ("anima.commands.config:cli", "Get, set and list settings in config.toml."),
    "self": ("anima.commands.self_:cli", "Read and change the six self blocks; every version is kept."),
    "note": ("anima.commands.note:cli",
             "Self-notes: add, list, heat, status, config, importance, inject, clear, archive."),
    "recall": ("anima.commands.recall:cli", "Search the transcripts: what was really said, and where."),
    "stage": ("anima.commands.facts:stage", "Propose a fact about the person from a real turn (a candidate)."),
    "facts": ("anima.commands.facts:facts", "List facts about the person: candidates, approved, retired."),
    "approve": ("anima.commands.facts:approve", "Approve facts (a person's decision): they enter the prompt."),
    "retire": ("anima.commands.facts:retire", "Retire facts: kept on record, never injected again."),
    "profile": ("anima.commands.facts:profile", "What I know about the person: a view over approved facts."),
    "habits": ("anima.commands.facts:habits", "Habits: tags a person promoted, and suggestions."),
    "tools": ("anima.commands.tools:tools", "The agent's tools as function-calling schemas (OpenAI, Anthropic)."),
    "call": ("anima.commands.tools:call", "Run one agent tool: arguments JSON on stdin, result JSON out."),
    "hooks": ("anima.commands.hooks:cli", "Print the settings a host needs to run anima: Claude Code, Codex, MCP."),
    "mcp": ("anima.commands.mcp:cli", "Serve the agent's tools and the prompt to an MCP host (stdio or HTTP)."),
    "index": ("anima.commands.index:cli", "The recall index: rebuild, update, status, on, off, verify."),
    "say": ("anima.commands.pipeline:say", "Put an event in the inbox: what someone said, or any event."),
    "preprocess": ("anima.commands.pipeline:preprocess", "Move waiting events into message_queue, one envelope."),
    "tick": ("anima.commands.tick:cli", "The heartbeat for cron: rhythm, the loop, roll, index, the night."),
    "dispatch": ("anima.commands.pipeline:dispatch", "Carry out waiting actions; each result becomes an event."),
    "outbox": ("anima.commands.outbox:cli", "Take her replies for the host to send (NDJSON); --ack when sent."),
    "metrics": ("anima.commands.pipeline:metrics", "How Pool B is doing: queues, events, dispatch, model calls."),
    "route": ("anima.commands.pipeline:route", "Move files between queues by the topology in config.toml."),
    "queue": ("anima.commands.queue:cli", "Look into Pool B's queues; replay dead letters."),
    "session": ("anima.commands.session:cli", "Record turns for hosts that keep no transcripts of their own."),
    "think": ("anima.commands.stream:think", "Append my own first-person thought to the self-stream."),
    "internalize": ("anima.commands.internalize:cli", "Turn waiting events into my first-person experience in now.md."),
    "externalize": ("anima.commands.externalize:cli", "Turn my own decisions in now.md into cited actions."),
    "stream": ("anima.commands.stream:stream", "Print the self-stream (now.md): its tail, -f to follow; roll it."),
    "state": ("anima.commands.stream:state", "Show or replace my current state (self/state.md)."),
    "memories": ("anima.commands.stream:memories", "List, show and search my memories (self/memories/)."),
    "diary": ("anima.commands.stream:diary", "Print my diary of a day, or list its days."),
    "import-history": ("anima.commands.import_history:cli",
                       "Migrate an old user/assistant history.json into my stream's archive."),
    "export": ("anima.commands.portable:export", "Write the whole self as one archive (zstd tar with a manifest)."),
    "import": ("anima.commands.portable:import_cmd", "Make a home from an export, verified before anything lands."),
    "why": ("anima.commands.why:cli", "What the agent was told at a moment, and where each piece came from."),
    "verify": ("anima.commands.trust:verify", "Re-derive every source hash: orphans, drift, stale derivations."),
    "check": ("anima.commands.trust:check", "Property checks over the whole home, for cron and CI."),
    "consolidate": ("anima.commands.consolidate:cli", "Nightly: archive the day; distil memories, my autobiography."),
    "doctor": ("anima.commands.doctor:cli", "Is this home healthy and wired? OK, WARN or FAIL, with the fix."),
    "forget": ("anima.commands.forget:cli", "Remove a source and all derived from it; keep a tombstone."),
    "prompt": ("anima.commands.prompt:cli", "Print the system-prompt injection for this turn."),
}

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class AnimaGroup(click.Group):
    """Turns anima's errors into one line on stderr and the documented exit status."""

    def resolve_command(self, ctx, args):
        """Also note the command's path: the commit message of git.autocommit names it."""
        name, cmd, rest = super().resolve_command(ctx, args)
        path, sub = [name], cmd
        while isinstance(sub, click.Group) and rest and rest[0] in sub.commands:
            path.append(rest[0])
            sub, rest = sub.commands[rest[0]], rest[1:]
        ctx.meta["anima.path"] = path
        return name, cmd, args[1:]

    def parse_args(self, ctx, args):
        """Refuse an argument that is not UTF-8 before any command sees it: every file anima
        writes is UTF-8, and such a string cannot be written to one."""
        from anima.infra.text import undecodable

        for number, arg in enumerate(args, 1):
            shown = undecodable(arg)
            if shown is not None:
                fail(f"argument {number} '{shown}': not valid UTF-8; anima takes UTF-8 text", DATAERR)
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        if "anima.infra.fs" in sys.modules:  # one process may run many commands (tests, the MCP server)
            sys.modules["anima.infra.fs"].CHANGED.clear()
            sys.modules["anima.infra.fs"].WENT_WITHOUT.clear()
        try:
            try:
                result = super().invoke(ctx)
            except BrokenPipeError:
                from anima.commands.fast import reader_gone

                result = reader_gone()
            # inside the handler: whatever escapes the commit (a bug) is one line and 70, never
            # a traceback with click's 1
            _autocommit(ctx)
            _went_without()  # (a command that failed says only why)
        except (click.exceptions.Exit, click.ClickException, click.Abort, KeyboardInterrupt):
            raise
        except Exception as e:  # anima's errors, refused file operations (73, 74), bugs (70)
            if os.environ.get("ANIMA_DEBUG") == "1":
                raise
            fail(*ending(e))
        return result


def _went_without() -> None:
    """Say once that a cache was done without (a link in its place): the command worked, and
    a person may want to know why it was slower."""
    fs = sys.modules.get("anima.infra.fs")
    if fs is not None and fs.WENT_WITHOUT:
        click.echo(fs.went_without_warning(), err=True)


def _autocommit(ctx) -> None:
    """git.autocommit: commit what the command changed, when the home is a git work tree."""
    if ctx.obj is not None and "anima.path" in ctx.meta and ctx.meta["anima.path"][0] != "prompt" \
            and os.path.exists(os.path.join(ctx.obj.root, ".git")):  # one stat: the hot path pays no more
        from anima.infra import git

        git.after(ctx.obj, ctx.meta["anima.path"], ctx.meta.get("anima.commit"),
                  lambda m: click.echo(f"anima: {m}", err=True))


def fail(message: str, code: int):
    click.echo(line(message), err=True)
    sys.exit(code)


class LazyGroup(AnimaGroup):
    def __init__(self, *args, lazy: dict, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx, name):
        if name in self.lazy:
            module, attr = self.lazy[name][0].split(":")
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)

    def format_commands(self, ctx, formatter):
        rows = [(name, self.lazy[name][1]) for name in self.list_commands(ctx) if name in self.lazy]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings=CONTEXT_SETTINGS)
@click.option("--home", metavar="DIR", envvar="ANIMA_HOME", show_envvar=True,
              help="The anima home.  [default: ~/.anima]")
@click.version_option(__version__, "--version", prog_name="anima", message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx, home):
    """anima: a persistent first-person self for an LLM agent, kept in plain files.

    Every command reads and writes files under the home; `anima prompt` prints what a host
    puts into its system prompt each turn. See anima(1).
    """
    from anima.infra.home import Home, default_root
    from anima.infra.text import undecodable

    if home and undecodable(home) is not None:  # from ANIMA_HOME (an argument was checked already)
        fail(f"ANIMA_HOME '{undecodable(home)}': not valid UTF-8; anima takes UTF-8 paths", DATAERR)
    os.umask(0o077)  # everything anima creates is the user's alone: dirs 0700, files 0600
    ctx.obj = Home(home or default_root())
    ctx.obj.check()


def main():
    cli(prog_name="anima")
