"""Speed of `anima consolidate` (issue 7), rules backend: a day of 1,000 stream entries.

The day: 500 messages from four people (said, preprocessed and internalized by anima), then
500 thoughts of hers (written in one helper process), half of the day already rolled into the
archive by `anima stream roll`. Measured: one cold `anima consolidate` process, and one
`anima consolidate --dry-run`, each the median of BENCH_RUNS runs on fresh copies of that
home. No target: the figure is reported (a nightly job).
"""

import os
import shutil
import statistics
import sys
import tempfile
import time

from homes import ANIMA, said, sh

RUNS = int(os.environ.get("BENCH_RUNS", "5"))
N = 500


def a_day(home: str) -> None:
    env = said(home, N, ANIMA_NOW="2026-11-30T09:00:00Z")
    sh([ANIMA, "internalize"], env)
    sh([ANIMA, "stream", "roll", "--force"], env)
    sh([sys.executable, "-c", f"""
from anima.infra.home import Home
from anima.stream.now import Stream
s = Stream(Home({home!r}))
for k in range({N}):
    s.append(f"Thought {{k}}: I want to answer Alice warmly. I decide to note: I counted {{k}}.", "think",
             at=1796029200 + 60 * k)
"""], env)


def timed(home: str, tmp: str, i: int, *args: str) -> float:
    copy = os.path.join(tmp, f"run{i}")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(home, copy, symlinks=True)
    env = {**os.environ, "ANIMA_HOME": copy, "ANIMA_NOW": "2026-12-01T04:00:00Z"}
    start = time.perf_counter()
    sh([ANIMA, "consolidate", *args], env)
    return time.perf_counter() - start


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        home = os.path.join(tmp, "day")
        a_day(home)
        real = statistics.median(timed(home, tmp, i) for i in range(RUNS))
        dry = statistics.median(timed(home, tmp, i, "--dry-run") for i in range(RUNS))
        entries = sum(1 for line in open(os.path.join(home, "pipeline", "stream.jsonl")) if '"lines"' in line)
    print(f"consolidate, a day of {entries} entries: {real * 1000:.0f} ms (median of {RUNS})")
    print(f"consolidate --dry-run, the same day: {dry * 1000:.0f} ms (median of {RUNS})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
