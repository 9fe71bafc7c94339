import os
import sys

import click

from anima.commands._io import warn


@click.command("mcp")
@click.option("--cwd", metavar="DIR", type=click.Path(exists=True, file_okay=False),
              help="Directory whose AGENTS.md the prompt includes.  [default: the current directory]")
@click.pass_obj
def cli(home, cwd):
    """Serve the agent's tools and the prompt to an MCP host, over stdin and stdout.

    Tools: self_note, memory_recall, memory_stage, get_self_blocks, update_self_block,
    outbox_take, outbox_ack (as `anima call` runs them). Resources: anima://prompt (what `anima prompt` prints) and
    anima://self/KEY for each block; prompt: anima. A host starts it; for Claude Code:
    `claude mcp add anima -- anima mcp`. Ends when stdin closes.
    """
    if sys.stdin.isatty():  # someone typed it: say why nothing seems to happen
        warn("mcp: speaking the Model Context Protocol on stdin and stdout; an MCP host starts this "
             "(see anima(1)); ^D ends it")
    from anima.host import mcp as mcp_server

    mcp_server.serve(home, os.path.abspath(cwd or os.getcwd()), warn)
