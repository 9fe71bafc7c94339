"""`anima import-history FILE`: an old user/assistant history becomes her past in the archive."""

import click

from anima.commands._io import out


@click.command()
@click.argument("file", metavar="FILE")
@click.option("--speaker", metavar="NAME", default="user", show_default=True,
              help="Who said the user turns that carry no \"name\" of their own.")
@click.option("--dry-run", is_flag=True, help="Print the entries each archive file would get; write nothing.")
@click.pass_obj
def cli(home, file, speaker, dry_run):
    """Migrate an old history.json into first-person entries of my self-stream's archive.

    FILE is a JSON array of {"role", "content", "timestamp", "name"} messages, or an object
    with "messages"; content a string or a list of parts (their text is taken). Each user
    turn becomes "NAME said: “…”." and each of mine "I said: “…”.", quoted exactly as
    internalize quotes what is said, so nothing imported can be taken for a decision;
    system, developer and tool turns are left out. Entries are appended to
    self/stream/archive/DATE.md by each message's UTC day (undated: the time of the dated
    message before it, else the file's modification time); now.md is not touched, and FILE
    is only read. The same file content imports once (pipeline/import.jsonl): again, it
    says so on stderr and writes nothing. Silent on success.

    Not JSON, not UTF-8, not a history, a bad timestamp, a symbolic link: exit 65 with one
    line saying what, and nothing written.
    """
    from anima.commands._io import warn
    from anima.infra import clock, config
    from anima.stream.history import Importer

    result = Importer(home, config.load(home.config), clock.now()).run(file, speaker, dry_run, out)
    if result["state"] == "already":
        warn(f"{file}: already imported (sha256 {result['sha256'][:12]}); nothing written")
