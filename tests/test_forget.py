"""anima forget: the source and all derived from it go; only a tombstone without content stays."""

import json
import os
import subprocess

import pytest
import zstandard

from conftest import kill_when, snapshot, unwoken

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
    unwoken(os.environ["ANIMA_HOME"])
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


# --- a line of the self-stream, and what consolidate made of it -------------------------------

def stream_day(run, lang="en"):
    """A day in which Alice tells something private and she keeps thinking of it; one night."""
    from test_consolidate import NIGHT, consolidate, say, think

    assert run("init", "--lang", lang).exit_code == 0
    unwoken(os.environ["ANIMA_HOME"])
    say(run, "Good morning!", "Alice", "2026-11-30T08:00:00Z", "chat")
    say(run, "My cat Zanzibar swallowed a marble.", "Alice", "2026-11-30T09:00:00Z", "chat")
    think(run, "I hope the vet is kind to Quokkafish.", "2026-11-30T09:05:00Z")
    think(run, "I still wonder about the Quokkafish.", "2026-11-30T21:10:00Z")   # carried to the new day
    consolidate(run, NIGHT)


ARCHIVE = "self/stream/archive/2026-11-30.md"


def numbered(home, rel, needle):
    return [n for n, x in enumerate((home / rel).read_text().splitlines(), 1) if needle in x]


def test_forget_stream_lines_leaves_no_trace_of_the_words(run, home, utc):
    from test_consolidate import NIGHT2, consolidate, say

    stream_day(run)
    assert grep(home, "Zanzibar") and grep(home, "Quokkafish")
    archive_lines = (home / ARCHIVE).read_text().count("\n")
    memory = (home / "self/memories/about_alice.md").read_text()
    assert "Good morning!" in memory and "Zanzibar" in memory
    [said] = numbered(home, ARCHIVE, "Zanzibar")
    r = run("forget", "--source", f"{ARCHIVE}:{said}", "--yes", env={"ANIMA_NOW": "2026-12-01T10:00:00Z"})
    assert r.exit_code == 0, r.stderr
    listed = [line.split("\t") for line in r.stdout.splitlines()]
    assert ["memory line", "self/memories/about_alice.md:4"] in listed
    assert ["autobiography entry", "self/autobiography/2026-11-30.md (its body a tombstone)"] in listed
    assert ["stream line", f"{ARCHIVE}:{said} (a tombstone line in its place)"] in listed
    assert [w for w, _ in listed].count("event") == 2          # the event as said, and as preprocessed
    assert grep(home, "Zanzibar") == [] and grep(home, "marble") == []
    # the line is a first-person tombstone, in place: no line moved
    lines = (home / ARCHIVE).read_text().splitlines()
    assert lines[said - 1] == "(I was asked to forget what was here, on 2026-12-01.)"
    assert (home / ARCHIVE).read_text().count("\n") == archive_lines
    assert (home / "self/memories/about_alice.md").read_text() == memory.replace(
        "- 2026-11-30 09:00 (chat) “My cat Zanzibar swallowed a marble.”\n", "")
    entry = (home / "self/autobiography/2026-11-30.md").read_text()
    assert entry == ('---\nid: "2026-11-30"\ntitle: "30 November 2026: forgotten"\ndate: "2026-11-30"\n'
                     'written: "2026-12-01T04:00:00Z"\nsources: ["self/stream/archive/2026-11-30.md:1-16"]\n'
                     'forgotten: "2026-12-01"\n---\n(I was asked to forget what was written here, on 2026-12-01.)\n')
    block = (home / "self/blocks/autobiography_summary.md").read_text()
    assert "2026-11-30" not in block.split("---\n", 2)[2]
    assert len(list((home / "self/blocks/.history/autobiography_summary").iterdir())) == 2   # blocks.write kept it
    assert run("verify").exit_code == 0

    # her thought, also carried into the new day: both copies go
    [thought] = numbered(home, ARCHIVE, "I still wonder about the Quokkafish.")
    r = run("forget", "--source", f"{ARCHIVE}:{thought}", "--yes", env={"ANIMA_NOW": "2026-12-01T10:05:00Z"})
    assert r.exit_code == 0, r.stderr
    [carried] = [x for x in r.stdout.splitlines() if x.startswith("stream line\tself/stream/now.md:")]
    [first] = numbered(home, ARCHIVE, "I hope the vet")
    assert run("forget", "--source", f"{ARCHIVE}:{first}", "--yes").exit_code == 0
    assert grep(home, "Quokkafish") == []
    now = (home / "self/stream/now.md").read_text()       # both thoughts had been carried
    assert now.count("(I was asked to forget what was here, on ") == 2
    assert now.splitlines()[int(carried.split("\t")[1].split(":")[1].split()[0]) - 1].startswith("(I was asked")
    tombs = [json.loads(x) for x in (home / "log" / "forgotten.jsonl").read_text().splitlines()]
    assert [t["forgot"] for t in tombs] == [f"line {ARCHIVE}:{n}" for n in (said, thought, first)]
    assert run("verify").exit_code == 0

    # life goes on: the next night finds the forgotten lines' bookkeeping in order
    say(run, "Did you sleep?", "Alice", "2026-12-01T12:00:00Z", "chat")
    consolidate(run, NIGHT2)
    assert (home / "self/memories/about_alice.md").read_text().endswith("“Did you sleep?”\n")
    assert "2026-12-01" in (home / "self/blocks/autobiography_summary.md").read_text()
    assert run("verify").exit_code == 0


def test_forget_a_line_of_now_before_the_night(run, home, utc):
    from test_consolidate import NIGHT, consolidate, say

    assert run("init", "--lang", "en").exit_code == 0
    say(run, "The code is Ottoline-4471.", "Bob", "2026-11-30T09:00:00Z")
    say(run, "And lunch at noon.", "Bob", "2026-11-30T09:30:00Z")
    [n] = numbered(home, "self/stream/now.md", "Ottoline")
    before = snapshot(home)
    r = run("forget", "--source", f"self/stream/now.md:{n}")        # not on a terminal, no --yes
    assert r.exit_code == 2 and f"stream line\tself/stream/now.md:{n}" in r.stdout
    assert snapshot(home) == before
    assert run("forget", "--source", f"now.md:{n}", "--yes").exit_code == 0      # short for self/stream/now.md
    assert grep(home, "Ottoline") == [] and grep(home, "4471") == []
    consolidate(run, NIGHT)
    memory = (home / "self/memories/about_bob.md").read_text()
    assert memory == "# What Bob said to me\n\n- 2026-11-30 09:30 “And lunch at noon.”\n"
    assert "Bob (2 times" in (home / "self/autobiography/2026-11-30.md").read_text()   # the entry was still read
    assert run("verify").exit_code == 0


def test_forget_a_stream_line_in_chinese(run, home, utc):
    from test_consolidate import NIGHT, consolidate, say

    assert run("init", "--lang", "zh").exit_code == 0
    say(run, "我的密码本藏在书架后面。", "小明", "2026-11-30T09:00:00Z")
    consolidate(run, NIGHT)
    [n] = numbered(home, ARCHIVE, "书架")
    assert run("forget", "--source", f"{ARCHIVE}:{n}", "--yes", env={"ANIMA_NOW": "2026-12-01T10:00:00Z"}).exit_code == 0
    assert (home / ARCHIVE).read_text().splitlines()[n - 1] == "（这里原有的内容，我在 2026-12-01 被要求忘记了。）"
    entry = (home / "self/autobiography/2026-11-30.md").read_text()
    assert 'title: "2026年11月30日：已遗忘"' in entry and entry.endswith("（这里原来写的内容，我在 2026-12-01 被要求忘记了。）\n")
    assert grep(home, "书架") == []


def test_bad_stream_lines(run, home, utc):
    stream_day(run)
    before = snapshot(home)
    assert run("forget", "--source", f"{ARCHIVE}:1", "--yes").exit_code == 2       # a heading
    assert run("forget", "--source", f"{ARCHIVE}:2", "--yes").exit_code == 1       # a blank line
    assert run("forget", "--source", f"{ARCHIVE}:999", "--yes").exit_code == 1
    assert run("forget", "--source", "self/stream/archive/2020-01-01.md:3", "--yes").exit_code == 1
    assert snapshot(home) == before


def test_a_provenance_record_naming_a_file_outside_the_home_is_never_written(run, home, utc):
    import hashlib

    assert run("init", "--lang", "en").exit_code == 0
    unwoken(home)
    assert run("think", "I like the sea.").exit_code == 0
    outside = home.parent / "outside.md"
    outside.write_text("not anima's line\n")
    record = {"path": "../outside.md", "line": 1, "sha256": hashlib.sha256(b"not anima's line").hexdigest(),
              "sources": [{"path": "self/stream/now.md", "lines": [1, 4]}]}  # derived.jsonl edited by hand
    (home / "pipeline" / "derived.jsonl").write_text(json.dumps(record) + "\n")
    r = run("forget", "--source", "now.md:3", "--yes")
    assert r.exit_code == 0, r.stderr
    assert "outside.md" not in r.stdout
    assert outside.read_text() == "not anima's line\n"
    assert "I like the sea" not in (home / "self" / "stream" / "now.md").read_text()


def test_a_consolidate_running_or_pending_is_exit_75(run, home, utc):
    import fcntl

    stream_day(run)
    [n] = numbered(home, ARCHIVE, "Zanzibar")
    before = snapshot(home)
    with open(home / "pipeline" / ".consolidate.pending.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        r = run("forget", "--source", f"{ARCHIVE}:{n}", "--yes")
        assert r.exit_code == 75 and "anima consolidate" in r.stderr
    (home / "pipeline" / "consolidate.pending").write_text('{"at": "2026-12-01T04:00:00Z", "units": []}\n')
    r = run("forget", "--source", f"{ARCHIVE}:{n}", "--yes")
    assert r.exit_code == 75 and "run `anima consolidate` first" in r.stderr
    (home / "pipeline" / "consolidate.pending").unlink()
    assert snapshot(home) == before


def test_a_model_summary_in_the_block_history_keeps_the_day_not_the_words(run, home, utc, tmp_path):
    from test_consolidate import NIGHT, NIGHT2, model, say

    assert run("init", "--lang", "en").exit_code == 0
    say(run, "My cat Zanzibar swallowed a marble.", "Alice", "2026-11-30T09:00:00Z", "chat")
    answer = {"title": "Zanzibar's marble", "summary": "I worried about Zanzibar and the marble.",
              "content": "I worried with Alice about Zanzibar all day.",
              "memories": [{"topic": "cats", "text": "I learned that Zanzibar is Alice's cat."}]}
    assert run("consolidate", "--llm", model(tmp_path, answer), env={"ANIMA_NOW": NIGHT}).exit_code == 0
    say(run, "Good morning again.", "Alice", "2026-12-01T09:00:00Z", "chat")
    assert run("consolidate", env={"ANIMA_NOW": NIGHT2}).exit_code == 0   # the summary moves to history
    assert len(grep(home / "self/blocks/.history", "Zanzibar")) == 1
    [n] = numbered(home, ARCHIVE, "Zanzibar")
    r = run("forget", "--source", f"{ARCHIVE}:{n}", "--yes")
    assert r.exit_code == 0, r.stderr
    assert grep(home, "Zanzibar") == [] and grep(home, "marble") == []
    assert (home / "self/memories/cats.md").read_text() == "# cats\n\n"    # the model read the whole day
    history = [p.read_text() for p in (home / "self/blocks/.history/autobiography_summary").iterdir()]
    assert any("- 2026-11-30: (forgotten)" in h for h in history)
    block = (home / "self/blocks/autobiography_summary.md").read_text().split("---\n", 2)[2]
    assert block == "Recent days:\n- 2026-12-01: I heard from Alice.\n"
    assert run("verify").exit_code == 0


def test_kill_9_of_a_stream_forget_leaves_every_file_old_or_new_and_the_next_run_finishes(
        run, home, utc, anima_bin, tmp_path):
    import random
    import shutil
    import subprocess

    from test_consolidate import tree

    stream_day(run)
    [n] = numbered(home, ARCHIVE, "Zanzibar")
    argv = [anima_bin, "forget", "--source", f"{ARCHIVE}:{n}", "--yes"]
    start = tree(home)
    reference = tmp_path / "reference"
    shutil.copytree(home, reference, symlinks=True)
    env = {**os.environ, "ANIMA_HOME": str(reference), "ANIMA_NOW": "2026-12-01T10:00:00Z"}
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    done = tree(reference)
    rng = random.Random(9)
    killed = midway = 0
    for trial in range(12):
        copy = tmp_path / f"trial{trial}"
        shutil.copytree(home, copy, symlinks=True)
        env = {**os.environ, "ANIMA_HOME": str(copy), "ANIMA_NOW": "2026-12-01T10:00:00Z"}
        pending = copy / "pipeline" / "forget.pending"
        killed += kill_when(argv, env, pending, rng.uniform(0, 0.01))
        midway += pending.exists()
        for path, data in tree(copy).items():
            if path != "pipeline/forget.pending":   # the journal of what is being done
                assert data in (start.get(path), done.get(path)), f"trial {trial}: {path} is neither old nor new"
        if trial % 2:   # the night finishes it (cron), or the same forget again
            subprocess.run([anima_bin, "consolidate"], env=env, check=True)
            assert tree(copy) == done, f"trial {trial}"
        else:
            subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
            assert {k: v for k, v in tree(copy).items() if k != "log/forgotten.jsonl"} == \
                {k: v for k, v in done.items() if k != "log/forgotten.jsonl"}, f"trial {trial}"
        assert grep(copy, "Zanzibar") == []
    assert killed >= 6 and midway >= 3, (killed, midway)
    print(f"{killed} killed, {midway} in the middle of writing")


def _frames(*groups) -> bytes:
    """A zstd file of one frame per group of transcript lines."""
    return b"".join(zstandard.ZstdCompressor().compress("".join(json.dumps(x) + "\n" for x in group).encode())
                    for group in groups)


HEAD = [{"type": "session", "id": "s3"}, {"role": "user", "content": SECRET, "ts": 1.0}]
TAIL = [{"role": "user", "content": "I also keep bees, " + "very " * 200 + "many.", "ts": 2.0}]


def _damaged(kind: str) -> bytes:
    whole = _frames(HEAD, TAIL)
    if kind == "truncated, nothing readable":
        one = _frames(HEAD + TAIL)
        return one[:len(one) // 2]
    if kind == "truncated after its first frame":
        return whole[:-20]
    return whole[:len(_frames(HEAD)) + 8] + b"\xff" * 16 + whole[len(_frames(HEAD)) + 24:]  # corrupt


@pytest.mark.parametrize("kind", ["truncated, nothing readable", "truncated after its first frame", "corrupt"])
def test_forget_a_session_removes_its_damaged_transcript_too(anima_bin, home, kind):
    """A transcript recall skips (nothing readable) or reads in part still holds the words:
    `forget --session` finds it, by its id or else by its name, and removes it whole; so too
    a second copy with the same id, which recall skips."""
    def anima(*args):
        return subprocess.run([anima_bin, *args], capture_output=True, text=True)

    assert anima("init", "--lang", "en").returncode == 0
    assert anima("session", "append", "--session", "s2", "--role", "user", KEPT + ".").returncode == 0
    sessions = home / "sessions"
    (sessions / "s3.jsonl.zst").write_bytes(_damaged(kind))
    (sessions / "copy").mkdir()
    (sessions / "copy" / "s3.jsonl").write_text("".join(json.dumps(x) + "\n" for x in HEAD))
    r = anima("forget", "--session", "s3", "--yes")
    assert r.returncode == 0, r.stderr
    what = "unreadable transcript" if kind == "truncated, nothing readable" else "transcript"
    assert [line.split("\t") for line in r.stdout.splitlines()][:2] == [
        ["transcript", "sessions/copy/s3.jsonl"], [what, "sessions/s3.jsonl.zst"]]
    assert r.stderr == ""  # no warning about the files it removes
    assert sorted(p.name for p in sessions.rglob("*") if not p.name.startswith(".")) == ["copy", "s2.jsonl"]
    assert grep(home, "Ottoline") == []
    assert "Cremona" in anima("recall", "Cremona").stdout
    assert anima("forget", "--session", "s3", "--yes").returncode == 1  # nothing left of it


@pytest.mark.parametrize("kind, line", [("truncated after its first frame", 2), ("corrupt", 2),
                                        ("truncated, nothing readable", 2), ("truncated after its first frame", 3)])
def test_a_turn_of_a_damaged_compressed_transcript_is_65_and_changes_nothing(anima_bin, home, kind, line):
    """Blanking one turn means writing the file again, which would drop its unreadable rest:
    refused, naming the --session that removes it whole."""
    assert subprocess.run([anima_bin, "init", "--lang", "en"], capture_output=True).returncode == 0
    (home / "sessions" / "s3.jsonl.zst").write_bytes(_damaged(kind))
    before = snapshot(home)
    r = subprocess.run([anima_bin, "forget", "--source", f"sessions/s3.jsonl.zst:{line}", "--yes"],
                       capture_output=True, text=True)
    why = "corrupt zstd data" if kind == "corrupt" else "truncated zstd data (the last frame is incomplete)"
    assert (r.returncode, r.stdout) == (65, "")
    last = r.stderr.splitlines()[-1]
    assert last.startswith(f"anima: --source 'sessions/s3.jsonl.zst:{line}': sessions/s3.jsonl.zst is damaged ({why}")
    assert last.endswith("), so one turn cannot be blanked in place; `anima forget --session s3` removes the whole file")
    assert snapshot(home) == before
