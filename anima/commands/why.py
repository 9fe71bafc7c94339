import click

from anima.commands._io import json_option, out, out_json
from anima.infra.errors import NotFound


@click.command()
@click.option("--at", "at", metavar="TIME",
              help="An RFC 3339 time: the last prompt at or before it.  [default: the last]")
@json_option("Print one JSON object: the injection record and its pieces.")
@click.pass_obj
def cli(home, at, as_json):
    """Show what the agent was told about itself and the person, and where each piece came from.

    Every `anima prompt` logs what it injected to log/injections.jsonl (hashes and ids, never
    text). `why` takes the last prompt at or before TIME and prints a summary line, one line
    per section, then one tab-separated line per piece: SECTION, KIND (block, note, fact,
    profile line, habit, file), ID, STATE (current, revision N, live, archived, approved,
    retired, drift, gone...), WHERE it lives now, TEXT (notes and facts). Exit 1 when no
    prompt was logged by then.
    """
    from anima.infra import clock
    from anima.trust import why

    when = clock.parse(at, "--at") if at else None
    record = why.find(home, when)
    if record is None:
        raise NotFound("no prompt was logged" + (f" at or before {at}" if at else "") + " (log/injections.jsonl)")
    rows = why.explain(home, record)
    if as_json:
        out_json({**record, "pieces": rows})
        return
    lines = [f"# prompt at {record['at']}: {record.get('chars', 0)} characters, sha256 {record.get('sha256', '')}\n"]
    for section in record.get("sections", []):
        lines.append(f"# {section.get('name')}: {section.get('chars', 0)} characters, "
                     f"sha256 {section.get('sha256', '')}\n")
    for r in rows:
        text = " ".join(r["text"].split())
        lines.append("\t".join((r["section"], r["kind"], r["id"], r["state"], r["where"], text)) + "\n")
    out("".join(lines))
