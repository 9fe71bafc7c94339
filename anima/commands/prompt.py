import os

import click

from anima.commands._io import out, warn


@click.command()
@click.option("--cwd", metavar="DIR", type=click.Path(exists=True, file_okay=False),
              help="Directory whose AGENTS.md is the project context.  [default: the current directory]")
@click.option("--lang", type=click.Choice(["zh", "en"]), help="Language of headings and frames.  [default: core.lang]")
@click.option("--stats", is_flag=True, help="Write SECTION, used and limit characters per section to stderr.")
@click.option("--sections", metavar="LIST", help="Comma-separated sections to print (in their fixed order).  "
              "[default: prompt.sections]")
@click.pass_obj
def cli(home, cwd, lang, stats, sections):
    """Print the text a host puts into its system prompt, every turn.

    Sections, in this order: self, notes, profile, conclusions, habits, project. Each has
    its heading outside a ```md fence and its body inside. The output depends only on the
    files, config and flags, byte for byte, and is cached until one of them changes.
    """
    from anima.host import prompt
    from anima.infra import clock

    result = prompt.build(home, cwd or os.getcwd(), lang, prompt.section_names(sections), clock.now())
    for message in result.warnings:
        warn(message)
    out(result.text)
    if stats:
        click.echo(prompt.format_stats(result.stats), err=True, nl=False)
