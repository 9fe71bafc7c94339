"""anima forget: the source and all derived from it go; only a tombstone without content stays."""

import json
import os

import zstandard

from conftest import snapshot

SECRET = "The lighthouse keeper is named Ottoline Vasquez"
KEPT = "My brother repairs violins in Cremona"


def grep(root, needle: str) -> list[str]:
    hits = []
    for top, _, names in os.walk(root):
        for name in names:
            path = os.path.join(top, name)
            with open(path, "rb") as f:
                if needle.encode() in f.read():
                    hits.append(os.path.relpath(path, root))
    return hits


def setup_home(run):
    assert run("init", "--lang", "en").exit_code == 0
    for sid, text in (("s1", SECRET + "."), ("s1", "I also like tea in the morning."), ("s2", KEPT + ".")):
        assert run("session", "append", "--session", sid, "--role", "user", text).exit_code == 0
    ids = {}
    for key, sid, line, quote in (("secret", "s1", 2, SECRET), ("tea", "s1", 3, "I also like tea"),
                                  ("kept", "s2", 2, KEPT)):
        ids[key] = run("stage", "--session", sid, "--line", str(line), "--quote", quote).stdout.strip()
    assert run("approve", *ids.values()).exit_code == 0
    assert run("index", "rebuild").exit_code == 0
    assert run("prompt").exit_code == 0  # the prompt cache now holds the facts' text
    assert "Ottoline" in run("recall", "Ottoline").stdout
    return ids


def test_forget_a_session_leaves_no_trace_but_the_tombstone(run, home):
    ids = setup_home(run)
    r = run("forget", "--session", "s1", "--yes")
    assert r.exit_code == 0, r.stderr
    listed = [line.split("\t") for line in r.stdout.splitlines()]
    assert ["transcript", "sessions/s1.jsonl"] in listed
    assert ["fact", ids["secret"]] in listed and ["fact", ids["tea"]] in listed
    assert grep(home, "Ottoline") == [] and grep(home, "lighthouse") == []
    assert grep(home, "like tea") == []
    assert run("recall", "Ottoline").exit_code == 1
    assert "Cremona" in run("recall", "Cremona").stdout
    assert "Cremona" in run("prompt").stdout
    tomb = [json.loads(line) for line in (home / "log" / "forgotten.jsonl").read_text().splitlines()]
    assert len(tomb) == 1 and tomb[0]["forgot"] == "session s1"
    assert {"what": "fact", "where": ids["secret"]} in tomb[0]["removed"]
    assert run("verify").exit_code == 0


def test_without_yes_off_a_terminal_nothing_is_forgotten(run, home):
    setup_home(run)
    before = snapshot(home)
    r = run("forget", "--session", "s1")
    assert r.exit_code == 2 and "--yes" in r.stderr
    assert "sessions/s1.jsonl" in r.stdout  # the list is shown first
    assert snapshot(home) == before


def test_forget_one_fact(run, home):
    ids = setup_home(run)
    r = run("forget", "--fact", ids["kept"], "--yes")
    assert r.exit_code == 0, r.stderr
    assert ids["kept"] not in (home / "facts" / "facts.jsonl").read_text()
    assert "Cremona" not in run("prompt").stdout
    assert grep(home / "facts", "Cremona") == []
    assert (home / "sessions" / "s2.jsonl").exists()  # the source itself stays


def test_forget_one_turn_keeps_every_other_line_number(run, home):
    ids = setup_home(run)
    r = run("forget", "--source", "sessions/s1.jsonl:2", "--yes")
    assert r.exit_code == 0, r.stderr
    assert grep(home, "Ottoline") == []
    facts = (home / "facts" / "facts.jsonl").read_text()
    assert ids["secret"] not in facts and ids["tea"] in facts
    assert run("verify").exit_code == 0  # the tea fact still points at its turn, line 3
    assert len((home / "sessions" / "s1.jsonl").read_text().splitlines()) == 3


def test_forget_a_turn_in_a_compressed_transcript(run, home):
    assert run("init", "--lang", "en").exit_code == 0
    lines = [{"type": "session", "id": "z1"}, {"role": "user", "content": SECRET, "ts": 1.0},
             {"role": "assistant", "content": "Noted, thank you.", "ts": 2.0}]
    raw = "".join(json.dumps(x) + "\n" for x in lines).encode()
    (home / "sessions" / "z1.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(raw))
    assert "Ottoline" in run("recall", "Ottoline").stdout
    assert run("forget", "--source", "sessions/z1.jsonl.zst:2", "--yes").exit_code == 0
    assert run("recall", "Ottoline").exit_code == 1
    assert "Noted" in run("recall", "Noted").stdout
    assert grep(home, "Ottoline") == []


def test_bad_targets(run, home):
    setup_home(run)
    assert run("forget", "--session", "nope", "--yes").exit_code == 1
    assert run("forget", "--fact", "f00000000", "--yes").exit_code == 1
    assert run("forget", "--source", "sessions/s1.jsonl", "--yes").exit_code == 2
    assert run("forget", "--source", "sessions/s1.jsonl:1", "--yes").exit_code == 1  # the header, not a turn
    assert run("forget", "--yes").exit_code == 2
    assert run("forget", "--session", "s1", "--fact", "x", "--yes").exit_code == 2
