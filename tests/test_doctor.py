"""anima doctor: OK, WARN or FAIL per check, with the fix."""

import http.server
import json
import os
import socket
import threading

import pytest

from conftest import NOW, after_now, file_time


def lines(result):
    return {line.split("\t")[1]: line.split("\t") for line in result.stdout.splitlines()}


def healthy(run):
    assert run("init", "--lang", "en").exit_code == 0
    assert run("tick").exit_code == 0


def test_a_healthy_home_is_all_ok(run, home):
    healthy(run)
    r = run("doctor")
    assert r.exit_code == 0, r.stderr
    got = lines(r)
    assert {"permissions", "config", "blocks", "index", "queues", "dead letters", "tick", "consolidate",
            "model"} <= set(got)
    assert all(line[0] == "OK" for line in got.values()), r.stdout
    assert all(len(line) == 3 for line in got.values())  # no fix column when OK


def test_a_hand_written_profile_over_its_budget_is_a_warning(run, home):
    healthy(run)
    assert run("profile", "set", input="".join(f"They like walk number {i} along the river.\n"
                                               for i in range(10))).exit_code == 0
    r = run("doctor")
    size = len(run("prompt").stdout)
    assert r.exit_code == 0
    assert lines(r)["prompt"] == [
        "WARN", "prompt", f"anima prompt assembles {size} characters; the hand-written profile has 400 characters, "
        "over prompt.budget.profile_handwritten (120): the prompt leaves its oldest lines out",
        "shorten facts/profile.md (`anima profile set`), or raise prompt.budget.profile_handwritten"]
    assert run("profile", "off").exit_code == 0   # then it is in no prompt: nothing to warn of
    assert lines(run("doctor"))["prompt"][0] == "OK"


def test_a_broken_home_says_what_and_how_to_fix_it(run, home):
    healthy(run)
    os.chmod(home, 0o755)  # others may enter: notes/ open to them is a warning
    os.chmod(home / "notes", 0o755)
    assert run("say", "--speaker", "alice", "hello").exit_code == 0
    assert run("preprocess").exit_code == 0
    queue = home / "pipeline" / "message_queue"
    waiting = [p for p in queue.iterdir() if p.is_file()]
    old = file_time(-3600)
    for p in waiting:
        os.utime(p, (old, old))
    dead = home / "pipeline" / "dead_letter"
    (dead / "x.json").write_text("{}")
    (dead / "x.json.reason").write_text(json.dumps({"queue": "action", "why": "test"}))
    later = after_now(2 * 3600)
    r = run("doctor", env={"ANIMA_NOW": later})
    assert r.exit_code == 0  # warnings only
    got = lines(r)
    assert got["permissions"][0] == "WARN" and "chmod" in got["permissions"][3]
    assert got["queues"][0] == "WARN" and got["queues"][2].startswith("message:")
    assert got["dead letters"][0] == "WARN" and "anima queue" in got["dead letters"][3]
    assert got["tick"][0] == "WARN" and "crontab" in got["tick"][3]

    (home / "config.toml").write_text("[notes\nbroken = ")
    r = run("doctor")
    assert r.exit_code == 1 and "1 check failed" in r.stderr
    got = lines(r)
    assert got["config"][0] == "FAIL" and "config" in got["config"][3]


def test_no_home_fails(run, tmp_path):
    r = run("doctor", env={"ANIMA_HOME": str(tmp_path / "nowhere")})
    assert r.exit_code == 1
    assert r.stdout.startswith("FAIL\thome\t") and "anima init" in r.stdout
    assert not (tmp_path / "nowhere").exists()


class Models(http.server.BaseHTTPRequestHandler):
    status = 200
    seen: list = []

    def do_GET(self):
        Models.seen.append((self.path, self.headers.get("Authorization")))
        body = json.dumps({"data": [{"id": "m"}]}).encode()
        self.send_response(Models.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Models)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Models.seen.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_the_model_endpoint_is_reached_and_the_budget_told(run, home, endpoint):
    healthy(run)
    assert run("config", "set", "llm.backend", "openai").exit_code == 0
    env = {"OPENAI_BASE_URL": endpoint, "OPENAI_API_KEY": "sk-test"}
    Models.status = 200
    got = lines(run("doctor", env=env))
    assert got["model"][0] == "OK" and endpoint in got["model"][2]
    assert Models.seen == [("/v1/models", "Bearer sk-test")]
    assert got["budget"][0] == "OK" and "60 of 60" in got["budget"][2]

    Models.status = 401
    r = run("doctor", env=env)
    assert r.exit_code == 1 and lines(r)["model"][0] == "FAIL" and "refused" in lines(r)["model"][2]

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    r = run("doctor", env={"OPENAI_BASE_URL": closed})
    assert r.exit_code == 1 and lines(r)["model"][0] == "FAIL"

    now = NOW
    (home / "log" / "llm.jsonl").write_text("".join(json.dumps({"at": now, "ok": True}) + "\n" for _ in range(60)))
    Models.status = 200
    got = lines(run("doctor", env=env))
    assert got["budget"][0] == "WARN" and "spent" in got["budget"][2]


def test_a_cmd_backend_must_be_on_path(run, home):
    healthy(run)
    assert run("config", "set", "llm.backend", "cmd:no-such-model-cli --json").exit_code == 0
    r = run("doctor")
    assert r.exit_code == 1 and lines(r)["model"][0] == "FAIL" and "no-such-model-cli" in lines(r)["model"][2]
    assert run("config", "set", "llm.backend", "cmd:python3 -c pass").exit_code == 0
    assert lines(run("doctor"))["model"][0] == "OK"


def test_json(run, home):
    healthy(run)
    docs = [json.loads(line) for line in run("doctor", "--json").stdout.splitlines()]
    assert {d["status"] for d in docs} == {"OK"} and all(set(d) == {"status", "check", "detail", "fix"} for d in docs)


def test_consolidate_is_expected_once_something_was_lived(run, home):
    healthy(run)
    assert run("config", "set", "consolidate.carry_entries", "0").exit_code == 0  # no carried thought to see
    assert run("think", "I wonder what the sea is like today.").exit_code == 0
    got = lines(run("doctor"))  # anima tick consolidates after the night rule: not yet is fine
    assert got["consolidate"][:3] == ["OK", "consolidate",
                                      "not consolidated yet: anima tick does it once she has lived the rule midnight"]
    assert run("config", "set", "tick.steps", "rhythm,sweep,preprocess,internalize").exit_code == 0
    got = lines(run("doctor"))  # nothing consolidates her
    assert got["consolidate"][0] == "WARN" and "anima consolidate" in got["consolidate"][3]
    assert run("config", "set", "tick.steps", "rhythm,internalize,consolidate").exit_code == 0
    r = run("consolidate")
    assert r.exit_code == 0, r.stderr
    got = lines(run("doctor"))
    assert got["consolidate"][0] == "OK" and "last consolidate" in got["consolidate"][2]
    later = after_now(3 * 86400)
    got = lines(run("doctor", env={"ANIMA_NOW": later}))
    assert got["consolidate"][0] == "WARN"


def test_a_pending_consolidate_is_a_warning_with_its_fix(run, home):
    healthy(run)
    assert run("think", "I wonder what the sea is like today.").exit_code == 0
    (home / "pipeline" / "consolidate.pending").write_text('{"at": "2026-11-30T04:00:00Z", "units": []}\n')
    got = lines(run("doctor"))
    assert got["consolidate"][0] == "WARN" and "pending" in got["consolidate"][2]
    assert got["consolidate"][3] == "anima consolidate"
    assert run("think", "And now?").exit_code == 75
    assert run("consolidate").exit_code == 0
    assert lines(run("doctor"))["consolidate"][0] == "OK"
    assert run("think", "And now?").exit_code == 0


def test_an_index_that_no_longer_covers_a_session(run, home):
    healthy(run)
    assert run("config", "set", "index.hot_minutes", "0").exit_code == 0
    assert run("session", "append", "--session", "s1", "--role", "user", "I like tea.").exit_code == 0
    assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0
    got = lines(run("doctor"))
    assert got["index"][0] == "OK" and got["index"][2].startswith("1 sessions indexed")
    assert run("session", "append", "--session", "s1", "--role", "user", "And coffee.").exit_code == 0
    r = run("doctor")
    assert r.exit_code == 0
    got = lines(r)
    assert got["index"][0] == "WARN" and "1 stale" in got["index"][2] and "anima index update" in got["index"][3]
    (home / "index" / "recall.sqlite").unlink()
    got = lines(run("doctor"))
    assert got["index"][0] == "WARN" and "no index" in got["index"][2]


def test_a_file_s_age_is_the_file_clock_s_not_her_time(run, home):
    """ANIMA_NOW moves her time, not the files': a message just queued is not 200 days old
    because she lives 200 days ahead (doctor and metrics once said so)."""
    healthy(run)
    assert run("say", "--speaker", "alice", "hello").exit_code == 0
    assert run("preprocess").exit_code == 0
    later = {"ANIMA_NOW": after_now(200 * 86400)}
    assert lines(run("doctor", env=later))["queues"][0] == "OK"
    age = json.loads(run("metrics", "--json", env=later).stdout)["queues"]["message"]["oldest_age_sec"]
    assert 0 <= age < 600


def _break_yaml(home):
    path = home / "self" / "blocks" / "direction.md"
    text = path.read_text().split("\n")
    text[1] = "key: [unclosed"
    path.write_text("\n".join(text))


def _break_notes_utf8(home):
    with open(home / "notes" / "notes.md", "ab") as f:
        f.write(b"I am \xff broken.\n")


def _break_meta_json(home):
    (home / "notes" / "meta.json").write_text("{not json")


def _break_facts(home):
    (home / "facts" / "facts.jsonl").write_bytes(b"\xff\xfe\n")


def _nothing(home):
    pass


@pytest.mark.parametrize("damage", [_break_yaml, _break_notes_utf8, _break_meta_json, _break_facts, _nothing])
def test_doctor_fails_exactly_when_prompt_fails_and_writes_nothing(anima_bin, home, damage):
    """doctor assembles the prompt as `anima prompt` does, without its side effects: no cache
    entry, no injection counted, no line in log/injections.jsonl, no frozen ranking."""
    import subprocess

    def anima(*args):
        return subprocess.run([anima_bin, *args], capture_output=True, text=True)

    for args in (("init", "--lang", "en"), ("note", "add", "I read the file before I answer."), ("tick",)):
        assert anima(*args).returncode == 0
    damage(home)
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    doctor = anima("doctor")
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == before  # cache/ included
    prompt = anima("prompt")
    got = lines(doctor)
    if prompt.returncode == 0:
        assert got["prompt"] == ["OK", "prompt", f"anima prompt assembles {len(prompt.stdout)} characters"]
    else:
        assert doctor.returncode == 1 and "1 check failed" in doctor.stderr
        why = prompt.stderr.removeprefix("anima: ").rstrip("\n")
        assert got["prompt"] == ["FAIL", "prompt", f"anima prompt fails: {why}",
                                 "correct the file it names; see anima-home(5)"]
    assert (prompt.returncode == 0) == (damage is _nothing)


def test_the_dead_letter_fix_names_commands_that_work(anima_bin, home):
    import re
    import shlex
    import subprocess

    for args in (("init", "--lang", "en"), ("tick",)):
        assert subprocess.run([anima_bin, *args], capture_output=True).returncode == 0
    inbox = home / "pipeline" / "inbox" / "pending"
    inbox.mkdir(parents=True, exist_ok=True)
    (inbox / "event_1.json").write_text("{not json")
    assert subprocess.run([anima_bin, "preprocess"], capture_output=True).returncode == 0
    fix = lines(subprocess.run([anima_bin, "doctor"], capture_output=True, text=True))["dead letters"][3]
    commands = re.findall(r"`anima ([^`]+)`", fix)
    assert len(commands) == 2, fix
    for command in commands:
        argv = [word if word != "NAME" else "event_1.json" for word in shlex.split(command)]
        r = subprocess.run([anima_bin, *argv], capture_output=True, text=True)
        assert r.returncode == 0, (command, r.stderr)
    assert (inbox / "event_1.json").exists()  # retried: back where it came from


@pytest.mark.parametrize("target", ["a directory outside", "nothing"])
def test_a_symlink_in_the_home_gets_rm_as_its_fix_not_chmod(anima_bin, home, tmp_path, target):
    import subprocess

    for args in (("init", "--lang", "en"), ("tick",)):
        assert subprocess.run([anima_bin, *args], capture_output=True).returncode == 0
    outside = tmp_path / "outside"
    if target == "a directory outside":
        outside.mkdir()
    if (home / "hooks").exists():
        (home / "hooks").rmdir()
    (home / "hooks").symlink_to(outside)
    r = subprocess.run([anima_bin, "doctor"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = lines(r)
    assert got["permissions"][0] == "OK"
    keep = f", then `cp -a {outside} {home}/hooks` to keep a copy of what it pointed to" if outside.exists() else ""
    assert got["links"] == ["WARN", "links", f"1 symbolic link in the home, which anima refuses to write through "
                            f"(first: hooks -> {outside})",
                            f"`rm {home}/hooks`{keep}; `anima check --only mode` lists them all"]
    subprocess.run(["rm", f"{home}/hooks"], check=True)  # the fix, as given
    assert "links" not in lines(subprocess.run([anima_bin, "doctor"], capture_output=True, text=True))
