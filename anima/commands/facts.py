"""Facts about the person: stage (the agent), facts, approve, retire, profile, habits (a person)."""

import sys

import click

from anima.commands._io import json_option, out, out_json, read_input, text_or_stdin, warn
from anima.infra import jsontext
from anima.infra.errors import DataError, UsageError
from anima.infra.text import printable


def _store(home):
    from anima.facts.store import FactStore

    return FactStore(home)


def _requests(session, line, quote, tags, importance):
    """What to stage: the options, or recall NDJSON on stdin (a `quote` field, else `text`)."""
    from anima.facts.store import Request

    if session is not None or line is not None or quote is not None:
        if session is None or line is None or quote is None:
            raise UsageError("--session, --line and --quote go together")
        return [Request(session, line, quote, tags, importance)]
    stream = sys.stdin
    if stream.isatty():
        raise UsageError("give --session, --line and --quote, or recall NDJSON on stdin")
    requests = []
    for number, raw in enumerate(read_input(None, 16 * 1024 * 1024, "stage").split("\n"), 1):
        if not raw.strip():
            continue
        try:
            item = jsontext.loads(raw)
            ok = isinstance(item, dict) and isinstance(item.get("session"), str) \
                and isinstance(item.get("line"), int) and not isinstance(item["line"], bool) \
                and isinstance(item.get("quote", item.get("text")), str)
        except ValueError:
            ok = False
        if not ok:
            raise DataError(f"stdin:{number}: expected a recall result: JSON with session, line and quote or text")
        requests.append(Request(item["session"], item["line"], item.get("quote", item.get("text")), tags, importance))
    if not requests:
        raise UsageError("stdin held no recall results")
    return requests


@click.command("stage")
@click.option("--session", metavar="ID", help="The session the fact was said in.")
@click.option("--line", type=int, metavar="N", help="The line of that turn (as recall prints it).")
@click.option("--quote", metavar="TEXT", help="The words, as they occur in that turn.")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="A tag for the profile and habits (repeatable).")
@click.option("--importance", metavar="N", type=click.IntRange(0, 3), default=1, show_default=True, help="0 to 3.")
@click.pass_obj
def stage(home, session, line, quote, tags, importance):
    """Propose a fact about the person, from a real turn: prints its id.

    Reads recall NDJSON on stdin (`anima recall --json ... | anima stage`), each result's
    `quote` (or else its whole `text`), or one fact from --session, --line and --quote.
    The session and line must resolve to a real turn and the quote must occur in it
    (whitespace aside), else nothing is staged (exit 77). A staged fact is a candidate:
    never injected until a person approves it. The same quote from the same turn is the
    same fact.
    """
    from anima.facts.store import check_tags
    from anima.infra import clock, config
    from anima.recall import sessions

    requests = _requests(session, line, quote, check_tags(tags), importance)
    cfg = config.load(home.config)

    turns = sessions.find_turns(home, cfg, [(r.session, r.line) for r in requests],
                                   lambda m: warn(f"warning: {m}"))
    for fid, new in _store(home).stage(requests, lambda sid, number: turns.get((sid, number)), clock.now()):
        out(fid + "\n")
        if not new:
            warn(f"{fid} was staged before; nothing added")


def _fact_line(f):
    src = f.get("source", {})
    where = f"{src.get('session')}:{src.get('line')}"
    return printable(f"{f['id']}\t{f['status']}\t{','.join(f.get('tags', []))}\t{where}\t{f['text']}") + "\n"


@click.command("facts")
@click.option("--status", type=click.Choice(["candidate", "approved", "retired"]), help="Only facts with this status.")
@json_option("NDJSON: every field, source and history included.")
@click.pass_obj
def facts(home, status, as_json):
    """List facts: ID, status, tags, SESSION:LINE, text, tab-separated, as staged."""
    for f in _store(home).load():
        if status is None or f["status"] == status:
            out_json(f) if as_json else out(_fact_line(f))


@click.command("approve")
@click.argument("ids", nargs=-1, required=True, metavar="ID...")
@click.pass_obj
def approve(home, ids):
    """Approve facts (a person's decision): they enter the prompt and the profile."""
    from anima.infra import clock

    _store(home).set_status(list(ids), "approved", clock.now())


@click.command("retire")
@click.argument("ids", nargs=-1, required=True, metavar="ID...")
@click.option("--reason", metavar="TEXT", help="Why; kept in the fact's history.")
@click.pass_obj
def retire(home, ids, reason):
    """Retire facts: kept on record, never injected or shown in the profile again."""
    from anima.infra import clock

    _store(home).set_status(list(ids), "retired", clock.now(), reason)


@click.group("profile", invoke_without_command=True)
@json_option("Print one JSON object: source and lines.")
@click.pass_context
def profile(ctx, as_json):
    """What I know about the person: a view over approved facts, never stored.

    Per tag, the newest approved fact, naming its id, and how many more the tag has
    ("N more not merged": they are not summarised for you). A hand-written profile
    (`anima profile set`) wins outright; `anima profile off` keeps it out of the prompt.
    """
    if ctx.invoked_subcommand is not None:
        return
    from anima.infra import config

    home = ctx.obj
    store = _store(home)
    enabled = config.load(home.config)["facts.profile"]
    written = store.handwritten()
    if written:
        lines, source = [line for line in written.split("\n") if line.strip()], "handwritten"
    else:
        source = "facts"
        lines = [f"{tag}: {f['text']} [{f['id']}]" + (f" ({more} more not merged)" if more else "")
                 for tag, f, more in store.profile()]
    if as_json:
        out_json({"source": source, "enabled": enabled, "lines": lines})
        return
    if not enabled:
        warn("the profile is off: `anima prompt` leaves it out (`anima profile on`)")
    out("".join(printable(line) + "\n" for line in lines))


@profile.command("set")
@click.argument("text", nargs=-1)
@click.pass_obj
def profile_set(home, text):
    """Write the profile by hand (TEXT, or stdin with `-` or no TEXT); it wins outright."""
    body = text_or_stdin(text, "profile set")
    from anima.infra import clock

    _store(home).set_handwritten(body, clock.now())


@profile.command("reset")
@click.pass_obj
def profile_reset(home):
    """Go back to the profile made from facts (the hand-written one goes to facts/archive/)."""
    from anima.infra import clock

    where = _store(home).reset_handwritten(clock.now())
    warn(f"hand-written profile moved to {where}" if where else "no hand-written profile; nothing changed")


@profile.command("on")
@click.pass_obj
def profile_on(home):
    """Print the profile in `anima prompt` (facts.profile = true)."""
    from anima.infra import config

    config.set_value(home.config, "facts.profile", "true")


@profile.command("off")
@click.pass_obj
def profile_off(home):
    """Leave the profile out of `anima prompt` (facts.profile = false)."""
    from anima.infra import config

    config.set_value(home.config, "facts.profile", "false")


@click.group("habits", invoke_without_command=True)
@json_option("Print one JSON object: habits and suggestions.")
@click.pass_context
def habits(ctx, as_json):
    """Habits: tags a person promoted, and tags with enough approved facts to suggest.

    Lists HABIT<TAB>tag<TAB>text for each habit, then SUGGEST<TAB>tag<TAB>count for each tag
    with at least facts.habit_threshold approved facts that is not a habit yet. Only a
    person makes a habit (`anima habits promote TAG`); nothing is promoted automatically.
    """
    if ctx.invoked_subcommand is not None:
        return
    from anima.infra import config

    home = ctx.obj
    store = _store(home)
    threshold = config.load(home.config)["facts.habit_threshold"]
    from anima.facts.store import habit_text

    made = store.habits()
    counts = store.tag_counts()
    newest = store.newest_by_tag()
    suggested = {t: n for t, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
                 if n >= threshold and t not in made}
    if as_json:
        out_json({"habits": made, "suggested": suggested, "threshold": threshold})
        return
    for tag, h in sorted(made.items()):
        out(f"HABIT\t{tag}\t{printable(habit_text(h, newest.get(tag)) or '')}\n")
    for tag, n in suggested.items():
        out(f"SUGGEST\t{tag}\t{n}\n")


@habits.command("promote")
@click.argument("tag")
@click.option("--text", metavar="TEXT", help="How the habit reads in the prompt.  [default: its newest fact]")
@click.option("--force", is_flag=True, help="Promote a tag with fewer approved facts than facts.habit_threshold.")
@click.pass_obj
def habits_promote(home, tag, text, force):
    """Make TAG a habit (a person's decision).

    TAG needs facts.habit_threshold approved facts (3); with fewer, --force. A tag no
    approved fact has is refused even so. Refused: exit 77, nothing written.
    """
    from anima.infra import clock, config

    threshold = config.load(home.config)["facts.habit_threshold"]
    _store(home).promote(tag, text, clock.now(), threshold, force)


@habits.command("demote")
@click.argument("tag")
@click.pass_obj
def habits_demote(home, tag):
    """Make TAG no longer a habit (its facts stay as they are)."""
    _store(home).demote(tag)
