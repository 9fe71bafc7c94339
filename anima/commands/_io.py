"""Input and output helpers shared by the commands."""

import sys

import click

from anima.commands.fast import out as out  # one writer of stdout, the fast path's too
from anima.commands.fast import out_json as out_json
from anima.infra import fs
from anima.infra.errors import UsageError


def read_input(file: str | None, limit: int, what: str, how: str = "on stdin or with --file F") -> str:
    """Content from --file F (`-` is stdin) or piped stdin, read at most `limit` bytes.

    A command that needs content but got a terminal on stdin is a usage error: it would
    otherwise sit waiting for input nobody means to type.
    """
    if file is None or file == "-":
        stream = sys.stdin.buffer
        if stream.isatty():
            raise UsageError(f"{what}: give the text {how}")
        return fs.decode(fs.read_limited(stream, limit, "stdin"), "stdin")
    try:
        with open(file, "rb") as f:
            return fs.decode(fs.read_limited(f, limit, file), file)
    except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
        raise UsageError(f"{file}: {e.strerror}") from None


def text_or_stdin(words: tuple, what: str, limit: int = 64 * 1024) -> str:
    """TEXT given as arguments (joined with spaces), or read from stdin for `-` or none."""
    if words in ((), ("-",)):
        return read_input(None, limit, what, "as arguments or on stdin")
    return " ".join(words)


def warn(message: str) -> None:
    click.echo(f"anima: {message}", err=True)


def json_option(help_text: str = "Print JSON instead of text."):
    return click.option("--json", "as_json", is_flag=True, help=help_text)
