"""`anima tick`: the heartbeat, run every minute from cron."""

import contextlib
import os

import click

from anima.commands._io import warn
from anima.infra.errors import TEMPFAIL


@click.command("tick")
@click.option("--now", "at", metavar="ISO", help="Tick as if it were this RFC 3339 time (tests, replays); "
              "otherwise ANIMA_NOW, else the clock.")
@click.pass_obj
def cli(home, at):
    """The heartbeat that runs her day: `* * * * * anima tick` is the whole crontab.

    Each minute it does the steps of tick.steps, in this order: rhythm (the due rules of
    [rhythm.rules], local time, each scheduled minute once; after downtime only a rule's
    latest missed time within rhythm.catch_up minutes), sweep (waiting files past their
    ttl_sec to dead_letter/), the loop (preprocess, internalize, reflect, externalize,
    dispatch, then preprocess and internalize again: her deeds' results lived in the same
    minute), roll (anima stream roll), index (anima index update, when the index is on, every
    10 minutes) and consolidate (once she has lived the trigger of consolidate.rule). With a
    model backend, reflect lets her reflect after new experience and every
    reflect.every_minutes. Each step is also a command of its own.

    Silent on success. A failing step is named on stderr ("anima: tick: STEP: why"), the
    others still run, and the exit status is the first failing step's. One tick at a time:
    when another holds pipeline/heartbeat/.tick.json.lock it exits 75 at once, printing
    nothing. With nothing due (no timer, no waiting file, nothing new in the stream) it only
    refreshes the heartbeat, pipeline/heartbeat/tick.json. A consolidate or forget that was
    killed midway is finished first, unless one is running.
    """
    from anima.infra import clock, fs
    from anima.infra.errors import Busy
    from anima.stream import heartbeat

    now = clock.parse(at, "--now") if at is not None else clock.now()  # a bad one (or ANIMA_NOW) changes nothing
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(fs.locked(home.path(*heartbeat.HEARTBEAT), wait=False))
        except Busy:
            raise click.exceptions.Exit(TEMPFAIL) from None  # quietly: cron would mail a message
        if not heartbeat.due(home.root, now):
            heartbeat.beat_only(home, now)
            return
        from anima.infra import changeset, config

        cfg = config.load(home.config)
        if changeset.is_pending(home):
            _finish_interrupted(home)
        failed = heartbeat.run(home, cfg, now, warn, debug=os.environ.get("ANIMA_DEBUG") == "1")
    for step, message, _ in failed:
        warn(f"tick: {step}: {message}")
    if failed:
        raise click.exceptions.Exit(failed[0][2])


def _finish_interrupted(home) -> None:
    """A consolidate or forget killed midway holds now.md back until it is finished: do it,
    unless one is running (it finishes its own). What cannot be finished is said on stderr
    (cron mails it); the tick's chores go on."""
    from anima.infra import changeset
    from anima.infra.errors import AnimaError, Busy
    from anima.stream.now import Stream

    try:
        with Stream(home).changing():
            changeset.finish_pending(home, warn)
    except Busy:
        pass
    except AnimaError as e:
        warn(f"warning: an interrupted consolidate or forget cannot be finished: {e}")
