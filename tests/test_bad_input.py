"""Bad input through the installed `anima`: refused with one line and a documented status,
nothing written; never exit 70 (a bug in anima)."""

import os
import subprocess

import pytest

from conftest import snapshot


def anima(anima_bin, *args, input=None, env=None):
    return subprocess.run([anima_bin, *args], input=input, capture_output=True, timeout=120,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def lived(anima_bin, home):
    for args in (("init", "--lang", "en"), ("note", "add", "I read the file before I answer.")):
        assert anima(anima_bin, *args).returncode == 0
    return home


@pytest.mark.parametrize("argv, number, shown", [
    ((b"think", b"I am \xff."), 2, "I am \\xff."),
    ((b"note", b"add", b"I keep \xfe\xff notes."), 3, "I keep \\xfe\\xff notes."),
    ((b"say", b"hi \xff", b"--speaker", b"Alice"), 2, "hi \\xff"),
    ((b"say", b"hi", b"--speaker", b"Al\xffce"), 4, "Al\\xffce"),
    ((b"say", b"hi", b"--speaker=Al\xffce"), 3, "--speaker=Al\\xffce"),
    ((b"config", b"set", b"notes.max_chars", b"1\xff"), 4, "1\\xff"),
    ((b"--home", b"/tmp/\xff", b"note", b"list"), 2, "/tmp/\\xff"),
])
def test_an_argument_that_is_not_utf8_is_65_naming_it(anima_bin, lived, argv, number, shown):
    before = snapshot(lived)
    r = anima(anima_bin, *argv)
    assert (r.returncode, r.stdout) == (65, b"")
    assert r.stderr.decode() == f"anima: argument {number} '{shown}': not valid UTF-8; anima takes UTF-8 text\n"
    assert snapshot(lived) == before


def test_an_anima_home_that_is_not_utf8_is_65(anima_bin, tmp_path):
    r = subprocess.run([anima_bin, "note", "list"], capture_output=True,
                       env={**os.environ, "ANIMA_HOME": os.fsdecode(os.fsencode(str(tmp_path)) + b"/h\xff")})
    assert (r.returncode, r.stdout) == (65, b"")
    assert r.stderr.decode() == f"anima: ANIMA_HOME '{tmp_path}/h\\xff': not valid UTF-8; anima takes UTF-8 paths\n"
    assert b"h\xff" not in os.listdir(os.fsencode(str(tmp_path)))


DEEP = "[" * 100_000 + "]" * 100_000


def message(**extra) -> str:
    import json

    return json.dumps({"text": "hi", "speaker": "Alice", **extra})


@pytest.mark.parametrize("doc, why", [
    ('{"text": "\\ud800", "speaker": "Alice"}', "a lone surrogate \\ud800 is no character"),
    ('{"text": "hi", "speaker": "Al\\udfffce"}', "a lone surrogate \\udfff is no character"),
    (message()[:-1] + ', "x": ' + DEEP + "}", "nested deeper than 100 levels"),
    (message()[:-1] + ', "x": ' + "[" * 101 + "]" * 101 + "}", "nested deeper than 100 levels"),
    (message()[:-1] + ', "x": NaN}', "NaN is not JSON"),
    (message()[:-1] + ', "x": -Infinity}', "-Infinity is not JSON"),
    (message()[:-1] + ', "x": 1e999}', "1e999 is out of range"),
])
def test_json_that_python_takes_and_json_does_not_is_65_and_writes_nothing(anima_bin, lived, doc, why):
    before = snapshot(lived)
    r = anima(anima_bin, "say", "--json", input=doc.encode())
    assert (r.returncode, r.stdout) == (65, b"")
    assert r.stderr.decode() == f"anima: stdin:1: not valid JSON ({why})\n"
    assert snapshot(lived) == before


def test_a_valid_surrogate_pair_and_99_levels_are_json(anima_bin, lived):
    doc = message()[:-1] + ', "x": ' + "[" * 99 + "]" * 99 + ', "y": "\\ud83d\\ude00"}'
    r = anima(anima_bin, "say", "--json", input=doc.encode())
    assert r.returncode == 0, r.stderr
    inbox = lived / "pipeline" / "inbox" / "pending"
    [name] = [n for n in os.listdir(inbox) if n.endswith(".json")]
    assert "\U0001f600" in (inbox / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("argv, prefix", [
    (("internalize", "-"), "anima: stdin: not valid JSON ("),
    (("call", "self_note"), "anima: call self_note: the arguments are not valid JSON ("),
    (("stage",), "anima: stdin:1: expected a recall result: JSON with session, line and quote or text"),
])
@pytest.mark.parametrize("doc", [DEEP, '{"text": NaN}', '{"text": "\\ud800"}'])
def test_every_json_input_is_read_the_same_way(anima_bin, lived, argv, prefix, doc):
    before = snapshot(lived)
    r = anima(anima_bin, *argv, input=doc.encode())
    assert r.stderr.decode().startswith(prefix), r.stderr
    assert r.returncode == 65 and r.stderr.count(b"\n") == 1
    assert snapshot(lived) == before


@pytest.mark.parametrize("doc", [DEEP, '{"envelope": {"id": "event_1"}, "payload": {"x": NaN}}', "\\ud800"])
def test_a_queue_file_that_is_not_json_goes_to_dead_letter(anima_bin, lived, doc):
    """A host drops a file into the inbox by hand (maildir): preprocess dead-letters it, with
    the reason, and goes on; nothing is lost, nothing crashes."""
    inbox = lived / "pipeline" / "inbox" / "pending"
    inbox.mkdir(parents=True, exist_ok=True)
    (inbox / "event_1.json").write_text(doc)
    r = anima(anima_bin, "preprocess")
    assert (r.returncode, r.stderr) == (0, b"")
    dead = lived / "pipeline" / "dead_letter"
    assert (dead / "event_1.json").read_text() == doc
    assert "not valid JSON" in (dead / "event_1.json.reason").read_text()


@pytest.mark.parametrize("when", ["9999-12-31T23:59:59Z", "1969-12-31T23:59:59Z", "0001-01-01T00:00:00Z"])
@pytest.mark.parametrize("argv", [("tick",), ("prompt",), ("think", "I am here."), ("say", "hi", "--speaker", "Al"),
                                  ("consolidate",), ("doctor",)])
def test_anima_now_outside_the_years_anima_takes_is_78(anima_bin, lived, when, argv):
    before = snapshot(lived)
    r = anima(anima_bin, *argv, env={"ANIMA_NOW": when})
    assert (r.returncode, r.stdout) == (78, b"")
    assert r.stderr.decode() == f"anima: ANIMA_NOW: '{when}' is outside the years anima takes (1970 to 8999)\n"
    assert snapshot(lived) == before


def test_the_last_second_anima_takes_works(anima_bin, lived):
    for argv in (("tick",), ("think", "I am here."), ("consolidate",)):
        r = anima(anima_bin, *argv, env={"ANIMA_NOW": "8999-12-31T23:59:59Z"})
        assert r.returncode == 0, (argv, r.stderr)


@pytest.mark.parametrize("argv", [("tick", "--now", "9999-12-31T23:59:59Z"), ("stream", "roll", "--now", "9999-12-31")])
def test_a_now_flag_outside_the_years_is_a_usage_error(anima_bin, lived, argv):
    before = snapshot(lived)
    r = anima(anima_bin, *argv)
    assert r.returncode == 2 and r.stderr.decode().startswith("anima: --now: '9999-12-31"), r.stderr
    assert snapshot(lived) == before


def test_an_envelope_timestamp_outside_the_years_goes_to_dead_letter(anima_bin, lived):
    r = anima(anima_bin, "say", "hi", "--speaker", "Al")
    name = r.stdout.decode().strip() + ".json"
    path = lived / "pipeline" / "inbox" / "pending" / name
    path.write_text(path.read_text().replace('"timestamp": "2026-11-30T21:05:00Z"', '"timestamp": "9999-12-31T23:59:59Z"'))
    assert "9999-12-31" in path.read_text()
    r = anima(anima_bin, "tick")
    assert (r.returncode, r.stderr) == (0, b"")
    reason = (lived / "pipeline" / "dead_letter" / f"{name}.reason").read_text()
    assert "is outside the years anima takes (1970 to 8999)" in reason


@pytest.mark.parametrize("control, how", [("\x00", "stdin"), ("\x01", "stdin"), ("\x1b", "stdin"), ("\x7f", "stdin"),
                                          ("\x01", "argument"), ("\x1b", "argument")])  # (argv holds no NUL)
def test_a_note_with_a_control_character_is_65_and_never_reaches_the_prompt(anima_bin, lived, control, how):
    before = snapshot(lived)
    text = f"I keep{control} my notes plain."
    if how == "argument":
        r = anima(anima_bin, "note", "add", text)
    else:
        r = anima(anima_bin, "note", "add", "-", input=text.encode())
    assert (r.returncode, r.stdout) == (65, b"")
    assert r.stderr.decode() == ("anima: a note is plain text; this one holds the control character "
                                 f"U+{ord(control):04X} at character 7\n")
    assert snapshot(lived) == before
    prompt = anima(anima_bin, "prompt").stdout
    assert control.encode() not in prompt and b"my notes plain" not in prompt


def test_the_agent_s_self_note_tool_refuses_a_control_character_too(anima_bin, lived):
    before = snapshot(lived)
    r = anima(anima_bin, "call", "self_note", input=b'{"text": "I keep\\u0000 my notes plain."}')
    assert b"control character U+0000" in r.stdout + r.stderr
    assert snapshot(lived) == before


@pytest.mark.parametrize("argv, stdin, said", [
    (("think", "-"), b"I wonder\x00 about red.\n", "a thought is plain text; this one holds the control character "
                                                    "U+0000 at character 9"),
    (("think", "I wonder\x1b[31m red."), None, "a thought is plain text; this one holds the control character U+001B "
                                              "at character 9"),
    (("think", "I wonder\u009b31m red."), None, "a thought is plain text; this one holds the control character "
                                               "U+009B at character 9"),
    (("self", "set", "direction"), b"I am \0 ok", "block direction is plain text; this one holds the control "
                                                  "character U+0000 at character 6"),
    (("self", "set", "direction"), b"I go\r\non \x1b[31m red", "block direction is plain text; this one holds the "
                                                              "control character U+001B at character 9"),
    (("call", "update_self_block"), b'{"key": "direction", "body": "I go \\u0000 \\u001b[31m red"}',
     "block direction is plain text; this one holds the control character U+0000 at character 6"),
    (("session", "append", "--session", "s1", "--role", "user"), b"I said \0 hi",
     "a turn is plain text; this one holds the control character U+0000 at character 8"),
    (("say", "hi \x1b[2J", "--speaker", "Al"), None, "say: an event is plain text; this one holds the control "
                                                    "character U+001B at character 4"),
    (("say", "hi", "--speaker", "A\x07l"), None, "say: an event is plain text; this one holds the control character "
                                               "U+0007 at character 2"),
    (("say", "--json"), b'{"text": "hi \\u0000", "speaker": "Al"}', "stdin: an event is plain text; this one holds "
                                                                    "the control character U+0000 at character 4"),
])
def test_text_with_a_control_character_is_65_wherever_it_enters(anima_bin, lived, argv, stdin, said):
    before = snapshot(lived)
    r = anima(anima_bin, *argv, input=stdin)
    assert r.returncode == 65 and r.stderr.decode() == f"anima: {said}\n", r.stderr
    assert snapshot(lived) == before
    prompt = anima(anima_bin, "prompt").stdout
    assert not any(c in prompt for c in (b"\x00", b"\x1b", b"\x07", "\u009b".encode()))


def test_tabs_and_line_breaks_are_text(anima_bin, lived):
    r = anima(anima_bin, "self", "set", "direction", input=b"I go on.\r\n\tSlowly.\n")
    assert r.returncode == 0, r.stderr
    assert "I go on.\n\tSlowly." in (lived / "self" / "blocks" / "direction.md").read_text()


def test_a_control_character_edited_into_a_file_is_shown_not_printed_and_reported(anima_bin, lived):
    notes = lived / "notes" / "notes.md"
    with open(notes, "ab") as f:
        f.write(b"I keep \x00 notes \x1b[31m plain.\n")
    block = lived / "self" / "blocks" / "direction.md"
    block.write_bytes(block.read_bytes().rstrip(b"\n") + b"\nI go \xc2\x9b2J on.\n")
    shown = "I keep \ufffd notes \ufffd[31m plain."
    prompt = anima(anima_bin, "prompt")
    assert prompt.returncode == 0 and shown in prompt.stdout.decode() and "I go \ufffd2J on." in prompt.stdout.decode()
    listed = anima(anima_bin, "note", "list")
    assert listed.returncode == 0 and f"\t{shown}\n" in listed.stdout.decode()
    for r in (prompt, listed):
        assert not any(c in r.stdout for c in (b"\x00", b"\x1b", "\u009b".encode()))
    before = snapshot(lived)  # (prompt logs what it injected; check and doctor write nothing)
    r = anima(anima_bin, "check", "--only", "text")
    assert (r.returncode, r.stdout.decode()) == (1, (
        "text\tself/blocks/direction.md:10\tthe control character U+009B at character 6: anima prints it as "
        "U+FFFD; remove it\n"
        "text\tnotes/notes.md:2\tthe control character U+0000 at character 8: anima prints it as U+FFFD; "
        "remove it\n"))
    r = anima(anima_bin, "doctor")
    assert b"WARN\ttext\t2 problems in the self's text files (first: self/blocks/direction.md:10: the control " \
        b"character U+009B at character 6: anima prints it as U+FFFD; remove it)\t" in r.stdout, r.stdout
    assert snapshot(lived) == before


LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{b}: &{b} [{', '.join(['*' + a] * 10)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True))


@pytest.mark.parametrize("front, why", [
    ("x: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than 100 levels"),
    ("x: " + "{\"a\": " * 300 + "1" + "}" * 300 + "\n", "nested deeper than 100 levels"),
    ("".join(" " * i + f"k{i}:\n" for i in range(3000)) + " " * 3000 + "k: 1\n", "nested deeper than 100 levels"),
    (LAUGHS, "more than 10000 values"),
    ("when: 2026-02-30\n", "day is out of range for month"),
    ("when: !!timestamp 99999-01-01\n", "a value YAML cannot construct"),
])
def test_a_front_matter_bomb_is_broken_front_matter_for_prompt_doctor_and_check(anima_bin, lived, front, why):
    block = lived / "self" / "blocks" / "direction.md"
    block.write_text("---\n" + front + "key: direction\n---\nI go on.\n")
    before = snapshot(lived)
    said = f"{block}: front matter is not valid YAML ({why})"
    r = anima(anima_bin, "prompt")
    assert (r.returncode, r.stdout, r.stderr.decode()) == (65, b"", f"anima: {said}\n")
    r = anima(anima_bin, "doctor")
    assert r.returncode == 1 and f"FAIL\tprompt\tanima prompt fails: {said}\t".encode() in r.stdout, r.stdout
    r = anima(anima_bin, "check", "--only", "budget")
    assert (r.returncode, r.stdout.decode()) == (1, f"budget\t-\t{said}\n")
    assert snapshot(lived) == before


@pytest.mark.parametrize("when", ["8999-12-31T23:59:59Z", "8999-12-31T23:30:00Z"])
def test_a_tick_at_the_end_of_the_years_writes_no_time_anima_refuses(anima_bin, lived, when):
    import json

    r = anima(anima_bin, "tick", env={"ANIMA_NOW": when})
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    rules = json.loads((lived / "pipeline" / "heartbeat" / "rhythm.json").read_text())["rules"]
    assert {rule["next"] for name, rule in rules.items() if name != "nudge"} == {None}
    assert rules["nudge"]["next"] == (None if when.endswith("59Z") else "8999-12-31T23:45:00Z")
    assert rules["hourly"]["fired"] == "8999-12-31T23:00:00Z"
    assert "no scheduled minute before 9000-01-01T00:00:00Z" in rules["hourly"]["note"]
    for argv in (("tick",), ("check", "--only", "rhythm")):
        r = anima(anima_bin, *argv, env={"ANIMA_NOW": when})
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b""), argv


def test_a_rhythm_state_holding_a_time_past_the_years_is_reported_and_remade(anima_bin, lived):
    import json

    assert anima(anima_bin, "tick").returncode == 0
    path = lived / "pipeline" / "heartbeat" / "rhythm.json"
    state = json.loads(path.read_text())
    state["rules"]["hourly"]["next"] = "9000-01-01T00:00:00Z"  # what an older anima wrote at 8999-12-31T23:59
    path.write_text(json.dumps(state))
    r = anima(anima_bin, "check", "--only", "rhythm")
    assert (r.returncode, r.stdout.decode()) == (1, "rhythm\tpipeline/heartbeat/rhythm.json:hourly\tnext: "
                                                    "'9000-01-01T00:00:00Z' is outside the years anima takes "
                                                    "(1970 to 8999); the next tick makes it again\n")
    r = anima(anima_bin, "doctor")
    assert b"WARN\ttick\tpipeline/heartbeat/rhythm.json: rule hourly: next: '9000-01-01" in r.stdout
    r = anima(anima_bin, "tick")
    assert (r.returncode, r.stderr) == (0, b"")
    assert json.loads(path.read_text())["rules"]["hourly"]["next"] == "2026-11-30T22:00:00Z"
    assert anima(anima_bin, "check", "--only", "rhythm").returncode == 0


def test_a_fired_time_past_the_years_fails_doctor_and_check_as_it_fails_tick(anima_bin, lived):
    import json

    assert anima(anima_bin, "tick").returncode == 0
    path = lived / "pipeline" / "heartbeat" / "rhythm.json"
    state = json.loads(path.read_text())
    state["rules"]["hourly"].update(fired="9000-01-01T00:00:00Z", next="2026-11-30T21:00:00Z")
    path.write_text(json.dumps(state))
    before = snapshot(lived)
    r = anima(anima_bin, "tick")
    assert r.returncode == 65 and b"tick: rhythm: " in r.stderr
    assert b"fired: '9000-01-01T00:00:00Z' is outside the years" in r.stderr
    beat = json.loads((lived / "pipeline" / "heartbeat" / "tick.json").read_text())
    assert beat["failed"] == ["rhythm"] and beat["fired"] == []  # the other steps ran; nothing fired
    del before["pipeline/heartbeat/tick.json"]
    r = anima(anima_bin, "doctor")
    assert r.returncode == 1 and b"FAIL\ttick\tpipeline/heartbeat/rhythm.json: rule hourly: fired: " in r.stdout
    r = anima(anima_bin, "check", "--only", "rhythm")
    assert r.returncode == 1 and b"rhythm\tpipeline/heartbeat/rhythm.json:hourly\tfired: '9000" in r.stdout
    after = snapshot(lived)
    del after["pipeline/heartbeat/tick.json"]
    assert after == before


def test_a_config_that_is_not_utf8_is_a_fail_row_of_doctor_s_table(anima_bin, lived):
    (lived / "config.toml").write_bytes(b'[core]\nlang = "\xff"\n')
    before = snapshot(lived)
    r = anima(anima_bin, "doctor")
    assert r.returncode == 1 and r.stderr == b"anima: doctor: 1 check failed\n"
    rows = [line.split(b"\t")[:3] for line in r.stdout.splitlines()]
    assert [b"OK", b"permissions"] == rows[0][:2]
    assert [b"FAIL", b"config", f"{lived}/config.toml: not valid UTF-8 (byte 15)".encode()] in rows
    assert snapshot(lived) == before


@pytest.mark.parametrize("name", ["self/stream/now.md", "notes/notes.md", "self/blocks/direction.md"])
def test_check_reports_a_file_that_is_not_utf8_and_goes_on(anima_bin, lived, name):
    assert anima(anima_bin, "think", "I am here.").returncode == 0
    path = lived / name
    path.write_bytes(path.read_bytes() + b"I am \xff\xfe.\n")
    before = snapshot(lived)
    r = anima(anima_bin, "check")
    assert r.returncode == 1 and r.stderr.decode().startswith("anima: check: "), r.stderr
    assert f"text\t{name}\tnot valid UTF-8 (byte ".encode() in r.stdout
    assert all(line.count(b"\t") >= 2 for line in r.stdout.splitlines())
    assert snapshot(lived) == before


def test_a_state_that_is_not_utf8_is_a_warning_of_doctor_as_prompt_does_not_read_it(anima_bin, lived):
    (lived / "self" / "state.md").write_bytes(b"I am \xff calm.\n")
    os.chmod(lived / "self" / "state.md", 0o600)
    assert anima(anima_bin, "prompt").returncode == 0
    r = anima(anima_bin, "state")
    assert r.returncode == 65 and b"self/state.md: not valid UTF-8 (byte 5)" in r.stderr
    r = anima(anima_bin, "doctor")
    assert r.returncode == 0
    assert b"WARN\ttext\t1 problem in the self's text files (first: self/state.md: not valid UTF-8 (byte 5): " \
           b"anima cannot read it)\t" in r.stdout, r.stdout
    r = anima(anima_bin, "check", "--only", "text")
    assert (r.returncode, r.stdout) == (1, b"text\tself/state.md\tnot valid UTF-8 (byte 5): anima cannot read it\n")


def test_anima_now_that_is_not_utf8_is_shown_as_bytes(anima_bin, lived):
    before = snapshot(lived)
    r = subprocess.run([anima_bin, "prompt"], capture_output=True,
                       env={**os.environ, "ANIMA_NOW": os.fsdecode(b"2026\xff\xfe")})
    assert (r.returncode, r.stdout) == (78, b"")
    assert r.stderr.decode() == "anima: ANIMA_NOW: not an RFC 3339 time: '2026\\xff\\xfe'\n"
    assert snapshot(lived) == before


def test_a_config_nested_deep_is_bad_config_not_a_crash(anima_bin, lived):
    with open(lived / "config.toml", "a") as f:
        f.write("x = " + "[" * 5000 + "]" * 5000 + "\n")
    before = snapshot(lived)
    said = f"anima: {lived}/config.toml: not valid TOML: nested deeper than Python reads\n"
    r = anima(anima_bin, "prompt")
    assert (r.returncode, r.stdout, r.stderr.decode()) == (78, b"", said)
    r = anima(anima_bin, "doctor")
    assert r.returncode == 1 and f"FAIL\tconfig\t{said[7:-1]}\t".encode() in r.stdout
    assert snapshot(lived) == before
