"""bin/anima-loop (one pass of the loop) and bin/anima-crontab, run as real processes."""

import json
import os
import shutil
import subprocess

import pytest

from conftest import unwoken

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOOP = os.path.join(ROOT, "bin", "anima-loop")
CRONTAB = os.path.join(ROOT, "bin", "anima-crontab")


@pytest.fixture
def env(home, anima_bin):
    """The environment of a user whose PATH has anima (the venv's) and a fresh home."""
    e = {**os.environ, "ANIMA_HOME": str(home), "TZ": "UTC",
         "PATH": os.path.dirname(anima_bin) + os.pathsep + os.environ.get("PATH", "")}
    subprocess.run([anima_bin, "init", "--lang", "en"], env=e, check=True, capture_output=True)
    unwoken(home)
    return e


def loop(env, *args, input=None):
    return subprocess.run([LOOP, *args], env=env, input=input, capture_output=True, text=True)


def anima(env, *args):
    return subprocess.run([shutil.which("anima", path=env["PATH"]), *args], env=env, check=True, capture_output=True, text=True).stdout


def now_md(home):
    path = home / "self" / "stream" / "now.md"
    return path.read_text() if path.exists() else ""


def waiting(home, queue):
    d = home / "pipeline" / queue
    return sorted(p.name for p in d.glob("*.json")) if d.exists() else []


def test_nothing_to_do_is_silent(env, home):
    r = loop(env)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert now_md(home) == ""


def test_a_message_said_in_is_lived_in_one_pass(env, home):
    anima(env, "say", "Are you coming tonight?", "--speaker", "Alice", "--scene", "chat")
    r = loop(env)
    assert r.returncode == 0, r.stderr
    assert "Alice said in chat: “Are you coming tonight?”" in now_md(home)
    assert r.stdout.startswith("## ") and "“Are you coming tonight?”" in r.stdout
    assert waiting(home, "inbox/pending") == [] and waiting(home, "message_queue") == []
    r = loop(env)  # the event is lived once
    assert (r.returncode, r.stdout) == (0, "")
    assert now_md(home).count("Are you coming tonight?") == 1


def test_a_decision_becomes_a_diary_entry_and_its_result_is_lived(env, home):
    anima(env, "think", "I decide to write in my diary: the loop closed today.")
    r = loop(env)
    assert r.returncode == 0, r.stderr
    (diary,) = (home / "self" / "diary").glob("*.md")
    assert "the loop closed today." in diary.read_text()
    action = json.loads(r.stdout.split("\n", 1)[0])
    assert action["payload"]["command"] == "diary.write"
    # the action's result came back as an event and was lived in the same pass
    assert now_md(home).index("I wrote in my diary: “the loop closed today.”.") > \
        now_md(home).index("I decide to write in my diary")
    for queue in ("inbox/pending", "message_queue", "action_queue"):
        assert waiting(home, queue) == [], queue
    r = loop(env)  # nothing left: silent, and no second entry
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert diary.read_text().count("the loop closed today.") == 1


def test_events_on_stdin_or_in_a_file(env, home, tmp_path):
    events = "".join(json.dumps({"text": f"hello {i}", "speaker": "Bob"}) + "\n" for i in range(3))
    r = loop(env, "-", input=events)
    assert r.returncode == 0, r.stderr
    assert [now_md(home).count(f"“hello {i}”") for i in range(3)] == [1, 1, 1]
    f = tmp_path / "events.json"
    f.write_text(json.dumps({"text": "from a file", "speaker": "Carol"}))
    assert loop(env, str(f)).returncode == 0
    assert "Carol said: “from a file”" in now_md(home)


def test_a_failing_stage_stops_the_pass_with_its_status(env, home):
    before = now_md(home)
    r = loop(env, "-", input="{not json\n")
    assert r.returncode == 65 and "`anima say` failed (exit 65)" in r.stderr
    assert now_md(home) == before and waiting(home, "inbox/pending") == []
    anima(env, "say", "still here", "--speaker", "Dan")
    config = home / "config.toml"
    good = config.read_text()
    config.write_text(good + "\n[broken\n")  # every stage that reads the configuration fails
    r = loop(env)
    assert r.returncode == 78 and "` failed (exit 78)" in r.stderr.splitlines()[-1]
    assert "still here" not in now_md(home)
    config.write_text(good)
    # --llm is the translators' backend for the pass (ANIMA_LLM): an unknown one fails as
    # anima itself fails with it
    direct = subprocess.run([shutil.which("anima", path=env["PATH"]), "internalize"],
                            env={**env, "ANIMA_LLM": "nonsense"}, capture_output=True)
    r = loop(env, "--llm", "nonsense")
    assert r.returncode == direct.returncode
    if direct.returncode:
        assert "`anima internalize` failed" in r.stderr and "still here" not in now_md(home)
    r = loop(env, "--llm=rules")
    assert r.returncode == 0 and now_md(home).count("“still here”") == 1


def test_usage(env):
    for args in (["-x"], ["--llm"], ["a", "b"], ["-", "-"]):
        r = loop(env, *args)
        assert r.returncode == 2 and r.stderr.startswith("usage: anima-loop"), args
    r = loop(env, "--help")
    assert r.returncode == 0 and "--llm" in r.stdout and "say -> preprocess" in r.stdout


def test_anima_not_found(home):
    bare = {"PATH": "/usr/bin:/bin", "ANIMA_HOME": str(home)}  # cron's, and anima is not there
    assert shutil.which("anima", path=bare["PATH"]) is None
    r = subprocess.run(["/bin/bash", LOOP], env=bare, capture_output=True, text=True)
    assert r.returncode == 69 and "anima is not on PATH" in r.stderr


def test_crontab_is_one_line_the_heartbeat(env, home):
    r = subprocess.run([CRONTAB], env=env, capture_output=True, text=True, check=True)
    lines = [line for line in r.stdout.splitlines() if not line.startswith(("#", "ANIMA_HOME="))]
    anima_path = shutil.which("anima", path=env["PATH"])
    assert lines == [f"* * * * *   {anima_path} tick"]
    assert f"ANIMA_HOME={home}" in r.stdout.splitlines()
    # the line, run by /bin/sh with cron's short PATH, runs the whole loop: the message is lived
    cmd = lines[0].split(None, 5)[5]
    say = subprocess.run([anima_path, "say", "from cron", "--speaker", "Eve"], env=env, capture_output=True)
    assert say.returncode == 0
    # (the test's clock set as a crontab sets a variable: at a real night hour the first tick
    # would live the night rule and consolidate the message away)
    cron_env = {"ANIMA_HOME": env["ANIMA_HOME"], "PATH": "/usr/bin:/bin", "ANIMA_NOW": env["ANIMA_NOW"]}
    r = subprocess.run(["/bin/sh", "-c", cmd], env=cron_env, capture_output=True, text=True)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert "Eve said: “from cron”" in now_md(home)


def test_scripts_are_shellcheck_clean():
    assert shutil.which("shellcheck"), "shellcheck is missing: `make tools` installs it"
    scripts = [os.path.join(ROOT, "bin", name) for name in sorted(os.listdir(os.path.join(ROOT, "bin")))]
    r = subprocess.run(["shellcheck", *scripts], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_installed_side_by_side(env, home, tmp_path):
    """As `make install` lays them out: anima, anima-loop and anima-crontab in one bin/; the
    crontab line needs no PATH, and the loop finds anima beside it under cron's short PATH."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    anima_path = shutil.which("anima", path=env["PATH"])
    (bindir / "anima").symlink_to(anima_path)
    for name in ("anima-loop", "anima-crontab"):
        shutil.copy(os.path.join(ROOT, "bin", name), bindir / name)
    cron_env = {"ANIMA_HOME": str(home), "PATH": f"{bindir}:/usr/bin:/bin"}
    r = subprocess.run([str(bindir / "anima-crontab")], env=cron_env, capture_output=True, text=True, check=True)
    assert f"* * * * *   {bindir}/anima tick" in r.stdout.splitlines()
    anima(env, "say", "side by side", "--speaker", "Fay")
    r = subprocess.run([str(bindir / "anima-loop")], env={**cron_env, "PATH": "/usr/bin:/bin"},
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "Fay said: “side by side”" in now_md(home)


def test_the_helper_scripts_are_on_the_path_the_readme_gives(anima_bin):
    """make demo and make test put anima in .venv/bin, the PATH the README gives: anima-loop and
    anima-crontab are there too, as the scripts of bin/ (links: an edit is what runs)."""
    here = os.path.dirname(anima_bin)
    for name in ("anima-loop", "anima-crontab"):
        path = os.path.join(here, name)
        assert os.access(path, os.X_OK), f"{path}: not there (make test links it)"
        assert os.path.samefile(path, os.path.join(ROOT, "bin", name))
    r = subprocess.run(["anima-crontab"], env={"PATH": f"{here}:/usr/bin:/bin", "ANIMA_HOME": "/nonexistent"},
                       capture_output=True, text=True)
    assert r.returncode == 0 and f"{here}/anima tick" in r.stdout, r.stderr


def test_make_demo_shows_the_designs_acceptance(anima_bin, tmp_path):
    """γ-5.4: a message said, her perception, her thought and decision, the action, the reply in
    the outbox, and her reply back as her experience, all in the demo's output."""
    env = {"PATH": f"{os.path.dirname(anima_bin)}:/usr/bin:/bin", "TMPDIR": str(tmp_path), "HOME": str(tmp_path)}
    r = subprocess.run([os.path.join(ROOT, "bin", "anima-demo")], env=env, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-2000:]
    seen = r.stdout + r.stderr
    said = "Yes, let us meet by the bridge at six."
    for shown in ("Alice said in chat: “Shall we walk by the river later?”.",
                  f"A walk would be lovely. I decide to reply to Alice: {said}",
                  f'"to": "Alice", "text": "{said}", "scene": "chat"',
                  f"I replied to Alice in chat: “{said}”."):
        assert shown in seen, shown
    assert seen.index("Shall we walk") < seen.index("I decide to reply") < seen.index("I replied to Alice in chat")
    assert "internal error" not in seen and "Traceback" not in seen
    assert os.listdir(tmp_path) == []  # the throwaway home is gone
