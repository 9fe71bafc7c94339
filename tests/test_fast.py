"""The fast path of `anima prompt` (anima/__main__.py, anima.commands.fast) does what the click
command does: the same stdout, stderr and exit status, the same files written with the same
modes, over a realistic home, with a warm cache and a cold one, good words and bad.

Each comparison runs the installed console script twice on the same home, restored to the same
bytes at the same path in between: once as it is, once with ANIMA_FAST=0 (the click path).
The script is run by the venv's python, as its first line says, through a probe that notes at
exit whether click was imported: so each test also proves which path served it.
"""

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import pytest

from conftest import ANIMA_BIN, NOW, NOW_TS, after_now, file_time

# Runs the console script at argv[2] with the words after it, as its shebang would; at exit
# writes to argv[1] whether click was imported.
PROBE = textwrap.dedent("""\
    import atexit, runpy, sys

    out, script = sys.argv[1], sys.argv[2]

    @atexit.register
    def dump():
        with open(out, "w") as f:
            f.write("click" if "click" in sys.modules else "fast")

    sys.argv = [script, *sys.argv[3:]]
    runpy.run_path(script, run_name="__main__")
""")

SESSION = [
    {"type": "session", "id": "s1", "delegated": False},
    {"role": "user", "content": "I drink green tea every morning.", "ts": "2026-11-01T10:00:00Z"},
    {"role": "assistant", "content": "Noted: green tea.", "ts": "2026-11-01T10:00:00Z"},
    {"role": "user", "content": "My cat is called Miso.", "ts": "2026-11-01T10:00:00Z"},
    {"role": "user", "content": "I also drink oolong in the evening.", "ts": "2026-11-01T10:00:00Z"},
    {"role": "user", "content": "Black tea on Sundays.", "ts": "2026-11-01T10:00:00Z"},
]
NOTES = ["I check the tests before I change code.", "I keep my commit subjects short.",
         "I ask before I delete a file.", "I read the man page first.", "I keep my notes short."]
LATER = after_now(2 * 3600)  # the run compared: every printed note is due another injection


def cli(anima_bin, home, *args, **env):
    proc = subprocess.run([anima_bin, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "ANIMA_HOME": str(home), "ANIMA_FAST": "0", **env})
    assert proc.returncode == 0, (args, proc.stderr)
    return proc.stdout


def age(root):
    """Backdate every file, so that the prompt cache trusts it (anima.infra.fs.RACY_NS)."""
    past = file_time(-3600)
    for dirpath, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(dirpath, name), (past, past), follow_symlinks=False)


@pytest.fixture(scope="module")
def realistic(tmp_path_factory):
    """A home with six blocks, notes, approved facts, a promoted habit and a hand-written
    profile, and a project with an AGENTS.md: (where the home lives, a copy of it, the project)."""
    anima_bin = ANIMA_BIN
    base = tmp_path_factory.mktemp("fast")
    home, project = base / "home", base / "project"
    project.mkdir()
    (project / "AGENTS.md").write_text("# Project rules\n\nRun the tests before every commit.\n")
    env = {"ANIMA_NOW": NOW}
    cli(anima_bin, home, "init", "--lang", "en", **env)
    (home / "sessions" / "s1.jsonl").write_text("".join(json.dumps(t) + "\n" for t in SESSION))
    for text in NOTES:
        cli(anima_bin, home, "note", "add", text, **env)
    ids = [cli(anima_bin, home, "stage", "--session", "s1", "--line", str(line), "--quote", SESSION[line - 1]["content"],
               "--tag", tag, **env).strip()
           for line, tag in ((2, "tea"), (5, "tea"), (6, "tea"), (4, "pets"))]
    cli(anima_bin, home, "approve", *ids, **env)
    cli(anima_bin, home, "habits", "promote", "tea", "--text", "Tea, always.", **env)
    cli(anima_bin, home, "profile", "set", "Likes tea; has a cat called Miso.", **env)
    copy = base / "template"
    shutil.copytree(home, copy, symlinks=True)
    return home, copy, project


def files(root) -> dict:
    """Every file and directory under `root` but the cache and .git: path -> (mode, bytes)."""
    found = {}
    for dirpath, dirnames, names in os.walk(root):
        if dirpath == str(root):  # derived, and git's own (which stamps its commits with the clock)
            dirnames[:] = [d for d in dirnames if d not in ("cache", ".git")]
        for name in dirnames + names:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            data = open(path, "rb").read() if stat.S_ISREG(st.st_mode) else None
            found[os.path.relpath(path, root)] = (stat.S_IMODE(st.st_mode), data)
    return found


def restore(realistic):
    home, copy, project = realistic
    if home.exists():
        subprocess.run(["chmod", "-R", "u+w", str(home)], check=True)
        shutil.rmtree(home)
    shutil.copytree(copy, home, symlinks=True)
    age(home)
    age(project)


def probe(tmp_path, anima_bin, args, env, cwd):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    seen = tmp_path / "seen"
    seen.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, str(script), str(seen), anima_bin, *args], capture_output=True,
                          timeout=60, env=env, cwd=cwd)
    return proc, seen.read_text()


def both(tmp_path, anima_bin, realistic, args, warm=("prompt",), env=None, cwd=None, before=None, after=None):
    """Run `args` on the fast path and on the click path, each on the same home made afresh
    (warmed by `warm` on the click path, then `before(home)`, and `after(home)` once run);
    assert they did the same; return (the result, which path the first run took)."""
    home, _, project = realistic
    results, paths = [], []
    for fast in (True, False):
        restore(realistic)
        base = {**os.environ, "ANIMA_HOME": str(home), "ANIMA_NOW": NOW}
        if warm:
            subprocess.run([anima_bin, *warm], env={**base, "ANIMA_FAST": "0"}, cwd=cwd or project,
                           capture_output=True, check=True, timeout=60)
        if before:
            before(home)
        run_env = {**base, "ANIMA_NOW": LATER, **(env or {})}
        if not fast:
            run_env["ANIMA_FAST"] = "0"
        proc, path = probe(tmp_path, anima_bin, args, run_env, cwd or project)
        results.append((proc.returncode, proc.stdout.decode(), proc.stderr.decode(), files(home)))
        paths.append(path)
        if after:
            after(home)
    assert results[0][:3] == results[1][:3]
    assert results[0][3] == results[1][3]
    assert paths[1] == "click"  # ANIMA_FAST=0 is the click path
    return results[0], paths[0]


WARM = [
    [],
    ["--stats"],
    ["--sections", "notes,profile,habits", "--stats"],
    ["--sections=self,conclusions"],
    ["--lang", "zh"],
    ["--lang=en", "--lang", "zh", "--stats"],
]


@pytest.mark.parametrize("words", WARM, ids=lambda w: " ".join(w) or "plain")
def test_a_warm_cache_is_served_fast_and_the_same(tmp_path, anima_bin, realistic, words):
    (code, out, err, after), path = both(tmp_path, anima_bin, realistic, ["prompt", *words],
                                         warm=("prompt", *words))
    assert path == "fast"
    assert code == 0 and out.startswith("## ")
    log = after["log/injections.jsonl"][1].decode().splitlines()
    assert json.loads(log[-1])["at"] == LATER  # this call was logged, on both paths alike
    if "--stats" in words:
        assert err.splitlines()[-1].startswith("total\t") and err.endswith("\t300\n")
    else:
        assert err == ""


def test_every_section_of_the_realistic_home_is_in_it(tmp_path, anima_bin, realistic):
    (code, out, err, after), path = both(tmp_path, anima_bin, realistic, ["prompt"])
    assert path == "fast" and (code, err) == (0, "")
    for heading in ("## Self layer", "## Self-notes", "## About the person you talk with", "## Resident conclusions",
                    "## Habits", "## Project context"):
        assert heading in out
    assert "Likes tea; has a cat called Miso." in out and "Tea, always." in out
    record = json.loads(after["log/injections.jsonl"][1].decode().splitlines()[-1])
    [printed] = [s["items"] for s in record["sections"] if s["name"] == "notes"]
    heat = json.loads(after["notes/heat.json"][1])
    assert printed and all(heat["notes"][i]["last"] == NOW_TS + 2 * 3600 for i in printed)  # counted again


def test_home_and_cwd_given_as_words(tmp_path, anima_bin, realistic):
    home, _, project = realistic
    words = ["--home", str(home), "prompt", "--cwd", str(project)]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (code, out, err, _), path = both(tmp_path, anima_bin, realistic, words, warm=words[2:],
                                     env={"ANIMA_HOME": str(tmp_path / "not-this-one")}, cwd=elsewhere)
    assert path == "fast" and code == 0 and "Run the tests before every commit." in out
    assert not (tmp_path / "not-this-one").exists()


def test_a_cold_cache_goes_to_click_and_is_the_same(tmp_path, anima_bin, realistic):
    (code, out, err, _), path = both(tmp_path, anima_bin, realistic, ["prompt", "--stats"], warm=None)
    assert path == "click"
    assert code == 0 and "## Self layer" in out


def test_an_edited_input_goes_to_click_and_is_the_same(tmp_path, anima_bin, realistic):
    def edit(home):
        with open(home / "self" / "blocks" / "direction.md", "a") as f:
            f.write("\nI begin with the smallest change.\n")
        age(home)

    (code, out, _, _), path = both(tmp_path, anima_bin, realistic, ["prompt"], before=edit)
    assert path == "click" and "smallest change" in out


BAD = [
    ["prompt", "--lang", "fr"],
    ["prompt", "--sections", "bogus"],
    ["prompt", "--sections", ","],
    ["prompt", "--cwd", "/nonexistent/dir"],
    ["prompt", "--cwd", "/etc/hostname"],
    ["prompt", "--cwd"],
    ["prompt", "--stats=yes"],
    ["prompt", "--bogus"],
    ["prompt", "extra"],
    ["prompt", "-h"],
    ["prompt", "--help"],
    ["prompt", "--"],
    ["--home"],
    ["--version", "prompt"],
    ["prompt", "--home", "/tmp"],
    ["prompt", "--cwd", "caf\udcff"],
]


@pytest.mark.parametrize("words", BAD, ids=lambda w: " ".join(w).encode("utf-8", "backslashreplace").decode())
def test_other_words_go_to_click_and_are_the_same(tmp_path, anima_bin, realistic, words):
    (code, out, err, _), path = both(tmp_path, anima_bin, realistic, words)
    assert path == "click"
    if words[-1] not in ("-h", "--help") and words[0] != "--version":
        assert (code, err) == (0, "") if words[-1] == "--" else (code != 0 and err)


def test_a_broken_anima_now_goes_to_click_and_is_the_same(tmp_path, anima_bin, realistic):
    (code, out, err, _), path = both(tmp_path, anima_bin, realistic, ["prompt"], env={"ANIMA_NOW": "soon"})
    assert path == "click" and (code, out) == (78, "")
    assert err == "anima: ANIMA_NOW: not an RFC 3339 time: 'soon'\n"


def test_a_read_only_home_is_served_with_the_same_warning(tmp_path, anima_bin, realistic, read_only):
    made = []
    (code, out, err, _), path = both(tmp_path, anima_bin, realistic, ["prompt"],
                                     before=lambda home: made.append(read_only(home)),
                                     after=lambda home: made.pop().undo())
    assert path == "fast"
    assert code == 0 and "## Self layer" in out
    assert err.startswith("anima: this injection is not recorded: ") and err.count("\n") == 1


def test_a_file_the_prompt_writes_is_made_with_the_home_s_modes(tmp_path, anima_bin, realistic):
    """umask 000 in the caller: the log made anew is still 0600, as on the click path."""
    def no_log(home):
        (home / "log" / "injections.jsonl").unlink()
        os.rmdir(home / "log")

    old = os.umask(0)
    try:
        (code, _, _, after), path = both(tmp_path, anima_bin, realistic, ["prompt"], before=no_log)
    finally:
        os.umask(old)
    assert path == "fast" and code == 0
    assert after["log"][0] == 0o700 and after["log/injections.jsonl"][0] == 0o600


def test_a_link_in_place_of_the_heat_file_is_said_the_same(tmp_path, anima_bin, realistic):
    def link(home):
        os.replace(home / "notes" / "heat.json", home / "heat-elsewhere.json")
        os.symlink(home / "heat-elsewhere.json", home / "notes" / "heat.json")

    (code, _, err, _), path = both(tmp_path, anima_bin, realistic, ["prompt"], before=link)
    assert path == "fast" and code == 0
    assert err.startswith("anima: warning: ") and "went without this derived file" in err


def test_a_link_in_place_of_the_log_is_refused_the_same(tmp_path, anima_bin, realistic):
    def link(home):
        os.replace(home / "log" / "injections.jsonl", home / "log-elsewhere")
        os.symlink(home / "log-elsewhere", home / "log" / "injections.jsonl")

    (code, out, err, _), path = both(tmp_path, anima_bin, realistic, ["prompt"], before=link)
    assert path == "fast" and (code, out) == (77, "")
    assert err.startswith("anima: ") and "symbolic link" in err and err.count("\n") == 1


def test_a_home_in_git_with_autocommit_commits_nothing_on_either_path(tmp_path, anima_bin, realistic):
    def repo(home):
        cli(anima_bin, home, "config", "set", "git.autocommit", "true")
        for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"]):
            subprocess.run(["git", "-C", str(home), *args], check=True, capture_output=True)
        age(home)
        cli(anima_bin, home, "prompt", "--cwd", str(realistic[2]), ANIMA_NOW=NOW)

    subjects = []
    (code, _, err, _), path = both(tmp_path, anima_bin, realistic, ["prompt"], before=repo,
                                   after=lambda home: subjects.append(subprocess.run(
                                       ["git", "-C", str(home), "log", "--format=%s"], capture_output=True,
                                       text=True, check=True).stdout))
    assert path == "fast" and (code, err) == (0, "")
    assert subjects == ["start\n", "start\n"]  # the prompt commits nothing, on either path


def test_a_reader_gone_ends_with_0_on_the_fast_path(tmp_path, anima_bin, realistic):
    home, _, project = realistic
    restore(realistic)
    env = {**os.environ, "ANIMA_HOME": str(home)}
    cli(anima_bin, home, "prompt", "--cwd", str(project))
    for fast in ("1", "0"):
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            proc = subprocess.run([anima_bin, "prompt", "--cwd", str(project), "--stats"], stdout=write_end,
                                  stderr=subprocess.PIPE, text=True, timeout=60, env={**env, "ANIMA_FAST": fast})
        finally:
            os.close(write_end)
        assert (proc.returncode, proc.stderr) == (0, "")
    head = subprocess.run(f"'{anima_bin}' prompt --cwd '{project}' | head -c 10; exit ${{PIPESTATUS[0]}}",
                          shell=True, executable="/bin/bash", capture_output=True, env=env, timeout=60)
    assert (head.returncode, head.stdout, head.stderr) == (0, b"## Self la", b"")


def test_anima_fast_0_and_anima_debug_1_take_the_click_path(tmp_path, anima_bin, realistic):
    home, _, project = realistic
    restore(realistic)
    base = {**os.environ, "ANIMA_HOME": str(home)}
    cli(anima_bin, home, "prompt", "--cwd", str(project))
    seen = {}
    for name, env in (("default", {}), ("ANIMA_FAST=1", {"ANIMA_FAST": "1"}), ("ANIMA_FAST=0", {"ANIMA_FAST": "0"}),
                      ("ANIMA_DEBUG=1", {"ANIMA_DEBUG": "1"})):
        proc, path = probe(tmp_path, anima_bin, ["prompt"], {**base, **env}, project)
        assert proc.returncode == 0
        seen[name] = path
    assert seen == {"default": "fast", "ANIMA_FAST=1": "fast", "ANIMA_FAST=0": "click", "ANIMA_DEBUG=1": "click"}


# --- anima tick with nothing due -----------------------------------------------------------

def without_pid(found: dict) -> dict:
    """The files, tick.json with its "pid" dropped (each process writes its own) and the time
    of now.md it saw (a tick that writes now.md writes it at its own moment)."""
    beat = "pipeline/heartbeat/tick.json"
    if beat in found:
        mode, data = found[beat]
        doc = json.loads(data)
        doc.pop("pid")
        doc["now"] = doc["now"][0] if doc.get("now") else None
        found = {**found, beat: (mode, doc)}
    return found


def ticked(tmp_path, anima_bin, realistic, args, before=None):
    """`anima tick ARGS` a minute after a full tick, on both paths, each on the home made
    afresh; assert they did the same; return (the result, which path the first run took)."""
    home, _, project = realistic
    restore(realistic)
    base = {**os.environ, "ANIMA_HOME": str(home), "ANIMA_NOW": NOW}
    subprocess.run([anima_bin, "tick"], env={**base, "ANIMA_FAST": "0"}, capture_output=True, check=True, timeout=120)
    if before:
        before(home)
    template = tmp_path / "ticked"  # the same home for both runs, ids and all
    shutil.rmtree(template, ignore_errors=True)
    shutil.copytree(home, template, symlinks=True)
    results, paths = [], []
    for fast in (True, False):
        restore((home, template, project))
        # as the last tick saw the home: now.md as the template has it (restore aged it by the clock)
        now_md = home / "self" / "stream" / "now.md"
        st = (template / "self" / "stream" / "now.md").stat()
        os.utime(now_md, ns=(st.st_mtime_ns, st.st_mtime_ns))
        beat = home / "pipeline" / "heartbeat" / "tick.json"
        beat.write_text(json.dumps({**json.loads(beat.read_text()), "now": [st.st_size, st.st_mtime_ns]}) + "\n")
        run_env = {**base, "ANIMA_NOW": after_now(60)} | ({} if fast else {"ANIMA_FAST": "0"})
        proc, path = probe(tmp_path, anima_bin, ["tick", *args], run_env, project)
        results.append((proc.returncode, proc.stdout.decode(), proc.stderr.decode(), without_pid(files(home))))
        paths.append(path)
    assert results[0][:3] == results[1][:3]
    assert results[0][3] == results[1][3]
    assert paths[1] == "click"
    return results[0], paths[0]


def test_a_tick_with_nothing_due_is_served_fast_and_the_same(tmp_path, anima_bin, realistic):
    (code, out, err, found), path = ticked(tmp_path, anima_bin, realistic, [])
    assert (code, out, err, path) == (0, "", "", "fast")
    assert found["pipeline/heartbeat/tick.json"][1]["at"] == after_now(60)


def test_a_tick_given_now_as_a_word_is_served_fast(tmp_path, anima_bin, realistic):
    for words in (["--now", after_now(90)], [f"--now={after_now(90)}"]):
        (code, out, err, found), path = ticked(tmp_path, anima_bin, realistic, words)
        assert (code, out, err, path) == (0, "", "", "fast")
        assert found["pipeline/heartbeat/tick.json"][1]["at"] == after_now(90)


def test_a_tick_with_something_due_goes_to_click_and_is_the_same(tmp_path, anima_bin, realistic):
    def an_event(home):
        subprocess.run([anima_bin, "say", "hello there", "--speaker", "Ann"], check=True, capture_output=True,
                       env={**os.environ, "ANIMA_HOME": str(home), "ANIMA_NOW": after_now(30), "ANIMA_FAST": "0"})

    (code, out, err, found), path = ticked(tmp_path, anima_bin, realistic, [], before=an_event)
    assert (code, out, err, path) == (0, "", "", "click")
    assert "“hello there”" in found["self/stream/now.md"][1].decode()


@pytest.mark.parametrize("words", [["--now", "yesterday"], ["--nowish", "x"], ["-h"], ["--now"]])
def test_other_tick_words_go_to_click_and_are_the_same(tmp_path, anima_bin, realistic, words):
    (code, _, _, _), path = ticked(tmp_path, anima_bin, realistic, words)
    assert path == "click"


def test_a_tick_while_another_holds_the_lock_is_75_and_silent_on_both_paths(tmp_path, anima_bin, realistic):
    home = realistic[0]
    holder = textwrap.dedent("""\
        import sys, time
        from anima.infra import fs
        with fs.locked(sys.argv[1], wait=False):
            print("held", flush=True)
            time.sleep(60)
    """)
    for fast in ("1", "0"):
        restore(realistic)
        env = {**os.environ, "ANIMA_HOME": str(home), "ANIMA_NOW": NOW}
        subprocess.run([anima_bin, "tick"], env={**env, "ANIMA_FAST": "0"}, capture_output=True, check=True)
        lock = subprocess.Popen([sys.executable, "-c", holder, str(home / "pipeline" / "heartbeat" / "tick.json")],
                                stdout=subprocess.PIPE, text=True)
        try:
            assert lock.stdout.readline() == "held\n"
            before = files(home)
            proc, path = probe(tmp_path, anima_bin, ["tick"], {**env, "ANIMA_NOW": after_now(60), "ANIMA_FAST": fast},
                               str(home))
        finally:
            lock.kill()
            lock.wait()
        assert (proc.returncode, proc.stdout, proc.stderr) == (75, b"", b"")
        assert path == ("fast" if fast == "1" else "click")
        assert files(home) == before
