"""The every-minute heartbeat: `anima tick` with nothing due, against `python -c pass`.

Target (issue 15): the check "is anything due?" (anima.stream.heartbeat.due, what a
click-free entry point runs before anything else) in a fresh interpreter at most 2x `python
-c pass`. Also shown, without a target: `anima tick` with nothing due through the console
script and click as it is wired today (bench/run.py holds it to 1.5x `python -c "import
click"`), and a tick with one event waiting (the whole loop: the event lived, the heartbeat
written), for scale.
"""

import calendar
import os
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = int(os.environ.get("BENCH_RUNS", "20"))
ANIMA = os.path.join(os.path.dirname(sys.executable), "anima")
AT = "2026-06-01T10:05:00Z"  # between the hour and the nudge's quarter: nothing due
TARGET = 2.0


def main() -> int:
    import compileall  # an installed package has its bytecode; an editable checkout may not

    compileall.compile_dir(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "anima"),
                           quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "home")
        busy_root = os.path.join(tmp, "busy")
        env = {**os.environ, "ANIMA_HOME": root, "ANIMA_NOW": AT, "TZ": "UTC"}
        busy = {**env, "ANIMA_HOME": busy_root}
        for e in (env, busy):
            subprocess.run([ANIMA, "init", "--lang", "en"], env=e, check=True, capture_output=True)
            subprocess.run([ANIMA, "tick"], env=e, check=True, capture_output=True)  # what is due now fires
        now = calendar.timegm(time.strptime(AT, "%Y-%m-%dT%H:%M:%SZ"))
        check = f"from anima.stream.heartbeat import due\nassert not due({root!r}, {now})"
        cases = {
            "python -c pass": ([sys.executable, "-c", "pass"], env),
            "due(), nothing due": ([sys.executable, "-c", check], env),
            "anima tick, nothing due": ([ANIMA, "tick"], env),
            "anima tick, one event": ([ANIMA, "tick"], busy),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for i in range(RUNS):
            subprocess.run([ANIMA, "say", f"hello {i}", "--speaker", "bench"], env=busy, check=True,
                           capture_output=True)
            for name, (argv, e) in cases.items():  # interleaved, so drift hits every case alike
                start = time.perf_counter()
                subprocess.run(argv, env=e, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                times[name].append(time.perf_counter() - start)
        with open(os.path.join(busy_root, "self", "stream", "now.md"), encoding="utf-8") as f:
            lived = f.read().count("bench said")
        assert lived == RUNS, f"the busy ticks lived {lived} of {RUNS} events"

    ref = statistics.median(times["python -c pass"])
    print(f"median of {RUNS} runs each, interleaved")
    failed = False
    for name, samples in times.items():
        median = statistics.median(samples)
        line = f"{name:26} {median * 1000:7.1f} ms"
        if name == "python -c pass":
            line += "   reference"
        else:
            ratio = median / ref
            line += f"   {ratio:4.2f}x reference"
            if name == "due(), nothing due":
                ok = ratio <= TARGET
                failed |= not ok
                line += f" (target <= {TARGET}x) {'ok' if ok else 'OVER'}"
            else:
                line += " (no target here)"
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
