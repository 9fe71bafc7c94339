"""The recall index: which turn holds which token where, and never what was said.

index/recall.sqlite is an SQLite database with an FTS5 table that is contentless
(`content=''`): it keeps the tokens (case-folded, stemmed) and their positions, not the text;
no sentence stands in it as written, though the words of a turn could be pieced together
from it, so it is as private as the transcripts. Beside it, plain tables hold ids, line
numbers, dates, speakers and sizes of the turns and the files they came from; results are
always read back from the transcripts themselves.

A file's turns have rowids that rise with their lines (a rebuild numbers them in order, an
update gives lines appended rowids past every other): the turns around one are read by rowid.

Tokens, phrases and counts are anima.recall.fts's: the index holds each turn as an FTS5 body, and
a query asks it, per term, which rows hold the phrase and how often (recovered from bm25()).
Scores are then computed by recall itself, from the same numbers a scan gets from its
in-memory FTS5 table, so results with and without the index are identical. A rebuild with
several jobs writes one FTS5 table per job (shards f, f1, ...: rowids unique across them),
each with its own statistics, which a query reads per shard and adds up.

A session modified within index.hot_minutes is hot: never indexed, always scanned. A cold
one changed or missing since it was indexed is stale: recall scans it, says so, and
`anima index on` refuses until `anima index update` (or rebuild) catches up. A file that only
grew (sessions/*.jsonl appended to) is updated by indexing its new lines, unless it holds a
turn with no time of its own (dated by the file's mtime, which changed: a touch too); a
file changed in any other way, or such a file, has its old rows retired (FTS5 cannot delete
from a contentless table without the old text) and its new content indexed; `index status`
counts the retired rows, and a rebuild drops them.
"""

import contextlib
import errno
import os

from anima.infra import clock, fs, jsontext
from anima.infra.errors import DataError, Refused
from anima.recall import fts, ranking

NAME = "recall.sqlite"
SCHEMA_VERSION = "7"  # 7: whether a turn tells a time (anima.recall.timewords)
WHO = ("user", "me", "delegated")


def path(home) -> str:
    return home.path("index", NAME)


def shards(con) -> list[str]:
    """The FTS5 tables of the index (see rebuild): f, then f1, f2, ..."""
    row = con.execute("SELECT value FROM meta WHERE key='shards'").fetchone()
    return ["f"] + [f"f{k}" for k in range(1, int(row[0]) if row else 1)]


def _connect(db_path: str, readonly: bool = False):
    import contextlib
    import sqlite3

    with contextlib.suppress(FileNotFoundError):  # sqlite opens by path: no link on the way or in place
        os.close(fs.open_file(db_path))
    if readonly:
        if os.path.exists(db_path + "-journal") and os.path.exists(db_path):
            _roll_back(db_path)
        con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
    else:
        con = sqlite3.connect(db_path, timeout=30)
    return con


def _roll_back(db_path: str) -> None:
    """Roll back the journal a writer killed mid-update left (a hot journal): SQLite does it on
    the first read, but only a connection that may write can, and a read-only one reads the
    file as damaged ("attempt to write a readonly database") until an update comes. A
    journal a live writer holds is not hot, and is left to it."""
    import sqlite3

    try:
        con = sqlite3.connect(db_path, timeout=30)
        try:
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            con.close()
    except sqlite3.DatabaseError:
        pass  # (the read-only connection finds the damage, and says it)


# SQLite's result codes for a file system that refused a write, and the errno each one is
_SQLITE_ERRNO = {3: errno.EACCES, 8: errno.EROFS, 10: errno.EIO, 13: errno.ENOSPC, 14: errno.EACCES}


@contextlib.contextmanager
def _disk(where: str):
    """A write SQLite could not make (a full disk, a read-only home) raised as the OSError it
    is, naming `where`, so that it ends the command as any refused write does (73, 74)."""
    import sqlite3

    try:
        yield
    except sqlite3.OperationalError as e:
        code = _SQLITE_ERRNO.get((getattr(e, "sqlite_errorcode", None) or 0) & 0xFF)
        if code is None:
            raise
        raise OSError(code, os.strerror(code), where) from e


TURNS = """CREATE TABLE turns(id INTEGER PRIMARY KEY, file INTEGER NOT NULL, line INTEGER NOT NULL,
                               ts REAL NOT NULL, who INTEGER NOT NULL, dl INTEGER NOT NULL,
                               asks INTEGER NOT NULL, tells INTEGER NOT NULL);"""


def version() -> str:
    """What meta's version says: the format, and the words that tell a time its turns were
    asked for (anima.recall.timewords): an index made with other words is of another version."""
    from anima.recall import timewords

    return f"{SCHEMA_VERSION}:{timewords.digest()}"


def _create(con) -> None:
    con.executescript(f"""
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, sig TEXT NOT NULL,
                           session TEXT NOT NULL, format TEXT NOT NULL, delegated INTEGER NOT NULL,
                           turns INTEGER NOT NULL, tokens INTEGER NOT NULL,
                           size INTEGER NOT NULL, lines INTEGER NOT NULL, tail TEXT NOT NULL);
        {TURNS}
        CREATE INDEX turns_file ON turns(file);
        INSERT INTO meta VALUES('version', '{version()}');
    """)
    fts.create(con)


# --- building -------------------------------------------------------------------------------

def _tail_hash(path: str, size: int) -> str:
    """A hash of the 4 KiB before `size`: unchanged means the first `size` bytes likely are."""
    import zlib

    with open(path, "rb") as f:
        f.seek(max(0, size - 4096))
        return f"{zlib.crc32(f.read(min(size, 4096))):08x}"


def _read_file(args):
    """In a worker: a file's session, as rows to insert. Plain data only (it crosses a pipe)."""
    from anima.recall import sessions, zstd

    path, sig = args
    warnings: list[str] = []
    data = None
    if not path.endswith(zstd.ZSTD_SUFFIXES):  # read once: what is parsed is what a later append follows
        with contextlib.suppress(OSError):  # (extract then reads it, and says why it cannot)
            with open(path, "rb") as f:
                data = f.read()
    try:
        entry = sessions.extract(path, sig, data)
    except sessions.Unreadable as e:
        return path, sig, None, [str(e)]
    warnings += entry["warnings"]
    size = lines = 0
    if data is not None and data.endswith(b"\n"):  # a later append continues after these lines; else read it all
        size, lines = len(data), data.count(b"\n")
    rows = [(line, ts, WHO.index(who), fts.body(text), ranking.asks(text)) for line, ts, who, text in entry["turns"]]
    return path, sig, {"id": entry["id"], "format": entry["format"], "delegated": entry["delegated"],
                       "rows": rows, "size": size, "lines": lines,
                       "tail": _tail_hash(path, size) if size else ""}, warnings


def _untimed(con, file_id: int, stored_sig: str) -> bool:
    """Whether a file indexed holds a turn with no time of its own, which took the file's
    mtime then (sessions.extract) and takes its mtime now on a scan: the file is read anew
    rather than appended to. (A turn whose own time is the file's mtime to the nanosecond
    is read anew too: slower, not wrong.)"""
    mtime = int(stored_sig.split(",")[0]) / 1e9
    return con.execute("SELECT 1 FROM turns WHERE file=? AND ts=? LIMIT 1", (file_id, mtime)).fetchone() is not None


def _read_appended(path: str, fmt: str, delegated: bool, size: int, lines: int, mtime: float):
    """The complete lines added after the first `size` bytes (`lines` lines), as rows (a turn
    with no time of its own dated `mtime`, the file's now, as sessions.extract dates it); only
    those bytes are read. None if they are not whole lines of JSON (then read it all)."""
    from anima.recall import formats

    if fmt not in formats.BY_NAME:  # no line decided yet: the new ones may, and then the whole file is read anew
        return None
    with open(path, "rb") as f:
        f.seek(size)
        data = f.read()
    end = data.rfind(b"\n") + 1
    if end < len(data):  # (a last line without its newline: the whole file is read, and that line with it)
        return None
    rows = []
    for number, raw in enumerate(data[:end].split(b"\n")[:-1], lines + 1):
        if not raw.strip():
            continue
        try:
            obj = jsontext.loads(raw.decode("utf-8"))
        except ValueError:
            return None
        turn = formats.turn(obj, fmt, delegated) if isinstance(obj, dict) else None
        if turn is not None:
            who, text, ts = turn
            rows.append((number, mtime if ts is None else ts, WHO.index(who), fts.body(text), ranking.asks(text)))
    new_size = size + end
    return {"rows": rows, "size": new_size, "lines": lines + data.count(b"\n", 0, end),
            "tail": _tail_hash(path, new_size)}


SKIPPED = {"id": "", "format": "", "delegated": False, "rows": [], "size": 0, "lines": 0, "tail": ""}


def _insert(con, path: str, sig, got: dict, file_id: int | None = None) -> list[int]:
    """Index a file's rows (all of it, or what it grew by when `file_id` is given); the new
    turns' (rowid, body), whose telling a time _tell marks."""
    rows = got["rows"]
    if file_id is None:
        cur = con.execute("INSERT INTO files(path, sig, session, format, delegated, turns, tokens, size, lines, tail) "
                          "VALUES(?,?,?,?,?,?,0,?,?,?)",
                          (path, _sig(sig), got["id"], got["format"], int(got["delegated"]), len(rows),
                           got["size"], got["lines"], got["tail"]))
        file_id = cur.lastrowid
    else:
        con.execute("UPDATE files SET sig=?, turns=turns+?, size=?, lines=?, tail=? WHERE id=?",
                    (_sig(sig), len(rows), got["size"], got["lines"], got["tail"], file_id))
    if not rows:
        return []
    # rowids past every FTS5 row ever written, in any shard: a retired file's dead rows keep theirs
    first = max(con.execute(f"SELECT max(id) FROM {t}_docsize").fetchone()[0] or 0 for t in shards(con)) + 1
    con.executemany("INSERT INTO f(rowid, body) VALUES(?,?)", [(first + i, r[3]) for i, r in enumerate(rows)])
    # each turn's length in tokens as FTS5 counted them (recall.scan counts them the same way)
    sizes = dict(con.execute("SELECT id, sz FROM f_docsize WHERE id BETWEEN ? AND ?", (first, first + len(rows) - 1)))
    turns = [(first + i, file_id, line, ts, who, fts.varints(sizes[first + i])[0], asks)
             for i, (line, ts, who, _, asks) in enumerate(rows)]
    con.executemany("INSERT INTO turns(id, file, line, ts, who, dl, asks, tells) VALUES(?,?,?,?,?,?,?,0)", turns)
    con.execute("UPDATE files SET tokens=tokens+? WHERE id=?", (sum(t[5] for t in turns), file_id))
    return [(first + i, r[3]) for i, r in enumerate(rows)]


def _tell(con, added: list[tuple[int, str]]) -> None:
    """Mark those of these new turns ((rowid, body) each) that tell a time
    (anima.recall.timewords), asked of an FTS5 table in memory that holds only them, as a scan
    asks: asked of the index, the time words' rows would be walked whole, each update costing
    more as the history grows (240 ms at 3,000 sessions)."""
    from anima.recall import timewords

    if not added:
        return
    memory = fts.Memory()
    for _, body in added:
        memory.add_body(body)
    memory.flush()
    told = fts.rows_matching(memory.con, timewords.match(), list(range(1, len(added) + 1)))
    con.executemany("UPDATE turns SET tells=1 WHERE id=?", ((added[r - 1][0],) for r in told))


class Plan:
    """Which session files the index covers now, and which must be scanned. A quick plan
    (quick_plan) trusts every indexed file it did not check, without reading their paths:
    `covers` answers for one file, and `current` reads them all when first asked."""

    def __init__(self):
        self._current: set[str] = set()  # paths indexed and unchanged (a quick plan's: those checked)
        self._trusted = None  # a quick plan's index: every indexed file but `excluded` is current
        self.excluded: set[str] = set()  # a quick plan's indexed files found not current
        self.hot: list[str] = []
        self.stale: list[str] = []    # cold, but changed or not indexed
        self.missing: list[str] = []  # indexed, but gone
        self.others: list[int] = []   # ids of files indexed but not current (hot, stale or gone)

    @property
    def current(self) -> set[str]:
        """The paths indexed and unchanged."""
        if self._trusted is not None:
            self._current.update(p for (p,) in self._trusted.execute("SELECT path FROM files")
                                 if p not in self.excluded)
            self._trusted = None
        return self._current

    def covers(self, indexed: str) -> bool:
        """Whether a file of the index (a path of its files table) is current."""
        return indexed not in self.excluded if self._trusted is not None else indexed in self._current

    def drop(self, indexed: str) -> None:
        """A file of the index found changed after all: no longer current."""
        self.excluded.add(indexed)
        self._current.discard(indexed)

    @property
    def uncovered(self) -> list[str]:
        return sorted(self.hot + self.stale)


def _sig(sig) -> str:
    """A file signature as stored: compared as text, never parsed (3,000 files a query)."""
    return ",".join(map(str, sig))


def _cold(sig, now_ns: int, hot_minutes: int) -> bool:
    return sig is not None and sig[0] <= now_ns - hot_minutes * 60 * 1_000_000_000


def plan(con, files: list[str], hot_minutes: int, now_ns: int | None = None, known: dict | None = None) -> Plan:
    """Which of `files` (every file listed) the index covers now, each stat-ed; with `known`
    ({path: signature} of the files indexed), `files` are only those to check, the rest of
    `known` trusted (quick_plan)."""
    now_ns = clock.files_now_ns() if now_ns is None else now_ns
    subset = known is not None
    known = dict(con.execute("SELECT path, sig FROM files")) if known is None else known
    hot_before = now_ns - hot_minutes * 60 * 1_000_000_000
    result = Plan()
    stat, get, hot, stale, current = os.stat, known.get, result.hot.append, result.stale.append, result._current.add
    for p in files:  # a stat a file, every query (3,000 files: most of a query's time): kept bare
        try:
            st = stat(p)
        except OSError:
            hot(p)  # vanishing as we look: leave it to the scan
            continue
        if st.st_mtime_ns > hot_before:
            hot(p)
        elif get(p) == f"{st.st_mtime_ns},{st.st_size},{st.st_ino},{st.st_ctime_ns}":
            current(p)
        else:
            stale(p)
    if subset:  # the others are trusted: only what was checked and is not current is not covered
        result._trusted = con
        result.excluded = {p for p in files if p in known and p not in result._current}
        if result.excluded:
            result.others = sorted(i for i, p in con.execute("SELECT id, path FROM files") if p in result.excluded)
    elif len(result.current) < len(known):
        result.missing = sorted(set(known).difference(files))
        result.others = sorted(i for i, p in con.execute("SELECT id, path FROM files") if p not in result.current)
    return result


# A file indexed and cold is trusted to be as indexed, without a stat, while the directories
# it was listed in are unchanged (no file added, removed or renamed since: a directory's mtime
# says so) and it was last modified more than RECHECK_HOURS before the listing (a session
# resumed after a pause is most likely one of the recent ones, which are stat-ed every query).
# What a query may then miss until the next update (the heartbeat's, every few minutes): new
# lines of an older session. The files of the results printed are stat-ed before their text
# is read (Open.recheck), so a changed one is scanned, never misread.
RECHECK_HOURS = 24


def listing(home, cfg, started: int) -> dict | None:
    """What a query needs to trust the index without listing the files (see RECHECK_HOURS),
    taken before the files are listed: a directory modified at or after `started` (the
    coarse clock's tick may still add a file unseen) is not trusted. None with recall.sources
    set (globs that may reach anywhere: every query lists them)."""
    from anima.recall import sources

    if sources.setting(cfg, "recall.sources", []):
        return None
    return {"dirs": {d: (m if 0 <= m < started else -1) for d, m in sources.directories(home).items()}, "at": started}


def _save_listing(con, seen: dict | None, unchecked) -> None:
    """Keep the listing, with the files that are not as indexed (hot ones): checked every query."""
    import json

    if seen is None:
        con.execute("DELETE FROM meta WHERE key='listing'")
        return
    seen = {**seen, "unindexed": sorted(unchecked)}
    con.execute("INSERT OR REPLACE INTO meta VALUES('listing', ?)", (json.dumps(seen, ensure_ascii=False),))


def quick_plan(con, home, cfg, now_ns: int | None = None) -> Plan | None:
    """The plan without listing or stat-ing every file (see RECHECK_HOURS), or None when the
    directories changed since the last update (or no listing was kept): then `plan` it is."""
    import json

    from anima.recall import sources

    if sources.setting(cfg, "recall.sources", []):
        return None
    row = con.execute("SELECT value FROM meta WHERE key='listing'").fetchone()
    if not row:
        return None
    seen = json.loads(row[0])
    for d, mtime in seen["dirs"].items():
        try:
            if mtime < 0 or os.stat(d).st_mtime_ns != mtime:
                return None
        except OSError:
            return None
    hot_minutes = cfg["index.hot_minutes"]
    recent = seen["at"] - max(RECHECK_HOURS * 60, hot_minutes) * 60 * 1_000_000_000
    # (the files modified since `recent` picked in SQL: a signature begins with the mtime)
    known = dict(con.execute("SELECT path, sig FROM files WHERE "
                             "CAST(substr(sig, 1, instr(sig, ',') - 1) AS INTEGER) > ?", (recent,)))
    unindexed = seen["unindexed"]
    if unindexed:
        known.update(con.execute("SELECT path, sig FROM files WHERE path IN (SELECT value FROM json_each(?))",
                                 (json.dumps(unindexed),)))
    return plan(con, list(dict.fromkeys([*unindexed, *known])), hot_minutes, now_ns, known)


def rebuild(home, cfg, jobs: int, progress=None, warn=lambda m: None) -> dict:
    """Build a new index beside the old one and move it into place: a rebuild killed at any
    moment leaves the previous index (or none) as it was. Raise Busy if one is running.

    With `jobs` > 1 the sessions are shared among that many writers (this process and
    jobs - 1 workers), each filling an FTS5 table of its own (a shard: f, f1, f2, ...): FTS5
    tokenising is most of a rebuild and one writer cannot share it. The workers' shards are
    copied into the one database file at the end, which then moves into place."""
    from anima.recall import sources

    directory = home.ensure("index")
    target = os.path.join(directory, NAME)
    with fs.locked(target, wait=False, what="the recall index (a rebuild or update is running)"):
        started = clock.files_now_ns()
        seen = listing(home, cfg, started)
        files = sources.session_files(home, cfg)
        cold = [(p, sig) for p in files if _cold(sig := fs.signature(p), started, cfg["index.hot_minutes"])]
        if seen is not None:
            seen["unindexed"] = sorted(set(files).difference(p for p, _ in cold))
        tmp = os.path.join(directory, f".{NAME}.{os.getpid()}.build")
        _drop_builds(directory)  # a killed rebuild's: the lock says none is running
        try:
            with _disk(target):
                seen = _rebuild(directory, target, tmp, cold, jobs, progress, warn, started, seen)
        except BaseException:
            _drop_builds(directory)  # what failed (a full disk) leaves no half-built file behind
            raise
    return {"indexed": len(seen), "hot": len(files) - len(cold)}


def _drop_builds(directory: str) -> None:
    for leftover in fs.listdir(directory):
        if leftover.startswith(f".{NAME}.") and ".build" in leftover:
            with contextlib.suppress(FileNotFoundError):
                fs.remove(os.path.join(directory, leftover))


def _rebuild(directory: str, target: str, tmp: str, cold: list, jobs: int, progress, warn, started: int,
             listed: dict | None = None) -> dict:
    """Build the index in `tmp`, then move it to `target`; the sessions seen, by id."""
    shards = max(1, min(jobs, len(cold) // 4))  # (a few files are not worth a process)
    read = _build_shards(tmp, [(i, p, sig) for i, (p, sig) in enumerate(cold, 1)], shards, progress)
    con = _connect(tmp)
    try:
        seen: dict[str, str] = {}
        for file_id, (p, sig) in enumerate(cold, 1):
            got, warnings = read[p]
            for message in warnings:
                warn(message)
            if got is not None and got["id"] in seen:
                # its FTS5 rows stay behind in the shard as dead rows (FTS5 deletes a
                # contentless row only given its text again); `index status` counts them
                warn(f"{p}: session {got['id']} was already read from {seen[got['id']]}; file skipped")
                con.execute("DELETE FROM turns WHERE file=?", (file_id,))
                got = None
            if got is None:  # kept as a file with no turns: up to date, not stale forever
                got = {**SKIPPED, "turns": 0, "tokens": 0}
            else:
                seen[got["id"]] = p
            con.execute("INSERT INTO files(id, path, sig, session, format, delegated, turns, tokens, size, lines, "
                        "tail) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                        (file_id, p, _sig(sig), got["id"], got["format"], int(got["delegated"]), got["turns"],
                         got["tokens"], got["size"], got["lines"], got["tail"]))
        con.execute("INSERT INTO meta VALUES('built', ?)", (str(started),))
        con.execute("INSERT INTO meta VALUES('shards', ?)", (str(shards),))
        if listed is not None:
            _save_listing(con, listed, listed["unindexed"])
        con.commit()
    finally:
        con.close()
    fd = fs.open_file(tmp, os.O_RDWR)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fs.move(tmp, target, durable=True)
    return seen


SHARD_STRIDE = 1 << 40  # shard k's rowids start above k * SHARD_STRIDE: unique across shards
_taken = None  # how many of the files the shards have taken so far (a multiprocessing.Value)


def _build_shards(tmp: str, cold: list, shards: int, progress) -> dict:
    """Fill `tmp` (a new index: every table, shard 0 indexed here) and its other shards (in
    workers, then copied in); {path: (what was read without the text, warnings)}."""
    global _taken
    con = _connect(tmp)
    try:
        con.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;")
        _create(con)
        con.commit()
        if shards == 1:
            counted = iter(range(1, len(cold) + 1))
            return _fill_shard(con, cold, 0, 1, lambda: progress and progress(next(counted), len(cold)))
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        _taken = ctx.Value("i", 0)
        parts = [f"{tmp}.{k}" for k in range(1, shards)]

        def tick():
            if progress:
                progress(min(_taken.value, len(cold)), len(cold))

        with ctx.Pool(shards - 1) as pool:
            pending = [pool.apply_async(_shard_worker, (part, cold, k, shards, os.getpid()))
                       for k, part in zip(range(1, shards), parts, strict=True)]
            read = _fill_shard(con, _take(cold), 0, shards, tick)
            for job in pending:
                read.update(job.get())
        if progress:
            progress(len(cold), len(cold))
        for k, part in enumerate(parts, 1):
            fts.create(con, f"f{k}")
            con.execute("ATTACH DATABASE ? AS shard", (part,))
            for shadow in ("data", "idx", "docsize", "config"):  # FTS5's own tables, as they are
                con.execute(f"DELETE FROM f{k}_{shadow}")
                con.execute(f"INSERT INTO f{k}_{shadow} SELECT * FROM shard.f_{shadow}")
            con.execute("INSERT INTO turns SELECT * FROM shard.turns")
            con.commit()
            con.execute("DETACH DATABASE shard")
            fs.remove(part)
        return read
    finally:
        con.close()


def _shard_worker(part: str, items: list, k: int, shards: int, parent: int) -> dict:
    from anima.infra import children

    children.end_with(parent)  # (a rebuild killed: this worker holds its lock too)
    con = _connect(part)
    try:
        con.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + TURNS)
        fts.create(con)
        con.commit()
        return _fill_shard(con, _take(items), k, shards, lambda: None)
    finally:
        con.close()


def _take(items: list):
    """The files in turn, each to the first shard that asks: the shards end together, however
    the files' sizes fall."""
    while True:
        with _taken.get_lock():
            i = _taken.value
            _taken.value += 1
        if i >= len(items):
            return
        yield items[i]


def _fill_shard(con, items, k: int, shards: int, tick) -> dict:
    """Index the files ((file id, path, signature) each) into `con`'s table f, rowids from
    k * SHARD_STRIDE + 1, and their turns into its table turns; {path: (what was read, with
    how many "turns" and "tokens" (as FTS5 counted them), not its text; warnings)}."""
    from anima.recall import timewords

    # no merging while building, and a large in-memory term hash (fewer, larger segments: 64
    # MiB shared among the shards, which fill at the same time); one optimize at the end
    # leaves a single segment to query
    con.execute("INSERT INTO f(f, rank) VALUES('automerge', 0)")
    con.execute("INSERT INTO f(f, rank) VALUES('hashsize', ?)", (67108864 // shards,))
    out, ids = {}, {}
    turns = []  # (rowid, file id, line, ts, who, asks)
    rowid = k * SHARD_STRIDE + 1
    for file_id, *item in items:
        p, sig, got, warnings = _read_file(item)
        if got is not None:
            rows = got.pop("rows")
            con.executemany("INSERT INTO f(rowid, body) VALUES(?,?)", [(rowid + i, r[3]) for i, r in enumerate(rows)])
            turns += [(rowid + i, file_id, line, ts, who, asks) for i, (line, ts, who, _, asks) in enumerate(rows)]
            got["turns"] = len(rows)
            rowid += len(rows)
        out[p], ids[p] = (got, warnings), file_id
        tick()
    con.execute("INSERT INTO f(f) VALUES('optimize')")
    con.execute("INSERT INTO f(f, rank) VALUES('automerge', 4)")  # updates merge as usual
    con.execute("INSERT INTO f(f, rank) VALUES('hashsize', 1048576)")
    con.commit()
    # each turn's length in tokens as FTS5 counted them (recall.scan counts them the same way),
    # and whether it tells a time (one walk of the time words' rows)
    sizes = dict(con.execute("SELECT id, sz FROM f_docsize"))
    told = {r for (r,) in con.execute("SELECT rowid FROM f WHERE f MATCH ?", (timewords.match(),))}
    tokens: dict[int, int] = {}
    rows = []
    for t in turns:
        dl = fts.varints(sizes[t[0]])[0]
        tokens[t[1]] = tokens.get(t[1], 0) + dl
        rows.append((*t, dl, t[0] in told))
    con.executemany("INSERT INTO turns(id, file, line, ts, who, asks, dl, tells) VALUES(?,?,?,?,?,?,?,?)", rows)
    con.commit()
    for p, (got, _) in out.items():
        if got is not None:
            got["tokens"] = tokens.get(ids[p], 0)
    return out


def update(home, cfg, warn=lambda m: None) -> dict:
    """Bring the index up to date: index new cold sessions, append what grew, retire the rows
    of files that changed otherwise or are gone. Raise Busy if a rebuild or update runs, and
    Unusable for an index it finds damaged."""
    import sqlite3

    from anima.recall import sources

    target = path(home)
    # The first update (say, from cron) builds it; so does the first after an upgrade that reads
    # the transcripts otherwise (another SCHEMA_VERSION): the index is derived, nothing is lost.
    if not os.path.exists(target) or _outdated(target):
        rebuild(home, cfg, cfg["index.jobs"], warn=warn)
        return {"added": None, "appended": 0, "replaced": 0, "removed": 0}
    with fs.locked(target, wait=False, what="the recall index (a rebuild or update is running)"), _disk(target):
        con = _connect(target)
        try:
            _usable(con, target)
            seen = listing(home, cfg, clock.files_now_ns())
            files = sources.session_files(home, cfg)
            p = plan(con, files, cfg["index.hot_minutes"])
            counts = {"added": 0, "appended": 0, "replaced": 0, "removed": len(p.missing)}
            added: list[tuple[int, str]] = []  # the new turns' (rowid, body)
            with con:
                for gone in p.missing:
                    _retire(con, gone)
                ids = {sid for path, sid in con.execute("SELECT path, session FROM files") if path in p.current}
                for stale in p.stale:
                    row = con.execute("SELECT id, size, lines, tail, format, delegated, sig FROM files WHERE path=?",
                                      (stale,)).fetchone()
                    sig = fs.signature(stale)
                    if row and sig and sig[1] >= row[1] > 0 and _tail_hash(stale, row[1]) == row[3] \
                            and not _untimed(con, row[0], row[6]):
                        grown = _read_appended(stale, row[4], bool(row[5]), row[1], row[2], sig[0] / 1e9)
                        if grown is not None:
                            added += _insert(con, stale, sig, grown, row[0])
                            counts["appended"] += 1
                            continue
                    _, _, got, warnings = _read_file((stale, sig))
                    for message in warnings:
                        warn(message)
                    if row:
                        _retire(con, stale)
                    if got is not None and got["id"] in ids:
                        warn(f"{stale}: session {got['id']} is already indexed from another file; file skipped")
                        got = None
                    if got is None:
                        _insert(con, stale, sig, SKIPPED)
                        continue
                    counts["replaced" if row else "added"] += 1
                    ids.add(got["id"])
                    added += _insert(con, stale, sig, got)
                _tell(con, added)
                _save_listing(con, seen, set(files).difference(p.current, p.stale))
        except sqlite3.DatabaseError as e:
            if (getattr(e, "sqlite_errorcode", None) or 0) & 0xFF in _SQLITE_ERRNO:
                raise  # (a write the file system refused: _disk says so)
            raise damaged(target, e) from None
        finally:
            con.close()
    return counts


def _retire(con, file_path: str) -> None:
    """Forget a file: its turns' metadata goes; their FTS5 rows stay behind as dead rows."""
    row = con.execute("SELECT id FROM files WHERE path=?", (file_path,)).fetchone()
    if row:
        con.execute("DELETE FROM turns WHERE file=?", (row[0],))
        con.execute("DELETE FROM files WHERE id=?", (row[0],))


# --- reading --------------------------------------------------------------------------------

class Unusable(DataError):
    """The index cannot be read (damaged, or made by another version): scan instead."""


def _outdated(target: str) -> bool:
    """Whether the index at `target` is a readable index of another version (a damaged one is not)."""
    import sqlite3

    try:
        con = _connect(target, readonly=True)
    except (sqlite3.DatabaseError, Refused, OSError):
        return False
    try:
        found = con.execute("SELECT value FROM meta WHERE key='version'").fetchone()
    except sqlite3.DatabaseError:
        return False
    finally:
        con.close()
    return bool(found) and found[0] != version()


def damaged(target: str, e: Exception) -> Unusable:
    """What SQLite's error `e` over the index at `target` says of it: not usable, rebuild it."""
    return Unusable(f"{target}: not a usable index ({e}); `anima index rebuild` makes a new one")


def _usable(con, target: str) -> None:
    import sqlite3

    try:
        found = con.execute("SELECT value FROM meta WHERE key='version'").fetchone()
    except sqlite3.DatabaseError as e:
        raise damaged(target, e) from None
    if not found or found[0] != version():
        raise Unusable(f"{target}: made by another version of anima; `anima index rebuild` makes a new one")


class Open:
    """An index opened for reading, with the plan of what it covers now."""

    def __init__(self, home, cfg, files: list[str] | None = None):
        """`files`: every transcript file, listed by the caller; None: trust the index's
        listing when its directories are unchanged (quick_plan), list them otherwise."""
        import sqlite3

        from anima.recall import sources

        target = path(home)
        self.con = _connect(target, readonly=True)
        self._totals = self._covered = None
        self._hits: dict[tuple[str, str], int] = {}
        try:
            # one read transaction for the whole answer: an update that commits meanwhile waits
            # for it (its rows and a turns table from before and after it would not agree)
            self.con.execute("BEGIN")
            _usable(self.con, target)
            self.tables = shards(self.con)
            self.plan = None if files is not None else quick_plan(self.con, home, cfg)
            self.trusted = self.plan is not None
            if self.plan is None:
                self.plan = plan(self.con, sources.session_files(home, cfg) if files is None else files,
                                 cfg["index.hot_minutes"])
        except sqlite3.DatabaseError as e:
            self.con.close()
            raise damaged(target, e) from None
        except Unusable:
            self.con.close()
            raise

    def close(self):
        self.con.close()

    def recheck(self, paths) -> bool:
        """Stat the files of these results (taken from the index) before their text is read:
        whether one is not as indexed after all (it is then stale, scanned: ask again)."""
        if not self.trusted:
            return False
        sigs = dict(self.con.execute(f"SELECT path, sig FROM files WHERE path IN ({','.join('?' * len(paths))})",
                                     list(paths))) if paths else {}
        changed = [p for p in paths if self.plan.covers(p) and sigs.get(p) != _sig(fs.signature(p) or ())]
        if not changed:
            return False
        for p in changed:
            self.plan.drop(p)
            self.plan.stale.append(p)
        self.plan.others = sorted({*self.plan.others, *(i for i, p in self.con.execute("SELECT id, path FROM files")
                                                        if p in changed)})
        self._totals = self._covered = None
        return True

    def hits(self, match: str, table: str) -> int:
        """How many rows of a shard hold the phrase (asked once a query)."""
        if (match, table) not in self._hits:
            self._hits[match, table] = fts.hits(self.con, match, table)
        return self._hits[match, table]

    def token_counts(self, token: str, rowids: list[int]) -> dict[int, int]:
        """{rowid: count} of a token (a CJK character) in these rows (for a candidate's
        source). The token's rows are walked once a shard, these rowids kept
        (fts.rows_counts): 2.5x cheaper at 3,000 sessions than its instance list (fts5vocab)
        or the rows holding the token and the result's own term, both walked in full."""
        out: dict[int, int] = {}
        match = fts.phrase(token)
        for table in self.tables:  # (rows an update appended are in f whatever their rowid)
            hits = self.hits(match, table)
            if hits:
                out.update(fts.rows_counts(self.con, match, rowids, hits, table))
        return out

    def totals(self) -> tuple[int, int]:
        """Turns and tokens of the files the index covers now."""
        if self._totals is None:
            if self.plan.others:
                turns = tokens = 0
                for p, t, n in self.con.execute("SELECT path, turns, tokens FROM files"):
                    if self.plan.covers(p):
                        turns += t
                        tokens += n
            else:
                turns, tokens = self.con.execute("SELECT total(turns), total(tokens) FROM files").fetchone()
            self._totals = int(turns), int(tokens)
        return self._totals

    def clean(self) -> bool:
        """Whether every FTS5 row is a turn of a file the index covers now (no dead rows, no
        file left out): then FTS5's own counts are the ones recall needs."""
        return not self.plan.others and sum(fts.totals(self.con, t)[0] for t in self.tables) == self.totals()[0]

    def covered(self) -> dict[int, tuple[str, str]]:
        """file id -> (path, session id) of the files the index covers now."""
        if self._covered is None:
            self._covered = {i: (p, sid) for i, p, sid in self.con.execute("SELECT id, path, session FROM files")
                             if self.plan.covers(p)}
        return self._covered


def status(home, cfg) -> dict:
    from anima.recall import sources

    target = path(home)
    files = sources.session_files(home, cfg)
    info = {"enabled": cfg["index.enabled"], "path": target, "exists": os.path.exists(target),
            "sessions": len(files), "indexed": 0, "hot": 0, "stale": 0, "missing": 0, "dead_rows": 0,
            "size": 0, "built": None, "hot_minutes": cfg["index.hot_minutes"]}
    if not info["exists"]:
        return info
    import sqlite3

    con = _connect(target, readonly=True)
    try:
        _usable(con, target)
        p = plan(con, files, cfg["index.hot_minutes"])
        n_row = sum(fts.totals(con, t)[0] for t in shards(con))
        live = con.execute("SELECT count(*) FROM turns").fetchone()[0]
        built = con.execute("SELECT value FROM meta WHERE key='built'").fetchone()
    except sqlite3.DatabaseError as e:
        raise damaged(target, e) from None
    finally:
        con.close()

    info.update(indexed=len(p.current), hot=len(p.hot), stale=len(p.stale), missing=len(p.missing),
                dead_rows=n_row - live, size=os.path.getsize(target),
                built=clock.iso(int(built[0]) / 1e9) if built else None,
                stale_paths=p.stale, missing_paths=p.missing)
    return info


def verify(home, cfg) -> list[str]:
    """Problems found, as lines; changes nothing."""
    target = path(home)
    if not os.path.exists(target):
        return [f"{target}: no index (`anima index rebuild` makes one)"]
    problems = []
    con = _connect(target, readonly=True)
    try:
        check = con.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            problems.append(f"{target}: database damaged: {check}")
        found = con.execute("SELECT value FROM meta WHERE key='version'").fetchone()
        if not found or found[0] != version():
            problems.append(f"{target}: made by another version of anima; rebuild it")
        orphans = con.execute("SELECT count(*) FROM turns WHERE file NOT IN (SELECT id FROM files)").fetchone()[0]
        if orphans:
            problems.append(f"{target}: {orphans} turns belong to no file")
        counted = con.execute("SELECT count(*) FROM files f WHERE turns != "
                              "(SELECT count(*) FROM turns t WHERE t.file = f.id)").fetchone()[0]
        if counted:
            problems.append(f"{target}: {counted} files' turn counts disagree with their turns")
        # a file's rowids rise with its lines: recall reads a turn's neighbours by rowid (window.Turns)
        disordered = con.execute("SELECT count(*) FROM (SELECT line, lag(line) OVER (PARTITION BY file ORDER BY id) "
                                 "AS before FROM turns) WHERE line <= before").fetchone()[0]
        if disordered:
            problems.append(f"{target}: {disordered} turns out of line order by rowid")
    except Exception as e:  # sqlite3.DatabaseError and friends: the file is no index
        problems.append(f"{target}: cannot be read as an index ({e})")
    finally:
        con.close()
    info = status(home, cfg) if not problems else {}
    for p in info.get("stale_paths", []):
        problems.append(f"{p}: stale: changed or not indexed since the last update")
    for p in info.get("missing_paths", []):
        problems.append(f"{p}: stale: indexed but gone")
    return problems


def set_enabled(home, cfg, on: bool) -> None:
    from anima.infra import config

    if on:
        info = status(home, cfg)
        if not info["exists"]:
            raise Refused("no index to switch on: run `anima index rebuild` first")
        if info["stale"] or info["missing"]:
            raise Refused(f"the index is stale ({info['stale']} sessions changed or new, {info['missing']} gone); "
                          "run `anima index update` first")
    config.set_value(home.config, "index.enabled", "true" if on else "false")

