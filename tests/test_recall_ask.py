"""Questions in plain language (`recall --ask`, `--batch`, memory_recall's query) and the
ranking that reads a turn with its neighbours, through the CLI and the installed binary."""

import json
import math
import os
import subprocess

import pytest

from conftest import snapshot
from sessions import write_session

DAY = "2026-11-01T10:00:00Z"


def rows(result):
    return [json.loads(x) for x in result.stdout.splitlines()]


def ask(run, question, *extra):
    return rows(run("recall", "--ask", question, "--json", "--no-tiers", *extra))


@pytest.fixture
def chat(home):
    """Two people talking: what each question's answer looks like in a real conversation."""
    write_session(home, "s1", [
        ("user", "Maria: What did you do when it rained? Did you stay in? What did you eat?", DAY),   # 2
        ("assistant", "John: When did you last see the film? What did you think of it?", DAY),       # 3
        ("user", "Maria: Guess what, I got a puppy last week! Her name is Coco.", DAY),                # 4
        ("assistant", "John: Lovely. What have you been reading lately?", DAY),                        # 5
        ("user", "Maria: Mostly old science fiction, Dune again.", DAY),                               # 6
        ("assistant", "John: Nice. My sister Melanie has a cat.", DAY),                                # 7
    ])
    write_session(home, "s2", [
        ("user", "Maria: The weather was grey all day and the bus was late again.", DAY),             # 2
        ("assistant", "John: Traffic in the city gets worse every single year.", DAY),                 # 3
        ("user", "Maria: I cooked soup and watched the rain on the window.", DAY),                     # 4
        ("assistant", "John: Soup on a rainy day is the best thing there is.", DAY),                   # 5
    ])
    return home


def test_function_words_are_dropped_and_the_evidence_ranks_first(run, chat):
    found = ask(run, "When did Maria get Coco?")
    assert (found[0]["session"], found[0]["line"]) == ("s1", 4)
    assert found[0]["terms"] == ["maria", "coco"] and not found[0]["relaxed"]
    # the same words as TERMS keep their meaning: "when" and "did" are searched for
    as_terms = rows(run("recall", "When", "did", "Maria", "get", "Coco?", "--json", "--no-tiers"))
    assert {"When", "did"} <= {t for x in as_terms for t in x["terms"]}
    # nor are the words that ask for a form of answer or hedge ("how many", "likely")
    [first, *_] = ask(run, "How many cats would Melanie likely have?")
    assert (first["line"], first["terms"], first["relaxed"]) == (7, ["cats", "melanie"], False)


def test_a_possessive_matches_the_name_standing_alone(run, home):
    write_session(home, "p", [("user", "Melanie: my dog Coco sleeps all day", DAY),
                              ("user", "Someone else's dog barks", DAY)])
    for question in ("What is Melanie's dog called?", "What is Melanie’s dog called?", "What is Melanieʼs dog called?",
                     "What is Melanie＇s dog called?"):
        [first, *_] = ask(run, question)
        assert first["line"] == 2 and "melanie" in first["terms"], question
    assert ask(run, "What did James' dog do?")[0]["terms"] == ["dog"]  # (no James here)


def test_the_answer_is_found_beside_the_question_it_answers(run, chat):
    """"What has Maria been reading?": the words are in John's question (line 5), the answer in
    Maria's turn after it, which holds none of them but her name."""
    found = ask(run, "What has Maria been reading lately?")
    top = [(x["session"], x["line"]) for x in found[:3]]
    assert ("s1", 6) in top
    answer = next(x for x in found if x["line"] == 6 and x["session"] == "s1")
    assert answer["terms"] == ["maria"] and answer["relaxed"]
    # given as terms, a result holds one of them: the answer's neighbour lifts it, but a turn
    # holding no term is never a result
    as_terms = rows(run("recall", "reading", "--json"))
    assert [(x["session"], x["line"]) for x in as_terms] == [("s1", 5)]


def test_turns_with_every_term_first_then_the_rest(run, chat):
    found = rows(run("recall", "soup", "rain", "--json", "--no-tiers"))
    strict = [x for x in found if not x["relaxed"]]
    assert found[:len(strict)] == strict and len(strict) == 1 and strict[0]["line"] == 4
    assert {x["line"] for x in found[1:]} >= {5}  # soup alone, after
    assert all(x["relaxed"] for x in found[1:])
    r = run("recall", "soup", "rain")
    assert "relaxed" not in r.stderr  # a turn had every term


@pytest.mark.parametrize("indexed", [False, True])
def test_a_question_puts_first_what_answers_it_not_what_holds_its_words(run, home, indexed):
    """For a question, the first tier is the turns holding every word that do not ask it
    again and lie in the span of the date it names; the rest follow by score. John's question
    holds every word of "Which book is Maria reading?", Maria's answer beside it two of them:
    the answer comes first. A turn with every word from June, asked about a day in March, comes
    after the March turn holding one of them. Some turn holds every word, so no relaxed line;
    given as terms, every-term turns still come first."""
    write_session(home, "talk", [("assistant", "John: Maria, which book are you reading?", DAY),
                                 ("user", "Maria: Dune, the best book there is.", DAY),
                                 ("assistant", "John: I never got through it.", DAY)])
    write_session(home, "june", [("user", "We went hiking by the lake.", "2023-06-20T09:00:00Z")])
    write_session(home, "march", [("user", "Hiking was fun, then tea.", "2023-03-14T09:00:00Z")])
    write_session(home, "other", [("user", "Nothing much happened, tea again.", "2023-05-01T09:00:00Z")])
    if indexed:
        from test_index import backdate

        backdate(home)
        assert run("init", "--lang", "en").exit_code == 0
        assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0
    for question, want in (("Which book is Maria reading?", [("talk", 3, True), ("talk", 2, False)]),
                           ("hiking by the lake on 14 March 2023", [("march", 2, True), ("june", 2, False)])):
        r = run("recall", "--ask", question, "--json", "--no-tiers")
        assert [(x["session"], x["line"], x["relaxed"]) for x in rows(r)][:2] == want, question
        assert "relaxed" not in r.stderr, question
        called = json.loads(run("call", "memory_recall", input=json.dumps({"query": question})).stdout)
        assert called["relaxed"] is False and len(called["results"]) >= 2
    found = rows(run("recall", "book", "maria", "reading", "--json", "--no-tiers"))
    assert [(x["session"], x["line"], x["relaxed"]) for x in found][:2] == [("talk", 2, False), ("talk", 3, True)]
    # no turn with every word: the relaxed line, and the tool says so
    r = run("recall", "--ask", "Which book is Maria hiking with?")
    assert "no turn has every term" in r.stderr
    assert json.loads(run("call", "memory_recall", input=json.dumps(
        {"query": "Which book is Maria hiking with?"})).stdout)["relaxed"] is True


def test_a_session_of_one_turn_scores_as_bm25_alone(run, home):
    # (no turn opens with the term: one that does scores more, see the test after the next)
    texts = ["fresh apple pie", "an apple apple tart with cream", "pear", "one apple", "plum cake and more words"]
    for i, t in enumerate(texts):
        write_session(home, f"one{i}", [("user", t, DAY)])
    got = ask(run, "apple")
    n, avgdl = len(texts), sum(len(t.split()) for t in texts) / len(texts)
    df = sum("apple" in t.split() for t in texts)
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))

    def bm25(t):
        tf, dl = t.split().count("apple"), len(t.split())
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))

    want = sorted(((round(bm25(t), 4), f"one{i}") for i, t in enumerate(texts) if "apple" in t.split()),
                  key=lambda x: (-x[0], x[1]))
    assert [(x["score"], x["session"]) for x in got] == want


def test_a_date_named_favours_turns_near_it(run, home):
    write_session(home, "march", [("user", "We went hiking by the lake.", "2023-03-14T09:00:00Z")])
    write_session(home, "june", [("user", "We went hiking by the lake.", "2023-06-20T09:00:00Z")])
    for question in ("What did we do on 14 March 2023?", "What did we do on March 14, 2023 at the lake?",
                     "What did we do in March 2023?", "2023年3月14日 hiking", "hiking on 2023-03-14",
                     "hiking 2023-03-14T09:00:00Z?", "２０２３年３月１４日 hiking"):
        found = ask(run, question)
        assert [x["session"] for x in found][:1] == ["march"], question
    assert [x["session"] for x in ask(run, "hiking on 2023-06-20")][:1] == ["june"]
    # an RFC 3339 time is its day, none of its numbers a word: the other day is not asked for
    assert [x["session"] for x in ask(run, "2023-03-14T09:00:00+01:00 at the lake")][:1] == ["march"]
    assert [x["terms"] for x in ask(run, "2023-06-20T23:59:59.5Z lake")][0] == ["lake"]
    # no date: the newer of the two, which says what the other does (recall folds it in)
    assert [(x["session"], [a["session"] for a in x["also"]]) for x in ask(run, "hiking lake")] == [
        ("june", ["march"])]


@pytest.mark.parametrize("indexed", [False, True])
def test_a_question_that_asks_when_favours_turns_that_tell_a_time(run, home, indexed):
    """Two turns alike but for a time word, the older telling it: asked when, it comes first;
    asked anything else, the newer of two equal turns does."""
    write_session(home, "told", [("user", "Maria: I adopted Coco last week", "2026-10-01T09:00:00Z"),
                                 ("user", "小明上周领养了可可", "2026-10-01T09:00:00Z")])
    write_session(home, "other", [("user", "Maria: I adopted Coco with joy", "2026-10-02T09:00:00Z"),
                                  ("user", "小明开心领养了可可", "2026-10-02T09:00:00Z")])
    if indexed:
        from test_index import backdate

        backdate(home)
        assert run("index", "rebuild").exit_code == 0
    for question in ("When did Maria adopt Coco?", "what day did Maria adopt Coco", "小明什么时候领养了可可？"):
        assert [x["session"] for x in ask(run, question)][:1] == ["told"], question
    for question in ("Did Maria adopt Coco?", "Why did Maria adopt Coco when she did?", "小明领养了可可吗？"):
        assert [x["session"] for x in ask(run, question)][:1] == ["other"], question


@pytest.mark.parametrize("indexed", [False, True])
def test_a_turn_that_opens_with_a_term_scores_more(run, home, indexed):
    """Two turns alike, the older opening with the name the question asks about (in a
    transcript of "Name: ..." turns, the turn of the one it names): it comes first, scored
    1.6 times the other; the same for terms, and in Chinese."""
    for name, text, day in (("his", "John: Anna and I support City, the best club.", "2026-10-01"),
                            ("hers", "Anna: John and I support City, the best club.", "2026-10-02"),
                            ("his-zh", "小明：小红和我都爱这个球队", "2026-10-01"),
                            ("hers-zh", "小红：小明和我都爱这个球队", "2026-10-02")):
        write_session(home, name, [("user", text, f"{day}T09:00:00Z")])
    if indexed:
        from test_index import backdate

        backdate(home)
        assert run("index", "rebuild").exit_code == 0
    for found in (ask(run, "Which club does John support?"), ask(run, "小明的球队是哪个？"),
                  rows(run("recall", "john", "club", "--json", "--no-tiers"))):
        assert [x["session"].removesuffix("-zh") for x in found][:2] == ["his", "hers"]
        assert found[0]["score"] == pytest.approx(1.6 * found[1]["score"], abs=1e-3)
    # a name the question does not ask about lifts nothing: the newer of two equal turns first
    assert [x["session"] for x in ask(run, "Which club does City support?")][:2] == ["hers", "his"]


def test_quoted_parts_stay_one_term_and_only_function_words_still_ask(run, chat):
    assert ask(run, 'was it the "rainy day"?')[0]["terms"] == ["rainy day"]
    found = ask(run, "what did you")
    assert found and set(found[0]["terms"]) <= {"what", "did", "you"} and found[0]["terms"]


def test_chinese_questions_lose_their_function_words(run, home):
    write_session(home, "zh", [("user", "小明的狗叫旺财，很可爱", DAY), ("user", "什么时候去吃饭呢？你知道吗", DAY)])
    [first, *_] = ask(run, "小明的狗叫什么名字？")
    assert first["line"] == 2 and set(first["terms"]) <= {"小明", "狗叫"}


def test_chinese_conjunctions_and_demonstratives_leave_no_halves(run, home):
    """和 joins two things asked about, and 哪里, 那个 are words whole: no pair across 和 (心和),
    no half left to stand alone (里, 个), each of which a turn about something else holds."""
    write_session(home, "zh", [("user", "上周和朋友去公园，玩得很开心", DAY), ("user", "里面有个小和尚", DAY)])
    found = ask(run, "记得开心和朋友吗？我们去哪里玩了？那个公园呢")
    assert found[0]["line"] == 2 and {"开心", "朋友", "公园"} <= set(found[0]["terms"])
    assert not any({"心和", "和朋", "里", "个"} & set(x["terms"]) for x in found)


def test_neighbours_that_the_filters_refuse_still_lend_their_words(run, chat):
    found = ask(run, "What has Maria been reading lately?", "--who", "user")
    assert all(x["who"] == "user" for x in found)
    assert (found[0]["session"], found[0]["line"]) == ("s1", 6)


def test_batch_lines_are_questions_like_ask(run, chat, anima_bin, tmp_path):
    questions = "When did Maria get Coco?\nWhat has Maria been reading lately?\n"
    batch = [x for x in rows(run("recall", "--batch", "--no-tiers", input=questions))]
    for number, question in enumerate(questions.splitlines()):
        alone = ask(run, question)
        assert [(x["session"], x["line"]) for x in batch if x["query"] == number] == \
            [(x["session"], x["line"]) for x in alone]
    env = {"ANIMA_HOME": str(chat), "PATH": "/usr/bin:/bin", "ANIMA_NOW": "2026-11-30T21:05:00Z"}
    p = subprocess.run(f"printf 'When did Maria get Coco?\\n' | {anima_bin} recall --batch | head -1",
                       shell=True, env=env, capture_output=True, text=True)
    assert json.loads(p.stdout)["line"] == 4 and p.returncode == 0


def test_a_batch_line_ends_at_a_newline_alone_and_stdin_is_utf8(chat, anima_bin):
    """A question may hold U+2028 or a form feed (splitlines would cut there and number every
    later line wrong); CRLF ends a line as LF does; bytes that are not UTF-8 are refused."""
    env = {"ANIMA_HOME": str(chat), "PATH": "/usr/bin:/bin", "ANIMA_NOW": "2026-11-30T21:05:00Z"}

    def batch(data: bytes):
        p = subprocess.run([anima_bin, "recall", "--batch", "--no-tiers"], input=data, env=env, capture_output=True)
        return p.returncode, p.stderr.decode(), sorted({(x["query"], x["session"], x["line"])
                                                        for x in map(json.loads, p.stdout.decode().splitlines())})

    code, err, got = batch("soup\u2028rain\fwindow\r\n\nWhen did Maria get Coco?".encode())
    assert (code, err) == (0, "") and {q for q, _, _ in got} == {0, 2}
    assert (2, "s1", 4) in got
    before = snapshot(chat)
    assert batch(b"soup\ncaf\xe9\n") == (65, "anima: stdin: not valid UTF-8 (byte 8)\n", [])
    assert snapshot(chat) == before


def test_terms_ask_and_batch_are_one_of_them(run, chat):
    before = {p: p.read_bytes() for p in chat.rglob("*") if p.is_file()}
    for argv, where in ((["recall", "soup", "--ask", "soup?"], {}), (["recall", "--ask", "x", "--batch"], {}),
                        (["recall", "soup", "--batch"], {})):
        r = run(*argv, **where)
        assert r.exit_code == 2 and "one of them" in r.stderr and r.stderr.count("\n") == 1
    assert {p: p.read_bytes() for p in chat.rglob("*") if p.is_file()} == before


def test_memory_recall_takes_a_question(run, chat):
    r = run("call", "memory_recall", input=json.dumps({"query": "When did Maria get Coco?"}))
    assert r.exit_code == 0, r.stderr
    got = json.loads(r.stdout)["results"]
    assert (got[0]["session"], got[0]["line"]) == ("s1", 4)
    for bad in ({"query": "coco", "terms": ["coco"]}, {}, {"limit": 3}):
        r = run("call", "memory_recall", input=json.dumps(bad))
        assert r.exit_code == 2 and "one of them" in json.loads(r.stdout)["error"]
    assert run("call", "memory_recall", input=json.dumps({"terms": ["Coco"], "query": None})).exit_code == 0


MEMORIES = ["去年圣诞节晚会上我跳了一支舞，大家都很开心。", "我和妈妈一起去公园放风筝。",
            "数学考试没考好，我很难过。", "周末在家看动画片，吃了很多零食。"]
# A conversation as one line, no spaces: what a host hands over as the question.
DIALOGUE = ("你知道吗？元旦晚会我要表演节目！真是太棒了！你一定会很紧张吧？是啊，我都不知道该穿什么。"
            "穿上你最喜欢的衣服就好。我特别期待那天晚上，想让它变得很特别！你还记得去年晚会上你跳舞的时候吗？"
            "记得！我还想再跳一次那个舞。")


@pytest.mark.parametrize("indexed", [False, True])
def test_a_long_chinese_question_is_read_as_its_pairs_of_characters(run, home, indexed):
    """A batch line is a question, not terms split at spaces: read as terms, a Chinese
    conversation with no space in it is one phrase of all its characters, which no turn holds
    (every line of bench/recall_quality.py's MADial zh "plain text" row came back empty so)."""
    for i, text in enumerate(MEMORIES):
        path = write_session(home, f"m{i}", [("user", text, DAY)])
        os.utime(path, (1e9, 1e9))  # (not hot: the index answers for it)
    if indexed:
        assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0
    r = run("recall", "--batch", "--no-tiers", input=DIALOGUE + "\n")
    assert (r.exit_code, r.stderr) == (0, "")
    got = rows(r)
    # cut at its function words (你, 还, 记得, 的, 那个 ...), the rest read as pairs: the party of
    # last year first; a piece of one character (会, 舞) is a term too
    assert {k: v for k, v in got[0].items() if k != "path"} == {
        "query": 0, "session": "m0", "line": 2, "date": "2026-11-01", "who": "user", "text": MEMORIES[0],
        "score": 19.5648, "terms": ["晚会", "会", "去年", "会上", "舞"], "relaxed": True, "also": []}  # (12.228 x 1.6: it opens with 去年)
    assert all(x["score"] < got[0]["score"] and "记得" not in x["terms"] for x in got[1:])
    assert rows(run("recall", "--ask", DIALOGUE, "--json", "--no-tiers")) == [
        {k: v for k, v in x.items() if k != "query"} for x in got]
    # as a TERM, the line keeps its meaning: one phrase of all its characters, found nowhere
    r = run("recall", DIALOGUE)
    assert (r.exit_code, r.stdout, r.stderr) == (1, "", "")


def test_a_damaged_transcript_is_read_with_its_neighbours_as_far_as_it_goes(run, home, tmp_path):
    """The window stage reads a scanned file only around the results; a zstd file whose last
    frame is cut is read whole instead, as the search reads it: its results, warning and
    all, are those of the same lines in a sound file."""
    import zstandard

    lines = [json.dumps({"role": "user" if i % 2 == 0 else "assistant", "ts": DAY,
                         "content": f"turn {i} about kayaks" if i % 5 == 0 else f"turn {i}: where did you go?"})
             for i in range(40)]
    run("init", "--lang", "en")
    run("index", "off")
    c = zstandard.ZstdCompressor()
    whole, cut = c.compress(("\n".join(lines[:30]) + "\n").encode()), c.compress(("\n".join(lines[30:]) + "\n").encode())
    (home / "sessions" / "s.jsonl.zst").write_bytes(whole + cut[:-7])
    damaged = run("recall", "--ask", "Where did the kayaks go?", "--json", "--limit", "40")
    assert "kept lines 1-30" in damaged.stderr and damaged.exit_code == 0
    relaxed = damaged.stderr.splitlines()[-1]
    assert "relaxed" in relaxed
    (home / "sessions" / "s.jsonl.zst").unlink()
    (home / "sessions" / "s.jsonl").write_text("\n".join(lines[:30]) + "\n")
    sound = run("recall", "--ask", "Where did the kayaks go?", "--json", "--limit", "40")
    assert sound.stderr.splitlines() == [relaxed]
    strip = [{k: v for k, v in r.items() if k != "path"} for r in rows(damaged)]
    assert strip == [{k: v for k, v in r.items() if k != "path"} for r in rows(sound)]
    assert len(strip) > 10 and {r["line"] for r in strip} <= set(range(1, 31))


def test_a_date_named_reaches_past_the_turns_a_question_rescores(run, home):
    """A question rescores with their neighbours only the best turns by their own score
    (window.depth); one that names a date looks deeper, since nearness counts only there: the
    turn of that day, last of 80 by its own score (the longest), still comes first."""
    from anima.recall import window

    for day in range(1, 81):
        words = "We went hiking by the lake" + (" and the hills, with friends, all day long" if day == 40 else "")
        write_session(home, f"d{day:02}", [("user", words + ".", f"2023-01-{1 + day % 28:02}T09:00:00Z"
                                            if day != 40 else "2023-03-14T09:00:00Z")])
    assert 80 > window.POOL
    assert [x["session"] for x in ask(run, "hiking by the lake on 14 March 2023")][:1] == ["d40"]
    assert "d40" not in [x["session"] for x in ask(run, "hiking by the lake", "--limit", "10")]


@pytest.mark.parametrize("indexed", [False, True])
def test_a_batch_shared_among_processes_answers_as_one(run, chat, anima_bin, indexed):
    """recall.jobs: with the index on, a batch of 16 questions or more is answered in parts by
    several processes, through the installed binary in a pipe; the output is byte for byte
    that of one process, and what every part warns of (a damaged transcript the index does
    not cover yet) or notes (that the index is stale) is said once. A scan is not shared."""
    import zstandard

    for p in (chat / "sessions").iterdir():
        os.utime(p, (1e9, 1e9))  # (not hot: the index answers for them)
    if indexed:
        assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0
    else:
        assert run("index", "off").exit_code == 0
    cut = zstandard.ZstdCompressor().compress(b'{"role": "user", "content": "Coco ate the soup"}\n')
    (chat / "sessions" / "bad.jsonl.zst").write_bytes(cut[:-5])
    os.utime(chat / "sessions" / "bad.jsonl.zst", (1e9, 1e9))
    questions = "".join(f"{q}\n" for q in ["When did Maria get Coco?", "What has Maria been reading lately?",
                                          "soup", "", "rain on the window", "Who has a cat?"] * 4)
    env = {"ANIMA_HOME": str(chat), "PATH": "/usr/bin:/bin", "ANIMA_NOW": "2026-11-30T21:05:00Z"}
    got = {}
    for jobs in ("1", "2", "3"):
        p = subprocess.run([anima_bin, "recall", "--batch", "--jobs", jobs], input=questions, env=env,
                           capture_output=True, text=True)
        got[jobs] = (p.returncode, p.stdout, p.stderr)
    assert got["2"] == got["1"] == got["3"]
    code, out, err = got["1"]
    assert code == 0 and {json.loads(x)["query"] for x in out.splitlines()} >= {0, 1, 2, 4, 22, 23}
    assert err.count("bad.jsonl.zst") == 1, err
    assert err.count("index is stale") == (1 if indexed else 0), err
