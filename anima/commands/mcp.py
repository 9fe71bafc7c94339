import os
import sys

import click

from anima.commands._io import read_input, warn
from anima.infra.errors import ConfigError

TOKEN_ENV = "ANIMA_MCP_TOKEN"


@click.command("mcp")
@click.option("--cwd", metavar="DIR", type=click.Path(exists=True, file_okay=False),
              help="Directory whose AGENTS.md the prompt includes.  [default: the current directory]")
@click.option("--http", "address", metavar="HOST:PORT",
              help="Serve over Streamable HTTP at http://HOST:PORT/mcp instead of stdio; loopback only, "
                   "port 0 for any free one.")
@click.option("--token-file", metavar="FILE",
              help=f"With --http: read the bearer token from FILE (- for stdin).  [default: ${TOKEN_ENV}]")
@click.option("--allow-remote", is_flag=True,
              help="With --http: listen on an address that is not loopback (put TLS in front of it).")
@click.pass_obj
def cli(home, cwd, address, token_file, allow_remote):
    """Serve the agent's tools and the prompt to an MCP host, over stdin and stdout or HTTP.

    Tools: self_note, memory_recall, self_recall, memory_stage, get_self_blocks, update_self_block,
    outbox_take, outbox_ack (as `anima call` runs them). Resources: anima://prompt (what `anima prompt` prints) and
    anima://self/KEY for each block; prompt: anima. A host starts it; for Claude Code:
    `claude mcp add anima -- anima mcp`. Ends when stdin closes. With --http it serves
    until SIGTERM or ^C, every request carrying `Authorization: Bearer TOKEN`.
    """
    cwd = os.path.abspath(cwd or os.getcwd())
    if address is None:
        if token_file or allow_remote:
            raise click.UsageError("--token-file and --allow-remote go with --http")
        if sys.stdin.isatty():  # someone typed it: say why nothing seems to happen
            warn("mcp: speaking the Model Context Protocol on stdin and stdout; an MCP host starts this "
                 "(see anima(1)); ^D ends it")
        from anima.host import mcp as mcp_server

        mcp_server.serve(home, cwd, warn)
        return
    from anima.host import mcp_http

    host, port = mcp_http.parse_address(address)
    token = _token(token_file)  # before binding: a server nobody may use is not started
    mcp_http.serve(home, cwd, warn, mcp_http.listen(host, port, allow_remote), token, allow_remote)


def _token(path: str | None) -> str:
    """The shared secret, from FILE or the environment: never an argument, which `ps` shows."""
    if path is not None:
        token, where = read_input(path, 4096, "mcp --token-file").strip(), path
    else:
        token, where = os.environ.get(TOKEN_ENV, "").strip(), f"${TOKEN_ENV}"
    if not token:
        raise ConfigError(f"mcp: --http needs a bearer token: set {TOKEN_ENV} or give --token-file FILE"
                          if path is None else f"mcp: {where} is empty: put the bearer token in it")
    if any(c.isspace() for c in token) or not token.isprintable() or not token.isascii():
        raise ConfigError(f"mcp: the token in {where} has spaces or non-ASCII characters; an HTTP header "
                          f"carries it (e.g. `openssl rand -hex 32`)")
    return token
