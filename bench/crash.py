"""Crash safety as a property (issue 14): every writing command killed with SIGKILL at a
random moment of its own run, then the loop run to completion, then the promises checked.

The home is a day in the middle of being lived (`world`): messages narrated, waiting in
message_queue and in the inbox; decisions of hers acted on, queued for dispatch and not yet
read by externalize; a roll behind her; a fact staged. Each command (`CASES`) is first timed
on a copy of it, unkilled (the median of three runs); then every run takes a fresh copy,
starts the command, and SIGKILLs it at a uniformly random moment between the end of Python's
start-up (what `anima --help` takes; at most half the command) and that duration, so that
the kills land mid-work whatever the command costs. A kill after the command ended is
counted as landing after, not as a failure.

After each kill the loop is run to completion: the killed command again where running it
twice is meant to do it once (consolidate, forget, note add, ...), then preprocess,
internalize, externalize, dispatch, preprocess, internalize. A case NAME+roll or NAME+night
first runs what cron may run in between (`stream roll`, `consolidate`): the crashes issue 14
found hid in such a pair. `tick` is the heartbeat, the whole loop in one process; `tick+night`
ticks at the minute the night rule fires, so that the kill lands while she lives it or while
she consolidates. The claims a killed consumer left in a queue's cur/ come back
after queues.CLAIM_TIMEOUT_SEC; the bench does not wait five minutes but calls the same
`Queue.recover` with a timeout of 0, as that moment would.
Then (`audit`):

- lost: a decision of hers ("I decide ...") that is not exactly one action, done or in
  dead_letter/ with its reason; an item of a host's action list (the design's form, three
  actions a file) with no effect, its items begun out of order; an event not narrated; a
  deed of hers not narrated; a file left waiting or claimed;
- repeated: an action done twice in pipeline/dispatch.journal, a hook's side effect or a
  diary entry or a memory written twice, an event narrated twice;
- stream: a record whose lines are nowhere in now.md or the archive as recorded, or
  generations out of order (this script's own reading, independent of anima check);
- check: `anima check` exiting other than 0 or 1, or `anima check --only stream` exiting 0
  while the stream is out of step (silent about it);
- exit 70: any command of the loop exiting 70 (a bug in anima); failed: exiting otherwise
  than 0 (or, run again, with a status it documents for "already done").

    python bench/crash.py [--runs N] [--seed N] [--scale N] [--only CMD,...]

Exit 1 when any run found anything. tests/test_crash.py runs a few kills of each command
with these same functions.
"""

import argparse
import collections
import contextlib
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ANIMA = os.path.join(os.path.dirname(sys.executable), "anima")
NOW = "2026-11-30T21:05:00Z"  # her time in every run (the files' clock is the real one)
NIGHT = "2026-12-01T02:00:30Z"  # the night rule (consolidate.rule, 02:00) just fired: a tick lives it and sleeps
QUEUES = ("pending", "message", "action")
HOOK = """#!/bin/sh
# a side effect anima cannot take back: the action's id, one line per run of this hook
grep -o '"id": "act_[^"]*"' | head -n 1 | cut -d '"' -f 4 >> ../effects.log
"""
LOOP = (["preprocess"], ["internalize"], ["externalize"], ["dispatch"], ["preprocess"], ["internalize"])


def environ(home: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIMA_")}
    return {**env, "ANIMA_HOME": home, "ANIMA_NOW": NOW, "TZ": "UTC", "LANG": "C.UTF-8"}


def anima(home: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([ANIMA, *args], input=stdin, env=environ(home), capture_output=True, text=True)


def must(home: str, *args: str, stdin: str | None = None) -> str:
    r = anima(home, *args, stdin=stdin)
    if r.returncode != 0:
        raise RuntimeError(f"anima {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout


# --- the day she is living -----------------------------------------------------------------

def message(k: int) -> str:
    return f"msg{k:04d}"


def decision(k: int) -> tuple[str, str, str]:
    """Her k-th decision: (the line she thinks, its command, the text the action carries).
    Four kinds in turn: a diary entry, a reply by hook (an effect outside anima), a reply to
    someone who never spoke (dead-lettered as unjustified), a memory."""
    kind = k % 4
    if kind == 0:
        return f"I decide to write in my diary: dia{k:04d}.", "diary.write", f"dia{k:04d}."
    if kind == 1:
        return f"I decide to reply to Alice: rep{k:04d}", "reply", f"rep{k:04d}"
    if kind == 2:
        return f"I decide to reply to Nobody: non{k:04d}", "reply", f"non{k:04d}"
    return f"I decide to remember about alice: mem{k:04d}.", "memory.write", f"mem{k:04d}."


class World:
    """A home half-way through a day (built once, copied for every run), and what is in it."""

    def __init__(self, root: str, n: int):
        if not 0 < n < NEW // 4:
            raise ValueError(f"a day of 1 to {NEW // 4 - 1} a batch: its numbers must not reach those of NEW")
        self.root, self.n = root, n
        self.home = os.path.join(root, "home")
        self.messages: list[str] = []
        self.decisions: list[tuple[str, str]] = []
        self.fact = ""
        self.forget_line = 0
        self.lists: list[str] = []  # the ids of the action files of the design's form, a list each
        self._k = 0

    def say(self, count: int, preprocess: bool = True) -> None:
        first = len(self.messages)
        self.messages += [message(k) for k in range(first, first + count)]
        must(self.home, "say", "--json", "-", stdin=events(range(first, first + count)))
        if preprocess:
            must(self.home, "preprocess")

    def think(self, count: int) -> None:
        """`count` thoughts of hers, one decision each, appended as `anima think` does (one
        process for them all: the day is made, not measured)."""
        from anima.infra import clock
        from anima.infra.home import Home
        from anima.stream.now import Stream

        stream = Stream(Home(self.home))
        at = clock.parse(NOW, "NOW") - 3600
        with umask(0o077):
            for _ in range(count):
                line, command, text = decision(self._k)
                stream.append(f"Thinking of the day, thought {self._k}.\n{line}", "think", at + self._k)
                self.decisions.append((command, text))
                self._k += 1

    def act_lists(self, count: int) -> None:
        """`count` action files of three actions each ({"actions": [...]}, as the design writes
        them): a diary entry, a reply by hook (an effect outside anima), a memory."""
        from anima.infra import clock
        from anima.infra.home import Home
        from anima.pipeline import queues

        queue = queues.Queue(Home(self.home), "action")
        with umask(0o077):
            for _ in range(count):
                k = len(self.lists)
                items = [{"command": c, "params": p} for c, p in list_items(k)]
                doc = queues.envelope("action", "host", {"actions": items}, "act", now=clock.parse(NOW, "NOW"))
                queue.deliver(doc)
                self.lists.append(doc["envelope"]["id"])

    def build(self) -> "World":
        home = self.home
        must(home, "init", "--lang", "en")
        with umask(0o077):
            os.makedirs(os.path.join(home, "hooks"), exist_ok=True)
            fd = os.open(os.path.join(home, "hooks", "reply"), os.O_WRONLY | os.O_CREAT, 0o700)
            with os.fdopen(fd, "w") as f:
                f.write(HOOK)
        n = self.n
        self.say(n)
        must(home, "internalize")
        self.think(n)  # acted on and carried out, the results narrated
        for args in (["externalize"], ["dispatch"], ["preprocess"], ["internalize"]):
            must(home, *args)
        must(home, "stream", "roll", "--force")  # a generation behind her, in the archive
        must(home, "session", "append", "--session", "s1", "--role", "user", "My cat is called Miso.")
        self.fact = must(home, "stage", "--session", "s1", "--line", "2", "--quote", "My cat is called Miso.").strip()
        from run import note_text

        for i in range(20):
            must(home, "note", "add", note_text(i))
        self.say(n)
        must(home, "internalize")
        self.think(n)
        must(home, "externalize")  # queued, not yet carried out
        self.think(n)  # not yet read
        self.say(n)  # waiting in message_queue
        self.say(n // 2, preprocess=False)  # waiting in the inbox
        self.act_lists(max(1, n // 4))  # a host's action files of the design's form, not yet carried out
        with open(os.path.join(home, "self", "stream", "now.md"), encoding="utf-8") as f:
            self.forget_line = next(i for i, line in enumerate(f, 1) if message(n) in line)
        return self


def list_items(k: int) -> list[tuple[str, dict]]:
    """The three actions of the k-th list file: (command, params)."""
    return [("diary.write", {"text": f"lst{k:04d}a."}), ("reply", {"to": "Alice", "text": f"lst{k:04d}b"}),
            ("memory.write", {"topic": "about_alice", "text": f"lst{k:04d}c."})]


def events(ks) -> str:
    speakers = ("Alice", "Bob")
    return "".join(json.dumps({"text": f"Message {message(k)}: shall we meet?", "speaker": speakers[k % 2],
                               "scene": "chat"}) + "\n" for k in ks)


@contextlib.contextmanager
def umask(mask: int):
    """The mask anima's own commands run under, for files this script writes into a home."""
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


# --- the commands killed -------------------------------------------------------------------

class Case:
    """One writing command: its argv and stdin, whether the loop runs it again after a kill
    (a command meant to be run again until it is done) and with which statuses, and what it
    adds that may be there at most once when it was killed (exactly once when it was not)."""

    def __init__(self, name, argv, stdin=None, again=True, again_ok=(0,), messages=(), decisions=(),
                 gone=(), extra=None, meanwhile=()):
        self.name, self.argv, self.stdin = name, argv, stdin
        self.meanwhile = meanwhile  # what cron runs between the kill and the loop (a roll, the night)
        self.again, self.again_ok = again, again_ok
        self.messages, self.decisions, self.gone, self.extra = messages, decisions, gone, extra


NEW = 900  # where the numbers of what a killed command adds begin (far from the day's)
THOUGHT = [decision(NEW + k) for k in range(8)]


def note_once(world, home, landed):
    text = "I keep one thing in mind after the crash."
    with open(os.path.join(home, "notes", "notes.md"), encoding="utf-8") as f:
        count = f.read().count(text)
    return [] if count == 1 else [("lost" if count == 0 else "repeated", f"the note is there {count} times")]


def block_once(world, home, landed):
    from anima.self import blocks

    body = "I steer by the plan I made after the crash."
    found = blocks.read(os.path.join(home, "self", "blocks"), "direction")
    history = os.path.join(home, "self", "blocks", ".history", "direction")
    versions = [read_text(os.path.join(history, v)) for v in listdir(history) if re.fullmatch(r"\d+\.md", v)]
    out = []
    if found is None or found.body != body:
        out.append(("lost", "self set: the direction block is not the new body"))
    if len(versions) != len(set(versions)):
        out.append(("repeated", "self set: a version kept twice in .history"))
    if not versions:
        out.append(("lost", "self set: the previous version is not kept"))
    return out


def fact_once(world, home, landed, approved=False):
    with open(os.path.join(home, "facts", "facts.jsonl"), encoding="utf-8") as f:
        facts = [json.loads(line) for line in f if line.strip()]
    mine = [x for x in facts if x.get("id") == world.fact]
    ids = [x.get("id") for x in facts]
    out = []
    if len(ids) != len(set(ids)):
        out.append(("repeated", "a fact recorded twice in facts/facts.jsonl"))
    if not mine:
        out.append(("lost", f"fact {world.fact} is gone"))
    elif approved and mine[-1].get("status") != "approved":
        out.append(("lost", f"fact {world.fact} is not approved"))
    return out


def forgotten(world, home, landed):
    out = []
    word = message(world.n)
    for top, _, names in os.walk(home):
        for name in names:
            with open(os.path.join(top, name), "rb") as f:
                if word.encode() in f.read():
                    out.append(("lost", f"forget: {word} still in {os.path.relpath(os.path.join(top, name), home)}"))
    return out


def cases(world: World) -> dict[str, Case]:
    thought = "After the crash I think it over.\n" + "\n".join(line for line, _, _ in THOUGHT)
    return {c.name: c for c in (
        Case("say", ["say", "--json", "-"], events(range(NEW, NEW + world.n)), again=False,
             messages=[message(k) for k in range(NEW, NEW + world.n)]),
        Case("preprocess", ["preprocess"]),
        Case("internalize", ["internalize"]),
        # a roll before the next run: the records a killed run owes then name an archived generation
        Case("internalize+roll", ["internalize"], meanwhile=[["stream", "roll", "--force"]]),
        Case("think", ["think", "-"], thought, again=False, decisions=[(c, t) for _, c, t in THOUGHT]),
        Case("think+night", ["think", "-"], thought, again=False, decisions=[(c, t) for _, c, t in THOUGHT],
             meanwhile=[["consolidate"]]),
        Case("externalize", ["externalize"]),
        Case("externalize+roll", ["externalize"], meanwhile=[["stream", "roll", "--force"]]),
        Case("dispatch", ["dispatch"]),
        Case("consolidate", ["consolidate"]),
        # the heartbeat: every step of the loop, the roll and (at night) the consolidation in one process
        Case("tick", ["tick"]),
        Case("tick+night", ["tick", "--now", NIGHT]),  # the night rule fires, she lives it, then consolidates
        Case("stream roll", ["stream", "roll", "--force"]),
        Case("note add", ["note", "add", "I keep one thing in mind after the crash."], again_ok=(0, 77),
             extra=note_once),
        Case("stage", ["stage", "--session", "s1", "--line", "2", "--quote", "My cat is called Miso."],
             extra=fact_once),
        Case("approve", ["approve", world.fact], extra=lambda w, h, landed: fact_once(w, h, landed, True)),
        Case("forget", ["forget", "--source", f"self/stream/now.md:{world.forget_line}", "--yes"],
             gone=[message(world.n)], extra=forgotten),
        Case("self set", ["self", "set", "direction"], "I steer by the plan I made after the crash.\n",
             extra=block_once),
    )}


# --- one run -------------------------------------------------------------------------------

class Outcome:
    def __init__(self, case: str, delay: float):
        self.case, self.delay = case, delay
        self.landed = False  # killed while it ran (else it had ended)
        self.problems: list[tuple[str, str]] = []  # (kind, what)
        self.reported = False  # anima check --only stream found something after the loop

    def kinds(self) -> set[str]:
        return {kind for kind, _ in self.problems}


def copy(world: World, where: str) -> str:
    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(world.root, where, symlinks=True)
    return os.path.join(where, "home")


def start(home: str, case: Case) -> subprocess.Popen:
    p = subprocess.Popen([ANIMA, *case.argv], env=environ(home), stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    if case.stdin is not None:
        with contextlib.suppress(BrokenPipeError):
            p.stdin.write(case.stdin)
    with contextlib.suppress(BrokenPipeError):
        p.stdin.close()
    return p


def duration(world: World, case: Case, where: str, runs: int = 3) -> float:
    """How long the command takes on a copy of the day, unkilled: the median of `runs`."""
    took = []
    for i in range(runs):
        home = copy(world, f"{where}-{i}")
        began = time.perf_counter()
        status = start(home, case).wait()
        took.append(time.perf_counter() - began)
        shutil.rmtree(f"{where}-{i}")
        if status != 0:
            raise RuntimeError(f"anima {case.name} exited {status} unkilled")
    return statistics.median(took)


def moment(rng: random.Random, took: float, startup: float) -> float:
    """When to kill a command that takes `took` seconds: a uniform moment after start-up (what
    `anima --help` takes, `startup`; at most half the command) and before its end, so that the
    kills land in its work rather than in Python's start-up, which writes nothing."""
    return rng.uniform(min(startup, took / 2), took)


def startup_time(runs: int = 5) -> float:
    """What start-up alone takes: the median of `runs` of `anima --help`."""
    return statistics.median(timed([ANIMA, "--help"]) for _ in range(runs))


def timed(argv: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - began


def trial(world: World, case: Case, delay: float, where: str) -> Outcome:
    """Copy the day, kill the command `delay` seconds after it started, run the loop, audit."""
    out = Outcome(case.name, delay)
    home = copy(world, where)
    p = start(home, case)
    time.sleep(delay)
    p.send_signal(signal.SIGKILL)
    out.landed = p.wait() == -signal.SIGKILL
    recover(home)
    steps = [(argv, None, (0,)) for argv in case.meanwhile]
    steps += [(case.argv, case.stdin, case.again_ok)] if case.again else []
    steps += [(argv, None, (0,)) for argv in LOOP]
    for argv, stdin, ok in steps:
        r = anima(home, *argv, stdin=stdin)
        if r.returncode == 70:
            out.problems.append(("exit 70", f"anima {' '.join(argv)}: {r.stderr.strip()}"))
        elif r.returncode not in ok:
            out.problems.append(("failed", f"anima {' '.join(argv)} exited {r.returncode}: {r.stderr.strip()}"))
    out.problems += audit(world, case, home, out.landed)
    wrong = any(kind == "stream" for kind, _ in out.problems)
    everything = anima(home, "check")
    if everything.returncode not in (0, 1):
        out.problems.append(("check", f"anima check exited {everything.returncode}: {everything.stderr.strip()}"))
    stream = anima(home, "check", "--only", "stream")
    out.reported = stream.returncode == 1
    if stream.returncode not in (0, 1):
        out.problems.append(("check", f"anima check --only stream exited {stream.returncode}"))
    elif wrong and stream.returncode == 0:
        out.problems.append(("check", "anima check --only stream is silent about the above"))
    return out


def recover(home: str) -> None:
    """What the claim timeout does for a consumer that died, without the five minutes' wait."""
    from anima.infra.home import Home
    from anima.pipeline import queues

    for name in QUEUES:
        queues.Queue(Home(home), name).recover(0)


# --- the promises --------------------------------------------------------------------------

def audit(world: World, case: Case, home: str, landed: bool) -> list[tuple[str, str]]:
    """What is lost, repeated or out of step in `home` once the loop ran to completion."""
    pipeline = os.path.join(home, "pipeline")
    records = json_lines(os.path.join(pipeline, "stream.jsonl"))
    narrated = collections.Counter(r["event"] for r in records if r.get("by") == "internalize"
                                   and isinstance(r.get("event"), str))
    problems = [("repeated", f"event {key} narrated {n} times") for key, n in narrated.items() if n > 1]
    problems += decisions_kept(world, case, home, landed, narrated)
    problems += lists_kept(world, home, narrated)
    problems += events_kept(world, case, home, landed, narrated)
    problems += stream_in_step(home, records)
    for where in ("inbox/pending", "message_queue", "action_queue"):
        for part in ("", "cur"):
            left = [n for n in listdir(os.path.join(pipeline, where, part)) if n.endswith(".json")]
            if left:
                problems.append(("lost", f"{len(left)} files left in {where}/{part} after the loop"))
    if case.extra is not None:
        problems += case.extra(world, home, landed)
    return problems


def decisions_kept(world, case, home, landed, narrated) -> list[tuple[str, str]]:
    """Each decision of hers exactly one action, done (its effect once, its deed narrated) or
    dead-lettered with a reason; a hook begun before a crash is never run again."""
    pipeline = os.path.join(home, "pipeline")
    found = collections.defaultdict(list)
    for where in ("action_queue", "action_queue/cur", "action_queue/done", "dead_letter"):
        for name in listdir(os.path.join(pipeline, where)):
            if name.startswith("act_") and name.endswith(".json"):
                doc = read_json(os.path.join(pipeline, where, name))
                if "actions" in doc.get("payload", {}):
                    continue  # a list: lists_kept
                params = doc.get("payload", {}).get("params", {})
                found[(doc["payload"].get("command"), params.get("text"))].append((where, doc["envelope"]["id"]))
    journal = collections.Counter(e.get("id") for e in json_lines(os.path.join(pipeline, "dispatch.journal"))
                                  if e.get("state") == "done")
    effects = collections.Counter(read_text(os.path.join(home, "..", "effects.log")).split())
    diary = "".join(read_text(p) for p in files(os.path.join(home, "self", "diary")))
    memories = "".join(read_text(p) for p in files(os.path.join(home, "self", "memories")))
    problems = [("repeated", f"action {aid} done {n} times in dispatch.journal") for aid, n in journal.items() if n > 1]
    problems += [("repeated", f"hook run {n} times for {aid}") for aid, n in effects.items() if n > 1]
    mine = [(d, True) for d in world.decisions] + [(d, not landed) for d in case.decisions]
    for d in set(found) - {d for d, _ in mine}:
        problems.append(("repeated", f"an action nobody decided: {d}"))
    for (command, text), required in mine:
        acts = found.get((command, text), [])
        if not acts:
            if required:
                problems.append(("lost", f"her decision {command} {text!r} is no action"))
            continue
        if len(acts) > 1:
            problems.append(("repeated", f"her decision {command} {text!r} is {len(acts)} actions"))
        where, aid = acts[0]
        dead = where == "dead_letter"
        why = str(read_json(os.path.join(pipeline, where, aid + ".json.reason")).get("why", "")) if dead else ""
        if where not in ("action_queue/done", "dead_letter"):
            problems.append(("lost", f"{command} {text!r} left in {where}"))
        elif where == "dead_letter" and not why:
            problems.append(("lost", f"{command} {text!r} dead-lettered without a reason"))
        elif not (why.startswith("unjustified") if text.startswith("non") else
                  where == "action_queue/done" or command == "reply" and "never run twice" in why):
            problems.append(("lost", f"{command} {text!r} in {where}: {why or 'done'}"))
        if where == "action_queue/done":
            if narrated.get("event_" + aid.split("_", 1)[1] + "_done", 0) == 0:
                problems.append(("lost", f"the deed of {aid} ({command}) is not narrated"))
            written = {"diary.write": diary.count(text), "memory.write": memories.count(text),
                       "reply": effects.get(aid, 0)}[command]
            if written != 1:
                problems.append(("lost" if written == 0 else "repeated",
                                 f"{command} {text!r} done, its effect there {written} times"))
    return problems


def lists_kept(world, home, narrated) -> list[tuple[str, str]]:
    """Each action file of the design's form done (or dead-lettered with the reason of the
    items that failed), each of its items carried out exactly once in the journal's order,
    its effect once, its result narrated; a hook begun before a crash never run again (its
    item failed, its reason in the file's)."""
    pipeline = os.path.join(home, "pipeline")
    effects = collections.Counter(read_text(os.path.join(home, "..", "effects.log")).split())
    diary = "".join(read_text(p) for p in files(os.path.join(home, "self", "diary")))
    memories = "".join(read_text(p) for p in files(os.path.join(home, "self", "memories")))
    journal = json_lines(os.path.join(pipeline, "dispatch.journal"))
    problems = []
    for k, fid in enumerate(world.lists):
        where = [w for w in ("action_queue", "action_queue/cur", "action_queue/done", "dead_letter")
                 if os.path.exists(os.path.join(pipeline, w, fid + ".json"))]
        if where not in (["action_queue/done"], ["dead_letter"]):
            problems.append(("lost", f"the list {fid} is in {where or 'no queue'} after the loop"))
            continue
        why = str(read_json(os.path.join(pipeline, "dead_letter", fid + ".json.reason")).get("why", "")) \
            if where == ["dead_letter"] else ""
        begun = [e["id"] for e in journal if e.get("state") == "begun" and str(e.get("id")).startswith(fid + "-")]
        if sorted(dict.fromkeys(begun)) != list(dict.fromkeys(begun)):
            problems.append(("lost", f"the list {fid}: its items begun out of order ({begun})"))
        for i, (command, params) in enumerate(list_items(k)):
            aid = f"{fid}-{i}"
            written = {"diary.write": diary.count(params["text"]), "memory.write": memories.count(params["text"]),
                       "reply": effects.get(aid, 0)}[command]
            never_twice = command == "reply" and f"payload.actions[{i}]: was begun before a crash" in why
            if written > 1:
                problems.append(("repeated", f"{aid} ({command}) done, its effect there {written} times"))
            elif written == 0 and not never_twice:
                problems.append(("lost", f"{aid} ({command}) of the list {fid}: no effect"))
            outcome = "failed1" if never_twice else "done"
            if narrated.get("event_" + aid.split("_", 1)[1] + "_" + outcome, 0) != 1:
                problems.append(("lost", f"the deed of {aid} ({command}, {outcome}) is not narrated"))
    return problems


def events_kept(world, case, home, landed, narrated) -> list[tuple[str, str]]:
    """Each message said reaches message_queue/done once and is narrated once (a message a
    killed say did not deliver may be missing; a forgotten one is gone by design)."""
    pipeline = os.path.join(home, "pipeline")
    keys = collections.defaultdict(list)
    for name in listdir(os.path.join(pipeline, "message_queue", "done")):
        doc = read_json(os.path.join(pipeline, "message_queue", "done", name))
        m = re.search(r"msg\d{4}", str(doc.get("payload", {}).get("text", "")))
        if m:
            keys[m[0]].append(doc["payload"].get("event") or doc["envelope"]["id"])
    problems = []
    mine = [(m, True) for m in world.messages if m not in case.gone] + [(m, not landed) for m in case.messages]
    for marker, required in mine:
        found = keys.get(marker, [])
        if not found:
            if required:
                problems.append(("lost", f"message {marker} never reached message_queue/done"))
            continue
        if len(set(found)) > 1:
            problems.append(("repeated", f"message {marker} delivered as {len(set(found))} events"))
        if narrated.get(found[0], 0) == 0:
            problems.append(("lost", f"message {marker} ({found[0]}) is not narrated"))
    return problems


def stream_in_step(home, records) -> list[tuple[str, str]]:
    """This script's own reading of the bookkeeping: rolls one generation at a time, no record
    of a generation not started, and every record's lines somewhere at a heading, unchanged."""
    from anima.infra.digest import sha

    texts = [read_text(os.path.join(home, "self", "stream", "now.md"))]
    texts += [read_text(p) for p in files(os.path.join(home, "self", "stream", "archive"))]
    sizes = {r["lines"][1] - r["lines"][0] + 1 for r in records if isinstance(r.get("lines"), list)
             and len(r["lines"]) == 2 and all(isinstance(n, int) for n in r["lines"])}
    blocks = set()
    for text in texts:
        lines = text.splitlines(keepends=True)
        for i in (i for i, line in enumerate(lines) if line.startswith("## ")):
            blocks.update((size, sha("".join(lines[i:i + size]))) for size in sizes if i + size <= len(lines))
    problems, top = [], 0
    for number, r in enumerate(records, 1):
        gen = r.get("gen")
        if not isinstance(gen, int):
            continue
        if r.get("by") == "roll":
            if gen != top + 1:
                problems.append(("stream", f"stream.jsonl:{number}: a roll to generation {gen} after {top}"))
            top = max(top, gen)
        elif isinstance(r.get("lines"), list) and len(r["lines"]) == 2:
            if gen > top:
                problems.append(("stream", f"stream.jsonl:{number}: generation {gen} never started"))
            first, last = r["lines"]
            if (last - first + 1, r.get("sha256")) not in blocks:
                problems.append(("stream", f"stream.jsonl:{number}: its lines are nowhere as recorded"))
    return problems


def listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return []


def files(path: str) -> list[str]:
    return [os.path.join(path, n) for n in listdir(path) if os.path.isfile(os.path.join(path, n))]


def read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def read_json(path: str) -> dict:
    try:
        return json.loads(read_text(path) or "{}")
    except ValueError:
        return {}


def json_lines(path: str) -> list[dict]:
    out = []
    for line in read_text(path).splitlines():
        with contextlib.suppress(ValueError):
            doc = json.loads(line)
            if isinstance(doc, dict):
                out.append(doc)
    return out


# --- the bench -----------------------------------------------------------------------------

FIGURES = ("lost", "repeated", "stream", "check", "exit 70", "failed")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_CRASH_RUNS", "200")),
                        help="kills in all, shared out over the commands (default 200)")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--scale", type=int, default=100, help="messages and decisions of each batch of the day")
    parser.add_argument("--only", help="comma-separated commands (default: every one)")
    args = parser.parse_args(argv)
    import compileall

    # bytecode as an installed package has it (see bench/run.py)
    compileall.compile_dir(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "anima"),
                           quiet=1)
    rng = random.Random(args.seed)
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        world = World(os.path.join(tmp, "world"), args.scale).build()
        table = cases(world)
        names = args.only.split(",") if args.only else list(table)
        took = {name: duration(world, table[name], os.path.join(tmp, "timing")) for name in names}
        startup = startup_time()
        outcomes: dict[str, list[Outcome]] = {name: [] for name in names}
        for i in range(args.runs):
            name = names[i % len(names)]
            o = trial(world, table[name], moment(rng, took[name], startup), os.path.join(tmp, "run"))
            outcomes[name].append(o)
            for kind, what in o.problems:
                print(f"  run {i} ({name}, kill at {o.delay * 1000:.0f} ms): {kind}: {what}", file=sys.stderr)
    print(f"{args.runs} runs, SIGKILL at a uniform moment after start-up and before the end of each command's "
          f"own duration (median of 3 unkilled); a day of {args.scale} messages and decisions a batch, "
          f"seed {args.seed}")
    print("ms: the command's own duration, the kill window; mid-work: killed while it ran; in work: of those, "
          f"killed after the {startup * 1000:.0f} ms `anima --help` takes (start-up done); after: it had ended; "
          "then the runs that found each kind (see the docstring); reported: `anima check --only stream` found "
          "the stream out of step after the loop (no target)")
    print(f"{'command':16} {'ms':>6} {'runs':>5} {'mid-work':>8} {'in work':>7} {'after':>5} "
          + " ".join(f"{k:>8}" for k in FIGURES) + f" {'reported':>8}")
    totals = collections.Counter()
    for name in names:
        runs = outcomes[name]
        row = collections.Counter()
        for o in runs:
            row["runs"] += 1
            row["mid-work"] += o.landed
            row["in work"] += o.landed and o.delay > startup
            row["after"] += not o.landed
            row["reported"] += o.reported
            for kind in o.kinds():
                row[kind] += 1
        totals += row
        print(f"{name:16} {took[name] * 1000:6.0f} {row['runs']:5} {row['mid-work']:8} {row['in work']:7} "
              f"{row['after']:5} "
              + " ".join(f"{row[k]:8}" for k in FIGURES) + f" {row['reported']:8}")
    print(f"{'all':16} {'':6} {totals['runs']:5} {totals['mid-work']:8} {totals['in work']:7} {totals['after']:5} "
          + " ".join(f"{totals[k]:8}" for k in FIGURES) + f" {totals['reported']:8}")
    failed = sum(bool(o.problems) for runs in outcomes.values() for o in runs)
    print(f"runs with anything lost, repeated, out of step, unreported, exit 70 or failed: {failed} (target 0) "
          f"{'ok' if not failed else 'FAILED'}; took {time.monotonic() - began:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
