"""`anima queue`: look into Pool B's queues and replay what went to dead_letter/."""

import os
import re
import sys

import click

from anima.commands._io import json_option, out, out_json, warn
from anima.infra import fs, jsontext
from anima.infra.errors import AnimaError, NotFound, UsageError

NAMES = ("pending", "system", "message", "action", "rhythm", "outbox", "dead")


class QueueName(click.ParamType):
    """One of anima's queues, dead, or a queue a route of config.toml reads or fills."""

    name = "queue"

    def convert(self, value, param, ctx):
        if value in NAMES:
            return value
        from anima.infra import config, topology
        from anima.infra.home import Home, default_root

        home = ctx.find_root().obj if ctx and isinstance(ctx.find_root().obj, Home) else Home(default_root())
        try:
            routed = topology.queue_names(config.load(home.config)["routes.rules"])
        except Exception:  # a broken config is for `anima config` to report
            routed = []
        if value in routed:
            return value
        self.fail(f"{value!r} is not a queue: {', '.join([*NAMES, *routed])}", param, ctx)

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem

        return [CompletionItem(n) for n in NAMES if n.startswith(incomplete)]


QUEUE = QueueName()


def _dir(home, name):
    from anima.pipeline import queues

    return home.path("pipeline", queues.DEAD) if name == "dead" else queues.Queue.of(home, name).dir


def _files(directory):
    try:
        return sorted(n for n in fs.listdir(directory) if n.endswith(".json") and not n.startswith("."))
    except FileNotFoundError:
        return []


def _load(path):
    from anima.infra import fs

    try:
        return jsontext.loads(fs.read_bytes(path) or b"null")
    except (OSError, ValueError, AnimaError):  # (a link in its place: refused, shown as unreadable)
        return None


@click.group("queue")
def cli():
    """Look into Pool B's queues: pending, system, message, action, rhythm, dead, and the
    queues of your own that the routes in config.toml read or fill.

    `dead` is pipeline/dead_letter/, where each file lies beside a .reason saying what,
    why, when and by which command; `retry` puts dead letters back where they came from.
    """


@cli.command("ls")
@click.argument("queue", type=QUEUE)
@json_option("NDJSON: name, and the envelope (or, for dead, the reason).")
@click.option("-0", "nul", is_flag=True, help="Print only the names, each ended by NUL.")
@click.pass_obj
def ls(home, queue, as_json, nul):
    """List the files waiting in QUEUE, oldest first: NAME, time, type, and for dead the reason."""
    directory = _dir(home, queue)
    for name in _files(directory):
        if nul:
            out(name + "\0")
            continue
        if queue == "dead":
            reason = _load(os.path.join(directory, name + ".reason")) or {}
            if as_json:
                out_json({"name": name, "reason": reason})
            else:
                out(f"{name}\t{reason.get('when', '-')}\t{reason.get('queue', '-')}\t{reason.get('why', '-')}\n")
            continue
        env = (_load(os.path.join(directory, name)) or {}).get("envelope") or {}
        if as_json:
            out_json({"name": name, "envelope": env})
        else:
            out(f"{name}\t{env.get('timestamp', '-')}\t{env.get('source_type', '-')}\t{env.get('trace_id', '-')}\n")


@cli.command("show")
@click.argument("queue", type=QUEUE)
@click.argument("name")
@click.pass_obj
def show(home, queue, name):
    """Print file NAME of QUEUE as it is (for dead, its .reason after it)."""
    from anima.infra import fs

    if "/" in name or name.startswith("."):
        raise UsageError(f"{name!r} is not a file name in a queue")
    directory = _dir(home, queue)
    text = fs.read_text(os.path.join(directory, name))
    if text is None:
        raise NotFound(f"no {name} in {queue}")
    out(text if text.endswith("\n") else text + "\n")
    if queue == "dead":
        reason = fs.read_text(os.path.join(directory, name + ".reason"))
        if reason:
            out(reason if reason.endswith("\n") else reason + "\n")


@cli.command("retry")
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@click.pass_obj
def retry(home, names):
    """Put dead letters back in the queue they came from; their reasons move to
    dead_letter/retried/ (kept, never deleted)."""
    from anima.infra import clock, fs
    from anima.pipeline import queues

    dead = home.path("pipeline", queues.DEAD)
    for name in names:
        if "/" in name or name.startswith(".") or not os.path.exists(os.path.join(dead, name)):
            raise NotFound(f"no dead letter {name}; `anima queue ls dead` lists them")
    for name in names:
        reason = _load(os.path.join(dead, name + ".reason")) or {}
        if not isinstance(reason.get("queue"), str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*",
                                                                         reason["queue"]):
            raise UsageError(f"{name}: its reason names no queue to go back to")
    for name in names:
        reason_path = os.path.join(dead, name + ".reason")
        reason = _load(reason_path)
        q = reason["queue"]
        target = queues.Queue.of(home, q)
        kept = os.path.join(fs.ensure_dir(os.path.join(dead, "retried")), f"{name}.reason.{clock.iso(clock.now())}")
        fs.move(reason_path, kept)
        fs.move(os.path.join(dead, name), os.path.join(target.dir, name))
        warn(f"{name}: back in {reason['queue']}")


@cli.command("purge")
@click.argument("queue", type=QUEUE)
@click.option("--yes", is_flag=True, help="Do not ask; needed when stdin is not a terminal.")
@click.pass_obj
def purge(home, queue, yes):
    """Delete what is finished with: QUEUE's done/ files, or for dead every dead letter and
    its reason. Nothing waiting is ever touched."""
    directory = _dir(home, queue) if queue == "dead" else os.path.join(_dir(home, queue), "done")
    victims = [n for n in (fs.listdir(directory) if os.path.isdir(directory) else [])
               if os.path.isfile(os.path.join(directory, n)) and not n.startswith(".")]
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError(f"refusing to delete {len(victims)} files without --yes (stdin is not a terminal)")
        if not click.confirm(f"Delete {len(victims)} files from {directory}?", err=True):
            return
    for n in victims:
        fs.remove(os.path.join(directory, n))
