import click

from anima.commands._io import warn


@click.command()
@click.option("--lang", type=click.Choice(["zh", "en"]),
              help="Language of the config, the starter blocks and her first state and entry.  "
              "[default: ANIMA_LANG, else the locale, else en]")
@click.pass_obj
def cli(home, lang):
    """Lay out the home: directories, config.toml, six starter blocks, her first state and entry.

    Her first state is self/state.md; her first entry in self/stream/now.md is her waking up
    (recorded as by init: no decision of hers). Idempotent: what exists is never overwritten,
    so running it again only fills in what is missing (a stream ever written gets no new first
    entry). Directories are created 0700 and files 0600.
    """
    from anima.infra import clock
    from anima.self.init import init
    from anima.stream.now import wake

    now = clock.now()
    lang, created = init(home, lang, now)
    created += wake(home, lang, now)
    if created:
        warn(f"initialised {home.root} ({lang}): {len(created)} files and directories created")
    else:
        warn(f"{home.root} is already initialised; nothing changed")
