"""A symbolic link in place of any file of a lived-in home: every main command refuses it
(77) or does without it (a cache), never fails as a bug (70), and never writes through it.

The files are listed from the home itself after it has lived a day (nothing is named by hand),
so a file a later change adds is covered as soon as a command writes it. Each is moved out of
the home, a link to it left in its place, and every command run; then it is put back.
"""

import os
import shutil
import sys

import pytest

from conftest import snapshot

MODEL = """\
import json, sys
sys.stdin.read()
print(json.dumps({"experience": "I hear it, and I feel calm."}))
"""


def live(run, home, tmp_path):
    """A home that has lived: notes, blocks, a session, events through the whole loop, caches,
    the index, a consolidation, the logs."""
    steps = [
        ("init", "--lang", "en"),
        ("note", "add", "I answer better when I slow down first."),
        ("think", "I keep a lighthouse log."),
        ("session", "append", "--session", "s1", "--role", "user", "I live in Lisbon now."),
        ("say", "--speaker", "alice", "hello there"),
        ("preprocess",),
        ("internalize", "--llm", model_backend(tmp_path)),
        ("think", "I decide to write in my diary: a calm morning."),
        ("externalize",),
        ("dispatch",),
        ("recall", "Lisbon"),
        ("prompt",),
        ("index", "rebuild"),
        ("consolidate",),
        ("tick",),
        ("doctor",),
    ]
    for args in steps:
        r = run(*args, input="I want to learn to sail.\n" if args[0] == "self" else None)
        assert r.exit_code in (0, 1), (args, r.stderr)
    assert run("self", "set", "direction", input="I want to learn to sail.\n").exit_code == 0


def model_backend(tmp_path) -> str:
    script = tmp_path / "model.py"
    if not script.exists():
        script.write_text(MODEL)
    return f"cmd:{sys.executable} {script}"


COMMANDS = {
    "prompt": [("prompt",)],
    "note": [("note", "list"), ("note", "add", "I like to end the day with a short walk.")],
    "think": [("think", "I notice the light changing.")],
    "say+preprocess": [("say", "--speaker", "bob", "good evening"), ("preprocess",)],
    "internalize": [("say", "--speaker", "bob", "how are you"), ("preprocess",), ("internalize",)],
    "internalize --llm": [("say", "--speaker", "bob", "are you there"), ("preprocess",),
                          ("internalize", "--llm", None)],
    "externalize+dispatch": [("think", "I decide to write in my diary: the sea was grey."), ("externalize",),
                             ("dispatch",)],
    "recall": [("recall", "Lisbon")],
    "consolidate": [("consolidate",)],
    "tick": [("tick",)],
    "doctor": [("doctor",), ("check",)],
    "self": [("self", "show"), ("stream", "roll")],
}


def files_of(home) -> list[str]:
    out = []
    for dirpath, dirnames, names in os.walk(home):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in names:
            path = os.path.join(dirpath, name)
            if os.path.isfile(path) and not os.path.islink(path):
                out.append(os.path.relpath(path, home))
    return sorted(out)


def outside_state(outside) -> dict:
    out = {}
    for dirpath, _, names in os.walk(outside):
        for name in names:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, outside)] = (f.read(), os.stat(path).st_mode)
    return out


@pytest.mark.parametrize("family", sorted(COMMANDS))
def test_a_link_in_place_of_any_file_is_refused_or_done_without(run, home, tmp_path, family):
    live(run, home, tmp_path)
    files = files_of(home)
    assert len(files) > 30 and "pipeline/stream.jsonl" in files and "log/llm.jsonl" in files
    outside = tmp_path / "outside"
    outside.mkdir()
    bugs = []
    for rel in files:
        inside = home / rel
        if not inside.is_file() or inside.is_symlink():  # a command before took it away
            continue
        away = outside / rel.replace("/", "__")
        shutil.move(inside, away)
        os.symlink(away, inside)
        before = outside_state(outside)
        for args in COMMANDS[family]:
            args = tuple(model_backend(tmp_path) if a is None else a for a in args)
            r = run(*args)
            if r.exit_code == 70 or "internal error" in r.stderr:
                bugs.append(f"{rel}: anima {' '.join(args)}: {r.exit_code} {r.stderr.strip()}")
        if outside_state(outside) != before:
            bugs.append(f"{rel}: anima {family} wrote through the link")
        if os.path.islink(inside):
            os.unlink(inside)
            shutil.move(away, inside)
        else:
            away.unlink()
    assert not bugs, "\n".join(bugs)
    snapshot(home)  # the home is whole again: every file readable


# What a home holds that is derived from the rest (anima-home(5)): a read command does without it.
DERIVED = ("cache/", "index/", "notes/heat.json")
READ_COMMANDS = [("prompt",), ("note", "list"), ("recall", "Lisbon"), ("doctor",)]


def derived_of(home) -> list[str]:
    """The derived files and directories of the home, listed from it."""
    out = []
    for dirpath, dirnames, names in os.walk(home):
        for name in dirnames + names:
            rel = os.path.relpath(os.path.join(dirpath, name), home) + ("/" if name in dirnames else "")
            if rel.startswith(DERIVED) and not name.startswith("."):
                out.append(rel)
    return sorted(out)


def test_a_read_command_does_without_a_derived_file_a_link_stands_for(run, home, tmp_path):
    live(run, home, tmp_path)
    assert run("config", "set", "index.enabled", "true").exit_code == 0
    derived = derived_of(home)
    assert {"cache/", "cache/config.json", "index/", "notes/heat.json"} <= set(derived)
    outside = tmp_path / "outside"
    outside.mkdir()
    bugs = []
    for rel in derived:
        inside = home / rel.rstrip("/")
        if not os.path.lexists(inside) or inside.is_symlink():
            continue
        away = outside / rel.rstrip("/").replace("/", "__")
        shutil.move(inside, away)
        os.symlink(away, inside)
        before = outside_state(outside)
        for args in READ_COMMANDS:
            r = run(*args)
            warned = [line for line in r.stderr.splitlines() if str(inside) in line]
            if r.exit_code not in (0, 1 if args == ("doctor",) else 0) or len(warned) > 1:
                bugs.append(f"{rel}: anima {' '.join(args)}: {r.exit_code} {r.stderr.strip()}")
        if outside_state(outside) != before:
            bugs.append(f"{rel}: a read command wrote through the link")
        os.unlink(inside)
        shutil.move(away, inside)
    assert not bugs, "\n".join(bugs)
