"""git.autocommit: a home kept in git commits each change with a message saying what happened."""

import os
import subprocess

import pytest


@pytest.fixture
def git_env(tmp_path, monkeypatch):
    """git with no user or system config: the identity comes from the environment or anima."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var, raising=False)


def git(home, *args):
    return subprocess.run(["git", "-C", str(home), *args], capture_output=True, text=True, check=True).stdout


def subjects(home):
    return git(home, "log", "--format=%s").splitlines()


def repo_home(run, home, on=True):
    assert run("init", "--lang", "en").exit_code == 0
    git(home, "init", "-q")
    git(home, "add", "-A")
    git(home, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    if on:
        assert run("config", "set", "git.autocommit", "true").exit_code == 0


def test_each_change_is_a_commit_saying_what_happened(run, home, git_env):
    repo_home(run, home)
    assert run("note", "add", "I answer better when I slow down.").exit_code == 0
    assert run("session", "append", "--session", "s1", "--role", "user", "I live in Lisbon now.").exit_code == 0
    fid = run("stage", "--session", "s1", "--line", "2", "--quote", "I live in Lisbon").stdout.strip()
    assert run("approve", fid).exit_code == 0
    assert run("self", "set", "direction", input="I want to learn to sail.\n").exit_code == 0
    assert subjects(home)[:5] == [
        "self set: self/blocks/direction.md, self/blocks/.history/direction/1.md", "approve: facts/facts.jsonl",
        "stage: facts/facts.jsonl", "session append: sessions/s1.jsonl", "note add: notes/meta.json, notes/notes.md",
    ]
    assert git(home, "log", "-1", "--format=%b") == "self/blocks/direction.md\nself/blocks/.history/direction/1.md\n\n"
    assert git(home, "status", "--porcelain", "--", "self", "notes/notes.md", "facts", "sessions") == ""
    author = git(home, "log", "-1", "--format=%an <%ae>")
    assert author.strip() == "anima <anima@localhost>"  # no identity configured anywhere


def test_no_commit_for_the_prompt_the_machinery_or_a_refusal(run, home, git_env):
    repo_home(run, home)
    before = subjects(home)
    assert run("prompt").exit_code == 0
    assert run("say", "--speaker", "alice", "hi").exit_code == 0
    assert run("preprocess").exit_code == 0
    assert run("note", "add", "The user's email is bob@example.com").exit_code == 77
    assert run("recall", "nothing-here").exit_code == 1
    assert subjects(home) == before


def test_a_commit_message_never_carries_what_was_said(run, home, git_env):
    repo_home(run, home)
    words = "my password is hunter2, phone 138 1234 5678"
    assert run("session", "append", "--session", "s1", "--role", "user", words).exit_code == 0
    assert run("think", "I noticed the key sk_live_51H8xKjL2mN4pQ7rS9tUvW0yZ in the log.").exit_code == 0
    assert run("note", "add", "I like to slow down when someone is in a hurry.").exit_code == 0
    assert subjects(home)[:3] == ["note add: notes/meta.json, notes/notes.md", "think: self/stream/now.md",
                                  "session append: sessions/s1.jsonl"]
    history = git(home, "log", "--format=%B")
    assert not {"hunter2", "5678", "W0yZ", "hurry", "password"} & set(history.replace(".", " ").split())


def test_a_long_list_of_files_is_cut_in_the_subject_and_whole_in_the_body():
    from anima.infra import git

    files = [f"self/memories/about_topic_number_{i}.md" for i in range(5)]
    assert git.message(["consolidate"], files) == \
        "consolidate: self/memories/about_topic_number_0.md and 4 more"
    assert git.message(["note", "add"], ["notes/notes.md"]) == "note add: notes/notes.md"
    assert len(git.message(["x" * 80], files)) == 72


def test_off_by_default_and_without_git(run, home, git_env):
    repo_home(run, home, on=False)
    assert run("note", "add", "I answer better when I slow down.").exit_code == 0
    assert subjects(home) == ["start"]
    os.rename(home / ".git", home.parent / "git-aside")
    assert run("config", "set", "git.autocommit", "true").exit_code == 0
    assert run("note", "add", "I like to test my own answers.").exit_code == 0  # no repository: nothing to do


def test_concurrent_commands_all_commit(run, home, git_env, anima_bin):
    repo_home(run, home)
    procs = [subprocess.Popen([anima_bin, "think", f"I think thought number {i}."], stderr=subprocess.PIPE, text=True)
             for i in range(6)]
    errors = [p.communicate()[1] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert errors == [""] * 6
    assert subjects(home)[:6] == ["think: self/stream/now.md"] * 6  # one commit each
    assert git(home, "status", "--porcelain", "--", "self") == ""


def test_forgetting_a_transcript_git_never_tracked_still_commits_the_rest(run, home, git_env):
    repo_home(run, home)
    (home / "sessions" / "s1.jsonl").write_text('{"role": "user", "content": "I like tea a lot", '
                                                '"ts": "2026-11-01T00:00:00Z"}\n')  # the host's, never added
    os.utime(home / "sessions" / "s1.jsonl", (1.7e9, 1.7e9))
    fid = run("stage", "--session", "s1", "--line", "1", "--quote", "I like tea").stdout.strip()
    result = run("forget", "--session", "s1", "--yes")
    assert (result.exit_code, result.stderr) == (0, "")
    assert subjects(home)[0].startswith("forget: ")
    assert fid not in git(home, "show", "HEAD:facts/facts.jsonl")
    assert git(home, "status", "--porcelain", "--", "facts", "sessions") == ""


def test_no_git_on_path_is_a_warning_not_a_failed_command(run, home, git_env, anima_bin, tmp_path):
    repo_home(run, home)
    bare = tmp_path / "bin"  # a PATH without git
    bare.mkdir()
    r = subprocess.run([anima_bin, "note", "add", "I like to check my work twice."], capture_output=True, text=True,
                       env={**os.environ, "PATH": str(bare)})
    assert r.returncode == 0
    assert r.stderr == ("anima: warning: git.autocommit: the change is made but not committed: "
                        "git: No such file or directory\n")
    assert "I like to check my work twice." in (home / "notes" / "notes.md").read_text()


@pytest.mark.parametrize("fault", ["a symlink for its lock", "a read-only .git"])
def test_a_commit_anima_cannot_make_is_a_warning_not_a_failed_command(run, home, git_env, anima_bin,
                                                                      read_only, tmp_path, fault):
    """What anima itself refuses while committing (a symlink for its lock, a .git that takes
    no write) is a warning like git's own failures, never a traceback with exit 1: the change
    itself was made."""
    repo_home(run, home)
    lock = home / "..git.lock"  # fs.lock_path of .git
    if lock.exists():
        lock.unlink()
    if fault == "a symlink for its lock":
        lock.symlink_to(tmp_path / "elsewhere")
        why = f"{lock}: is a symbolic link; anima reads and writes only plain files here"
    else:  # git itself cannot make its index.lock
        ro = read_only(home / ".git")
        why = f"fatal: Unable to create '{home}/.git/index.lock': " + \
            ("Read-only file system" if ro.how.startswith("a read-only") else "Permission denied")
    before = subjects(home)
    r = subprocess.run([anima_bin, "note", "add", "I like to check my work twice."], capture_output=True, text=True)
    assert (r.returncode, r.stderr) == (0, f"anima: warning: git.autocommit: the change is made but not committed: "
                                           f"{why}\n")
    assert r.stdout.startswith("n")
    assert "I like to check my work twice." in (home / "notes" / "notes.md").read_text()
    assert subjects(home) == before
    assert not (tmp_path / "elsewhere").exists()
