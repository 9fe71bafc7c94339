"""`anima prompt`: the text a host puts in its system prompt every turn.

Sections in a fixed order, each a heading outside a fence, a short second-person frame, and
the body inside a ```md fence. The output is a pure function of its input files, the config
and the flags, so it is cached keyed by those files' stat signatures: a warm call reads one
small file and prints it.
"""

import json
import os
import re

from anima.infra import clock, fs, jsontext
from anima.infra.digest import sha
from anima.infra.errors import UsageError, os_error_code, os_error_message

# Imported on the fast path of `anima prompt` (anima.commands.fast): what only assembling a
# prompt needs (the config schema, the text rules) is imported where it is used.

BUDGETED = ("notes", "profile", "conclusions", "habits")

HEADINGS = {
    "en": {
        "self": "Self layer",
        "notes": "Self-notes",
        "profile": "About the person you talk with",
        "conclusions": "Resident conclusions",
        "habits": "Habits",
        "project": "Project context",
    },
    "zh": {
        "self": "自我层",
        "notes": "自述",
        "profile": "关于对方",
        "conclusions": "常驻结论",
        "habits": "习惯",
        "project": "项目上下文",
    },
}

FRAMES = {
    "en": {
        "self": "This is how you see yourself. It is written in your own voice, in the first person: "
                "read it as yourself, not as a description of someone else.",
        "notes": "Notes you wrote about yourself in earlier sessions, the most alive first. "
                 "They are your own observations of how you work.",
        "profile": "What you know about the person you talk with, drawn from facts they stated "
                   "and a person approved.",
        "conclusions": "Facts about the person that a person approved, each from something they "
                       "said, newest first.",
        "habits": "Habits of the person that a person confirmed.",
        "project": "The {file} of the directory you are working in ({dir}). It belongs to the "
                   "project, not to you.",
        "cut": "(Cut here: {more} more characters are in {path}.)",
        "older": "(Older lines are left out here: {more} characters; the whole profile is in {path}.)",
    },
    "zh": {
        "self": "以下是你对自己的认识，用你自己的口吻、以第一人称写成：把它当作你自己来读，而不是对别人的描述。",
        "notes": "这些是你在之前的会话里写下的关于自己的笔记，最活跃的在前。它们是你对自己做事方式的观察。",
        "profile": "你对正在交谈的这个人的了解，来自对方说过、并经人确认的事实。",
        "conclusions": "经人确认的关于对方的事实，每条都出自对方说过的话，新的在前。",
        "habits": "经人确认的对方的习惯。",
        "project": "你当前工作目录（{dir}）下的 {file}。它属于项目，不属于你。",
        "cut": "（此处截断：{path} 还有 {more} 个字符。）",
        "older": "（此处略去了较早的内容，共 {more} 个字符；完整的在 {path}。）",
    },
}

class Item:
    """One whole unit of a budgeted section, e.g. a note or a fact."""

    def __init__(self, id: str, text: str):
        self.id, self.text = id, text


class Recent:
    """A source's items as they were written, the newest last, with its own limit and the
    file that holds them all: what fits is the newest (fill_recent), and a cut says so."""

    def __init__(self, items: list[Item], limit: int, path: str):
        self.items, self.limit, self.path = items, limit, path


class Section:
    def __init__(self, name: str, body: str, used: int, limit: int | None, frame_vars: dict | None = None,
                 after: str = "", items: list | None = None, before: str = ""):
        self.name, self.body, self.used = name, body, used
        self.limit = limit  # None: not budgeted
        self.frame_vars = frame_vars or {}
        self.before = before  # a line printed before the fence, outside it
        self.after = after  # a line printed after the fence, outside it
        self.items = items or []  # ids of the items printed


def fence(body: str) -> str:
    """Wrap `body` in a ```md fence longer than any backtick run inside it."""
    longest = run = 0
    for ch in body:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}md\n{body}\n{ticks}"


def fill(items: list[Item], limit: int) -> tuple[list[Item], int]:
    """The longest prefix of `items` (best first) whose texts fit in `limit` characters.

    Whole items only, and rank is never skipped over: an item that does not fit ends the
    section, so what is dropped is always what ranked lowest (the oldest).
    """
    chosen, used = [], 0
    for item in items:
        if used + len(item.text) > limit:
            break
        chosen.append(item)
        used += len(item.text)
    return chosen, used


ELLIPSIS = "…"


def fill_recent(items: list[Item], limit: int) -> tuple[list[Item], int, int]:
    """The longest run of `items` (oldest first) that ends with the newest and fits in
    `limit` characters, in their order, its length, and how many characters of `items`
    it leaves out; what is dropped is always the oldest.

    Whole items, except when the newest alone is over `limit`: then its end after an
    ellipsis, from a sentence on when that keeps at least half of the room, else from a
    word (or, in Chinese, any character), so that a source over its budget never vanishes.
    """
    chosen, used, kept = [], 0, 0
    for item in reversed(items):
        if used + len(item.text) > limit:
            if not chosen and limit > len(ELLIPSIS):
                text, room = item.text, limit - len(ELLIPSIS)
                tail = _tail(text, len(text) - room, room)
                chosen, used, kept = [Item(item.id, ELLIPSIS + tail)], len(ELLIPSIS) + len(tail), len(tail)
            break
        chosen.append(item)
        used += len(item.text)
        kept += len(item.text)
    return chosen[::-1], used, sum(len(i.text) for i in items) - kept


_SENTENCE = re.compile(r"(?<=[.!?;]) +|(?<=[。！？；])")
_WORD = re.compile(r" +")


def _tail(text: str, start: int, room: int) -> str:
    """The end of `text` from `start` on, begun where a sentence or a word does."""
    for boundary, least in ((_SENTENCE, room // 2), (_WORD, 1)):
        begins = (m.end() for m in boundary.finditer(text, max(start - 1, 0)))
        at = next((b for b in begins if b >= start), len(text))
        if len(text) - at >= least:
            return text[at:]
    return text[start:]


def render(sections: list[Section], lang: str) -> str:
    from anima.infra.text import printable

    parts = []
    for s in sections:
        frame = FRAMES[lang][s.name].format(**s.frame_vars)
        if s.before:
            frame += f"\n\n{s.before}"
        part = f"## {HEADINGS[lang][s.name]}\n\n{frame}\n\n{fence(s.body)}"
        if s.after:
            part += f"\n\n{s.after}"
        parts.append(part)
    # a NUL or an escape a person edited into a file shows, and reaches no model or terminal
    return printable("\n\n".join(parts) + "\n") if parts else ""


class Context:
    """What the sections are built from."""

    def __init__(self, home, cfg, cwd: str, lang: str, now: float, inputs: list | None = None,
                 freeze: bool = True):
        self.home, self.cfg, self.cwd, self.lang, self.now = home, cfg, cwd, lang, now
        self.freeze = freeze  # whether the notes' ranking may be stored (notes/heat.json)
        self.inputs = inputs if inputs is not None else []  # every file read: the cache depends on them
        self.shown: set = set()  # ids of the items printed so far, so that no section repeats another
        self.sources: dict = {}  # section -> {what: sha256} of the files it printed, for log/injections.jsonl

    def read(self, path: str) -> str | None:
        self.inputs.append(path)
        return fs.read_text(path)


def self_section(ctx: Context) -> Section | None:
    from anima.self import blocks

    found = []
    for key in blocks.KEYS:
        path = blocks.block_path(ctx.home.blocks, key)
        text = ctx.read(path)
        if text is not None:
            found.append(blocks.parse(text, key, path))
            ctx.sources.setdefault("self", {})[key] = sha(text)
    if not found:
        return None
    body = "\n\n".join(f"### {b.title}\n\n{b.body}" for b in found)
    return Section("self", body, sum(b.chars for b in found), None)


def project_section(ctx: Context) -> Section | None:
    name = ctx.cfg["prompt.project_file"]
    limit = ctx.cfg["prompt.project_max_chars"]
    path = os.path.join(ctx.cwd, name)
    ctx.inputs.append(path)
    try:
        with open(path, "rb") as f:  # a project file may well be a symlink (AGENTS.md -> CLAUDE.md)
            data = f.read(limit * 4 + 4)
            rest = len(f.read()) if len(data) > limit * 4 else 0
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None
    ctx.sources["project"] = {path: sha(data)}  # of what was read: the whole file, or the prefix a cut shows
    text = data.decode("utf-8", errors="replace").strip("\n").rstrip()
    if not text.strip():
        return None
    after = ""
    if len(text) > limit or rest:
        cut = text.rfind("\n", 0, limit + 1)
        kept = text[: cut if cut > 0 else limit].rstrip()
        more = len(text) - len(kept) + rest
        after = FRAMES[ctx.lang]["cut"].format(more=more, path=path)
        text = kept
    return Section("project", text, len(text), limit, {"file": name, "dir": ctx.cwd}, after)


# The budgeted sections' items, best first, from the store that owns them (imported only when
# the section is assembled): a list, or Recent (oldest first, with the section's own limit),
# or None when the section is switched off (no section, no stats); no items leave the section out.

def note_items(ctx: Context):
    from anima.notes.store import Store

    if not ctx.cfg["notes.inject"]:
        return None
    store = Store(ctx.home)
    notes_text = ctx.read(store.file) or ""
    meta_text = ctx.read(store.meta_path)
    order = store.prompt_order(notes_text, meta_text, ctx.cfg["notes.half_life_days"], ctx.now, ctx.freeze)
    return [Item(n.id, n.text) for n in order]


def _facts(ctx: Context):
    from anima.facts.store import FactStore

    store = FactStore(ctx.home)
    return store, store.load(ctx.read(store.file) or "")


def profile_items(ctx: Context):
    """A person's hand-written profile, else the newest approved fact per tag.

    A hand-written profile is read as a person keeps one, adding below what they wrote
    before: its last lines are its newest, and over its budget the oldest are left out.
    """
    if not ctx.cfg["facts.profile"]:
        return None
    store, facts = _facts(ctx)
    raw = ctx.read(store.profile_path) or ""
    if store.handwritten(raw):
        # ids are the file's own line numbers (from 0), which `anima why` points at
        lines = [Item(f"profile:{i}", line.strip()) for i, line in enumerate(raw.split("\n")) if line.strip()]
        return Recent(lines, ctx.cfg["prompt.budget.profile_handwritten"], store.profile_path)
    return [Item(f["id"], f"{tag}: {f['text']}") for tag, f, _ in store.profile(facts)]


def conclusion_items(ctx: Context):
    """Approved facts, newest first, less those the profile already printed."""
    store, facts = _facts(ctx)
    return [Item(f["id"], f["text"]) for f in store.approved(facts) if f["id"] not in ctx.shown]


def habit_items(ctx: Context):
    from anima.facts.store import habit_text

    store, facts = _facts(ctx)
    habits = store.habits(ctx.read(store.habits_path))
    newest = store.newest_by_tag(facts)
    ordered = sorted(habits.items(), key=lambda kv: (kv[1].get("promoted", ""), kv[0]), reverse=True)
    items = [(tag, habit_text(h, newest.get(tag))) for tag, h in ordered]
    return [Item(f"habit:{tag}", text) for tag, text in items if text]


ITEM_SOURCES = {"notes": note_items, "profile": profile_items, "conclusions": conclusion_items,
                "habits": habit_items}


def record_injections(home, injected: dict, now: float) -> None:
    """Count an injection for every note printed (on every call, cached or not). A note is due
    one at most once an hour, so most calls only read heat.json: the notes' store (a large
    module) is imported when one is due."""
    ids = injected.get("notes")
    if ids:
        from anima.notes import heat

        if heat.Usage(heat.usage_path(home)).due(ids, now):
            from anima.notes.store import Store

            Store(home).record_injections(ids, now)


def budgeted_section(ctx: Context, name: str, remaining: int) -> Section | None:
    """A source gives its items best first, or Recent (its items oldest first, with its own
    limit), or None for "off"."""
    source = ITEM_SOURCES.get(name)
    items = source(ctx) if source else []
    if items is None:
        return None
    own = ctx.cfg[f"prompt.budget.{name}"]
    before = ""
    if isinstance(items, Recent):
        recent, own = items, items.limit
        chosen, used, more = fill_recent(recent.items, min(own, remaining))
        if more and chosen:
            before = FRAMES[ctx.lang]["older"].format(more=more, path=recent.path)
    else:
        chosen, used = fill(items, min(own, remaining))
    ctx.shown.update(i.id for i in chosen)
    return Section(name, "\n".join(i.text for i in chosen), used, own, items=[i.id for i in chosen], before=before)


class Prompt:
    def __init__(self, text: str, stats: list, warnings: list, injected: dict, record: dict | None = None):
        self.text = text
        self.stats = stats  # (section, used, limit or None)
        self.warnings = warnings
        self.injected = injected  # section -> ids of items printed
        self.record = record or {}  # what log/injections.jsonl says of it (without the time)


def injection_record(sections: list[Section], text: str, sources: dict, cwd: str) -> dict:
    """What a prompt told the agent, as hashes and ids only (never text): the whole text's
    sha256, and per section its size, its body's sha256, the items (notes, facts) it printed
    and the files it printed whole (blocks, the project file) with their sha256."""
    parts = []
    for s in sections:
        part = {"name": s.name, "chars": s.used, "sha256": sha(s.body)}
        if s.items:
            part["items"] = s.items
        if s.name in sources:
            part["files"] = sources[s.name]
        parts.append(part)
    return {"sha256": sha(text), "chars": len(text), "cwd": cwd, "sections": parts}


def assemble(ctx: Context, names: list[str]) -> Prompt:
    from anima.infra.config import SECTION_NAMES

    sections, stats, warnings = [], [], []
    remaining = ctx.cfg["prompt.budget.total"]
    budget_used = 0
    for name in SECTION_NAMES:
        if name not in names:
            continue
        if name == "self":
            s = self_section(ctx)
            if s is None:
                warnings.append(f"no self blocks in {ctx.home.blocks}; run `anima init`")
        elif name == "project":
            s = project_section(ctx)
        else:
            s = budgeted_section(ctx, name, remaining)
            if s is None:
                continue
            remaining -= s.used
            budget_used += s.used
        if s is None:
            stats.append((name, 0, ctx.cfg["prompt.project_max_chars"] if name == "project" else None))
            continue
        stats.append((name, s.used, s.limit))
        if s.body:
            sections.append(s)
    if any(n in names for n in BUDGETED):
        stats.append(("total", budget_used, ctx.cfg["prompt.budget.total"]))
    injected = {s.name: s.items for s in sections if s.items}
    text = render(sections, ctx.lang)
    return Prompt(text, stats, warnings, injected, injection_record(sections, text, ctx.sources, ctx.cwd))


def format_stats(stats: list) -> str:
    return "".join(f"{name}\t{used}\t{'-' if limit is None else limit}\n" for name, used, limit in stats)


# --- cache ---------------------------------------------------------------------------------

def cache_path(home, key: dict) -> str:
    """A short name is enough: the entry holds its whole key and is checked against it. It is
    the 32-bit FNV-1a of the key, in Python: zlib's crc32 would cost a warm call (anima.commands.fast)
    the loading of a shared library, longer than this loop over some hundred bytes."""
    digest = 0x811C9DC5
    for byte in json.dumps(key, sort_keys=True).encode():
        digest = ((digest ^ byte) * 0x01000193) & 0xFFFFFFFF
    return os.path.join(home.cache, "prompt", f"{digest:08x}.json")


def cache_key(home, cwd: str, lang: str | None, names: list[str] | None, environ) -> dict:
    """Everything, besides the input files listed in the entry, that decides the output."""
    from anima import __version__

    return {
        "version": __version__,
        "home": home.root,
        "cwd": cwd,
        "lang": lang,
        "sections": names,
        "env_lang": environ.get("ANIMA_LANG", ""),
    }


def cached(path: str, key: dict) -> Prompt | None:
    try:
        entry = jsontext.loads(fs.read_cache(path) or b"null")
        if entry["key"] != key:
            return None
        for input_path, sig in entry["inputs"]:
            if fs.signature(input_path) != sig:
                return None
        return Prompt(entry["text"], entry["stats"], entry["warnings"], entry["injected"], entry["record"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(path: str, key: dict, prompt: Prompt, inputs: list[str], started_ns: int) -> None:
    """Keep the prompt for the next call, unless an input changed too recently to trust."""
    sigs = [(p, fs.signature(p)) for p in dict.fromkeys(inputs)]
    if not fs.settled((sig for _, sig in sigs), started_ns):
        return
    entry = {"key": key, "inputs": sigs, "text": prompt.text, "stats": prompt.stats,
             "warnings": prompt.warnings, "injected": prompt.injected, "record": prompt.record}
    if fs.write_cache(path, json.dumps(entry, ensure_ascii=False)):
        _prune(os.path.dirname(path))


CACHE_ENTRIES = 64


def _prune(directory: str) -> None:
    """Keep the cache small: drop the least recently written entries beyond CACHE_ENTRIES."""
    try:
        names = [n for n in fs.listdir(directory) if n.endswith(".json")]
    except FileNotFoundError:
        return
    if len(names) <= CACHE_ENTRIES:
        return
    paths = sorted((os.path.join(directory, n) for n in names), key=lambda p: fs.signature(p) or [0])
    for p in paths[: len(paths) - CACHE_ENTRIES]:
        try:
            fs.remove(p)
        except FileNotFoundError:
            pass


def fresh(home, cwd: str, lang: str | None, names: list[str] | None, now: float, environ=os.environ,
          freeze: bool = True) -> tuple[Prompt, Context]:
    """The prompt assembled from the files (no cache), and what it was built from. `freeze`
    False: the notes' ranking is not stored either, so nothing is written at all (doctor)."""
    from anima.infra import config

    cfg = config.load(home.config, environ)
    ctx = Context(home, cfg, cwd, lang or cfg["core.lang"], now, inputs=[home.config], freeze=freeze)
    return assemble(ctx, names if names is not None else cfg["prompt.sections"]), ctx


def section_names(value: str | None) -> list[str] | None:
    """The sections a --sections LIST names (None: prompt.sections); UsageError for a name
    that is none."""
    if value is None:
        return None
    from anima.infra.config import SECTION_NAMES

    names = [n.strip() for n in value.split(",") if n.strip()]
    bad = [n for n in names if n not in SECTION_NAMES]
    if bad or not names:
        what = f"unknown section {bad[0]!r}" if bad else "no section named"
        raise UsageError(f"--sections: {what}; sections: {', '.join(SECTION_NAMES)}")
    return names


def lookup(home, cwd: str, lang: str | None, names: list[str] | None, environ=os.environ):
    """(the cached prompt for these inputs, or None when any changed; its key; its entry's
    path). It only reads: a miss leaves the home as it was."""
    key = cache_key(home, os.path.abspath(cwd), lang, names, environ)
    path = cache_path(home, key)
    return cached(path, key), key, path


def build(home, cwd: str, lang: str | None, names: list[str] | None, now: float, environ=os.environ) -> Prompt:
    """The prompt for these inputs at `now`: from the cache when nothing changed, else
    assembled; the notes it printed count an injection, and the call is logged."""
    prompt, key, path = lookup(home, cwd, lang, names, environ)
    if prompt is None:
        started = clock.files_now_ns()
        prompt, ctx = fresh(home, os.path.abspath(cwd), lang, names, now, environ)
        store(path, key, prompt, ctx.inputs, started)
    return recorded(home, prompt, now)


def recorded(home, prompt: Prompt, now: float) -> Prompt:
    """`prompt`, its injection counted and logged (a warning added when the home takes no
    write): what every call does, from the cache or not."""
    try:
        record_injections(home, prompt.injected, now)
        log_injection(home, prompt, now)
    except OSError as e:  # a home that takes no write (read-only, full): the prompt is printed all the same
        if os_error_code(e) is None:
            raise
        prompt.warnings = [*prompt.warnings, f"this injection is not recorded: {os_error_message(e)}"]
    return prompt


def log_injection(home, prompt: Prompt, now: float) -> None:
    """One line of log/injections.jsonl per call: when, and what was injected (anima why)."""
    line = json.dumps({"at": clock.iso(now), **prompt.record}, ensure_ascii=False) + "\n"
    fs.append(home.path("log", "injections.jsonl"), line, durable=False)  # every turn: no fsync
