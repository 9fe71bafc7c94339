"""Where the transcripts are: the files `anima recall` reads.

Every `*.jsonl`, `*.jsonl.zst` and `*.jsonl.zstd` file under $ANIMA_HOME/sessions/
(recursively), plus the files matched by the recall.sources globs (`~` expanded, a relative
glob is relative to $ANIMA_HOME, `**` spans directories). A glob matching a directory stands
for the session files under it, recursively; a matched file with another suffix is ignored.
Names starting with "." are skipped in directory walks; a symlink is followed, and a file
reached twice is read once. `.zst` and `.zstd` files are zstandard (anima.recall.zstd reads them).
"""

import contextlib
import os

from anima.recall import zstd

SUFFIXES = (".jsonl", *zstd.ZSTD_SUFFIXES)


def home_root(home) -> str:
    """The home's directory, from a Home or a path."""
    return home.root if hasattr(home, "root") else os.path.abspath(home)


def setting(cfg, key: str, default):
    """A recall setting from `cfg`, or `default` (also without a configuration)."""
    return default if cfg is None else cfg.values.get(key, default)


def session_files(home, cfg) -> list[str]:
    """Every transcript file: sessions/ and the recall.sources globs; real paths, sorted, once each."""
    root = home_root(home)
    found: set[str] = set()
    seen_dirs: set[str] = set()
    _walk(os.path.join(root, "sessions"), found, seen_dirs)
    for pattern in setting(cfg, "recall.sources", []):
        _matches(root, pattern, found, seen_dirs)
    return sorted(found)


def by_source(home, cfg) -> list[tuple[str, set[str]]]:
    """(glob as given, the transcript files it stands for) for each recall.sources glob."""
    root = home_root(home)
    out = []
    for pattern in setting(cfg, "recall.sources", []):
        found: set[str] = set()
        _matches(root, pattern, found, set())
        out.append((pattern, found))
    return out


def _matches(root: str, pattern: str, found: set, seen_dirs: set) -> None:
    import glob  # (only then: every recall lists the files, most with no sources set)

    pattern = os.path.join(root, os.path.expanduser(pattern))  # an absolute pattern stays as it is
    for match in glob.glob(pattern, recursive=True):
        if os.path.isdir(match):
            _walk(match, found, seen_dirs)
        elif match.endswith(SUFFIXES) and os.path.isfile(match):
            found.add(os.path.realpath(match))


def directories(home) -> dict[str, int]:
    """{real path: mtime in ns, -1 when unreadable} of sessions/ and every directory `_walk`
    goes into under it: a directory whose mtime holds has had no file added or removed (what
    the recall index trusts its listing by)."""
    out: dict[str, int] = {}
    todo = [os.path.join(home_root(home), "sessions")]
    while todo:
        top = os.path.realpath(todo.pop())
        if top in out:
            continue
        try:
            out[top] = os.stat(top).st_mtime_ns
            entries = list(os.scandir(top))
        except OSError:
            out[top] = -1
            continue
        for entry in entries:
            with contextlib.suppress(OSError):
                if not entry.name.startswith(".") and entry.is_dir():
                    todo.append(entry.path)
    return out


def _walk(top: str, found: set, seen_dirs: set) -> None:
    """Session files under `top`, by their real paths (scandir: no stat for a plain file)."""
    real = os.path.realpath(top)
    if real in seen_dirs:  # reached twice, or a symlink loop
        return
    seen_dirs.add(real)
    try:
        entries = list(os.scandir(top))
    except OSError:
        return
    same = real == top  # no symlink on the way: an entry's path is already real
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            if entry.is_dir():
                _walk(entry.path, found, seen_dirs)
            elif entry.name.endswith(SUFFIXES) and entry.is_file():
                if entry.is_symlink():
                    found.add(os.path.realpath(entry.path))
                else:
                    found.add(entry.path if same else os.path.join(real, entry.name))
        except OSError:
            continue
