"""Speed of Pool A (issue 7), rules backend, as ratios against references in the same run.

- `anima internalize`, one process draining 1,000 events from message_queue: ms per event
  (target at most 5 ms);
- `anima externalize`, one process acting on 1,000 decisions of hers written after those
  1,000 narrated events (2,000 entries to read): ms per decision (target at most 5 ms);
- `anima stream -n 20`, a cold process, on a now.md of realistic size (200 lines, the default
  stream.max_lines, of entries as internalize and think write them), at most 1.5x
  `python -c "import click"`; and on a now.md nobody rolled for a long time (10 MB), no target.

The machine is shared and noisy: the per-event figures are the best of BENCH_DRAINS drains on
fresh homes, the ratios medians of interleaved runs.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

from homes import ANIMA, said, sh

RUNS = int(os.environ.get("BENCH_RUNS", "20"))
DRAINS = int(os.environ.get("BENCH_DRAINS", "3"))
N = 1000


def drains_ms_per_event(tmp: str, i: int) -> tuple[float, float]:
    """A fresh home: 1,000 messages said and preprocessed, then one `anima internalize`; then
    1,000 decisions thought (written in one helper process), then one `anima externalize`."""
    home = os.path.join(tmp, f"drain{i}")
    env = said(home, N)
    start = time.perf_counter()
    sh([ANIMA, "internalize"], env)
    internalize = (time.perf_counter() - start) * 1000 / N
    sh([sys.executable, "-c", f"""
from anima.infra import clock
from anima.infra.home import Home
from anima.stream.now import Stream
s = Stream(Home({home!r}))
for k in range({N}):
    s.append(f"Alice asked about the plan. I decide to write in my diary: plan number {{k}} is agreed.", "think",
             clock.now())
"""], env)
    start = time.perf_counter()
    sh([ANIMA, "externalize"], env)
    externalize = (time.perf_counter() - start) * 1000 / N
    queued = len([n for n in os.listdir(os.path.join(home, "pipeline", "action_queue")) if n.endswith(".json")])
    assert queued == N, f"externalize queued {queued} actions, not {N}"
    return internalize, externalize


def stream_home(tmp: str, name: str, target_bytes: int | None, lines: int | None) -> dict:
    """A home whose now.md holds internalize- and think-like entries: `lines` lines or
    `target_bytes` bytes (written directly: the size, not how it got there, is measured)."""
    home = os.path.join(tmp, name)
    env = {**os.environ, "ANIMA_HOME": home}
    sh([ANIMA, "init", "--lang", "en"], env, stderr=subprocess.DEVNULL)
    entries = []
    size = count = k = 0
    while (lines is None or count < lines) and (target_bytes is None or size < target_bytes):
        minute = k % 60
        if k % 3:
            body = (f"Alice said in chat: “Message {k}: shall we meet at {k % 24}:00 about the plan?”. "
                    "It is morning; I last heard from Alice 2 minutes ago.")
        else:
            body = f"I want to answer Alice warmly, but briefly. Number {k} of my thoughts."
        entry = f"## 2026-11-30 08:{minute:02d}\n\n{body}\n\n"
        entries.append(entry)
        size += len(entry.encode())
        count += 4
        k += 1
    with open(os.path.join(home, "self", "stream", "now.md"), "w") as f:
        f.write("".join(entries))
    return env


def main() -> int:
    import compileall

    # bytecode as an installed package has it (see bench/run.py)
    compileall.compile_dir(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "anima"),
                           quiet=1)
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        drains = [drains_ms_per_event(tmp, i) for i in range(DRAINS)]
        realistic = stream_home(tmp, "realistic", None, 200)
        big = stream_home(tmp, "big", 10 * 1024 * 1024, None)
        cases = {
            'python -c "import click"': ([sys.executable, "-c", "import click"], realistic),
            "anima stream -n 20 (200 lines)": ([ANIMA, "stream", "-n", "20"], realistic),
            "anima stream -n 20 (10 MB)": ([ANIMA, "stream", "-n", "20"], big),
        }
        out = subprocess.run(cases["anima stream -n 20 (200 lines)"][0], env=realistic, check=True,
                             capture_output=True).stdout
        assert out.count(b"\n") == 20, "anima stream -n 20 did not print 20 lines"
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(RUNS):
            for name, (argv, env) in cases.items():  # interleaved, so drift hits every case alike
                start = time.perf_counter()
                subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
                times[name].append(time.perf_counter() - start)

    print(f"best of {DRAINS} drains of {N}; median of {RUNS} runs each, interleaved")
    for label, value in (("internalize, per event", min(d[0] for d in drains)),
                         ("externalize, per decision", min(d[1] for d in drains))):
        ok = value <= 5
        failed |= not ok
        print(f"{label + ' (1,000)':34} {value:7.2f} ms   (target <= 5 ms) {'ok' if ok else 'OVER'}")
    ref = statistics.median(times['python -c "import click"'])
    for name, samples in times.items():
        median = statistics.median(samples)
        line = f"{name:34} {median * 1000:7.1f} ms"
        if name.endswith("(200 lines)"):
            ok = median / ref <= 1.5
            failed |= not ok
            line += f"   {median / ref:4.2f}x reference (target <= 1.5x) {'ok' if ok else 'OVER'}"
        elif name.startswith("anima"):
            line += f"   {median / ref:4.2f}x reference (no target)"
        else:
            line += "   reference"
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
