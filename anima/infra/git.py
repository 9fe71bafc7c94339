"""git.autocommit: when the home is a git repository, a command that changed the self commits it.

The root command calls `after` once a command has succeeded. It commits only when
git.autocommit is true and the home is the top of a git work tree, and only the files this
command wrote or removed (anima.infra.fs.CHANGED) that belong to the self: not pipeline/, log/ or
notes/heat.json (Pool B's queues, the logs and the notes' usage counts change every minute
or every turn; they are the machinery, not the self), nor what .gitignore leaves out
(cache/, index/, locks). Nothing of the self changed, no commit. `anima prompt` never
commits: it runs every turn and changes only usage counts.

The message is what happened, never what was said: the command path and the files it
changed ("note add: notes/notes.md", "self set: self/blocks/direction.md, ..."), or the
subject a command chose ("consolidate 2026-11-30"), cut at 72 characters; the body lists
every file. A command's words may be what a person said, so they are left out. Two commands
committing at once: one waits for the other (..git.lock, beside .git), and each commits
only the files it wrote itself (anima.infra.fs.CHANGED), so messages never swap. When both wrote
the same file, the first commit holds both changes and the second is empty but still says
what its command did. A commit that fails is a warning on stderr, never a failed command:
the change itself was made.
"""

import os
import subprocess

from anima.infra.errors import AnimaError, os_error_code, os_error_message

NOT_COMMITTED = "git.autocommit: the change is made but not committed"
EXCLUDED = ("pipeline", "log", "notes/heat.json")
MESSAGE_MAX = 72


def wanted(home) -> bool:
    """Whether this home commits: a git work tree at its root, and git.autocommit on."""
    return _settings(home) is not None


def _settings(home):
    """The home's settings when it commits, else None."""
    if not os.path.exists(os.path.join(home.root, ".git")):
        return None
    from anima.infra import config

    try:
        cfg = config.load(home.config)
    except Exception:  # a broken config is the next command's error, not this one's
        return None
    return cfg if cfg["git.autocommit"] else None


def ordered(files: list[str]) -> list[str]:
    """Files as a message lists them: a block's kept versions (hidden) after the rest."""
    return sorted(files, key=lambda f: (any(part.startswith(".") for part in f.split("/")), f))


def message(path: list[str], files: list[str]) -> str:
    """ "note add: notes/notes.md" from the command's path and the files it changed, as many
    as fit in the subject, then how many more."""
    head = " ".join(path) + ": "
    files = ordered(files)
    for n in range(len(files), 0, -1):
        more = len(files) - n
        text = head + ", ".join(files[:n]) + (f" and {more} more" if more else "")
        if len(text) <= MESSAGE_MAX:
            return text
    text = head + f"{len(files)} files"
    return text if len(text) <= MESSAGE_MAX else text[: MESSAGE_MAX - 1] + "…"


def _git(home, *args, input=None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", home.root, *args], capture_output=True, text=True, input=input)
    except OSError as e:  # no git on PATH (cron's is short): a failed commit, not a failed command
        return subprocess.CompletedProcess(["git", *args], 127, "", f"git: {e.strerror}")


def _changed(home) -> list[str]:
    """What this process changed under the home, relative, less the machinery."""
    from anima.infra import fs

    out = []
    for path in sorted(fs.CHANGED):
        rel = os.path.relpath(path, home.root)
        if rel.startswith("..") or rel.split(os.sep)[0] == ".git":
            continue
        if any(rel == e or rel.startswith(e + os.sep) for e in EXCLUDED):
            continue
        out.append(rel)
    return out


def after(home, path: list[str], chosen: str | None, warn) -> str | None:
    """Commit what the command `path` changed; return the commit's subject, or None if nothing was."""
    cfg = _settings(home) if path else None
    if cfg is None:
        return None
    changed = _changed(home)
    if changed:
        ignored = _git(home, "check-ignore", "--no-index", "--stdin", input="\n".join(changed) + "\n")
        changed = [p for p in changed if p not in set(ignored.stdout.splitlines())]
    if not changed:
        return None
    present = [p for p in changed if os.path.lexists(os.path.join(home.root, p))]
    gone = [p for p in changed if p not in present]
    if gone:  # a file git never tracked (a host's transcript) is no change to commit: its pathspec would fail
        tracked = set(_git(home, "ls-files", "-z", "--", *gone).stdout.split("\0"))
        gone = [p for p in gone if p in tracked]
        changed = present + gone
        if not changed:
            return None
    subject = chosen or message(path, changed)
    try:
        return _commit(home, present, gone, changed, subject, warn)
    except (AnimaError, OSError) as e:  # a symlinked lock, a read-only .git: git's own failures are no worse
        if isinstance(e, OSError) and os_error_code(e) is None:
            raise
        warn(f"warning: {NOT_COMMITTED}: {os_error_message(e) if isinstance(e, OSError) else e}")
        return None


def _commit(home, present: list[str], gone: list[str], changed: list[str], subject: str, warn) -> str | None:
    from anima.infra import fs

    # one committer at a time: git's own index.lock would make the loser fail, not wait (the
    # lock is ..git.lock, beside .git: .git may be a link or a worktree's file, not followed)
    with fs.locked(os.path.join(home.root, ".git"), what="git.autocommit"):
        steps = []
        if present:
            steps.append(("add", "-A", "--", *present))
        if gone:
            steps.append(("rm", "-q", "--cached", "--ignore-unmatch", "--", *gone))
        # --allow-empty: a concurrent command may have committed this file with its own change;
        # this command's commit still says what it did
        # user.useConfigOnly: an identity git would guess from the host (root@vm) is none
        steps.append(("-c", "user.useConfigOnly=true", "commit", "-q", "--allow-empty", "-m", subject,
                      "-m", "\n".join(ordered(changed)), "--", *changed))
        for step in steps:
            done = _git(home, *step)
            if done.returncode != 0 and "commit" in step and \
                    ("tell me who you are" in done.stderr or "empty ident" in done.stderr):
                done = _git(home, "-c", "user.name=anima", "-c", "user.email=anima@localhost", *step)
            if done.returncode != 0:
                warn(f"warning: {NOT_COMMITTED}: " + " ".join(done.stderr.split())[:200])
                return None
    fs.CHANGED.clear()  # committed: a later call in this process (anima mcp) must not commit them again
    return subject
