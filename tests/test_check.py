"""anima check and anima verify: property checks and provenance over the whole home."""

import json
import os

import pytest

from conftest import snapshot, unwoken


def sound_home(run):
    assert run("init", "--lang", "en").exit_code == 0
    assert run("note", "add", "I answer better when I slow down before replying.").exit_code == 0
    for text in ("I live in Lisbon now.", "I moved to Porto in May."):
        assert run("session", "append", "--session", "s1", "--role", "user", text).exit_code == 0
    a = run("stage", "--session", "s1", "--line", "2", "--quote", "I live in Lisbon", "--tag", "city").stdout.strip()
    b = run("stage", "--session", "s1", "--line", "3", "--quote", "I moved to Porto", "--tag", "city").stdout.strip()
    assert run("approve", a, b).exit_code == 0
    return a, b


def findings(run, *args):
    r = run("check", "--json", *args)
    return r, [json.loads(line) for line in r.stdout.splitlines()]


def test_a_sound_home_is_quiet_and_changes_nothing(run, home):
    sound_home(run)
    before = snapshot(home)
    r = run("check")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")
    r = run("verify")
    assert (r.exit_code, r.stdout) == (0, "")
    assert snapshot(home) == before


def test_budget_private_and_secret_findings_never_repeat_the_data(run, home):
    sound_home(run)
    block = home / "self" / "blocks" / "direction.md"
    block.write_text(block.read_text() + "\n" + "I keep going. " * 200 + "\n")
    notes = home / "notes" / "notes.md"
    notes.write_text(notes.read_text() + "I write to alice.smith@example.com every week.\n")
    memory = home / "self" / "memories" / "keys.md"
    memory.write_text("deploy: api_key = sk-live-9f8e7d6c5b4a39281706\n")
    os.chmod(memory, 0o600)
    r, found = findings(run)
    assert r.exit_code == 1 and "findings" in r.stderr
    checks = {(f["check"], f["where"].split(":")[0]) for f in found}
    assert ("budget", "self/blocks/direction.md") in checks
    assert ("private", "notes/notes.md") in checks
    assert ("secret", "self/memories/keys.md") in checks
    text = r.stdout
    assert "alice.smith@example.com" not in text and "sk-live-9f8e7d6c5b4a39281706" not in text


def test_contradiction_needs_a_tag_a_person_marked(run, home):
    a, b = sound_home(run)
    assert run("check", "--only", "contradiction").exit_code == 0
    assert run("config", "set", "facts.single_valued_tags", "city").exit_code == 0
    r, found = findings(run, "--only", "contradiction")
    assert r.exit_code == 1 and len(found) == 1
    assert a in found[0]["what"] and b in found[0]["what"]
    assert run("retire", a).exit_code == 0
    assert run("check", "--only", "contradiction").exit_code == 0


def _rewrite_turn(home, line, new_text):
    path = home / "sessions" / "s1.jsonl"
    lines = path.read_text().splitlines()
    obj = json.loads(lines[line - 1])
    obj["content"] = new_text
    lines[line - 1] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n")


def test_verify_tells_drift_stale_and_orphan_and_check_reports_them(run, home):
    a, b = sound_home(run)
    _rewrite_turn(home, 2, "I live in Lisbon now, near the river.")  # the quote still holds: drift
    _rewrite_turn(home, 3, "I never moved anywhere.")                 # the quote is gone: stale
    r = run("verify")
    assert r.exit_code == 1
    kinds = {line.split("\t")[1].split()[-1]: line.split("\t")[0] for line in r.stdout.splitlines()}
    assert kinds == {a: "drift", b: "stale"}
    r, found = findings(run, "--only", "stale")
    assert r.exit_code == 1 and {f["what"].split(":")[0] for f in found} == {"drift", "stale"}
    (home / "sessions" / "s1.jsonl").unlink()
    r = run("verify", "--json")
    assert {json.loads(line)["kind"] for line in r.stdout.splitlines()} == {"orphan"}


def test_modes_and_symlinks(run, home, tmp_path):
    sound_home(run)
    os.chmod(home, 0o755)  # others may enter the home: what they can read there is a finding
    os.chmod(home / "notes", 0o751)
    os.chmod(home / "notes" / "notes.md", 0o644)
    os.chmod(home / "self", 0o755)
    os.chmod(home / "self" / "diary", 0o755)
    os.chmod(home / "self" / "memories", 0o711)  # others may pass, not list...
    os.chmod(home / "facts", 0o700)  # ... and not enter here: what is inside is nobody else's
    os.chmod(home / "facts" / "facts.jsonl", 0o666)
    outside = tmp_path / "outside.md"
    outside.write_text("x")
    os.symlink(outside, home / "self" / "memories" / "link.md")
    r, found = findings(run, "--only", "mode")
    assert r.exit_code == 1
    got = {f["where"]: f["what"] for f in found}
    assert got.pop(".").startswith("the home's mode is 0755")
    assert got.pop("notes").startswith("directory mode 0751")
    assert got.pop("notes/notes.md").startswith("file mode 0644")
    assert got.pop("self").startswith("directory mode 0755")
    assert got.pop("self/diary").startswith("directory mode 0755")
    assert got.pop("self/memories").startswith("directory mode 0711")
    assert "symbolic link" in got.pop("self/memories/link.md")
    assert got == {}


def test_a_home_restored_by_git_is_sound_inside_its_0700_directory(run, home, tmp_path):
    """git checks files out 0644 and directories 0755: inside a home of mode 0700 nobody else
    can reach them, so chmod 700 of the home alone makes it sound."""
    import subprocess

    sound_home(run)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(home), *args], check=True, env=env)
    clone = tmp_path / "restored"
    subprocess.run(["sh", "-c", 'umask 022 && git clone -q "$0" "$1"', str(home), str(clone)], check=True, env=env)
    os.chmod(clone, 0o755)  # as the umask of a person's shell leaves it
    assert oct((clone / "notes" / "notes.md").stat().st_mode & 0o777) == "0o644"
    r = run("--home", str(clone), "check", "--only", "mode")
    assert r.exit_code == 1 and r.stdout.startswith("mode\t.\tthe home's mode is 0755, not 0700: others may "
                                                    "reach what is in it (chmod 700)\nmode\t.gitignore\tfile mode 0644")
    os.chmod(clone, 0o700)
    r = run("--home", str(clone), "check")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")


@pytest.mark.parametrize("only", ["nonsense", ",", "budget,bogus"])
def test_bad_only_is_usage(run, home, only):
    r = run("check", "--only", only)
    assert r.exit_code == 2 and r.stderr.startswith("anima: --only")


def test_a_hand_written_profile_over_its_budget(run, home):
    sound_home(run)
    lines = "".join(f"They like walk number {i} along the river.\n" for i in range(200))
    assert run("profile", "set", input=lines).exit_code == 0
    r, found = findings(run, "--only", "budget")
    assert r.exit_code == 1 and found == [{
        "check": "budget", "where": "facts/profile.md",
        "what": "the hand-written profile has 8290 characters, over prompt.budget.profile_handwritten (120): "
                "the prompt leaves its oldest lines out"}]
    # still over, and still in the prompt: its newest lines, the cut marked
    prompt = run("prompt", "--sections", "profile").stdout
    assert "They like walk number 199 along the river." in prompt and "number 196 " not in prompt
    assert "(Older lines are left out here: " in prompt


def test_a_home_that_does_not_exist_is_a_finding_not_a_crash(run, home):
    r = run("check")
    assert (r.exit_code, r.stdout, r.stderr) == (1, f"mode\t.\t{home} does not exist (anima init)\n",
                                                  "anima: check: 1 finding\n")
    assert not home.exists()


def test_the_stream_s_bookkeeping_out_of_step_is_a_finding(run, home):
    """A record whose lines were edited away, a roll out of order, a generation never started:
    each named, where the loop would skip them silently."""
    assert run("init", "--lang", "en").exit_code == 0
    unwoken(home)
    for k in range(3):
        assert run("think", f"Thought {k}.", env={"ANIMA_NOW": f"2026-11-30T08:0{k}:00Z"}).exit_code == 0
    assert run("stream", "roll", "--force", "--keep", "0", "--now", "2026-11-30T09:00:00Z").exit_code == 0
    assert run("think", "After the roll.", env={"ANIMA_NOW": "2026-11-30T09:01:00Z"}).exit_code == 0
    r, found = findings(run, "--only", "stream")
    assert (r.exit_code, found) == (0, [])
    archive = home / "self" / "stream" / "archive" / "2026-11-30.md"
    archive.write_text(archive.read_text().replace("Thought 1.", "Thought one."))
    book = home / "pipeline" / "stream.jsonl"
    with book.open("a") as f:
        f.write(json.dumps({"gen": 1, "by": "roll", "why": "hour", "at": "2026-11-30T10:00:00Z"}) + "\n")
        f.write(json.dumps({"gen": 5, "lines": [1, 4], "by": "think", "at": "2026-11-30T10:01:00Z",
                            "sha256": "0" * 64}) + "\n")
    r, found = findings(run, "--only", "stream")
    assert r.exit_code == 1
    assert [(f["where"], f["what"]) for f in found] == [
        ("pipeline/stream.jsonl:2", "lines 5-8 of generation 0 (think) are not in the archive as recorded"),
        ("pipeline/stream.jsonl:6", "a roll to generation 1 after generation 1"),
        ("pipeline/stream.jsonl:7", "a record of generation 5, never started (the rolls so far made 1)"),
    ]
