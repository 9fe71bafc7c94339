"""`anima externalize`: her own decisions in the self-stream become actions in Pool B."""

import click

from anima.commands._io import out


@click.command()
@click.option("--now", "now", metavar="ISO", help="The time the actions are made at (RFC 3339).  [default: now]")
@click.option("--llm", "backend", metavar="BACKEND",
              help="rules, openai or cmd:ARGV; overrides llm.backend and ANIMA_LLM.")
@click.pass_obj
def cli(home, now, backend):
    """Turn my own decisions, written since the last run, into actions in action_queue.

    Reads the lines appended to self/stream/now.md since pipeline/externalize.cursor; only
    lines of mine (entries of `anima think` whose lines are unchanged) can decide, and only
    an explicit phrase at the start of a sentence, outside quotation: "I decide to reply to
    NAME: TEXT", "... write in my diary: TEXT", "... remember about TOPIC: TEXT", "... note:
    TEXT", "... update my state: TEXT"; 我决定回复NAME：TEXT, 我决定写日记：TEXT,
    我决定记住关于TOPIC：TEXT, 我决定记一笔：TEXT, 我决定更新状态：TEXT. Each action cites
    its line (params.cites) and is checked before it is queued; one that fails the check
    (or a reply to someone who never spoke) goes to dead_letter/ as unjustified. Prints each
    action queued, one JSON per line; no decision prints nothing. Each decision once.

    With a model (--llm, llm.backend) I first reflect on everything added since my last
    reflection; the reflection is appended to now.md as mine, and only the decisions it
    states in those phrases become actions (an action the model lists but the reflection
    does not state is dead-lettered as unjustified). A model that cannot be reached is
    exit 69, nothing changed.
    """
    from anima.infra import clock, config, llm
    from anima.stream.externalize import Externalizer

    if backend is not None:
        llm.check_backend(backend)
    at = clock.parse(now, "--now") if now is not None else clock.now()
    Externalizer(home, config.load(home.config), backend).run(at, out)
