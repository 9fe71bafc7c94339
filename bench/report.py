"""Run every bench script in turn and write what each printed into bench/README.md.

`make bench` calls this.  Each script measures and judges itself (exit non-zero when it misses a
target or fails); this only runs them one after another, as the Makefile did, shows their output
as it comes, and keeps it with the date and the machine.  The exit status is 1 when any script
failed, and bench/README.md is written all the same, saying which.  Given some scripts, it runs
only those and keeps the other sections of bench/README.md as they were, each with its own date.

    python bench/report.py [--out FILE] [SCRIPT...]
"""

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = ["run.py", "startup.py", "heartbeat.py", "recall.py", "index.py", "recall_quality.py", "stream.py",
           "stream_append.py", "privacy.py", "crash.py"]

PREFACE = """\
# Benchmarks

Written by `make bench` (`bench/report.py`), which runs each script below in turn and keeps
what it printed. Do not edit by hand: run `make bench` again.

How to read it. The machine these run on is shared and noisy, so a time in milliseconds says
little on its own. Each script therefore measures a reference in the same run, interleaved with
anima (`python -c "import click"` in the same venv for a process's start-up, `rg -z -F -c` for a
scan of the transcripts, a plain BM25 for retrieval quality), and judges the *ratio* to it: a
ratio of 1.3x means 1.3 times the reference's median. Compare ratios across runs, not times.
A script exits non-zero when a figure misses its target (the targets are in the issues and in
each script's docstring); `make bench` then fails, and the heading below says so.
bench/crash.py measures no speed: it kills every writing command with SIGKILL mid-work and
counts what the next run of the loop lost, repeated or left unreported (target 0 of each).
Figures of earlier runs, once written by hand in the man pages and README.md, are in
[HISTORY.md](HISTORY.md).
"""


def machine() -> str:
    return (f"{os.cpu_count()} cores (nproc {len(os.sched_getaffinity(0))}), "
            f"Python {platform.python_version()}, {platform.system()} {platform.machine()}")


def run(script: str) -> tuple[int, str]:
    """Run one script with this interpreter; echo its output to stderr as it comes; return both."""
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, script)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, encoding="utf-8", errors="replace")
    lines = []
    for line in proc.stdout:
        sys.stderr.write(line)
        lines.append(line)
    return proc.wait(), "".join(lines)


def section(script: str, status: int, text: str, when: str, where: str) -> str:
    verdict = "passed" if status == 0 else f"FAILED (exit {status})"
    return "\n".join([f"## bench/{script}: {verdict}", "", f"Run of {when} on {where}.", "", "```",
                      text.rstrip("\n"), "```", ""])


def kept(old: str) -> dict[str, str]:
    """The sections of an earlier bench/README.md by script, each with its run's date (a report
    that dated them all at its top gives each that date)."""
    top = re.search(r"^Run of .*\.$", old.split("\n## bench/", 1)[0], re.M)
    out = {}
    for part in old.split("\n## bench/")[1:]:
        head, _, body = part.partition("\n")
        body = body.strip("\n")
        if top and not body.startswith("Run of "):
            body = top.group() + "\n\n" + body
        out[head.split(":", 1)[0]] = f"## bench/{head}\n\n{body}\n"
    return out


def report(results: list[tuple[str, int, str]], when: str, where: str, old: str = "") -> str:
    """bench/README.md: the scripts run now, and the sections of `old` for those not run."""
    sections = kept(old)
    sections.update({script: section(script, status, text, when, where) for script, status, text in results})
    order = SCRIPTS + sorted(set(sections) - set(SCRIPTS))
    return "\n".join([PREFACE] + [sections[s] for s in order if s in sections])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(HERE, "README.md"))
    parser.add_argument("scripts", nargs="*", default=SCRIPTS)
    args = parser.parse_args(argv)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    results = []
    for script in args.scripts:
        print(f"== bench/{script}", file=sys.stderr, flush=True)
        status, text = run(script)
        results.append((script, status, text))
    old = ""
    if set(args.scripts) != set(SCRIPTS) and os.path.exists(args.out):
        with open(args.out, encoding="utf-8") as f:
            old = f.read()
    with open(args.out + ".tmp", "w", encoding="utf-8") as f:
        f.write(report(results, when, machine(), old))
    os.replace(args.out + ".tmp", args.out)
    failed = [s for s, status, _ in results if status != 0]
    if failed:
        print(f"bench: failed: {' '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
