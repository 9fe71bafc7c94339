"""Provenance of what `anima consolidate` derives (pipeline/derived.jsonl), re-derived by
`anima verify`: orphan, drift and stale for memory lines, autobiography entries and facts."""

import hashlib
import json
import os

from test_consolidate import NIGHT, NIGHT2, a_day, consolidate, ok, read, say, think

from conftest import snapshot

ARCHIVE = "self/stream/archive/2026-11-30.md"


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def records(home):
    return [json.loads(x) for x in read(home, "pipeline/derived.jsonl").splitlines()]


def problems(run):
    r = run("verify", "--json")
    found = [json.loads(x) for x in r.stdout.splitlines()]
    assert r.exit_code == (1 if found else 0), r.stderr
    return {(p["kind"], p["where"]) for p in found}


def nights(run, home):
    """Three nights, with a fact about the person on the side."""
    a_day(run)
    consolidate(run)
    say(run, "Busy day?", "Alice", "2026-12-01T12:00:00Z", "chat")
    think(run, "A quieter day.", "2026-12-01T18:00:00Z")
    consolidate(run, NIGHT2)
    say(run, "See you on Friday.", "Bob", "2026-12-02T11:00:00Z")
    consolidate(run, "2026-12-03T04:00:00Z")
    ok(run("session", "append", "--session", "s1", "--role", "user", "I live in Lisbon now."), None)
    fid = ok(run("stage", "--session", "s1", "--line", "2", "--quote", "I live in Lisbon"), None).stdout.strip()
    ok(run("approve", fid), None)
    return fid


def line_of(home, rel, needle):
    return next(n for n, x in enumerate(read(home, rel).splitlines(), 1) if needle in x)


def rewrite(home, rel, number, new):
    lines = read(home, rel).split("\n")
    lines[number - 1] = new
    (home / rel).write_text("\n".join(lines))


def test_every_memory_line_and_entry_records_its_sources_and_a_sound_home_is_clean(run, home, utc):
    nights(run, home)
    found = records(home)
    memories = [r for r in found if "line" in r]
    entries = [r for r in found if "entry" in r]
    assert [r["entry"] for r in entries] == ["2026-11-30", "2026-12-01", "2026-12-02"]
    assert [(r["path"], r["line"]) for r in memories] == [
        ("self/memories/about_alice.md", 3), ("self/memories/about_bob.md", 3),
        ("self/memories/about_alice.md", 4), ("self/memories/about_bob.md", 4)]
    for r in memories:   # the hash is of the line; each source's of the archive lines it names
        assert sha(read(home, r["path"]).splitlines()[r["line"] - 1]) == r["sha256"]
        assert r["by"] == "consolidate"
        [s] = r["sources"]
        lines = read(home, s["path"]).splitlines(keepends=True)
        text = "".join(lines[s["lines"][0] - 1:s["lines"][1]])
        assert sha(text) == s["sha256"] and text.startswith("## ")
    alice = memories[0]["sources"][0]
    assert alice["path"] == ARCHIVE and "Good morning!" in "".join(
        read(home, ARCHIVE).splitlines(keepends=True)[alice["lines"][0] - 1:alice["lines"][1]])
    entry = entries[0]
    assert entry["at"] == NIGHT and entry["sources"][0]["path"] == ARCHIVE
    assert sha(read(home, "self/autobiography/2026-11-30.md").split("---\n", 2)[2].strip("\n")) == entry["sha256"]
    # Pool A holds no ids, hashes or machine markers
    for rel in ("self/memories/about_alice.md", "self/stream/now.md", ARCHIVE):
        assert "sha256" not in read(home, rel) and entry["sha256"] not in read(home, rel)
    before = snapshot(home)
    r = run("verify")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")
    assert run("check", "--only", "stale").exit_code == 0
    assert snapshot(home) == before


def test_drift_a_source_line_changed(run, home, utc):
    fid = nights(run, home)
    n = line_of(home, ARCHIVE, "Good morning!")
    rewrite(home, ARCHIVE, n, read(home, ARCHIVE).splitlines()[n - 1].replace("Good morning!", "Good evening!"))
    path = home / "sessions" / "s1.jsonl"
    turns = path.read_text().splitlines()
    turn = json.loads(turns[1])
    turn["content"] = "I live in Lisbon now, by the river."
    path.write_text("\n".join(turns[:1] + [json.dumps(turn)] + turns[2:]) + "\n")
    assert problems(run) == {("drift", "self/memories/about_alice.md:3"), ("drift", "self/autobiography/2026-11-30.md"),
                             ("drift", f"facts/facts.jsonl {fid}")}
    r = run("verify")
    assert "drift\tself/memories/about_alice.md:3\tself/stream/archive/2026-11-30.md:1-4\t" in r.stdout
    r = run("check", "--only", "stale", "--json")
    assert r.exit_code == 1 and len(r.stdout.splitlines()) == 3


def test_orphan_the_archive_gone_or_shorter(run, home, utc):
    fid = nights(run, home)
    text = read(home, ARCHIVE)
    (home / ARCHIVE).write_text("".join(text.splitlines(keepends=True)[:2]))   # shorter than any source
    (home / "sessions" / "s1.jsonl").unlink()
    assert problems(run) == {("orphan", "self/memories/about_alice.md:3"), ("orphan", "self/memories/about_bob.md:3"),
                             ("orphan", "self/autobiography/2026-11-30.md"), ("orphan", f"facts/facts.jsonl {fid}")}
    (home / ARCHIVE).unlink()
    assert "has 2 lines" not in run("verify").stdout and "is gone" in run("verify").stdout


def test_stale_the_derivation_changed_or_its_source_forgotten(run, home, utc):
    nights(run, home)
    # a memory line edited, an entry edited: no longer what was derived
    rewrite(home, "self/memories/about_bob.md", 4, "- 2026-12-02 11:00 “See you on Saturday.”")
    entry = home / "self/autobiography/2026-12-01.md"
    entry.write_text(entry.read_text().replace("A quieter day.", "A busy day."))
    # a source line replaced by a tombstone by hand (not through anima forget, which updates the records)
    rewrite(home, ARCHIVE, line_of(home, ARCHIVE, "I still wonder"), "(I was asked to forget what was here, on 2026-12-04.)")
    assert problems(run) == {("stale", "self/memories/about_bob.md:4"), ("stale", "self/autobiography/2026-12-01.md"),
                             ("stale", "self/autobiography/2026-11-30.md")}
    assert "was forgotten" in run("verify").stdout
    # a fact's quote gone from its turn
    path = home / "sessions" / "s1.jsonl"
    turns = path.read_text().splitlines()
    turn = json.loads(turns[1])
    turn["content"] = "I never lived anywhere."
    path.write_text("\n".join(turns[:1] + [json.dumps(turn)] + turns[2:]) + "\n")
    assert ("stale", "facts/facts.jsonl " + json.loads(read(home, "facts/facts.jsonl").splitlines()[0])["id"]) \
        in problems(run)
    # a memory line removed: the lines after it moved up, each is stale
    (home / "self/memories/about_alice.md").write_text("# What Alice said to me\n\n")
    assert {("stale", "self/memories/about_alice.md:3"), ("stale", "self/memories/about_alice.md:4")} <= problems(run)


def test_entries_written_before_the_records_are_checked_by_their_front_matter(run, home, utc):
    a_day(run)
    consolidate(run)
    (home / "pipeline" / "derived.jsonl").unlink()
    assert problems(run) == set()
    (home / ARCHIVE).write_text("## 2026-11-30 09:00\n")
    assert problems(run) == {("orphan", "self/autobiography/2026-11-30.md")}


def test_the_records_are_in_the_dry_run_patch_and_written_once(run, home, utc):
    a_day(run)
    patch = ok(run("consolidate", "--dry-run", env={"ANIMA_NOW": NIGHT}), None).stdout
    assert "+++ b/pipeline/derived.jsonl" in patch and '"path": "self/memories/about_alice.md"' in patch
    consolidate(run)
    consolidate(run)
    assert len(records(home)) == 3   # Alice's line, Bob's line, the entry
    assert not [x for x in read(home, "pipeline/derived.jsonl").splitlines() if x not in patch]


def test_a_symlink_in_place_of_the_provenance_records_is_refused(run, home, tmp_path):
    assert run("init", "--lang", "en").exit_code == 0
    elsewhere = tmp_path / "derived.jsonl"
    elsewhere.write_text('{"path": "self/memories/x.md", "line": 1, "sha256": "0", "sources": []}\n')
    os.symlink(elsewhere, home / "pipeline" / "derived.jsonl")
    r = run("verify")
    assert (r.exit_code, r.stdout) == (77, "")
    assert r.stderr == (f"anima: {home}/pipeline/derived.jsonl: is a symbolic link; anima reads and writes only "
                        "plain files here\n")
