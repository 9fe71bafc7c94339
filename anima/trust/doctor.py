"""`anima doctor`: is this home healthy and wired? One line per check: OK, WARN or FAIL, with
the fix.

FAIL is what stops anima from working (no home, a config it cannot read, a prompt that
cannot be made, a model endpoint it cannot reach when one is configured); WARN is what works
but is likely not what a person wants (cron not wired, a backlog, dead letters, a stale index,
files others can read).
"""

import os
import stat

from anima.infra import changeset, clock, fs, jsontext

OK, WARN, FAIL = "OK", "WARN", "FAIL"
TICK_LATE_SEC = 5 * 60
CONSOLIDATE_LATE_SEC = 36 * 3600
BACKLOG_LATE_SEC = 10 * 60
REACH_TIMEOUT_SEC = 5


class Line:
    __slots__ = ("status", "check", "detail", "fix")

    def __init__(self, status: str, check: str, detail: str, fix: str = ""):
        self.status, self.check, self.detail, self.fix = status, check, detail, fix

    def as_dict(self) -> dict:
        return {"status": self.status, "check": self.check, "detail": self.detail, "fix": self.fix}


def ago(seconds: float) -> str:
    if seconds < 0:  # the clock was set back, or ANIMA_NOW is before what happened
        return f"{ago(-seconds).removesuffix(' ago')} ahead of now"
    if seconds < 120:
        return f"{int(seconds)} s ago"
    if seconds < 7200:
        return f"{int(seconds // 60)} min ago"
    if seconds < 172800:
        return f"{seconds / 3600:.0f} h ago"
    return f"{seconds / 86400:.0f} days ago"


def home_lines(home):
    if not os.path.isdir(home.root):
        yield Line(FAIL, "home", f"{home.root} does not exist", "anima init")
        return
    mode = stat.S_IMODE(os.stat(home.root).st_mode)
    from anima.trust import check

    found = list(check.modes(home, None))
    links = [f for f in found if os.path.islink(home.path(f.where))]
    loose = [f for f in found if f not in links]
    if loose:
        yield Line(WARN, "permissions", f"{len(loose)} files or directories others may reach "
                   f"(first: {loose[0].where}: {loose[0].what})",
                   f"chmod -R go-rwx {home.root}; `anima check --only mode`")
    else:
        yield Line(OK, "permissions", f"{home.root} is {mode:04o}: nothing in it is another user's to read")
    if links:  # no mode makes a link safe: anima refuses to write through one, so it has to go
        link = home.path(links[0].where)
        target = os.readlink(link)
        keep = f", then `cp -a {os.path.realpath(link)} {link}` to keep a copy of what it pointed to" \
            if os.path.exists(link) else ""
        yield Line(WARN, "links", f"{len(links)} symbolic link{'s' if len(links) != 1 else ''} in the home, "
                   f"which anima refuses to write through (first: {links[0].where} -> {target})",
                   f"`rm {link}`{keep}; `anima check --only mode` lists them all")


def config_lines(home) -> tuple[list[Line], dict | None]:
    """The config's lines, and the config (None when it cannot be read)."""
    from anima.infra import config
    from anima.infra.errors import AnimaError
    from anima.self import blocks

    try:
        cfg = config.load(home.config)
    except AnimaError as e:  # not TOML, a bad value (78), not UTF-8 (65): a row, not the end of the table
        return [Line(FAIL, "config", str(e),
                     "`anima config set KEY VALUE`, or edit config.toml (anima-config(5))")], None
    where = "config.toml" if os.path.exists(home.config) else "defaults (no config.toml)"
    lines = [Line(OK, "config", f"{where} is valid")]
    missing = [k for k in blocks.KEYS if not os.path.exists(blocks.block_path(home.blocks, k))]
    if missing:
        lines.append(Line(WARN, "blocks", f"missing: {', '.join(missing)}", "anima init"))
    else:
        lines.append(Line(OK, "blocks", "all six self blocks are there"))
    return lines, cfg


def prompt_lines(home, cfg, now, environ):
    """Whether `anima prompt` can run: it is assembled as prompt assembles it, from the files,
    with none of its side effects (no cache entry, no injection counted, no log line); and
    whether a hand-written profile fits in it whole."""
    from anima.host import prompt
    from anima.infra.errors import AnimaError, os_error_code, os_error_message

    try:
        made, _ = prompt.fresh(home, os.getcwd(), None, None, now, environ, freeze=False)
    except AnimaError as e:
        yield Line(FAIL, "prompt", f"anima prompt fails: {e}", "correct the file it names; see anima-home(5)")
        return
    except OSError as e:
        if os_error_code(e) is None:
            raise
        yield Line(FAIL, "prompt", f"anima prompt fails: {os_error_message(e)}", "correct the file it names")
        return
    from anima.trust import check

    over = check.profile_over(home, cfg)
    if over:
        yield Line(WARN, "prompt", f"anima prompt assembles {len(made.text)} characters; {over}",
                   "shorten facts/profile.md (`anima profile set`), or raise prompt.budget.profile_handwritten")
        return
    yield Line(OK, "prompt", f"anima prompt assembles {len(made.text)} characters")


def text_lines(home):
    """Whether the self's text files can be read, and hold no control character a person
    edited in. Files prompt reads fail it (and the prompt line says so); the rest, such as
    self/state.md, only the commands that read them: a WARN."""
    from anima.trust import check

    found = list(check.texts(home, None))
    if found:
        yield Line(WARN, "text", f"{len(found)} problem{'s' if len(found) != 1 else ''} in the self's text files "
                   f"(first: {found[0].where}: {found[0].what})", "`anima check --only text` lists them; correct them")
    else:
        yield Line(OK, "text", "the self's text files are UTF-8, with no control characters")


def index_lines(home, cfg):
    from anima.recall import index

    if not cfg["index.enabled"]:
        yield Line(OK, "index", "off: recall scans the transcripts")
        return
    try:
        s = index.status(home, cfg)
    except Exception as e:  # an unusable index: recall scans, but a person should rebuild it
        yield Line(WARN, "index", f"on, but {e}", "anima index rebuild")
        return
    if not s["exists"]:
        yield Line(WARN, "index", "on, but there is no index: recall scans", "anima index rebuild")
    elif s["stale"] or s["missing"]:
        yield Line(WARN, "index", f"{s['stale']} stale and {s['missing']} unindexed sessions of {s['sessions']}: "
                   "recall scans those", "anima index update (anima tick does it every 10 minutes, tick.steps)")
    else:
        yield Line(OK, "index", f"{s['indexed']} sessions indexed, {s['hot']} hot, built {s['built']}")


def recall_lines(home, cfg):
    """The recall.sources that yield no turn (anima.recall.silent); nothing without sources."""
    from anima.recall import silent, sources

    given = sources.setting(cfg, "recall.sources", [])
    if not given:
        return
    quiet = [line.removeprefix("recall.sources ") for line in silent.survey(home, cfg)]
    if quiet:
        yield Line(WARN, "recall", f"{len(quiet)} of {len(given)} recall.sources give no turn: {'; '.join(quiet)}",
                   "fix the glob, or see anima-transcripts(5) for the formats read")
    else:
        yield Line(OK, "recall", f"{len(given)} recall.sources, each gives turns")


def queue_lines(home):
    from anima.pipeline import metrics

    m = metrics.collect(home)
    late = [(name, q) for name, q in m["queues"].items()
            if q["oldest_age_sec"] is not None and q["oldest_age_sec"] > BACKLOG_LATE_SEC]
    waiting = sum(q["waiting"] for q in m["queues"].values())
    if late:
        name, q = late[0]
        yield Line(WARN, "queues", f"{name}: {q['waiting']} waiting, the oldest {ago(q['oldest_age_sec'])}",
                   "run the loop: bin/anima-loop (cron), or `anima preprocess`, `anima internalize`, `anima dispatch`")
    else:
        yield Line(OK, "queues", f"{waiting} waiting, none older than {BACKLOG_LATE_SEC // 60} min")
    if m["dead_letters"]:
        yield Line(WARN, "dead letters", f"{m['dead_letters']} in pipeline/dead_letter/",
                   "`anima queue ls dead` shows why; `anima queue retry NAME` replays one")
    else:
        yield Line(OK, "dead letters", "none")


def hook_lines(home):
    """A warning for each hook dispatch would refuse to run for a reason other than a missing
    exec bit (which is how a person keeps a hook off): it is not hers alone."""
    from anima.infra.errors import AnimaError
    from anima.pipeline import dispatch

    try:
        names = sorted(fs.listdir(home.path("hooks")))
    except FileNotFoundError:
        return
    except (AnimaError, OSError) as e:
        yield Line(WARN, "hooks", f"{e}; dispatch runs no hook", f"make {home.path('hooks')} a plain directory")
        return
    problem = dispatch.trust_problem(fs.status(home.path("hooks")), home.path("hooks"))
    if problem:  # empty or not: anyone who may write there may put a hook there
        yield Line(WARN, "hooks", f"{problem}; dispatch runs no hook from it",
                   f"it must be yours and writable by no one else: chown, chmod go-w {home.path('hooks')}")
        return
    refused = [(n, p) for n in names if not n.startswith(".")
               if (p := dispatch.hook_problem(home, n)) and "is not executable" not in p]
    if refused:
        name, why = refused[0]
        yield Line(WARN, "hooks", f"{len(refused)} hook{'s' if len(refused) != 1 else ''} dispatch refuses to run "
                   f"(first: {why})", "a hook must be a regular file of hooks/ with one link, yours, 0700; "
                   "see anima-dispatch(1)")


def tick_lines(home, now):
    heartbeat = fs.read_text(home.path("pipeline", "heartbeat", "tick.json"))
    try:
        at = clock.parse(jsontext.loads(heartbeat)["at"], "at")
    except Exception:
        yield Line(WARN, "tick", "anima tick has never run: the rhythm and the loop are not wired",
                   "bin/anima-crontab | crontab -")
        return
    from anima.infra.errors import DataError
    from anima.pipeline import rhythm

    try:
        odd = rhythm.problems(home)
    except DataError as e:
        yield Line(FAIL, "tick", f"anima tick fails: {e}", "correct the file it names; see anima-home(5)")
        return
    if odd:  # the ones that stop tick first
        rule, stops, what = sorted(odd, key=lambda p: not p[1])[0]
        yield Line(FAIL if stops else WARN, "tick", f"pipeline/heartbeat/rhythm.json: rule {rule}: {what}",
                   "correct the time it names (RFC 3339, 1970 to 8999); `anima check --only rhythm`" if stops
                   else "anima tick")
        return
    failed = jsontext.loads(heartbeat).get("failed")
    if now - at > TICK_LATE_SEC:
        yield Line(WARN, "tick", f"the last tick was {ago(now - at)}: is cron running it every minute?",
                   "bin/anima-crontab | crontab -")
    elif isinstance(failed, list) and failed:
        yield Line(WARN, "tick", f"the last tick was {ago(now - at)}; steps that failed in it: "
                   f"{', '.join(map(str, failed))}", "anima tick (it says why on stderr)")
    else:
        yield Line(OK, "tick", f"the last tick was {ago(now - at)}")


def last_consolidate(home) -> float | None:
    """When the last consolidate ran: pipeline/consolidate.cursor, which each run rewrites."""
    try:
        return clock.parse(jsontext.loads(fs.read_text(home.path("pipeline", "consolidate.cursor")))["at"], "at")
    except Exception:  # none yet, or unreadable: consolidate reads it again from the start
        return None


def _lived(home) -> bool:
    """Whether the stream's bookkeeping records anything lived: more than init's first entry
    (her waking up, which consolidate does not take for lived)."""
    from anima.stream import bookkeeping

    records, _ = bookkeeping.Reader(home.path("pipeline", "stream.jsonl")).read()
    return any(r.get("by") != "init" for r in records)


def night_wired(cfg) -> str | None:
    """The rule after which `anima tick` consolidates, when it does (tick.steps holds
    rhythm, internalize and consolidate, and consolidate.rule is a rule that is on); else None."""
    from anima.pipeline import rhythm

    rule = cfg["consolidate.rule"]
    steps = set(cfg["tick.steps"])
    if {"rhythm", "internalize", "consolidate"} <= steps and rule in rhythm.rules(cfg.values):
        return rule
    return None


def consolidate_lines(home, cfg, now):
    if changeset.is_pending(home, "consolidate"):
        yield Line(WARN, "consolidate", "a killed consolidate's change set is pending: nothing is added to now.md "
                   "(think, internalize, externalize exit 75) until it is finished", "anima consolidate")
        return
    at = last_consolidate(home)
    lived = _lived(home)
    rule = night_wired(cfg)
    fix = ("bin/anima-crontab | crontab -" if rule else
           "anima consolidate nightly, or let anima tick do it (tick.steps, consolidate.rule)")
    if at is None:
        if lived and rule is None:
            yield Line(WARN, "consolidate", "the stream was never consolidated, and anima tick does not consolidate "
                       "(tick.steps, consolidate.rule): no memories or autobiography yet", fix)
        elif lived:
            yield Line(OK, "consolidate",
                       f"not consolidated yet: anima tick does it once she has lived the rule {rule}")
        else:
            yield Line(OK, "consolidate", "nothing lived yet to consolidate")
    elif now - at > CONSOLIDATE_LATE_SEC:
        how = (f"anima tick after the rule {rule}" if rule
               else "nothing: anima tick does not (tick.steps, consolidate.rule)")
        yield Line(WARN, "consolidate", f"the last consolidate was {ago(now - at)}; what consolidates: {how}", fix)
    else:
        yield Line(OK, "consolidate", f"the last consolidate was {ago(now - at)}")


def reach_openai(base: str, key: str | None) -> str | None:
    """Why GET BASE/models fails, or None when the endpoint answers."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(base.rstrip("/") + "/models")
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=REACH_TIMEOUT_SEC) as response:
            response.read(1)
    except urllib.error.HTTPError as e:
        return f"HTTP {e.code} from {base}" + (": the API key is refused" if e.code in (401, 403) else "")
    except (urllib.error.URLError, OSError, ValueError) as e:
        return f"{base}: {getattr(e, 'reason', e)}"
    return None


def model_lines(home, cfg, now, environ):
    import shlex
    import shutil

    backend = cfg["llm.backend"]
    if backend == "rules":
        yield Line(OK, "model", "rules: offline templates, no model to reach")
        return
    if backend.startswith("cmd:"):
        argv = shlex.split(backend[4:])
        found = shutil.which(argv[0]) if argv else None
        if found:
            yield Line(OK, "model", f"cmd: {argv[0]} is {found}")
        else:
            yield Line(FAIL, "model", f"cmd: {argv[0] if argv else '(empty)'} is not an executable on PATH",
                       "install it, or `anima config set llm.backend rules`")
    else:
        base = environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        problem = reach_openai(base, environ.get("OPENAI_API_KEY"))
        if problem:
            yield Line(FAIL, "model", f"openai: {problem}",
                       "set OPENAI_BASE_URL and OPENAI_API_KEY, or `anima config set llm.backend rules`")
        else:
            yield Line(OK, "model", f"openai: {base} answers (model {cfg['llm.model']})")
    from anima.infra import llm

    cap = cfg["llm.max_calls_per_hour"]
    used = llm.calls_since(home, now - 3600)
    if cap == 0:
        yield Line(WARN, "budget", "llm.max_calls_per_hour is 0: the rules backend does all the work",
                   "anima config set llm.max_calls_per_hour 60")
    elif used >= cap:
        yield Line(WARN, "budget", f"spent: {used} of {cap} calls this hour; the rules backend has taken over",
                   "wait for the hour to pass, or raise llm.max_calls_per_hour")
    else:
        yield Line(OK, "budget", f"{cap - used} of {cap} model calls left this hour")


def run(home, now: float, environ=os.environ) -> list[Line]:
    """Every check's line at `now` (her time: the last tick, the last consolidate, the model
    budget; the ages of files are the files' own)."""
    lines = list(home_lines(home))
    if lines and lines[0].status == FAIL:
        return lines
    more, cfg = config_lines(home)
    lines.extend(more)
    if cfg is None:
        return lines
    for more in (prompt_lines(home, cfg, now, environ), text_lines(home), index_lines(home, cfg),
                 recall_lines(home, cfg), queue_lines(home),
                 hook_lines(home), tick_lines(home, now), consolidate_lines(home, cfg, now),
                 model_lines(home, cfg, now, environ)):
        lines.extend(more)
    return lines
