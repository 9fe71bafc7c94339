"""Pool B from the command line: `anima say` (events in) and `anima preprocess`."""

import click

from anima.commands._io import out, read_input


@click.command("say")
@click.argument("text", nargs=-1)
@click.option("--speaker", metavar="NAME", help="Who said it (needed for a message).")
@click.option("--scene", metavar="S", help="Where it was said.")
@click.option("--kind", type=click.Choice(["message", "system", "reflection"]), default=None,
              help="What TEXT is: a message (the default; needs --speaker), a system event, or a "
                   "reflection (a thought offered to her).")
@click.option("--json", "as_json", metavar="FILE", is_flag=False, flag_value="-", default=None,
              help="Read events as JSON from FILE (`-`: stdin): one object, or NDJSON of many.")
@click.pass_obj
def say(home, text, speaker, scene, kind, as_json):
    """Put an event in the inbox: what someone said, or any event as JSON. Prints its id.

    `anima say TEXT --speaker NAME [--scene S]` is a message; `anima say --kind system TEXT`
    a system event, `--kind reflection TEXT` a thought offered to her (a host's thinking
    step: she considers it, it is never her decision). `anima say --json [FILE]` takes one
    event object, or NDJSON of many: each the payload of what happened; a message needs
    "text" and "speaker", a reflection "text"; "source_type" (message, system or
    reflection: a rhythm trigger is anima tick's and an action's result anima dispatch's
    alone to tell), "trace_id" and "ttl_sec" go into the envelope. Invalid
    JSON, a missing field, or a control character other than a tab or a line break in any
    string of an event: exit 65, one line naming the line, and nothing written, not even
    the valid ones.
    """
    from anima.infra import clock
    from anima.infra.errors import UsageError
    from anima.pipeline import events

    now = clock.now()
    if as_json is not None:
        if text or speaker or scene or kind:
            raise UsageError("--json reads whole events; give no TEXT, --speaker, --scene or --kind")
        raw = read_input(as_json, 16 * 1024 * 1024, "say --json", "on stdin or as --json FILE")
        said = events.parse_events(raw, "stdin" if as_json == "-" else as_json, "say", now)
    elif kind in ("system", "reflection"):
        if not text or speaker is not None or scene is not None:
            raise UsageError(f"say --kind {kind} TEXT (no --speaker or --scene: no one said it)")
        said = [events.event({"source_type": kind, "text": " ".join(text)}, "say", "say", now)]
    else:
        if not text or speaker is None:
            raise UsageError("say TEXT --speaker NAME (or --kind system|reflection TEXT, or --json)")
        obj = {"text": " ".join(text), "speaker": speaker}
        if scene is not None:
            obj["scene"] = scene
        said = [events.event(obj, "say", "say", now)]
    for eid in events.say(home, said):
        out(eid + "\n")


@click.command("preprocess")
@click.pass_obj
def preprocess(home):
    """Move every waiting event into message_queue, each in the same envelope.

    From inbox/pending, inbox/system and rhythm/triggers, oldest first; a malformed file goes
    to dead_letter/ beside a .reason file, the rest still flow. Silent on success; run it
    from cron through `anima tick`, or after `anima say`.
    """
    from anima.infra import clock
    from anima.pipeline import events

    events.preprocess(home, clock.now())


@click.command("dispatch")
@click.pass_obj
def dispatch(home):
    """Carry out the actions waiting in action_queue; each result becomes an inbox event.

    A file holds one action ({"command", "params"}) or a list ({"actions": [...]}: each item
    once, in order, failing alone). Built in: reply {to, text} (into pipeline/outbox/ for the
    host: `anima outbox`), diary.write {text}, state.update {text}, note.add {text},
    memory.write {topic, text}. Any other command, and a reply a person wired, runs only from
    [dispatch.commands] (an argv, {param} filled in, never a shell) or an executable
    hooks/NAME (the action JSON on stdin). Unknown or failing: dead_letter/ with the reason.
    A journal keeps a re-run after a crash from doing anything twice. Silent on success.
    """
    from anima.infra import clock, config
    from anima.pipeline import dispatch as dispatching

    dispatching.dispatch(home, config.load(home.config), clock.now())


@click.command("metrics")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--prom", is_flag=True, help="Print Prometheus text format (node_exporter's textfile collector).")
@click.pass_obj
def metrics(home, as_json, prom):
    """Print how Pool B is doing: per queue waiting, claimed, done, dead and the oldest's age;
    events per hour over the last day; dispatch results; model calls; the last tick; facts
    waiting for a person. KEY<TAB>value lines."""
    import json

    from anima.pipeline import metrics as measuring

    m = measuring.collect(home)
    if prom:
        out(measuring.prometheus(m))
    elif as_json:
        out(json.dumps(m, ensure_ascii=False) + "\n")
    else:
        out(measuring.text(m))


@click.command("route")
@click.pass_obj
def route(home):
    """Move waiting files between queues by the [[routes.rules]] in config.toml, one pass.

    switch (conditions on JSON paths: == != < > in contains exists matches; the first case
    that holds wins, else the default), broadcast (a copy to each queue), merge (by trace id:
    all of `expect` parts into one, or any: the first). A queue is one of anima's or a plain
    name (pipeline/NAME/). An invalid topology is exit 78 before anything moves.
    """
    from anima.infra import clock, config
    from anima.pipeline import route as routing

    routing.run(home, config.load(home.config)["routes.rules"], clock.now())
