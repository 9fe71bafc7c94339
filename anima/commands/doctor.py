import click

from anima.commands._io import json_option, out, out_json
from anima.infra.errors import NotFound


@click.command()
@json_option("Print one JSON object per check (NDJSON): status, check, detail, fix.")
@click.pass_obj
def cli(home, as_json):
    """Is this home healthy and wired? One line per check: OK, WARN or FAIL, and the fix.

    Checks: the home, its permissions and symbolic links, config.toml and the six blocks,
    whether `anima prompt` can run (it is assembled, with none of its side effects), the
    recall index's coverage, queue backlogs and dead letters, the last tick (is cron wired?),
    the last consolidate, the model endpoint (reached with GET /models for openai, found on
    PATH for cmd:) and the model budget left this hour. Lines are tab-separated: STATUS, CHECK,
    DETAIL, FIX (empty when OK). Exit 1 when any check FAILs; WARN alone exits 0.
    """
    from anima.infra import clock
    from anima.trust import doctor

    lines = doctor.run(home, clock.now())
    for line in lines:
        if as_json:
            out_json(line.as_dict())
        else:
            out("\t".join((line.status, line.check, line.detail, line.fix)).rstrip("\t") + "\n")
    failed = sum(line.status == doctor.FAIL for line in lines)
    if failed:
        raise NotFound(f"doctor: {failed} check{'s' if failed != 1 else ''} failed")
