"""The session cache: what was read from each transcript, kept under cache/sessions/.

Cache. What is read from a file (not its raw bytes) is kept as one compact JSON entry under
cache/sessions/, named by the CRC-32 of the file's path in 8 hex digits plus ".json":
`{"v": CACHE_FORMAT, "path", "sig": [mtime_ns, size, inode, ctime_ns], "id", "format",
"delegated", "warnings": [...], "turns": [[line, ts, who, text], ...], "escaped"}`. An entry is
used only while the signature is unchanged, and written only for a file last modified more than
50 ms before it was read (fs.settled). At most recall.cache_sessions entries are kept (0: no
cache): a new entry displaces the least recently written one, except that one pass over the
files never displaces an entry it has itself read or written; once all are in use it writes no
more (so a scan over more files than the cache holds still hits, instead of evicting each entry
just before it is needed). A cached file's warnings are given again on every read. An
unreadable entry is ignored and rewritten; deleting cache/ loses nothing.

Summary. cache/sessions/summary.json, `{"v": CACHE_FORMAT, "files": {path: {"sig", "id",
"format", "delegated", "turns", "tokens", "warnings", "escaped"}}}`: for each file of the last
pass, its totals (how many turns, and tokens as recall counts them), which is what the
pre-scan (anima.recall.prescan) needs to read it from its raw bytes. Written under the same
50 ms rule, after a pass that changed something, with the files of that pass only (a pass
over some files keeps the others' entries); not counted in recall.cache_sessions. A summary
of another version is ignored.
"""

import json
import os

from anima.infra import clock, fs, jsontext
from anima.infra.errors import AnimaError, Refused

CACHE_FORMAT = 4  # bump when what is extracted from a file changes
SUMMARY = "summary.json"


class Cache:
    """cache/sessions/ during one pass over the files.

    At most `limit` entries; a new one displaces the least recently written entry that this
    pass has not itself read or written. When every entry is in use the pass writes no more:
    a scan over more files than the cache holds would otherwise evict each entry just before
    it is needed, and never hit.
    """

    def __init__(self, directory: str, limit: int):
        self.dir, self.limit = directory, limit
        self.used: set[str] = set()
        self.full = False
        self.listed: dict[str, int] | None = None  # entry path -> mtime_ns, listed once per pass

    def entry_path(self, path: str) -> str:
        import zlib  # a short name is enough: the entry holds the path it is for and is checked against it

        return os.path.join(self.dir, f"{zlib.crc32(path.encode('utf-8', 'surrogateescape')):08x}.json")

    def get(self, path: str, sig: list) -> dict | None:
        entry_path = self.entry_path(path)
        try:
            entry = jsontext.loads(fs.read_cache(entry_path) or b"null")
            if entry["v"] == CACHE_FORMAT and entry["path"] == path and entry["sig"] == sig and _sane(entry):
                self.used.add(entry_path)
                return entry
        except (OSError, ValueError, KeyError, TypeError, AnimaError):  # (AnimaError: a link in the way)
            pass
        return None

    def put(self, path: str, entry: dict) -> None:
        """Write the entry, making room first. The cache is derived: failing to write it (a
        read-only home, a full disk) changes nothing."""
        if self.full:
            return
        entry_path = self.entry_path(path)
        try:
            entries = self._entries()
            excess = len(entries) + (entry_path not in entries) - self.limit
            if excess > 0:
                victims = sorted((mtime, p) for p, mtime in entries.items() if p not in self.used and p != entry_path)
                if len(victims) < excess:
                    self.full = True
                    return
                self._drop(p for _, p in victims[:excess])
            if not fs.write_cache(entry_path, json.dumps(entry, ensure_ascii=False, separators=(",", ":"))):
                return
            self.used.add(entry_path)
            entries[entry_path] = clock.files_now_ns()
        except (OSError, ValueError, AnimaError):
            pass

    def trim(self) -> None:
        """Drop the least recently written entries beyond the limit (it may have been lowered)."""
        entries = self._entries()
        if len(entries) > self.limit:
            self._drop(p for _, p in sorted((m, p) for p, m in entries.items())[: len(entries) - self.limit])

    def _entries(self) -> dict[str, int]:
        """Entry path -> mtime_ns, listed on first need and kept up to date by this pass."""
        if self.listed is None:
            self.listed = {}
            try:
                names = [n for n in fs.listdir(self.dir) if n.endswith(".json") and n != SUMMARY]
            except (OSError, Refused):  # no cache to list (none, or a link anima does not follow)
                names = []
            for name in names:
                try:
                    sig = fs.signature(os.path.join(self.dir, name))
                except Refused as e:  # a link among the entries: no entry of ours, and left alone
                    fs.went_without(e)
                    continue
                if sig is not None:
                    self.listed[os.path.join(self.dir, name)] = sig[0]
        return self.listed

    def _drop(self, paths) -> None:
        for path in list(paths):
            try:
                fs.remove(path)
            except (FileNotFoundError, AnimaError):  # gone already; or a link in the way, left alone
                pass
            except OSError:  # a home that cannot be written (read-only): the entry stays, as it is
                continue
            self._entries().pop(path, None)


class Summary:
    """cache/sessions/summary.json: {path: {sig, id, format, delegated, turns, tokens, warnings,
    escaped}}."""

    def __init__(self, path: str):
        self.path = path
        self.changed = False
        try:
            data = jsontext.loads(fs.read_cache(path) or b"null")
            self.files = data["files"] if data.get("v") == CACHE_FORMAT and isinstance(data["files"], dict) else {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError, AnimaError):
            self.files = {}

    def known(self, path: str, sig) -> dict | None:
        """The file's entry while its signature holds, if it is one this version writes."""
        entry = self.files.get(path)
        if isinstance(entry, dict) and sig is not None and entry.get("sig") == sig and _sane(entry):
            return entry
        return None

    def get(self, path: str, sig) -> dict | None:
        """The entry a pass may read the file's raw bytes by: known, and not escaped."""
        entry = self.known(path, sig)
        return None if entry is None or entry.get("escaped") else entry

    def drop(self, path: str) -> None:
        if self.files.pop(path, None) is not None:
            self.changed = True

    def put(self, path: str, entry: dict) -> None:
        self.files[path] = {"sig": entry["sig"], "id": entry["id"], "format": entry["format"],
                            "delegated": entry["delegated"], "turns": len(entry["turns"]),
                            "tokens": token_total(t[3] for t in entry["turns"]), "warnings": entry["warnings"],
                            "escaped": entry.get("escaped", False)}
        self.changed = True

    def save(self, paths, prune: bool = True) -> None:
        """Write the summary (derived: a failure changes nothing); `prune` keeps only `paths`."""
        paths = set(paths)
        if not self.changed and (not prune or set(self.files) <= paths):
            return
        files = {p: e for p, e in self.files.items() if p in paths or not prune}
        fs.write_cache(self.path, json.dumps({"v": CACHE_FORMAT, "files": files}, ensure_ascii=False,
                                             separators=(",", ":")))


# A cache is anima's own, but a file on disk all the same: a person, a crash or another
# version may have left anything in it. An entry is used only when every field is what this
# version writes (a total an int from 0 to 2^53, a turn [line, ts, who, text]); any other is
# read again from its file, as a missing one is.
_WHO = ("user", "me", "delegated")
_MOST = 1 << 53


def _count(value) -> bool:
    return type(value) is int and 0 <= value < _MOST


def _turn(t) -> bool:
    return (type(t) is list and len(t) == 4 and _count(t[0]) and t[0] >= 1
            and type(t[1]) in (int, float) and abs(t[1]) < _MOST and t[2] in _WHO and type(t[3]) is str)


def _sane(entry: dict) -> bool:
    """Whether a cache entry (with "turns": a list of turns) or a summary's (with totals:
    "turns" and "tokens" counts) holds what this version writes."""
    from anima.recall import formats

    if not (type(entry.get("id")) is str and entry["id"] and type(entry.get("delegated")) is bool
            and type(entry.get("escaped", False)) is bool and entry.get("format") in (*formats.BY_NAME, formats.UNKNOWN)
            and type(entry.get("warnings")) is list and all(type(w) is str for w in entry["warnings"])):
        return False
    turns = entry.get("turns")
    if type(turns) is list:
        return "tokens" not in entry and all(_turn(t) for t in turns)
    return _count(turns) and _count(entry.get("tokens"))


def token_total(texts) -> int:
    """The tokens of these texts, as recall counts them (fts.token_count)."""
    from anima.recall.fts import token_count

    return sum(token_count(text) for text in texts)
