"""Speed and size of the recall index, as ratios against references measured in the same run.

Targets (issue 5, "Speed and size", and issue 17). On the generated corpus of bench/corpus.py
(300 sessions x 100 turns, mixed Chinese and English, zstd):
- `anima index rebuild` (default jobs) at most 1.5 s (median of 3), and at most 7x one full
  linear-scan `anima recall TERM` (index off, default config) over the same corpus: the
  median of the rebuilds against the median over the terms of each term's median scan;
- cold-process `anima recall TERMS` with the index on at most 1.5x "the floor plus start-up":
  the floor is a tiny script (FLOOR, written to a temp file, run by the same venv interpreter)
  that opens index/recall.sqlite read-only and runs the same FTS5 MATCH (the query's phrases
  AND-ed, ORDER BY rank, LIMIT 10, joined to the turns table) over each shard; start-up is
  anima's CLI start-up over bare python, the median of `python -c "import click"` less the
  median of `python -c pass`. Each query is the median of BENCH_RUNS, interleaved with its
  floor and both references; the ratio is anima / (floor + start-up), printed per query
  (with the ratio to `python -c "import click"`, for comparing with earlier runs), the
  target on the median over the queries. The queries: bench/corpus.py's ten terms, each
  alone, its middling and common English words as one query of two terms, and its common
  English and Chinese words as another (two common words: a set of terms in many turns);
- `anima recall --batch` of 150 questions in plain language made of words of the corpus
  (corpus.questions; each must find something) under 2 s, median of BENCH_RUNS (the ratio to
  `python -c "import click"` printed too);
- index size on disk (`anima index status --json`, which is the size of index/recall.sqlite)
  at most 1.0x the corpus text: the UTF-8 bytes of the turn bodies anima indexes, counted with
  anima.recall.sessions (the ratio to the uncompressed JSONL is printed too);
- correctness on the side: for every query `anima recall --json --limit 50 TERMS` prints the
  same with the index on and off (same home, toggled with `anima index on|off`).
At 3,000 sessions (make_corpus with sessions=3000; every 100th session written as plain .jsonl):
- cold-process `anima recall TERMS` with the index at most 1.5x the floor plus start-up, as
  at 300;
- rebuild memory under 300 MB: GNU time's %M (the largest single process of the rebuild, the
  parent or a worker), and the sum over the rebuild's process tree sampled from /proc every
  20 ms (Pss: shared pages divided among the processes sharing them; Rss summed too, for
  information, which counts a page shared after fork once per process). The target is
  checked against the largest process and the Pss sum;
- `anima index update` after appending one turn to each of 10 plain .jsonl sessions under 1 s
  (median of 3 rounds; each round's new turns must then be found, from the index).

After each set of cold-process timings, the same terms are timed warm, in one process
(`anima.host.tools.call("memory_recall")`, what `anima mcp` does for a tool call; median of
BENCH_RUNS after a first call): what a resident process would pay a query; no target.

Each home is a throwaway `anima init` with `index.hot_minutes 0`, so fresh files are cold and
indexed; each session file's mtime is its last turn's (corpus.make_corpus aged), months ago, as
a history's files are (recall trusts the index's listing of files that old: see
anima.recall.index.RECHECK_HOURS). The package is byte-compiled first (see bench/run.py).
Every figure is printed with its target and ok/OVER; exit 1 if a target is missed or a check
fails. BENCH_QUICK=1 skips the 3,000-session part; BENCH_RUNS (default 7) sets the runs per query of the query timings.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corpus  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "7"))
QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
BIN = os.path.dirname(sys.executable)
ANIMA = os.path.join(BIN, "anima")
TIME = "/usr/bin/time"
REBUILD_TARGET = 7.0
REBUILD_TARGET_S = 1.5
QUERY_TARGET = 1.5  # x (floor + start-up)
BATCH_TARGET_S = 2.0
BATCH_QUESTIONS = 150
SIZE_TARGET = 1.0
BIG_QUERY_TARGET = 1.5
BIG_MEMORY_TARGET_MB = 300
UPDATE_TARGET_S = 1.0
BIG_SESSIONS = 3000
LABELS = ("rare en", "middling en", "common en", "en phrase", "common zh 2", "rare zh 2", "common zh 4",
          "rare zh 4", "absent en", "absent zh", "two terms", "two common")
CLICK = 'python -c "import click"'
# The floor: the same FTS5 MATCH anima's query asks, ranked and limited by FTS5 itself, over
# every shard, joined to the turns; argv: the index, the MATCH expression.
FLOOR = """
import sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
row = con.execute("SELECT value FROM meta WHERE key='shards'").fetchone()
found = []
for k in range(int(row[0]) if row else 1):
    f = f"f{k}" if k else "f"
    found += con.execute(f"SELECT m.rowid, m.rank, t.file, t.line FROM (SELECT rowid, rank FROM {f} WHERE {f} MATCH ? "
                         "ORDER BY rank LIMIT 10) m JOIN turns t ON t.id = m.rowid", (sys.argv[2],)).fetchall()
print(len(found))
"""

problems: list[str] = []
verdicts: list[bool] = []


def sh(argv: list[str], env: dict, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    if check and done.returncode != 0:
        raise SystemExit(f"bench/index.py: {' '.join(argv)}: exit {done.returncode}: "
                         f"{done.stderr.decode(errors='replace').strip()[:300]}")
    return done


def timed(argv: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    return time.perf_counter() - start, done


def verdict(label: str, value: str, ok: bool, target: str) -> None:
    verdicts.append(ok)
    print(f"{label:44} {value:>22}   (target {target}) {'ok' if ok else 'OVER'}")


def make_home(tmp: str, name: str) -> tuple[str, dict]:
    root = os.path.join(tmp, name)
    env = {**os.environ, "ANIMA_HOME": root}
    sh([ANIMA, "init", "--lang", "en"], env)
    sh([ANIMA, "config", "set", "index.hot_minutes", "0"], env)
    return root, env


def check_query(term: str, present: bool, done: subprocess.CompletedProcess, what: str) -> None:
    want = 0 if present else 1
    if done.returncode != want or bool(done.stdout) != present:
        problems.append(f"{what} {term!r}: exit {done.returncode}, {len(done.stdout.splitlines())} lines; "
                        f"want exit {want}")
    if done.stderr:
        problems.append(f"{what} {term!r} said: {done.stderr.decode(errors='replace').strip()[:200]}")


def queries_of(terms: list[str]) -> list[tuple[str, ...]]:
    """The queries timed: each term alone, the middling and common English words together, and
    the common English and Chinese words together."""
    return [(t,) for t in terms] + [(terms[1], terms[2]), (terms[2], terms[4])]


def match(query: tuple[str, ...]) -> str:
    """The FTS5 MATCH expression of a query: its terms' phrases AND-ed, as anima asks them."""
    from anima.recall import fts

    return " AND ".join(fts.phrase(t) for t in query)


def query_times(queries: list[tuple], absent: set[str], env: dict, what: str, floor: str) -> dict:
    """Seconds of each run of cold-process `anima recall TERMS` ("anima", per query), of the
    floor script on the same MATCH ("floor", per query), and of the references ("pass",
    "click"), interleaved: every round takes each query with its floor and both references."""
    db = os.path.join(env["ANIMA_HOME"], "index", "recall.sqlite")
    for q in queries:  # untimed: the page cache holds the package, the index and the files
        sh([ANIMA, "recall", *q], env, check=False)
        sh([sys.executable, floor, db, match(q)], env)
    times: dict = {"anima": {q: [] for q in queries}, "floor": {q: [] for q in queries}, "pass": [], "click": []}
    for _ in range(RUNS):
        for q in queries:
            times["pass"].append(timed([sys.executable, "-c", "pass"], env)[0])
            times["click"].append(timed([sys.executable, "-c", "import click"], env)[0])
            seconds, done = timed([sys.executable, floor, db, match(q)], env)
            times["floor"][q].append(seconds)
            if done.returncode != 0 or int(done.stdout or 0) == 0 and not set(q) <= absent:
                problems.append(f"floor {q!r}: exit {done.returncode}, found {done.stdout.decode().strip()!r}")
            seconds, done = timed([ANIMA, "recall", *q], env)
            times["anima"][q].append(seconds)
            check_query(" ".join(q), not set(q) <= absent, done, what)
    return times


def print_queries(queries: list[tuple], times: dict, target: float, label: str) -> None:
    bare, click = statistics.median(times["pass"]), statistics.median(times["click"])
    start = click - bare
    print(f"  python -c pass {bare * 1000:.1f} ms, {CLICK} {click * 1000:.1f} ms (medians of {len(times['pass'])}): "
          f"start-up {start * 1000:.1f} ms")
    print(f"  {'query':20} {'kind':12} {'anima ms':>9} {'floor ms':>9} {'ratio':>6}   {'x click':>7}")
    ratios = []
    for q, kind in zip(queries, LABELS, strict=True):
        m, f = statistics.median(times["anima"][q]), statistics.median(times["floor"][q])
        ratio = m / (f + start)
        ratios.append(ratio)
        print(f"  {_pad(' '.join(q), 20)} {kind:12} {m * 1000:9.1f} {f * 1000:9.1f} {ratio:5.2f}x   "
              f"{m / click:6.2f}x {'ok' if ratio <= target else 'OVER'}")
    ratio = statistics.median(ratios)
    verdict(label, f"{ratio:.2f}x floor+start-up", ratio <= target, f"<= {target}x")


def batch_times(questions: list[str], env: dict) -> tuple[list[float], list[float]]:
    """Seconds of each `anima recall --batch` of the questions, and of the click reference,
    interleaved; each run's answers checked."""
    data = "".join(f"{q}\n" for q in questions).encode()
    batch, ref = [], []
    for i in range(RUNS + 1):
        ref_s = timed([sys.executable, "-c", "import click"], env)[0]
        start = time.perf_counter()
        done = subprocess.run([ANIMA, "recall", "--batch"], env=env, input=data, capture_output=True)
        seconds = time.perf_counter() - start
        if i == 0:  # untimed, as the queries' first
            answered = {json.loads(line)["query"] for line in done.stdout.splitlines()}
            if done.returncode != 0 or done.stderr or len(answered) != len(questions):
                problems.append(f"recall --batch: exit {done.returncode}, {len(answered)} of {len(questions)} "
                                f"questions answered, said {done.stderr.decode(errors='replace')[:200]!r}")
            continue
        batch.append(seconds)
        ref.append(ref_s)
    return batch, ref


WARM = """
import json, os, statistics, sys, time
from anima.infra import home
from anima.host import tools
h = home.Home(os.environ["ANIMA_HOME"])
out = {}
for term in json.loads(sys.argv[1]):
    times = []
    for _ in range(int(sys.argv[2])):
        start = time.perf_counter()
        tools.call(h, "memory_recall", {"terms": [term]}, time.time(), lambda m: None)
        times.append(time.perf_counter() - start)
    out[term] = statistics.median(times[1:])
print(json.dumps(out))
"""


def print_warm(terms: list[str], env: dict, label: str) -> None:
    """Each term's median over RUNS calls in one process, after a first: what `anima mcp` (or any
    resident process) pays a recall; no target, for comparing with the cold process."""
    done = sh([sys.executable, "-c", WARM, json.dumps(terms), str(RUNS + 1)], env)
    warm = json.loads(done.stdout)
    print(f"  {label}, warm in one process (anima.host.tools.call memory_recall, as `anima mcp` answers): "
          + ", ".join(f"{t} {warm[t] * 1000:.1f}" for t in terms) + " ms")


def text_size(root: str) -> int:
    """UTF-8 bytes of the turn bodies anima reads, over every session (without touching the cache)."""
    from anima.infra import config
    from anima.infra.home import Home
    from anima.recall import sessions

    home = Home(root)
    cfg = config.load(home.config)
    cfg.values = {**cfg.values, "recall.cache_sessions": 0}
    warnings: list[str] = []
    total = sum(len(turn.text.encode()) for s in sessions.sessions(home, cfg, warnings.append) for turn in s.turns)
    if warnings:
        problems.append(f"reading the corpus warned: {warnings[0][:200]}")
    return total


def jsonl_size(paths: list[str]) -> int:
    import zstandard

    total = 0
    for p in paths:
        if p.endswith(".zst"):
            with open(p, "rb") as f, zstandard.ZstdDecompressor().stream_reader(f) as reader:
                total += sum(len(chunk) for chunk in iter(lambda r=reader: r.read(1 << 20), b""))
        else:
            total += os.path.getsize(p)
    return total


def status(env: dict) -> dict:
    return json.loads(sh([ANIMA, "index", "status", "--json"], env).stdout)


# --- 300 sessions -------------------------------------------------------------------------------

def small(tmp: str, terms: list[str], absent: set[str], floor: str) -> None:
    # Two homes on the same corpus: "off" for the scans (and the rebuilds, which do not switch
    # the index on), "on" for the queries from the index.
    off_root, off_env = make_home(tmp, "off")
    on_root, on_env = make_home(tmp, "on")
    start = time.perf_counter()
    paths = corpus.make_corpus(os.path.join(off_root, "sessions"), aged=True)
    made = time.perf_counter() - start
    corpus.make_corpus(os.path.join(on_root, "sessions"), aged=True)
    text = text_size(on_root)
    raw = jsonl_size(paths)
    zst = sum(os.path.getsize(p) for p in paths)
    print(f"corpus: {len(paths)} sessions, {text / 1e6:.1f} MB turn text, {raw / 1e6:.1f} MB JSONL, "
          f"{zst / 1e6:.1f} MB zstd (made in {made:.1f} s); index.hot_minutes 0, index.jobs default")

    # Rebuild against one full scan, interleaved: each round one rebuild, then a scan per term.
    for t in terms:  # untimed: page cache, and the recall cache (default 60 sessions) as users have it
        sh([ANIMA, "recall", t], off_env, check=False)
    rebuilds: list[float] = []
    scans: dict[str, list[float]] = {t: [] for t in terms}
    for _ in range(3):
        seconds, done = timed([ANIMA, "index", "rebuild"], off_env)
        if done.returncode != 0 or done.stderr:
            problems.append(f"anima index rebuild: exit {done.returncode}: {done.stderr.decode()[:200]}")
        rebuilds.append(seconds)
        for t in terms:
            seconds, done = timed([ANIMA, "recall", t], off_env)
            scans[t].append(seconds)
            check_query(t, t not in absent, done, "anima recall (scan)")
    rebuild = statistics.median(rebuilds)
    scan = statistics.median(statistics.median(s) for s in scans.values())
    print("\n300 sessions: rebuild against one linear-scan recall (index off), interleaved")
    print(f"  rebuilds: {', '.join(f'{s:.2f}' for s in rebuilds)} s; scans per term (median of 3): "
          + ", ".join(f"{statistics.median(scans[t]) * 1000:.0f}" for t in terms) + " ms")
    verdict("rebuild (median of 3)", f"{rebuild:.2f} s", rebuild <= REBUILD_TARGET_S, f"<= {REBUILD_TARGET_S} s")
    verdict("rebuild / one scan", f"{rebuild:.2f} s / {scan * 1000:.0f} ms = {rebuild / scan:.1f}x",
            rebuild / scan <= REBUILD_TARGET, f"<= {REBUILD_TARGET}x")

    # Queries from the index, cold process each, against the floor plus start-up.
    sh([ANIMA, "index", "rebuild"], on_env)
    sh([ANIMA, "index", "on"], on_env)
    queries = queries_of(terms)
    times = query_times(queries, absent, on_env, "anima recall (index)", floor)
    print(f"\n300 sessions: cold-process `anima recall TERMS` with the index on, median of {RUNS}, "
          "interleaved with the floor and the references")
    print_queries(queries, times, QUERY_TARGET, "recall with index / (floor + start-up)")
    print_warm(terms, on_env, "300 sessions")

    # A batch of questions in plain language, from the index.
    questions = corpus.questions(BATCH_QUESTIONS)
    batch, ref = batch_times(questions, on_env)
    took = statistics.median(batch)
    print(f"\n300 sessions: `anima recall --batch` of {len(questions)} questions with the index on, median of "
          f"{len(batch)}: {took / statistics.median(ref):.1f}x {CLICK} (e.g. {questions[0]!r})")
    verdict(f"recall --batch, {len(questions)} questions", f"{took:.2f} s", took < BATCH_TARGET_S,
            f"< {BATCH_TARGET_S:.0f} s")

    # Size.
    info = status(on_env)
    on_disk = sum(os.path.getsize(os.path.join(dirpath, n))
                  for dirpath, _, names in os.walk(os.path.join(on_root, "index")) for n in names)
    if info["indexed"] != len(paths) or info["stale"] or info["hot"]:
        problems.append(f"index status: {info['indexed']} indexed, {info['stale']} stale, {info['hot']} hot; "
                        f"want {len(paths)}, 0, 0")
    print(f"\n300 sessions: index size {info['size'] / 1e6:.1f} MB (status --json; every file under index/: "
          f"{on_disk / 1e6:.1f} MB), {info['size'] / raw:.2f}x the JSONL ({raw / 1e6:.1f} MB)")
    verdict("index size / turn text", f"{info['size'] / 1e6:.1f} / {text / 1e6:.1f} MB = {info['size'] / text:.2f}x",
            info["size"] <= SIZE_TARGET * text, f"<= {SIZE_TARGET}x")

    # Same results with the index on and off (one home, so the paths printed are the same too).
    different = []
    hits = {}
    for q in queries:
        t = " ".join(q)
        on = sh([ANIMA, "recall", "--json", "--limit", "50", *q], on_env, check=False)
        sh([ANIMA, "index", "off"], on_env)
        off = sh([ANIMA, "recall", "--json", "--limit", "50", *q], on_env, check=False)
        sh([ANIMA, "index", "on"], on_env)
        hits[t] = len(on.stdout.splitlines())
        check_query(t, not set(q) <= absent, on, "anima recall --json (index on)")
        check_query(t, not set(q) <= absent, off, "anima recall --json (index off)")
        if (on.returncode, on.stdout) != (off.returncode, off.stdout) or on.stderr or off.stderr:
            different.append(t)
            problems.append(f"recall --json --limit 50 {t!r}: index on gives exit {on.returncode}, "
                            f"{len(on.stdout.splitlines())} lines; off gives exit {off.returncode}, "
                            f"{len(off.stdout.splitlines())} lines, not the same")
    print("  results (--limit 50): " + ", ".join(f"{t} {n}" for t, n in hits.items()))
    verdicts.append(not different)
    print(f"{'same results, index on and off':44} {len(queries) - len(different):>12}/{len(queries)} queries   "
          f"(target all) {'ok' if not different else 'WRONG'}")


# --- 3,000 sessions -----------------------------------------------------------------------------

def big(tmp: str, terms: list[str], absent: set[str], floor: str) -> None:
    import zstandard

    root, env = make_home(tmp, "big")
    sessions = os.path.join(root, "sessions")
    start = time.perf_counter()
    paths = corpus.make_corpus(sessions, sessions=BIG_SESSIONS, aged=True)
    plain = []
    for p in paths[::100]:  # every 100th session as plain .jsonl, for `index update` to append to
        with open(p, "rb") as f:
            data = zstandard.ZstdDecompressor().decompress(f.read())
        aged = os.stat(p).st_mtime_ns
        os.unlink(p)
        p = p[: -len(".zst")]
        with open(p, "wb") as f:
            f.write(data)
        os.utime(p, ns=(aged, aged))
        plain.append(p)
    made = time.perf_counter() - start
    zst = sum(os.path.getsize(p) for p in paths if os.path.exists(p))
    print(f"\n{BIG_SESSIONS} sessions: made in {made:.1f} s ({len(plain)} plain .jsonl, the rest "
          f"{zst / 1e6:.0f} MB zstd)")

    # Rebuild, under GNU time (largest process) while sampling the whole process tree.
    took, largest_kb, rss_kb, pss_kb, procs, code, err = rebuild_memory(env)
    if code != 0 or err:
        problems.append(f"anima index rebuild ({BIG_SESSIONS}): exit {code}: {err[:200]}")
    info = status(env)
    print(f"  rebuild {took:.1f} s (no target), index {info['size'] / 1e6:.0f} MB, {info['indexed']} sessions")
    print(f"  rebuild memory, sampled every 20 ms over up to {procs} processes: Rss sum {rss_kb / 1024:.0f} MB "
          "(pages shared after fork counted per process; no target)")
    verdict("rebuild largest process (GNU time %M)", f"{largest_kb / 1024:.0f} MB",
            largest_kb / 1024 < BIG_MEMORY_TARGET_MB, f"< {BIG_MEMORY_TARGET_MB} MB")
    verdict("rebuild process tree, Pss sum (sampled)", f"{pss_kb / 1024:.0f} MB",
            pss_kb / 1024 < BIG_MEMORY_TARGET_MB, f"< {BIG_MEMORY_TARGET_MB} MB")

    sh([ANIMA, "index", "on"], env)
    queries = queries_of(terms)
    times = query_times(queries, absent, env, f"anima recall (index, {BIG_SESSIONS})", floor)
    print(f"\n{BIG_SESSIONS} sessions: cold-process `anima recall TERMS` with the index on, median of {RUNS}, "
          "interleaved with the floor and the references")
    print_queries(queries, times, BIG_QUERY_TARGET, f"recall with index / (floor + start-up) ({BIG_SESSIONS})")
    print_warm(terms, env, f"{BIG_SESSIONS} sessions")

    # Append one turn to each of 10 plain sessions, then `anima index update`; three rounds.
    updates = []
    for r in range(3):
        marker = f"appendmark{r}"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for p in plain[:10]:
            with open(p, "a", encoding="utf-8") as f:
                f.write(json.dumps({"role": "user", "content": f"One more turn, {marker}, 再来一次。", "ts": stamp},
                                   ensure_ascii=False) + "\n")
        seconds, done = timed([ANIMA, "index", "update"], env)
        updates.append(seconds)
        if done.returncode != 0 or done.stderr:
            problems.append(f"anima index update: exit {done.returncode}: {done.stderr.decode()[:200]}")
        found = sh([ANIMA, "recall", "--json", "--limit", "50", marker], env, check=False)
        # (the same words in ten sessions: one result, the other nine places in its `also`)
        places = sum(1 + len(json.loads(line)["also"]) for line in found.stdout.splitlines())
        if places != 10 or found.stderr:
            problems.append(f"after update {r + 1}: recall {marker} finds it in {places} places "
                            f"(want 10), said {found.stderr.decode()[:200]!r}")
    info = status(env)
    if info["stale"] or info["missing"]:
        problems.append(f"after the updates: {info['stale']} stale, {info['missing']} gone; want none")
    print(f"\n{BIG_SESSIONS} sessions: `anima index update` after appending one turn to each of 10 plain "
          f"sessions: {', '.join(f'{s * 1000:.0f}' for s in updates)} ms")
    update = statistics.median(updates)
    verdict("index update, 10 sessions grown (median of 3)", f"{update * 1000:.0f} ms",
            update < UPDATE_TARGET_S, f"< {UPDATE_TARGET_S:.0f} s")


def rebuild_memory(env: dict):
    """(seconds, largest process kB by GNU time, peak Rss sum kB, peak Pss sum kB, most processes
    at once, exit code, stderr) of one `anima index rebuild`."""
    with tempfile.NamedTemporaryFile("r") as report, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([TIME, "-f", "%M", "-o", report.name, ANIMA, "index", "rebuild"], env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        peak = {"rss": 0, "pss": 0, "procs": 0}
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                rss = pss = 0
                tree = _descendants(proc.pid)
                for pid in tree:
                    r, p = _rollup(pid)
                    rss += r
                    pss += p
                peak["rss"], peak["pss"] = max(peak["rss"], rss), max(peak["pss"], pss)
                peak["procs"] = max(peak["procs"], len(tree))
                stop.wait(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        code = proc.wait()
        took = time.perf_counter() - start
        stop.set()
        sampler.join()
        err.seek(0)
        largest = int(report.read().split()[-1])
        return took, largest, peak["rss"], peak["pss"], peak["procs"], code, err.read().decode(errors="replace")


def _descendants(pid: int) -> list[int]:
    """The processes under `pid` (GNU time's), not itself: the rebuild and its workers."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            kids = []
        out += kids
        todo += kids
    return out


def _rollup(pid: int) -> tuple[int, int]:
    """(Rss, Pss) of a process in kB; zeros if it is gone."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return rss, pss


def _pad(text: str, width: int) -> str:
    """Left-align in `width` columns, counting a CJK character as two."""
    cols = sum(2 if ord(c) > 0x2E80 else 1 for c in text)
    return text + " " * max(0, width - cols)


def main() -> int:
    if not os.access(TIME, os.X_OK):
        print(f"bench/index.py: {TIME} (GNU time) is missing; `make bench` installs it", file=sys.stderr)
        return 2
    import compileall

    import anima  # the package the anima command runs: this checkout, or what PYTHONPATH puts first

    package = os.path.dirname(os.path.abspath(anima.__file__))
    compileall.compile_dir(package, quiet=1)
    print(f"anima from {package}")
    started = time.perf_counter()
    terms = corpus.pick_terms(corpus.SEED)
    absent = corpus.absent(terms)
    with tempfile.TemporaryDirectory() as tmp:
        floor = os.path.join(tmp, "floor.py")
        with open(floor, "w", encoding="utf-8") as f:
            f.write(FLOOR)
        small(tmp, terms, absent, floor)
        if QUICK:
            print(f"\n{BIG_SESSIONS} sessions: skipped (BENCH_QUICK)")
        else:
            big(tmp, terms, absent, floor)
    for p in dict.fromkeys(problems):
        print(f"WRONG: {p}")
    print(f"\n({time.perf_counter() - started:.0f} s)")
    return 0 if all(verdicts) and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
