"""The fast path of `anima recall` (anima/__main__.py, anima.commands.fast.recall) does what the
click command does: the same stdout, stderr and exit status, and no file but the cache written,
for terms and questions, with the index and without, and sends every other form to click.

Each comparison runs the installed console script on the same home twice, once as it is and
once with ANIMA_FAST=0, through a probe that notes at exit whether click was imported."""

import json
import os
import subprocess
import sys

import pytest
from test_fast import PROBE, files

from conftest import ANIMA_BIN, file_time

TURNS = [
    ("user", "I drink green tea every morning."),
    ("assistant", "Green tea it is. Any in the evening?"),
    ("user", "Oolong in the evening, black tea on Sundays."),
    ("user", "My cat Miso sleeps by the window."),
    ("user", "去年春天我们去公园采花，非常开心。"),
]


def write(home, name, turns, day):
    with open(home / "sessions" / f"{name}.jsonl", "w") as f:
        f.write(json.dumps({"type": "session", "id": name}) + "\n")
        for i, (role, text) in enumerate(turns):
            f.write(json.dumps({"role": role, "content": text, "ts": f"2026-11-{day:02d}T10:{i:02d}:00Z"},
                               ensure_ascii=False) + "\n")


@pytest.fixture(scope="module", params=["index", "scan"])
def homes(request, tmp_path_factory):
    """A home with two sessions, aged; indexed (and a hot session the index leaves to the scan,
    whose note goes to stderr) or not."""
    home = tmp_path_factory.mktemp("recall") / "home"
    env = {**os.environ, "ANIMA_HOME": str(home)}
    subprocess.run([ANIMA_BIN, "init", "--lang", "en"], env=env, check=True, capture_output=True)
    write(home, "s1", TURNS, 1)
    write(home, "s2", [("user", "Coffee, never tea."), ("assistant", "Noted: coffee.")], 2)
    write(home, "s0", TURNS[:1], 1)  # (said again: s0's turn and s1's first are one result)
    past = file_time(-3 * 86400)
    for name in os.listdir(home / "sessions"):
        os.utime(home / "sessions" / name, (past, past))
    if request.param == "index":
        subprocess.run([ANIMA_BIN, "index", "rebuild"], env=env, check=True, capture_output=True)
        subprocess.run([ANIMA_BIN, "index", "on"], env=env, check=True, capture_output=True)
        write(home, "s3", [("user", "A fresh pot of tea, just now.")], 3)  # hot: scanned, and said
    else:
        subprocess.run([ANIMA_BIN, "index", "off"], env=env, check=True, capture_output=True)
    return home


def both(tmp_path, anima_bin, home, words):
    """(exit status, stdout, stderr) of `anima recall WORDS` on the fast path and on the click
    path, and the path the first took; neither changes a file but the cache."""
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    seen = tmp_path / "seen"
    before = files(home)
    got, paths = [], []
    for fast in ("1", "0"):
        proc = subprocess.run([sys.executable, str(script), str(seen), anima_bin, "recall", *words],
                              capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
                              env={**os.environ, "ANIMA_HOME": str(home), "ANIMA_FAST": fast})
        got.append((proc.returncode, proc.stdout.decode(), proc.stderr.decode()))
        paths.append(seen.read_text())
        assert files(home) == before, words
    assert paths[1] == "click"
    assert got[0] == got[1], words
    return got[0], paths[0]


FAST = [
    ["tea"],
    ["green", "tea"],
    ["tea", "--json"],
    ["--limit", "1", "tea"],
    ["tea", "--limit=2", "--no-tiers", "--json"],
    ["tea", "coffee", "morning"],  # no turn holds all three: relaxed, and said
    ["--ask", "What tea do I drink in the evening?"],
    ["--ask=When did I drink oolong?", "--limit", "3"],
    ["采花"],
    ["nothingmatcheszz"],  # exit 1
    ["tea", "--since", "2026-11-02"],
    ["--since=2026-11-01T10:01:00Z", "tea", "--who", "user"],
    ["tea", "--who=me", "--json"],
]
CLICK = [
    ["tea", "--since", "yesterday"],
    ["tea", "--who", "nobody"],
    ["tea", "--who", "User"],
    ["--batch"],
    ["--self", "tea"],
    ["--facts", "tea"],
    ["-h"],
    ["tea", "--"],
    ["--limit", "0", "tea"],
    ["--limit", "07", "tea"],
    ["--limit", "tea"],
    ["--ask", "a question", "tea"],
    ["--ask", ""],
    ["!!!"],
    ["--json"],
    [],
]


@pytest.mark.parametrize("words", FAST, ids=" ".join)
def test_terms_and_questions_are_served_fast_and_the_same(tmp_path, anima_bin, homes, words):
    (code, out, err), path = both(tmp_path, anima_bin, homes, words)
    assert path == "fast"
    assert code == (1 if words == ["nothingmatcheszz"] else 0) and (out == "") == (code == 1)


def test_the_fast_path_folds_words_said_again(tmp_path, anima_bin, homes):
    (_, out, _), path = both(tmp_path, anima_bin, homes, ["green", "tea", "--json", "--no-tiers"])
    found = [json.loads(x) for x in out.splitlines()]
    said = [[x["session"], *(a["session"] for a in x["also"])] for x in found if x["text"] == TURNS[0][1]]
    assert path == "fast" and said in ([["s0", "s1"]], [["s1", "s0"]])  # one shown, the other in its `also`


def test_what_the_fast_path_says_on_stderr(tmp_path, anima_bin, homes):
    (_, _, err), _ = both(tmp_path, anima_bin, homes, ["tea", "coffee", "morning"])
    assert "anima: no turn has every term; showing turns with any of them (relaxed)\n" in err
    indexed = (homes / "sessions" / "s3.jsonl").exists()
    assert ("index excludes 1 sessions modified in the last" in err) == indexed


def test_no_relaxed_line_when_a_later_result_has_every_word(tmp_path, anima_bin, homes):
    """For a question, the turn holding every word that asks it again ("Green tea it is. Any
    in the evening?") goes with the rest: a relaxed turn comes first, and since a result holds
    every word, neither path says the relaxed line."""
    (code, out, err), path = both(tmp_path, anima_bin, homes, ["--ask", "Any green tea in the evening?", "--json"])
    found = [json.loads(x) for x in out.splitlines()]
    assert path == "fast" and code == 0 and found[0]["relaxed"]
    assert any(not x["relaxed"] and x["text"] == TURNS[1][1] for x in found)
    assert "relaxed" not in err


@pytest.mark.parametrize("words", CLICK, ids=lambda w: " ".join(w) or "nothing")
def test_other_forms_go_to_click(tmp_path, anima_bin, homes, words):
    _, path = both(tmp_path, anima_bin, homes, words)
    assert path == "click"


def test_a_git_home_goes_to_click(tmp_path, anima_bin, homes):
    """What a recall writes (the scan's cache) is the autocommit's to judge, which only the click
    command runs."""
    subprocess.run(["git", "init", "-q", str(homes)], check=True)
    try:
        (code, out, _), path = both(tmp_path, anima_bin, homes, ["tea"])
        assert (path, code) == ("click", 0) and "tea" in out
    finally:
        subprocess.run(["rm", "-rf", str(homes / ".git")], check=True)


def test_a_bad_configuration_goes_to_click(tmp_path, anima_bin, homes):
    """The fast path reads config.toml as the click command does, and leaves a bad one to it
    (which says so, 78)."""
    config = homes / "config.toml"
    good = config.read_bytes()
    config.write_text("[recall\n")
    try:
        (code, out, err), path = both(tmp_path, anima_bin, homes, ["tea"])
        assert (path, code, out) == ("click", 78, "") and "not valid TOML" in err
    finally:
        config.write_bytes(good)


def test_a_warning_click_would_write_otherwise_goes_to_click(tmp_path, anima_bin, homes):
    """A damaged transcript whose name holds an escape sequence: the search warns of it, click
    writes the warning without the sequence (stderr is no terminal), and so the fast path
    leaves the whole command to click; the same bytes either way."""
    bad = homes / "sessions" / "b\x1b[31mbad.jsonl.zst"
    bad.write_bytes(b"not zstd at all, green tea")
    os.utime(bad, (file_time(-3 * 86400),) * 2)
    try:
        (code, out, err), path = both(tmp_path, anima_bin, homes, ["tea"])
        assert (path, code) == ("click", 0) and "tea" in out
        assert "bbad.jsonl.zst: corrupt zstd data" in err and "\x1b" not in err
    finally:
        bad.unlink()


def test_a_stderr_that_is_not_utf8_goes_to_click(tmp_path, anima_bin, homes, monkeypatch):
    monkeypatch.setenv("PYTHONIOENCODING", "latin-1")
    (code, out, err), path = both(tmp_path, anima_bin, homes, ["tea", "coffee", "morning"])
    assert (path, code) == ("click", 0) and "(relaxed)" in err
