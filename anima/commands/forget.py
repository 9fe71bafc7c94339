import sys

import click

from anima.commands._io import out, warn
from anima.infra.errors import UsageError


@click.command()
@click.option("--session", "session_id", metavar="ID", help="Forget a session: its transcript and every fact from it.")
@click.option("--fact", "fact_id", metavar="ID", help="Forget one fact, its text and history.")
@click.option("--source", metavar="PATH:LINE", help="Forget one turn of a transcript under the home, and its facts; "
              "or one line of self/stream/now.md or self/stream/archive/DATE.md, and what consolidate made of it.")
@click.option("--yes", is_flag=True, help="Do it without asking (needed when stdin is not a terminal).")
@click.pass_obj
def cli(home, session_id, fact_id, source, yes):
    """Remove a source and everything derived from it; keep only a tombstone.

    Give one of --session, --fact, --source. First the full list of what goes is printed,
    one tab-separated line each (WHAT, WHERE); then, on a terminal, a question; elsewhere
    --yes is required (without it: exit 2, nothing removed). With the source go the facts
    staged from it, the whole cache/ and the recall index's entries (the index is rebuilt).
    A turn is blanked in place, so no other line changes its number. A line of the
    self-stream becomes a first-person tombstone line without content (so do the copies a
    night carried of it); the memory lines derived from it are removed, the autobiography
    entries citing it become tombstones, the autobiography_summary block is written without
    them (pipeline/derived.jsonl says which). log/forgotten.jsonl records when and what
    (paths and ids, never content). A transcript outside the home is listed and left where
    it is; one too damaged to read is found by its file name and removed whole. Exit 1 when
    the source is not found; 65 for a turn of a damaged .jsonl.zst (blanking it would lose
    the unreadable rest: --session removes the file); 75 when consolidate runs or the home
    changed between the list and the answer.
    """
    from anima.infra import clock, config
    from anima.trust import forget

    now = clock.now()
    given = [v for v in (session_id, fact_id, source) if v is not None]
    if len(given) != 1:
        raise UsageError("forget: give exactly one of --session ID, --fact ID, --source PATH:LINE")
    cfg = config.load(home.config)
    if session_id is not None:
        plan = forget.session(home, cfg, session_id, _warning)
    elif fact_id is not None:
        plan = forget.fact(home, cfg, fact_id)
    else:
        plan = forget.source(home, cfg, source, now, _warning)
    out("".join(f"{s.what}\t{s.where}\n" for s in plan.steps))
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError("forget: not on a terminal; give --yes to forget the above")
        if not click.confirm(f"Forget {plan.target} and all the above?", err=True):
            raise UsageError("forget: not confirmed; nothing forgotten")
    forget.carry_out(home, plan, now, warn)


def _warning(message: str) -> None:
    warn(f"warning: {message}")
