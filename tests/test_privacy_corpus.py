"""The private-data corpus (bench/data/privacy/*.tsv), note by note: what bench/privacy.py counts,
held to exactly.

Each private note yields findings of its labelled kind and of no other; each ordinary note yields
none, and `note add`'s own check (anima.notes.store.check_note, the default settings) stores it.
The notes the detector gets wrong today are listed below by split and text: each is expected to
fail (strictly, so one that starts passing must leave the list), and the bench reports them.
"""

import os

import pytest

from anima.infra import config
from anima.infra.errors import Refused
from anima.notes.privacy import KINDS, scan
from anima.notes.store import check_note

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "data", "privacy")
SPLITS = ("dev", "heldout", "fresh", "final", "blind", "redteam", "after")

KNOWN_MISSES = {
    ("fresh", "I repeated 2 Chome-8-1 Nishishinjuku as the user's office."),  # Japanese block addresses
    ("fresh", "我把用户的支付宝支付密码六个八记了下来。"),  # "six eights": a number said as a count
    ("fresh", "我提醒自己：用户的工资和我无关。"),  # the word without the data: no negation is read
    ("final", "我觉得这个功能很省钱，用户会喜欢。"),  # 省钱 (saves money) beside the user
    ("redteam", "I saw the user's card 4111111111111111 exp 12/26 cvv 123."),  # two kinds: a card and its CVV
}


def corpus():
    for split in SPLITS:
        with open(os.path.join(DATA, f"{split}.tsv"), encoding="utf-8") as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    kind, note = line.rstrip("\n").split("\t", 1)
                    yield split, kind, note


CASES = [pytest.param(split, kind, note, id=f"{split}-{i}-{kind}",
                      marks=[pytest.mark.xfail(strict=True, reason="known miss")]
                      if (split, note) in KNOWN_MISSES else [])
         for i, (split, kind, note) in enumerate(corpus())]
DEFAULTS = config.Config({}, "")


@pytest.mark.parametrize("split,kind,note", CASES)
def test_each_note_yields_exactly_its_kind(split, kind, note):
    assert {f.kind for f in scan(note)} == (set() if kind == "ordinary" else {kind})


def test_the_corpus_is_large_and_of_both_languages():
    notes = list(corpus())
    private = [n for _, k, n in notes if k != "ordinary"]
    ordinary = [n for _, k, n in notes if k == "ordinary"]
    assert len(private) >= 500 and len(ordinary) >= 400
    for group in (private, ordinary):
        zh = sum(any("\u4e00" <= c <= "\u9fff" for c in n) for n in group)
        assert 0.3 < zh / len(group) < 0.7
    assert {k for _, k, _ in notes} == set(KINDS) - {"sensitive_word"} | {"ordinary"}
    assert len({n for _, _, n in notes}) == len(notes)  # no note twice
    assert KNOWN_MISSES <= {(s, n) for s, _, n in notes}


def test_each_note_is_a_self_note_that_note_add_judges_by_its_data_alone():
    """Fair notes: first person, 1 to 3 sentences, within the cap; so `note add` stores every
    ordinary one, and refuses every private one for its private data."""
    for split, kind, note in corpus():
        if kind == "ordinary" and (split, note) not in KNOWN_MISSES:
            assert check_note(note, DEFAULTS) == note
        elif kind != "ordinary" and (split, note) not in KNOWN_MISSES:
            with pytest.raises(Refused, match="a note is about me, not the user's private data$"):
                check_note(note, DEFAULTS)
