import os
import re
import sys

import click

from anima.commands._io import json_option, out, out_json, warn
from anima.infra.errors import NotFound, Refused, UsageError
from anima.infra.text import printable

NOTE_SETTINGS = ("max_chars", "max_entries", "note_max_chars", "half_life_days", "dup_threshold", "inject",
                 "builtin_sensitive_words", "sensitive_words")


def _store(home):
    from anima.notes.store import Store

    return Store(home)


def _load(home):
    from anima.infra import config

    return config.load(home.config)


@click.group()
def cli():
    """Self-notes: what the agent has noticed about itself, one line each.

    Notes live in notes/notes.md, one per line: grep it, edit it, delete lines; an edited
    line is a new note. `anima prompt` injects the hottest notes within
    prompt.budget.notes characters; heat cools with a half-life unless a note is used.
    """


@cli.command("add")
@click.argument("text", nargs=-1)
@click.pass_obj
def add(home, text):
    """Add a note: 1 to 3 first-person sentences about myself; prints its id.

    TEXT is the note (several words are joined with spaces); `-` or no TEXT reads stdin.
    Refused with exit 77, nothing written: empty, over notes.note_max_chars, more than 3
    sentences, not in the first person, the user's private data (e-mail, phone, ID,
    passport, bank card, address, password, key or token, health or finance specifics),
    or a near-duplicate of a live note (whose heat is refreshed instead).

    A control character in it (a NUL, an escape) or text that is not UTF-8: exit 65.
    """
    from anima.commands._io import text_or_stdin
    from anima.infra import clock

    nid, archived = _store(home).add(text_or_stdin(text, "note add"), _load(home), clock.now())
    if archived:
        warn(f"moved {len(archived)} oldest notes to the archive (notes.max_entries / notes.max_chars)")
    out(nid + "\n")


@cli.command("list")
@click.option("--by", type=click.Choice(["heat", "time"]), default="heat", show_default=True,
              help="Order: hottest first, or as in notes.md (oldest first).")
@json_option("Print NDJSON: one object per note with every heat factor.")
@click.option("-0", "nul", is_flag=True, help="Print only the ids, each ended by NUL (for xargs -0).")
@click.pass_obj
def list_(home, by, as_json, nul):
    """List the live notes: ID, heat and text, tab-separated. Listing counts as no use."""
    from anima.infra import clock

    store, cfg, now = _store(home), _load(home), clock.now()
    notes, meta, usage = store.notes(), store.meta(), store.usage()
    half_life = cfg["notes.half_life_days"]
    if by == "heat":
        notes = store.ranked(notes, meta, usage, half_life, now)
    for note in notes:
        if nul:
            out(note.id + "\0")
            continue
        facts = store.facts(note, meta, usage, half_life, now)
        if as_json:
            out_json(facts)
        else:
            out(f"{note.id}\t{facts['heat']:.4f}\t{printable(note.text)}\n")


@cli.command("heat")
@click.argument("note_id", metavar="ID")
@click.option("--explain", is_flag=True, help="Print every factor of the formula, to recompute by hand.")
@click.pass_obj
def heat(home, note_id, explain):
    """Print the heat of note ID now.

    heat = (1 + ln(1 + hits)) x 0.5^(idle_days / half_life) x (1 + 0.5 x importance)
    """
    from anima.infra import clock

    store, cfg = _store(home), _load(home)
    note = next((n for n in store.notes() if n.id == note_id), None)
    if note is None:
        raise NotFound(f"no live note {note_id}; `anima note list` shows them")
    f = store.facts(note, store.meta(), store.usage(), cfg["notes.half_life_days"], clock.now())
    if not explain:
        out(f"{f['heat']:.4f}\n")
        return
    import math

    use = (1 + math.log(1 + f["hits"]))
    decay = 0.5 ** (f["idle_days"] / f["half_life_days"])
    weight = 1 + 0.5 * f["importance"]
    since = f"the last injection, {f['last_injected']}" if f["last_injected"] else f"creation, {f['created']}"
    out(f"note        {f['id']}  {printable(f['text'])}\n"
        f"hits        {f['hits']}  (injections into the prompt, at most one an hour)\n"
        f"idle_days   {f['idle_days']:.4f}  (since {since})\n"
        f"half_life   {f['half_life_days']}  (notes.half_life_days)\n"
        f"importance  {f['importance']}  (0-3, set by a person)\n"
        f"heat = (1 + ln(1 + {f['hits']})) x 0.5^({f['idle_days']:.4f} / {f['half_life_days']}) "
        f"x (1 + 0.5 x {f['importance']})\n"
        f"     = {use:.4f} x {decay:.4f} x {weight:.1f}\n"
        f"     = {f['heat']:.4f}\n")


@cli.command("status")
@json_option("Print one JSON object.")
@click.pass_obj
def status(home, as_json):
    """Print count, characters, capacity used, injection on/off and the file paths."""
    store, cfg = _store(home), _load(home)
    notes = store.notes()
    chars = sum(len(n.text) for n in notes)
    max_entries, max_chars = cfg["notes.max_entries"], cfg["notes.max_chars"]
    capacity = round(100 * max(len(notes) / max_entries, chars / max_chars), 1)
    info = {"count": len(notes), "max_entries": max_entries, "chars": chars, "max_chars": max_chars,
            "capacity_percent": capacity, "inject": cfg["notes.inject"], "notes": store.file,
            "archive": store.archive_dir, "config": home.config}
    if as_json:
        out_json(info)
        return
    out(f"notes\t{len(notes)}/{max_entries}\n"
        f"chars\t{chars}/{max_chars}\n"
        f"capacity\t{capacity:g}%\n"
        f"inject\t{'on' if info['inject'] else 'off'}\n"
        f"notes_file\t{store.file}\n"
        f"archive\t{store.archive_dir}\n"
        f"config\t{home.config}\n")


@cli.command("config")
@click.argument("key", required=False, type=click.Choice(NOTE_SETTINGS))
@click.argument("value", required=False)
@click.pass_obj
def config_(home, key, value):
    """Show or set the [notes] settings: no KEY lists them, KEY prints one, KEY VALUE sets it.

    Same as `anima config get|set notes.KEY`; an invalid value changes nothing (exit 78).
    """
    from anima.infra import config

    if value is not None:
        config.set_value(home.config, f"notes.{key}", value)
        return
    cfg = config.load(home.config)
    for name in (key,) if key else NOTE_SETTINGS:
        shown = config.show_value(cfg[f"notes.{name}"])
        out(f"{shown}\n" if key else f"{name}\t{shown}\n")


@cli.command("importance")
@click.argument("note_id", metavar="ID")
@click.argument("level", metavar="N", type=click.IntRange(0, 3))
@click.pass_obj
def importance(home, note_id, level):
    """Set how much note ID matters, 0 to 3 (default 1): a person's call."""
    from anima.infra import clock

    _store(home).set_importance(note_id, level, clock.now())


@cli.command("inject")
@click.argument("state", type=click.Choice(["on", "off"]))
@click.pass_obj
def inject(home, state):
    """Turn the self-notes section of `anima prompt` on or off (notes.inject)."""
    from anima.infra import config

    config.set_value(home.config, "notes.inject", state)


@cli.command("clear")
@click.option("--yes", is_flag=True, help="Do not ask; needed when stdin is not a terminal.")
@click.pass_obj
def clear(home, yes):
    """Move every live note to the archive (nothing is deleted)."""
    from anima.infra import clock

    store = _store(home)
    count = len(store.notes())
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError(f"refusing to clear {count} notes without --yes (stdin is not a terminal)")
        if not click.confirm(f"Move all {count} notes to the archive?", err=True):
            raise Refused("not cleared")
    moved = store.clear(clock.now())
    warn(f"moved {moved} notes to {store.archive_dir}")


@cli.command("archive")
@click.argument("month", metavar="[YYYY-MM]", required=False)
@click.pass_obj
def archive(home, month):
    """Print the archived notes of MONTH, or of every month, oldest first."""
    from anima.infra import fs

    store = _store(home)
    if month is not None:
        if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", month):
            raise UsageError(f"{month!r} is not a month: use YYYY-MM")
        months = [f"{month}.md"]
    else:
        try:
            months = sorted(n for n in fs.listdir(store.archive_dir) if re.fullmatch(r"\d{4}-\d{2}\.md", n))
        except FileNotFoundError:
            months = []
    for name in months:
        text = fs.read_text(os.path.join(store.archive_dir, name))
        if text is None:
            raise NotFound(f"no notes archived in {month}")
        out(text)
