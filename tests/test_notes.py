import calendar
import json
import os
import zlib

import pytest

from conftest import endless_stdin, kill_after, snapshot

T0 = "2026-11-01T00:00:00Z"


def at(iso):
    return {"ANIMA_NOW": iso}


def notes_dir(home):
    return home / "notes"


def lines(home):
    return (notes_dir(home) / "notes.md").read_text().splitlines()


def usage(home):
    return json.loads((notes_dir(home) / "heat.json").read_text())["notes"]


def add(run, text, when=T0):
    r = run("note", "add", text, env=at(when))
    assert r.exit_code == 0, r.stderr
    return r.stdout.strip()


@pytest.fixture
def inited(run, home):
    run("init", "--lang", "en")
    return home


def test_add_prints_the_id_and_appends_one_line(run, inited):
    r = run("note", "add", "I", "tend", "to", "over-explain", "when", "I", "am", "unsure.", env=at(T0))
    text = "I tend to over-explain when I am unsure."
    nid = f"n{zlib.crc32(text.encode()):08x}"
    assert (r.exit_code, r.stdout, r.stderr) == (0, nid + "\n", "")
    assert lines(inited) == [text]
    meta = json.loads((notes_dir(inited) / "meta.json").read_text())
    assert meta["notes"][nid] == {"created": T0, "importance": 1, "author": "agent"}


def test_add_from_stdin_folds_lines(run, inited):
    r = run("note", "add", "-", input="我发现自己在用户着急的时候\n会说得太多。\n", env=at(T0))
    assert r.exit_code == 0
    assert lines(inited) == ["我发现自己在用户着急的时候 会说得太多。"]


def test_grep_shows_whole_notes(run, inited):
    add(run, "我对重复的问题仍然保持耐心。")
    add(run, "I answer faster in the morning.")
    import subprocess

    out = subprocess.run(["grep", "耐心", str(notes_dir(inited) / "notes.md")], capture_output=True, text=True)
    assert out.stdout == "我对重复的问题仍然保持耐心。\n"


@pytest.mark.parametrize("text, reason", [
    ("", "anima: refusing an empty note\n"),
    ("   ", "anima: refusing an empty note\n"),
    ("I " + "x" * 199, "anima: note has 201 characters, over the cap of 200 (notes.note_max_chars)\n"),
    ("I rest. I read. I write! I sleep?", "anima: a note is 1 to 3 sentences; this one has 4\n"),
    ("The user likes tea.", "anima: a note is about me, in the first person (I, me, my, 我); this one is not\n"),
    ("I should write to alice@example.com more often.", None),
    ("I noted their number 13812345678 for later.", None),
    ("我记下了他的身份证号 11010519491231002X。", None),
    ("I saw card 4111 1111 1111 1111 in my logs.", None),
    ("I learned the key sk-proj-abcdefghijklmnopqrstuvwx1234 works.", None),
    ("我知道他住在北京市朝阳区建国路88号。", None),
    ("I know their password is hunter22.", None),
    ("I learned that his salary is low.", None),
    ("我知道她确诊了。", None),
    ("I noted their PIN is 4821.", "anima: refusing a note that holds a password or PIN (********21): a note is "
                                   "about me, not the user's private data\n"),
    ("我把用户发来的１３８１２３４５６７８存了下来。", "anima: refusing a note that holds a phone number "
                                                "(********７８): a note is about me, not the user's private data\n"),
    ("I remembered the user earns $85,000 a year.", "anima: refusing a note that holds the finance word 'earns': "
                                                    "a note is about me, not the user's private data\n"),
    ("I kept their IBAN GB09 WEST 1215 4728 0385 28 for the refund.", None),
    ("I remembered that the user's birthday is 14 March 1990.", None),
])
def test_refusals_exit_77_and_write_nothing(run, inited, text, reason):
    add(run, "I keep my answers short.")
    before = snapshot(inited)
    r = run("note", "add", "-", input=text, env=at(T0))
    assert (r.exit_code, r.stdout) == (77, "")
    assert len(r.stderr.splitlines()) == 1
    if reason:
        assert r.stderr == reason
    else:
        assert "a note is about me, not the user's private data" in r.stderr
    assert snapshot(inited) == before


def test_in_a_pipe_ordinary_notes_that_look_like_data_are_stored(inited, anima_bin):
    import subprocess

    stored = ["I saw 16000000000 bytes in the disk report and misread it.",
              "It costs me patience to read long logs, but it pays off.",
              "我看到磁盘报告里有 16000000000 字节，读错了一次。"]
    for text in stored:
        r = subprocess.run([anima_bin, "note", "add", "-"], input=text, capture_output=True, text=True, timeout=30)
        assert (r.returncode, r.stderr) == (0, ""), text
    r = subprocess.run([anima_bin, "note", "add", "-"], input="I saved their number, 138 1234 5678.", text=True,
                       capture_output=True, timeout=30)
    assert (r.returncode, r.stdout) == (77, "")
    assert r.stderr == "anima: refusing a note that holds a phone number (********78): a note is about me, not the " \
                       "user's private data\n"
    assert lines(inited) == stored


def test_private_data_is_not_echoed(run, inited):
    r = run("note", "add", "I noticed the key sk-proj-abcdefghijklmnopqrstuvwx1234 in my context.")
    assert r.exit_code == 77 and "abcdefghijklmnopqrstuvwx1234" not in r.stderr


def test_custom_sensitive_words(run, inited):
    run("config", "set", "notes.sensitive_words", "lottery")
    assert run("note", "add", "I think they won the lottery.").exit_code == 77
    run("config", "set", "notes.builtin_sensitive_words", "false")
    assert run("note", "add", "I talked about salary bands in general.").exit_code == 0


def test_near_duplicate_refreshes_the_live_note(run, inited):
    nid = add(run, "I tend to over-explain when I am unsure.")
    before = (notes_dir(inited) / "notes.md").read_bytes()
    r = run("note", "add", "I tend to over explain when I'm unsure.", env=at("2026-11-05T00:00:00Z"))
    assert r.exit_code == 77
    assert r.stderr.startswith(f"anima: near-duplicate of note {nid} (")
    assert r.stderr.endswith("% similar, notes.dup_threshold 90); refreshed its heat instead\n")
    assert (notes_dir(inited) / "notes.md").read_bytes() == before
    assert usage(inited)[nid] == {"hits": 1, "last": calendar.timegm((2026, 11, 5, 0, 0, 0))}


def test_invalid_utf8_and_endless_stdin(run, inited, anima_bin):
    before = snapshot(inited)
    r = run("note", "add", "-", input=b"I am caf\xe9.")
    assert (r.exit_code, r.stderr) == (65, "anima: stdin: not valid UTF-8 (byte 8)\n")
    r = endless_stdin([anima_bin, "note", "add", "-"])
    assert r.returncode == 77 and "input too large" in r.stderr
    assert snapshot(inited) == before


def test_a_symlink_in_place_of_notes_md_is_refused(run, inited, tmp_path):
    other = tmp_path / "other.md"
    other.write_text("someone else's file\n")
    (notes_dir(inited) / "notes.md").symlink_to(other)
    for args in (("note", "add", "I am careful."), ("note", "list"), ("prompt",)):
        r = run(*args)
        assert r.exit_code == 77, args
        assert r.stderr == f"anima: {notes_dir(inited) / 'notes.md'}: is a symbolic link; anima reads and " \
                           "writes only plain files here\n"
    assert other.read_text() == "someone else's file\n"


# --- heat ---------------------------------------------------------------------------------

def test_heat_matches_the_formula_by_hand(run, inited):
    nid = add(run, "I keep my answers short.")
    assert run("note", "heat", nid, env=at(T0)).stdout == "1.5000\n"  # (1+ln 1) x 0.5^0 x 1.5
    run("prompt", env=at(T0))  # one injection at T0
    # 10 days later: (1 + ln 2) x 0.5^(10/30) x (1 + 0.5) = 1.6931 x 0.7937 x 1.5 = 2.0158
    assert run("note", "heat", nid, env=at("2026-11-11T00:00:00Z")).stdout == "2.0158\n"
    run("note", "importance", nid, "3")
    run("config", "set", "notes.half_life_days", "30")
    # 45 days after the injection, importance 3: 1.6931 x 0.3536 x 2.5 = 1.4965
    out = run("note", "heat", nid, "--explain", env=at("2026-12-16T00:00:00Z")).stdout
    assert out.splitlines()[1:] == [
        "hits        1  (injections into the prompt, at most one an hour)",
        "idle_days   45.0000  (since the last injection, 2026-11-01T00:00:00Z)",
        "half_life   30  (notes.half_life_days)",
        "importance  3  (0-3, set by a person)",
        "heat = (1 + ln(1 + 1)) x 0.5^(45.0000 / 30) x (1 + 0.5 x 3)",
        "     = 1.6931 x 0.3536 x 2.5",
        "     = 1.4965",
    ]


def test_injections_count_at_most_once_an_hour(run, inited):
    nid = add(run, "I keep my answers short.")
    for when in (T0, "2026-11-01T00:30:00Z", "2026-11-01T00:59:59Z"):
        run("prompt", env=at(when))
    assert usage(inited)[nid]["hits"] == 1
    run("prompt", env=at("2026-11-01T01:00:00Z"))
    assert usage(inited)[nid]["hits"] == 2


def test_listing_and_heat_queries_are_not_use(run, inited):
    nid = add(run, "I keep my answers short.")
    for args in (("note", "list"), ("note", "list", "--json"), ("note", "heat", nid), ("note", "status")):
        run(*args, env=at(T0))
    assert not (notes_dir(inited) / "heat.json").exists() or nid not in usage(inited)


def test_half_life_is_validated(run, inited):
    before = snapshot(inited)
    for value in ("0", "366", "thirty"):
        r = run("note", "config", "half_life_days", value)
        assert r.exit_code == 78
    assert snapshot(inited) == before
    assert run("note", "config", "half_life_days", "7").exit_code == 0
    assert run("note", "config", "half_life_days").stdout == "7\n"


# --- caps and archive -----------------------------------------------------------------------

def test_adding_past_max_entries_archives_the_oldest(run, inited):
    run("note", "config", "max_entries", "3")
    ids = [add(run, t, "2026-11-30T10:00:00Z") for t in
           ("I am first.", "I came second here.", "My third thought.", "I am the fourth one now.")]
    assert lines(inited) == ["I came second here.", "My third thought.", "I am the fourth one now."]
    archive = notes_dir(inited) / "archive" / "2026-11.md"
    assert archive.read_text() == "## 2026-11-30T10:00:00Z over the cap\nI am first.\n"
    assert run("note", "archive", "2026-11").stdout == archive.read_text()
    assert run("note", "archive").stdout == archive.read_text()
    meta = json.loads((notes_dir(inited) / "meta.json").read_text())["notes"]
    assert set(meta) == set(ids[1:])


def test_adding_past_max_chars_archives_the_oldest(run, inited):
    run("note", "config", "max_chars", "40")
    add(run, "I like short notes a lot.")  # 25
    r = run("note", "add", "My notes stay small.", env=at(T0))  # 20: 45 > 40
    assert r.stderr == "anima: moved 1 oldest notes to the archive (notes.max_entries / notes.max_chars)\n"
    assert lines(inited) == ["My notes stay small."]


def test_archive_is_append_only(run, inited):
    run("note", "config", "max_entries", "1")
    add(run, "I am one.")
    add(run, "I am two.")
    add(run, "I am three.")
    assert run("note", "archive").stdout == ("## 2026-11-01T00:00:00Z over the cap\nI am one.\n"
                                             "## 2026-11-01T00:00:00Z over the cap\nI am two.\n")


def test_archive_month_is_checked(run, inited):
    assert run("note", "archive", "2026-13").exit_code == 2
    assert run("note", "archive", "2020-01").exit_code == 1


def test_clear_needs_yes_off_a_terminal(run, inited):
    add(run, "I keep my answers short.")
    before = snapshot(inited)
    r = run("note", "clear")
    assert (r.exit_code, r.stderr) == (2, "anima: refusing to clear 1 notes without --yes (stdin is not a terminal)\n")
    assert snapshot(inited) == before
    assert run("note", "clear", "--yes", env=at(T0)).exit_code == 0
    assert lines(inited) == []
    assert run("note", "archive").stdout == "## 2026-11-01T00:00:00Z cleared\nI keep my answers short.\n"


# --- hand edits -----------------------------------------------------------------------------

def test_hand_edits_are_new_notes_and_orphans_are_dropped(run, inited):
    a = add(run, "I keep my answers short.")
    b = add(run, "I check my sources twice.")
    path = notes_dir(inited) / "notes.md"
    path.write_text("I keep my answers very short.\n\n\nI check my sources twice.\nI wrote this by hand.\n"
                    "I check my sources twice.\n")
    listed = [json.loads(x) for x in run("note", "list", "--by", "time", "--json", env=at(T0)).stdout.splitlines()]
    assert [n["text"] for n in listed] == ["I keep my answers very short.", "I check my sources twice.",
                                           "I wrote this by hand."]
    assert [n["author"] for n in listed] == ["person", "agent", "person"]
    assert listed[1]["id"] == b and a not in {n["id"] for n in listed}
    c = add(run, "My newest note is here.")
    meta = json.loads((notes_dir(inited) / "meta.json").read_text())["notes"]
    assert set(meta) == {n["id"] for n in listed} | {c}


def test_garbage_in_notes_md_does_not_crash(run, inited):
    (notes_dir(inited) / "notes.md").write_text("\n\n   \n# a heading someone typed\n\t\n")
    assert run("note", "list").exit_code == 0
    assert run("prompt").exit_code == 0
    assert run("note", "add", "I still work.").exit_code == 0


def test_a_broken_sidecar_is_named_and_left_alone(run, inited):
    add(run, "I keep my answers short.")
    meta = notes_dir(inited) / "meta.json"
    meta.write_text("{broken")
    r = run("note", "add", "I check my sources twice.")
    assert r.exit_code == 65 and r.stderr.startswith(f"anima: {meta}: not valid JSON")
    assert meta.read_text() == "{broken"


# --- the prompt section ---------------------------------------------------------------------

def notes_section(text):
    start = text.index("## Self-notes")
    body = text[text.index("```md\n", start) + 6:]
    return body[: body.index("\n```")].splitlines()


def test_prompt_fills_the_budget_with_whole_notes_by_heat(run, inited):
    texts = ["I keep my answers short and plain.", "I check my sources twice.", "I admit when I am unsure.",
             "I prefer examples to theory.", "I pause before I answer."]
    ids = [add(run, t) for t in texts]
    run("note", "importance", ids[3], "3")
    r = run("prompt", "--stats", env=at(T0))
    shown = notes_section(r.stdout)
    assert shown[0] == texts[3]
    assert sum(map(len, shown)) <= 120
    assert len(shown) == len(texts) - 1 or sum(map(len, shown)) + min(map(len, texts)) > 120
    assert f"notes\t{sum(map(len, shown))}\t120\n" in r.stderr
    hits = usage(inited)
    assert {i for i in ids if hits.get(i, {}).get("hits")} == {ids[texts.index(t)] for t in shown}


def test_prompt_stays_identical_while_notes_and_config_are_unchanged(run, inited):
    for t in ("I keep my answers short.", "I check my sources twice.", "I admit when I am unsure.",
              "I prefer examples to theory.", "I pause before I answer."):
        add(run, t)
    outs = {run("prompt", env=at(when)).stdout for when in (
        T0, "2026-11-01T02:00:00Z", "2026-11-03T00:00:00Z", "2026-11-20T00:00:00Z", "2027-03-01T00:00:00Z")}
    assert len(outs) == 1


def test_inject_off_removes_the_section_and_counts_nothing(run, inited):
    nid = add(run, "I keep my answers short.")
    assert run("note", "inject", "off").exit_code == 0
    r = run("prompt", "--stats", env=at(T0))
    assert "## Self-notes" not in r.stdout and "notes\t" not in r.stderr
    assert not (notes_dir(inited) / "heat.json").exists() or nid not in usage(inited)
    assert "inject\toff" in run("note", "status").stdout
    run("note", "inject", "on")
    assert "## Self-notes" in run("prompt").stdout


def test_status(run, inited):
    add(run, "I keep my answers short.")
    out = run("note", "status").stdout
    assert out == (f"notes\t1/40\nchars\t24/1600\ncapacity\t2.5%\ninject\ton\n"
                   f"notes_file\t{inited}/notes/notes.md\narchive\t{inited}/notes/archive\n"
                   f"config\t{inited}/config.toml\n")


def test_list_formats(run, inited):
    a = add(run, "I keep my answers short.")
    b = add(run, "I check my sources twice.")
    assert run("note", "list", "-0", "--by", "time").stdout == f"{a}\0{b}\0"
    out = run("note", "list", "--by", "time", env=at(T0)).stdout
    assert out == f"{a}\t1.5000\tI keep my answers short.\n{b}\t1.5000\tI check my sources twice.\n"


def test_importance_and_heat_of_unknown_notes(run, inited):
    assert run("note", "importance", "n00000000", "2").exit_code == 1
    assert run("note", "heat", "n00000000").exit_code == 1
    nid = add(run, "I keep my answers short.")
    assert run("note", "importance", nid, "4").exit_code == 2


# --- concurrency and crashes ----------------------------------------------------------------

def test_fifty_processes_adding_at_once(anima_bin, inited):
    import random
    import string
    import subprocess

    env = {**os.environ, "ANIMA_HOME": str(inited)}
    subprocess.run([anima_bin, "note", "config", "max_entries", "100"], env=env, check=True)
    subprocess.run([anima_bin, "note", "config", "max_chars", "100000"], env=env, check=True)
    rng = random.Random(7)
    texts = [f"I noticed {''.join(rng.choice(string.ascii_lowercase) for _ in range(40))}." for _ in range(50)]
    procs = [subprocess.Popen([anima_bin, "note", "add", t], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for t in texts]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 50, [e for _, e in results if e]
    assert sorted(lines(inited)) == sorted(texts)
    meta = json.loads((notes_dir(inited) / "meta.json").read_text())["notes"]
    assert set(meta) == {out.decode().strip() for out, _ in results}


@pytest.mark.slow
def test_kill_9_never_leaves_a_torn_note(anima_bin, inited):
    """200 `note add`s, each killed with SIGKILL at a random moment of its run (~70 ms)."""
    import random
    import subprocess

    env = {**os.environ, "ANIMA_HOME": str(inited)}
    subprocess.run([anima_bin, "note", "config", "max_entries", "5"], env=env, check=True)
    rng = random.Random(3)
    written = set()
    for i in range(200):
        text = f"I am note {i} {''.join(rng.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(30))}."
        written.add(text)
        kill_after([anima_bin, "note", "add", text], env, rng.uniform(0.02, 0.1))
        current = lines(inited) if (notes_dir(inited) / "notes.md").exists() else []
        assert set(current) <= written
        for name in ("meta.json", "heat.json"):
            f = notes_dir(inited) / name
            if f.exists():
                json.loads(f.read_text())
        archived = [ln for f in (notes_dir(inited) / "archive").glob("*.md") for ln in f.read_text().splitlines()
                    if not ln.startswith("## ")]
        assert set(archived) <= written
    assert run_ok(anima_bin, env)


def run_ok(anima_bin, env):
    import subprocess

    return subprocess.run([anima_bin, "note", "add", "I survived the crashes."], env=env).returncode == 0


@pytest.mark.parametrize("entry, message", [
    ({"created": "yesterday", "importance": 1}, "created: not an RFC 3339 time: 'yesterday'"),
    ({"created": T0, "importance": "high"}, "importance must be 0, 1, 2 or 3"),
    ({"created": T0, "importance": 7}, "importance must be 0, 1, 2 or 3"),
])
def test_a_bad_meta_entry_is_bad_data(run, inited, entry, message):
    nid = add(run, "I keep my answers short.")
    meta = notes_dir(inited) / "meta.json"
    meta.write_text(json.dumps({"notes": {nid: entry}}))
    r = run("note", "list", env=at(T0))
    assert r.exit_code == 65 and r.stderr.startswith(f"anima: {meta}: ") and message in r.stderr


def test_a_note_that_leaves_takes_its_hits_along(run, inited):
    nid = add(run, "I keep my answers short.")
    run("prompt", env=at(T0))
    assert usage(inited)[nid]["hits"] == 1
    run("note", "clear", "--yes", env=at(T0))
    assert nid not in usage(inited)
    assert add(run, "I keep my answers short.") == nid
    assert json.loads(run("note", "list", "--json", env=at(T0)).stdout)["hits"] == 0


def test_note_add_on_a_terminal_says_how_to_give_the_text(anima_bin, home):
    import pty
    import subprocess

    primary, secondary = pty.openpty()
    p = subprocess.run([anima_bin, "note", "add"], stdin=secondary, capture_output=True, timeout=20)
    os.close(primary)
    os.close(secondary)
    assert (p.returncode, p.stderr) == (2, b"anima: note add: give the text as arguments or on stdin\n")


def test_prompt_on_a_home_without_notes_writes_no_notes_files(run, inited):
    run("prompt")
    assert sorted(p.name for p in notes_dir(inited).iterdir()) == ["archive"]
