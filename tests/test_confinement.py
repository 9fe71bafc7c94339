"""Nothing written out of the home, nothing run from outside it: a symbolic link anywhere
inside the home is refused, never followed (anima.infra.fs), and a hook runs only as a
regular file of hooks/ itself.

The cases run the installed `anima` in a real process over real symlinks, and check the exit
status, the one line on stderr, that nothing landed outside the home, and that the home did
not change.
"""

import json
import os
import shutil
import stat
import subprocess

import pytest

from anima.infra.home import Home
from anima.pipeline import dispatch, queues

from conftest import NOW_TS, file_time, snapshot

LINK_REFUSED = "is a symbolic link; anima reads and writes only plain files here"


def anima(anima_bin, *args, input=None, home=None, env=None):
    env = {**os.environ, **({"ANIMA_HOME": str(home)} if home else {}), **(env or {})}
    return subprocess.run([anima_bin, *args], input=input, capture_output=True, text=True, env=env, timeout=120)


def everything(root) -> dict:
    """Every entry under `root` (links not followed): path -> bytes, "dir" or the link's target."""
    out = {}
    for dirpath, dirnames, names in os.walk(root):
        for name in dirnames + names:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel] = "-> " + os.readlink(path)
            elif os.path.isdir(path):
                out[rel] = "dir"
            else:
                with open(path, "rb") as f:
                    out[rel] = f.read()
    return out


@pytest.fixture
def inited(home, anima_bin):
    assert anima(anima_bin, "init", "--lang", "en").returncode == 0
    assert anima(anima_bin, "note", "add", "I answer better when I slow down first.").returncode == 0
    return home


def unlocked(files: dict) -> dict:
    """The files without the (empty) lock files a command took."""
    return {p: d for p, d in files.items() if not (os.path.basename(p).startswith(".") and p.endswith(".lock"))}


def relink(home, rel, outside):
    """Move home/REL out of the home and leave a symbolic link to it in its place."""
    inside = home / rel
    away = outside / rel.replace("/", "_")
    if inside.exists():
        shutil.move(inside, away)
    else:
        away.mkdir(parents=True)
    os.symlink(away, inside)
    return inside, away


def act(home, command, params):
    return queues.Queue(Home(str(home)), "action").deliver(dispatch.action(command, params, NOW_TS, "trace_t1"))


# Each place the issue names, and a command that writes there.
WRITES = {
    "notes": (["note", "add", "I keep my answers short when someone is in a hurry."], None),
    "self": (["self", "set", "direction"], "I want to learn to sail.\n"),
    "self/stream": (["think", "I decide to rest for a while."], None),
    "pipeline/inbox": (["say", "--speaker", "alice", "are you there?"], None),
    "self/memories": (["memories", "search", "Alice"], None),  # (a read: see below for the write)
    "self/diary": (["diary", "2026-11-30"], None),
}


@pytest.mark.parametrize("rel", list(WRITES))
def test_a_linked_directory_inside_the_home_is_refused(inited, tmp_path, anima_bin, rel):
    outside = tmp_path / "outside"
    outside.mkdir()
    link, away = relink(inited, rel, outside)
    # what a reader of the linked directory would take for the home's
    (away / "2026-11-30.md").write_text("## 09:00\n\nAlice wrote this outside the home.\n\n")
    (away / "about_alice.md").write_text("Alice wrote this outside the home.\n")
    before_out, before_home = everything(outside), snapshot(inited)
    argv, stdin = WRITES[rel]
    r = anima(anima_bin, *argv, input=stdin)
    assert (r.returncode, r.stdout) == (77, "")
    assert r.stderr == f"anima: {link}: {LINK_REFUSED}\n"
    assert everything(outside) == before_out
    assert snapshot(inited) == before_home


@pytest.mark.parametrize("command, params, rel", [
    ("diary.write", {"text": "Today I waited."}, "self/diary"),
    ("memory.write", {"topic": "about_alice", "text": "Alice likes rain."}, "self/memories"),
    ("note.add", {"text": "I wait before I answer."}, "notes"),
])
def test_a_builtin_action_never_writes_through_a_linked_directory(inited, tmp_path, anima_bin, command, params,
                                                                   rel):
    outside = tmp_path / "outside"
    outside.mkdir()
    name = act(inited, command, params)
    link, _ = relink(inited, rel, outside)
    before = everything(outside)
    r = anima(anima_bin, "dispatch")
    assert everything(outside) == before
    assert not (inited / "pipeline" / "action_queue" / "done" / name).exists()
    refused = f"{link}: {LINK_REFUSED}"
    if r.returncode == 77:  # refused outright...
        assert (r.stdout, r.stderr) == ("", f"anima: {refused}\n")
    else:  # ...or dead-lettered with the refusal as its reason
        reason = json.loads((inited / "pipeline" / "dead_letter" / (name + ".reason")).read_text())
        assert refused in reason["why"]


@pytest.mark.parametrize("rel, argv", [
    ("self/state.md", ["state", "set", "mood: calm"]),
    ("notes/notes.md", ["note", "add", "I keep my answers short when someone is in a hurry."]),
])
def test_a_linked_file_is_refused_and_its_target_untouched(inited, tmp_path, anima_bin, rel, argv):
    target = tmp_path / "target.md"
    target.write_text("not the home's\n")
    (inited / rel).unlink(missing_ok=True)
    os.symlink(target, inited / rel)
    r = anima(anima_bin, *argv)
    assert (r.returncode, r.stdout, r.stderr) == (77, "", f"anima: {inited / rel}: {LINK_REFUSED}\n")
    assert target.read_text() == "not the home's\n" and os.path.islink(inited / rel)


def test_a_fifo_in_place_of_a_state_file_is_refused_without_waiting(inited, anima_bin):
    path = inited / "self" / "state.md"
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    for argv in (["state", "show"], ["state", "set", "mood: calm"]):
        r = anima(anima_bin, *argv)  # (a read that opened it would wait for a writer: the timeout fails it)
        assert (r.returncode, r.stdout) == (77, "")
        assert r.stderr == f"anima: {path}: is not a regular file; anima reads and writes only plain files here\n"
    assert stat.S_ISFIFO(os.lstat(path).st_mode)


def test_a_file_where_a_directory_should_be_is_refused(inited, anima_bin):
    shutil.rmtree(inited / "self" / "stream")
    (inited / "self" / "stream").write_text("not a directory\n")
    r = anima(anima_bin, "think", "I decide to rest for a while.")
    assert (r.returncode, r.stdout) == (77, "")
    assert r.stderr == (f"anima: {inited / 'self' / 'stream'}: is not a directory; anima reads and writes only "
                        "plain files here\n")
    assert (inited / "self" / "stream").read_text() == "not a directory\n"


@pytest.mark.parametrize("rel, argv", [
    ("pipeline/message_queue", ["preprocess"]),      # the queue's rename in
    ("pipeline/inbox/pending/cur", ["preprocess"]),  # the claim
    ("index", ["index", "rebuild"]),
    # (cache/ too, but a read command does without it: see test_a_read_command_goes_without_a_cache...)
    ("log", ["prompt"]),
    ("sessions", ["session", "append", "--session", "s1", "--role", "user", "hello"]),
])
def test_queues_index_cache_and_logs_never_write_through_a_link(inited, tmp_path, anima_bin, rel, argv):
    assert anima(anima_bin, "say", "--speaker", "bob", "first").returncode == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    (inited / "log").mkdir(exist_ok=True)
    link, _ = relink(inited, rel, outside)
    before = everything(outside)
    r = anima(anima_bin, *argv)
    assert everything(outside) == before
    assert (r.returncode, r.stdout) == (77, "")
    assert r.stderr == f"anima: {link}: {LINK_REFUSED}\n"


@pytest.mark.parametrize("rel", ["self/stream/archive", "self/autobiography"])
def test_a_change_set_with_a_link_in_its_way_is_refused_before_its_first_write(inited, tmp_path, anima_bin, rel):
    assert anima(anima_bin, "think", "I decide to learn the harbour's tides.").returncode == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    link, _ = relink(inited, rel, outside)
    before_out, before_home = everything(outside), unlocked(snapshot(inited))
    r = anima(anima_bin, "consolidate", env={"ANIMA_NOW": "2026-12-01T03:00:00Z"})  # the night after
    assert (r.returncode, r.stdout, r.stderr) == (77, "", f"anima: {link}: {LINK_REFUSED}\n")
    assert everything(outside) == before_out
    assert unlocked(snapshot(inited)) == before_home  # no journal left to finish: nothing was begun
    assert not (inited / "pipeline" / "consolidate.pending").exists()


def test_a_cached_prompt_does_not_hide_a_directory_moved_out_and_linked(inited, tmp_path, anima_bin):
    for dirpath, _, names in os.walk(inited):  # settled files: the prompt is cached by their signatures
        for name in names:
            os.utime(os.path.join(dirpath, name), (file_time(-3600), file_time(-3600)))
    for _ in range(2):  # (the second is the one a cache entry answers)
        first = anima(anima_bin, "prompt")
        assert first.returncode == 0 and "slow down first" in first.stdout
    outside = tmp_path / "outside"
    outside.mkdir()
    link, _ = relink(inited, "notes", outside)  # the same files, now outside: their signatures unchanged
    r = anima(anima_bin, "prompt")
    assert (r.returncode, r.stdout, r.stderr) == (77, "", f"anima: {link}: {LINK_REFUSED}\n")


def test_a_signature_inside_the_home_is_the_files_own(inited, tmp_path):
    from anima.infra import fs
    from anima.infra.errors import Refused

    Home(str(inited))
    notes = inited / "notes" / "notes.md"
    sig = fs.signature(str(notes))
    outside = tmp_path / "outside"
    outside.mkdir()
    relink(inited, "notes", outside)
    assert fs.signature(str(outside / "notes" / "notes.md")) == sig  # outside any home: as it is
    with pytest.raises(Refused, match="notes: is a symbolic link"):
        fs.signature(str(notes))  # the same file, but through a link: no cache key stands for it


def test_check_reports_a_linked_directory_rather_than_stopping(inited, tmp_path, anima_bin):
    outside = tmp_path / "outside"
    outside.mkdir()
    link, _ = relink(inited, "notes", outside)
    r = anima(anima_bin, "check")
    assert (r.returncode, r.stderr) == (1, "anima: check: 3 findings\n")
    assert r.stdout.splitlines() == [f"budget\t-\t{link}: {LINK_REFUSED}", f"private\t-\t{link}: {LINK_REFUSED}",
                                     "mode\tnotes\ta symbolic link: anima reads and writes only plain files"]


def test_a_linked_event_in_a_queue_is_a_dead_letter_and_its_target_unread(inited, tmp_path, anima_bin):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"envelope": {}, "payload": {"text": "from outside"}}))
    os.symlink(secret, inited / "pipeline" / "inbox" / "pending" / "event_00000000000000000001aaaa.json")
    r = anima(anima_bin, "preprocess")
    assert (r.returncode, r.stdout) == (0, "")
    reason = json.loads((inited / "pipeline" / "dead_letter" / "event_00000000000000000001aaaa.json.reason")
                        .read_text())
    assert LINK_REFUSED in reason["why"]
    assert os.listdir(inited / "pipeline" / "message_queue") in ([], ["tmp"])
    assert json.loads(secret.read_text())["payload"] == {"text": "from outside"}


def test_a_home_reached_through_a_symlink_works(inited, tmp_path, anima_bin):
    link = tmp_path / "link-to-home"
    os.symlink(inited, link)
    for argv in (["note", "add", "I keep my answers short when someone is in a hurry."],
                 ["say", "--speaker", "alice", "Are you coming tonight?"], ["preprocess"], ["internalize"],
                 ["think", "I decide to write in my diary: Alice asked about tonight."], ["externalize"],
                 ["dispatch"], ["tick"], ["index", "rebuild"], ["prompt"]):
        r = anima(anima_bin, *argv, home=link)
        assert r.returncode == 0, (argv, r.stderr)
    assert "Alice asked about tonight." in anima(anima_bin, "diary", home=link).stdout
    assert "in a hurry" in (inited / "notes" / "notes.md").read_text()
    assert os.listdir(inited / "self" / "diary")  # landed in the home itself, through the link
    archive = tmp_path / "a.tar.zst"
    assert anima(anima_bin, "export", str(archive), home=link).returncode == 0
    r = anima(anima_bin, "import", str(archive), "--into", str(tmp_path / "moved"))
    assert (r.returncode, r.stderr) == (0, "")
    assert (tmp_path / "moved" / "notes" / "notes.md").read_text() == (inited / "notes" / "notes.md").read_text()


def test_a_home_whose_git_is_a_link_still_commits(inited, tmp_path, anima_bin, monkeypatch):
    # git's own directory is git's business; anima's autocommit lock stays beside it, inside the home
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")

    def git(*args):
        return subprocess.run(["git", "-C", str(inited), *args], capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    shutil.move(inited / ".git", tmp_path / "repo.git")
    os.symlink(tmp_path / "repo.git", inited / ".git")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    assert anima(anima_bin, "config", "set", "git.autocommit", "true").returncode == 0
    r = anima(anima_bin, "note", "add", "I keep my answers short when someone is in a hurry.")
    assert (r.returncode, r.stderr) == (0, "")
    assert git("log", "-1", "--format=%s").startswith("note add: notes/")
    assert not os.path.exists(tmp_path / "repo.git" / ".anima-autocommit.lock")


# --- hooks ----------------------------------------------------------------------------------

def write_hook(path, witness):
    path.write_text(f"#!/bin/sh\necho ran >> '{witness}'\n")
    path.chmod(0o700)
    return path


def never_run(home, anima_bin, witness, why):
    """An action for the hook ping: dispatch does not run it, and dead-letters it saying `why`."""
    name = act(home, "ping", {})
    r = anima(anima_bin, "dispatch")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert not witness.exists()
    assert dead_reason(home, name) == why


def dead_reason(home, name):
    return json.loads((home / "pipeline" / "dead_letter" / (name + ".reason")).read_text())["why"]


def test_a_regular_executable_hook_runs(inited, tmp_path, anima_bin):
    (inited / "hooks").mkdir()
    witness = tmp_path / "ran"
    write_hook(inited / "hooks" / "ping", witness)
    act(inited, "ping", {})
    assert anima(anima_bin, "dispatch").returncode == 0
    assert witness.read_text() == "ran\n"


@pytest.mark.parametrize("case", ["hook a link", "hooks/ a link", "not executable", "a directory", "a fifo"])
def test_a_hook_that_is_not_a_regular_executable_file_of_hooks_never_runs(inited, tmp_path, anima_bin, case):
    witness = tmp_path / "ran"
    hooks = inited / "hooks"
    outside = tmp_path / "outside"
    outside.mkdir()
    if case == "hooks/ a link":
        write_hook(outside / "ping", witness)
        os.symlink(outside, hooks)
        why = f"hook ping: {hooks}: {LINK_REFUSED}; not run"
    else:
        hooks.mkdir()
        hook = hooks / "ping"
        if case == "hook a link":
            os.symlink(write_hook(outside / "ping", witness), hook)
            why = f"hook ping: {hook} is a symbolic link; a hook must be a regular file in hooks/; not run"
        elif case == "not executable":
            write_hook(hook, witness).chmod(0o600)
            why = f"hook ping: {hook} is not executable (chmod +x to enable it); not run"
        elif case == "a directory":
            hook.mkdir()
            why = f"hook ping: {hook} is not a regular file; not run"
        else:
            os.mkfifo(hook)
            why = f"hook ping: {hook} is not a regular file; not run"
    never_run(inited, anima_bin, witness, why)


NOBODY = 65534


def user(uid):
    import pwd

    return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"


@pytest.mark.parametrize("case", ["world-writable", "group-writable", "owned by nobody", "a hard link",
                                  "hooks/ world-writable", "hooks/ owned by nobody"])
def test_a_hook_others_could_have_changed_never_runs(inited, tmp_path, anima_bin, case):
    """A hook runs as her: one that someone else owns or may write, or a hard link sharing its
    content with a file elsewhere, is dead-lettered with why, and doctor warns."""
    witness = tmp_path / "ran"
    hooks = inited / "hooks"
    hooks.mkdir(mode=0o700)
    hook = write_hook(hooks / "ping", witness)
    target = hooks if case.startswith("hooks/") else hook
    if "nobody" in case:
        if os.geteuid() != 0:
            pytest.skip("only root can give a file to another user")
        os.chown(target, NOBODY, -1)
        why = f"hook ping: {target} is owned by {user(NOBODY)}, not by the user running anima " \
            f"({user(os.geteuid())}); not run"
    elif case == "a hard link":
        outside = tmp_path / "outside"
        outside.mkdir()
        hook.unlink()
        os.link(write_hook(outside / "ping", witness), hook)
        why = f"hook ping: {hook} has 2 hard links; a hook must have one (its content is shared with a " \
            "file elsewhere); not run"
    else:
        mode = 0o770 if case == "group-writable" else 0o777
        target.chmod(mode)
        who = "group" if case == "group-writable" else "group and others"
        why = f"hook ping: {target} is writable by {who} (mode {mode:04o}; chmod go-w to trust it); not run"
    never_run(inited, anima_bin, witness, why)
    r = anima(anima_bin, "doctor")
    if case.startswith("hooks/"):  # hooks/ itself: said of it, whatever it holds
        problem = why.removeprefix("hook ping: ").removesuffix("; not run")
        assert f"WARN\thooks\t{problem}; dispatch runs no hook from it\t" in r.stdout
    else:
        assert f"WARN\thooks\t1 hook dispatch refuses to run (first: {why})\t" in r.stdout


@pytest.mark.parametrize("rel, args", [
    ("pipeline/stream.jsonl", ("think", "I notice the light changing.")),
    ("log/llm.jsonl", ("internalize", "--llm", "cmd:/bin/cat")),
])
def test_a_file_link_read_before_it_is_written_is_refused_not_a_bug(inited, tmp_path, anima_bin, rel, args):
    """Files read from their end (the stream's bookkeeping, the model log for the budget) are
    reached as every file is: a link there is 77 naming it, never the 70 of an ELOOP."""
    assert anima(anima_bin, "think", "I keep a lighthouse log.").returncode == 0
    assert anima(anima_bin, "say", "--speaker", "alice", "hello").returncode == 0
    assert anima(anima_bin, "preprocess").returncode == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    away = outside / "file"
    away.write_text('{"at": "2026-11-30T21:00:00Z", "ok": true}\n')
    (inited / rel).parent.mkdir(exist_ok=True)
    if (inited / rel).exists():
        (inited / rel).unlink()
    os.symlink(away, inited / rel)
    before = snapshot(inited)
    r = anima(anima_bin, *args)
    assert (r.returncode, r.stdout, r.stderr) == (77, "", f"anima: {inited / rel}: {LINK_REFUSED}\n")
    assert away.read_text() == '{"at": "2026-11-30T21:00:00Z", "ok": true}\n'
    assert unlocked(snapshot(inited)) == unlocked(before)


@pytest.mark.parametrize("rel", ["cache", "cache/config.json", "notes/heat.json"])
def test_a_read_command_goes_without_a_cache_a_link_stands_for(inited, tmp_path, anima_bin, rel):
    """Caches and the notes' usage counts are derived: prompt prints what it prints without
    them, says so once, and writes nothing through the link."""
    assert anima(anima_bin, "prompt").returncode == 0  # the caches are there
    expected = anima(anima_bin, "prompt").stdout
    outside = tmp_path / "outside"
    outside.mkdir()
    inside, away = relink(inited, rel, outside)
    before = everything(outside)
    r = anima(anima_bin, "prompt")
    assert (r.returncode, r.stdout) == (0, expected)
    warning = (f"anima: warning: {inside}: {LINK_REFUSED}; went without this derived file "
               "(remove what is there, and anima makes it again)\n")
    # (the prompt's own cache answers before the config is read: it has nothing to go without)
    assert r.stderr == ("" if rel == "cache/config.json" else warning)
    r = anima(anima_bin, "note", "list")
    assert (r.returncode, r.stderr) == (0, warning)
    assert everything(outside) == before
    assert os.path.islink(inside)
