import json
import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from conftest import file_time, kill_after, snapshot, wait_until
from sessions import write_session

WORDS = ("tea coffee morning evening cat dog report meeting garden river music quiet loud green black "
         "oolong walk train city book write read plan trip").split()
CJK = "绿茶咖啡早上晚上猫狗报告会议花园河流音乐安静大声黑色散步火车城市书写读计划旅行"


def backdate(home, *paths):
    """Make session files cold (an hour old): these, or every one under sessions/."""
    past = file_time(-3600)
    if not paths:
        paths = [os.path.join(d, n) for d, _, names in os.walk(home / "sessions") for n in names]
    for p in paths:
        os.utime(p, (past, past))


# a newer emoji (a token's character to FTS5), an older one (a separator), a skin tone, a
# combining accent, a letter Unicode added after 6.1 (a separator to FTS5), private use in
# and past the BMP, a joiner
ODD = ["🙂", "👍🏽", "❤️", "😀", "\u0301", "ᦰ", "\ue000", "\U000f0001", "🧋", "\u200d", "ᦰ🙂"]


def generate(home, seed, sessions=12, turns=15):
    """A random mixed zh/en corpus: plain and zstd files, some sessions delegated, a few turns
    said again word for word (recall folds them: both ways alike)."""
    rng = random.Random(seed)
    said = []
    for s in range(sessions):
        rows = []
        for t in range(turns):
            words = [rng.choice(WORDS) for _ in range(rng.randint(3, 14))]
            zh = "".join(rng.choice(CJK) for _ in range(rng.randint(0, 12)))
            if zh and rng.random() < 0.3:  # digits between CJK characters: a word of their own to FTS5
                at = rng.randrange(len(zh) + 1)
                zh = zh[:at] + rng.choice(["77", "2", "305"]) + zh[at:]
            if rng.random() < 0.3:  # FTS5 (Unicode 6.1) and Python disagree on what these are: see fts.body
                at = rng.randrange(len(words))
                words[at] = rng.choice(["", " "]).join([words[at], rng.choice(ODD)])
            text = " ".join(words) + ("，" + zh if zh else "") + rng.choice([".", "!", "?", "。"])
            if rng.random() < 0.2:
                text = text.capitalize()
            if said and rng.random() < 0.1:
                text = rng.choice(said)
            said.append(text)
            rows.append(("user" if t % 2 == 0 else "assistant", text, f"2026-11-{1 + s % 28:02d}T{t % 24:02d}:00:00Z"))
        write_session(home, f"s{seed}-{s}", rows, delegated=rng.random() < 0.2, zst=rng.random() < 0.5)
    backdate(home)


def queries(seed, n=25):
    rng = random.Random(seed + 1000)
    out = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.4:
            out.append(" ".join(rng.sample(WORDS, rng.randint(1, 3))))
        elif kind < 0.7:
            i = rng.randrange(len(CJK) - 2)
            out.append(CJK[i:i + rng.randint(1, 3)])
        elif kind < 0.8:
            out.append(f"{rng.choice(WORDS)} {rng.choice(CJK)}{rng.choice(CJK)}")
        elif kind < 0.9:
            out.append(f"{rng.choice(CJK)}{rng.choice(['77', '2', '305'])}{rng.choice(CJK)} {rng.choice(WORDS)}")
        else:
            out.append("zebra")
    return "\n".join(out) + "\n"


def recall_batch(run, text, *extra):
    return run("recall", "--batch", "--limit", "1000", *extra, input=text).stdout


def binary_batch(anima_bin, env, text):
    """recall_batch through the installed binary, in a process of its own."""
    return subprocess.run([anima_bin, "recall", "--batch", "--limit", "1000"], input=text, env=env,
                          capture_output=True, text=True).stdout


@pytest.fixture
def indexed(run, home):
    run("init", "--lang", "en")
    generate(home, 1)
    assert run("index", "rebuild").exit_code == 0
    assert run("index", "on").exit_code == 0
    return home


@pytest.fixture(params=["bm25", "instances"])
def counts_from(request, monkeypatch):
    """Either way the index counts a one-token term (recall.VOCAB_ROWS: from how many rows it
    reads FTS5's instance list; the test corpus is far below the default)."""
    from anima.recall import search as recall

    monkeypatch.setattr(recall, "VOCAB_ROWS", 0 if request.param == "instances" else 10 ** 9)
    return request.param


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_results_with_and_without_the_index_are_identical(run, home, seed, counts_from):
    run("init", "--lang", "en")
    generate(home, seed)
    qs = queries(seed)
    without = recall_batch(run, qs)
    assert run("index", "rebuild", "--jobs", "3").exit_code == 0  # three shards
    assert run("index", "on").exit_code == 0
    assert run("config", "get", "index.enabled").stdout == "true\n"
    with_index = recall_batch(run, qs)
    assert with_index == without and without.count("\n") > 50
    for extra in (("--no-tiers",), ("--who", "me"), ("--since", "2026-11-05"), ("--limit", "1"),
                  ("--limit", "3", "--no-tiers"), ("--limit", "10", "--who", "user", "--since", "2026-11-03")):
        assert recall_batch(run, qs, *extra) == (run("index", "off"), recall_batch(run, qs, *extra))[1]
        run("index", "on")


@pytest.mark.parametrize("seed", [4, 5])
def test_terms_and_questions_rank_alike_with_and_without_the_index(run, home, seed, counts_from):
    """TERMS (a result holds one of them) and --ask (a neighbour may be the answer), one and
    several terms, CJK and digits mixed: the index and the scan give the same lists."""
    run("init", "--lang", "en")
    generate(home, seed)
    rng = random.Random(seed)
    given = [q.split() for q in queries(seed, 12).splitlines()] + [[f"{rng.choice(CJK)}{rng.choice(CJK)}77号"]]

    def answers():
        out = []
        for terms in given:
            out.append(run("recall", "--json", "--limit", "50", *terms).stdout)
            out.append(run("recall", "--json", "--limit", "50", "--ask", " ".join(terms) + "?").stdout)
            # asking when: the turns that tell a time ("morning", 早上 are not: 晚上 is no time word)
            out.append(run("recall", "--json", "--limit", "50", "--ask", f"When did {' '.join(terms)}?").stdout)
        return out

    without = answers()
    assert run("index", "rebuild", "--jobs", "2").exit_code == 0
    assert run("index", "on").exit_code == 0
    assert answers() == without and sum(x.count("\n") for x in without) > 100


def test_a_one_token_term_is_counted_alike_however_it_is_written(run, home, monkeypatch):
    """The instance list is asked for the token FTS5 makes of the term's phrase: case,
    punctuation, stems, diacritics and CJK marks around it change nothing."""
    from anima.recall import search as recall

    monkeypatch.setattr(recall, "VOCAB_ROWS", 0)
    run("init", "--lang", "en")
    texts = ["Eating eats eaten, EATING!", "café CAFÉ cafe", "「比」比比赛", "İstanbul istanbul", "eat. eat",
             "比 and eats", "Cafés of İstanbul", "nothing here"]
    write_session(home, "forms", [("user" if i % 2 else "assistant", t, f"2026-11-0{1 + i}T00:00:00Z")
                                  for i, t in enumerate(texts)], zst=True)
    backdate(home)
    qs = "\n".join(["Eating!", "eats", "「比」", "café", "CAFE", "İstanbul", "istanbul", "\ue000eating", "(eat)"]) + "\n"
    without = recall_batch(run, qs)
    run("index", "rebuild")
    run("index", "on")
    assert recall_batch(run, qs) == without and without.count("\n") > 15


@pytest.mark.parametrize("seed", [11, 12])
def test_results_are_identical_when_the_index_covers_only_part(run, home, seed, counts_from):
    """Dead rows (a rewritten file), a stale file (grown since) and a hot one (just written):
    the index answers for the rest, a scan for these, and together they rank as a scan alone."""
    run("init", "--lang", "en")
    generate(home, seed)
    run("index", "rebuild")
    run("index", "on")
    plain = sorted((home / "sessions").glob("*.jsonl"))
    rng = random.Random(seed)
    line = " ".join(rng.choice(WORDS) for _ in range(6)) + "，" + CJK[3:9]
    plain[0].write_text(plain[0].read_text().splitlines()[0] + "\n" + json.dumps(
        {"role": "user", "content": line, "ts": "2026-11-02T00:00:00Z"}) + "\n")
    backdate(home, plain[0])
    run("index", "update")
    with open(plain[1], "a") as f:
        f.write(json.dumps({"role": "assistant", "content": line + " tea", "ts": "2026-11-03T00:00:00Z"}) + "\n")
    backdate(home, plain[1])
    write_session(home, "hot", [("user", line + " coffee", "2026-11-04T00:00:00Z")])
    qs = queries(seed)
    for extra in ((), ("--limit", "1"), ("--limit", "3", "--no-tiers"), ("--limit", "5", "--who", "me")):
        with_index = run("recall", "--batch", "--limit", "1000", *extra, input=qs)
        assert "index is stale" in with_index.stderr and "index excludes 1 sessions" in with_index.stderr
        run("index", "off")
        assert with_index.stdout == recall_batch(run, qs, *extra) and with_index.stdout.count("\n") > 10
        run("config", "set", "index.enabled", "true")  # (`index on` refuses a stale index)


def test_the_index_holds_no_text(run, indexed, home):
    backdate(home, write_session(home, "secret", [
        ("user", "Zygomorphic quokkas juggle seventeen marmalade umbrellas", "2026-11-01T00:00:00Z"),
        ("user", "我的秘密是蓝色的月亮在唱歌", "2026-11-01T00:00:00Z")]))
    assert run("index", "update").exit_code == 0
    assert run("recall", "marmalade umbrellas").stdout.startswith("secret\t2\t")
    blob = b"".join(p.read_bytes() for p in (home / "index").iterdir() if p.is_file())
    for sentence in ("Zygomorphic quokkas juggle", "seventeen marmalade umbrellas", "marmalade umbrellas",
                     "蓝色的月亮", "秘密是蓝色"):
        assert sentence.encode() not in blob and sentence.lower().encode() not in blob


def test_on_is_refused_without_an_index_or_when_stale(run, home):
    run("init", "--lang", "en")
    generate(home, 4, sessions=3)
    before = snapshot(home)
    r = run("index", "on")
    assert (r.exit_code, r.stderr) == (77, "anima: no index to switch on: run `anima index rebuild` first\n")
    assert snapshot(home) == before
    run("index", "rebuild")
    backdate(home, write_session(home, "late", [("user", "a new session", "2026-11-09T00:00:00Z")]))
    r = run("index", "on")
    assert r.exit_code == 77 and "the index is stale (1 sessions changed or new, 0 gone)" in r.stderr
    assert run("index", "update").exit_code == 0
    assert run("index", "on").exit_code == 0


def test_hot_sessions_are_scanned_and_said(run, indexed, home):
    write_session(home, "hot", [("user", "the hottest quokka news", "2026-11-30T00:00:00Z")])  # just written
    r = run("recall", "quokka")
    assert r.stdout.startswith("hot\t2\t")
    assert r.stderr == "anima: index excludes 1 sessions modified in the last 5 minutes (scanned directly)\n"
    status = json.loads(run("index", "status", "--json").stdout)
    assert (status["hot"], status["stale"], status["indexed"]) == (1, 0, 12)


def test_stale_sessions_are_scanned_and_an_update_catches_up(run, indexed, home):
    path = home / "sessions" / "s1-0.jsonl"
    if not path.exists():
        path = next((home / "sessions").glob("s1-*.jsonl"))
    with open(path, "a") as f:
        f.write(json.dumps({"role": "user", "content": "a grown quokka line", "ts": "2026-11-20T00:00:00Z"}) + "\n")
    backdate(home, path)
    r = run("recall", "quokka")
    assert r.exit_code == 0 and "quokka" in r.stdout
    assert "index is stale: 1 sessions changed or new since it was updated" in r.stderr
    assert run("index", "verify").exit_code == 1
    assert run("index", "update").exit_code == 0
    r = run("recall", "quokka")
    assert (r.exit_code, r.stderr) == (0, "")
    assert run("index", "verify").exit_code == 0
    assert json.loads(run("index", "status", "--json").stdout)["dead_rows"] == 0  # appended, not re-read


@pytest.mark.parametrize("change", ["append", "touch", "append untimed"])
def test_a_turn_with_no_time_is_dated_alike_after_an_update(run, home, change):
    """A turn without a ts is dated by its file's mtime, on a scan as in the index: after the
    file grows or is only touched, `index update` dates it anew as a scan does, and
    --since keeps the same turns both ways."""
    run("init", "--lang", "en")
    path = write_session(home, "s1", [{"role": "user", "content": "green tea please"},
                                      ("assistant", "green tea, timed", "2026-11-02T00:00:00Z")])
    os.utime(path, (file_time(-86400 * 20), file_time(-86400 * 20)))
    assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0
    if change != "touch":
        with open(path, "a") as f:
            turn = {"role": "user", "content": "more tea"}
            f.write(json.dumps(turn if change == "append untimed" else {**turn, "ts": "2026-11-03T00:00:00Z"}) + "\n")
    os.utime(path, (file_time(-86400 * 10), file_time(-86400 * 10)))
    assert run("index", "update").exit_code == 0
    since = time.strftime("%Y-%m-%d", time.gmtime(file_time(-86400 * 15)))
    answers = []
    for switch in ("on", "off"):
        assert run("index", switch).exit_code == 0
        answers.append([run("recall", "--json", "tea", *extra).stdout for extra in ([], ["--since", since])])
    assert answers[0] == answers[1]
    dated = {json.loads(x)["text"]: json.loads(x)["date"] for x in answers[0][0].splitlines()}
    assert dated["green tea please"] == time.strftime("%Y-%m-%d", time.gmtime(file_time(-86400 * 10)))


def test_a_changed_or_removed_file_is_retired(run, indexed, home):
    qs = queries(1)
    victim = next((home / "sessions").glob("*.jsonl"))
    victim.write_text(json.dumps({"role": "user", "content": "entirely new words here", "ts": "2026-11-01T00:00:00Z"})
                      + "\n")
    next((home / "sessions").glob("*.zst")).unlink()
    backdate(home, victim)
    run("index", "update")
    status = json.loads(run("index", "status", "--json").stdout)
    assert status["stale"] == status["missing"] == 0 and status["dead_rows"] > 0
    with_index = recall_batch(run, qs + "entirely new\n")
    run("index", "off")
    assert with_index == recall_batch(run, qs + "entirely new\n")


def test_a_second_file_of_a_session_is_skipped_by_a_sharded_rebuild_as_by_a_scan(run, home):
    run("init", "--lang", "en")
    generate(home, 13)
    for name in ("a-copy", "z-copy"):  # the same session id as s13-0, before and after it in path order
        write_session(home, "s13-0", [("user", f"the {name} quokka", "2026-11-02T00:00:00Z")],
                      directory=str(home / "sessions" / name))
    backdate(home)
    r = run("index", "rebuild", "--jobs", "3")
    assert r.exit_code == 0 and r.stderr.count("was already read from") == 2
    run("index", "on")
    qs = queries(13) + "quokka\ncopy\n"
    with_index = recall_batch(run, qs)
    assert json.loads(run("index", "status", "--json").stdout)["dead_rows"] > 0
    assert run("index", "verify").exit_code == 0
    run("index", "off")
    assert with_index == recall_batch(run, qs) and "a-copy quokka" in with_index and "z-copy" not in with_index


def test_a_query_the_index_cannot_answer_is_scanned(run, indexed, home):
    backdate(home, write_session(home, "cafe", [("user", "Un CAFÉ au lait", "2026-11-01T00:00:00Z")]))
    run("index", "update")
    assert run("recall", "café").stdout.startswith("cafe\t2\t")


def test_verify_changes_nothing(run, indexed, home):
    before = snapshot(home)
    assert run("index", "verify").exit_code == 0
    assert snapshot(home) == before


def test_verify_finds_turns_numbered_out_of_line_order(run, indexed, home):
    """recall reads a turn's neighbours by rowid: a file whose rowids do not rise with its
    lines would give it the wrong neighbours, and verify says so."""
    db = home / "index" / "recall.sqlite"
    con = sqlite3.connect(db)
    (file_id,) = con.execute("SELECT file FROM turns GROUP BY file HAVING count(*) > 1 LIMIT 1").fetchone()
    con.execute("UPDATE turns SET line = -line WHERE file = ?", (file_id,))  # lines now fall as rowids rise
    con.commit()
    con.close()
    r = run("index", "verify")
    assert r.exit_code == 1 and f"{db}: 14 turns out of line order by rowid\n" in r.stdout


def test_two_rebuilds_at_once_one_is_busy(anima_bin, indexed, home):
    env = {**os.environ, "ANIMA_HOME": str(home)}
    generate(home, 7, sessions=60, turns=40)
    procs = [subprocess.Popen([anima_bin, "index", "rebuild"], env=env, stderr=subprocess.PIPE) for _ in range(2)]
    codes = sorted(p.wait(timeout=120) for p in procs)
    assert codes in ([0, 0], [0, 75])  # the second waits for nothing: busy, or it started after
    assert subprocess.run([anima_bin, "index", "verify"], env=env).returncode == 0


def test_a_rebuild_killed_at_any_moment_leaves_the_previous_index(anima_bin, indexed, home):
    env = {**os.environ, "ANIMA_HOME": str(home)}
    qs = queries(1)
    good = binary_batch(anima_bin, env, qs)
    rng = random.Random(5)
    for _ in range(8):
        kill_after([anima_bin, "index", "rebuild", "--jobs", "1"], env, rng.uniform(0.02, 0.4))
        assert subprocess.run([anima_bin, "index", "verify"], env=env, capture_output=True).returncode == 0
        got = binary_batch(anima_bin, env, qs)
        assert got == good


def test_a_killed_rebuild_leaves_no_worker_holding_the_lock(anima_bin, indexed, home):
    """A worker filling a shard notices its rebuild was killed (kill -9) within a tenth of a
    second and exits (anima.infra.children), so the next rebuild is not kept busy by it."""
    env = {**os.environ, "ANIMA_HOME": str(home)}
    generate(home, 9, sessions=1500, turns=60)  # a shard of most of a second
    p = subprocess.Popen([anima_bin, "index", "rebuild", "--jobs", "2"], env=env, stderr=subprocess.DEVNULL)
    children = Path(f"/proc/{p.pid}/task/{p.pid}/children")
    worker = Path(f"/proc/{wait_until(lambda: children.read_text().split(), what='a worker')[0]}/stat")
    shard = home / "index" / f".recall.sqlite.{p.pid}.build.1"
    wait_until(shard.exists, what="the worker's shard")
    p.send_signal(signal.SIGKILL)
    p.wait()
    wait_until(lambda: not worker.exists() or worker.read_text().split()[2] == "Z", what="the worker to exit")
    with sqlite3.connect(shard) as con:  # it stopped where it was, not at the end of its shard
        assert con.execute("SELECT count(*) FROM turns").fetchone() == (0,)
    r = subprocess.run([anima_bin, "index", "rebuild", "--jobs", "2"], env=env, capture_output=True, text=True)
    assert (r.returncode, r.stderr) == (0, "")
    assert subprocess.run([anima_bin, "index", "verify"], env=env).returncode == 0


@pytest.mark.parametrize("victim", ["worker", "command"])
def test_a_shared_batch_outlives_a_killed_worker_and_leaves_none(anima_bin, indexed, home, tmp_path, victim):
    """A batch shared among processes (recall.jobs): a worker killed (kill -9) as it starts has
    its parts answered by the command, whose output is that of one process; the command
    killed, its workers end too instead of answering, or waiting, for nobody."""
    env = {**os.environ, "ANIMA_HOME": str(home)}
    questions = tmp_path / "questions"
    questions.write_text("\n".join(queries(3, n=1000)) + "\n")  # (parts of 250: a worker's takes a while)
    good = subprocess.run([anima_bin, "recall", "--batch", "--jobs", "1"], stdin=questions.open(), env=env,
                          capture_output=True, text=True)
    assert good.returncode == 0 and good.stdout
    out = tmp_path / "out"
    p = subprocess.Popen([anima_bin, "recall", "--batch", "--jobs", "2"], stdin=questions.open(), stdout=out.open("w"),
                         stderr=subprocess.PIPE, env=env, text=True)
    children = Path(f"/proc/{p.pid}/task/{p.pid}/children")
    workers = wait_until(lambda: children.read_text().split(), what="a worker")
    if victim == "worker":
        os.kill(int(workers[0]), signal.SIGKILL)
        assert (p.wait(), p.stderr.read()) == (0, "")
        assert out.read_text() == good.stdout
        return
    p.send_signal(signal.SIGKILL)
    p.wait()
    stats = [Path(f"/proc/{pid}/stat") for pid in workers]
    wait_until(lambda: all(not s.exists() or s.read_text().split()[2] == "Z" for s in stats),
               what="the workers to exit")


def test_recall_during_a_rebuild_answers_correctly(anima_bin, indexed, home):
    env = {**os.environ, "ANIMA_HOME": str(home)}
    qs = queries(1)
    good = binary_batch(anima_bin, env, qs)
    p = subprocess.Popen([anima_bin, "index", "rebuild"], env=env)
    for _ in range(5):
        got = binary_batch(anima_bin, env, qs)
        assert got == good
    assert p.wait(timeout=120) == 0


def test_status_text(run, indexed, home):
    lines = dict(line.split("\t", 1) for line in run("index", "status").stdout.splitlines())
    assert lines["enabled"] == "on" and lines["indexed"] == "12" and lines["stale"] == "0"
    assert int(lines["size"]) > 0 and lines["built"].endswith("Z")


def test_a_killed_rebuild_leaves_nothing_behind_after_the_next(anima_bin, indexed, home):
    env = {**os.environ, "ANIMA_HOME": str(home)}
    kill_after([anima_bin, "index", "rebuild", "--jobs", "1"], env, 0.3)
    assert subprocess.run([anima_bin, "index", "rebuild"], env=env).returncode == 0
    assert sorted(p.name for p in (home / "index").iterdir()) == [".recall.sqlite.lock", "recall.sqlite"]


def test_a_damaged_index_is_said_and_recall_scans(run, indexed, home):
    qs = queries(1)
    run("index", "off")
    good = recall_batch(run, qs)
    run("index", "on")
    (home / "index" / "recall.sqlite").write_bytes(b"not an index at all" * 100)
    r = run("recall", "--batch", "--limit", "1000", input=qs)
    assert r.stdout == good
    assert "not a usable index" in r.stderr and "scanning the transcripts instead" in r.stderr
    assert run("index", "status").exit_code == 65
    assert run("index", "rebuild").exit_code == 0
    assert recall_batch(run, qs) == good


def test_a_last_line_without_a_newline_is_indexed(run, indexed, home):
    path = home / "sessions" / "open.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "an unfinished quokka line", "ts": "2026-11-01T00:00:00Z"}))
    backdate(home, path)
    run("index", "update")
    assert run("recall", "quokka").stdout.startswith("open\t1\t")
    with open(path, "a") as f:
        f.write("\n" + json.dumps({"role": "user", "content": "a second quokka", "ts": "2026-11-02T00:00:00Z"}) + "\n")
    backdate(home, path)
    run("index", "update")
    assert [line.split("\t")[1] for line in run("recall", "quokka").stdout.splitlines()] == ["2", "1"]
    run("index", "off")
    assert [line.split("\t")[1] for line in run("recall", "quokka").stdout.splitlines()] == ["2", "1"]


def test_an_unreadable_file_does_not_keep_the_index_stale(run, indexed, home):
    bad = home / "sessions" / "broken.jsonl.zst"
    bad.write_bytes(b"\x28\xb5\x2f\xfd broken")
    backdate(home, bad)
    assert run("index", "update").exit_code == 0
    assert run("index", "verify").exit_code == 0
    assert json.loads(run("index", "status", "--json").stdout)["stale"] == 0


def test_the_first_update_builds_the_index(run, home):
    run("init", "--lang", "en")
    generate(home, 8, sessions=3)
    assert run("index", "update").exit_code == 0
    assert json.loads(run("index", "status", "--json").stdout)["indexed"] == 3


def test_damage_deep_inside_the_index_also_falls_back_to_a_scan(run, indexed, home):
    qs = queries(1)
    run("index", "off")
    good = recall_batch(run, qs)
    run("index", "on")
    db = home / "index" / "recall.sqlite"
    with open(db, "r+b") as f:  # lose the second half of the file, the header and schema intact
        f.truncate(db.stat().st_size // 2)
    r = run("recall", "--batch", "--limit", "1000", input=qs)
    assert r.exit_code == 0 and r.stdout == good
    assert "not a usable index" in r.stderr


MIXED_CJK = "独特标记号码比赛绿茶猫狗会议花园ひらがなカタカナ한국어"
MIXED_WORDS = ("tea", "eating", "eats", "park", "parked", "x", "v2", "abc", "Report", "MEETING", "happy", "hoping")
MIXED_PUNCT = ("", "", "", "", "", " ", " ", "，", "。", "、", "！", "？", "「", "」", "：", "…", "—", "·", "-", "/", "_", ".", ",",
               "#", "(", ")", "'")


def mixed_piece(rng):
    """A run of CJK characters, digits or a Latin word: the pieces a mixed turn is made of."""
    kind = rng.random()
    if kind < 0.4:
        return "".join(rng.choice(MIXED_CJK) for _ in range(rng.randint(1, 4)))
    if kind < 0.7:
        return str(rng.choice([7, 77, 707, rng.randint(0, 999)]))
    return rng.choice(MIXED_WORDS)


def mixed_corpus(home, rng):
    """A small corpus of turns where CJK, digits and Latin words touch or stand apart
    ("独特标记77号", "abc独特77", "x77y", "77 号"), and the texts of its turns."""
    texts = []
    for s in range(rng.randint(1, 3)):
        rows = []
        for t in range(rng.randint(1, 6)):
            text = "".join(mixed_piece(rng) + rng.choice(MIXED_PUNCT) for _ in range(rng.randint(1, 8)))
            texts.append(text)
            rows.append(("user" if t % 2 == 0 else "assistant", text, f"2026-11-{1 + s:02d}T{t:02d}:00:00Z"))
        write_session(home, f"m{s}", rows, zst=rng.random() < 0.5)
    backdate(home)
    return texts


def mixed_terms(rng, texts, n):
    """Terms cut from the corpus's own text: half at random places (across CJK/digit/Latin
    boundaries, through punctuation, in the middle of a word or a number), half at token
    boundaries (a CJK character is a token; "记77" is two), which some turn must then match."""
    import re

    cut, whole = [], []
    while len(cut) + len(whole) < n:
        text = rng.choice(texts)
        if len(whole) < n // 2:
            spans = [m.span() for m in re.finditer(f"[{MIXED_CJK}]|[^\\W_{MIXED_CJK}]+", text)]
            i = rng.randrange(len(spans))
            j = min(len(spans), i + rng.randint(1, 4)) - 1
            whole.append(text[spans[i][0]:spans[j][1]])
        else:
            start = rng.randrange(len(text))
            term = text[start:start + rng.randint(1, 8)].strip()
            if term:
                cut.append(term)
    return whole, cut


@pytest.mark.parametrize("seed", range(24))
def test_mixed_cjk_digit_and_latin_terms_match_alike_with_and_without_the_index(run, home, seed):
    """A property: over random small corpora of turns that mix CJK, digits, Latin words and
    punctuation, any term cut from their text gets the same results (turns, scores, order)
    from the index and from the scan (30 terms a corpus, 720 in all)."""
    rng = random.Random(seed)
    run("init", "--lang", "en")
    texts = mixed_corpus(home, rng)
    whole, cut = mixed_terms(rng, texts, 30)
    terms = whole + cut
    if seed == 0:
        write_session(home, "issue17", [("user", "这是独特标记77号，别忘了", "2026-11-20T00:00:00Z")])
        backdate(home)
        terms.append("独特标记77号")
    # one term a query: in a batch the scan keeps a turn that any query's filter lets through,
    # so that one term's filter would hide another's fault
    without = [recall_batch(run, term + "\n") for term in terms]
    assert run("index", "rebuild").exit_code == 0
    assert run("index", "on").exit_code == 0
    with_index = [recall_batch(run, term + "\n") for term in terms]
    assert with_index == without, terms
    found = {i for i, out in enumerate(with_index) if out}
    assert found >= set(range(len(whole)))
    if seed == 0:
        assert len(terms) - 1 in found


def candidates(home, qs, idx, limit, tiers, filters):
    """What recall's search finds for each query (anima.recall.search._search), from the
    index (`idx`) or by a scan (None): (candidates, statistics) a query."""
    from anima.infra import config
    from anima.infra.home import Home
    from anima.recall import search

    h = Home(str(home))
    found, stats = search._search(h, config.load(h.config), qs, filters, idx, lambda m: None, None, [limit] * len(qs))
    # (a scan keeps the turns the filters refuse too, for their neighbours: rank leaves them out)
    return [[c for c in cs if filters.admit(c.ts, c.who)] for cs in found], stats


def first_k(found, st, q, k, tiers):
    """The first k candidates in the order recall ranks them: every term first, then the rest."""
    from anima.recall import search

    def order(c):  # (tiers order the results, not the pool the index is asked for)
        return not all(c.tfs), -search.score(c, st, q), -c.ts, c.session, c.line

    return sorted(found, key=order)[:k]


def as_row(c):
    return c.session, c.path, c.line, c.ts, c.who, c.dl, c.tfs


@pytest.mark.parametrize(("seed", "subset_terms", "top"), [(21, 6, 8), (22, 6, 8), (23, 6, 1), (24, 2, 1), (25, 1, 8),
                                                           (26, 4, 1)])
def test_the_index_finds_every_candidate_a_scan_ranks_first(run, home, seed, subset_terms, top, monkeypatch,
                                                            counts_from):
    """A property of from_index, for queries of one to five terms (many hold some terms and
    not all): every turn among the first K of a scan's candidates, in recall's order (all the
    terms first, then the rest; tier, score, newer), is among the index's, with the same
    counts; none of the index's is one the scan lacks; and the statistics are the same. A
    one-token term counted by bm25() or in the instance list alike (counts_from); a set's
    counts asked for its best rows by bm25() first, as many as the turns kept or 8 times as
    many (search.TOP: the fewer, the more often the bound sends it to every row)."""
    from anima.infra import config
    from anima.infra.home import Home
    from anima.recall import index, search

    monkeypatch.setattr(search, "SUBSET_TERMS", subset_terms)  # (past it, SQLite scores every row)
    monkeypatch.setattr(search, "TOP", top)
    rng = random.Random(seed)
    run("init", "--lang", "en")
    generate(home, seed, sessions=10, turns=30)
    assert run("index", "rebuild", "--jobs", "2").exit_code == 0
    texts = []
    for _ in range(12):
        terms = rng.sample(WORDS, rng.randint(1, 4))
        if rng.random() < 0.4:
            terms.append(rng.choice(CJK) + rng.choice(CJK))
        if rng.random() < 0.3:
            terms.append(" ".join(rng.sample(WORDS, 2)))
        texts.append(terms)
    qs = [search.Query(t) for t in texts]
    h = Home(str(home))
    cfg = config.load(h.config)
    paths = set()  # which way the index found a query of 2 to SUBSET_TERMS terms (from_index)
    for k, tiers, filters in ((1, True, search.Filters()), (5, False, search.Filters()),
                              (40, True, search.Filters()), (200, True, search.Filters()),
                              (20, True, search.Filters(who="me")),
                              (30, False, search.Filters(since=search.parse_since("2026-11-05")))):
        scanned, scan_stats = candidates(home, qs, None, k, tiers, filters)
        assert all(filters.admit(c.ts, c.who) for cs in scanned for c in cs)
        idx = index.Open(h, cfg)
        try:
            got, stats = candidates(home, qs, idx, k, tiers, filters)
            paths.update(min(sum(idx.hits(m, t) for t in idx.tables) for m in q.matches) >= k
                         for q in qs if 2 <= len(q.matches) <= subset_terms)
        finally:
            idx.close()
        for q, s_found, s_st, i_found, i_st in zip(qs, scanned, scan_stats, got, stats, strict=True):
            assert (i_st.turns, i_st.tokens, i_st.df) == (s_st.turns, s_st.tokens, s_st.df), q.raw
            want = k
            mine = {as_row(c) for c in i_found}
            assert mine <= {as_row(c) for c in s_found}, q.raw
            assert {as_row(c) for c in first_k(s_found, s_st, q, want, tiers)} <= mine, (q.raw, k, tiers)
    assert sum(len(c) for c in scanned) > 100
    assert paths == ({True, False} if subset_terms > 1 else set())  # by sets of terms, and by one pass


def test_a_query_trusts_the_listing_until_a_directory_changes(run, home):
    """Old sessions (more than index.RECHECK_HOURS before the update) are trusted without a
    stat: a line appended to one is found after the next update, not before; a printed result
    whose file changed is scanned anew; a new file is seen at once (its directory changed)."""
    run("init", "--lang", "en")
    old = write_session(home, "old", [("user", "the quiet river walk", "2026-10-01T00:00:00Z")])
    other = write_session(home, "other", [("user", "a green garden", "2026-10-02T00:00:00Z")])
    past = file_time(-3 * 86400)
    for p in (old, other):
        os.utime(p, (past, past))
    os.utime(home / "sessions", (past, past))
    assert run("index", "rebuild").exit_code == 0
    assert run("recall", "river").stdout.startswith("old\t2\t")
    with open(old, "a") as f:  # an old session resumed: its directory does not change
        f.write(json.dumps({"role": "user", "content": "a quokka by the river", "ts": "2026-11-20T00:00:00Z"}) + "\n")
    os.utime(old, (past + 1, past + 1))
    r = run("recall", "quokka")
    assert (r.exit_code, r.stdout) == (1, "")  # not yet: what the heartbeat's update catches up
    r = run("recall", "river")  # but a result's file is stat-ed before its text is read
    assert sorted(line.split("\t")[1] for line in r.stdout.splitlines()) == ["2", "3"]
    assert "index is stale: 1 sessions changed or new" in r.stderr
    assert run("index", "update").exit_code == 0
    r = run("recall", "quokka")
    assert (r.exit_code, r.stderr) == (0, "") and r.stdout.startswith("old\t3\t")
    new = write_session(home, "new", [("user", "another quokka", "2026-11-21T00:00:00Z")])
    os.utime(new, (past, past))
    r = run("recall", "quokka")
    assert [line.split("\t")[0] for line in r.stdout.splitlines()] == ["new", "old"]
    assert "index is stale: 1 sessions changed or new" in r.stderr


def test_the_index_keeps_which_turns_tell_a_time_through_an_update(run, home):
    """Whether a turn tells a time is asked of FTS5 when the turn is indexed, by a rebuild and
    by an update that adds a file or appends to one; a question that asks when then ranks the
    same with the index as without, and the index's version names the time words."""
    from anima.recall import index, timewords

    run("init", "--lang", "en")
    grown = write_session(home, "grown", [("user", "Maria: I adopted Coco with joy", "2026-10-02T09:00:00Z")])
    backdate(home)
    assert run("index", "rebuild").exit_code == 0
    assert run("index", "on").exit_code == 0
    with open(grown, "a") as f:
        f.write(json.dumps({"role": "user", "content": "Maria: I adopted Coco last week",
                            "ts": "2026-10-01T09:00:00Z"}) + "\n")
    write_session(home, "new", [("user", "小明上周领养了可可", "2026-10-01T09:00:00Z"),
                                ("user", "小明开心领养了可可", "2026-10-02T09:00:00Z")])
    backdate(home)
    assert run("index", "update").exit_code == 0  # (it appends to the plain file, reads the new one)
    status = json.loads(run("index", "status", "--json").stdout)
    assert (status["indexed"], status["stale"], status["hot"]) == (2, 0, 0)
    questions = ("When did Maria adopt Coco?", "小明什么时候领养了可可？")
    on = [run("recall", "--ask", q, "--json", "--no-tiers").stdout for q in questions]
    assert [json.loads(out.splitlines()[0])["line"] for out in on] == [3, 2]  # the older, telling when
    assert run("index", "off").exit_code == 0
    assert on == [run("recall", "--ask", q, "--json", "--no-tiers").stdout for q in questions]
    con = sqlite3.connect(home / "index" / index.NAME)
    try:
        assert con.execute("SELECT value FROM meta WHERE key='version'").fetchone() == (
            f"{index.SCHEMA_VERSION}:{timewords.digest()}",)
        assert con.execute("SELECT count(*) FROM turns WHERE tells").fetchone() == (2,)
    finally:
        con.close()


def test_a_search_reads_one_snapshot_an_update_waits_for(run, indexed, home):
    """A search asks the index many times; an update that committed between two of its reads
    mixed turns and rows from before and after it (wrong results, or exit 70 in window.Turns).
    An open index holds one read transaction: a writer cannot commit until it is closed."""
    from anima.infra import config
    from anima.infra.home import Home
    from anima.recall import index

    h = Home(str(home))
    idx = index.Open(h, config.load(h.config))
    writer = sqlite3.connect(str(home / "index" / "recall.sqlite"), timeout=0.2)
    writer.execute("DELETE FROM turns WHERE id IN (SELECT id FROM turns LIMIT 5)")
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        writer.commit()
    idx.close()
    writer.commit()  # (the search done, the update goes on)
    writer.close()


def test_a_line_appended_without_its_newline_is_indexed_at_the_next_update(run, indexed, home):
    """The update reads what a file grew by in whole lines; a last line without its newline was
    left out while the file's new signature was kept, so no later update read it (verify 0,
    stale 0) and only a scan found it."""
    path = home / "sessions" / "grow.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "a first wombat", "ts": "2026-11-01T00:00:00Z"}) + "\n")
    backdate(home, path)
    assert run("index", "update").exit_code == 0
    with open(path, "a") as f:
        f.write(json.dumps({"role": "user", "content": "a second wombat", "ts": "2026-11-02T00:00:00Z"}))
    backdate(home, path)
    assert run("index", "update").exit_code == 0
    indexed_lines = [line.split("\t")[1] for line in run("recall", "wombat").stdout.splitlines()]
    run("index", "off")
    assert indexed_lines == [line.split("\t")[1] for line in run("recall", "wombat").stdout.splitlines()] == ["2", "1"]


def test_the_journal_of_a_killed_update_is_rolled_back_not_called_damage(run, indexed, home, anima_bin):
    """A writer killed mid-transaction leaves a hot journal, which only a connection that may
    write can roll back: every reader (status, on, recall) called the intact index damaged
    until the next update. A reader now rolls it back first; the index is as before."""
    qs = queries(1)
    good = recall_batch(run, qs)
    db = home / "index" / "recall.sqlite"
    script = ("import os, signal, sqlite3, sys\n"
              "con = sqlite3.connect(sys.argv[1])\n"
              "con.execute('PRAGMA cache_size=1')\n"  # (every page changed is written to the file)
              "con.execute('BEGIN')\n"
              "con.execute('DELETE FROM turns')\n"
              "con.execute('DELETE FROM files')\n"
              "os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([str(Path(anima_bin).parent / "python"), "-c", script, str(db)])
    assert proc.returncode == -signal.SIGKILL and (home / "index" / "recall.sqlite-journal").exists()
    status = run("index", "status", "--json")
    assert status.exit_code == 0 and json.loads(status.stdout)["stale"] == 0, status.stderr
    r = run("recall", "--batch", "--limit", "1000", input=qs)
    assert (r.stdout, r.stderr) == (good, "")
    assert run("index", "verify").exit_code == 0


def test_damage_an_update_meets_is_said_not_a_crash(run, indexed, home):
    """Pages damaged past the first read (the schema and meta intact): update met them in its
    plan and ended in exit 70; it now says the index is not usable (65), as status does."""
    db = home / "index" / "recall.sqlite"
    size = db.stat().st_size
    rng = random.Random(5)
    codes = set()
    for page in range(2, size // 4096):
        data = bytearray(db.read_bytes())
        snapshot_bytes = bytes(data)
        data[page * 4096:(page + 1) * 4096] = rng.randbytes(4096)
        db.write_bytes(bytes(data))
        r = run("index", "update")
        codes.add(r.exit_code)
        assert r.exit_code in (0, 65), (page, r.exit_code, r.stderr)
        assert r.exit_code == 0 or r.stderr.startswith(f"anima: {db}: not a usable index (")
        db.write_bytes(snapshot_bytes)
    assert 65 in codes
