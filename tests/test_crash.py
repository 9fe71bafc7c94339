"""Crash safety as a property: a short sample of bench/crash.py (a few kills of every writing
command, a fixed seed, kill windows scaled to each command's own duration), with its very
audit; and that audit shown to catch what it is there to catch."""

import os
import random
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))

import crash  # noqa: E402  (bench/ is not a package: its scripts import each other by name)

KILLS = 2
SCALE = 12


@pytest.fixture(scope="session")
def world(tmp_path_factory):
    """The day, built once a worker; every run takes a copy."""
    assert os.path.exists(crash.ANIMA), "the anima console script is not installed (run `make test`)"
    return crash.World(str(tmp_path_factory.mktemp("crash") / "world"), SCALE).build()


@pytest.fixture(scope="session")
def table(world):
    return crash.cases(world)


NAMES = ("say", "preprocess", "internalize", "internalize+roll", "think", "think+night", "externalize",
         "externalize+roll", "dispatch", "consolidate", "tick", "tick+night", "stream roll", "note add", "stage", "approve", "forget",
         "self set")


def test_every_case_is_sampled(table):
    assert set(table) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_kill_9_loses_nothing_repeats_nothing_and_check_is_not_silent(world, table, tmp_path, name):
    case = table[name]
    took = crash.duration(world, case, str(tmp_path / "timing"), runs=1)
    rng = random.Random(f"crash {name}")
    startup = crash.startup_time(runs=1)
    outcomes = [crash.trial(world, case, crash.moment(rng, took, startup), str(tmp_path / f"run{i}"))
                for i in range(KILLS)]
    for o in outcomes:
        assert o.problems == [], f"{name} killed at {o.delay * 1000:.0f} ms of {took * 1000:.0f}: {o.problems}"
    assert not any(o.reported for o in outcomes), "anima check --only stream found the stream out of step"


@pytest.fixture
def lived(world, tmp_path, table):
    """A copy of the day whose loop ran to completion, nothing killed: the audit finds nothing."""
    home = crash.copy(world, str(tmp_path / "lived"))
    for argv in crash.LOOP:
        crash.must(home, *argv)
    assert crash.audit(world, table["dispatch"], home, landed=False) == []
    return home


def kinds(world, table, home):
    return {kind for kind, _ in crash.audit(world, table["dispatch"], home, landed=False)}


def test_the_audit_finds_a_decision_lost(world, table, lived):
    done = os.path.join(lived, "pipeline", "action_queue", "done")
    diary = next(n for n in sorted(os.listdir(done)) if '"diary.write"' in open(os.path.join(done, n)).read())
    os.remove(os.path.join(done, diary))
    assert kinds(world, table, lived) == {"lost"}


def test_the_audit_finds_an_effect_repeated(world, table, lived):
    effects = os.path.join(lived, "..", "effects.log")
    with open(effects) as f:
        first = f.readline()
    with open(effects, "a") as f:
        f.write(first)
    assert kinds(world, table, lived) == {"repeated"}


def test_the_audit_finds_an_event_narrated_twice(world, table, lived):
    book = os.path.join(lived, "pipeline", "stream.jsonl")
    with open(book) as f:
        narrated = [line for line in f if '"by": "internalize"' in line]
    with open(book, "a") as f:
        f.write(narrated[0])
    assert "repeated" in kinds(world, table, lived)


def test_the_audit_reads_the_stream_itself_and_anima_check_must_say_so(world, table, lived):
    now = os.path.join(lived, "self", "stream", "now.md")
    with open(now) as f:
        text = f.read()
    with open(now, "w") as f:
        f.write(text.replace("Bob said", "Rob said", 1))
    assert "stream" in kinds(world, table, lived)
    assert crash.anima(lived, "check", "--only", "stream").returncode == 1


def test_a_message_never_narrated_is_lost(world, table, lived, tmp_path):
    keep = tmp_path / "done"
    queue = os.path.join(lived, "pipeline", "message_queue", "done")
    shutil.move(queue, keep)
    found = crash.audit(world, table["dispatch"], lived, landed=False)
    assert {kind for kind, _ in found} == {"lost"}
    assert any("never reached message_queue/done" in what for _, what in found)


def test_the_audit_finds_an_item_of_a_list_repeated(world, table, lived):
    memories = os.path.join(lived, "self", "memories", "about_alice.md")
    with open(memories, "a") as f:
        f.write("lst0000c.\n\n")
    found = crash.audit(world, table["dispatch"], lived, landed=False)
    assert [what for kind, what in found if kind == "repeated"] == \
        [f"{world.lists[0]}-2 (memory.write) done, its effect there 2 times"]


def test_the_audit_finds_an_item_of_a_list_lost(world, table, lived):
    effects = os.path.join(lived, "..", "effects.log")
    with open(effects) as f:
        kept = [line for line in f if line.strip() != f"{world.lists[0]}-1"]
    with open(effects, "w") as f:
        f.writelines(kept)
    assert kinds(world, table, lived) == {"lost"}
