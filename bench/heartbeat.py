"""The every-minute heartbeat: `anima tick` with nothing due, against `python -c pass`.

Target (issue 15): the check "is anything due?" (anima.stream.heartbeat.due, what the
click-free entry point runs before anything else) in a fresh interpreter at most 2x `python
-c pass`. Also shown, without a target: `anima tick` with nothing due (the fast path of
anima.__main__; bench/startup.py holds it to 2x from a plain install), and a tick with one
event waiting (the whole loop: the event lived, the heartbeat written), for scale.
"""

import calendar
import os
import subprocess
import sys
import tempfile
import time

import timing

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
        times = timing.interleaved(cases, RUNS, lambda i: subprocess.run(
            [ANIMA, "say", f"hello {i}", "--speaker", "bench"], env=busy, check=True, capture_output=True))
        with open(os.path.join(busy_root, "self", "stream", "now.md"), encoding="utf-8") as f:
            lived = f.read().count("bench said")
        assert lived == RUNS, f"the busy ticks lived {lived} of {RUNS} events"

    print(f"median of {RUNS} runs each, interleaved")
    lines, failed = timing.table(times, "python -c pass", {"due(), nothing due": TARGET}, 26)
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
