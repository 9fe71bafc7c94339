"""Real processes racing each other over the same files (SPEC §10: nothing lost, nothing torn).

The writers are real subprocesses of the installed `anima` (or of `python -c` using anima.infra.fs),
started together; nothing is mocked. Afterwards the files on disk are read back and every
written version is accounted for.
"""

import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time

from conftest import wchan

WRITERS = 20


def bodies(n: int) -> list[str]:
    """n distinct multi-line bodies, long enough that a torn write could not pass for one."""
    return [
        f"I am writer {i:02d}.\n\n" + "\n".join(f"{i:02d}/{line:02d} 我在写第 {line} 行。" + " lorem ipsum" * 6
                                               for line in range(14))
        for i in range(n)
    ]


def race_self_set(anima_bin, texts: list[str]) -> list[subprocess.CompletedProcess]:
    """Run `anima self set self_model` once per text, all at the same moment.

    Every process is started with an open, empty stdin pipe, so each gets through its startup
    and then blocks reading stdin; once all are waiting there (or after a few seconds), every
    body is written and every pipe closed in a tight loop, releasing them together.
    """
    procs = [subprocess.Popen([anima_bin, "self", "set", "self_model"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in texts]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not all("pipe" in wchan(p.pid) for p in procs):
        time.sleep(0.02)
    for proc, text in zip(procs, texts, strict=True):
        proc.stdin.write((text + "\n").encode("utf-8"))
    for proc in procs:
        proc.stdin.close()
        proc.stdin = None  # communicate() below must not touch it again
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        results.append(subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), err.decode()))
    return results


def anima(anima_bin, *args):
    proc = subprocess.run([anima_bin, *args], check=False, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def tmp_files(root) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, n), root)
                  for d, _, names in os.walk(root) for n in names if n.endswith(".tmp"))


def check_history(anima_bin, home, expected_bodies: set[str], revisions: int):
    current = json.loads(anima(anima_bin, "self", "get", "self_model", "--json"))
    assert current["key"] == "self_model"
    assert current["body"] in expected_bodies

    log = anima(anima_bin, "self", "log", "self_model")
    assert len(log.splitlines()) == revisions
    assert [int(line.split("\t")[0]) for line in log.splitlines()] == list(range(revisions, 0, -1))

    revs = [json.loads(line) for line in anima(anima_bin, "self", "log", "self_model", "--json").splitlines()]
    assert len(revs) == revisions
    seen = [r["body"] for r in revs] + [current["body"]]
    assert len(seen) == len(set(seen)), "a version was stored twice"
    assert set(seen) == expected_bodies, "a version was lost or torn"

    history = home / "self" / "blocks" / ".history" / "self_model"
    assert sorted(os.listdir(history)) == sorted(f"{n}.md" for n in range(1, revisions + 1))
    assert tmp_files(home) == []


def test_twenty_writers_on_a_fresh_home(anima_bin, home):
    texts = bodies(WRITERS)
    results = race_self_set(anima_bin, texts)
    assert [(r.returncode, r.stdout, r.stderr) for r in results] == [(0, "", "")] * WRITERS
    check_history(anima_bin, home, set(texts), WRITERS - 1)


def test_twenty_writers_on_an_initialised_home(anima_bin, home):
    anima(anima_bin, "init", "--lang", "en")
    starter = json.loads(anima(anima_bin, "self", "get", "self_model", "--json"))["body"]
    texts = bodies(WRITERS)
    assert starter not in texts
    results = race_self_set(anima_bin, texts)
    assert [(r.returncode, r.stdout, r.stderr) for r in results] == [(0, "", "")] * WRITERS
    check_history(anima_bin, home, set(texts) | {starter}, WRITERS)
    first = json.loads(anima(anima_bin, "self", "log", "self_model", "--json").splitlines()[-1])
    assert first["rev"] == 1 and first["body"] == starter  # the oldest revision is what init wrote


SIZE = 200 * 1024

REWRITER = textwrap.dedent("""\
    import sys
    from anima.infra import fs

    path, size = sys.argv[1], int(sys.argv[2])
    versions = [b"b" * size, b"a" * size]
    sys.stdout.write("ready\\n")
    sys.stdout.flush()
    n = 0
    while True:
        fs.atomic_write(path, versions[n % 2])
        n += 1
""")


def test_kill_9_during_atomic_write_leaves_a_whole_version(tmp_path):
    target = tmp_path / "state.md"
    target.write_bytes(b"a" * SIZE)
    rng = random.Random(os.getpid())
    seen = []
    for _ in range(30):
        child = subprocess.Popen([sys.executable, "-c", REWRITER, str(target), str(SIZE)],
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline() == "ready\n"
        time.sleep(rng.uniform(0, 0.04))
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=10) == -signal.SIGKILL
        child.stdout.close()
        data = target.read_bytes()
        assert len(data) == SIZE, f"torn file: {len(data)} bytes"
        assert data in (b"a" * SIZE, b"b" * SIZE), "a file mixing two versions"
        seen.append(data[:1])
    # The kills did land in the middle of the rewriting, not only before it began.
    assert set(seen) == {b"a", b"b"}
    # Whatever temp files the kills left behind are hidden ones beside the target, never the target.
    assert all(name.startswith(".state.md.") for name in os.listdir(tmp_path) if name != "state.md")


APPENDER = textwrap.dedent("""\
    import sys
    from anima.infra import fs

    path, writer, count, width = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    for i in range(count):
        fs.append(path, f"{writer:02d} {i:04d} " + chr(ord("a") + writer) * width + "\\n")
""")


def test_concurrent_appends_never_interleave(tmp_path):
    path = tmp_path / "log" / "events.log"
    writers, count, width = 8, 200, 3000  # each line ~3 KB, well over PIPE_BUF (4096 is not promised)
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, str(path), str(w), str(count), str(width)])
             for w in range(writers)]
    assert [p.wait(timeout=60) for p in procs] == [0] * writers

    data = path.read_bytes()
    assert data.endswith(b"\n")
    lines = data.decode("ascii").split("\n")[:-1]
    assert len(lines) == writers * count
    shape = re.compile(r"^(\d\d) (\d{4}) ([a-h])\3{" + str(width - 1) + "}$")
    seen = set()
    for n, line in enumerate(lines):
        m = shape.match(line)
        assert m, f"line {n + 1} is torn or interleaved: {line[:40]!r}...({len(line)} chars)"
        writer, i = int(m.group(1)), int(m.group(2))
        assert m.group(3) == chr(ord("a") + writer)
        seen.add((writer, i))
    assert seen == {(w, i) for w in range(writers) for i in range(count)}
    # Each writer's own lines stay in the order it wrote them.
    for w in range(writers):
        order = [int(line[3:7]) for line in lines if line.startswith(f"{w:02d} ")]
        assert order == list(range(count))
