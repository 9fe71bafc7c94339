"""Write the parts of the man pages that the code knows: `make man` runs this.

    python man/generate.py           rewrite man/ in place
    python man/generate.py --check   exit 1, naming each page, if one differs from the code

From the click tree of `anima.cli.cli` (walked with list_commands/get_command, subcommands
included) it writes, between the marker comments of each section 1 page,

    .\\" BEGIN GENERATED SYNOPSIS ... .\\" END GENERATED     every (sub)command's usage
    .\\" BEGIN GENERATED OPTIONS ...  .\\" END GENERATED     every option: flags, metavar,
                                                           choices, default, env var, help

and in anima(1) the COMMANDS list (one line each, from cli.COMMANDS, with its page); in
anima-home(5) the word lists of the private-data detector (WORDS, from anima.notes.privacy); and
in any page with a GLYPHS block, the glyph-fallback lines for every CJK character it uses.  The
one-line
`.so` pages that make `man anima-approve` open anima-facts(1) are written whole, and so is
anima-config(5), from the settings table of anima.infra.config.  Everything else in a page is
written by hand and left as it is.

FAMILIES below is the one table of which command is documented on which page.
"""

import os
import re
import sys

import click

from anima.cli import COMMANDS, cli
from anima.infra import config

MAN = os.path.dirname(os.path.abspath(__file__))

# page (section 1) -> the top-level commands it documents, in the order it documents them.
FAMILIES = {
    "anima-init": ["init"],
    "anima-config": ["config"],
    "anima-self": ["self"],
    "anima-note": ["note"],
    "anima-session": ["session"],
    "anima-recall": ["recall"],
    "anima-index": ["index"],
    "anima-facts": ["stage", "facts", "approve", "retire", "profile", "habits"],
    "anima-tools": ["tools", "call"],
    "anima-mcp": ["mcp"],
    "anima-hooks": ["hooks"],
    "anima-prompt": ["prompt"],
    "anima-say": ["say", "preprocess"],
    "anima-dispatch": ["dispatch"],
    "anima-outbox": ["outbox"],
    "anima-route": ["route"],
    "anima-queue": ["queue", "metrics"],
    "anima-tick": ["tick"],
    "anima-stream": ["stream", "think", "state", "memories", "diary"],
    "anima-internalize": ["internalize"],
    "anima-externalize": ["externalize"],
    "anima-consolidate": ["consolidate"],
    "anima-import-history": ["import-history"],
    "anima-export": ["export", "import"],
    "anima-why": ["why"],
    "anima-verify": ["verify", "check"],
    "anima-doctor": ["doctor"],
    "anima-forget": ["forget"],
}

# How anima(1) groups its COMMANDS list: heading -> pages.
GROUPS = [
    ("Home and settings", ["anima-init", "anima-config", "anima-export", "anima-import-history"]),
    ("The self layer and self-notes", ["anima-self", "anima-note"]),
    ("Transcripts, recall and facts", ["anima-session", "anima-recall", "anima-index", "anima-facts"]),
    ("A host's commands", ["anima-prompt", "anima-tools", "anima-mcp", "anima-hooks"]),
    ("Pool B: the pipeline",
     ["anima-say", "anima-dispatch", "anima-outbox", "anima-route", "anima-queue", "anima-tick"]),
    ("Pool A: the self-stream and the translators",
     ["anima-stream", "anima-internalize", "anima-externalize", "anima-consolidate"]),
    ("Trust", ["anima-why", "anima-verify", "anima-doctor", "anima-forget"]),
]

BEGIN = '.\\" BEGIN GENERATED {} (man/generate.py; edit the code, then `make man`)'
END = '.\\" END GENERATED'


def page_of(name: str) -> str:
    for page, names in FAMILIES.items():
        if name in names:
            return page
    raise KeyError(f"anima {name} is on no page: add it to FAMILIES in man/generate.py")


# roff ------------------------------------------------------------------------------------------

def esc(text: str) -> str:
    """Plain text as roff: backslashes, dashes, and a leading dot or quote made harmless."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    text = "".join(c if ord(c) < 128 else f"\\[u{ord(c):04X}]" for c in text)
    return "\n".join("\\&" + line if line[:1] in (".", "'") else line for line in text.split("\n"))


def prose(text: str) -> str:
    """Help text as roff: a `command` in backquotes set in bold."""
    return re.sub(r"`([^`\n]+)`", lambda m: f"\\fB{m.group(1)}\\fR", esc(text))


def word(token: str) -> str:
    """One token of a usage line: options bold, metavars italic, brackets and bars roman."""
    out = []
    for part in re.split(r"([\[\]{}|.,/]+)", token):
        if not part:
            continue
        if re.fullmatch(r"[\[\]{}|.,/]+", part):
            out.append(esc(part).replace("|", "|\\:"))  # a line may break after a bar
        elif part.startswith("-") or part.islower():  # an option, or a choice: typed as it is
            out.append(f"\\fB{esc(part)}\\fR")
        else:
            out.append(f"\\fI{esc(part)}\\fR")
    return "".join(out)


def usage_words(text: str) -> str:
    return " ".join(word(t) for t in text.split())


# the click tree ----------------------------------------------------------------------------------

def context(path: list[str]):
    ctx = click.Context(cli, info_name="anima")
    command = cli
    for name in path:
        command = command.get_command(ctx, name)
        ctx = click.Context(command, info_name=name, parent=ctx)
    return command, ctx


def subcommands(command, ctx):
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            yield name, command.get_command(ctx, name)


def walk(path: list[str]):
    """(path, command, ctx) of a command and each of its subcommands, depth first."""
    command, ctx = context(path)
    yield path, command, ctx
    for name, _ in subcommands(command, ctx):
        yield from walk(path + [name])


def is_unset(value) -> bool:
    return value is None or type(value).__name__ == "Sentinel" or callable(value)


def option_term(param, ctx) -> str:
    return usage_words(param.get_help_record(ctx)[0])


def synopsis_line(path: list[str], command, ctx) -> list[str]:
    """.SY/.YS usage of one command: its options (each in brackets), then its arguments."""
    out = [".SY " + "\\ ".join(["anima", *map(esc, path)])]
    for param in command.get_params(ctx):
        if isinstance(param, click.Option):
            if param.hidden or param is command.get_help_option(ctx):
                continue
            names = param.opts[-1] if not param.secondary_opts else param.opts[-1] + "|" + param.secondary_opts[-1]
            if param.is_flag or param.count:
                shown = word(names)
            else:
                shown = word(names) + " " + usage_words(param.make_metavar(ctx))
            out.append(shown if param.required else f"[{shown}]")
        else:
            out.append(usage_words(param.make_metavar(ctx)))
    if isinstance(command, click.Group):
        out.append(usage_words("COMMAND" if command.invoke_without_command is False else "[COMMAND]"))
    out.append(".YS")
    return out


def option_items(command, ctx) -> list[str]:
    out = []
    for param in command.get_params(ctx):
        if not isinstance(param, click.Option) or param.hidden or param is command.get_help_option(ctx):
            continue
        record = param.get_help_record(ctx)
        text = param.help or ""
        extras = []
        if isinstance(param.type, click.Choice) and "[" not in record[0]:
            extras.append("One of " + ", ".join(map(str, param.type.choices)) + ".")
        span = value_range(param.type)
        if span and span not in text:
            extras.append(f"Range: {span}.")
        if not param.is_flag and not is_unset(param.default) and "[default:" not in text:
            default = param.default
            if isinstance(default, (list, tuple)):
                default = ", ".join(map(str, default))
            if default != "":
                extras.append(f"Default: {default}.")
        envvars = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or ())
        if envvars:
            extras.append("Environment: " + ", ".join(envvars) + ".")
        if param.required:
            extras.append("Required.")
        out += [".TP", option_term(param, ctx), prose(" ".join((text + " " + " ".join(extras)).split()))]
    return out


def value_range(kind) -> str:
    """An IntRange's or FloatRange's bounds in words ('0 to 3', 'at least 1'), else ''."""
    low, high = getattr(kind, "min", None), getattr(kind, "max", None)
    if not isinstance(kind, (click.IntRange, click.FloatRange)) or (low is None and high is None):
        return ""
    if low is not None and high is not None:
        return f"{low} to {high}"
    return f"at least {low}" if low is not None else f"at most {high}"


def short_help(command) -> str:
    return command.get_short_help_str(limit=200)


def synopsis(names: list[str]) -> list[str]:
    out = [".SH SYNOPSIS"]
    for name in names:
        for path, command, ctx in walk([name]):
            if isinstance(command, click.Group) and not command.invoke_without_command \
                    and not [p for p in command.params if isinstance(p, click.Option)]:
                continue  # a group that only dispatches: its subcommands' lines say it all
            out += synopsis_line(path, command, ctx)
    return out


def options(names: list[str]) -> list[str]:
    out = [".SH OPTIONS",
           "Every command also takes",
           ".B \\-h",
           "and",
           ".BR \\-\\-help ,",
           "and the global options of",
           ".BR anima (1)",
           "before its name",
           ".RB ( \\-\\-home ).",
           "What each command says about itself, and its options:"]
    for name in names:
        for path, command, ctx in walk([name]):
            items = option_items(command, ctx)
            if isinstance(command, click.Group) and not items and not command.invoke_without_command:
                continue
            out += [".SS " + esc(" ".join(["anima", *path])), prose(short_help(command))]
            out += items if items else [".PP", "No options."]
    return out


def commands_list() -> list[str]:
    out = [".SH COMMANDS",
           "Each command has a page of its own, or shares one with its family;",
           ".B anima",
           ".I COMMAND",
           ".B \\-\\-help",
           "prints the short form."]
    for heading, pages in GROUPS:
        out.append(".SS " + esc(heading))
        for page in pages:
            for name in FAMILIES[page]:
                out += [f".IP \\fB{esc(name)}\\fR 16n",
                        prose(COMMANDS[name][1]) + f" See \\fB{esc(page)}\\fR(1)."]
    return out


def global_options() -> list[str]:
    out = [".SH OPTIONS", "Given before the command."]
    out += option_items(cli, click.Context(cli, info_name="anima"))
    return out


# pages -------------------------------------------------------------------------------------------

def fill(path: str, text: str, blocks: dict[str, list[str]]) -> str:
    """`text` with every generated block in it replaced by `blocks`; a block missing is an error."""
    for name, lines in blocks.items():
        pattern = re.compile(re.escape(BEGIN.format(name)) + r"\n.*?" + re.escape(END) + r"\n", re.S)
        if not pattern.search(text):
            raise SystemExit(f"{path}: no generated block {name}: add the two marker lines")
        body = "\n".join([BEGIN.format(name), *lines, END]) + "\n"
        text = pattern.sub(lambda m, body=body: body, text, count=1)
    return text


GLYPH_MACRO = [
    '.\\" Glyphs a device lacks (CJK on ps or ascii) print as <uXXXX> instead of a warning.',
    ".de glyph-fallback",
    ".  while \\\\n[.$] \\{\\",
    ".    if !c\\[\\\\$1] .char \\[\\\\$1] <\\\\$1>",
    ".    shift",
    ".  \\}",
    "..",
]


def glyphs(text: str) -> list[str]:
    """The glyph-fallback block for every \\[uXXXX] a page uses (none: no block)."""
    names = sorted(set(re.findall(r"\\\[(u[0-9A-F]{4,5})\]", text)))
    if not names:
        return []
    return GLYPH_MACRO + [".glyph-fallback " + " ".join(names[i:i + 12]) for i in range(0, len(names), 12)]


def privacy_words() -> list[str]:
    """anima-home(5)'s word lists, as the detector holds them (anima.notes.privacy)."""
    from anima.notes import privacy

    lists = [("Health, refused wherever they stand", privacy.HEALTH),
             ("Health, refused beside a person other than me, and no software", privacy.HEALTH_IN_CONTEXT),
             ("Finance, refused wherever they stand", privacy.FINANCE),
             ("Finance, refused beside a person other than me", privacy.FINANCE_IN_CONTEXT),
             ("Finance, refused beside a person and a sum of money", privacy.FINANCE_WITH_AMOUNT),
             ("Orientation and religion, refused said of a person", privacy.TRAIT),
             ("Orientation and religion, refused beside a person", privacy.TRAIT_IN_CONTEXT)]
    out = []
    for title, words in lists:
        out += [".TP", esc(title), esc(", ".join(words)) + "."]
    return out


def gitignore() -> list[str]:
    """The .gitignore anima init writes (anima.infra.home.GITIGNORE), as an example block."""
    from anima.infra.home import GITIGNORE

    return [".EX", *(esc(line) for line in GITIGNORE.splitlines()), ".EE"]


def config_page(head: str) -> str:
    """anima-config(5), every word of it from anima.infra.config."""
    out = [head,
           ".SH NAME",
           "anima\\-config \\- config.toml, the settings of an anima home",
           ".SH SYNOPSIS",
           ".I $ANIMA_HOME/config.toml",
           ".SH DESCRIPTION",
           ".I config.toml",
           "is a TOML file of the home that",
           ".B anima init",
           "writes with every setting spelled out at its default, each with its help as a comment.",
           "A missing key takes its default; a missing file means every default.",
           "A file that is not valid TOML, holds an unknown key or an invalid value is an error",
           "(exit 78) naming the file and the key; it is never repaired by writing defaults over it.",
           ".PP",
           "Precedence: a command\\-line flag, then the",
           ".B ANIMA_*",
           "environment variable named below, then",
           ".IR config.toml ,",
           "then the default.",
           ".PP",
           ".B anima config set",
           ".I KEY VALUE",
           "checks the value against the key's type, then writes it under the file's lock and",
           "atomically, keeping the file's comments and layout; an invalid value is refused and the",
           "file is left as it was.",
           "A list is given comma\\-separated, a table or a list of tables as JSON.",
           ".B anima config get",
           "prints a value in the form",
           ".B config set",
           "takes back;",
           ".B anima config list",
           "prints every key with its value.",
           "The values are cached in",
           ".I cache/config.json",
           "while the file is unchanged (see",
           ".BR anima\\-home (5))."]
    out.append(".SH SETTINGS")
    table = None
    for key, setting in config.SETTINGS.items():
        tname, name = key.rsplit(".", 1)
        if tname != table:
            table = tname
            out += [".SS " + esc(f"[{tname}]"), prose(config.TABLE_HELP[tname])]
        out += [".TP", f"\\fB{esc(key)}\\fR (" + esc(kind_of(setting)) + ")",
                prose(setting.help),
                ".br",
                "Default: " + esc(default_of(key, setting)) + "."]
        if key in config.ENV and config.ENV[key] not in setting.help:
            out += [".br", f"Environment: \\fB{esc(config.ENV[key])}\\fR."]
        if setting.runs:
            out += [".br", "It can name a program for anima to run, so it never arrives from an archive armed:",
                    "\\fBanima import\\fR leaves it as a comment at the end of \\fIconfig.toml\\fR, with the",
                    "\\fBanima config set\\fR command that enables it, and names it on stderr (see",
                    "\\fBanima\\-export\\fR(1))."]
    for tname, setting in config.OPEN_TABLES.items():
        if tname not in config.TABLE_HELP:
            continue
        if tname != table:
            out += [".SS " + esc(f"[{tname}]"), prose(config.TABLE_HELP[tname])]
        out += [".TP", f"\\fB{esc(tname)}.\\fINAME\\fR (" + esc(kind_of(setting)) + ")",
                prose(setting.help), ".br", "Default of a name not set: " + esc(default_of(tname, setting)) + "."]
    out += [".SH ENVIRONMENT"]
    for key, var in config.ENV.items():
        out += [".TP", f".B {esc(var)}", f"Overrides \\fB{esc(key)}\\fR."]
    out += [".SH FILES",
            ".TP", ".I $ANIMA_HOME/config.toml", "The settings.",
            ".TP", ".I $ANIMA_HOME/cache/config.json", "Its parsed values, rebuilt when the file changes.",
            ".SH SEE ALSO",
            ".BR anima (1),",
            ".BR anima\\-config (1),",
            ".BR anima\\-home (5),",
            ".BR anima\\-pipeline (5)",
            "(the routes, the dispatch commands and the rhythm in detail),",
            ".BR anima\\-transcripts (5)",
            "(the transcript sources)"]
    body = "\n".join(out[1:]) + "\n"
    return "\n".join([head, ".nh", *glyphs(body)]) + "\n" + body


def kind_of(setting) -> str:
    if setting.kind == "int":
        return f"integer, {setting.low} to {setting.high}"
    if setting.kind == "bool":
        return "boolean"
    if setting.kind == "choice":
        return "one of " + ", ".join(setting.choices)
    if setting.kind == "list":
        return "list drawn from " + ", ".join(setting.choices)
    return {"words": "list of strings", "filename": "file name", "cron": "5-field cron expression or \"off\"",
            "text": "string", "backend": "backend: rules, openai or cmd:ARGV",
            "commands": "table of name = [argv, ...]", "routes": "array of tables"}.get(setting.kind, setting.kind)


def default_of(key, setting) -> str:
    if setting.kind in ("commands", "routes"):
        return "none" if not setting.default else config.show_value(setting.default, key)
    if isinstance(setting.default, list) and not setting.default:
        return "[] (none)"
    return config.toml_value(setting.default)


def pages() -> dict[str, str]:
    """Every page this writes or fills, name -> text, from the pages as they are on disk."""
    out = {}
    missing = sorted(set(COMMANDS) - {n for names in FAMILIES.values() for n in names})
    if missing:
        raise SystemExit(f"on no page: {' '.join(missing)}: add them to FAMILIES in man/generate.py")
    for page, names in FAMILIES.items():
        path = f"{page}.1"
        out[path] = fill(path, read(path), {"SYNOPSIS": synopsis(names), "OPTIONS": options(names)})
        for name in names:
            if f"anima-{name}" != page:
                out[f"anima-{name}.1"] = f".so man1/{page}.1\n"
    out["anima.1"] = fill("anima.1", read("anima.1"), {"COMMANDS": commands_list(), "OPTIONS": global_options()})
    out["anima-home.5"] = fill("anima-home.5", read("anima-home.5"), {"WORDS": privacy_words(),
                                                                      "GITIGNORE": gitignore()})
    head = f'.TH ANIMA\\-CONFIG 5 2026\\-12\\-01 "anima {version()}" "anima manual"'
    out["anima-config.5"] = config_page(head)
    marker = BEGIN.format("GLYPHS")
    for name in sorted(n for n in os.listdir(MAN) if n.endswith((".1", ".5", ".7"))):
        text = out.get(name) or read(name)
        if marker in text:
            out[name] = fill(name, text, {"GLYPHS": glyphs(text)})
    return out


def version() -> str:
    from anima.cli import __version__  # the version the root group reports

    return __version__


def read(name: str) -> str:
    try:
        with open(os.path.join(MAN, name), encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise SystemExit(f"man/{name} is missing: write its hand-written parts and the marker lines") from None


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    check = argv == ["--check"]
    stale = []
    for name, text in pages().items():
        path = os.path.join(MAN, name)
        try:
            with open(path, encoding="utf-8") as f:
                old = f.read()
        except FileNotFoundError:
            old = None
        if old != text:
            stale.append(name)
            if not check:
                with open(path + ".tmp", "w", encoding="utf-8") as f:
                    f.write(text)
                os.replace(path + ".tmp", path)
    for name in stale:
        print(("stale: man/" if check else "wrote man/") + name, file=sys.stderr)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
