"""`anima consolidate`: the nightly archive, memories, autobiography and proposals."""

import sys

import click

from anima.commands._io import out, warn


@click.command()
@click.option("--dry-run", is_flag=True, help="Print the whole change as a unified diff; change nothing.")
@click.option("--now", "now", metavar="ISO", help="Consolidate as if it were this RFC 3339 time.  [default: now]")
@click.option("--llm", "backend", metavar="BACKEND",
              help="rules, openai or cmd:ARGV.  [default: llm.backend, env var: ANIMA_LLM]")
@click.option("-v", "--verbose", is_flag=True, help="Say what was done on stderr (also when stderr is a terminal).")
@click.pass_context
def cli(ctx, dry_run, now, backend, verbose):
    """Sleep on the day: archive the self-stream and distil what was lived since the last run.

    Archives now.md into self/stream/archive/DATE.md and starts a new day whose now.md
    carries my last unfinished thoughts (consolidate.carry_entries); adds what each person
    said, with when, to self/memories/about_NAME.md; appends one entry to
    self/autobiography/ (never editing one); rewrites the autobiography_summary block
    (its old version kept in .history); proposes a self-note noticed again and again for
    the personality baseline (`anima self proposals`), never writing that block. Where each
    memory line and the entry came from (archive lines and their sha256) goes to
    pipeline/derived.jsonl, for `anima verify` and `anima forget`.

    Silent on success (a summary on stderr with -v or on a terminal); nothing since the last
    run changes nothing. One at a time: another consolidate running is exit 75. No cron line
    runs it: `anima tick` does, once she has lived the trigger of consolidate.rule (the night);
    `--dry-run` shows exactly what the real run would write.
    """
    from anima.infra import clock, config, llm
    from anima.stream.consolidate import run

    if backend is not None:
        llm.check_backend(backend)
    home = ctx.obj
    cfg = config.load(home.config)
    moment = clock.parse(now, "--now") if now is not None else clock.now()
    text, c = run(home, cfg, moment, dry_run=dry_run, backend=backend)
    for message in c.warnings:
        warn(message)
    if not dry_run:  # git.autocommit's message: the day distilled (the one the entry tells)
        ctx.meta["anima.commit"] = f"consolidate {str(c.counts.get('entry') or clock.iso(moment))[:10]}"
    if dry_run:
        out(text or "")
        return
    if verbose or sys.stderr.isatty():
        k = c.counts
        if "entry" not in k:
            warn("nothing lived since the last consolidate: nothing changed")
        else:
            warn(f"consolidated {k.get('entries', 0)} entries: {k.get('archived', 0)} lines archived, "
                 f"{k.get('memories', 0)} memory lines, autobiography entry {k['entry']}, "
                 f"{k.get('proposals', 0)} proposals")
