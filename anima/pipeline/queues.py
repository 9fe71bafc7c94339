"""Pool B's queues: JSON files moved between directories, Maildir-style, so nothing is lost.

A queue is a directory under pipeline/ (inbox/pending, inbox/system, message_queue,
action_queue, rhythm/triggers). Beside its ready files it has:

- tmp/   a writer's file while it is being written; `deliver` renames it in when whole,
         so a reader never sees half a file;
- cur/   files a consumer has claimed (an atomic rename: of two racing consumers one wins,
         and losing is normal, not an error); a claim older than a timeout is returned
         by `recover`, so a consumer killed mid-work loses nothing;
- done/  files finished with.

pipeline/dead_letter/ takes what could not be processed, each file beside a `NAME.reason`
JSON saying what, why, when and by which command. Names are opaque and sort by time;
nothing reads meaning from them beyond that order. Every file holds the standard envelope
(`envelope`).
"""

import json
import os
import re
import time

from anima.infra import clock, fs, jsontext
from anima.infra.errors import DataError, Refused
from anima.infra.home import QUEUES

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,199}")
SOURCE_TYPES = ("message", "system", "rhythm", "reflection", "action")
DEAD = "dead_letter"
CLAIM_TIMEOUT_SEC = 300  # a claim older than this belongs to a consumer that died


def new_id(prefix: str) -> str:
    """Unique across processes, and sorting by it sorts by time: nanoseconds, then randomness."""
    return f"{prefix}_{time.time_ns():020d}{os.urandom(4).hex()}"


def plain_id(value) -> bool:
    """Whether `value` may be an envelope id (it names files: never a path)."""
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def envelope(source_type: str, source_node: str, payload: dict, prefix: str, trace_id: str | None = None,
             ttl_sec: int | None = None, *, now: float) -> dict:
    """A new envelope around `payload`; a trace id is made when none is carried over."""
    if source_type not in SOURCE_TYPES:
        raise DataError(f"source_type {source_type!r}: must be one of {', '.join(SOURCE_TYPES)}")
    eid = new_id(prefix)
    return {"envelope": {"id": eid, "trace_id": trace_id or new_id("trace"),
                         "timestamp": clock.iso(now),
                         "source_node": source_node, "source_type": source_type, "ttl_sec": ttl_sec},
            "payload": payload}


def check(doc, what: str) -> dict:
    """`doc` if it is a whole envelope, else DataError saying what is wrong."""
    if not (isinstance(doc, dict) and isinstance(doc.get("envelope"), dict) and isinstance(doc.get("payload"), dict)):
        raise DataError(f"{what}: not an envelope (needs an \"envelope\" object and a \"payload\" object)")
    env = doc["envelope"]
    for key in ("id", "trace_id", "timestamp", "source_node", "source_type"):
        if not isinstance(env.get(key), str) or not env[key]:
            raise DataError(f"{what}: envelope.{key} is missing or not a string")
    if not _ID.fullmatch(env["id"]):  # it names files: never a path
        raise DataError(f"{what}: envelope.id {env['id']!r} is not a plain name (letters, digits, '_', '-')")
    if env["source_type"] not in SOURCE_TYPES:
        raise DataError(f"{what}: envelope.source_type {env['source_type']!r} is not one of {', '.join(SOURCE_TYPES)}")
    ttl = env.get("ttl_sec")
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0):
        raise DataError(f"{what}: envelope.ttl_sec must be a whole number of seconds or null")
    clock.parse(env["timestamp"], f"{what}: envelope.timestamp", DataError)
    return doc


class Queue:
    """One queue directory of a home's pipeline."""

    def __init__(self, home, name: str, directory: str | None = None):
        if directory is None:
            directory, self.prefix = QUEUES[name]
        else:
            self.prefix = "msg"
        self.name = name
        self.dir = home.path("pipeline", *directory.split("/"))
        self.dead = home.path("pipeline", DEAD)

    @classmethod
    def named(cls, home, name: str) -> "Queue":
        """A queue of a route's own: pipeline/NAME/ (NAME a plain name)."""
        return cls(home, name, name)

    @classmethod
    def of(cls, home, name: str) -> "Queue":
        """One of anima's queues by its name, else a route's own."""
        return cls(home, name) if name in QUEUES else cls.named(home, name)

    def _sub(self, part: str) -> str:
        return fs.ensure_dir(os.path.join(self.dir, part))

    def deliver(self, doc: dict) -> str:
        """Write a whole file in tmp/, then rename it in; return its name."""
        name = doc["envelope"]["id"] + ".json"
        tmp = os.path.join(self._sub("tmp"), name)
        fs.atomic_write(tmp, jsontext.dumps(doc) + "\n")  # never NaN: no other reader would parse it
        fs.move(tmp, os.path.join(self.dir, name), durable=True)
        return name

    def ready(self) -> list[str]:
        """Names of the files waiting, oldest first."""
        try:
            return sorted(n for n in fs.listdir(self.dir) if n.endswith(".json") and not n.startswith("."))
        except FileNotFoundError:
            return []

    def claim(self, name: str) -> str | None:
        """Take a file for processing (rename into cur/); None when another consumer won."""
        target = os.path.join(self._sub("cur"), name)
        try:
            fs.move(os.path.join(self.dir, name), target)
        except FileNotFoundError:
            return None
        return target

    def read(self, path: str) -> dict:
        try:
            data = fs.read_bytes(path)
        except Refused as e:  # a link or a FIFO put in a queue is malformed input, not the consumer's end
            raise DataError(str(e)) from None
        if data is None:
            raise DataError(f"{path}: gone")
        try:
            doc = jsontext.loads(fs.decode(data, path))
        except ValueError as e:
            raise DataError(f"{path}: not valid JSON ({e})") from None
        return check(doc, path)

    def has(self, name: str) -> bool:
        """Whether `name` is in the queue in any state (waiting, claimed, done): for deliveries
        named after what caused them, made once however often a crash repeats them."""
        return any(os.path.exists(os.path.join(self.dir, part, name)) for part in ("", "cur", "done"))

    def take(self, by: str, now: float, dead: list | None = None):
        """Claim each waiting file in turn and yield (name, envelope); a file another consumer
        won is skipped, a malformed one goes to dead_letter/ (and its name to `dead`)."""
        for name in self.ready():
            path = self.claim(name)
            if path is None:
                continue
            try:
                doc = self.read(path)
            except DataError as e:
                self.fail(name, name, str(e), by, now)
                if dead is not None:
                    dead.append(name)
                continue
            yield name, doc

    def finish(self, name: str) -> None:
        fs.move(os.path.join(self.dir, "cur", name), os.path.join(self._sub("done"), name))

    def fail(self, name: str, what, why: str, by: str, now: float, claimed: bool = True) -> None:
        """Move a file to dead_letter/ beside its reason (written first: a crash between the
        two leaves a reason whose file is still in its queue, never a file with no reason)."""
        fs.ensure_dir(self.dead)
        if not isinstance(what, str) or not what.strip() or what == "None":  # never a reason about nothing
            what = name
        reason = {"what": what, "why": why, "when": clock.iso(now), "by": by, "queue": self.name}
        fs.atomic_write(os.path.join(self.dead, name + ".reason"), json.dumps(reason, ensure_ascii=False) + "\n")
        source = os.path.join(self.dir, "cur", name) if claimed else os.path.join(self.dir, name)
        fs.move(source, os.path.join(self.dead, name))

    def recover(self, timeout_sec: float | None = None) -> list[str]:
        """Return claims older than `timeout_sec` (CLAIM_TIMEOUT_SEC) to the queue: their
        consumer died."""
        timeout_sec = CLAIM_TIMEOUT_SEC if timeout_sec is None else timeout_sec
        cur = os.path.join(self.dir, "cur")
        back = []
        try:
            names = fs.listdir(cur)
        except FileNotFoundError:
            return back
        now = clock.files_now_ns() / 1e9
        for name in names:
            path = os.path.join(cur, name)
            try:
                # a rename sets ctime: the claim's time (0 takes every claim, however fresh its stamp)
                if timeout_sec <= 0 or now - os.stat(path).st_ctime >= timeout_sec:
                    fs.move(path, os.path.join(self.dir, name))
                    back.append(name)
            except FileNotFoundError:
                continue
        return back
