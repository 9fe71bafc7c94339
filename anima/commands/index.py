import sys

import click

from anima.commands._io import json_option, out, out_json, warn


def _cfg(home):
    from anima.infra import config

    return config.load(home.config)


@click.group("index")
def cli():
    """The recall index: the transcripts' stemmed tokens and their positions, not their text.

    With the index on, `anima recall` answers from it for every session it covers and
    scans the rest (hot sessions, modified in the last index.hot_minutes; stale ones,
    changed since the last update) directly, saying so; its results are the same as a
    scan's. Build it with `rebuild`, keep it current with `update` (cron), then `on`.
    """


@cli.command("rebuild")
@click.option("--jobs", metavar="N", type=click.IntRange(1, 64),
              help="Processes to read with.  [default: index.jobs, 2]")
@click.pass_obj
def rebuild(home, jobs):
    """Build the index anew from every cold session (progress on a terminal).

    The new index replaces the old one only when it is complete: killed at any moment, the
    previous index stays as it was. A second rebuild or update at the same time exits 75.
    """
    from anima.recall import index

    cfg = _cfg(home)
    tty = sys.stderr.isatty()

    def progress(done, total):
        if tty:
            click.echo(f"\ranima: indexing {done}/{total} sessions", err=True, nl=done == total)

    index.rebuild(home, cfg, jobs or cfg["index.jobs"], progress, lambda m: warn(f"warning: {m}"))


@cli.command("update")
@click.pass_obj
def update(home):
    """Index what changed: new cold sessions, what grew (only the new lines are read),
    what changed otherwise or is gone. Silent on success, for cron; busy: exit 75."""
    from anima.recall import index

    index.update(home, _cfg(home), lambda m: warn(f"warning: {m}"))


@cli.command("status")
@json_option("Print one JSON object.")
@click.pass_obj
def status(home, as_json):
    """Print on/off, sessions indexed, hot, stale, gone, dead rows, size and when built."""
    from anima.recall import index

    info = index.status(home, _cfg(home))
    info.pop("stale_paths", None)
    info.pop("missing_paths", None)
    if as_json:
        out_json(info)
        return
    def shown(value):
        return "on" if value is True else "off" if value is False else "-" if value is None else value

    out("".join(f"{key}\t{shown(value)}\n" for key, value in info.items() if key != "exists"))


@cli.command("verify")
@click.pass_obj
def verify(home):
    """Check the index and what it covers; print each problem, exit 1 if any. Changes nothing."""
    from anima.recall import index

    problems = index.verify(home, _cfg(home))
    for line in problems:
        out(line + "\n")
    if problems:
        sys.exit(1)


@cli.command("on")
@click.pass_obj
def on(home):
    """Let recall use the index (refused, exit 77, while it is missing or stale)."""
    from anima.recall import index

    index.set_enabled(home, _cfg(home), True)


@cli.command("off")
@click.pass_obj
def off(home):
    """Let recall scan the transcripts, not use the index."""
    from anima.recall import index

    index.set_enabled(home, _cfg(home), False)
