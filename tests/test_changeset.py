"""The one change-set journal consolidate and forget both plan into (anima.infra.changeset)."""

import json

from anima.infra import changeset
from anima.infra.digest import sha
from anima.infra.home import Home

from conftest import snapshot


def changes(home, name="consolidate"):
    h = Home(str(home))
    h.ensure("pipeline")
    return h, changeset.ChangeSet(h, name)


def test_every_operation_applied_twice_is_applied_once(home):
    """Each file of a set is changed by one kind of operation (several lines of one file each
    by its own `line`, or each by its own `drop`), so a run killed anywhere is finished by
    applying it all again."""
    (home / "self" / "blocks").mkdir(parents=True)
    for name, text in (("appended.md", "one\n"), ("replaced.md", "old\n"), ("lines.md", "one\ntwo\nthree\n"), ("drops.md", "one\ntwo\nthree\n"),
                       ("hashes.jsonl", '{"sha256": "aaa"}\n'), ("self/blocks/k.md", "version 1\n"), ("gone", "x")):
        (home / name).write_text(text)
    h, c = changes(home)
    c.create(h.path("new.md"), "hello\n")
    c.append(h.path("appended.md"), "two\n")
    c.append(h.path("fresh.md"), "made\n")          # not there yet: made
    c.replace(h.path("replaced.md"), "new\n")
    c.line(h.path("lines.md"), 2, "two\n", "TWO\n")
    c.line(h.path("lines.md"), 3, "three\n", "THREE\n")
    c.drop(h.path("drops.md"), 3, "three\n")        # from the bottom up, as forget plans them
    c.drop(h.path("drops.md"), 1, "one\n")
    c.rehash(h.path("hashes.jsonl"), [["aaa", "bbb"]])
    c.version(h.path("self/blocks/k.md"), h.path("self/blocks/.history/k"), "version 2\n")
    c.remove(h.path("gone"))
    warnings = []
    c.apply("2026-11-30T21:05:00Z", warnings.append)
    after = snapshot(home)
    assert warnings == [] and not (home / "pipeline" / "consolidate.pending").exists()
    assert [(home / n).read_text() for n in ("new.md", "appended.md", "fresh.md", "replaced.md", "lines.md",
                                              "drops.md", "hashes.jsonl", "self/blocks/k.md")] == \
        ["hello\n", "one\ntwo\n", "made\n", "new\n", "one\nTWO\nTHREE\n", "two\n", '{"sha256": "bbb"}\n',
         "version 2\n"]
    assert (home / "self/blocks/.history/k/1.md").read_text() == "version 1\n" and not (home / "gone").exists()
    # a run killed at any point finds the journal and applies it all again: nothing changes twice
    with open(changeset.journal_path(h, "consolidate"), "w") as f:
        json.dump({"by": "consolidate", "at": "2026-11-30T21:05:00Z", "ops": c.ops}, f)
    assert changeset.finish_pending(h, warnings.append) == ["consolidate"]
    assert snapshot(home) == after
    assert warnings == ["warning: finishing a consolidate that was interrupted"]


def test_a_file_changed_since_it_was_read_is_left_as_it_is(home):
    home.mkdir()
    (home / "a.md").write_text("one\n")
    (home / "b.md").write_text("mine\n")
    h, c = changes(home, "forget")
    c.replace(h.path("a.md"), "planned\n")
    c.line(h.path("b.md"), 1, "mine\n", "planned\n")
    c.create(h.path("c.md"), "planned\n")
    (home / "a.md").write_text("a person's edit\n")
    (home / "b.md").write_text("a person's line\n")
    (home / "c.md").write_text("a person's file\n")
    warnings = []
    c.apply("2026-11-30T21:05:00Z", warnings.append)
    assert [(home / n).read_text() for n in ("a.md", "b.md", "c.md")] == \
        ["a person's edit\n", "a person's line\n", "a person's file\n"]
    assert warnings == ["warning: a.md changed since it was read; left as it is",
                        "warning: b.md:1 changed since it was read; left as it is",
                        "warning: c.md changed since it was read; left as it is"]


def test_a_version_keeps_what_a_person_wrote_meanwhile(home):
    home.mkdir()
    (home / "k.md").write_text("planned on\n")
    h, c = changes(home)
    c.version(h.path("k.md"), h.path("hist"), "new\n")
    (home / "hist").mkdir()
    (home / "hist" / "1.md").write_text("planned on\n")   # as `self set` keeps the version it replaces
    (home / "k.md").write_text("a person's body\n")
    c.apply("2026-11-30T21:05:00Z", print)
    assert (home / "k.md").read_text() == "new\n"
    assert sorted(p.name for p in (home / "hist").iterdir()) == ["1.md", "2.md"]
    assert (home / "hist" / "2.md").read_text() == "a person's body\n"


def test_a_journal_naming_a_file_outside_the_home_is_refused(run, home, tmp_path):
    assert run("init", "--lang", "en").exit_code == 0
    outside = tmp_path / "outside.md"
    (home / "pipeline" / "consolidate.pending").write_text(json.dumps(
        {"by": "consolidate", "at": "x", "ops": [{"op": "create", "path": "../outside.md", "data": "pwned\n"}]}))
    r = run("consolidate")
    assert r.exit_code == 65 and "outside the home" in r.stderr
    assert not outside.exists()
    (home / "pipeline" / "consolidate.pending").write_text("{not json")
    r = run("consolidate")
    assert (r.exit_code, r.stderr) == (65, f"anima: {home}/pipeline/consolidate.pending: not a change set; "
                                           "move it away and run again\n")


def test_a_journal_an_earlier_anima_left_is_finished(run, home):
    """A consolidate and a forget killed before an upgrade, their journals in the earlier
    formats: the next tick finishes both."""
    assert run("init", "--lang", "en").exit_code == 0
    block = home / "self/blocks/autobiography_summary.md"
    old_block = block.read_text()
    (home / "log").mkdir(exist_ok=True)
    (home / "log" / "forgotten.jsonl").write_text('{"forgot": "earlier"}\n')
    (home / "self" / "memories" / "kept.md").write_text("kept\n")
    (home / "pipeline" / "consolidate.pending").write_text(json.dumps({"at": "2026-12-01T04:00:00Z", "units": [
        {"kind": "create", "path": "self/memories/about_alice.md", "data": "# What Alice said to me\n"},
        {"kind": "append", "path": "self/memories/kept.md", "size": 5, "data": "more\n"},
        {"kind": "block", "key": "autobiography_summary", "body": "Recent days:", "updated": "x", "files": [
            {"path": "self/blocks/.history/autobiography_summary/1.md", "old": None, "data": old_block},
            {"path": "self/blocks/autobiography_summary.md", "old": old_block, "data": "---\nkey: x\n---\nnew\n"}]},
    ]}))
    (home / "pipeline" / "forget.pending").write_text(json.dumps({"ops": [
        {"op": "write", "path": "self/memories/kept.md", "sha256": sha("kept\n"), "data": "kept\n"},
        {"op": "log", "path": "log/forgotten.jsonl", "data": '{"forgot": "line"}\n'}]}))
    r = run("tick")
    assert r.exit_code == 0, r.stderr
    assert not (home / "pipeline" / "consolidate.pending").exists() and not (home / "pipeline" / "forget.pending").exists()
    assert (home / "self/memories/about_alice.md").read_text() == "# What Alice said to me\n"
    assert (home / "self/memories/kept.md").read_text() == "kept\nmore\n"
    assert block.read_text() == "---\nkey: x\n---\nnew\n"
    assert (home / "self/blocks/.history/autobiography_summary/1.md").read_text() == old_block
    assert (home / "log" / "forgotten.jsonl").read_text() == '{"forgot": "earlier"}\n{"forgot": "line"}\n'
