"""`anima internalize`: Pool B's events become her experience in the self-stream."""

import click

from anima.commands._io import out, read_input
from anima.infra import jsontext


@click.command()
@click.argument("source", metavar="[-]", required=False, type=click.Choice(["-"]))
@click.option("--one", is_flag=True, help="Narrate a single waiting event (the oldest), not all.")
@click.option("--llm", "backend", metavar="BACKEND",
              help="rules, openai or cmd:ARGV; overrides llm.backend and ANIMA_LLM.")
@click.pass_obj
def cli(home, source, one, backend):
    """Turn events into my first-person experience, appended to self/stream/now.md.

    Takes each file waiting in message_queue (claimed, oldest first; --one: a single one),
    or with `-` one envelope JSON on stdin, and appends what I live through: who spoke,
    when I last heard from them, the time of day, my state, the memories it touches
    (offline templates in core.lang). Others' words are always quoted (“…” in English,
    「…」 in Chinese), on one line, with any quotation marks inside made nested ones.
    Prints each entry as appended. An event already narrated is not narrated again.
    A waiting file that is not a valid event goes to dead_letter/ with the reason;
    an invalid envelope on stdin is exit 65, nothing written.

    With a model (--llm, llm.backend) the words said are quoted the same way and the model
    adds my experience, checked: no heading, no decision, no words of others outside
    quotation; an answer invalid twice sends the event to dead_letter/ with the raw answer.
    A model that cannot be reached is exit 69; the event waits for the next run.
    """
    from anima.infra import clock, config, llm
    from anima.infra.errors import DataError
    from anima.pipeline import queues
    from anima.stream.internalize import Internalizer

    if backend is not None:
        llm.check_backend(backend)
    worker = Internalizer(home, config.load(home.config), clock.now(), backend)
    if source == "-":
        if one:
            raise click.UsageError("give `-` or --one, not both")
        raw = read_input("-", 16 * 1024 * 1024, "internalize -", "on stdin")
        try:
            doc = jsontext.loads(raw)
        except ValueError as e:
            raise DataError(f"stdin: not valid JSON ({e})") from None
        try:
            entry = worker.one(queues.check(doc, "stdin"))
        except llm.Invalid as e:
            raise DataError(f"{e}; raw answer: {' '.join(e.raw.split())[:300]}") from None
        if entry is not None:
            out(entry)
        return
    worker.drain(1 if one else None, out)
