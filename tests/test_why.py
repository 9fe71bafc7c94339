"""log/injections.jsonl and `anima why`: what the agent was told, and where it came from."""

import json

NOTE = "I answer better when I slow down before replying."
FACT_TURN = "I moved to Lisbon last spring."


def setup_home(run):
    assert run("init", "--lang", "en").exit_code == 0
    assert run("note", "add", NOTE).exit_code == 0
    assert run("session", "append", "--session", "s1", "--role", "user", FACT_TURN).exit_code == 0
    fid = run("stage", "--session", "s1", "--line", "2", "--quote", "I moved to Lisbon").stdout.strip()
    assert run("approve", fid).exit_code == 0
    return fid


def prompt_at(run, when):
    r = run("prompt", env={"ANIMA_NOW": when})
    assert r.exit_code == 0, r.stderr
    return r.stdout


def rows(stdout):
    return [line.split("\t") for line in stdout.splitlines() if not line.startswith("#")]


def test_every_prompt_call_is_logged_cached_or_not_and_without_text(run, home):
    fid = setup_home(run)
    prompt_at(run, "2026-11-30T10:00:00Z")
    prompt_at(run, "2026-11-30T10:01:00Z")  # from the cache
    log = (home / "log" / "injections.jsonl").read_text()
    records = [json.loads(line) for line in log.splitlines()]
    assert [r["at"] for r in records] == ["2026-11-30T10:00:00Z", "2026-11-30T10:01:00Z"]
    assert records[0]["sha256"] == records[1]["sha256"]
    sections = {s["name"]: s for s in records[0]["sections"]}
    assert set(sections["self"]["files"]) >= {"existence_anchor", "personality_baseline"}
    assert fid in sections["conclusions"]["items"] + sections.get("profile", {}).get("items", [])
    assert NOTE not in log and "Lisbon" not in log  # hashes and ids, never text


def test_why_traces_blocks_notes_and_facts_to_where_they_live(run, home):
    fid = setup_home(run)
    prompt_at(run, "2026-11-30T10:00:00Z")
    r = run("why")
    assert r.exit_code == 0, r.stderr
    found = {(row[1], row[2]): row for row in rows(r.stdout)}
    assert found[("block", "personality_baseline")][3:5] == ["current", "self/blocks/personality_baseline.md"]
    note = next(row for (kind, _), row in found.items() if kind == "note")
    assert note[3] == "live, by agent" and note[4] == "notes/notes.md:1" and note[5] == NOTE
    fact = found[("fact", fid)]
    assert fact[3] == "approved" and fact[4].startswith("s1:2 (user,") and fact[5] == "I moved to Lisbon"


def test_why_at_a_past_moment_finds_the_old_version_and_later_changes(run, home):
    fid = setup_home(run)
    prompt_at(run, "2026-11-30T10:00:00Z")
    assert run("self", "set", "personality_baseline", input="I am direct and warm.\n").exit_code == 0
    assert run("retire", fid).exit_code == 0
    assert run("note", "clear", "--yes").exit_code == 0
    prompt_at(run, "2026-11-30T12:00:00Z")

    then = {(row[1], row[2]): row for row in rows(run("why", "--at", "2026-11-30T11:00:00Z").stdout)}
    assert then[("block", "personality_baseline")][3:5] == \
        ["revision 1, replaced since", "self/blocks/.history/personality_baseline/1.md"]
    assert then[("fact", fid)][3] == "retired"
    note = next(row for (kind, _), row in then.items() if kind == "note")
    assert note[3] == "archived" and note[4].startswith("notes/archive/")

    now = {(row[1], row[2]): row for row in rows(run("why").stdout)}
    assert now[("block", "personality_baseline")][3] == "current"
    assert ("fact", fid) not in now


def test_a_block_edited_by_hand_is_drift(run, home):
    setup_home(run)
    prompt_at(run, "2026-11-30T10:00:00Z")
    path = home / "self" / "blocks" / "direction.md"
    path.write_text(path.read_text() + "\nA line nobody recorded.\n")
    found = {(row[1], row[2]): row for row in rows(run("why").stdout)}
    assert found[("block", "direction")][3].startswith("drift:")


def test_why_json_and_nothing_logged(run, home):
    setup_home(run)
    r = run("why")
    assert r.exit_code == 1 and "no prompt was logged" in r.stderr
    prompt_at(run, "2026-11-30T10:00:00Z")
    r = run("why", "--at", "2026-11-29T00:00:00Z")
    assert r.exit_code == 1 and r.stdout == ""
    doc = json.loads(run("why", "--json").stdout)
    assert doc["at"] == "2026-11-30T10:00:00Z"
    assert {p["kind"] for p in doc["pieces"]} >= {"block", "note", "fact"}
    r = run("why", "--at", "yesterday")
    assert r.exit_code == 2 and "RFC 3339" in r.stderr


def test_a_log_line_of_another_shape_is_skipped_not_a_crash(run, home):
    setup_home(run)
    prompt_at(run, "2026-11-30T10:00:00Z")
    with open(home / "log" / "injections.jsonl", "a") as f:
        f.write('{"at": "2026-11-30T11:00:00Z", "sections": "self"}\n')
        f.write('{"at": "2026-11-30T12:00:00Z", "sections": [{"name": "self", "files": ["direction"]}]}\n')
    r = run("why")
    assert (r.exit_code, r.stderr) == (0, "")
    assert r.stdout.startswith("# prompt at 2026-11-30T10:00:00Z")
