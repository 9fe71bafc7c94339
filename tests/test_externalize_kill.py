"""`anima externalize` killed with SIGKILL at random moments while it works through many
decisions of hers: no decision acted on twice, none lost, and the journal says each once."""

import json
import os
import random
import signal
import subprocess
import time

LINES_PER_THOUGHT = 30


def thought(j: int) -> tuple[str, list[tuple[str, str]]]:
    """A thought of many lines, each stating one decision; and (command, text) of each. Every
    third line is a reply to someone who never spoke: dead-lettered as unjustified."""
    lines, wanted = [], []
    for i in range(j * LINES_PER_THOUGHT, (j + 1) * LINES_PER_THOUGHT):
        if i % 3:
            lines.append(f"I decide to write in my diary: entry {i}.")
            wanted.append(("diary.write", f"entry {i}."))
        else:
            lines.append(f"Thinking it over. I decide to reply to Nobody{i}: hello {i}")
            wanted.append(("reply", f"hello {i}"))
    return "\n".join(lines), wanted


def actions(home) -> list[tuple[str, str, dict]]:
    """(where, file name, envelope) of every action file: waiting, claimed, done, dead."""
    pipeline = home / "pipeline"
    found = []
    for where in ("action_queue", "action_queue/cur", "action_queue/done", "dead_letter"):
        directory = pipeline / where
        for path in sorted(directory.glob("act_*.json")) if directory.exists() else ():
            found.append((where, path.name, json.loads(path.read_text())))
    return found


def test_kill_9_during_externalize_acts_on_each_decision_once(anima_bin, home):
    env = {**os.environ, "ANIMA_HOME": str(home), "TZ": "UTC"}

    def anima(*args, input=None):
        subprocess.run([anima_bin, *args], input=input, text=True, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    anima("init", "--lang", "en")
    wanted: list[tuple[str, str]] = []
    j = 0
    for j in range(8):  # a backlog before the first run
        text, more = thought(j)
        anima("think", "-", input=text)
        wanted += more
    rng = random.Random(7)
    kills = 0
    for round_ in range(16):
        p = subprocess.Popen([anima_bin, "externalize"], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        j += 1  # she goes on thinking while externalize works
        text, more = thought(j)
        anima("think", "-", input=text)
        wanted += more
        time.sleep(rng.uniform(0.0, 0.1))
        p.send_signal(signal.SIGKILL)
        kills += p.wait() == -signal.SIGKILL
        if round_ == 7:
            anima("dispatch")  # some actions carried out between the crashes: done/ still counts
    assert kills >= 8, "externalize finished before most kills: the test would prove nothing"
    anima("externalize")

    found = actions(home)
    names = [name for _, name, _ in found]
    assert len(names) == len(set(names)), "an action file in two places"
    ids = [doc["envelope"]["id"] for _, _, doc in found]
    assert len(ids) == len(set(ids)) and all(f"{i}.json" == n for i, n in zip(ids, names, strict=True))
    cited = [(doc["payload"]["params"]["cites"]["gen"], doc["payload"]["params"]["cites"]["lines"][0])
             for _, _, doc in found]
    assert len(cited) == len(set(cited)), "a decision line acted on twice"
    got = sorted((doc["payload"]["command"], doc["payload"]["params"]["text"]) for _, _, doc in found)
    assert got == sorted(wanted), "a decision lost, or one made up"
    for where, _, doc in found:  # a decision is queued or, a reply to nobody, dead-lettered
        assert (where == "dead_letter") == (doc["payload"]["command"] == "reply")
    journal = [json.loads(line) for line in (home / "pipeline" / "externalize.journal").read_text().splitlines()]
    assert sorted(e["action"] for e in journal) == sorted(ids), "the journal says each decision once"
    # and one more run, with the cursor at the end, acts on nothing
    r = subprocess.run([anima_bin, "externalize"], env=env, capture_output=True, text=True, check=True)
    assert r.stdout == "" and len(actions(home)) == len(found)
