"""The long-conversation set of bench/conversation_corpus.py is what bench/recall_quality.py
says it is: the same every run, turns that begin with their speaker's name, dated sessions,
and questions whose evidence is where they say; and the homes the bench makes of it hold
that evidence at the (session, line) it scores."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))

import conversation_corpus as cc  # noqa: E402  (bench/ is not a package: its scripts import each other by name)
import recall_quality  # noqa: E402

CONVS = cc.build()


def by_key(conv: dict) -> dict:
    return {(s["id"], i + 2): (s, i) for s in conv["sessions"] for i in range(len(s["turns"]))}


def test_the_same_seed_gives_the_same_set_and_another_seed_another():
    assert cc.build() == CONVS
    assert cc.build(seed=cc.SEED + 1) != CONVS


def test_sessions_are_dated_apart_and_their_turns_alternate_named():
    assert len(CONVS) == cc.CONVERSATIONS
    for conv in CONVS:
        a, b = conv["speakers"]
        sessions = conv["sessions"]
        assert cc.SESSIONS[0] <= len(sessions) <= cc.SESSIONS[1]
        gaps = [(later["date"] - s["date"]) // cc.DAY for s, later in zip(sessions, sessions[1:], strict=False)]
        assert all(cc.GAP_DAYS[0] <= g <= cc.GAP_DAYS[1] for g in gaps)
        for s in sessions:
            assert cc.TURNS[0] <= len(s["turns"]) <= cc.TURNS[1]
            speakers = [who for who, _, _ in s["turns"]]
            assert {speakers[0], speakers[1]} == {a, b} and speakers[::2] == [speakers[0]] * len(speakers[::2])
            assert all(text.startswith(f"{who}: ") for who, text, _ in s["turns"])
            assert all(s["date"] <= ts < s["date"] + cc.DAY for _, _, ts in s["turns"])


def test_every_kind_is_asked_and_its_evidence_is_where_it_says():
    counts = {k: 0 for k in cc.KINDS}
    for conv in CONVS:
        where = by_key(conv)
        for q in conv["questions"]:
            counts[q["kind"]] += 1
            words = set(recall_quality.keywords(q["text"])) - {q["speaker"].lower()}
            assert q["text"].endswith("?") and words
            for key in q["evidence"]:
                s, i = where[key]
                who, text, _ = s["turns"][i]
                assert who == q["speaker"]
                if q["kind"] in ("adjacency", "date"):  # nothing but the name in common
                    assert not words & set(recall_quality.keywords(text)), (q["text"], text)
                if q["kind"] == "adjacency":  # the words are in the other speaker's question before it
                    before = s["turns"][i - 1]
                    assert before[0] != who and before[1].endswith("?") and words & set(
                        recall_quality.keywords(before[1])), (q["text"], before[1])
                if q["kind"] == "date":
                    day, month, year = cc._date(s["date"]).split()
                    assert f"{month} {year}" in q["text"]
            if q["kind"] == "multi-hop":
                assert len({key[0] for key in q["evidence"]}) == 2
    assert counts == {k: n * cc.CONVERSATIONS for k, n in cc.PER_CONVERSATION.items()}


def test_the_bench_homes_hold_the_evidence_at_its_line(tmp_path):
    corpus = recall_quality.conversations(str(tmp_path))
    questions = [q for conv in CONVS for q in conv["questions"]]
    assert len(corpus.parts) == cc.CONVERSATIONS and corpus.texts == [q["text"] for q in questions]
    roles = {s["id"]: dict(zip(conv["speakers"], ("user", "assistant"), strict=True)) for conv in CONVS for s in conv["sessions"]}
    for archive, queries in corpus.parts:
        for i in queries:
            assert corpus.relevant[i] == set(questions[i]["evidence"])
            for session, line in corpus.relevant[i]:
                with open(os.path.join(archive.home, "sessions", f"{session}.jsonl"), encoding="utf-8") as f:
                    lines = f.read().splitlines()
                assert json.loads(lines[0]) == {"type": "session", "id": session}
                record = json.loads(lines[line - 1])  # said by the one the question asks about
                assert record["content"].startswith(f"{questions[i]['speaker']}: ")
                assert record["role"] == roles[session][questions[i]["speaker"]]
