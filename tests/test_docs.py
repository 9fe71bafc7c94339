"""The docs hold to the code: every command has help and a page, the generated parts of the pages
are what man/generate.py makes of the code today, every config key is documented, every exit
code is in anima(1)'s table, the pages lint clean, and the completions match."""

import copy
import glob
import importlib.util
import os
import re
import shutil
import subprocess

import click
import pytest

from anima import __version__
from anima.cli import COMMANDS, cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAN = os.path.join(ROOT, "man")


def load_generator():
    spec = importlib.util.spec_from_file_location("man_generate", os.path.join(MAN, "generate.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = load_generator()


def command_paths(group=cli, prefix=()):
    ctx = click.Context(group, info_name="anima")
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        yield prefix + (name,)
        if isinstance(command, click.Group):
            yield from command_paths(command, prefix + (name,))


PATHS = list(command_paths())
PAGES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(MAN, "*.[157]")))


def read(name):
    with open(os.path.join(MAN, name), encoding="utf-8") as f:
        return f.read()


def is_so(name):
    return read(name).startswith(".so ")


def plain(text):
    """Roff as the words it prints: escapes and font changes dropped, dashes and spaces kept."""
    text = re.sub(r"\\\[u([0-9A-F]{4,5})\]", lambda m: chr(int(m.group(1), 16)), text)
    text = re.sub(r"\\f[BIRP]|\\&|\\:", "", text)
    return text.replace("\\-", "-").replace("\\ ", " ").replace("\\e", "\\")


def block(text, name):
    begin = gen.BEGIN.format(name)
    assert begin in text, f"no generated {name} block"
    return text[text.index(begin): text.index(gen.END, text.index(begin))]


def test_the_commands_exist():
    assert {("init",), ("config", "set"), ("self", "revert"), ("prompt",)} <= set(PATHS)
    assert sorted(p[0] for p in PATHS if len(p) == 1) == sorted(COMMANDS)


@pytest.mark.parametrize("path", PATHS, ids=" ".join)
def test_every_command_has_help(run, path):
    r = run(*path, "--help")
    assert r.exit_code == 0
    assert r.stdout.startswith(f"Usage: anima {' '.join(path)}")
    description = r.stdout.split("\n\n")[1].strip()
    assert len(description) > 20, f"anima {' '.join(path)} has no real description"
    assert run(*path, "-h").stdout == r.stdout


# generated parts ------------------------------------------------------------------------------

def test_the_generated_parts_match_the_code():
    """Regenerated in memory from the click tree and the settings table, equal to what is committed."""
    stale = [name for name, text in gen.pages().items() if not os.path.exists(os.path.join(MAN, name))
             or read(name) != text]
    assert stale == [], "man/ is stale: run `make man`"


def test_a_changed_help_text_makes_the_pages_stale(monkeypatch):
    """The drift check can fail: change one option's help, and its page no longer matches."""
    command = cli.get_command(click.Context(cli), "recall")
    option = next(p for p in command.params if p.name == "limit")
    monkeypatch.setattr(option, "help", "Something else entirely.")
    stale = [name for name, text in gen.pages().items() if read(name) != text]
    assert stale == ["anima-recall.1"]


def test_every_top_level_command_has_a_page():
    missing = [name for name in COMMANDS if f"anima-{name}.1" not in PAGES]
    assert missing == []
    for name in COMMANDS:
        page = f"anima-{name}.1"
        if is_so(page):  # `man anima-approve` opens the family's page, which documents it
            family = re.fullmatch(r"\.so man1/(anima-[a-z-]+)\.1\n", read(page)).group(1)
            assert f"{family}.1" in PAGES and not is_so(f"{family}.1")
            assert name in gen.FAMILIES[family]


def test_every_command_is_in_a_synopsis():
    """Each (sub)command has a usage line in its page's SYNOPSIS (a group that only dispatches: its
    subcommands' lines)."""
    synopses = "\n".join(block(read(name), "SYNOPSIS") for name in PAGES if name.endswith(".1")
                         and gen.BEGIN.format("SYNOPSIS") in read(name))
    lines = re.findall(r"^\.SY (.*)$", synopses, re.M)
    usages = {plain(line) for line in lines}
    missing = [" ".join(path) for path in PATHS
               if "anima " + " ".join(path) not in usages
               and not any(u.startswith("anima " + " ".join(path) + " ") for u in usages)]
    assert missing == []


def test_every_family_page_has_the_generated_blocks():
    for page in gen.FAMILIES:
        text = read(f"{page}.1")
        for name in ("SYNOPSIS", "OPTIONS"):
            assert text.count(gen.BEGIN.format(name)) == 1, (page, name)


def test_every_page_says_this_version():
    heads = {name: re.search(r"^\.TH .*$", read(name), re.M).group() for name in PAGES if not is_so(name)}
    assert [n for n, h in heads.items() if f'"anima {__version__}"' not in h] == []


# config ---------------------------------------------------------------------------------------

def config_items(page_text):
    """key -> the words anima-config(5) says of it."""
    items = {}
    for chunk in plain(page_text).split("\n.TP\n")[1:]:
        head, _, body = chunk.partition("\n")
        m = re.match(r"(\S+) \(", head)
        if m:
            items[m.group(1)] = " ".join(line for line in body.split("\n") if not line.startswith(".S"))
    return items


def undocumented(settings, page_text):
    """Keys whose help is empty, or whose page says not that help (in words, whatever the layout)."""
    items = config_items(page_text)
    out = []
    for key, setting in settings.items():
        words = " ".join(setting.help.replace("`", "").split())  # a `command` is set in bold
        if not words or words not in " ".join(items.get(key, "").split()):
            out.append(key)
    return out


def test_every_config_key_is_documented():
    from anima.infra import config

    text = read("anima-config.5")
    assert undocumented(config.SETTINGS, text) == []
    assert undocumented({f"{t}.NAME": s for t, s in config.OPEN_TABLES.items()}, text) == []
    for key, var in config.ENV.items():
        assert var in config_items(text)[key]


def test_a_key_without_help_is_undocumented():
    """The check can fail: blank one key's help in a copy of the table, and that key is reported,
    even though the page on disk still carries its old text; delete a key's text from the page,
    and it is reported too."""
    from anima.infra import config

    text = read("anima-config.5")
    table = copy.deepcopy(config.SETTINGS)
    table["notes.dup_threshold"].help = ""
    assert undocumented(table, text) == ["notes.dup_threshold"]
    help_words = config.SETTINGS["recall.limit"].help
    assert gen.prose(help_words) in text
    cut = text.replace(gen.prose(help_words), "")
    assert undocumented(config.SETTINGS, cut) == ["recall.limit"]


def test_every_page_named_exists():
    """anima-NAME(N) in a page or the README is a page of man/ (section 7 included); a page
    named that is not there is reported."""
    def named(text):
        return {f"{m.group(1)}.{m.group(2)}" for m in re.finditer(r"\b(anima(?:-[a-z]+)*) ?\(([157])\)", plain(text))}

    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        texts = {"README.md": f.read(), **{name: read(name) for name in PAGES}}
    assert [(name, page) for name, text in texts.items() for page in sorted(named(text)) if page not in PAGES] == []
    assert named(".BR anima\\-hosts (7),\nsee \\fBanima\\-nothing\\fR(7)") == {"anima-hosts.7", "anima-nothing.7"}
    assert "anima-hosts.7" in named(read("anima.1")) and "anima-hosts.7" in named(texts["README.md"])


def test_the_format_pages_do_not_repeat_the_config_reference():
    assert [n for n in PAGES if "CONFIG.TOML" in read(n)] == []


# sizes, exit codes, words ---------------------------------------------------------------------

def test_the_overview_and_readme_are_short():
    assert read("anima.1").count("\n") <= 600
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    assert readme.count("\n") <= 250
    assert "make demo" in readme and "make test" in readme


def exit_table():
    text = read("anima.1")
    section = text[text.index(".SH EXIT STATUS"):]
    section = section[: section.index("\n.SH ")]
    assert section.count(".TS") == 1, "EXIT STATUS is one table"
    table = section[section.index(".TS"): section.index(".TE")]
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^(\d+)\t(.*)$", table, re.M)}


def test_every_exit_status_is_in_anima_1():
    from anima.infra import errors

    codes = {v for k, v in vars(errors).items() if k.isupper() and isinstance(v, int)}
    assert codes == {0, 1, 2, 65, 69, 70, 73, 74, 75, 77, 78}
    table = exit_table()
    assert sorted(table) == sorted(codes)
    assert [c for c, meaning in table.items() if not meaning.strip()] == []


def docs():
    names = [os.path.join(MAN, n) for n in PAGES] + [os.path.join(ROOT, "README.md")]
    for path in names:
        with open(path, encoding="utf-8") as f:
            yield os.path.basename(path), plain(f.read())


def test_no_page_says_a_feature_comes_later():
    said = re.compile(r"come[s]? (with )?later|not in\s+this\s+version|will be described|come with later")
    assert [name for name, text in docs() if said.search(text)] == []


def test_no_page_carries_a_measured_figure():
    """Figures live in bench/README.md, which `make bench` writes."""
    figure = re.compile(r"\b\d+\.\d+ ?(ms|s|MB)\b|(?<![%\w.])\d+(\.\d+)?x\b|times as long as|hit@\d|\bmedian of\b")
    assert [(name, m.group()) for name, text in docs() for m in [figure.search(text)] if m] == []


# lint -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("page", PAGES)
def test_man_pages_lint_clean(page, tmp_path):
    groff = shutil.which("groff")
    assert groff, "groff is missing: `make tools` installs it"
    for section in ("man1", "man5", "man7"):  # where a .so page's target lies once installed
        os.symlink(MAN, tmp_path / section)
    p = subprocess.run([groff, "-t", "-man", "-ww", "-z", os.path.join(MAN, page)], cwd=tmp_path,
                       capture_output=True, text=True)
    assert (p.returncode, p.stderr) == (0, "")


# completions and make -------------------------------------------------------------------------

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
