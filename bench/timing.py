"""Whole-process timing shared by the start-up benches: interleaved runs, medians, ratios."""

import statistics
import subprocess
import time


def interleaved(cases: dict, runs: int, between=None) -> dict[str, list[float]]:
    """Seconds of each run of each case {name: (argv, env)}, the cases taken in turn in every
    round so that the machine's drift hits them alike; `between(i)` before round i."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for i in range(runs):
        if between:
            between(i)
        for name, (argv, env) in cases.items():
            start = time.perf_counter()
            subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - start)
    return times


def table(times: dict[str, list[float]], reference: str, targets: dict[str, float], width: int) -> tuple[list, bool]:
    """One line a case: its median, its ratio to `reference`'s, and against its target when it
    has one ("no target here" otherwise); and whether a target was missed."""
    ref = statistics.median(times[reference])
    lines, failed = [], False
    for name, samples in times.items():
        median = statistics.median(samples)
        line = f"{name:{width}} {median * 1000:7.1f} ms"
        if name == reference:
            lines.append(line + "   reference")
            continue
        line += f"   {median / ref:4.2f}x reference"
        if name in targets:
            ok = median / ref <= targets[name]
            failed |= not ok
            line += f" (target <= {targets[name]}x) {'ok' if ok else 'OVER'}"
        else:
            line += " (no target here)"
        lines.append(line)
    return lines, failed
