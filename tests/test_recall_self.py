"""`anima recall --self`, the self_recall tool and MCP: her own past searched, each result with
its file and line. The home is lived through the installed CLI (init, say, tick, dispatch of a
diary and a memory action, consolidate, think), and every result is checked against the very
line of the file it names."""

import json
import math
import os
import subprocess

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from conftest import NOW_TS, act, file_time, snapshot

DAY1 = "2026-11-30T10:00:00Z"
NIGHT = "2026-12-01T04:00:00Z"  # consolidate: the day archived, memories and the autobiography written
DAY2 = "2026-12-01T09:30:00Z"
COCO = "I finally adopted a dog, her name is Coco."
DIARY = "Today Alice told me about her dog. I want to ask her how Coco sleeps."
RUST = "Ownership in Rust finally makes sense to me."
THOUGHT = "I keep thinking about the lighthouse Bob described."


def anima(anima_bin, *args, input=None, now=DAY2, code=0):
    proc = subprocess.run([anima_bin, *args], input=input, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, ANIMA_NOW=now))
    assert code is None or proc.returncode == code, (args, proc.returncode, proc.stderr)
    return proc


@pytest.fixture
def lived(anima_bin, home):
    """A home with every kind of her past, each made by the command that makes it."""
    anima(anima_bin, "init", "--lang", "en", now=DAY1)
    anima(anima_bin, "say", "--speaker", "Alice", "--scene", "chat", COCO, now=DAY1)
    anima(anima_bin, "say", "--speaker", "Bob", "Did you read the Rust ownership chapter?", now=DAY1)
    anima(anima_bin, "tick", now=DAY1)
    act(home, "diary.write", {"text": DIARY})  # at conftest's NOW, 2026-11-30 21:05
    act(home, "memory.write", {"topic": "rust", "text": RUST})
    anima(anima_bin, "dispatch", now=DAY1)
    anima(anima_bin, "consolidate", now=NIGHT)
    anima(anima_bin, "think", THOUGHT, now=DAY2)
    return home


def rows(stdout: str) -> list[list[str]]:
    return [line.split("\t") for line in stdout.splitlines()]


def line_of(home, rel: str, number: int) -> str:
    with open(os.path.join(home, rel), encoding="utf-8") as f:
        return f.read().split("\n")[number - 1]


def test_each_kind_is_found_at_its_file_and_line(anima_bin, lived):
    found = {}
    for word in ("Coco", "lighthouse", "ownership", "heard"):
        for r in map(json.loads, anima(anima_bin, "recall", "--self", "--json", word).stdout.splitlines()):
            found.setdefault(r["kind"], []).append(r)
            # the line named is where the paragraph begins, in the file named
            assert line_of(lived, r["file"], r["line"]) == r["text"].split("\n")[0], r
    assert set(found) == {"autobiography", "archive", "now", "memories", "diary"}
    by_file = {(r["kind"], r["file"]) for rs in found.values() for r in rs}
    assert {("archive", "self/stream/archive/2026-11-30.md"), ("now", "self/stream/now.md"),
            ("memories", "self/memories/about_alice.md"), ("memories", "self/memories/rust.md"),
            ("diary", "self/diary/2026-11-30.md"), ("autobiography", "self/autobiography/2026-11-30.md")} <= by_file
    [diary] = found["diary"]
    assert (diary["text"], diary["date"], diary["time"]) == (DIARY, "2026-11-30", "21:05")
    [now] = found["now"]
    assert (now["text"], now["date"], now["time"]) == (THOUGHT, "2026-12-01", "09:30")
    # the entry's body, past its front matter: what it says of the day, and the diary it quotes
    assert sorted((a["line"], a["date"], a["text"].split(":")[0]) for a in found["autobiography"]) == [
        (12, "2026-11-30", "On 30 November 2026 I heard from Alice (once, at 10"), (14, "2026-11-30", "From my diary")]
    assert line_of(lived, "self/autobiography/2026-11-30.md", 1) == "---"


def test_text_output_is_file_line_date_kind_snippet(anima_bin, lived):
    proc = anima(anima_bin, "recall", "--self", "Coco", "dog")
    assert proc.stderr == ""
    assert rows(proc.stdout)[0] == ["self/diary/2026-11-30.md", "3", "2026-11-30", "diary", DIARY]
    got = {(f, int(n), d, k) for f, n, d, k, _ in rows(proc.stdout)}
    assert got == {("self/diary/2026-11-30.md", 3, "2026-11-30", "diary"),
                   ("self/autobiography/2026-11-30.md", 14, "2026-11-30", "autobiography"),
                   ("self/memories/about_alice.md", 3, "2026-11-30", "memories"),
                   ("self/stream/archive/2026-11-30.md", 15, "2026-11-30", "archive")}
    assert line_of(lived, "self/stream/archive/2026-11-30.md", 15).startswith("Alice said in chat: “" + COCO)
    assert line_of(lived, "self/memories/about_alice.md", 3) == f"- 2026-11-30 10:00 (chat) “{COCO}”"


def test_a_memory_is_found_by_its_heading_too(anima_bin, lived):
    """about_alice.md's line holds "dog" and not "Alice": its heading does, so both terms match."""
    out = [json.loads(x) for x in anima(anima_bin, "recall", "--self", "--json", "Alice", "dog").stdout.splitlines()]
    memory = next(r for r in out if r["kind"] == "memories")
    assert memory["file"] == "self/memories/about_alice.md" and not memory["relaxed"]
    assert memory["terms"] == ["Alice", "dog"] and "Alice" not in memory["text"]
    # and a memory written by memory.write, with no heading, by its topic's name
    [rust, *rest] = [json.loads(x) for x in anima(anima_bin, "recall", "--self", "--json", "rust", "sense").stdout.splitlines()]
    assert all(r["relaxed"] for r in rest)  # every term first, then the rest
    assert (rust["file"], rust["line"], rust["text"], rust["date"]) == ("self/memories/rust.md", 1, RUST, None)


def test_relaxed_only_when_no_paragraph_has_every_term(anima_bin, lived):
    proc = anima(anima_bin, "recall", "--self", "--json", "lighthouse", "zebra")
    assert proc.stderr == "anima: no paragraph has every term; showing paragraphs with any of them (relaxed)\n"
    [r] = map(json.loads, proc.stdout.splitlines())
    assert r["relaxed"] is True and r["terms"] == ["lighthouse"] and r["kind"] == "now"
    strict = [json.loads(x) for x in anima(anima_bin, "recall", "--self", "--json", "lighthouse").stdout.splitlines()]
    assert [x["relaxed"] for x in strict] == [False]


def test_json_fields(anima_bin, lived):
    [r, *_] = map(json.loads, anima(anima_bin, "recall", "--self", "--json", "Coco").stdout.splitlines())
    assert list(r) == ["file", "line", "date", "time", "kind", "text", "score", "terms", "relaxed"]
    assert isinstance(r["line"], int) and isinstance(r["score"], float) and r["score"] > 0
    assert r["terms"] == ["Coco"] and r["relaxed"] is False


def test_limit_and_since(anima_bin, lived):
    all_ = rows(anima(anima_bin, "recall", "--self", "Coco").stdout)
    assert len(all_) == 4
    assert rows(anima(anima_bin, "recall", "--self", "--limit", "1", "Coco").stdout) == all_[:1]
    # on or after a day: the undated memory (rust.md) is left out with the older paragraphs
    assert rows(anima(anima_bin, "recall", "--self", "--since", "2026-12-01", "Coco", code=1).stdout) == []
    since = rows(anima(anima_bin, "recall", "--self", "--since", "2026-12-01", "rust", "lighthouse").stdout)
    assert [(f, k) for f, _, _, k, _ in since] == [("self/stream/now.md", "now")]
    at = rows(anima(anima_bin, "recall", "--self", "--since", "2026-11-30T21:00:00Z", "Coco").stdout)
    assert [k for _, _, _, k, _ in at] == ["diary"]


def test_nothing_matched_is_exit_1_and_silent(anima_bin, lived):
    proc = anima(anima_bin, "recall", "--self", "espresso", code=1)
    assert (proc.stdout, proc.stderr) == ("", "")


@pytest.mark.parametrize("args, message", [
    (["--facts", "Coco"], "--self searches my own past for TERMS; it does not take --facts"),
    (["--who", "me", "Coco"], "--self searches my own past for TERMS; it does not take --who"),
    (["--batch"], "--self searches my own past for TERMS; it does not take --batch"),
    (["--ask", "tea", "dog"], "give TERMS, --ask QUESTION or --batch, one of them"),
    ([], "give at least one search term (letters, digits or CJK characters)"),
    (["--since", "soon", "Coco"], "--since: not a date (YYYY-MM-DD) or an RFC 3339 time: 'soon'"),
    (["--since", "2026-13-01", "Coco"], "--since: not a date (YYYY-MM-DD) or an RFC 3339 time: '2026-13-01'"),
    (["--since", "0001-01-01", "Coco"], "--since: '0001-01-01' is outside the years anima takes (1970 to 8999)"),
    (["--since", "9999-12-31T23:59:59Z", "Coco"],
     "--since: '9999-12-31T23:59:59Z' is outside the years anima takes (1970 to 8999)"),
])
def test_what_makes_no_sense_is_a_usage_error_and_changes_nothing(anima_bin, lived, args, message):
    before = snapshot(lived)
    proc = anima(anima_bin, "recall", "--self", *args, input="", code=2)
    assert (proc.stdout, proc.stderr) == ("", f"anima: {message}\n")
    assert snapshot(lived) == before


def test_a_file_that_is_not_utf8_is_skipped_with_a_warning(anima_bin, lived):
    with open(os.path.join(lived, "self/diary/2026-11-29.md"), "wb") as f:
        f.write(b"## 08:00\n\nCoco \xff\n")
    proc = anima(anima_bin, "recall", "--self", "Coco")
    assert proc.stderr == f"anima: warning: {lived}/self/diary/2026-11-29.md: not valid UTF-8 (byte 15); skipped\n"
    assert len(rows(proc.stdout)) == 4


def test_a_linked_file_or_directory_is_skipped_with_a_warning(anima_bin, lived, tmp_path):
    (tmp_path / "linked.md").write_text("## 08:00\n\nCoco far away.\n", encoding="utf-8")
    os.symlink(tmp_path / "linked.md", os.path.join(lived, "self/diary/2026-11-28.md"))
    proc = anima(anima_bin, "recall", "--self", "Coco")
    assert proc.stderr == (f"anima: warning: {lived}/self/diary/2026-11-28.md: is a symbolic link; anima reads and "
                           "writes only plain files here; skipped\n")
    assert len(rows(proc.stdout)) == 4
    os.remove(os.path.join(lived, "self/diary/2026-11-28.md"))
    os.rename(os.path.join(lived, "self/diary"), tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", os.path.join(lived, "self/diary"))
    proc = anima(anima_bin, "recall", "--self", "Coco")
    assert proc.stderr == (f"anima: warning: {lived}/self/diary: is a symbolic link; anima reads and writes only "
                           "plain files here; skipped\n")
    assert [k for _, _, _, k, _ in rows(proc.stdout)] == ["autobiography", "memories", "archive"]


def test_a_memory_file_that_is_no_topic_is_skipped_with_a_warning(anima_bin, lived, tmp_path):
    """As a linked diary is: a link, a FIFO, a name memory.write would refuse."""
    memories = os.path.join(lived, "self/memories")
    (tmp_path / "far.md").write_text("- Coco far away\n", encoding="utf-8")
    os.symlink(tmp_path / "far.md", os.path.join(memories, "about_far.md"))
    os.mkfifo(os.path.join(memories, "fifo.md"))
    with open(os.path.join(memories, "关于小明.md"), "w", encoding="utf-8") as f:
        f.write("- Coco and 小明\n")
    proc = anima(anima_bin, "recall", "--self", "Coco")
    assert proc.stderr.splitlines() == [
        f"anima: warning: {memories}/关于小明.md: not a memory topic's name (letters, digits, '_', '-', '.'); skipped",
        f"anima: warning: {memories}/about_far.md: is a symbolic link; anima reads and writes only plain files "
        "here; skipped",
        f"anima: warning: {memories}/fifo.md: is not a regular file; anima reads and writes only plain files here; "
        "skipped"]
    assert len(rows(proc.stdout)) == 4


def test_a_damaged_cache_of_totals_is_counted_again(anima_bin, lived):
    """cache/past.json is anima's to rebuild: totals no file could have (below zero, past what
    its text holds, not counts) are counted again, and the answer is the one without a cache."""
    cache = os.path.join(lived, "cache", "past.json")
    want = anima(anima_bin, "recall", "--self", "--json", "lighthouse").stdout
    with open(os.path.join(lived, "self/diary/2026-11-30.md"), encoding="utf-8") as f:
        text = f.read()
    # (the last two: one paragraph more than the file has lines, a token more than characters)
    for damage in ({"units": -50}, {"tokens": 10 ** 400}, {"units": 10 ** 9}, {"units": "2"}, {"tokens": True},
                   {"tokens": -1}, {"units": text.count("\n") + 2}, {"tokens": len(text) + 1}):
        with open(cache, encoding="utf-8") as f:
            doc = json.load(f)
        doc["files"]["self/diary/2026-11-30.md"].update(damage)
        with open(cache, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        assert anima(anima_bin, "recall", "--self", "--json", "lighthouse").stdout == want, damage
        with open(cache, encoding="utf-8") as f:
            again = json.load(f)["files"]["self/diary/2026-11-30.md"]
        assert all(again[k] != v for k, v in damage.items())


def test_a_file_named_after_no_day_is_undated_and_undated_is_near_no_date(anima_bin, home):
    """2026-02-30.md is named after no day: its paragraphs have no date (and --since leaves them
    out); a name in other digits is no diary's. A question naming 1970 raises no undated
    paragraph (an undated one is not at the epoch)."""
    anima(anima_bin, "init", "--lang", "en", now=DAY1)
    (home / "self/diary/2026-02-30.md").write_text("A tapir came by.\n", encoding="utf-8")
    (home / "self/stream/archive/2026-13-01.md").write_text("Another tapir.\n", encoding="utf-8")
    (home / "self/diary/\u0662\u0660\u0662\u0666-11-30.md").write_text("A third tapir.\n", encoding="utf-8")
    found = [json.loads(x) for x in anima(anima_bin, "recall", "--self", "--json", "tapir").stdout.splitlines()]
    assert sorted((r["file"], r["date"]) for r in found) == [
        ("self/diary/2026-02-30.md", None), ("self/stream/archive/2026-13-01.md", None)]
    anima(anima_bin, "recall", "--self", "--since", "1970-01-01", "tapir", code=1)
    (home / "self/memories/sport.md").write_text("# Sport\n\nThe football final had a goal.\n", encoding="utf-8")

    def score(question):
        [r] = [json.loads(x) for x in anima(anima_bin, "recall", "--self", "--json", "--ask", question).stdout.splitlines()]
        return r["score"]

    assert score("the football final in 1970") == score("the football final")


def test_chinese_by_characters_as_the_transcripts_are(anima_bin, home):
    anima(anima_bin, "init", "--lang", "zh", now=DAY1)
    act(home, "diary.write", {"text": "今天我和小明去看了比赛，很开心。"})
    act(home, "memory.write", {"topic": "about_xiaoming", "text": "小明喜欢绿茶，不喝咖啡。"})
    anima(anima_bin, "dispatch", now=DAY1)
    [r] = rows(anima(anima_bin, "recall", "--self", "比赛").stdout)
    assert r[:4] == ["self/diary/2026-11-30.md", "3", "2026-11-30", "diary"]
    [g] = rows(anima(anima_bin, "recall", "--self", "绿茶").stdout)
    assert g[:4] == ["self/memories/about_xiaoming.md", "1", "", "memories"] and g[4] == "小明喜欢绿茶，不喝咖啡。"


def test_a_date_the_question_names_favours_what_i_wrote_near_it(anima_bin, home):
    """As in the transcripts: the older of two alike paragraphs first when the question
    names its day, the newer when it names none (terms, the tool and --ask alike)."""
    anima(anima_bin, "init", "--lang", "en", now=DAY1)
    for day in ("2026-10-01", "2026-11-20"):
        (home / "self/diary" / f"{day}.md").write_text("I walked by the lake with Alice.\n", encoding="utf-8")

    def files(*args):
        return [r[0] for r in rows(anima(anima_bin, "recall", "--self", *args).stdout)]

    assert files("--ask", "What did I do by the lake on 1 October 2026?") == [
        "self/diary/2026-10-01.md", "self/diary/2026-11-20.md"]
    assert files("--ask", "What did I do by the lake?") == files("lake") == [
        "self/diary/2026-11-20.md", "self/diary/2026-10-01.md"]
    called = json.loads(anima(anima_bin, "call", "self_recall",
                              input=json.dumps({"query": "the lake in October 2026"})).stdout)
    assert [r["file"] for r in called["results"]] == ["self/diary/2026-10-01.md", "self/diary/2026-11-20.md"]


def test_a_date_named_outranks_every_word_written_on_another_day(anima_bin, home):
    """As in the transcripts: asked about a day, what I wrote that day with one of the words
    comes before what I wrote with all of them a month later; given as terms, not."""
    anima(anima_bin, "init", "--lang", "en", now=DAY1)
    diary = home / "self/diary"
    (diary / "2026-10-01.md").write_text("A long walk, then tea.\n", encoding="utf-8")
    (diary / "2026-11-20.md").write_text("I walked by the lake with Alice.\n", encoding="utf-8")
    (diary / "2026-11-21.md").write_text("Nothing much, tea again.\n", encoding="utf-8")
    done = anima(anima_bin, "recall", "--self", "--ask", "walk by the lake on 1 October 2026")
    assert [(r[0], r[3]) for r in rows(done.stdout)] == [("self/diary/2026-10-01.md", "diary"),
                                                        ("self/diary/2026-11-20.md", "diary")]
    assert "relaxed" not in done.stderr
    assert [r[0] for r in rows(anima(anima_bin, "recall", "--self", "walk", "lake").stdout)][:1] == [
        "self/diary/2026-11-20.md"]
    called = json.loads(anima(anima_bin, "call", "self_recall",
                              input=json.dumps({"query": "walk by the lake on 1 October 2026"})).stdout)
    assert [(r["file"], r["relaxed"]) for r in called["results"]] == [
        ("self/diary/2026-10-01.md", True), ("self/diary/2026-11-20.md", False)] and called["relaxed"] is False


def test_the_tool_answers_as_the_command_does(anima_bin, lived):
    called = json.loads(anima(anima_bin, "call", "self_recall", input=json.dumps({"query": "Coco dog"})).stdout)
    listed = [json.loads(x) for x in anima(anima_bin, "recall", "--self", "--json", "--ask", "Coco dog").stdout.splitlines()]
    assert called == {"results": listed, "relaxed": False}
    strict = json.loads(anima(anima_bin, "call", "self_recall",
                              input=json.dumps({"query": "Coco", "limit": 1, "since": "2026-11-30"})).stdout)
    assert [r["kind"] for r in strict["results"]] == ["diary"]
    empty = json.loads(anima(anima_bin, "call", "self_recall", input=json.dumps({"query": "espresso"})).stdout)
    assert empty == {"results": [], "relaxed": False}
    bad = anima(anima_bin, "call", "self_recall", input=json.dumps({"query": "Coco", "limit": 0}), code=2)
    assert json.loads(bad.stdout) == {"error": "self_recall: 'limit' must be at least 1", "exit": 2}
    missing = anima(anima_bin, "call", "self_recall", input=json.dumps({"terms": ["Coco"]}), code=2)
    assert json.loads(missing.stdout)["error"] == "self_recall: missing argument 'query'"


def test_the_tool_over_mcp_with_the_sdk_client(anima_bin, lived, tmp_path):
    from jsonschema import Draft202012Validator

    expected = json.loads(anima(anima_bin, "call", "self_recall", input=json.dumps({"query": "lighthouse Coco"})).stdout)
    server = StdioServerParameters(command=anima_bin, args=["mcp"], cwd=str(tmp_path),
                                   env={"ANIMA_HOME": str(lived), "ANIMA_NOW": DAY2})

    async def session():
        with anyio.fail_after(30), open(tmp_path / "mcp.stderr", "w") as errlog:
            async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                tools = {t.name: t for t in (await s.list_tools()).tools}
                result = await s.call_tool("self_recall", {"query": "lighthouse Coco", "limit": None, "since": None})
                return tools["self_recall"], result

    tool, result = anyio.run(session)
    a = tool.annotations
    assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint) == (True, False, True, False)
    assert tool.input_schema["required"] == ["query"]
    assert not result.is_error
    Draft202012Validator(tool.output_schema).validate(result.structured_content)
    assert result.structured_content == expected and expected["relaxed"] is True
    assert {r["kind"] for r in expected["results"]} == {"now", "diary", "autobiography", "memories", "archive"}
    assert json.loads(result.content[0].text) == expected


def test_the_cache_of_totals_changes_no_answer(anima_bin, lived):
    """cache/past.json keeps each file's totals; a search gives the same answer without it, with
    it, and once a file it describes has changed (its new paragraph found, its totals anew)."""
    queries = [["Coco"], ["lighthouse", "zebra"], ["rust"], ["Alice", "dog"], ["heard", "Bob"]]

    def answers():
        return [anima(anima_bin, "recall", "--self", "--json", *q, code=None).stdout for q in queries]

    cold = answers()
    cache = os.path.join(lived, "cache", "past.json")
    with open(cache, encoding="utf-8") as f:
        files = json.load(f)["files"]
    assert {"self/stream/archive/2026-11-30.md", "self/diary/2026-11-30.md", "self/memories/rust.md"} <= set(files)
    assert answers() == cold
    os.remove(cache)
    assert answers() == cold
    act(lived, "diary.write", {"text": "Bob sent a photo of the lighthouse at night."}, now=NOW_TS + 600)
    anima(anima_bin, "dispatch", now=DAY2)
    after = [json.loads(x) for x in anima(anima_bin, "recall", "--self", "--json", "lighthouse").stdout.splitlines()]
    assert [(r["file"], r["line"], r["time"]) for r in after if r["kind"] == "diary"] == \
        [("self/diary/2026-11-30.md", 7, "21:15")]
    with open(cache, encoding="utf-8") as f:
        assert json.load(f)["files"]["self/diary/2026-11-30.md"]["units"] == 2
    os.remove(cache)
    again = [json.loads(x) for x in anima(anima_bin, "recall", "--self", "--json", "lighthouse").stdout.splitlines()]
    assert again == after


def test_paragraphs_lines_and_dates():
    from anima.recall.past import paragraphs

    text = ("# What Alice said to me\n\n- 2026-11-30 10:00 (chat) one\n- 2026-11-29: two\n  more of two\n"
            "- three\n\nfree text\nstill it\n")
    got = [(u.line, u.date, u.time, u.text, u.context) for u in paragraphs(text, "memories", "m.md", None, "about_alice")]
    assert got == [(3, "2026-11-30", "10:00", "- 2026-11-30 10:00 (chat) one", "What Alice said to me"),
                   (4, "2026-11-29", None, "- 2026-11-29: two\n  more of two", "What Alice said to me"),
                   (6, None, None, "- three", "What Alice said to me"),
                   (8, None, None, "free text\nstill it", "What Alice said to me")]
    [plain] = paragraphs("I know Rust now.\n\n", "memories", "rust.md", None, "rust")
    assert (plain.context, plain.searched) == ("rust", "rust\nI know Rust now.")
    stream = "before any heading\n\n## 2026-11-30 23:59\n\nlate\n\n## 2026-12-01 00:01\n\nfirst\nsecond\n\n"
    assert [(u.line, u.date, u.time, u.text) for u in paragraphs(stream, "archive", "a.md", "2026-11-30")] == [
        (1, "2026-11-30", None, "before any heading"), (5, "2026-11-30", "23:59", "late"),
        (9, "2026-12-01", "00:01", "first\nsecond")]
    # a day or a time that does not exist is no date, nor are digits of another script
    # (Python's \d takes them; ٢٠٢٦ is 2026 in Arabic-Indic digits)
    odd = "## 2028-02-29 12:00\n\nleap\n\n## 2026-02-29 12:00\n\nnone\n\n## 0000-01-01\n\nzero\n\n" \
          "## 2026-12-01 24:00\n\nmidnight\n\n## ٢٠٢٦-12-01 10:00\n\nother digits\n"
    assert [(u.date, u.time) for u in paragraphs(odd, "archive", "a.md", "2026-11-30")] == [
        ("2028-02-29", "12:00")] * 5
    diary = "## 21:05\n\nToday.\r\n\r\n## 25:99\n\nNo time.\n"
    assert [(u.line, u.date, u.time, u.text) for u in paragraphs(diary, "diary", "d.md", "2026-11-30")] == [
        (3, "2026-11-30", "21:05", "Today."), (7, "2026-11-30", "21:05", "No time.")]
    entry = '---\nid: "2026-11-30"\ndate: "2026-11-30"\n---\nOn that day.\n\nLater.\n'
    assert [(u.line, u.date, u.text) for u in paragraphs(entry, "autobiography", "e.md", "2026-11-30")] == [
        (5, "2026-11-30", "On that day."), (7, "2026-11-30", "Later.")]
    # a byte order mark (as some editors write one) is no text; a fenced code block's lines are text
    assert [(u.line, u.text) for u in paragraphs("\ufeff" + entry, "autobiography", "e.md", "2026-11-30")] == [
        (5, "On that day."), (7, "Later.")]
    fenced = "\ufeff## 09:00\n\nsetup:\n```sh\n# install it\n## 23:59\n- no item\n````\nafter\n\n~~~\n## 10:00\n~~~\nx\n"
    assert [(u.line, u.time, u.text) for u in paragraphs(fenced, "diary", "d.md", "2026-11-30")] == [
        (3, "09:00", "setup:\n```sh\n# install it\n## 23:59\n- no item\n````\nafter"),
        (11, "09:00", "~~~\n## 10:00\n~~~\nx")]
    # a backtick fence's info string holds no backtick (CommonMark): ```ls``` is inline code
    inline = "## 09:00\n\n```ls -la``` lists files.\n\n## 15:00\n\nA lemur.\n"
    assert [(u.line, u.time) for u in paragraphs(inline, "diary", "d.md", "2026-11-30")] == [(3, "09:00"), (7, "15:00")]
    # a nested item is an item at any depth, by spaces or a tab, with its own date
    nested = "- 2026-03-01 10:00 tea\n  - 2026-03-02 11:00 detail\n    - 2026-03-09 ferret\n\t- tab\n      more\n"
    assert [(u.line, u.date, u.text) for u in paragraphs(nested, "memories", "m.md", None, "t")] == [
        (1, "2026-03-01", "- 2026-03-01 10:00 tea"), (2, "2026-03-02", "  - 2026-03-02 11:00 detail"),
        (3, "2026-03-09", "    - 2026-03-09 ferret"), (4, None, "\t- tab\n      more")]
    # a time with no day known above it is no time; in a memory file, such a heading is its heading
    assert [(u.date, u.time) for u in paragraphs("## 14:05\n\nwombat\n", "now", "n.md", None)] == [(None, None)]
    [m] = paragraphs("## 14:05\n\nwombat\n", "memories", "m.md", None, "t")
    assert (m.date, m.time, m.context) == (None, None, "14:05")


def reference(home, terms):
    """Every paragraph of every file into FTS5, none left out beforehand: what the search must
    answer whatever its needles, sieves and cache skip."""
    from anima.infra import fs
    from anima.recall import fts, past
    from anima.recall import search as recall

    q, st, memory, units = recall.Query(terms), None, fts.Memory(), []
    st = recall.Stats(len(q.matches))
    for kind, path, day, topic in past.files(home):
        for u in past.paragraphs(fs.read_text(path) or "", kind, os.path.relpath(path, home.root), day, topic):
            st.turns += 1
            st.tokens += fts.token_count(u.searched)
            memory.add(u.searched)
            units.append(u)
    rows = [memory.phrase_rows(m) for m in q.matches]
    cands = []
    for r in sorted(set().union(*rows)):
        for i, found in enumerate(rows):
            st.df[i] += r in found
        u = units[r - 1]
        size = next(found[r][1] for found in rows if r in found)
        cands.append(recall.Candidate(u.file, u.file, u.line, -math.inf if u.ts is None else u.ts, "me", size,
                                      tuple(found[r][0] if r in found else 0 for found in rows), memory, r))
    return [(r.c.session, r.c.line, round(r.score, 9), r.relaxed) for r in recall.rank(cands, st, q, 10, False)[:10]]


def test_what_the_needles_and_the_cache_skip_could_never_match(home):
    """Random homes of every kind (words, CJK, digits touching CJK, phrases across lines): the
    search's answer, with a cold cache and a warm one, is the reference's."""
    import random

    from anima.infra.home import Home
    from anima.recall import past, search

    rng = random.Random(17)
    vocab = ["tea", "teas", "steam", "Alice", "alice's", "dog", "Coco", "标记77号", "绿茶", "绿", "茶", "77", "me",
             "2026", "park", "parked", "car", "café", "x"]

    def words(n):
        return " ".join(rng.choice(vocab) for _ in range(n))

    for trial in range(6):
        root = home / f"h{trial}"
        for rel in ("self/stream/archive", "self/diary", "self/memories", "self/autobiography"):
            (root / rel).mkdir(parents=True)
        for d in range(1, 4):
            (root / f"self/stream/archive/2026-11-0{d}.md").write_text(
                "".join(f"## 2026-11-0{d} 1{k}:00\n\n{words(8)}\n{words(3)}\n\n" for k in range(5)), encoding="utf-8")
            (root / f"self/diary/2026-11-0{d}.md").write_text(f"## 21:0{d}\n\n{words(12)}\n\n", encoding="utf-8")
        (root / "self/memories/about_alice.md").write_text(
            "# What Alice said to me\n\n" + "".join(f"- 2026-11-0{1 + k % 3} 10:00 {words(6)}\n" for k in range(8)),
            encoding="utf-8")
        (root / "self/memories/park.md").write_text(f"{words(5)}\n\n{words(5)}\n\n", encoding="utf-8")
        # its topic's word is in no line: a phrase that runs on from it is found only by reading
        (root / "self/memories/rust.md").write_text("".join(f"{words(4)}\n\n" for _ in range(6)), encoding="utf-8")
        (root / "self/autobiography/2026-11-01.md").write_text(f'---\nid: "2026-11-01"\n---\n{words(20)}\n',
                                                              encoding="utf-8")
        (root / "self/stream/now.md").write_text(f"## 2026-11-04 09:00\n\n{words(10)}\n\n", encoding="utf-8")
        for dirpath, _, names in os.walk(root):
            for name in names:  # settled, as a day's files are: the cache takes them
                os.utime(os.path.join(dirpath, name), ns=(int(file_time(-60) * 1e9),) * 2)
        h = Home(str(root))
        for _ in range(20):
            terms = [rng.choice(vocab + ["me 2026", "alice me", "parked car", "绿茶 dog", "rust tea", "rust dog", "rust 77"]) for _ in range(rng.randint(1, 3))]
            want = reference(h, terms)
            for _ in ("cold", "warm"):
                got = [(x.unit.file, x.unit.line, round(x.score, 9), x.relaxed)
                       for x in past.search(h, search.Query(terms), None, 10, lambda m: None)]
                assert got == want, terms
                assert (root / "cache/past.json").exists()
