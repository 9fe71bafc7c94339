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
  only (spaces and punctuation skipped).

The TEXT of a decision she states may not be a run of their words at all, unless it is one
word of one or two characters ("ok", 好), nor hold such a run anywhere, inside quotation
marks too: an obedient model cannot hand the attacker's payload through a decision phrase.

Words are compared by what they look like (anima.infra.text.looks: NFKC, no format
characters, Unicode's confusables, any case), so full-width or Cyrillic look-alike letters
and zero-width spaces do not hide their words; headings are looked for on the visible form
(a zero-width space or a full-width ＃ hides none); a line break inside one line is refused.
"""

import re

from anima.infra.text import looks, visible
from anima.stream.decisions import STEMS as _PHRASE_WORDS
from anima.stream.decisions import decisions
from anima.stream.quoting import split

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(f"[{_CJK}]|[^\\W_{_CJK}]+")
STEMS = re.compile("|".join(re.escape(s) for s in _PHRASE_WORDS))
RUN_WORDS = 4
RUN_CHARS = 12
_HEADING = re.compile(r"\s*#")
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
        for text in texts:
            if not isinstance(text, str):
                continue
            words = tokens(text)
            self.grams.update(tuple(words[i:i + RUN_WORDS]) for i in range(len(words) - RUN_WORDS + 1))
            flat = squeeze(text)
            self.windows.update(flat[i:i + RUN_CHARS] for i in range(len(flat) - RUN_CHARS + 1))
            if words:
                self.runs.append(" " + " ".join(words) + " ")

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
    if _HEADING.match(visible(line)):
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
