import os
import sys

import click

from anima.commands._io import out, text_or_stdin

INPUT_LIMIT = 64 * 1024


def _stream(home):
    from anima.stream.now import Stream

    return Stream(home)


def _cfg(home):
    from anima.infra import config

    return config.load(home.config)


@click.command()
@click.argument("text", nargs=-1)
@click.pass_obj
def think(home, text):
    """Append my own first-person thought to the self-stream, self/stream/now.md.

    TEXT is the thought (several words are joined with spaces); `-` or no TEXT reads stdin
    (at most 64 KiB; a terminal there is exit 2). It becomes one entry: a heading
    `## YYYY-MM-DD HH:MM` (UTC), a blank line, the text, a blank line. It may hold several
    lines of Markdown; a line that could pass for a heading (one starting with '#') is
    escaped with a backslash, so no thought can forge an entry. The lines are recorded as
    mine in pipeline/stream.jsonl (never in now.md). Prints nothing.

    Refused with exit 77, nothing written: empty, or over stream.thought_max_chars.
    Not UTF-8, or a control character other than a tab or a line break (a NUL, an escape):
    exit 65.
    """
    from anima.infra import clock
    from anima.infra.text import plain

    body = plain(text_or_stdin(text, "think", INPUT_LIMIT), "a thought")
    _stream(home).append(body, "think", clock.now(), max_chars=_cfg(home)["stream.thought_max_chars"])


@click.group(invoke_without_command=True)
@click.option("-n", "lines", metavar="N", type=click.IntRange(0), default=20, show_default=True,
              help="Print the last N lines.")
@click.option("-f", "--follow", is_flag=True,
              help="Keep printing lines as they are appended (and across rolls) until interrupted.")
@click.pass_context
def stream(ctx, lines, follow):
    """Print the tail of my self-stream, self/stream/now.md; `roll` archives it.

    With -f, new lines are printed as they arrive (polled 4 times a second); after a roll the
    new now.md is followed from its start. Ctrl-C, SIGTERM or a closed pipe end it, status 0.
    """
    if ctx.invoked_subcommand is not None:
        return
    s = _stream(ctx.obj)
    if not follow:
        text = s.tail(lines)
        out(text)
        return
    _follow(s.now_path, lines)


def _follow(path: str, lines: int) -> None:
    import signal
    import time

    from anima.infra import fs

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    data = fs.read_bytes(path) or b""
    start = data.splitlines(keepends=True)
    pending = b"".join(start[-lines:]) if lines else b""
    position, identity = len(data), _identity(path)
    # a last line still open is held back until its line break arrives
    if pending and not pending.endswith(b"\n"):
        cut = pending.rfind(b"\n") + 1
        pending, position = pending[:cut], position - (len(pending) - cut)
    try:
        while True:
            if pending:
                sys.stdout.buffer.write(pending)
                sys.stdout.buffer.flush()
                pending = b""
            time.sleep(0.25)
            if _reader_gone():
                sys.exit(0)
            now_identity = _identity(path)
            if now_identity is None:
                continue
            if now_identity[0] != (identity or (None,))[0] or now_identity[1] < position:
                position = 0  # rolled (replaced) or truncated: follow the new file from its start
            identity = now_identity
            if now_identity[1] > position:
                with os.fdopen(fs.open_file(path), "rb") as f:
                    f.seek(position)
                    chunk = f.read(now_identity[1] - position)
                cut = chunk.rfind(b"\n") + 1
                pending, position = chunk[:cut], position + cut
    except KeyboardInterrupt:
        sys.exit(0)


def _reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has gone (`| head` done): noticed without
    waiting for the next line to fail, as `tail -f` would."""
    import select
    import stat

    fd = sys.stdout.fileno()
    if not stat.S_ISFIFO(os.fstat(fd).st_mode):
        return False
    poller = select.poll()
    poller.register(fd, 0)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def _identity(path: str):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size)


@stream.command("roll")
@click.option("--now", "at", metavar="ISO", help="Roll as if it were this RFC 3339 time (default: now, or ANIMA_NOW).")
@click.option("--force", is_flag=True, help="Roll now, due or not (still keeping the last --keep minutes).")
@click.option("--keep", "keep", metavar="MINUTES", type=click.IntRange(0),
              help="Keep the entries of the last MINUTES (default: stream.keep_minutes; 0 keeps none).")
@click.pass_obj
def roll(home, at, force, keep):
    """Archive all but the last hour of now.md when it is due; silent, status 0 either way.

    Due when now.md holds more than stream.max_lines lines, or when its oldest entry is
    older than stream.keep_minutes (default 60) and a quarter of that again (75 minutes).
    The entries older than stream.keep_minutes are appended to self/stream/archive/DATE.md,
    DATE the UTC day of their heading; the later ones stay, now the first lines of a new
    generation (a roll forced by stream.max_lines keeps those that fit in half of it). The
    roll is recorded in pipeline/stream.jsonl. Nothing to archive: nothing changes.
    """
    from anima.commands._io import warn
    from anima.infra import clock

    cfg = _cfg(home)
    moment = clock.parse(at, "--now") if at else clock.now()
    _stream(home).roll(cfg["stream.max_lines"], moment, force, cfg["stream.keep_minutes"] if keep is None else keep,
                       warn)


@click.group(invoke_without_command=True)
@click.pass_context
def state(ctx):
    """Show (the default) or replace my current state, self/state.md."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(state_show)


@state.command("show")
@click.pass_obj
def state_show(home):
    """Print self/state.md; exit 1 when there is none yet."""
    from anima.self import state as state_md

    out(state_md.read(home))


@state.command("set")
@click.argument("text", nargs=-1)
@click.pass_obj
def state_set(home, text):
    """Replace self/state.md with TEXT (`-` or none: stdin, at most 64 KiB); empty is exit 77."""
    from anima.self import state as state_md

    state_md.write(home, text_or_stdin(text, "state set", INPUT_LIMIT))


@click.group(invoke_without_command=True)
@click.pass_context
def memories(ctx):
    """My memories, self/memories/TOPIC.md: list (the default), show, search."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(memories_list)


@memories.command("list")
@click.pass_obj
def memories_list(home):
    """Print each topic and its size in bytes, tab-separated, by name."""
    from anima.self import memories as kept

    out("".join(f"{topic}\t{size}\n" for topic, size in kept.topics(home)))


@memories.command("show")
@click.argument("topic")
@click.pass_obj
def memories_show(home, topic):
    """Print one memory. TOPIC is a plain name (no '/': a path is exit 77); missing is exit 1."""
    from anima.self import memories as kept

    text = kept.read(home, topic)
    out(text)


@memories.command("search")
@click.argument("terms", nargs=-1, required=True)
@click.pass_obj
def memories_search(home, terms):
    """Print the memory lines holding every TERM (any case; Chinese matches anywhere) as
    TOPIC<TAB>LINE<TAB>text; exit 1 when none does."""
    from anima.self import memories as kept

    hits = kept.search(home, list(terms))
    if not hits:
        sys.exit(1)  # like grep: nothing matched, nothing said
    out("".join(f"{topic}\t{number}\t{line}\n" for topic, number, line in hits))


@click.command()
@click.argument("date", metavar="[DATE]", required=False)
@click.option("--list", "listing", is_flag=True, help="Print the dates that have a diary, oldest first.")
@click.pass_obj
def diary(home, date, listing):
    """Print my diary of DATE (YYYY-MM-DD; default today, UTC), self/diary/DATE.md.

    No diary that day is exit 1; DATE not a date is exit 2.
    """
    from anima.infra import clock
    from anima.self import diary as days

    if listing:
        if date is not None:
            raise click.UsageError("give a DATE or --list, not both")
        out("".join(day + "\n" for day in days.dates(home)))
        return
    text = days.read(home, date or clock.iso(clock.now())[:10])
    out(text)
