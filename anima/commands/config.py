import click

from anima.commands._io import json_option, out, out_json


@click.group()
def cli():
    """Get, set and list settings in config.toml.

    Keys are dotted (`prompt.budget.notes`). `set` validates the value and keeps the
    file's comments and layout; an unknown key (exit 2) or an invalid value (exit 78)
    changes nothing.
    """


@cli.command("get")
@click.argument("key")
@json_option("Print the value as JSON.")
@click.pass_obj
def get(home, key, as_json):
    """Print the effective value of KEY."""
    from anima.infra import config

    config.setting(key)
    value = config.load(home.config)[key]
    if as_json:
        out_json(value)
    else:
        out(config.show_value(value, key) + "\n")


@cli.command("set")
@click.argument("key")
@click.argument("value")
@click.pass_obj
def set_(home, key, value):
    """Set KEY to VALUE in config.toml (a list: comma-separated, or a JSON array of strings)."""
    from anima.infra import config

    config.set_value(home.config, key, value)


@cli.command("list")
@json_option("Print one JSON object of all settings.")
@click.pass_obj
def list_(home, as_json):
    """Print every setting and its effective value, tab-separated."""
    from anima.infra import config

    cfg = config.load(home.config)
    if as_json:
        out_json(cfg.values)
    else:
        out("".join(f"{key}\t{config.show_value(value, key)}\n" for key, value in cfg.values.items()))
