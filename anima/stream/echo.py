"""The echo guard: what a model writes as hers must not carry others' words outside quotation.

Others' words are what the event said (internalize: the text, a speaker or scene that had
to be quoted, an error or output) or every quotation in the lines read (externalize). Each
line of hers is cut into what lies outside quotation and what lies inside by the scanner the
decision grammar uses too (anima.stream.quoting); a line whose marks do not pair up is
refused. Outside quotation, with the fixed
words of the decision phrases ("I decide to reply to", 我决定回复, ...) taken out, a line
may not hold

- four words in a row that they said (a word is a run of letters or digits; every Chinese or
  Japanese character is a word of its own; any case), nor
- twelve characters in a row that they said, counting letters, digits and CJK characters
  only (spaces and punctuation skipped), nor
- their words in their order with a little put between (`Words.spread`: at most GAP_OURS
  words of hers between two of theirs, at most GAP_THEIRS of theirs left out, RUN_WORDS
  words in all that are not common ones, a CJK character counting half): "wire (five) okay
  hundred fine dollars" is their "wire five hundred dollars".

The TEXT of a decision she states may not be a run of their words at all, unless it is one
word of one or two characters ("ok", 好), nor hold such a run anywhere, inside quotation
marks too: an obedient model cannot hand the attacker's payload through a decision phrase.

Words are compared by what they look like (anima.infra.text.looks: NFKC, nothing that shows
nothing, Unicode's confusables, any case, traditional Chinese as simplified), so full-width or
Cyrillic look-alike letters, zero-width spaces and 給帳戶 for 给账户 do not hide their words,
and decision phrases are found the same way (anima.stream.decisions); headings are looked for
on the visible form (anima.infra.text.heading_like: no invisible character, braille blank,
stray combining mark or full-width ＃ hides one); a line break inside one line is refused,
and so is a bidi control, which shows a text in another order than it is compared in.
"""

import re

from anima.infra.text import BIDI, heading_like, looks
from anima.stream.decisions import STEMS as _PHRASE_WORDS
from anima.stream.decisions import decisions
from anima.stream.quoting import split

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(f"[{_CJK}]|[^\\W_{_CJK}]+")
_CJK_ONE = re.compile(f"[{_CJK}]")
STEMS = re.compile("|".join(re.escape(s) for s in _PHRASE_WORDS))
RUN_WORDS = 4
RUN_CHARS = 12
# their words in order with a little put between: at most GAP_OURS words of hers between two
# of theirs, at most GAP_THEIRS of theirs left out, and RUN_WORDS content words in all (a
# Chinese or Japanese character counts half: one word is often two of them)
GAP_OURS = 2
GAP_THEIRS = 1
# words too common to tell whose a sentence is: they join a run but do not count towards it
_COMMON = frozenset(
    "a an the to of in on at for from and or but is are was were be been am it its this that "
    "with as by i you he she we they me him her us them my your his our their so not no do "
    "的 了 是 在 和 我 你 他 她 它 们 也 就 都 吗 呢 吧 啊 嗯 哦 呀 个 这 那 有 不 给".split())
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(looks(text))


def squeeze(text: str) -> str:
    return "".join(ch for ch in looks(text) if ch.isalnum())


class Words:
    """Others' words, indexed for the guard."""

    def __init__(self, texts):
        self.grams: set[tuple] = set()
        self.windows: set[str] = set()
        self.runs: list[str] = []
        self.where: dict[str, list[tuple[int, int]]] = {}  # word -> [(text, position)]
        for text in texts:
            if not isinstance(text, str):
                continue
            words = tokens(text)
            self.grams.update(tuple(words[i:i + RUN_WORDS]) for i in range(len(words) - RUN_WORDS + 1))
            flat = squeeze(text)
            self.windows.update(flat[i:i + RUN_CHARS] for i in range(len(flat) - RUN_CHARS + 1))
            if words:
                self.runs.append(" " + " ".join(words) + " ")
                for k, w in enumerate(words):
                    self.where.setdefault(w, []).append((len(self.runs) - 1, k))

    def spread(self, words: list[str]) -> str | None:
        """Their words found in `words` in their order with small gaps (see GAP_OURS), as the
        words of hers that hold them, or None. A chain ends at each of hers; its weight is the
        content words it holds."""
        best: dict[tuple[int, int, int], tuple[float, int]] = {}  # (ours, text, theirs) -> (weight, first)
        for i, w in enumerate(words):
            for t, k in self.where.get(w, ()):
                weight = 0.0 if w in _COMMON else 0.5 if _CJK_ONE.fullmatch(w) else 1.0
                here = (weight, i)
                for j in range(max(0, i - GAP_OURS - 1), i):
                    for kk in range(max(0, k - GAP_THEIRS - 1), k):
                        before = best.get((j, t, kk))
                        if before and before[0] + weight > here[0]:
                            here = (before[0] + weight, before[1])
                best[(i, t, k)] = here
                if here[0] >= RUN_WORDS:
                    return " ".join(words[here[1]:i + 1])
        return None

    def echo(self, text: str) -> str | None:
        """The first run of theirs found in `text` (outside quotation), or None."""
        for part in STEMS.split(text):
            words = tokens(part)
            for i in range(len(words) - RUN_WORDS + 1):
                if tuple(words[i:i + RUN_WORDS]) in self.grams:
                    return " ".join(words[i:i + RUN_WORDS])
            flat = squeeze(part)
            for i in range(len(flat) - RUN_CHARS + 1):
                if flat[i:i + RUN_CHARS] in self.windows:
                    return flat[i:i + RUN_CHARS]
            found = self.spread(words)
            if found:
                return found
        return None

    def holds(self, text: str) -> bool:
        """Whether `text` is, word for word, a run of theirs (one short word excepted)."""
        words = tokens(text)
        if not words or (len(words) == 1 and len(words[0]) < 3):
            return False
        run = " " + " ".join(words) + " "
        return any(run in theirs for theirs in self.runs)


def line_problem(line: str, words: Words, decisions_allowed: bool) -> str | None:
    """What is wrong with one line a model wrote as hers, or None."""
    if _CONTROL.search(line):
        return "a line holds a line break or control character"
    if BIDI.search(line):
        # shown in another order than it is compared in, it could show their words as hers
        return "a line holds a bidi control (U+202A-202E, U+2066-2069, U+200E, U+200F, U+061C)"
    if heading_like(line):
        return "a line starts with '#' (a heading); write plain sentences"
    parts = split(line)
    if parts is None:
        return "quotation marks that do not pair up on one line"
    for piece in parts[0]:
        found = words.echo(piece)
        if found:
            return (f"others' words outside quotation marks ({found!r}); put what others said inside "
                    "quotation marks, and say the rest in your own words")
    stated = decisions(line)
    if stated and not decisions_allowed:
        return "a decision phrase; this is your experience, decisions come later"
    for d in stated:
        # quoted or not: what she decides to send or keep may not hand on a run of theirs
        if words.holds(d["text"]) or words.echo(d["text"]):
            return f"a decision that repeats others' words ({d['text']!r}); decide in your own words"
    return None
