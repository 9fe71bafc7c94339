"""Every command has help, appears in anima(1); the man pages lint clean; completions match."""

import os
import re
import shutil
import subprocess

import click
import pytest

from anima.cli import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def command_paths(group=cli, prefix=()):
    ctx = click.Context(group, info_name="anima")
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        yield prefix + (name,)
        if isinstance(command, click.Group):
            yield from command_paths(command, prefix + (name,))


PATHS = list(command_paths())


def test_the_commands_exist():
    assert {("init",), ("config", "set"), ("self", "revert"), ("prompt",)} <= set(PATHS)


@pytest.mark.parametrize("path", PATHS, ids=" ".join)
def test_every_command_has_help(run, path):
    r = run(*path, "--help")
    assert r.exit_code == 0
    assert r.stdout.startswith(f"Usage: anima {' '.join(path)}")
    description = r.stdout.split("\n\n")[1].strip()
    assert len(description) > 20, f"anima {' '.join(path)} has no real description"
    assert run(*path, "-h").stdout == r.stdout


def man_text(page):
    with open(os.path.join(ROOT, "man", page), encoding="utf-8") as f:
        text = f.read()
    # drop roff escapes and font changes so "self set" is found however it is typeset
    return re.sub(r"\\f[BIRP]|\\-|\\&|\\ ", lambda m: {"\\-": "-", "\\ ": " "}.get(m.group(), ""), text)


@pytest.mark.parametrize("path", PATHS, ids=" ".join)
def test_every_command_is_in_the_man_page(path):
    text = man_text("anima.1")
    assert re.search(r"\b" + r"\s+".join(map(re.escape, path)) + r"\b", text), f"anima {' '.join(path)}"


def test_every_config_key_is_in_anima_5():
    from anima.infra.config import SETTINGS

    text = man_text("anima.5")
    missing = [key for key in SETTINGS if key.rsplit(".", 1)[1] not in text]
    assert missing == []


def test_every_exit_status_is_in_anima_1():
    from anima.infra import errors

    text = man_text("anima.1")
    section = text[text.index(".SH EXIT STATUS"):]
    section = section[: section.index(".SH", 4)]
    codes = {v for k, v in vars(errors).items() if k.isupper() and isinstance(v, int)}
    assert [c for c in sorted(codes) if not re.search(rf"\b{c}\b", section)] == []


@pytest.mark.parametrize("page", ["anima.1", "anima.5"])
def test_man_pages_lint_clean(page):
    groff = shutil.which("groff")
    assert groff, "groff is missing: `make tools` installs it"
    p = subprocess.run([groff, "-man", "-ww", "-z", os.path.join(ROOT, "man", page)],
                       capture_output=True, text=True)
    assert (p.returncode, p.stderr) == (0, "")


@pytest.mark.parametrize("shell, file", [("bash", "anima.bash"), ("zsh", "_anima"), ("fish", "anima.fish")])
def test_completions_are_up_to_date(anima_bin, shell, file):
    env = {**os.environ, "_ANIMA_COMPLETE": f"{shell}_source"}
    generated = subprocess.run([anima_bin], env=env, capture_output=True, text=True, check=True).stdout
    with open(os.path.join(ROOT, "completions", file), encoding="utf-8") as f:
        assert f.read() == generated, "completions/ is stale: run `make completions`"


def test_completion_offers_block_keys(anima_bin):
    env = {**os.environ, "_ANIMA_COMPLETE": "bash_complete", "COMP_WORDS": "anima self set d", "COMP_CWORD": "3"}
    out = subprocess.run([anima_bin], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["plain,direction"]


def test_make_help_lists_the_targets():
    out = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    targets = {line.split()[0] for line in out.splitlines() if line.strip()}
    assert {"demo", "test", "lint", "bench", "man", "completions", "install", "uninstall"} <= targets
