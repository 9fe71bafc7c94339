"""A change set: file operations written down before any is made, so that a crash at any
moment leaves every file old or new and the next run finishes the rest.

A command that changes many files at once (consolidate, forget of a stream line, a roll) plans every
change first, then writes the whole set to its journal, pipeline/NAME.pending (NAME the
command), then applies the operations in order, then removes the journal. A run that finds a
journal finishes it first (`finish_pending`; `anima tick` does too). Each operation is
typed, holds a precondition on what it changes, and is applied so that applying it twice is
applying it once:

    {"op": "create", "path", "data"}           write a new file; done if it starts with data
    {"op": "append", "path", "size", "data"}   append, unless data is there after byte `size`
    {"op": "replace", "path", "sha256", "data"}  replace the file whose text has that sha256
                                                (null: no file); done if it is data already
    {"op": "version", "path", "keep", "data"}  replace, the text it had kept first as the next
                                                KEEP/N.md (a file that keeps every version)
    {"op": "line", "path", "line", "sha256", "data"}  replace line N (1-based), its text that
    {"op": "drop", "path", "line", "sha256"}   delete line N, its text without the line break that
    {"op": "rehash", "path", "pairs"}          replace each [old, new] string pair
    {"op": "remove", "path"}  {"op": "rmtree", "path"}

A set changes each file by one kind of operation (several lines of one file each by its own
`line`, or each by its own `drop`, from the bottom up), so that applying the whole set again
changes nothing more. Paths are relative to the home and never lead out of it. A precondition that no longer holds
(a person edited the file in between) leaves the file as it is, with a warning: a change set
never overwrites what it did not read. `version` is the exception by design: what is there
is kept as a version, never lost, and the new text written.
"""

import json
import os
import re

from anima.infra import fs, jsontext
from anima.infra.digest import sha
from anima.infra.errors import DataError

NAMES = ("roll", "forget", "consolidate")  # the order in which pending sets are finished
_VERSION = re.compile(r"([0-9]+)\.md")


def journal_path(home, name: str) -> str:
    return home.path("pipeline", f"{name}.pending")


def lock(home):
    """The lock a change set is planned and applied under (exit 75 when another holds it)."""
    return fs.locked(journal_path(home, "consolidate"), wait=False, what="anima consolidate")


def is_pending(home, name: str | None = None) -> bool:
    return any(os.path.exists(journal_path(home, n)) for n in ((name,) if name else NAMES))


class ChangeSet:
    """The operations of one change, planned against the files as they are now."""

    def __init__(self, home, name: str):
        self.home, self.name = home, name
        self.ops: list[dict] = []

    def _rel(self, path: str) -> str:
        return self.home.rel(path) if os.path.isabs(path) else path

    def _text(self, rel: str) -> str | None:
        return fs.read_text(os.path.join(self.home.root, rel))

    def create(self, path: str, data: str) -> None:
        self.ops.append({"op": "create", "path": self._rel(path), "data": data})

    def append(self, path: str, data: str) -> None:
        """Append to the file as it is now; a file not there yet is created."""
        rel = self._rel(path)
        try:
            size = os.path.getsize(os.path.join(self.home.root, rel))
        except FileNotFoundError:
            self.create(rel, data)
            return
        self.ops.append({"op": "append", "path": rel, "size": size, "data": data})

    def replace(self, path: str, data: str, old: str | None = ...) -> None:
        """Replace the file; `old` is the text it is planned against (default: as it is now)."""
        rel = self._rel(path)
        old = self._text(rel) if old is ... else old
        self.ops.append({"op": "replace", "path": rel, "sha256": None if old is None else sha(old), "data": data})

    def version(self, path: str, keep: str, data: str) -> None:
        self.ops.append({"op": "version", "path": self._rel(path), "keep": self._rel(keep), "data": data})

    def line(self, path: str, number: int, old: str, data: str) -> None:
        self.ops.append({"op": "line", "path": self._rel(path), "line": number, "sha256": sha(old), "data": data})

    def drop(self, path: str, number: int, old: str) -> None:
        self.ops.append({"op": "drop", "path": self._rel(path), "line": number, "sha256": sha(old.rstrip("\n"))})

    def rehash(self, path: str, pairs: list) -> None:
        self.ops.append({"op": "rehash", "path": self._rel(path), "pairs": pairs})

    def remove(self, path: str) -> None:
        self.ops.append({"op": "remove", "path": self._rel(path)})

    def rmtree(self, path: str) -> None:
        self.ops.append({"op": "rmtree", "path": self._rel(path)})

    def apply(self, at: str, warn) -> None:
        """Journal the set, then carry it out (under `lock`); a link in the way of any of its
        files refuses the whole set before anything is written."""
        for op in self.ops:
            fs.check(os.path.join(self.home.root, op["path"]), _KINDS.get(op["op"], "file"))
            if "keep" in op:
                fs.check(os.path.join(self.home.root, op["keep"]), "dir")
        fs.atomic_write(journal_path(self.home, self.name),
                        json.dumps({"by": self.name, "at": at, "ops": self.ops}, ensure_ascii=False) + "\n")
        finish(self.home, self.name, self.ops, warn)


def pending(home, name: str) -> list[dict] | None:
    """The operations of a pending change set, or None; DataError for a journal that is not one."""
    path = journal_path(home, name)
    text = fs.read_text(path)
    if text is None:
        return None
    try:
        ops = _earlier(home, jsontext.loads(text))
        if not all(isinstance(op, dict) and op.get("op") in _APPLY and isinstance(op.get("path"), str)
                   for op in ops):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise DataError(f"{path}: not a change set; move it away and run again") from None
    for op in ops:
        for key in ("path", "keep"):
            if key in op and not (isinstance(op[key], str) and home.holds(os.path.join(home.root, op[key]))):
                raise DataError(f"{path}: an operation names {op[key]!r}, outside the home; move it away")
    return ops


def _earlier(home, journal: dict) -> list[dict]:
    """The operations of a journal, also as anima wrote them before there was one kind of
    change set (consolidate's "units"; forget's "write" and "log"), so that a run killed
    before an upgrade is finished after it."""
    if "units" not in journal:
        return [_earlier_op(home, op) for op in journal["ops"]]
    ops = []
    for unit in journal["units"]:
        if unit["kind"] == "replace":
            old = unit["old"]
            ops.append({"op": "replace", "path": unit["path"], "sha256": None if old is None else sha(old),
                        "data": unit["data"]})
        elif unit["kind"] == "block":
            *kept, new = unit["files"]
            keep = os.path.dirname(kept[0]["path"]) if kept else \
                os.path.join(os.path.dirname(new["path"]), ".history", os.path.basename(new["path"])[: -len(".md")])
            ops.append({"op": "version", "path": new["path"], "keep": keep, "data": new["data"]})
        else:
            ops.append({"op": unit["kind"], **{k: v for k, v in unit.items() if k != "kind"}})
    return ops


def _earlier_op(home, op: dict) -> dict:
    if op.get("op") == "write":
        return {**op, "op": "replace"}
    if op.get("op") == "log":  # appended once: done when the file ends with it
        current = fs.read_bytes(os.path.join(home.root, op["path"])) or b""
        raw = op["data"].encode("utf-8")
        return {"op": "append", "path": op["path"], "data": op["data"],
                "size": len(current) - len(raw) if current.endswith(raw) else len(current)}
    return op


def finish_pending(home, warn, names=NAMES) -> list[str]:
    """Finish every change set of `names` a killed run left (under `lock`); the names finished."""
    done = []
    for name in names:
        ops = pending(home, name)
        if ops is not None:
            warn(f"warning: finishing a {name} that was interrupted")
            finish(home, name, ops, warn)
            done.append(name)
    return done


def finish(home, name: str, ops: list[dict], warn) -> None:
    """Apply each operation (each applied twice is applied once), then drop the journal."""
    for op in ops:
        _APPLY[op["op"]](home, os.path.join(home.root, op["path"]), op, warn)
    fs.remove(journal_path(home, name))


def _changed(op: dict, warn) -> None:
    where = f"{op['path']}:{op['line']}" if "line" in op else op["path"]
    warn(f"warning: {where} changed since it was read; left as it is")


def _create(home, path, op, warn):
    current = fs.read_text(path)
    if current is None:
        fs.ensure_dir(os.path.dirname(path))
        fs.create(path, op["data"])
    elif not current.startswith(op["data"]):
        _changed(op, warn)


def _append(home, path, op, warn):
    raw = op["data"].encode("utf-8")
    current = fs.read_bytes(path) or b""
    if raw not in current[op["size"]:]:
        fs.append(path, raw)


def _replace(home, path, op, warn):
    old = fs.read_text(path)
    if old == op["data"]:
        return
    if (None if old is None else sha(old)) != op["sha256"]:
        _changed(op, warn)
        return
    fs.ensure_dir(os.path.dirname(path))
    fs.atomic_write(path, op["data"])


def versions(directory: str) -> list[int]:
    """The numbers N of the DIRECTORY/N.md versions kept, lowest first."""
    try:
        names = fs.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(int(m[1]) for m in map(_VERSION.fullmatch, names) if m)


def _version(home, path, op, warn):
    keep = os.path.join(home.root, op["keep"])
    with fs.locked(path, what=op["path"]):
        current = fs.read_text(path)
        if current == op["data"]:
            return
        kept = versions(keep)
        # a crash between keeping a version and writing the new text kept it already
        if current is not None and (not kept or fs.read_text(os.path.join(keep, f"{kept[-1]}.md")) != current):
            fs.atomic_write(os.path.join(fs.ensure_dir(keep), f"{(kept[-1] if kept else 0) + 1}.md"), current)
        fs.atomic_write(path, op["data"])


def _lines(home, path, op, warn):
    lines = (fs.read_text(path) or "").splitlines(keepends=True)
    n = op["line"]
    now = lines[n - 1] if 0 < n <= len(lines) else None
    if now is not None and op["op"] == "line" and now == op["data"]:
        return
    if now is not None and op["op"] == "line" and sha(now) == op["sha256"]:
        lines[n - 1] = op["data"]
    elif now is not None and op["op"] == "drop" and sha(now.rstrip("\n")) == op["sha256"]:
        del lines[n - 1]
    else:
        if op["op"] == "line":
            _changed(op, warn)
        return
    fs.atomic_write(path, "".join(lines))


def _rehash(home, path, op, warn):
    old = fs.read_text(path) or ""
    new = old
    for a, b in op["pairs"]:
        new = new.replace(a, b)
    if new != old:
        fs.atomic_write(path, new)


def _remove(home, path, op, warn):
    if os.path.lexists(path):
        fs.remove(path)


def _rmtree(home, path, op, warn):
    fs.rmtree(path)


_KINDS = {"remove": "entry", "rmtree": "dir"}  # what each operation's path is (else a file)
_APPLY = {"create": _create, "append": _append, "replace": _replace, "version": _version, "line": _lines,
          "drop": _lines, "rehash": _rehash, "remove": _remove, "rmtree": _rmtree}


# --- the change as a patch ------------------------------------------------------------------

def diff(home, ops: list[dict]) -> str:
    """The file operations of a change set as one unified diff (`patch -p1` applies it)."""
    out = []
    for op in ops:
        rel, kind = op["path"], op["op"]
        path = os.path.join(home.root, rel)
        if kind == "create":
            out.append(_file_diff(rel, None, op["data"]))
        elif kind == "append":
            old = fs.decode((fs.read_bytes(path) or b"")[:op["size"]], rel)
            out.append(_append_diff(rel, old, op["data"]))
        elif kind == "replace":
            out.append(_file_diff(rel, fs.read_text(path), op["data"]))
        elif kind == "version":
            current = fs.read_text(path)
            if current is not None and current != op["data"]:
                kept = versions(os.path.join(home.root, op["keep"]))
                out.append(_file_diff(f"{op['keep']}/{(kept[-1] if kept else 0) + 1}.md", None, current))
            out.append(_file_diff(rel, current, op["data"]))
        else:
            raise ValueError(f"a {kind} operation has no diff")
    return "".join(out)


def _mark_no_eol(lines):
    for line in lines:
        if line.endswith("\n"):
            yield line
        else:
            yield line + "\n\\ No newline at end of file\n"


def _file_diff(rel: str, old: str | None, new: str) -> str:
    import difflib

    if old == new:
        return ""
    a = (old or "").splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    lines = list(difflib.unified_diff(a, b, "/dev/null" if old is None else f"a/{rel}", f"b/{rel}"))
    return "".join(_mark_no_eol(lines))


def _append_diff(rel: str, old: str, data: str) -> str:
    """An append as a diff without comparing the whole (possibly long) file."""
    if not old or not old.endswith("\n"):
        return _file_diff(rel, old, old + data)
    count = old.count("\n")
    pos = len(old) - 1
    for _ in range(3):  # back to the line break before the last three lines
        pos = old.rfind("\n", 0, pos)
        if pos < 0:
            break
    context = old[pos + 1:].splitlines(keepends=True)
    added = data.splitlines(keepends=True)
    start = count - len(context) + 1
    head = f"--- a/{rel}\n+++ b/{rel}\n@@ -{start},{len(context)} +{start},{len(context) + len(added)} @@\n"
    return head + "".join(" " + x for x in context) + "".join(_mark_no_eol("+" + x for x in added))
