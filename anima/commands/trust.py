import click

from anima.commands._io import json_option, out, out_json
from anima.infra.errors import NotFound, UsageError
from anima.trust.check import CHECKS


@click.command()
@click.option("--only", metavar="LIST", help=f"Comma-separated checks to run: {', '.join(CHECKS)}.  [default: all]")
@json_option("Print one JSON object per finding (NDJSON).")
@click.pass_obj
def check(home, only, as_json):
    """Property checks over the whole home, for cron and CI: quiet and exit 0 when sound.

    One tab-separated line per finding: CHECK, WHERE, WHAT. Checks: budget (blocks, notes
    and prompt sections within their caps), private (user private data in a note or block),
    secret (an API key, token or password in the self's text files), contradiction (two
    approved facts on a tag in facts.single_valued_tags), stale (a fact, memory line or
    autobiography entry whose source is gone or changed; `anima verify` tells which), mode
    (nothing another user can reach: the home 0700, or else files 0600 and directories 0700;
    no symbolic links), stream (pipeline/stream.jsonl in step
    with now.md and the archive: generations in order, every record's lines there as
    recorded, no line torn by a crash mid-append), rhythm (every time in
    pipeline/heartbeat/rhythm.json one anima takes), text (a text file of the self, notes/
    or facts/ that is not UTF-8, or holds a control character other than a tab or a line
    break: anima prints it as U+FFFD). A file a check cannot read is a finding of that check.
    Exit 1 when anything is found.
    Findings never repeat private data.
    """
    from anima.infra import config
    from anima.trust import check as checks

    names = None
    if only is not None:
        names = [n.strip() for n in only.split(",") if n.strip()]
        bad = [n for n in names if n not in checks.CHECKS]
        if bad or not names:
            raise UsageError(f"--only: unknown check {bad[0]!r}" if bad else "--only: no check named"
                             f"; checks: {', '.join(checks.CHECKS)}")
    found = checks.run(home, config.load(home.config), names)
    _report("check", "finding", found, ("check", "where", "what"), as_json)


def _report(command: str, noun: str, items: list, fields: tuple, as_json: bool) -> None:
    """NDJSON or tab-separated lines of `fields`; exit 1 (a line on stderr) when there are any."""
    for item in items:
        if as_json:
            out_json(item.as_dict())
        else:
            out("\t".join(getattr(item, f) for f in fields) + "\n")
    if items:
        raise NotFound(f"{command}: {len(items)} {noun}{'s' if len(items) != 1 else ''}")


@click.command()
@json_option("Print one JSON object per problem (NDJSON).")
@click.pass_obj
def verify(home, as_json):
    """Re-derive every recorded source hash; report orphans, drift and stale derivations.

    Facts (their turns), and what consolidate derived from the self-stream's archive
    (memory lines and autobiography entries, recorded in pipeline/derived.jsonl). One
    tab-separated line per problem: KIND (orphan: the source is gone; drift: the source's
    text changed; stale: the derivation no longer says what its source says, or its source
    was forgotten), WHERE (the derived thing), SOURCE, WHAT. Changes nothing. Exit 1 when
    anything is wrong.
    """
    from anima.commands._io import warn
    from anima.infra import config
    from anima.trust import provenance

    problems = provenance.verify(home, config.load(home.config), lambda m: warn(f"warning: {m}"))
    _report("verify", "problem", problems, ("kind", "where", "source", "what"), as_json)
