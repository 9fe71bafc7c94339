"""The fast path of anima.__main__: `anima prompt` with a warm cache, `anima tick` with
nothing due and `anima recall` of terms or a question, without click.

A function here serves its command only when it is sure to do what the click command would
do, byte for byte on stdout and stderr, with the same exit status and the same files
written. Before it writes anything it checks what it relies on (the words, the home, the
cache entry); at any doubt it returns None with nothing changed, and the click command runs
(recall knows its warnings only once it has searched, which may have filled the session
cache: the click command fills the same). What it then does is the command's own domain code
(anima.host.prompt, anima.stream.heartbeat, anima.recall.search), ended as anima.cli ends a
command (`served`).
"""

import json
import os
import sys

from anima.infra.errors import AnimaError, ending, line

PROMPT_OPTIONS = {"--cwd": True, "--lang": True, "--stats": False, "--sections": True}
TICK_OPTIONS = {"--now": True}


def options(args: list[str], spec: dict[str, bool], arguments: list | None = None) -> dict | None:
    """The options in `args` by name (the value, or True for a flag; the last one given wins,
    as in click) when every word is one of `spec` (name -> takes a value) in a form click
    reads the same way; None for anything else: another word, -h, `--`, a value that is
    missing, empty or starts with a dash, a value given to a flag. With `arguments`, a word
    that is no option (it does not start with a dash) is put there, wherever it stands, as
    click reads the arguments of a command among its options."""
    found, i = {}, 0
    while i < len(args):
        if arguments is not None and not args[i].startswith("-"):
            arguments.append(args[i])
            i += 1
            continue
        name, eq, value = args[i].partition("=")
        if name not in spec:
            return None
        if not spec[name]:
            if eq:
                return None
            found[name] = True
        else:
            if not eq:
                i += 1
                if i == len(args):
                    return None
                value = args[i]
            if not value or value.startswith("-"):
                return None
            found[name] = value
        i += 1
    return found


def out(text: str) -> None:
    """Write data to stdout as UTF-8 bytes, whatever the locale says."""
    stream = sys.stdout.buffer
    stream.write(text.encode("utf-8"))
    stream.flush()


def out_json(obj) -> None:
    """One line of NDJSON on stdout."""
    out(json.dumps(obj, ensure_ascii=False) + "\n")


def _say(text: str) -> None:
    """Write to stderr as click.echo does (the stream's own encoding, flushed)."""
    sys.stderr.write(text)
    sys.stderr.flush()


def _plain_stderr(*texts: str) -> bool:
    """Whether what goes to stderr reads the same as click.echo would write it: a UTF-8 stderr
    (click rewraps an ASCII one) and no escape character (click strips ANSI sequences when
    stderr is no terminal)."""
    encoding = (getattr(sys.stderr, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    return encoding == "utf8" and not any("\x1b" in t for t in texts)


def reader_gone() -> None:
    """The reader of stdout went away (`| head`): what it wanted it has, so the command ends
    quietly with 0, never with click's 1 (which means "nothing matched"). stdout then points
    at /dev/null, so that nothing flushed later meets the closed pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # a stdout without a descriptor (in-process runs): nothing to redirect
        pass
    os.close(devnull)


def home_of(given: str | None):
    """The home as the root group makes it (the umask first: everything anima creates is the
    user's alone), or None when it is no home (click then says why)."""
    from anima.infra.home import Home, default_root

    os.umask(0o077)
    try:
        home = Home(given or os.environ.get("ANIMA_HOME") or default_root())
        home.check()
    except AnimaError:
        return None
    return home


def served(work) -> int:
    """Run `work` (a command's writes and output) and end it as anima.cli ends a command: a
    reader gone is 0, a derived file done without is said once, an error is one line and its
    exit status, Ctrl-C is click's "Aborted!" and 1."""
    from anima.infra import fs

    try:
        try:
            work()
        except BrokenPipeError:
            reader_gone()
        if fs.WENT_WITHOUT:
            _say(fs.went_without_warning() + "\n")
    except KeyboardInterrupt:
        _say("\nAborted!\n")
        return 1
    except Exception as e:
        message, code = ending(e)
        _say(line(message) + "\n")
        return code
    return 0


def prompt(given_home: str | None, args: list[str]) -> int | None:
    """`anima prompt [--cwd DIR] [--lang zh|en] [--sections LIST] [--stats]` from a warm
    cache; None (nothing done) for other words, a cold cache, or anything in doubt."""
    opts = options(args, PROMPT_OPTIONS)
    if opts is None or opts.get("--lang", "en") not in ("zh", "en"):
        return None
    cwd = opts.get("--cwd")
    if cwd is not None and not (os.path.isdir(cwd) and os.access(cwd, os.R_OK)):  # click.Path's checks
        return None
    home = home_of(given_home)
    if home is None or not _plain_stderr(home.root):
        return None
    from anima.host import prompt as host
    from anima.infra import clock

    try:
        names = host.section_names(opts.get("--sections"))
        found = host.lookup(home, cwd or os.getcwd(), opts.get("--lang"), names)[0]
        now = clock.now()
    except (AnimaError, OSError):  # the click command says what is wrong
        return None
    if found is None or not _plain_stderr(*found.warnings):
        return None

    def work():
        host.recorded(home, found, now)
        for message in found.warnings:
            _say(f"anima: {message}\n")
        out(found.text)
        if "--stats" in opts:
            _say(host.format_stats(found.stats))

    return served(work)


def tick(given_home: str | None, args: list[str]) -> int | None:
    """`anima tick [--now ISO]` when nothing is due (anima.stream.heartbeat.due): the lock,
    then only the heartbeat refreshed; another tick holding the lock is 75, silent, as the
    click command has it. None (nothing done) when something is due or anything is in doubt."""
    opts = options(args, TICK_OPTIONS)
    if opts is None:
        return None
    home = home_of(given_home)
    if home is None or not _plain_stderr(home.root):
        return None
    from anima.infra import clock, fs
    from anima.infra.errors import TEMPFAIL, Busy
    from anima.stream import heartbeat

    try:
        now = clock.parse(opts["--now"], "--now") if "--now" in opts else clock.now()
    except AnimaError:  # the click command says what is wrong
        return None
    outcome = []

    def work():
        try:
            with fs.locked(home.path(*heartbeat.HEARTBEAT), wait=False):
                if heartbeat.due(home.root, now):
                    return  # the lock goes with it: the click command takes it again
                heartbeat.beat_only(home, now)
                outcome.append(0)
        except Busy:
            outcome.append(TEMPFAIL)  # quietly: cron would mail a message

    code = served(work)
    if code:
        return code  # an error, said as anima.cli says it
    return outcome[0] if outcome else None  # none: something is due, and the click command does it


RECALL_OPTIONS = {"--limit": True, "--since": True, "--who": True, "--json": False, "--no-tiers": False,
                  "--ask": True}


def recall(given_home: str | None, args: list[str]) -> int | None:
    """`anima recall TERMS... | --ask QUESTION` with --limit, --since, --who, --json and
    --no-tiers; None (nothing done) for any other word (--batch, --facts, --self, --jobs, -h,
    a term that starts with a dash), or anything in doubt. The search runs before a word is
    written; a search that fails, or a warning that would not read the same on stderr as click
    writes it, sends the command to click after all (what the search wrote is the cache both
    paths write)."""
    terms: list[str] = []
    opts = options(args, RECALL_OPTIONS, terms)
    if opts is None:
        return None
    limit, question = opts.get("--limit"), opts.get("--ask")
    if limit is not None and not (limit.isascii() and limit.isdigit() and limit[0] != "0"):
        return None  # (click's IntRange(1) reads more forms, and says what is wrong with the rest)
    if question is not None and terms:
        return None
    home = home_of(given_home)
    if home is None or not _plain_stderr(home.root) or os.path.exists(os.path.join(home.root, ".git")):
        return None  # (a git home: what the scan caches is the autocommit's to judge)
    from anima.infra import config
    from anima.recall import index, search

    if opts.get("--who", index.WHO[0]) not in index.WHO:  # (click.Choice(WHO) says what is wrong)
        return None
    try:
        cfg = config.load(home.config)
        if question is not None:
            from anima.recall import ask

            query = ask.query(question)
        else:
            query = search.Query(terms)
        filters = search.Filters(search.parse_since(opts.get("--since")), opts.get("--who"))
    except (AnimaError, OSError):  # the click command says what is wrong
        return None
    if not query.raw:
        return None
    said: list[str] = []
    try:  # (nothing is written before the search is done and its warnings read)
        found = search.run(home, cfg, [query], filters, int(limit) if limit else cfg["recall.limit"],
                           "--no-tiers" not in opts, lambda m: said.append(f"anima: warning: {m}\n"),
                           lambda m: said.append(f"anima: {m}\n"), cfg["recall.jobs"])[0]
    except Exception:  # the click command runs it again, and says what went wrong after what it warned of
        return None
    if found and not search.answers(found):
        said.append(f"anima: {search.RELAXED}\n")
    if not _plain_stderr(*said):
        return None

    def work():
        for message in said:
            _say(message)
        for r in found:
            if "--json" in opts:
                out_json(search.as_json(r))
            else:
                out(search.as_line(r, cfg["recall.snippet_chars"]))

    return served(work) or (0 if found else 1)
