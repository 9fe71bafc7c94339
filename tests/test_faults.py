"""Faults of the environment, through the installed `anima` in real processes: a read-only
home, a full disk, a home that cannot be. A read command works (caches are best effort); a
write command ends with 73 (cannot write) or 74 (the system failed the write), one line
naming the file, and leaves nothing half-written; nothing ends as a bug (70)."""

import os
import re
import subprocess

import pytest

from conftest import snapshot, unwoken


def anima(anima_bin, *args, input=None, preexec=None):
    return subprocess.run([anima_bin, *args], input=input, capture_output=True, text=True, timeout=120,
                          preexec_fn=preexec)


def lived_in(anima_bin):
    """A home with something in each store: a note, a turn, a fact, a block, an event, a thought."""
    for args, stdin in ((("init", "--lang", "en"), None),
                        (("note", "add", "I read the file before I answer."), None),
                        (("session", "append", "--session", "s1", "--role", "user", "Green tea keeps me awake."), None),
                        (("self", "set", "direction"), "Long-term: be useful.\n"),
                        (("say", "Are you coming?", "--speaker", "Alice"), None),
                        (("think", "I wonder what to answer."), None),
                        (("preprocess",), None)):  # the event waits in message_queue, not lived
        r = anima(anima_bin, *args, input=stdin)
        assert r.returncode == 0, (args, r.stderr)
    staged = subprocess.run(f"'{anima_bin}' recall tea --json | '{anima_bin}' stage --tag drink", shell=True,
                            capture_output=True, text=True)
    assert staged.returncode == 0, staged.stderr


READS = [("prompt",), ("note", "list"), ("note", "status"), ("recall", "tea"), ("doctor",), ("self", "get"),
         ("facts",), ("stream",), ("queue", "ls", "pending"), ("config", "get", "notes.max_chars"),
         ("self", "log", "direction"), ("tools",), ("why",)]

WRITES = [  # (argv, stdin)
    (("note", "add", "I like to check twice before I answer."), None),
    (("think", "我想" * 800), None),  # 4,800 bytes: more than the room left in the last block of now.md
    (("say", "hello", "--speaker", "Bob"), None),
    (("self", "set", "direction"), "Long-term: be kind.\n"),
    (("config", "set", "notes.max_chars", "1500"), None),
    (("session", "append", "--session", "s2", "--role", "user", "Hi there."), None),
    (("tick",), None),
]


def stale_caches(home):
    """Every cache entry out of date: the next read wants to write them all again."""
    with open(home / "config.toml", "a") as f:
        f.write("\n# touched\n")
    with open(home / "sessions" / "s1.jsonl", "rb+") as f:
        os.utime(f.fileno())


def test_read_commands_work_on_a_read_only_home(anima_bin, home, read_only):
    lived_in(anima_bin)
    anima(anima_bin, "prompt")  # the caches filled once ...
    expected = {argv: anima(anima_bin, *argv) for argv in READS}
    stale_caches(home)  # ... and then all stale, on a home that cannot take the new ones
    expected = {argv: anima(anima_bin, *argv) for argv in READS}
    stale_caches(home)
    ro = read_only(home)
    for argv in READS:
        r = anima(anima_bin, *argv)
        assert (r.returncode, r.stdout) == (expected[argv].returncode, expected[argv].stdout), (argv, ro.how, r.stderr)
        assert "internal error" not in r.stderr, argv
    assert expected[("prompt",)].returncode == 0


def test_prompt_on_a_read_only_home_says_that_the_injection_is_not_recorded(anima_bin, home, read_only):
    lived_in(anima_bin)
    ro = read_only(home)
    r = anima(anima_bin, "prompt")
    assert r.returncode == 0 and "## Self-notes" in r.stdout, ro.how
    why = "Read-only file system" if ro.how.startswith("a read-only") else "Permission denied"
    assert r.stderr == f"anima: this injection is not recorded: {home}/notes/.notes.md.lock: {why}\n"
    assert anima(anima_bin, "prompt").stdout == r.stdout


@pytest.mark.parametrize("argv, stdin", WRITES + [(("internalize",), None), (("index", "rebuild"), None)])
def test_a_write_on_a_read_only_home_is_73_naming_the_file(anima_bin, home, read_only, argv, stdin):
    lived_in(anima_bin)
    before = snapshot(home)
    ro = read_only(home)
    r = anima(anima_bin, *argv, input=stdin)
    assert r.returncode == 73, (ro.how, r.stderr)
    assert r.stdout == ""
    assert r.stderr.startswith(f"anima: {home}/") and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.endswith((": Read-only file system\n", ": Permission denied\n")), r.stderr
    ro.undo()
    assert snapshot(home) == before


def leftovers(root) -> list:
    """Temp files and half-built files anywhere under `root`."""
    return sorted(os.path.join(d, n) for d, _, names in os.walk(root) for n in names
                  if n.endswith(".tmp") or ".build" in n)


@pytest.mark.parametrize("argv, stdin", WRITES + [(("index", "rebuild"), None)])
def test_a_write_on_a_full_disk_is_74_naming_the_file_and_leaves_nothing(anima_bin, full_disk, argv, stdin):
    home = full_disk.home
    lived_in(anima_bin)
    before = snapshot(home)
    full_disk.fill()
    r = anima(anima_bin, *argv, input=stdin, preexec=full_disk.preexec)
    why = "No space left on device" if full_disk.mounted else "File too large"
    assert (r.returncode, r.stdout) == (74, ""), (full_disk.how, r.stderr)
    # the heartbeat names its step first ("tick: rhythm: ..."), and ends there
    said = re.sub(r"^anima: tick: [a-z]+: ", "anima: ", r.stderr) if argv == ("tick",) else r.stderr
    assert said.startswith(f"anima: {home}/") and said.endswith(f": {why}\n"), r.stderr
    assert r.stderr.count("\n") == 1
    assert leftovers(home) == []
    after = snapshot(home)
    # lock files (empty, hidden, never data) may be new; nothing else is
    assert {k: v for k, v in after.items() if not k.endswith(".lock")} == \
        {k: v for k, v in before.items() if not k.endswith(".lock")}


def test_a_line_the_disk_fills_under_is_cut_back_whole(anima_bin, full_disk):
    """An append that got half its line out before the disk filled leaves the file as it was:
    no torn line for the next reader."""
    home = full_disk.home
    lived_in(anima_bin)
    transcript = os.path.join(home, "sessions", "s1.jsonl")
    with open(transcript, "rb") as f:
        before = f.read()
    full_disk.fill()
    if not full_disk.mounted:
        full_disk.limit = len(before) + 100  # room for part of the line, not all of it
    r = anima(anima_bin, "session", "append", "--session", "s1", "--role", "user", "tea " * 4000,
              preexec=full_disk.preexec)
    assert r.returncode == 74, (full_disk.how, r.stderr)
    with open(transcript, "rb") as f:
        assert f.read() == before


@pytest.mark.parametrize("kind", ["under a regular file", "a dangling symbolic link", "a regular file"])
@pytest.mark.parametrize("argv", [("note", "list"), ("note", "add", "I read the file before I answer."),
                                  ("prompt",), ("init",)])
def test_a_home_that_cannot_be_is_73_and_creates_nothing(anima_bin, tmp_path, kind, argv):
    plain = tmp_path / "plain"
    plain.write_text("not a directory\n")
    if kind == "under a regular file":
        root, why = plain / "home", f"{plain} is not a directory"
    elif kind == "a regular file":
        root, why = plain, f"{plain} is not a directory"
    else:
        root = tmp_path / "link"
        root.symlink_to(tmp_path / "gone")
        why = f"{root} is a symbolic link to {tmp_path / 'gone'}, which is no directory"
    before = sorted(os.listdir(tmp_path))
    r = subprocess.run([anima_bin, *argv], capture_output=True, text=True,
                       env={**os.environ, "ANIMA_HOME": str(root)})
    assert (r.returncode, r.stdout) == (73, "")
    assert r.stderr == f"anima: home {root}: {why}; the home cannot be made there\n"
    assert sorted(os.listdir(tmp_path)) == before and plain.read_text() == "not a directory\n"


@pytest.mark.parametrize("argv", [("prompt",), ("note", "list"), ("doctor",), ("config", "get", "notes.max_chars"),
                                  ("config", "set", "notes.max_chars", "1500"), ("tick",)])
def test_a_directory_for_config_toml_is_bad_configuration(anima_bin, home, argv):
    (home / "config.toml").mkdir(parents=True)
    r = anima(anima_bin, *argv)
    if argv == ("doctor",):  # doctor says so in its FAIL line
        assert r.returncode == 1 and f"FAIL\tconfig\t{home}/config.toml: is a directory, not a TOML file" in r.stdout
        return
    assert (r.returncode, r.stdout) == (78, "")
    assert r.stderr == f"anima: {home}/config.toml: is a directory, not a TOML file\n"
    assert os.listdir(home / "config.toml") == []


def test_a_directory_for_notes_md_is_refused_naming_it(anima_bin, home):
    lived_in(anima_bin)
    os.unlink(home / "notes" / "notes.md")
    (home / "notes" / "notes.md").mkdir()
    for argv in (("note", "list"), ("prompt",), ("note", "add", "I like to check twice.")):
        r = anima(anima_bin, *argv)
        assert (r.returncode, r.stdout, r.stderr) == (77, "", f"anima: {home}/notes/notes.md: is not a regular file; "
                                                              "anima reads and writes only plain files here\n"), argv


def test_an_import_onto_a_full_disk_is_74_naming_the_file_and_leaves_nothing(anima_bin, full_disk, tmp_path):
    lived_in(anima_bin)
    archive = tmp_path / "self.tar.zst"
    assert anima(anima_bin, "export", str(archive)).returncode == 0
    full_disk.fill()
    before = sorted(os.listdir(full_disk.mount))
    target = os.path.join(full_disk.mount, "new")
    r = anima(anima_bin, "--home", target, "import", str(archive), preexec=full_disk.preexec)
    why = "No space left on device" if full_disk.mounted else "File too large"
    assert (r.returncode, r.stdout) == (74, ""), (full_disk.how, r.stderr)
    assert r.stderr.startswith(f"anima: {target}") and r.stderr.endswith(f": {why}\n"), r.stderr
    assert r.stderr.count("\n") == 1
    assert sorted(os.listdir(full_disk.mount)) == before  # no home, no staging directory


@pytest.mark.parametrize("torn", ['{"gen": 0, "lines": [1', '{"gen": 0, "lines": [1, 4], "by": "th', "{"])
def test_a_line_torn_by_a_kill_loses_no_later_decision_and_check_reports_it(anima_bin, home, torn):
    """A kill mid-append leaves the bookkeeping's last line open; the next record used to be
    glued onto it, and the decision it recorded was never seen by externalize."""
    assert anima(anima_bin, "init", "--lang", "en").returncode == 0
    unwoken(home)
    assert anima(anima_bin, "think", "A long day.").returncode == 0
    book = home / "pipeline" / "stream.jsonl"
    with open(book, "a") as f:
        f.write(torn)
    r = anima(anima_bin, "think", "I decide to write in my diary: I finished the report.")
    assert (r.returncode, r.stderr) == (0, "")
    lines = book.read_text().split("\n")
    assert lines[1] == torn and lines[2].startswith('{"gen": 0, "lines": [5, 8], "by": "think"') and lines[3] == ""
    r = anima(anima_bin, "externalize")
    assert (r.returncode, r.stderr) == (0, "")
    [action] = [n for n in os.listdir(home / "pipeline" / "action_queue") if n.endswith(".json")]
    assert '"I finished the report."' in (home / "pipeline" / "action_queue" / action).read_text()
    assert anima(anima_bin, "dispatch").returncode == 0
    assert "I finished the report." in (home / "self" / "diary" / "2026-11-30.md").read_text()
    r = anima(anima_bin, "check", "--only", "stream")
    assert (r.returncode, r.stdout) == (1, "stream\tpipeline/stream.jsonl:2\ta line torn by a crash mid-append, "
                                           "no record: what it recorded is lost\n")


def test_check_reports_a_torn_last_line_that_nothing_has_closed_yet(anima_bin, home):
    assert anima(anima_bin, "init", "--lang", "en").returncode == 0
    unwoken(home)
    assert anima(anima_bin, "think", "A long day.").returncode == 0
    with open(home / "pipeline" / "stream.jsonl", "a") as f:
        f.write('{"gen": 0, "lines": [5, 8], "by": "think", "at": "2026-11-30T21:05:00Z"}')  # whole, but no \n
    before = snapshot(home)
    r = anima(anima_bin, "check", "--only", "stream")
    assert (r.returncode, r.stdout) == (1, "stream\tpipeline/stream.jsonl:2\ta line torn by a crash mid-append, "
                                           "no record: what it recorded is lost\n")
    assert snapshot(home) == before
