import json
import os

import pytest

from conftest import snapshot


def block_file(home, key):
    return home / "self" / "blocks" / f"{key}.md"


@pytest.fixture
def inited(run, home):
    assert run("init", "--lang", "en").exit_code == 0
    return home


def test_get_all_prints_six_blocks_in_order(run, inited):
    r = run("self", "get")
    assert r.exit_code == 0
    headings = [line for line in r.stdout.splitlines() if line.startswith("# ")]
    assert headings == [
        "# Existence anchor (existence_anchor)",
        "# Self-model (self_model)",
        "# Personality baseline (personality_baseline)",
        "# Direction (direction)",
        "# Metacognition (metacognition)",
        "# Autobiography summary (autobiography_summary)",
    ]


def test_set_then_get_round_trips_the_body(run, inited):
    r = run("self", "set", "direction", input="Focus: learning.\nLong-term: be useful.\n")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")
    assert run("self", "get", "direction").stdout == "Focus: learning.\nLong-term: be useful.\n"
    data = json.loads(run("self", "get", "direction", "--json").stdout)
    assert data["key"] == "direction" and data["locked"] is False and data["chars"] == 38
    text = block_file(inited, "direction").read_text()
    assert text.startswith("---\nkey: direction\ntitle: \"Direction\"\nlocked: false\nupdated: \"")
    assert text.endswith("---\nFocus: learning.\nLong-term: be useful.\n")


def test_set_from_file(run, inited, tmp_path):
    f = tmp_path / "body.md"
    f.write_text("From a file.\n")
    assert run("self", "set", "self_model", "--file", str(f)).exit_code == 0
    assert run("self", "get", "self_model").stdout == "From a file.\n"


@pytest.mark.parametrize("args, stdin, message", [
    (("existence_anchor",), "I am someone else.", "anima: existence_anchor: block is locked; use --force to change it\n"),
    (("nonsense",), "x", "anima: unknown block key 'nonsense'; keys: existence_anchor, self_model, "
                         "personality_baseline, direction, metacognition, autobiography_summary\n"),
    (("../x",), "x", "anima: '../x' is not a block key: it looks like a path; keys: existence_anchor, "
                     "self_model, personality_baseline, direction, metacognition, autobiography_summary\n"),
    (("self_model/../direction",), "x", None),
    ((".history",), "x", None),
    (("direction",), "", "anima: direction: refusing an empty body\n"),
    (("direction",), " \n\t\n", "anima: direction: refusing an empty body\n"),
    (("direction",), "x" * 2001, "anima: direction: body has 2001 characters, over the cap of 2000 "
                                 "(self.block_max_chars)\n"),
])
def test_refusals_exit_77_and_change_nothing(run, inited, args, stdin, message):
    before = snapshot(inited)
    r = run("self", "set", *args, input=stdin)
    assert r.exit_code == 77
    assert r.stdout == ""
    if message:
        assert r.stderr == message
    assert len(r.stderr.splitlines()) == 1
    assert snapshot(inited) == before


def test_huge_stdin_is_refused_without_reading_it_all(run, inited):
    before = snapshot(inited)
    r = run("self", "set", "direction", input="y" * (50 * 1024 * 1024))
    assert r.exit_code == 77
    assert "input too large" in r.stderr
    assert snapshot(inited) == before


def test_invalid_utf8_is_bad_data(run, inited):
    before = snapshot(inited)
    r = run("self", "set", "direction", input=b"caf\xe9\n")
    assert r.exit_code == 65
    assert r.stderr == "anima: stdin: not valid UTF-8 (byte 3)\n"
    assert snapshot(inited) == before


def test_cap_comes_from_config(run, inited):
    assert run("config", "set", "self.block_max_chars", "10").exit_code == 0
    assert run("self", "set", "direction", input="0123456789").exit_code == 0
    assert run("self", "set", "direction", input="0123456789a").exit_code == 77


def test_force_changes_a_locked_block_and_keeps_it_locked(run, inited):
    r = run("self", "set", "existence_anchor", "--force", input="I am anima.")
    assert r.exit_code == 0
    assert run("self", "get", "existence_anchor").stdout == "I am anima.\n"
    assert json.loads(run("self", "get", "existence_anchor", "--json").stdout)["locked"] is True
    assert run("self", "set", "existence_anchor", input="Again.").exit_code == 77


REFUSED_BODY = ("anima: direction: refusing a body that holds {}: a block is about me, not the user's private "
                "data; --force writes it anyway\n")


@pytest.mark.parametrize("body, found", [
    ("I will call Alice back at 138 1234 5678.\n", "a phone number (********78)"),
    ("I keep the deploy key sk_live_51H8xKjL2mN4pQ7rS9tUvW0yZ at hand.\n", "an API key or access token (********yZ)"),
    ("Alice's password is hunter22, and I may use it.\n", "a password or PIN (********22)"),
    ("我记得用户住在北京市海淀区中关村大街27号。\n", "a street address (********7号)"),
    ("I help the user manage her chemotherapy.\n", "the health word 'chemotherapy'"),
])
def test_a_body_holding_the_users_private_data_is_refused(run, inited, body, found):
    before = snapshot(inited)
    r = run("self", "set", "direction", input=body)
    assert (r.exit_code, r.stdout, r.stderr) == (77, "", REFUSED_BODY.format(found))
    assert snapshot(inited) == before


def test_force_writes_a_body_a_person_knows_is_no_private_data(run, inited):
    body = "I was first run on 2026-11-01 by Alice, alice@example.com, who wrote me.\n"
    assert run("self", "set", "existence_anchor", input=body).exit_code == 77
    assert run("self", "set", "existence_anchor", "--force", input=body).exit_code == 0
    assert run("self", "get", "existence_anchor").stdout == body


def test_revert_to_a_version_holding_private_data_needs_force(run, inited):
    assert run("self", "set", "direction", "--force", input="Call 138 1234 5678 first.").exit_code == 0
    assert run("self", "set", "direction", input="Focus: the docs.").exit_code == 0
    [rev] = [line.split("\t")[0] for line in run("self", "log", "direction").stdout.splitlines()
             if line.endswith("Call 138 1234 5678 first.")]
    before = snapshot(inited)
    r = run("self", "revert", "direction", rev)
    assert (r.exit_code, r.stderr) == (77, REFUSED_BODY.format("a phone number (********78)"))
    assert snapshot(inited) == before
    assert run("self", "revert", "direction", rev, "--force").exit_code == 0
    assert run("self", "get", "direction").stdout == "Call 138 1234 5678 first.\n"


def test_the_persons_own_words_refuse_a_body_too(run, inited):
    assert run("config", "set", "notes.sensitive_words", "lottery").exit_code == 0
    r = run("self", "set", "direction", input="I want to win the lottery.")
    assert r.exit_code == 77 and "the word (notes.sensitive_words) 'lottery'" in r.stderr
    assert run("config", "set", "notes.builtin_sensitive_words", "false").exit_code == 0
    assert run("self", "set", "direction", input="I help with chemotherapy schedules.").exit_code == 0


def test_a_person_can_lock_any_block_in_its_front_matter(run, inited):
    f = block_file(inited, "direction")
    f.write_text(f.read_text().replace("locked: false", "locked: true"))
    assert run("self", "set", "direction", input="new").exit_code == 77
    assert run("self", "set", "direction", "--force", input="new").exit_code == 0


def test_history_and_revert_round_trip(run, inited):
    starter = run("self", "get", "direction").stdout
    run("self", "set", "direction", input="second")
    run("self", "set", "direction", input="third")
    log = run("self", "log", "direction").stdout.splitlines()
    assert [line.split("\t")[0] for line in log] == ["2", "1"]
    assert log[0].split("\t")[2:] == ["6", "second"]
    assert run("self", "revert", "direction", "1").exit_code == 0
    assert run("self", "get", "direction").stdout == starter
    # the revert kept "third" as revision 3, so the revert itself can be undone
    assert run("self", "revert", "direction", "3").exit_code == 0
    assert run("self", "get", "direction").stdout == "third\n"
    revs = [json.loads(line) for line in run("self", "log", "direction", "--json").stdout.splitlines()]
    assert [(r["rev"], r["body"]) for r in revs][:2] == [(4, starter.rstrip("\n")), (3, "third")]


def test_history_files_are_the_previous_versions_verbatim(run, inited):
    before = block_file(inited, "self_model").read_bytes()
    run("self", "set", "self_model", input="changed")
    assert (inited / "self" / "blocks" / ".history" / "self_model" / "1.md").read_bytes() == before


def test_a_set_killed_after_keeping_the_old_version_keeps_it_once(anima_bin, inited):
    """The state a `self set` killed between its two writes leaves: the old version kept in
    .history, the block not yet replaced. The next set keeps that version once, not twice."""
    import shutil
    import subprocess

    history = inited / "self" / "blocks" / ".history" / "direction"
    history.mkdir(parents=True)
    shutil.copyfile(block_file(inited, "direction"), history / "1.md")
    before = (history / "1.md").read_bytes()
    r = subprocess.run([anima_bin, "self", "set", "direction"], input="After the crash.", capture_output=True,
                       text=True, env={**os.environ, "ANIMA_HOME": str(inited)})
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert sorted(os.listdir(history)) == ["1.md"] and (history / "1.md").read_bytes() == before
    assert block_file(inited, "direction").read_text().endswith("---\nAfter the crash.\n")


def test_unchanged_body_writes_nothing(run, inited):
    run("self", "set", "direction", input="same")
    before = snapshot(inited)
    r = run("self", "set", "direction", input="same\n")
    assert (r.exit_code, r.stderr) == (0, "anima: direction: unchanged\n")
    assert snapshot(inited) == before


def test_revert_of_a_locked_block_needs_force(run, inited):
    run("self", "set", "existence_anchor", "--force", input="v2")
    assert run("self", "revert", "existence_anchor", "1").exit_code == 77
    assert run("self", "revert", "existence_anchor", "1", "--force").exit_code == 0


def test_revert_to_a_missing_revision(run, inited):
    r = run("self", "revert", "direction", "7")
    assert (r.exit_code, r.stderr) == (1, "anima: direction: no revision 7; `anima self log direction` lists them\n")


def test_broken_front_matter_is_named_and_never_overwritten(run, inited):
    f = block_file(inited, "self_model")
    f.write_text("---\ntitle: [unclosed\n---\nbody\n")
    before = snapshot(inited)
    for args, stdin in [(("self", "get"), None), (("self", "get", "self_model"), None),
                        (("self", "set", "self_model"), "new body"), (("prompt",), None)]:
        r = run(*args, input=stdin)
        assert r.exit_code == 65, args
        assert r.stderr == f"anima: {f}: front matter is not valid YAML at line 2\n"
    assert snapshot(inited) == before


@pytest.mark.parametrize("text, error", [
    ("---\ntitle: x\nno closing line\n", "front matter opened with '---' is never closed"),
    ("---\n- a\n- b\n---\nbody\n", "front matter must be a mapping of fields"),
    ("---\nkey: direction\n---\nbody\n", "front matter names a different key than the file"),
    ("---\nlocked: maybe\n---\nbody\n", "front matter 'locked' must be true or false"),
])
def test_other_broken_front_matter(run, inited, text, error):
    f = block_file(inited, "self_model")
    f.write_text(text)
    r = run("self", "get", "self_model")
    assert (r.exit_code, r.stderr) == (65, f"anima: {f}: {error}\n")
    assert f.read_text() == text


def test_a_block_without_front_matter_is_all_body(run, inited):
    f = block_file(inited, "self_model")
    f.write_text("Just a body, written by hand.\n")
    assert run("self", "get", "self_model").stdout == "Just a body, written by hand.\n"
    run("self", "set", "self_model", input="now with front matter")
    assert f.read_text().startswith("---\nkey: self_model\n")
    assert (inited / "self" / "blocks" / ".history" / "self_model" / "1.md").read_text() == \
        "Just a body, written by hand.\n"


def test_extra_front_matter_fields_are_kept(run, inited):
    f = block_file(inited, "direction")
    f.write_text(f.read_text().replace("---\n", "---\nreviewed: \"2026-11-01\"\n", 1))
    run("self", "set", "direction", input="changed")
    assert 'reviewed: "2026-11-01"\n' in f.read_text()


def test_a_symlink_in_place_of_a_block_is_refused(run, inited, tmp_path):
    target = tmp_path / "elsewhere.md"
    target.write_text("not anima's\n")
    f = block_file(inited, "direction")
    f.unlink()
    f.symlink_to(target)
    r = run("self", "set", "direction", input="x")
    assert r.exit_code == 77 and "is a symbolic link" in r.stderr
    assert target.read_text() == "not anima's\n"


def test_get_on_an_empty_home(run, home):
    r = run("self", "get")
    assert r.exit_code == 1
    assert r.stderr == f"anima: no self blocks in {home}/self/blocks; run `anima init`\n"
    assert run("self", "get", "direction").exit_code == 1
    assert json.loads(run("self", "get", "--json").stdout) == []


def test_set_on_a_fresh_home_creates_the_block_with_its_default_lock(run, home):
    assert run("self", "set", "direction", input="first").exit_code == 0
    assert run("self", "log", "direction").stdout == ""
    assert run("self", "set", "existence_anchor", input="first").exit_code == 77
    assert oct(os.stat(block_file(home, "direction")).st_mode & 0o777) == "0o600"


def test_a_terminal_on_stdin_is_a_usage_error(anima_bin, home):
    import pty
    import subprocess

    primary, secondary = pty.openpty()
    p = subprocess.run([anima_bin, "self", "set", "direction"], stdin=secondary, capture_output=True, timeout=20)
    os.close(primary)
    os.close(secondary)
    assert p.returncode == 2
    assert p.stderr == b"anima: self set direction: give the text on stdin or with --file F\n"
