"""Start-up of the every-turn and every-minute commands, as a user installs anima.

Issue 15: `anima prompt` with a warm cache at most 2x `python -c pass`, both from a plain
(non-editable) install: `make install` into a temporary PREFIX, which makes a fresh venv and
runs `pip install .` in it, so that the bytecode and the scripts are the ones a user gets.
The target is for the venv's own `anima`, pip's console script; PREFIX/bin/anima, the script
`make install` writes, is shown beside it. The figures are medians of interleaved runs and
the ratios are to `python -c pass` of that venv in the same run; `anima tick` with nothing
due is held to the same 2x. The click path of the same prompt (ANIMA_FAST=0) and `python -c
"import re"` are shown without a target: re is the floor of any command that reads JSON (the json module imports it,
and pip's console script imports it first), about half of `python -c pass` again. Then where
the time of one warm prompt goes, by `python -X importtime`.
"""

import json
import os
import subprocess
import sys
import tempfile

import timing

RUNS = int(os.environ.get("BENCH_RUNS", "40"))
SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = 2.0

SESSION = [
    {"type": "session", "id": "s1", "delegated": False},
    {"role": "user", "content": "I drink green tea every morning.", "ts": "2026-11-01T10:00:00Z"},
    {"role": "user", "content": "My cat is called Miso.", "ts": "2026-11-01T10:00:00Z"},
    {"role": "user", "content": "I also drink oolong in the evening.", "ts": "2026-11-01T10:00:00Z"},
]


def install(prefix: str) -> str:
    """`make install PREFIX=prefix`; the bin/ of its private venv."""
    subprocess.run(["make", "-s", "-C", SOURCE, "install", f"PREFIX={prefix}"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return os.path.join(prefix, "lib", "anima", "bin")


def realistic(anima: str, env: dict) -> None:
    """Six blocks, five notes, approved facts with a promoted habit, a hand-written profile."""
    def run(*args):
        return subprocess.run([anima, *args], env=env, check=True, capture_output=True, text=True).stdout

    run("init", "--lang", "en")
    with open(os.path.join(env["ANIMA_HOME"], "sessions", "s1.jsonl"), "w") as f:
        f.write("".join(json.dumps(t) + "\n" for t in SESSION))
    for what in ("the tests before I change code", "the man page first", "the whole error message",
                 "the diff before I commit", "my notes again each morning"):
        run("note", "add", f"I read {what}.")
    ids = [run("stage", "--session", "s1", "--line", str(n), "--quote", SESSION[n - 1]["content"], "--tag", tag).strip()
           for n, tag in ((2, "tea"), (3, "pets"), (4, "tea"))]
    run("approve", *ids)
    run("habits", "promote", "tea", "--text", "Tea, always.", "--force")  # a person's: two facts stand for it here
    run("profile", "set", "Likes tea; has a cat called Miso.")


def age(root: str) -> None:
    r, w = os.pipe()  # the clock that stamps files (anima.infra.clock.files_now_ns)
    past = os.fstat(r).st_mtime - 3600
    os.close(r)
    os.close(w)
    for dirpath, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(dirpath, name), (past, past))


def importtime(python: str, argv: list, env: dict) -> dict:
    """Milliseconds of the top-level imports of one run, grouped: the console script's `re`,
    anima's own modules (with json and what they import), click and the rest."""
    proc = subprocess.run([python, "-X", "importtime", *argv], env=env, capture_output=True, text=True, check=True)
    groups = {"re": 0, "anima": 0, "click": 0, "other": 0}
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        if name.startswith("  ") or not cumulative.strip().isdigit():
            continue  # an import made inside another: counted in its parent
        name = name.strip()
        group = name if name in ("re", "click") else "anima" if name.startswith(("anima", "json")) else "other"
        groups[group] += int(cumulative) / 1000
    return groups


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "prefix")
        bin_dir = install(prefix)
        python, anima = os.path.join(bin_dir, "python"), os.path.join(bin_dir, "anima")
        installed = os.path.join(prefix, "bin", "anima")
        home, project = os.path.join(tmp, "home"), os.path.join(tmp, "project")
        os.makedirs(project)
        with open(os.path.join(project, "AGENTS.md"), "w") as f:
            f.write("# Project\n\nRun the tests before every commit.\n" * 20)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANIMA_", "PYTHON"))}
        env.update(ANIMA_HOME=home, LANG="C.UTF-8")
        realistic(anima, env)
        tick_home = os.path.join(tmp, "tick-home")
        tick_env = {**env, "ANIMA_HOME": tick_home, "ANIMA_NOW": "2026-11-30T21:05:30Z"}
        subprocess.run([anima, "init", "--lang", "en"], env=tick_env, check=True, capture_output=True)
        subprocess.run([anima, "tick"], env=tick_env, check=True, capture_output=True)  # fires what is due
        age(tmp)
        prompt = [anima, "prompt", "--cwd", project]
        cold = subprocess.run(prompt, env=env, check=True, capture_output=True)
        warm = subprocess.run(prompt, env=env, check=True, capture_output=True)
        slow = subprocess.run(prompt, env={**env, "ANIMA_FAST": "0"}, check=True, capture_output=True)
        assert warm.stdout == cold.stdout == slow.stdout and b"## Self-notes" in warm.stdout, "not the same prompt"
        assert warm.stderr == slow.stderr == b"", warm.stderr

        cases = {
            'python -c pass': ([python, "-c", "pass"], env),
            'python -c "import re"': ([python, "-c", "import re"], env),
            "anima prompt (warm cache)": (prompt, env),
            "  the same, make install's": ([installed, *prompt[1:]], env),
            "anima prompt --stats (warm)": ([*prompt, "--stats", "--sections", "notes,profile,habits"], env),
            "anima prompt, ANIMA_FAST=0": (prompt, {**env, "ANIMA_FAST": "0"}),
            "anima tick (nothing due)": ([anima, "tick"], tick_env),
        }
        times = timing.interleaved(cases, RUNS)
        groups = importtime(python, prompt, env)

    print(f"make install into a temporary PREFIX (a fresh venv, pip install .); median of {RUNS} runs each, "
          "interleaved")
    targets = {"anima prompt (warm cache)": TARGET, "anima tick (nothing due)": TARGET}  # the two
    lines, failed = timing.table(times, "python -c pass", targets, 31)
    print("\n".join(lines))
    print("imports of one warm prompt (python -X importtime, ms): "
          + ", ".join(f"{k} {v:.1f}" for k, v in groups.items()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
