"""Where things live under $ANIMA_HOME (anima-home(5))."""

import os

from anima.infra import fs
from anima.infra.errors import CANTCREAT, AnimaError

# The full layout of anima-home(5); `anima init` creates all of it, other commands what they use.
LAYOUT = (
    "self/blocks/.history",
    "self/stream/archive",
    "self/memories",
    "self/diary",
    "self/autobiography",
    "notes/archive",
    "facts",
    "sessions",
    "index",
    "cache",
    "log",
    "pipeline/inbox/pending",
    "pipeline/inbox/system",
    "pipeline/message_queue",
    "pipeline/action_queue",
    "pipeline/heartbeat",
    "pipeline/rhythm/triggers",
    "pipeline/dead_letter",
)

# Pool B's queues: name -> (directory under pipeline/, file name prefix)
QUEUES = {
    "pending": ("inbox/pending", "event"),
    "system": ("inbox/system", "trigger"),
    "message": ("message_queue", "msg"),
    "action": ("action_queue", "act"),
    "rhythm": ("rhythm/triggers", "trigger"),
    "outbox": ("outbox", "out"),  # her replies, for the host to take (anima outbox)
}
# pipeline/ directories that are anima's own and no queue of a route's
RESERVED = frozenset({"dead_letter", "heartbeat", "inbox", "message_queue", "action_queue", "outbox"})

GITIGNORE = """\
# Derived files: rebuildable, never the truth (anima-home(5)).
cache/
index/
.*.lock
.*.tmp
# The machinery: Pool B's queues and journals (the person's waiting messages among them),
# the logs, the notes' usage counts. They change every minute or every turn.
pipeline/
log/
notes/heat.json
# The transcripts are the person's own words. Facts cite them, so they are kept by default;
# uncomment to keep them out of git (anima verify then needs them from elsewhere).
# sessions/
"""


def gitignore_missing(text: str) -> list[str]:
    """The patterns of GITIGNORE that a home's .gitignore `text` lacks (its own lines kept)."""
    have = {line.strip() for line in text.splitlines()}
    return [line for line in GITIGNORE.splitlines() if line and not line.startswith("#") and line not in have]


def default_root() -> str:
    return os.path.join(os.path.expanduser("~"), ".anima")


class Home:
    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        fs.confine(self.root)  # nothing under it is reached through a link (anima.infra.fs)

    def check(self) -> None:
        """Refuse a root that can be no home: it, or the nearest of its parents that exists, is
        not a directory (a regular file, a dangling symbolic link). One stat when it is a home."""
        if os.path.isdir(self.root):
            return
        path = self.root
        while not os.path.lexists(path) and os.path.dirname(path) != path:
            path = os.path.dirname(path)
        if os.path.isdir(path):
            return  # missing: made on first use
        if os.path.islink(path):
            why = f"{path} is a symbolic link to {os.readlink(path)}, which is no directory"
        else:
            why = f"{path} is not a directory"
        raise AnimaError(f"home {self.root}: {why}; the home cannot be made there", CANTCREAT)

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    @property
    def config(self) -> str:
        return self.path("config.toml")

    @property
    def blocks(self) -> str:
        return self.path("self", "blocks")

    @property
    def cache(self) -> str:
        return self.path("cache")

    def ensure(self, *parts: str) -> str:
        """Create a directory of the home (and the home itself) on first use."""
        fs.ensure_dir(self.root)
        return fs.ensure_dir(self.path(*parts))

    def rel(self, path: str) -> str:
        """`path` as the home names it (relative to the root); a path outside stays as given."""
        rel = os.path.relpath(path, self.root)
        return path if rel == ".." or rel.startswith(".." + os.sep) else rel

    def holds(self, path: str) -> bool:
        """Whether `path`, its symbolic links resolved, is under the home."""
        rel = os.path.relpath(os.path.realpath(path), os.path.realpath(self.root))
        return not (rel == ".." or rel.startswith(".." + os.sep))
