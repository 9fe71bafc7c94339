"""Speed of the hot commands, as ratios against `python -c "import click"` in the same run.

The machine is shared and noisy: every figure is a median of interleaved runs, and only the
ratios are meant to be compared across runs. Targets (issue 2): `anima prompt` with a warm
cache at most 1.5x, `anima --help` at most 2x.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = int(os.environ.get("BENCH_RUNS", "20"))
BIN = os.path.dirname(sys.executable)
ANIMA = os.path.join(BIN, "anima")


def age(root: str) -> None:
    past = time.time() - 3600
    for dirpath, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(dirpath, name), (past, past))


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "ANIMA_HOME": os.path.join(tmp, "home")}
        project = os.path.join(tmp, "project")
        os.makedirs(project)
        with open(os.path.join(project, "AGENTS.md"), "w") as f:
            f.write("# Project\n\nRun the tests before every commit.\n" * 20)
        subprocess.run([ANIMA, "init", "--lang", "en"], env=env, check=True, capture_output=True)
        age(tmp)
        warm = subprocess.run([ANIMA, "prompt", "--cwd", project], env=env, check=True, capture_output=True)
        assert warm.stdout, "anima prompt printed nothing"

        cases = {
            'python -c "import click"': [sys.executable, "-c", "import click"],
            "anima prompt (warm cache)": [ANIMA, "prompt", "--cwd", project],
            "anima --help": [ANIMA, "--help"],
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(RUNS):
            for name, argv in cases.items():  # interleaved, so drift hits every case alike
                start = time.perf_counter()
                subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
                times[name].append(time.perf_counter() - start)

    ref = statistics.median(times['python -c "import click"'])
    targets = {"anima prompt (warm cache)": 1.5, "anima --help": 2.0}
    print(f"median of {RUNS} runs each, interleaved")
    failed = False
    for name, samples in times.items():
        median = statistics.median(samples)
        line = f"{name:28} {median * 1000:7.1f} ms"
        if name in targets:
            ratio = median / ref
            ok = ratio <= targets[name]
            failed |= not ok
            line += f"   {ratio:4.2f}x reference (target <= {targets[name]}x) {'ok' if ok else 'OVER'}"
        else:
            line += "   reference"
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
