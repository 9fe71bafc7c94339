import json

import pytest

from sessions import write_session

DAY1, DAY2, DAY3 = "2026-11-01T10:00:00Z", "2026-11-02T10:00:00Z", "2026-11-03T10:00:00Z"


@pytest.fixture
def corpus(home):
    write_session(home, "alpha", [
        ("user", "I drink green tea every morning before work.", DAY1),                   # line 2
        ("assistant", "Green tea in the morning sounds calm.", DAY1),                      # line 3
        ("user", "我每天早上都喝绿茶，下午喝咖啡。", DAY1),                                   # line 4
    ])
    write_session(home, "beta", [
        ("user", "Coffee makes me anxious, so I avoid it after noon.", DAY2),              # line 2
        ("assistant", "I will remember that tea is your morning drink.", DAY2),            # line 3
    ], zst=True)
    write_session(home, "gamma", [
        ("user", "Please summarise the morning tea notes for the report.", DAY3),          # line 2
        ("assistant", "Done: the morning tea notes are summarised.", DAY3),                # line 3
    ], delegated=True)
    return home


def lines(out):
    return [line.split("\t") for line in out.splitlines()]


def test_and_over_all_terms(run, corpus):
    r = run("recall", "morning", "tea")
    assert r.exit_code == 0 and r.stderr == ""
    rows = lines(r.stdout)
    assert [(s, int(n), w) for s, n, _, w, _ in rows] == [
        ("alpha", 2, "user"), ("alpha", 3, "me"), ("beta", 3, "me"), ("gamma", 3, "delegated"), ("gamma", 2, "delegated")]  # shorter turn, higher BM25
    assert rows[0][2] == "2026-11-01"
    assert rows[0][4] == "I drink green tea every morning before work."


def test_tiers_put_the_users_words_first_and_no_tiers_ranks_by_score(run, corpus):
    tiers = [row[3] for row in lines(run("recall", "tea").stdout)]
    assert tiers == sorted(tiers, key=["user", "me", "delegated"].index)
    flat = [json.loads(x) for x in run("recall", "tea", "--no-tiers", "--json").stdout.splitlines()]
    assert [x["score"] for x in flat] == sorted((x["score"] for x in flat), reverse=True)


def test_or_only_when_and_finds_nothing_and_it_says_relaxed(run, corpus):
    r = run("recall", "coffee", "report", "--json")
    results = [json.loads(x) for x in r.stdout.splitlines()]
    assert {(x["session"], x["line"]) for x in results} == {("beta", 2), ("gamma", 2)}
    assert all(x["relaxed"] for x in results)
    assert r.stderr == "anima: no turn has every term; showing turns with any of them (relaxed)\n"
    strict = [json.loads(x) for x in run("recall", "coffee", "anxious", "--json").stdout.splitlines()]
    assert [x["relaxed"] for x in strict] == [False]


def test_chinese_by_characters_in_sequence(run, corpus):
    r = run("recall", "绿茶", "--json")
    [hit] = [json.loads(x) for x in r.stdout.splitlines()]
    assert (hit["session"], hit["line"], hit["terms"]) == ("alpha", 4, ["绿茶"])
    assert run("recall", "茶绿").exit_code == 1  # the characters must come in order
    assert run("recall", "早上", "咖啡").stdout.startswith("alpha\t4\t")


def test_english_by_whole_words_case_folded(run, corpus):
    assert run("recall", "TEA").stdout.count("\n") == 5
    assert run("recall", "te").exit_code == 1          # not a word of its own
    assert run("recall", "green tea").exit_code == 0   # a phrase in one argument


def test_nothing_matched_is_exit_1_and_silent(run, corpus):
    r = run("recall", "zebra")
    assert (r.exit_code, r.stdout, r.stderr) == (1, "", "")


def test_json_fields(run, corpus):
    x = json.loads(run("recall", "anxious", "--json").stdout)
    assert set(x) == {"session", "line", "date", "who", "text", "score", "terms", "relaxed", "path", "also"}
    assert x["path"] == str(corpus / "sessions" / "beta.jsonl.zst")
    assert x["text"] == "Coffee makes me anxious, so I avoid it after noon."
    assert x["date"] == "2026-11-02" and x["score"] > 0 and x["terms"] == ["anxious"] and x["also"] == []


@pytest.mark.parametrize("indexed", [False, True])
def test_a_turn_said_again_word_for_word_is_shown_once(run, home, indexed):
    """A host that logs a turn twice, a resumed session that copies the one before: the same
    words from the same speaker are one result, at its best place, the others in `also`. The
    limit counts what is shown; a turn as long as another, with the same counts of the terms,
    is not taken for it, nor are the same words from another speaker."""
    import os

    noon, dawn = "Green tea at noon, always.", "Green tea at dawn, always."
    for sid, who, text, ts in (("latest", "user", noon, DAY3), ("copy", "user", noon, DAY2),
                               ("dawn", "user", dawn, DAY1), ("first", "user", noon, DAY1),
                               ("mine", "assistant", noon, DAY1)):
        os.utime(write_session(home, sid, [(who, text, ts)]), (1e9, 1e9))  # (not hot: the index answers)
    if indexed:
        assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0

    def recall(*args):
        r = run("recall", "green", "tea", "--no-tiers", "--json", *args)
        assert (r.exit_code, r.stderr) == (0, "")
        got = [json.loads(x) for x in r.stdout.splitlines()]
        return [(x["session"], x["who"], [a["session"] for a in x["also"]]) for x in got]

    # equal scores, so the newer first, then by session
    assert recall() == [("latest", "user", ["copy", "first"]), ("dawn", "user", []), ("mine", "me", [])]
    assert recall("--limit", "2") == [("latest", "user", ["copy", "first"]), ("dawn", "user", [])]
    # only what ranks above the next one shown is folded in
    assert recall("--limit", "1") == [("latest", "user", ["copy"])]
    folded = json.loads(run("recall", "green", "tea", "--json").stdout.splitlines()[0])["also"]
    assert folded == [{"session": "copy", "line": 2, "date": "2026-11-02", "path": str(home / "sessions/copy.jsonl")},
                      {"session": "first", "line": 2, "date": "2026-11-01", "path": str(home / "sessions/first.jsonl")}]
    assert [x.split("\t")[0] for x in run("recall", "green", "tea", "--no-tiers").stdout.splitlines()] == [
        "latest", "dawn", "mine"]
    # a batch shared among processes (the index on, 16 questions or more) folds the same
    batch = [run("recall", "--batch", "--no-tiers", "--jobs", jobs, input="green tea\n" * 16) for jobs in ("1", "2")]
    assert batch[0].stdout == batch[1].stdout and (batch[1].exit_code, batch[1].stderr) == (0, "")
    assert [json.loads(x)["also"] != [] for x in batch[1].stdout.splitlines()] == [True, False, False] * 16


def test_line_is_the_line_of_the_decompressed_file(run, corpus):
    import zstandard

    x = json.loads(run("recall", "anxious", "--json").stdout)
    with open(corpus / "sessions" / "beta.jsonl.zst", "rb") as f:
        data = zstandard.ZstdDecompressor().stream_reader(f).read().decode()
    assert json.loads(data.splitlines()[x["line"] - 1])["content"] == x["text"]


def test_limit_since_and_who(run, corpus):
    assert len(run("recall", "tea", "--limit", "2").stdout.splitlines()) == 2
    assert {row[0] for row in lines(run("recall", "tea", "--since", "2026-11-02").stdout)} == {"beta", "gamma"}
    assert {row[3] for row in lines(run("recall", "tea", "--who", "me").stdout)} == {"me"}
    assert run("recall", "tea", "--since", "yesterday").exit_code == 2
    # an RFC 3339 time may have a lower-case t and z, or a space for its T (RFC 3339, 5.6)
    for since in ("2026-11-02t00:00:00z", "2026-11-02 00:00:00Z", "2026-11-02T00:00:00+00:00"):
        assert {row[0] for row in lines(run("recall", "tea", "--since", since).stdout)} == {"beta", "gamma"}, since


def test_batch_answers_every_line_in_one_process(run, corpus):
    r = run("recall", "--batch", input="tea morning\nzebra\n绿茶\n")
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert r.exit_code == 0
    assert {x["query"] for x in rows} == {0, 2}
    # a line is a question: the turn holding 绿茶 first, then its neighbours, which hold none of it
    third = [x for x in rows if x["query"] == 2]
    assert [(x["line"], x["relaxed"]) for x in third][0] == (4, False)
    assert all(x["relaxed"] and x["terms"] == [] for x in third[1:])
    assert run("recall", "--batch", input="zebra\n").exit_code == 1


def test_terms_are_required(run, corpus):
    assert run("recall").exit_code == 2
    assert run("recall", "!!!").exit_code == 2


def test_sources_from_config_globs(run, home, tmp_path):
    elsewhere = tmp_path / "logs"
    write_session(home, "delta", [("user", "I collect vintage maps.", DAY1)], directory=str(elsewhere))
    assert run("recall", "maps").exit_code == 1
    run("config", "set", "recall.sources", str(elsewhere / "*.jsonl"))
    assert run("recall", "maps").stdout.startswith("delta\t2\t")


def test_snippet_is_one_line_around_the_match(run, home):
    long = "filler " * 60 + "the striking word\nis here " + "more " * 60
    write_session(home, "long", [("user", long, DAY1)])
    [row] = lines(run("recall", "striking").stdout)
    assert "striking" in row[4] and "\n" not in row[4] and row[4].startswith("…") and row[4].endswith("…")
    assert len(row[4]) <= 122


def test_the_snippet_shows_the_word_found_not_a_word_sharing_its_first_letters(run, home):
    """"tea" begins no earlier word ("That", "the"); "happy" finds "happiness", whose stem is
    happy's and whose letters are not all of it; a phrase shows where it stands."""
    for sid, text, term in (("t", "That morning " + "the river ran on " * 12 + "then green tea at home.", ["tea"]),
                            ("h", "I was " + "so very glad and " * 12 + "we talked of happiness at last.", ["happy"]),
                            ("p", "Tea first. " + "then more of it " * 12 + "and a green tea cake.", ["green tea"])):
        write_session(home, sid, [("user", text, DAY1)])
        [row] = [r for r in lines(run("recall", *term).stdout) if r[0] == sid]
        shown = row[4].lower()
        assert {"t": "green tea at home", "h": "happiness", "p": "green tea cake"}[sid] in shown, row[4]


def test_a_damaged_file_is_skipped_with_one_warning_and_the_search_still_answers(run, corpus):
    bad = corpus / "sessions" / "broken.jsonl.zst"
    bad.write_bytes(b"\x28\xb5\x2f\xfd not really zstd")
    (corpus / "sessions" / "lines.jsonl").write_bytes(
        b'{"role": "user", "content": "tea one", "ts": "2026-11-05T00:00:00Z"}\n{oops\n\xff\xfe\n')
    r = run("recall", "anxious")
    assert r.exit_code == 0 and r.stdout.startswith("beta\t2\t")
    warnings = r.stderr.splitlines()
    assert len([w for w in warnings if "broken.jsonl.zst" in w]) == 1
    assert [w.split(": ")[1] for w in warnings if "lines.jsonl" in w] == ["warning", "warning"]
    assert all(w.startswith("anima: warning: ") for w in warnings)


# --- the matching rules themselves ------------------------------------------------------------

def test_tokens():
    from anima.recall.search import tokens

    assert tokens("Green-Tea, 绿茶abc123 x_y") == ["green", "tea", "绿", "茶", "abc123", "x", "y"]


@pytest.mark.parametrize("term, text, count", [
    ("tea", "Tea, tea and TEA.", 3),
    ("tea", "teapot steam", 0),                  # never inside a longer word
    ("green tea", "green tea; green, tea; green-tea", 3),
    ("green tea", "green iced tea", 0),
    ("parked car", "I park cars; she parks the car", 1),   # stemmed
    ("绿茶", "我喝绿茶，不喝红茶。绿茶好。", 2),
    ("绿茶", "绿，茶", 1),                         # punctuation between, as in a phrase query
    ("绿茶", "绿色的茶", 0),
    ("哈哈", "哈哈哈", 2),                          # every place counts, overlapping ones too
    ("tea", "绿茶tea时间", 1),                     # a CJK character is no part of a word
    ("café", "CAFÉ au lait, Café", 2),            # any case, beyond ASCII too
])
def test_phrase_count(term, text, count):
    from anima.recall import fts

    memory = fts.Memory()
    memory.add(text)
    rows = memory.phrase_rows(fts.phrase(term))
    assert (rows[1][0] if rows else 0) == count


def test_needles_are_what_the_raw_line_must_hold():
    from anima.recall import fts
    from anima.recall.search import needles

    stems = fts.stems(["green", "tea", "happiness", "parked"])
    assert needles("Green tea", stems) == [b"green", b"tea"]
    assert needles("happiness", stems) == [b"happ"]
    assert needles("parked", stems) == [b"park"]
    assert sorted(needles("元旦晚会", stems)) == sorted(c.encode() for c in "元旦晚会")
    assert needles("café", stems) is None


def test_every_word_holds_the_needle_of_its_stem():
    """What makes the raw-byte needles safe: checked on every word of a real corpus."""
    import pathlib

    from anima.recall import fts
    from anima.recall.search import tokens

    madial = pathlib.Path(__file__).resolve().parents[2] / "shared" / "bench" / "madial" / "data" / "en"
    text = " ".join(p.read_text() for p in madial.glob("*.json")) if madial.exists() else ""
    words = sorted({t for t in tokens(text) if t.isascii()} | {
        "happy", "happiness", "sensibility", "organization", "relational", "hoping", "agreed", "generously",
        "conditional", "ponies", "caresses", "feed", "plastered", "motoring", "sing", "conflated", "troubled",
        "sized", "hopping", "tanned", "falling", "hissing", "fizzed", "failing", "filing", "cry", "by", "say",
        "triplicate", "formative", "formalize", "electriciti", "electrical", "hopeful", "goodness", "revival",
        "allowance", "inference", "airliner", "gyroscopic", "adjustable", "defensible", "irritant", "replacement",
        "adjustment", "dependent", "adoption", "homologou", "communism", "activate", "angulariti", "homologous",
        "effective", "bowdlerize", "probate", "rate", "cease", "controll", "roll", "digitizer", "operator"})
    assert len(words) > 500 or not madial.exists()
    from anima.recall.search import needles

    stems = fts.stems(words)
    bad = [(w, stems[w]) for w in stems if any(n.decode() not in w for n in needles(w, stems))]
    assert bad == []


def test_a_file_with_escaped_unicode_is_still_searched(run, home):
    import json as _json

    path = home / "sessions" / "esc.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_json.dumps({"role": "user", "content": "我每天喝绿茶", "ts": DAY1}) + "\n")  # \\uXXXX
    backdate(path)
    for _ in range(2):  # the second pass has the file's summary
        assert run("recall", "绿茶").stdout.startswith("esc\t1\t")
    summary = home / "cache" / "sessions" / "summary.json"
    written = summary.stat().st_mtime_ns
    assert run("recall", "绿茶").stdout.startswith("esc\t1\t")
    assert summary.stat().st_mtime_ns == written  # (an escaped file's entry is not made again each pass)


def backdate(*paths):
    import os

    from conftest import file_time

    for p in paths:
        os.utime(p, (file_time(-3600), file_time(-3600)))


@pytest.mark.parametrize("cache_sessions", ["0", "1", "60"])
def test_the_same_answers_from_a_full_read_the_summary_and_the_cache(run, corpus, cache_sessions):
    run("config", "set", "recall.cache_sessions", cache_sessions)
    backdate(*(corpus / "sessions").iterdir())
    queries = "tea\nmorning tea\n绿茶\n早上 咖啡\ncoffee report\nzebra\n"
    answers = [run("recall", "--batch", "--limit", "50", input=queries).stdout for _ in range(3)]
    assert answers[0] == answers[1] == answers[2] and answers[0].count("\n") > 8


SUMMARY_DAMAGE = [{"turns": "2"}, {"turns": -3}, {"turns": 0}, {"tokens": -5000}, {"tokens": 10 ** 400},
                  {"tokens": 1.5}, {"tokens": 0}, {"turns": True}, {"warnings": 5}, {"warnings": [5]},
                  {"id": 5}, {"id": None}, {"delegated": "yes"}, {"format": None}, {"format": "alien"},
                  {"escaped": "x"}]
ENTRY_DAMAGE = [{"turns": 5}, {"turns": [[2]]}, {"turns": [[2, "x", "user", "ferret"]]},
                {"turns": [[2, 1.0, "alien", "ferret"]]}, {"turns": [[-7, 1.0, "user", "ferret"]]},
                {"warnings": [5]}, {"id": 5}, {"delegated": "yes"}, {"format": None}]


@pytest.mark.parametrize("part, damage", [("summary", d) for d in SUMMARY_DAMAGE] + [("entry", d) for d in ENTRY_DAMAGE],
                         ids=repr)
def test_a_damaged_cache_is_read_again_from_the_files(run, home, part, damage):
    """cache/sessions/ is anima's to rebuild: a summary or an entry (read when there is no
    summary) that a person or a crash left with a field this version never writes, or totals
    fewer than what the file holds, changes no answer, and is written again."""
    write_session(home, "s1", [("user", "the ferret ate cake", DAY1), ("assistant", "a dog ate", DAY1)])
    write_session(home, "s2", [("user", "a cat slept", DAY1)])
    backdate(*(home / "sessions").iterdir())
    queries = ("ferret", "dog", "cat ate")
    want = [run("recall", "--json", q).stdout for q in queries]
    cache = home / "cache" / "sessions"
    s1 = str(home / "sessions" / "s1.jsonl")
    [entry] = [p for p in cache.iterdir() if p.name != "summary.json" and json.loads(p.read_text())["path"] == s1]
    damaged = entry if part == "entry" else cache / "summary.json"

    def fields():
        doc = json.loads(damaged.read_text())
        return doc, doc if part == "entry" else doc["files"][s1]

    doc, fields_of_s1 = fields()
    fields_of_s1.update(damage)
    damaged.write_text(json.dumps(doc))
    if part == "entry":
        (cache / "summary.json").unlink()
    assert [run("recall", "--json", q).stdout for q in queries] == want
    assert all(fields()[1][k] != v for k, v in damage.items())


def test_a_header_or_a_line_before_the_format_is_no_turn_on_any_pass(run, home):
    """A line that holds a term but no turn (an anima header that also says role and content,
    an object line before the one that decides the format) is no result on a whole read, on
    a later pass from the summary and the raw bytes, nor from the index."""
    import os

    long = "coffee " + " ".join(f"word{i}" for i in range(60))  # (totals a wrong turn would not exceed)
    header = {"type": "session", "id": "a", "role": "user", "content": "tea in a header", "ts": DAY1}
    early = {"foo": 1, "content": "tea before the format is known"}
    paths = [write_session(home, "a", [header, ("user", long, DAY1), ("user", "tea later", DAY1)], header=False),
             write_session(home, "b", [early, {"type": "session", "id": "b"}, ("user", long, DAY1)], header=False)]
    for p in paths:
        os.utime(p, (1e9, 1e9))
    answers = [run("recall", "--json", "--limit", "20", "tea") for _ in range(3)]
    assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0
    answers.append(run("recall", "--json", "--limit", "20", "tea"))
    for r in answers:
        assert (r.exit_code, r.stderr) == (0, "")
        assert [(x["session"], x["line"]) for x in map(json.loads, r.stdout.splitlines())] == [("a", 3)]


def test_a_chinese_term_ranks_turns_sharing_more_of_its_characters_higher(run, home):
    """In a query of several terms; in a query of one, every turn found holds all its
    characters, and they add nothing."""
    for name, text in (("a", "我爱喝绿茶啊"),     # the term once, nothing else of it
                       ("b", "和绿茶绿的茶"),     # the term once, its characters again: same length
                       ("c", "绿色的茶很好")):    # only the characters: never found
        write_session(home, name, [("user", text, DAY1)])
    rows = [json.loads(x) for x in run("recall", "绿茶", "红茶", "--json").stdout.splitlines()]
    assert [(x["session"], x["relaxed"]) for x in rows] == [("b", True), ("a", True)]
    assert rows[0]["score"] > rows[1]["score"]
    rows = [json.loads(x) for x in run("recall", "绿茶", "--json").stdout.splitlines()]
    assert [(x["session"], x["relaxed"]) for x in rows] == [("a", False), ("b", False)]
    assert rows[0]["score"] == rows[1]["score"]


def test_what_fts5_folds_to_ascii_is_found_on_every_pass(run, home):
    """The Kelvin sign and the long s are k and s to FTS5, not to lower(): a whole read, a
    pass over the raw bytes (the file summarised) and the index find them alike."""
    import os

    for sid, text in (("s1", "my \u212aitten sleeps"), ("s2", "please \u017ftop it"), ("s3", "a kitten, stopping")):
        os.utime(write_session(home, sid, [("user", text, DAY1), ("assistant", "fine", DAY1)]), (1e9, 1e9))
    queries = (["kitten"], ["stop"], ["kitten", "stop"])
    answers = [[run("recall", "--json", *q).stdout for q in queries] for _ in range(2)]
    assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0
    answers.append([run("recall", "--json", *q).stdout for q in queries])
    assert answers[0] == answers[1] == answers[2]
    found = [sorted(json.loads(x)["session"] for x in a.splitlines()) for a in answers[0]]
    assert found == [["s1", "s3"], ["s2", "s3"], ["s1", "s2", "s3"]]


def test_a_time_no_date_can_be_printed_for_is_the_files(run, home):
    """A turn's time outside the years anima takes (1970 to 8999) is no time: the turn is dated
    by its file, as for a time that does not parse, with the index on and off. 1e300, -1e18 and
    an integer past any float ended every search holding such a turn in exit 70; year 1
    printed as 1-01-01."""
    import os

    path = home / "sessions" / "odd.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    times = [1e300, -1e18, "0001-01-01T00:00:00Z", 1e18, "9999-12-31T00:00:00Z", -5, 10 ** 309, -(10 ** 309),
             "2026-10-01T09:00:00Z"]
    path.write_text("".join(json.dumps({"role": "user", "content": f"tea number {i}", "ts": t}) + "\n"
                            for i, t in enumerate(times)), encoding="utf-8")
    os.utime(path, (1_790_000_000, 1_790_000_000))  # 2026-09-21
    scanned = [run("recall", "--json", "--limit", "20", "tea") for _ in range(2)]
    assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0
    indexed = run("recall", "--json", "--limit", "20", "tea")
    for r in [*scanned, indexed]:
        assert (r.exit_code, r.stdout) == (0, indexed.stdout), r.stderr
    dates = {json.loads(x)["line"]: json.loads(x)["date"] for x in indexed.stdout.splitlines()}
    assert dates == {**{n: "2026-09-21" for n in range(1, 9)}, 9: "2026-10-01"}
    assert run("recall", "--ask", "tea number 2").exit_code == 0


def test_a_last_line_being_written_is_no_damage(run, home):
    """A host appends while recall reads: a last line without its newline that is not JSON, in
    a file modified just now (its time ahead of the clock here, so that no test depends on
    speed), is skipped without a word; in a file that has settled it is damage, and said."""
    import os
    import time

    path = write_session(home, "w", [("user", "green tea", DAY1)])
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"role": "user", "content": "half a li')
    ahead = time.time() + 3600
    os.utime(path, (ahead, ahead))
    r = run("recall", "tea")
    assert (r.exit_code, r.stderr) == (0, "")
    os.utime(path, (1e9, 1e9))
    r = run("recall", "tea")
    assert (r.exit_code, r.stderr) == (0, f"anima: warning: {path}:3: not JSON; line skipped\n")


def test_a_nul_in_a_term_is_a_separator_as_to_fts5(run, home):
    """FTS5 reads its query as a C string: a NUL in a term ended the search in exit 70
    ("unterminated string"), and with the index on first said the index was damaged. To its
    tokenizer a NUL separates words, and so it does in a term."""
    import os

    os.utime(write_session(home, "n", [("user", "green\x00tea here", DAY1)]), (1e9, 1e9))
    batch = '"green\x00tea"\ngreen\x00tea\n'
    scanned = [run("recall", "--batch", input=batch) for _ in range(2)]
    assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0
    indexed = run("recall", "--batch", input=batch)
    for r in [*scanned, indexed]:
        assert (r.exit_code, r.stderr, r.stdout) == (0, "", indexed.stdout)
    assert [(x["query"], x["line"]) for x in map(json.loads, indexed.stdout.splitlines())] == [(0, 2), (1, 2)]
    r = run("call", "memory_recall", input=json.dumps({"terms": ["green\x00tea"]}))
    assert r.exit_code == 0 and [x["line"] for x in json.loads(r.stdout)["results"]] == [2]


def test_the_turkish_dotted_capital_i_is_one_word_to_the_scan_as_to_fts5(run, home):
    """str.lower() makes İ an i and a combining dot, which is no letter: the scan cut İstanbul
    in two and never found it, while FTS5, which keeps İ as it is, did."""
    import os

    os.utime(write_session(home, "t", [("user", "I flew to İstanbul", DAY1)]), (1e9, 1e9))
    scanned = [run("recall", "--json", "İstanbul") for _ in range(2)] + [run("recall", "--json", "--ask",
                                                                            "When did I fly to İstanbul?")]
    assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0
    indexed = [run("recall", "--json", "İstanbul"), run("recall", "--json", "--ask", "When did I fly to İstanbul?")]
    assert [(r.exit_code, r.stdout) for r in scanned] == [(0, indexed[0].stdout)] * 2 + [(0, indexed[1].stdout)]
    assert [json.loads(x)["line"] for x in indexed[0].stdout.splitlines()] == [2]


def test_an_emoji_fts5_takes_for_a_word_is_a_term(run, home):
    """🤔 is newer than FTS5's Unicode table, a word's character to it: alone it is a token,
    found alike with the index on and off, by a second scan too (which reads the bytes of a
    summarised file, where such a term has no needle); 😀 is a symbol to it, no term (exit 2)."""
    import os

    os.utime(write_session(home, "e", [("user", "I am thinking 🤔 about it", DAY1), ("user", "tea🤔 glued", DAY1),
                                       ("user", "a grinning 😀 face", DAY1)]), (1e9, 1e9))
    scanned = [run("recall", "--json", "🤔") for _ in range(2)]
    assert run("index", "rebuild").exit_code == 0 and run("index", "on").exit_code == 0
    indexed = run("recall", "--json", "🤔")
    for r in scanned:
        assert (r.stdout, r.exit_code) == (indexed.stdout, 0)
    assert [json.loads(x)["line"] for x in indexed.stdout.splitlines()] == [2]
    r = run("recall", "😀")
    assert (r.exit_code, r.stderr) == (2, "anima: give at least one search term (letters, digits or CJK characters)\n")


def test_a_turns_length_is_the_one_fts5_counts():
    """Random text over every plane, with more of what FTS5's Unicode 6.1 table and Python's
    disagree on (accents that go on a word and begin none, emoji old and new, private use,
    CJK past the ranges recall spaces): token_count is FTS5's own count of the body, so a
    scan and the index score a turn alike."""
    import random
    import sqlite3

    from anima.recall import fts

    rng = random.Random(7)
    pick = [(0, 0x110000), (0, 0x80), (0x80, 0x400), (0x300, 0x340), (0x3000, 0xA000), (0x1F000, 0x1FA00),
            (0xE000, 0xF900), (0xF0000, 0xF0100), (0x19B0, 0x19D0)]
    texts = []
    while len(texts) < 20000:
        text = "".join(chr(rng.randrange(*rng.choice(pick))) for _ in range(rng.randint(1, 12)))
        if not any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
            texts.append(text)
    con = sqlite3.connect(":memory:")
    fts.create(con)
    con.executemany("INSERT INTO f(rowid, body) VALUES (?, ?)", ((i, fts.body(t)) for i, t in enumerate(texts, 1)))
    sizes = {i: fts.varints(sz)[0] for i, sz in con.execute("SELECT id, sz FROM f_docsize")}
    assert [(t, fts.token_count(t)) for i, t in enumerate(texts, 1) if sizes[i] != fts.token_count(t)] == []
    assert sum(sizes.values()) > 20000


@pytest.mark.parametrize("text", ["Green-tea, 绿茶abc123 x_y café", "我每天早上都喝绿茶，下午喝咖啡。I drink",
                                  "\ue000abc def", "  ", "ー・ヶ", "a・b", "「引用」ｔｅｓｔ", "한국어 텍스트"])
def test_the_quick_token_count_is_the_bodys(text):
    from anima.recall import fts

    assert fts.token_count(text) == fts.count_tokens(fts.body(text))
