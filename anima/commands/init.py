import click

from anima.commands._io import warn


@click.command()
@click.option("--lang", type=click.Choice(["zh", "en"]),
              help="Language of the config and starter blocks.  [default: ANIMA_LANG, else the locale, else en]")
@click.pass_obj
def cli(home, lang):
    """Lay out the home: directories, config.toml and six starter blocks.

    Idempotent: what exists is never overwritten, so running it again only fills in what is
    missing. Directories are created 0700 and files 0600.
    """
    from anima.infra import clock
    from anima.self.init import init

    lang, created = init(home, lang, clock.now())
    if created:
        warn(f"initialised {home.root} ({lang}): {len(created)} files and directories created")
    else:
        warn(f"{home.root} is already initialised; nothing changed")
