"""config.toml: the schema of every setting, loading, validation and style-keeping writes.

Precedence: command-line flag > ANIMA_* environment variable > config.toml > default.
A file that does not parse or holds an invalid value is an error naming the file and key;
it is never "repaired" by writing defaults over it.
"""

import json
import os
import re
import stat

from anima.infra import clock, fs, jsontext
from anima.infra.errors import ConfigError, Refused, UsageError

SECTION_NAMES = ("self", "notes", "profile", "conclusions", "habits", "project")
LANGS = ("zh", "en")


class Setting:
    """One key of config.toml: its default, its help (written into the file) and its type."""

    def __init__(self, default, help: str, kind: str, low: int = 0, high: int = 0, choices: tuple = (),
                 runs=None):
        self.default = default
        self.help = help
        self.kind = kind  # int | bool | choice | list | words | filename | cron | text | backend | ...
        self.low, self.high = low, high
        self.choices = choices
        # A setting that can name a program for anima to run: runs(value) says whether this
        # value does. Such a value never arrives armed from an archive (`disarm`).
        self.runs = runs

    def check(self, value, key: str):
        """Return `value` if valid for this setting, else raise ConfigError saying why."""
        if self.kind == "int":
            if isinstance(value, bool) or not isinstance(value, int) or not self.low <= value <= self.high:
                raise ConfigError(f"{key}: must be an integer from {self.low} to {self.high}, not {_show(value)}")
        elif self.kind == "bool":
            if not isinstance(value, bool):
                raise ConfigError(f"{key}: must be true or false, not {_show(value)}")
        elif self.kind == "choice":
            if value not in self.choices:
                raise ConfigError(f"{key}: must be one of {', '.join(self.choices)}, not {_show(value)}")
        elif self.kind == "list":
            if not isinstance(value, list) or any(v not in self.choices for v in value):
                raise ConfigError(f"{key}: must be a list drawn from {', '.join(self.choices)}, not {_show(value)}")
            if len(set(value)) != len(value):
                raise ConfigError(f"{key}: lists a name twice: {_show(value)}")
        elif self.kind == "words":
            if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
                raise ConfigError(f"{key}: must be a list of non-empty strings, not {_show(value)}")
        elif self.kind == "routes":
            from anima.infra.topology import check

            check(value, key)
        elif self.kind == "commands":
            if not isinstance(value, dict):
                raise ConfigError(f"{key}: must be a table of command = [argv, ...], not {_show(value)}")
            for name, argv in value.items():
                if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) or ".." in name:
                    raise ConfigError(f"{key}: {name!r} is not a plain command name")
                if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
                    raise ConfigError(f"{key}.{name}: must be a non-empty list of strings (an argv, no shell)")
        elif self.kind == "backend":
            from anima.infra.llm import backend_problem

            problem = backend_problem(value)
            if problem:
                raise ConfigError(f"{key}: {_show(value)} {problem}")
        elif self.kind == "text":
            if not isinstance(value, str) or not value.strip() or "\n" in value:
                raise ConfigError(f"{key}: must be a non-empty string on one line, not {_show(value)}")
        elif self.kind == "filename":
            if not isinstance(value, str) or not value or "/" in value or value in (".", "..") or "\0" in value:
                raise ConfigError(f"{key}: must be a plain file name (no '/'), not {_show(value)}")
        elif self.kind == "cron":
            problem = "is not a string" if not isinstance(value, str) else _cron_problem(value)
            if problem:
                raise ConfigError(f"{key}: must be a 5-field cron expression or \"off\"; {_show(value)} {problem}")
        return value

    def parse(self, raw: str, key: str):
        """Turn a command-line string into a value of this setting's type, then check it."""
        value: object = raw
        if self.kind == "int":
            try:
                value = int(raw.strip())
            except ValueError:
                raise ConfigError(
                    f"{key}: must be an integer from {self.low} to {self.high}, not {_show(raw)}") from None
        elif self.kind == "bool":
            words = {"true": True, "on": True, "yes": True, "1": True,
                     "false": False, "off": False, "no": False, "0": False}
            if raw.strip().lower() not in words:
                raise ConfigError(f"{key}: must be true or false, not {_show(raw)}")
            value = words[raw.strip().lower()]
        elif self.kind in ("list", "words"):
            value = parse_list(raw, key)
        elif self.kind == "cron":
            value = " ".join(raw.split())
        elif self.kind in ("commands", "routes"):
            try:
                value = jsontext.loads(raw)
            except ValueError:
                raise ConfigError(f'{key}: give a JSON object, e.g. {{"reply": ["notify-send", "{{text}}"]}}') from None
        return self.check(value, key)


def parse_list(raw: str, key: str) -> list[str]:
    """A list from the command line: a JSON array of strings ('["/a", "/b,c"]'), or items
    separated by commas ('/a, /b'). Text that begins with '[' is JSON or refused, and an item
    of the comma form may not begin with a quote: either is a JSON array gone wrong, and
    stored as words it would be a setting nobody meant."""
    text = raw.strip()
    if text.startswith("["):
        try:
            value = jsontext.loads(text)
        except ValueError as e:
            raise ConfigError(f"{key}: {_show(raw)} begins with '[' but is not a JSON array ({e}); give a JSON "
                              "array of strings, or the items separated by commas") from None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{key}: {_show(raw)} is not a JSON array of strings")
        return value
    items = [part.strip() for part in text.split(",") if part.strip()]
    quoted = next((item for item in items if item[:1] in "\"'"), None)
    if quoted is not None:
        raise ConfigError(f"{key}: the item {_show(quoted)} begins with a quote; give a JSON array to quote "
                          "items ('[\"a, b\", \"c\"]'), or the items unquoted separated by commas")
    return items


def _show(value) -> str:
    return json.dumps(value, ensure_ascii=False)


DEFAULT_RULES = {"hourly": "0 * * * *", "morning": "0 8 * * *", "evening": "0 22 * * *", "midnight": "0 2 * * *",
                 "nudge": "*/15 * * * *"}
TICK_STEPS = ("rhythm", "sweep", "preprocess", "internalize", "reflect", "externalize", "dispatch", "roll", "index",
              "consolidate")


def _cron_problem(value: str) -> str | None:
    if value == "off" or value in DEFAULT_RULES.values():
        return None  # known good: no need to load the cron library to read a default file
    return cron_problem(value)


def cron_problem(expr: str) -> str | None:
    """Why `expr` is not a rhythm rule's cron expression (5 fields, valid, occurring), or None."""
    if len(expr.split()) != 5:
        return "needs 5 fields (minute hour day-of-month month day-of-week)"
    from datetime import datetime

    from croniter import CroniterBadDateError, croniter

    if not croniter.is_valid(expr):
        return "is not a valid cron expression"
    try:
        croniter(expr, datetime(2000, 1, 1), max_years_between_matches=8).get_next(datetime)
    except CroniterBadDateError:
        return "never occurs"
    return None


SETTINGS: dict[str, Setting] = {
    "core.lang": Setting(
        "en", "Language of prompt headings and frames, and of the starter blocks: zh or en. "
        "Environment: ANIMA_LANG.", "choice", choices=LANGS),
    "self.block_max_chars": Setting(
        2000, "Longest body a self block may have, in characters; `anima self set` refuses more.",
        "int", 1, 100000),
    "notes.max_chars": Setting(
        1600, "Characters all live self-notes may hold together; adding past it moves the oldest "
        "notes to notes/archive/.", "int", 1, 1000000),
    "notes.max_entries": Setting(
        40, "Live self-notes at most; adding past it moves the oldest notes to notes/archive/.", "int", 1, 100000),
    "notes.note_max_chars": Setting(200, "Longest single note, in characters.", "int", 10, 10000),
    "notes.half_life_days": Setting(
        30, "Days for an unused note's heat to halve (1-365).", "int", 1, 365),
    "notes.dup_threshold": Setting(
        90, "Similarity (0-100, rapidfuzz ratio) at or above which a new note is a near-duplicate "
        "of a live one and is refused; the live note's heat is refreshed instead. 100 refuses only a note "
        "equal to a live one.", "int", 50, 100),
    "notes.inject": Setting(True, "Whether `anima prompt` prints the self-notes section.", "bool"),
    "notes.builtin_sensitive_words": Setting(
        True, "Refuse notes and self blocks holding health or finance specifics from the built-in zh/en "
        "word lists (anima-home(5) lists them, with the context some words need).", "bool"),
    "notes.sensitive_words": Setting(
        [], "More words that make a note or a self block refused wherever they stand (English words match "
        "whole words, any case; Chinese match anywhere).",
        "words"),
    "recall.sources": Setting(
        [], "Globs of more transcript files or directories to search besides sessions/ "
        "(*.jsonl, *.jsonl.zst, *.jsonl.zstd; ~ is expanded; relative to the home).", "words"),
    "recall.cache_sessions": Setting(
        60, "Sessions kept read and decompressed under cache/sessions/.", "int", 0, 100000),
    "recall.limit": Setting(10, "Results `anima recall` prints unless --limit says otherwise.", "int", 1, 100000),
    "recall.jobs": Setting(
        2, "Processes `anima recall --batch` shares a batch of 16 questions or more among, the index on.",
        "int", 1, 64),
    "recall.snippet_chars": Setting(120, "Characters of text around the match in a result line.", "int", 20, 10000),
    "index.enabled": Setting(
        True, "Whether `anima recall` answers from the index, kept current by the heartbeat (`anima tick`), "
        "which builds it first; without one, or with one it cannot read, recall scans (`anima index "
        "on|off`; on needs an index that is up to date).", "bool"),
    "index.hot_minutes": Setting(
        5, "Sessions modified this recently are hot: never indexed, always scanned.", "int", 0, 100000),
    "index.jobs": Setting(2, "Processes `anima index rebuild` reads and tokenises with.", "int", 1, 64),
    "facts.habit_threshold": Setting(
        3, "Approved facts a tag needs before `anima habits` suggests it as a habit, and before "
        "`anima habits promote` makes it one without --force.", "int", 1, 1000),
    "facts.profile": Setting(
        True, "Whether `anima prompt` prints the profile (about the person); `anima profile on|off`.", "bool"),
    "facts.single_valued_tags": Setting(
        [], "Tags a person marked as holding one value at a time (city, employer): `anima check` "
        "reports two approved facts on one of them as a contradiction.", "words"),
    "dispatch.commands": Setting(
        {}, "Commands `anima dispatch` may run besides its built-ins: name = [argv, ...], never "
        "through a shell; {param} in an argument is replaced by that action parameter.", "commands",
        runs=bool),
    "routes.rules": Setting(
        [], "What `anima route` does, one [[routes.rules]] table per rule, tried in order: a switch "
        "(cases of conditions, a default), a broadcast (to several queues) or a merge (by trace "
        "id); anima-pipeline(5) has the details.", "routes"),
    "prompt.sections": Setting(
        list(SECTION_NAMES), "Sections `anima prompt` prints, from: " + ", ".join(SECTION_NAMES)
        + ". They always appear in this order.", "list", choices=SECTION_NAMES),
    "prompt.project_file": Setting(
        "AGENTS.md", "File read from the working directory for the project context section.", "filename"),
    "prompt.project_max_chars": Setting(
        20000, "Longest project context printed; beyond it the file is cut at a line break "
        "and the cut is said.", "int", 0, 1000000),
    "prompt.budget.total": Setting(
        300, "Characters for the budgeted sections together (notes, profile, conclusions, habits).",
        "int", 0, 100000),
    "prompt.budget.notes": Setting(120, "Characters for self-notes.", "int", 0, 100000),
    "prompt.budget.profile": Setting(60, "Characters for the profile made from approved facts.", "int", 0, 100000),
    "prompt.budget.profile_handwritten": Setting(
        120, "Characters for a profile a person wrote by hand.", "int", 0, 100000),
    "prompt.budget.conclusions": Setting(80, "Characters for resident conclusions (approved facts).", "int", 0, 100000),
    "prompt.budget.habits": Setting(40, "Characters for promoted habits.", "int", 0, 100000),
    "stream.max_lines": Setting(
        200, "Lines self/stream/now.md may hold; past this `anima stream roll` archives all but the last "
        "entries of stream.keep_minutes that fit in half of it.", "int", 1, 1000000),
    "stream.keep_minutes": Setting(
        60, "Minutes of her latest entries `anima stream roll` keeps in self/stream/now.md (her working "
        "memory); older ones go to self/stream/archive/. A roll is due when the oldest entry is older than "
        "this and a quarter of it again (at least a minute). 0 archives every entry.", "int", 0, 100000),
    "stream.thought_max_chars": Setting(
        4000, "Longest thought `anima think` appends, in characters; a longer one is refused.",
        "int", 1, 1000000),
    "internalize.quote_max_chars": Setting(
        1000, "Longest quotation of someone's words `anima internalize` puts in the self-stream, in "
        "characters; longer words are cut there and end with '…'.", "int", 20, 100000),
    "llm.backend": Setting(
        "rules", "What `anima internalize` and `anima externalize` think with: rules (offline templates, no "
        "model), openai (an OpenAI-compatible endpoint: OPENAI_BASE_URL, OPENAI_API_KEY) or cmd:ARGV (a "
        "local model command: the prompt on stdin, the answer on stdout). Environment: ANIMA_LLM.", "backend",
        runs=lambda value: value.startswith("cmd:")),
    "llm.model": Setting("gpt-4o-mini", "The model the openai backend asks for.", "text"),
    "llm.timeout_sec": Setting(
        60, "Seconds a model call may take; past it the command exits 69 and nothing is lost.", "int", 1, 3600),
    "llm.max_answer_bytes": Setting(
        1048576, "Largest answer a model backend may send, in bytes (the HTTP body for openai, stdout for "
        "cmd:); the reading stops there, and the command exits 69 with nothing lost.", "int", 1024, 1073741824),
    "llm.max_calls_per_hour": Setting(
        60, "Model calls in any hour at most (log/llm.jsonl counts them); when spent, the rules backend "
        "takes over until the hour has passed. 0: never call a model.", "int", 0, 1000000),
    "consolidate.carry_entries": Setting(
        2, "Entries of her own (her last unfinished thoughts) `anima consolidate` carries over into "
        "the new day's now.md; 0: none.", "int", 0, 100),
    "consolidate.recent_days": Setting(
        7, "Days the autobiography_summary block tells one line each; earlier entries are told by "
        "month, and those over a year old by year.", "int", 1, 366),
    "consolidate.proposal_min_hits": Setting(
        20, "Injections a self-note needs before `anima consolidate` proposes it for the personality "
        "baseline (`anima self proposals`); 0: never propose.", "int", 0, 1000000),
    "consolidate.rule": Setting(
        "midnight", "The rhythm rule after which she consolidates: once its trigger is lived (internalized), "
        "`anima tick` runs the consolidation; its trigger carries \"consolidate\": true. A rule that is off "
        "or not in [rhythm.rules] never fires: then only `anima consolidate` consolidates.", "text"),
    "git.autocommit": Setting(
        False, "When the home is a git repository, commit what each command changed, with a message "
        "naming the command and the files, never its words (pipeline/ and log/ are left out).", "bool"),
    "rhythm.catch_up": Setting(
        120, "Minutes a rule's scheduled time may lie in the past and still fire (after downtime, "
        "only the latest missed time of each rule fires, once).", "int", 0, 100000),
    "rhythm.rules.hourly": Setting(DEFAULT_RULES["hourly"], "Every hour, on the hour.", "cron"),
    "rhythm.rules.morning": Setting(DEFAULT_RULES["morning"], "08:00.", "cron"),
    "rhythm.rules.evening": Setting(DEFAULT_RULES["evening"], "22:00.", "cron"),
    "rhythm.rules.midnight": Setting(DEFAULT_RULES["midnight"], "02:00, deep in the night.", "cron"),
    "rhythm.rules.nudge": Setting(
        DEFAULT_RULES["nudge"], "When to look whether she has decided nothing for reflect.nudge_hours; it fires "
        "only then, once per such idle stretch (its trigger carries \"idle_since\").", "cron"),
    "tick.steps": Setting(
        list(TICK_STEPS), "What `anima tick` does each minute, from: " + ", ".join(TICK_STEPS) + ". They "
        "always run in this order (preprocess and internalize once more after dispatch); each is also a "
        "command of its own.", "list", choices=TICK_STEPS),
    "reflect.every_minutes": Setting(
        30, "With a model backend, `anima tick` lets her reflect after new experience and, when she has "
        "not reflected for this many minutes, on her recent stream; 0: only after new experience.",
        "int", 0, 100000),
    "reflect.nudge_hours": Setting(
        6, "Hours without a decision of hers (an action she queued, pipeline/externalize.journal) after "
        "which the nudge rule fires.", "int", 1, 100000),
}

# Tables whose keys are names a person chooses; every key in one takes this setting's type.
OPEN_TABLES: dict[str, Setting] = {
    "rhythm.rules": Setting("off", "A rhythm rule of your own.", "cron"),
}

ENV = {"core.lang": "ANIMA_LANG", "llm.backend": "ANIMA_LLM"}

TABLE_HELP = {
    "core": "General settings.",
    "self": "The self layer: six blocks under self/blocks/.",
    "notes": "Self-notes: notes/notes.md, one first-person note per line.",
    "recall": "Transcripts and `anima recall`.",
    "index": "The recall index: the transcripts' stemmed tokens and positions (as private as they are).",
    "facts": "Facts about the person: staged from transcripts, approved by a person.",
    "dispatch": "What `anima dispatch` does with actions.",
    "routes": "How `anima route` moves files between Pool B's queues.",
    "prompt": "What `anima prompt` prints every turn.",
    "prompt.budget": "Character budgets. Over a budget, whole items are dropped, oldest first.",
    "stream": "The self-stream (Pool A): self/stream/now.md and its archive.",
    "internalize": "How `anima internalize` turns events into her experience (the rules backend).",
    "consolidate": "The nightly `anima consolidate`: archive, memories, autobiography, proposals.",
    "llm": "The model backends of the translators (internalize, externalize, consolidate).",
    "git": "Keeping the home's history in git.",
    "rhythm": "The rhythm `anima tick` strikes (run it every minute from cron).",
    "tick": "What the heartbeat, `anima tick`, drives every minute.",
    "reflect": "Her self-reflection (a model backend) and the gentle prompt when she has long decided nothing.",
    "rhythm.rules": "Rules: NAME = \"5-field cron expression\" (local time) or \"off\"; add your own.",
}


def detect_lang(environ=os.environ) -> str:
    """The language a new home starts in: ANIMA_LANG, else the locale, else English."""
    if environ.get("ANIMA_LANG") in LANGS:
        return environ["ANIMA_LANG"]
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        if environ.get(var):
            return "zh" if environ[var].lower().startswith("zh") else "en"
    return "en"


def render_default(lang: str | None = None) -> str:
    """config.toml with every default spelled out and explained (and `lang` chosen)."""
    import textwrap

    out = [
        "# anima configuration (see anima-config(5)). Every setting is shown with its default.",
        "# Edit by hand or with `anima config set KEY VALUE`; an invalid value is refused.",
    ]
    table = None
    for key, setting in SETTINGS.items():
        tname, name = key.rsplit(".", 1)
        if tname != table:
            table = tname
            out += ["", f"# {TABLE_HELP[tname]}", f"[{tname}]"]
        out += textwrap.wrap(setting.help, 88, initial_indent="# ", subsequent_indent="# ")
        if setting.kind == "commands":  # a table of its own, so that a person can add lines under it
            out += [f"[{key}]", '# reply = ["notify-send", "anima", "{text}"]']
            continue
        if setting.kind == "routes":  # arrays of tables, shown by example
            out += [f"# [[{key}]]", '# name = "alice-first"', '# kind = "switch"', '# from = "message"',
                    '# cases = [{when = [["payload.speaker", "==", "Alice"]], to = "urgent"}]',
                    '# default = "calm"']
            continue
        value = lang if key == "core.lang" and lang else setting.default
        out.append(f"{name} = {toml_value(value)}")
    return "\n".join(out) + "\n"


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def show_value(value, key: str | None = None) -> str:
    """How `config get` prints a value: what `config set` takes back (a table or a list of
    tables as JSON, a list comma-separated, or as a JSON array when an item could not be
    read back from the comma form)."""
    if key is not None and _lookup(key) is not None and _lookup(key).kind in ("commands", "routes"):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        plain = all(isinstance(v, str) and v and v == v.strip() and "," not in v and v[:1] not in "[\"'"
                    for v in value)
        return ",".join(value) if plain and value else json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _flatten(table: dict, prefix: str = "") -> dict:
    flat = {}
    for name, value in table.items():
        key = f"{prefix}{name}"
        if isinstance(value, dict) and key not in SETTINGS:
            flat.update(_flatten(value, key + "."))
        else:
            flat[key] = value
    return flat


class Config:
    def __init__(self, values: dict, path: str):
        self.values = values
        self.path = path

    def __getitem__(self, key: str):
        if key not in self.values:
            return setting(key).default  # a key of an open table that is not set
        return self.values[key]


def load(path: str, environ=os.environ) -> Config:
    values = _load_file(path)
    for key, var in ENV.items():
        if environ.get(var):
            try:
                values[key] = SETTINGS[key].parse(environ[var], key)
            except ConfigError as e:
                raise ConfigError(f"{var}: {e}") from None
    return Config(values, path)


def _load_file(path: str) -> dict:
    """The file's validated settings over the defaults, from cache/config.json while the file is
    unchanged: parsing TOML in pure Python costs more than the rest of a quick command."""
    cache = os.path.join(os.path.dirname(path), "cache", "config.json")
    started = clock.files_now_ns()
    sig = fs.signature(path)
    try:
        entry = jsontext.loads(fs.read_cache(cache) or b"null")
        if entry["path"] == path and entry["signature"] == sig and entry["keys"] == list(SETTINGS):
            return entry["values"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    values = _parse_file(path)
    if fs.settled([sig], started) and os.path.isdir(os.path.dirname(cache)):
        fs.write_cache(cache, json.dumps({"path": path, "signature": sig, "keys": list(SETTINGS),
                                          "values": values}, ensure_ascii=False))
    return values


def _read(path: str) -> str | None:
    """config.toml's text, None when there is none; a directory in its place is bad configuration."""
    try:
        return fs.read_text(path)
    except (IsADirectoryError, Refused):  # (fs refuses what is no regular file; a link stays refused)
        if stat.S_ISDIR(os.lstat(path).st_mode):
            raise ConfigError(f"{path}: is a directory, not a TOML file") from None
        raise


def _parse_file(path: str) -> dict:
    import tomllib

    text = _read(path)
    values = {key: s.default for key, s in SETTINGS.items()}
    if text is not None:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{path}: not valid TOML: {e}") from None
        except RecursionError:  # tomllib recurses once per level of [[[...]]]
            raise ConfigError(f"{path}: not valid TOML: nested deeper than Python reads") from None
        for key, value in _flatten(data).items():
            known = _lookup(key)
            if known is None:
                raise ConfigError(f"{path}: unknown key {key!r}")
            try:
                values[key] = known.check(value, key)
            except ConfigError as e:
                raise ConfigError(f"{path}: {e}") from None
    return values


def _lookup(key: str) -> Setting | None:
    if key in SETTINGS:
        return SETTINGS[key]
    table, _, name = key.rpartition(".")
    if table in OPEN_TABLES and name and all(c.isascii() and (c.isalnum() or c in "_-") for c in name):
        return OPEN_TABLES[table]
    return None


def setting(key: str) -> Setting:
    found = _lookup(key)
    if found is None:
        raise UsageError(f"unknown config key {key!r}; `anima config list` shows them all")
    return found


def set_value(path: str, key: str, raw: str) -> object:
    """Validate and write one setting, keeping the file's comments and layout."""
    value = setting(key).parse(raw, key)
    import tomlkit

    with fs.locked(path, what="config.toml"):
        text = _read(path)
        if text is None:
            text = render_default(lang=detect_lang())
        try:
            doc = tomlkit.parse(text)
        except tomlkit.exceptions.ParseError as e:
            raise ConfigError(f"{path}: not valid TOML: {e}") from None
        *tables, name = key.split(".")
        node = doc
        for tname in tables:
            if tname not in node:
                node[tname] = tomlkit.table()
            node = node[tname]
            if not isinstance(node, dict):
                raise ConfigError(f"{path}: {tname!r} is not a table")
        node[name] = value
        fs.atomic_write(path, tomlkit.dumps(doc))
    return value


def running(values: dict) -> dict:
    """The settings among `values` (key -> value, as the file gives them) that name a program
    to run."""
    out = {}
    for key, value in values.items():
        known = _lookup(key)
        if known is not None and known.runs is not None:
            try:
                if known.runs(known.check(value, key)):
                    out[key] = value
            except ConfigError:  # an invalid value runs nothing: loading the file refuses it
                pass
    return out


def disarm(path: str, why: str) -> dict:
    """Take out of config.toml at `path` every setting that names a program to run, leaving
    each as a comment at the end with the command that enables it again; return them (key ->
    value). A file that does not parse is refused: what it would run once mended is unknown."""
    import shlex
    import tomllib

    import tomlkit

    text = _read(path)
    if text is None:
        return {}
    try:
        found = running(_flatten(tomllib.loads(text)))
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    if not found:
        return {}
    doc = tomlkit.parse(text)
    for key in found:
        *tables, name = key.split(".")
        node = doc
        for tname in tables:
            node = node[tname]
        del node[name]
    kept = tomlkit.dumps(doc)
    if running(_flatten(tomllib.loads(kept))):  # a layout tomlkit could not take apart: no half measure
        raise ConfigError(f"{path}: cannot take out {', '.join(found)}, which run programs")
    lines = ["", "# Disarmed, as they run programs and " + why + ":",
             "# read each, and enable it again with the command under it."]
    for key, value in found.items():
        shown = show_value(value, key)
        lines.append(f"# {key} = {json.dumps(value)}")  # ASCII JSON: no line break, no control character
        if shown.isprintable():
            lines.append(f"#   anima config set {key} {shlex.quote(shown)}")
        else:  # a line break would end the comment, and the rest of the line would be a setting again
            lines.append("#   (it holds a line break or a control character: set it by hand, if at all)")
    out = kept.rstrip("\n") + "\n" + "\n".join(lines) + "\n"
    if running(_flatten(tomllib.loads(out))):  # (what the comments say must stay a comment)
        raise ConfigError(f"{path}: cannot take out {', '.join(found)}, which run programs")
    fs.atomic_write(path, out)
    return found
