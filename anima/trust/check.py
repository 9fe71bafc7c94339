"""`anima check`: property checks over the whole home, for cron and CI.

Each check yields findings (check, where, what); none means the home is sound. The checks:

- budget: a block body over self.block_max_chars; a live note over notes.note_max_chars;
  more live notes than notes.max_entries or more characters than notes.max_chars; a
  hand-written profile over prompt.budget.profile_handwritten (the prompt keeps its newest lines).
- private: user private data (the detectors `anima note add` refuses with, and its word
  lists) in a live note or a block.
- secret: an API key, access token or password anywhere in the self's text files
  (self/, notes/, facts/, config.toml).
- contradiction: two approved facts on a tag a person marked single-valued
  (facts.single_valued_tags).
- stale: a derivation whose source is gone or changed (anima.trust.provenance).
- mode: what another user could read or change (a file others may read or write, a
  directory others may enter, where they can reach it from the home down), or a symbolic
  link in the home.
- stream: the self-stream's bookkeeping (pipeline/stream.jsonl) out of step with the stream:
  a roll that does not start the next generation, a record of a generation never started,
  a record whose lines are not in now.md or the archive as it recorded them; a line torn
  by a crash mid-append.
- rhythm: a time in pipeline/heartbeat/rhythm.json that anima does not take.
- text: a text file of the self, notes/, facts/ or config.toml that is not UTF-8, or holds a
  control character (a NUL, an escape) a person edited into it; anima prints it as U+FFFD.

Findings never repeat private data: the detectors' descriptions mask it.
"""

import os
import stat

from anima.infra import fs
from anima.infra.errors import DataError, Refused

TEXT_TREES = ("self", "notes", "facts")
TEXT_SUFFIXES = (".md", ".jsonl", ".json", ".toml")
SKIP_TREES = ("cache", "index", ".git")


class Finding:
    __slots__ = ("check", "where", "what")

    def __init__(self, check: str, where: str, what: str):
        self.check, self.where, self.what = check, where, what

    def as_dict(self) -> dict:
        return {"check": self.check, "where": self.where, "what": self.what}


def budgets(home, cfg):
    from anima.notes import store as notes
    from anima.self import blocks

    cap = cfg["self.block_max_chars"]
    for block in blocks.read_all(home.blocks):
        if block.chars > cap:
            yield Finding("budget", home.rel(blocks.block_path(home.blocks, block.key)),
                          f"block body has {block.chars} characters, over self.block_max_chars ({cap})")
    store = notes.Store(home)
    live = store.notes()
    note_cap = cfg["notes.note_max_chars"]
    for n in live:
        if len(n.text) > note_cap:
            yield Finding("budget", f"{home.rel(store.file)}:{n.line}",
                          f"note {n.id} has {len(n.text)} characters, over notes.note_max_chars ({note_cap})")
    if len(live) > cfg["notes.max_entries"]:
        yield Finding("budget", home.rel(store.file),
                      f"{len(live)} live notes, over notes.max_entries ({cfg['notes.max_entries']})")
    total = sum(len(n.text) for n in live)
    if total > cfg["notes.max_chars"]:
        yield Finding("budget", home.rel(store.file),
                      f"live notes hold {total} characters, over notes.max_chars ({cfg['notes.max_chars']})")
    # sections are cut to their budgets by construction (whole items, best first); what can be
    # over is a source a person wrote, whose oldest lines then never reach the prompt
    over = profile_over(home, cfg)
    if over:
        yield Finding("budget", "facts/profile.md", over)


def profile_over(home, cfg) -> str | None:
    """What is wrong with a hand-written profile over its budget (as the prompt counts it:
    its lines without their white space at either end), else None."""
    from anima.facts import store as facts

    if not cfg["facts.profile"]:
        return None  # not in the prompt at all (`anima profile on` puts it back)
    written = facts.FactStore(home).handwritten()
    cap = cfg["prompt.budget.profile_handwritten"]
    chars = len("".join(line.strip() for line in (written or "").split("\n")))
    if chars <= cap:
        return None
    return (f"the hand-written profile has {chars} characters, over prompt.budget.profile_handwritten ({cap}): "
            "the prompt leaves its oldest lines out")


def private_data(home, cfg):
    from anima.notes import privacy
    from anima.notes import store as notes
    from anima.self import blocks

    settings = privacy.settings(cfg)
    store = notes.Store(home)
    for n in store.notes():
        for f in privacy.scan(n.text, **settings):
            yield Finding("private", f"{home.rel(store.file)}:{n.line}", f"note {n.id} holds {privacy.describe(f)}")
    for block in blocks.read_all(home.blocks):
        for f in privacy.scan(block.body, **settings):
            yield Finding("private", home.rel(blocks.block_path(home.blocks, block.key)),
                          f"block {block.key} holds {privacy.describe(f)}")


def _text_files(home):
    config = home.config
    if os.path.isfile(config) and not os.path.islink(config):
        yield config
    for tree in TEXT_TREES:
        for top, dirs, names in os.walk(home.path(tree)):
            dirs.sort()
            for name in sorted(names):
                if name.endswith(TEXT_SUFFIXES) and not name.startswith("."):
                    yield os.path.join(top, name)


def secrets(home, cfg):
    from anima.notes import privacy

    for path in _text_files(home):
        try:
            text = fs.read_text(path) or ""
        except Exception:  # a symlink or a file that is not UTF-8: the mode check reports links
            continue
        for number, line in enumerate(text.split("\n"), 1):
            if "=" not in line and ":" not in line and len(line) < 20:
                continue  # a key or password needs an assignment or a long token
            for f in privacy.scan(line, builtin_words=False):
                if f.kind in ("api_key", "password"):
                    yield Finding("secret", f"{home.rel(path)}:{number}", f"holds {privacy.describe(f)}")


def texts(home, cfg):
    from anima.infra.text import control_at

    for path in _text_files(home):
        try:
            text = fs.read_text(path) or ""
        except DataError as e:  # what reads it fails: prompt, if it is one of its files (doctor says so)
            yield Finding("text", home.rel(path), f"{str(e).removeprefix(path + ': ')}: anima cannot read it")
            continue
        except Refused:
            continue  # a link: the mode check reports it
        for number, line in enumerate(text.split("\n"), 1):
            where = control_at(line)
            if where is not None:
                yield Finding("text", f"{home.rel(path)}:{number}",
                              f"the control character U+{ord(line[where]):04X} at character {where + 1}: "
                              "anima prints it as U+FFFD; remove it")


def contradictions(home, cfg):
    from anima.facts import store as facts

    single = set(cfg["facts.single_valued_tags"])
    if not single:
        return
    by_tag: dict = {}
    for f in facts.FactStore(home).approved():
        for tag in f.get("tags", []):
            if tag in single:
                by_tag.setdefault(tag, []).append(f["id"])
    for tag, ids in sorted(by_tag.items()):
        if len(ids) > 1:
            yield Finding("contradiction", "facts/facts.jsonl",
                          f"tag {tag!r} holds one value, but {len(ids)} approved facts have it: {', '.join(ids)}")


def stale(home, cfg):
    from anima.trust import provenance

    for p in provenance.verify(home, cfg):
        yield Finding("stale", p.where, f"{p.kind}: {p.what}")


def modes(home, cfg):
    """What another user could read or change, and every symbolic link. A file or directory
    is found only where others can reach it: through directories that let them in, from the
    home down. Inside a home of mode 0700, a file git restored as 0644 is nobody else's to
    read, and is no finding; the home itself at 0755 is one finding, not one per file."""
    root = home.root
    if not os.path.isdir(root):
        yield Finding("mode", ".", f"{root} does not exist (anima init)")
        return
    mode = stat.S_IMODE(os.stat(root).st_mode)
    if mode & 0o077:
        yield Finding("mode", ".", f"the home's mode is {mode:04o}, not 0700: others may reach what is in it "
                                   "(chmod 700)")
    open_dirs = {root} if mode & 0o011 else set()  # the directories others may pass through
    for top, dirs, names in os.walk(root):
        if os.path.relpath(top, root) == ".":
            dirs[:] = [d for d in dirs if d not in SKIP_TREES]
        for name in sorted(dirs + names):
            path = os.path.join(top, name)
            st = os.lstat(path)
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                yield Finding("mode", home.rel(path), "a symbolic link: anima reads and writes only plain files")
            elif top not in open_dirs:
                continue
            elif stat.S_ISDIR(st.st_mode):
                if mode & 0o011:
                    open_dirs.add(path)
                if mode & 0o077:
                    yield Finding("mode", home.rel(path), f"directory mode {mode:04o}, not 0700, in a directory "
                                                          "others may enter (chmod 700)")
            elif stat.S_ISREG(st.st_mode) and mode & 0o066:
                yield Finding("mode", home.rel(path), f"file mode {mode:04o}, not 0600, in a directory others "
                                                      "may enter (chmod 600)")


def stream(home, cfg):
    from anima.stream import bookkeeping
    from anima.stream.now import Stream

    s = Stream(home)
    for number in fs.torn_lines(s.book):
        yield Finding("stream", f"{home.rel(s.book)}:{number}",
                      "a line torn by a crash mid-append, no record: what it recorded is lost")
    records, _ = bookkeeping.Reader(s.book).read()
    # now.md's generation: the last a roll started (a record naming a higher one is wrong itself)
    gen = max((r["gen"] for r in records if r.get("by") == "roll" and isinstance(r.get("gen"), int)), default=0)
    top = 0  # the generation the rolls read so far have started
    now_lines = s.text().splitlines(keepends=True)
    archives: dict[str, list[str]] = {}
    for number, r in enumerate(records, 1):
        where = f"{home.rel(s.book)}:{number}"
        if not isinstance(r.get("gen"), int):
            continue
        if r.get("by") == "roll":
            if r["gen"] != top + 1:
                yield Finding("stream", where, f"a roll to generation {r['gen']} after generation {top}")
            top = max(top, r["gen"])
            continue
        span = bookkeeping.span(r)
        if span is None:
            continue
        if r["gen"] > top:
            yield Finding("stream", where, f"a record of generation {r['gen']}, never started "
                                           f"(the rolls so far made {top})")
            continue
        first, last = span
        if r["gen"] == gen:
            found = bookkeeping.block(s, r, gen, now_lines) is not None
        elif bookkeeping.at_heading(now_lines, last - first + 1, r.get("sha256")) is not None:
            found = True  # kept by a roll
        else:  # (each day's archive read once)
            day = str(r.get("at", ""))[:10]
            if day not in archives:
                archives[day] = (fs.read_text(s.archive_path(day)) or "").splitlines(keepends=True) \
                    if bookkeeping.is_day(day) else []
            found = bookkeeping.at_heading(archives[day], last - first + 1, r.get("sha256")) is not None
        if not found:
            yield Finding("stream", where, f"lines {first}-{last} of generation {r['gen']} ({r.get('by')}) are not "
                                           f"in {'now.md' if r['gen'] == gen else 'the archive'} as recorded")


def rhythm(home, cfg):
    from anima.pipeline import rhythm as rules

    for name, _, what in rules.problems(home):
        yield Finding("rhythm", f"pipeline/heartbeat/rhythm.json:{name}", what)


CHECKS = {
    "budget": budgets,
    "private": private_data,
    "secret": secrets,
    "contradiction": contradictions,
    "stale": stale,
    "mode": modes,
    "stream": stream,
    "rhythm": rhythm,
    "text": texts,
}


def run(home, cfg, only: list[str] | None = None) -> list[Finding]:
    found = []
    for name, check in CHECKS.items():
        if only is None or name in only:
            try:
                found.extend(check(home, cfg))
            except (Refused, DataError) as e:
                # a link in the way, or a file it reads that is broken (not UTF-8, bad front
                # matter): this check cannot look there, and says so; the others go on
                found.append(Finding(name, "-", str(e)))
    return found
