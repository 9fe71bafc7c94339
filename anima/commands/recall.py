import sys

import click

from anima.commands._io import out, out_json, warn
from anima.infra.errors import UsageError
from anima.recall.index import WHO


@click.command()
@click.argument("terms", nargs=-1)
@click.option("--limit", metavar="N", type=click.IntRange(1), help="Results per query.  [default: recall.limit, 10]")
@click.option("--since", metavar="DATE",
              help="Only turns on or after DATE (YYYY-MM-DD, its midnight UTC, or RFC 3339).")
@click.option("--who", type=click.Choice(WHO), help="Only the user's, my or delegated turns.")
@click.option("--no-tiers", is_flag=True, help="Rank by score alone, not the user's words first.")
@click.option("--json", "as_json", is_flag=True,
              help="NDJSON: session, line, date, who, text, score, terms, relaxed, path, also.")
@click.option("--ask", "question", metavar="QUESTION",
              help="A question in plain language instead of TERMS: function words dropped, dates used.")
@click.option("--batch", is_flag=True,
              help="One question in plain language per stdin line (as --ask); NDJSON out, each result with `query`.")
@click.option("--jobs", metavar="N", type=click.IntRange(1, 64),
              help="Processes to share a --batch of 16 questions or more among, the index on.  "
                   "[default: recall.jobs, 2]")
@click.option("--facts", "in_facts", is_flag=True,
              help="Search the approved facts instead: ID, approved, tags, text (never retired ones).")
@click.option("--self", "in_self", is_flag=True,
              help="Search my own past instead (autobiography, stream, memories, diary): FILE, LINE, DATE, KIND, "
                   "SNIPPET.")
@click.pass_obj
def cli(home, terms, limit, since, who, no_tiers, as_json, question, batch, jobs, in_facts, in_self):
    """Search the transcripts for TERMS; print where each was said.

    Turns that hold every term come first, then turns with some of them (relaxed); a turn is
    scored with its neighbours in the session, so an answer ranks beside the question it
    answers. For a question, a turn that asks it again or lies outside a date it names is not
    first for holding every word. One result per line, tab-separated: SESSION, LINE (1-based, in the decompressed
    file), DATE, WHO (user, me, delegated), SNIPPET. The user's own words rank first, then
    mine, then delegated, then by score. Exit 1 when nothing matched.
    """
    from anima.infra import config
    from anima.recall import search as recall

    cfg = config.load(home.config)
    if question is not None or batch:  # (only a question is read: TERMS need not pay for importing it)
        from anima.recall import ask
    if sum(map(bool, (terms, question is not None, batch))) > 1:
        raise UsageError("give TERMS, --ask QUESTION or --batch, one of them")
    if in_self:
        return _search_self(home, cfg, ask.query(question) if question is not None else recall.Query(list(terms)),
                            limit, since, who, as_json, batch, in_facts)
    if batch and in_facts:
        raise UsageError("--facts searches for TERMS; it does not take --batch")
    if batch:
        from anima.infra import fs

        # a line ends at "\n" alone (a question may hold U+2028 or a form feed, which
        # splitlines would cut at); a CRLF's "\r" is no part of it
        lines = fs.decode(sys.stdin.buffer.read(), "stdin").split("\n")
        if lines[-1] == "":
            lines.pop()  # (the end of the last line, not a line)
        queries = [ask.query(line.removesuffix("\r")) for line in lines]
    else:
        queries = [ask.query(question) if question is not None else recall.Query(list(terms))]
        if not queries[0].raw:
            raise UsageError("give at least one search term (letters, digits or CJK characters)")
    filters = recall.Filters(recall.parse_since(since), who)
    if in_facts:
        return _search_facts(home, queries[0], limit or cfg["recall.limit"], as_json)

    def warning(message):
        warn(f"warning: {message}")

    ranked = recall.run(home, cfg, queries, filters, limit or cfg["recall.limit"], not no_tiers, warning, warn,
                        jobs or cfg["recall.jobs"])
    for number, results in enumerate(ranked):
        if results and not recall.answers(results) and not batch:
            warn(recall.RELAXED)
        for r in results:
            if batch:
                out_json({"query": number, **recall.as_json(r)})
            elif as_json:
                out_json(recall.as_json(r))
            else:
                out(recall.as_line(r, cfg["recall.snippet_chars"]))
    if not any(ranked):
        sys.exit(1)  # like grep: nothing matched, nothing said


def _search_facts(home, query, limit, as_json):
    from anima.facts.store import FactStore, last_change, search

    found, relaxed = search(FactStore(home).approved(), query)
    if relaxed and found:
        warn("no fact has every term; showing facts with any of them (relaxed)")
    for f in found[:limit]:
        approved = last_change(f, "approved")
        if as_json:
            out_json({**f, "relaxed": relaxed})
        else:
            out(f"{f['id']}\t{approved[:10]}\t{','.join(f.get('tags', []))}\t{f['text']}\n")
    if not found:
        sys.exit(1)


def _search_self(home, cfg, query, limit, since, who, as_json, batch, in_facts):
    from anima.recall import past
    from anima.recall.search import answers, parse_since

    for given, name in ((in_facts, "--facts"), (who, "--who"), (batch, "--batch")):
        if given:
            raise UsageError(f"--self searches my own past for TERMS; it does not take {name}")
    found = past.search(home, query, parse_since(since), limit or cfg["recall.limit"],
                        lambda m: warn(f"warning: {m}"))
    if found and not answers(found):
        warn("no paragraph has every term; showing paragraphs with any of them (relaxed)")
    for h in found:
        out_json(past.as_json(h)) if as_json else out(past.as_line(h, cfg["recall.snippet_chars"]))
    if not found:
        sys.exit(1)
