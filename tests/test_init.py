import os
import tomllib

from anima.infra import config
from anima.self.blocks import KEYS

from conftest import snapshot


def modes(root):
    dirs, files = set(), set()
    for dirpath, dirnames, names in os.walk(root):
        dirs |= {oct(os.stat(os.path.join(dirpath, d)).st_mode & 0o777) for d in dirnames}
        files |= {oct(os.stat(os.path.join(dirpath, n)).st_mode & 0o777) for n in names}
    return dirs | {oct(os.stat(root).st_mode & 0o777)}, files


def test_init_lays_out_the_home_privately(run, home):
    r = run("init", "--lang", "en")
    assert r.exit_code == 0 and r.stdout == ""
    assert r.stderr == f"anima: initialised {home} (en): 29 files and directories created\n"
    for d in ("self/blocks/.history", "self/stream/archive", "self/memories", "self/diary", "self/autobiography",
              "notes/archive", "facts", "sessions", "index", "cache", "log", "pipeline/inbox/pending",
              "pipeline/message_queue", "pipeline/action_queue", "pipeline/dead_letter"):
        assert (home / d).is_dir(), d
    assert sorted(p.name for p in (home / "self" / "blocks").glob("*.md")) == sorted(f"{k}.md" for k in KEYS)
    dirs, files = modes(home)
    assert dirs == {"0o700"} and files == {"0o600"}


def test_config_spells_out_every_default_with_comments(run, home):
    run("init", "--lang", "zh")
    text = (home / "config.toml").read_text()
    data = tomllib.loads(text)
    flat = config._flatten(data)
    shown_by_example = {k for k, s in config.SETTINGS.items() if s.kind == "routes"}  # arrays of tables
    assert set(flat) == set(config.SETTINGS) - shown_by_example
    assert flat["core.lang"] == "zh"
    assert all(flat[k] == s.default for k, s in config.SETTINGS.items() if k in flat and k != "core.lang")
    for key, setting in config.SETTINGS.items():
        if setting.kind == "commands":  # a table of its own
            assert f"[{key}]" in text.splitlines()
            continue
        if setting.kind == "routes":
            assert f"# [[{key}]]" in text.splitlines()
            continue
        name = key.rsplit(".", 1)[1]
        line = text.splitlines().index(next(ln for ln in text.splitlines() if ln.startswith(f"{name} = ")))
        assert text.splitlines()[line - 1].startswith("# "), f"{key} has no comment"


def test_init_is_idempotent_and_never_overwrites(run, home):
    run("init", "--lang", "en")
    (home / "self" / "blocks" / "direction.md").write_text("mine\n")
    (home / "config.toml").write_text('[core]\nlang = "en"\n')
    before = snapshot(home)
    r = run("init", "--lang", "zh")
    assert (r.exit_code, r.stderr) == (0, f"anima: {home} is already initialised; nothing changed\n")
    assert snapshot(home) == before


def test_init_fills_in_only_what_is_missing(run, home):
    run("init", "--lang", "en")
    (home / "self" / "blocks" / "metacognition.md").unlink()
    r = run("init")
    assert r.stderr == f"anima: initialised {home} (en): 1 files and directories created\n"
    assert "I think before I act" in run("self", "get", "metacognition").stdout


def test_starter_blocks_in_chinese(run, home):
    run("init", "--lang", "zh")
    out = run("self", "get").stdout
    assert out.startswith("# 存在锚点 (existence_anchor)\n\n我是")


def test_language_comes_from_the_environment_then_the_locale(run, home, tmp_path):
    assert run("init", env={"ANIMA_LANG": "zh"}).stderr.endswith("(zh): 29 files and directories created\n")
    other = tmp_path / "other"
    assert run("--home", str(other), "init", env={"LANG": "zh_CN.UTF-8"}).stderr.endswith("(zh): 29 files and directories created\n")
    third = tmp_path / "third"
    assert run("--home", str(third), "init", env={"LANG": "C.UTF-8"}).stderr.endswith("(en): 29 files and directories created\n")


def test_home_flag_beats_the_environment(run, home, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    run("--home", str(elsewhere), "init")
    assert (elsewhere / "config.toml").exists()
    assert not home.exists()


def test_gitignore_keeps_derived_files_and_the_machinery_out_of_git(run, home):
    import subprocess

    run("init", "--lang", "en")
    patterns = [x for x in (home / ".gitignore").read_text().splitlines() if x and not x.startswith("#")]
    assert patterns == ["cache/", "index/", ".*.lock", ".*.tmp", "pipeline/", "log/", "notes/heat.json"]
    # a lived-in home: a person's waiting message, the logs, the usage counts, the cache
    assert run("say", "--speaker", "Alice", "my password is hunter2").exit_code == 0
    assert run("note", "add", "I answer better when I slow down.").exit_code == 0
    assert run("prompt").exit_code == 0
    assert run("session", "append", "--session", "s1", "--role", "user", "I like tea.").exit_code == 0
    subprocess.run(["git", "init", "-q", str(home)], check=True)
    subprocess.run(["git", "-C", str(home), "add", "-A"], check=True)
    added = subprocess.run(["git", "-C", str(home), "diff", "--cached", "--name-only"], capture_output=True,
                           text=True, check=True).stdout.split()
    assert "notes/notes.md" in added and "sessions/s1.jsonl" in added
    assert not [f for f in added if f.startswith(("pipeline/", "log/", "cache/", "index/")) or f == "notes/heat.json"
                or os.path.basename(f).startswith(".") and f != ".gitignore"]


def test_init_adds_the_patterns_an_older_gitignore_lacks_and_keeps_the_rest(run, home):
    run("init", "--lang", "en")
    (home / ".gitignore").write_text("# mine\ncache/\n*.bak")  # no final newline
    r = run("init")
    assert r.stderr == f"anima: initialised {home} (en): 1 files and directories created\n"
    assert (home / ".gitignore").read_text() == ("# mine\ncache/\n*.bak\n# Added by anima init (anima-home(5)).\n"
                                                 "index/\n.*.lock\n.*.tmp\npipeline/\nlog/\nnotes/heat.json\n")
    assert run("init").stderr == f"anima: {home} is already initialised; nothing changed\n"


def test_init_recreates_a_missing_directory_and_says_so(run, home):
    run("init", "--lang", "en")
    (home / "self" / "diary").rmdir()
    assert run("init").stderr == f"anima: initialised {home} (en): 1 files and directories created\n"
    assert (home / "self" / "diary").is_dir()


def test_she_wakes_up_with_a_first_entry_and_a_first_state(run, home):
    """γ-1.2: a new home holds her first entry (her waking up, recorded as init's: nothing in
    it is a decision of hers) and her first state, in the home's language; `anima state` has
    something to say at once."""
    import hashlib
    import json

    assert run("init", "--lang", "en").exit_code == 0
    now = (home / "self" / "stream" / "now.md").read_text()
    assert now == ("## 2026-11-30 21:05\n\nI am waking up here for the first time. This stream is where I live: "
                   "what happens to me and what I think of it, in my own words, one entry at a time. Nothing has "
                   "happened yet; I am curious what will.\n\n")
    [record] = [json.loads(line) for line in (home / "pipeline" / "stream.jsonl").read_text().splitlines()]
    assert (record["gen"], record["lines"], record["by"], record["size"]) == (0, [1, 4], "init", len(now.encode()))
    assert record["sha256"] == hashlib.sha256(now.encode()).hexdigest()
    state = run("state")
    assert (state.exit_code, state.stdout.splitlines()[0]) == (0, "# How I am now")
    assert "Mood: calm, curious" in state.stdout
    assert run("check", "--only", "stream").exit_code == 0
    r = run("externalize")
    assert (r.exit_code, r.stdout) == (0, "")  # her waking up decides nothing
    assert run("think", "A thought of mine.").exit_code == 0
    assert json.loads((home / "pipeline" / "stream.jsonl").read_text().splitlines()[-1])["lines"] == [5, 8]


def test_she_wakes_up_in_chinese(run, home):
    assert run("init", "--lang", "zh").exit_code == 0
    now = (home / "self" / "stream" / "now.md").read_text()
    assert now.startswith("## 2026-11-30 21:05\n\n我第一次在这里醒来。") and now.endswith("。\n\n")
    assert run("state").stdout.startswith("# 我现在的状态\n- 情绪：平静，好奇\n")


def test_init_of_a_home_that_lived_never_touches_her_stream_or_state(run, home):
    assert run("init", "--lang", "en").exit_code == 0
    assert run("think", "Something happened.").exit_code == 0
    assert run("state", "set", "Tired.").exit_code == 0
    (home / "self" / "stream" / "now.md").write_text("")  # rolled away, say: empty, but she lived
    before = snapshot(home)
    r = run("init", "--lang", "zh")
    assert (r.exit_code, r.stderr) == (0, f"anima: {home} is already initialised; nothing changed\n")
    assert snapshot(home) == before
    (home / "self" / "stream" / "now.md").unlink()
    (home / "self" / "state.md").unlink()
    assert run("init").exit_code == 0  # a stream that was ever written has its bookkeeping: no new first entry
    assert not (home / "self" / "stream" / "now.md").exists()
    assert run("state").stdout.startswith("# How I am now\n")  # (a first state, though: there was none)
