import click

from anima.commands._io import out


@click.group()
def cli():
    """Session transcripts: record turns for hosts that keep no logs of their own.

    A session is sessions/ID.jsonl: a {"type": "session", "id": ID} header line, then one
    {"role", "content", "ts"} line per turn. `anima recall` searches these files together
    with the recall.sources globs (anima, OpenAI chat and Responses, Claude Code and Codex CLI
    transcripts, plain or zstd: anima-transcripts(5)).
    """


@cli.command("append")
@click.option("--session", "session_id", metavar="ID", required=True,
              help="The session: a plain name of letters, digits, '.', '_' and '-'.")
@click.option("--role", type=click.Choice(["user", "assistant"]), required=True,
              help="Who spoke: the person (user) or the agent (assistant).")
@click.argument("text", nargs=-1)
@click.pass_obj
def append(home, session_id, role, text):
    """Append a turn to session ID; print ID, a tab and the turn's line number.

    TEXT is the turn (several words are joined with spaces); `-` or no TEXT reads stdin (at
    most 1 MiB, trailing newlines dropped). The file sessions/ID.jsonl is created, header
    first, when it is new; concurrent appends never interleave. Refused with exit 77, nothing
    written: an ID that is not a plain name, empty text, or a session stored compressed.
    Text that is not valid UTF-8, or holds a control character other than a tab or a line
    break (a NUL, an escape), exits 65.
    """
    from anima.infra import clock
    from anima.recall import append

    append.check_session_id(session_id)
    if text in ((), ("-",)):
        from anima.commands._io import read_input

        body = read_input(None, append.MAX_APPEND_BYTES, "session append", "as arguments or on stdin")
        body = body.rstrip("\n")
    else:
        body = " ".join(text)
    _, line = append.append(home, session_id, role, body, clock.now())
    out(f"{session_id}\t{line}\n")
