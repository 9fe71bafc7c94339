"""`anima tick`: the heartbeat, run every minute from cron."""

import contextlib
import os

import click

from anima.infra.errors import TEMPFAIL


@click.command("tick")
@click.option("--now", "at", metavar="ISO", help="Tick as if it were this RFC 3339 time (tests, replays); "
              "otherwise ANIMA_NOW, else the clock.")
@click.pass_obj
def cli(home, at):
    """Strike the hour: fire due rhythm rules, expire old files, run preprocess.

    Meant for a `* * * * *` crontab line, and silent on success. One tick at a time: when
    another holds pipeline/heartbeat/.tick.json.lock it exits 75 at once, printing nothing.
    Each rule of [rhythm.rules] (cron expressions in local time) fires a trigger into
    rhythm/triggers once per scheduled minute, however often or late tick runs; after
    downtime only a rule's latest missed time fires, and only if at most rhythm.catch_up
    minutes ago. Then every waiting file past its envelope's ttl_sec goes to dead_letter/
    (reason "ttl"), and everything waiting goes through preprocess into message_queue. The
    heartbeat is pipeline/heartbeat/tick.json. A consolidate or forget that was killed
    midway is finished first (now.md takes no entry until it is), unless one is running.
    """
    import json

    from anima.infra import changeset, clock, config, fs
    from anima.infra.errors import Busy
    from anima.pipeline import events, rhythm

    now = clock.parse(at, "--now") if at is not None else clock.now()  # a bad one (or ANIMA_NOW) changes nothing
    heartbeat = home.path("pipeline", "heartbeat", "tick.json")
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(fs.locked(heartbeat, wait=False))
        except Busy:
            raise click.exceptions.Exit(TEMPFAIL) from None  # quietly: cron would mail a message
        cfg = config.load(home.config)
        if changeset.is_pending(home):
            _finish_interrupted(home)
        fired = rhythm.fire(home, rhythm.rules(cfg.values), cfg["rhythm.catch_up"], cfg["core.lang"], now)
        fs.atomic_write(heartbeat, json.dumps({"at": clock.iso(now), "pid": os.getpid(), "fired": fired}) + "\n")
        rhythm.sweep(home, now, "anima tick")
        events.preprocess(home, now, "anima tick")


def _finish_interrupted(home) -> None:
    """A consolidate or forget killed midway holds now.md back until it is finished: do it,
    unless one is running (it finishes its own). What cannot be finished is said on stderr
    (cron mails it); the tick's chores go on."""
    from anima.commands._io import warn
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
