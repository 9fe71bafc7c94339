import sys

import click

from anima.commands._io import out_json, read_input, warn


@click.command("outbox")
@click.argument("ids", nargs=-1, metavar="[ID]...")
@click.option("--ack", is_flag=True,
              help="Acknowledge the messages IDs (`-` or none: ids, or NDJSON lines with \"id\", on stdin).")
@click.option("--requeue", is_flag=True, help="Give back now every message taken and not acknowledged.")
@click.option("-n", "limit", metavar="N", type=click.IntRange(1), help="Take at most N messages.")
@click.option("-f", "--follow", is_flag=True, help="Keep taking messages as they arrive until interrupted.")
@click.option("--timeout", "timeout_sec", metavar="SEC", type=click.IntRange(0), default=300, show_default=True,
              help="A message taken this many seconds ago and not acknowledged is given again.")
@click.pass_obj
def cli(home, ids, ack, requeue, limit, follow, timeout_sec):
    """Take her replies from the outbox: one NDJSON line each; --ack when sent.

    Each line: {"id", "to", "text", "scene", "in_reply_to", "trace_id", "at", "action"}. A
    message taken is claimed: no other `anima outbox` gets it; not acknowledged within
    --timeout (or after --requeue), it is given again, so a host that crashes loses nothing;
    once acknowledged it is never given again. Prints nothing when the outbox is empty.
    """
    from anima.infra import clock
    from anima.infra.errors import NotFound, UsageError
    from anima.pipeline import outbox

    if ack + requeue > 1 or (ack or requeue) and (follow or limit):
        raise UsageError("outbox: --ack, --requeue and taking (-n, -f) go one at a time")
    if ids and not ack:
        raise UsageError("outbox: IDs are what --ack acknowledges")
    if requeue:
        for mid in outbox.requeue(home):
            warn(f"{mid}: back in the outbox")
        return
    if ack:
        if ids in ((), ("-",)):
            ids = _ids(read_input(None, 16 * 1024 * 1024, "outbox --ack", "as arguments or on stdin"))
        try:
            outbox.ack(home, list(ids))
        except outbox.Unknown as e:
            raise NotFound(f"outbox: not in the outbox: {', '.join(e.args[0])} (the others are "
                           "acknowledged)") from None
        return
    if not follow:
        for message in outbox.take(home, clock.now(), limit, timeout_sec):
            out_json(message)
        return
    _follow(home, limit, timeout_sec)


def _ids(raw: str) -> list[str]:
    """Ids, one a line: plain, or what `anima outbox` printed (an object with "id")."""
    from anima.infra import jsontext
    from anima.infra.errors import DataError

    found = []
    for number, line in enumerate(raw.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("{"):
            try:
                line = jsontext.loads(line).get("id")
            except (ValueError, AttributeError):
                line = None
            if not isinstance(line, str):
                raise DataError(f"outbox --ack: stdin line {number}: not an id, nor an object with \"id\"")
        found.append(line)
    return found


def _follow(home, limit, timeout_sec) -> None:
    import signal
    import time

    from anima.commands.stream import _reader_gone
    from anima.infra import clock
    from anima.pipeline import outbox

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    given = 0
    try:
        while limit is None or given < limit:
            taken = outbox.take(home, clock.now(), None if limit is None else limit - given, timeout_sec)
            for message in taken:
                out_json(message)
            given += len(taken)
            if not taken:
                time.sleep(0.25)
                if _reader_gone():
                    sys.exit(0)
    except KeyboardInterrupt:
        sys.exit(0)
