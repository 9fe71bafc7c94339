"""Speed and memory of `anima recall` by linear scan, against `rg -z -F -c TERM` in the same run.

Target (issue 4): over a generated corpus of 300 sessions x 100 turns, mixed Chinese and
English, zstd (bench/corpus.py), `anima recall TERM --limit 10` takes at most 1.0x the time
of `rg -z -F -c TERM` over the same files (median over the terms of the per-term ratio of
medians), and every anima process peaks under 150 MB of resident memory.

The corpus is the `sessions/` of a throwaway home (`anima init`), with the default config: at
most `recall.cache_sessions` (60) sessions are kept extracted under cache/sessions, which is
what users get. The very first query, on a cold cache, is timed on its own. Then, after one
untimed run of each command to warm the OS page cache, every term is run N times (BENCH_RUNS,
default 5), anima and rg interleaved, both under GNU time, which reports each process's own
peak RSS (see `run` for why not os.wait4 here). Correctness is checked on
every run: a present term is found by both (anima exits 0, rg prints counts), the absent
ones by neither (anima exits 1, rg prints nothing). Exit 1 if a target is missed or a check
fails.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corpus  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "5"))
BIN = os.path.dirname(sys.executable)
ANIMA = os.path.join(BIN, "anima")
TIME = "/usr/bin/time"  # GNU time, for each process's own peak RSS
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATIO_TARGET = 1.0
MEMORY_TARGET_MB = 150


class Run:
    def __init__(self, seconds: float, code: int, stdout: bytes, stderr: bytes, maxrss_kb: int):
        self.seconds, self.code, self.stdout, self.stderr, self.maxrss_kb = seconds, code, stdout, stderr, maxrss_kb


def run(argv: list[str], env: dict) -> Run:
    """Run one process to its end: wall time, exit code, output, and its own peak RSS.

    The peak comes from GNU time (`-f %M`), which forks the command itself. Reaping the command
    here with os.wait4 would not do: Linux carries the high-water RSS of the memory a process
    had before exec over into its ru_maxrss, and a child of this process starts as a copy of
    it, corpus terms and all (a 10 MB `python -c pass` read as 300 MB under a 300 MB parent).
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r") as rss:
        start = time.perf_counter()
        code = subprocess.call([TIME, "-f", "%M", "-o", rss.name, *argv], env=env, stdin=subprocess.DEVNULL,
                               stdout=out, stderr=err)
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        report = rss.read().split()  # "Command exited with non-zero status N" first, when it did
        return Run(seconds, code, out.read(), err.read(), int(report[-1]))


def check(term: str, present: bool, a: Run, r: Run) -> list[str]:
    """What is wrong with one anima run and one rg run for `term`."""
    problems = []
    if present:
        if a.code != 0 or not a.stdout:
            problems.append(f"anima recall {term!r}: exit {a.code}, {len(a.stdout.splitlines())} lines; want exit 0")
        if r.code != 0 or not r.stdout:
            problems.append(f"rg {term!r}: exit {r.code}, no counts (is zstd installed for rg -z?)")
    else:
        if a.code != 1 or a.stdout:
            problems.append(f"anima recall {term!r} (absent): exit {a.code}, {len(a.stdout.splitlines())} lines; "
                            "want exit 1 and nothing")
        if r.stdout:
            problems.append(f"rg {term!r} (absent): printed counts")
    if a.stderr:
        problems.append(f"anima recall {term!r} warned: {a.stderr.decode(errors='replace').strip()[:200]}")
    if r.code not in (0, 1):
        problems.append(f"rg {term!r}: exit {r.code}: {r.stderr.decode(errors='replace').strip()[:200]}")
    return problems


def main() -> int:
    rg = shutil.which("rg")
    if rg is None:
        print("bench/recall.py: rg (ripgrep) is not installed; `make bench` installs it", file=sys.stderr)
        return 2
    if not os.access(TIME, os.X_OK):
        print(f"bench/recall.py: {TIME} (GNU time) is missing; `make bench` installs it", file=sys.stderr)
        return 2
    if shutil.which("zstd") is None:
        print("bench/recall.py: zstd is not installed; rg -z needs it; `make bench` installs it", file=sys.stderr)
        return 2
    # An installed package has its bytecode compiled at install time (see bench/run.py).
    import compileall

    compileall.compile_dir(os.path.join(ROOT, "anima"), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "ANIMA_HOME": os.path.join(tmp, "home")}
        subprocess.run([ANIMA, "init", "--lang", "en"], env=env, check=True, capture_output=True)
        sessions = os.path.join(tmp, "home", "sessions")
        start = time.perf_counter()
        paths = corpus.make_corpus(sessions)
        made = time.perf_counter() - start
        terms = corpus.pick_terms(corpus.SEED)
        absent = corpus.absent(terms)
        jsonl_mb = sum(_jsonl_size(p) for p in paths) / 1e6
        zst_mb = sum(os.path.getsize(p) for p in paths) / 1e6
        print(f"corpus: {len(paths)} sessions, {jsonl_mb:.1f} MB JSONL, {zst_mb:.1f} MB zstd "
              f"(made in {made:.1f} s); default config (recall.cache_sessions 60)")

        anima = lambda t: [ANIMA, "recall", t, "--limit", "10"]  # noqa: E731
        grep = lambda t: [rg, "-z", "-F", "-c", t, *paths]  # noqa: E731
        problems: list[str] = []
        peaks: list[int] = []

        # The first query a user makes: nothing extracted yet (cache/sessions empty), then rg.
        cold_a = run(anima(terms[0]), env)
        cold_r = run(grep(terms[0]), env)
        problems += check(terms[0], terms[0] not in absent, cold_a, cold_r)
        peaks.append(cold_a.maxrss_kb)
        # Untimed warm-up of each command: the OS page cache holds the files and the package.
        for t in terms:
            peaks.append(run(anima(t), env).maxrss_kb)
            run(grep(t), env)

        times: dict[str, dict[str, list[float]]] = {t: {"anima": [], "rg": []} for t in terms}
        for _ in range(RUNS):
            for t in terms:  # interleaved, so drift hits every term and both commands alike
                a = run(anima(t), env)
                r = run(grep(t), env)
                problems += check(t, t not in absent, a, r)
                times[t]["anima"].append(a.seconds)
                times[t]["rg"].append(r.seconds)
                peaks.append(a.maxrss_kb)
        cached = len(os.listdir(os.path.join(tmp, "home", "cache", "sessions"))) \
            if os.path.isdir(os.path.join(tmp, "home", "cache", "sessions")) else 0

    print(f"median of {RUNS} runs each, anima and rg interleaved; ratio = anima / rg")
    print(f"{'term':16} {'anima ms':>9} {'rg ms':>8} {'ratio':>6}")
    ratios = []
    for t in terms:
        a, r = statistics.median(times[t]["anima"]), statistics.median(times[t]["rg"])
        ratios.append(a / r)
        note = "  (absent)" if t in absent else ""
        print(f"{_pad(t, 16)} {a * 1000:9.1f} {r * 1000:8.1f} {a / r:5.2f}x{note}")
    ratio = statistics.median(ratios)
    ratio_ok = ratio <= RATIO_TARGET
    print(f"{'first query, cold cache':28} anima {cold_a.seconds * 1000:7.1f} ms, rg {cold_r.seconds * 1000:7.1f} ms"
          f"   {cold_a.seconds / cold_r.seconds:4.2f}x (no target)")
    print(f"{'median ratio over terms':28} {ratio:4.2f}x rg (target <= {RATIO_TARGET}x) {'ok' if ratio_ok else 'OVER'}")
    peak_mb = max(peaks) / 1024
    memory_ok = peak_mb < MEMORY_TARGET_MB
    print(f"{'peak RSS of anima recall':28} {peak_mb:5.1f} MB over {len(peaks)} runs "
          f"(target < {MEMORY_TARGET_MB} MB) {'ok' if memory_ok else 'OVER'}")
    print(f"{'sessions left in the cache':28} {cached}")
    for p in dict.fromkeys(problems):  # each distinct problem once
        print(f"WRONG: {p}")
    return 0 if ratio_ok and memory_ok and not problems else 1


def _jsonl_size(path: str) -> int:
    import zstandard

    with open(path, "rb") as f, zstandard.ZstdDecompressor().stream_reader(f) as reader:
        return sum(len(chunk) for chunk in iter(lambda: reader.read(1 << 20), b""))


def _pad(text: str, width: int) -> str:
    """Left-align in `width` columns, counting a CJK character as two."""
    cols = sum(2 if ord(c) > 0x2E80 else 1 for c in text)
    return text + " " * max(0, width - cols)


if __name__ == "__main__":
    sys.exit(main())
