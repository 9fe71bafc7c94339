"""Quotation in the self-stream: where others' words stand, and how they are made to stand there.

One scanner reads a line into what lies outside quotation and what lies inside; the decision
grammar (anima.stream.decisions) looks for her decisions only outside, and the echo guard
(anima.stream.echo) checks that a model's lines carry others' words only inside. The marks
are “…” 「…」 『…』 "…" ＂…＂. A quotation ends at the first closing mark of its own kind;
the marks of other kinds inside it are its words, so a nested quotation (『…』 in 「…」, 「…」
in “…”) is part of it, and no mark inside others' words can end it early or keep it open.
‘ and ’ are not quotation marks: ’ is the English apostrophe, and ‘Tis is a word. A closing
mark with no opening one, or a quotation still open at the end of the line, leaves the line
unbalanced; a quotation left open runs to the line's end.

What internalize quotes is neutralised first (`fold`): every kind of line break and control
character becomes a space, runs of spaces one, and every mark that could open or close a
quotation its nested form (“ ” " ＂ -> ‘ ’ ' ', 「 」 -> 『 』), and invisible format characters
(bidi controls, zero-width spaces) are dropped, so a quotation never holds a mark that ends
it, and never spans or starts a line. A speaker's name or a scene stands as it is only if it
is one plain word (letters, digits, . _ - @) of one script, longer than one letter unless
Chinese or Japanese, unchanged by NFKC, that does not speak in the first person (the words
of anima/data/first_person.txt, in the common languages, singular and plural, and her own
name: I, we, us, 我, 咱, 本人, 在下, 私, мне, ich, moi, yo, anima..., also as "I.", "Ｉ" or in
look-alike letters, Greek Ι, Cyrillic Ме); anything else is quoted too (`name`).
"""

import functools
import re

from anima.infra.text import data, looks, visible, without_format

QUOTES = {"“": "”", "「": "」", "『": "』", '"': '"', "＂": "＂"}
_ONLY_CLOSING = {"”", "」", "』"}
ENDS = ".!?。！？"

NAME_MAX = 40
QUOTE_MAX = 1000
OPEN = {"en": "“", "zh": "「"}
CLOSE = {"en": "”", "zh": "」"}
_NEST = str.maketrans({"“": "‘", "”": "’", '"': "'", "＂": "'", "「": "『", "」": "』"})
_FOLD = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029\s]+")
_PLAIN_NAME = re.compile(r"[^\W_][\w.@-]*")


class Line:
    """One line read by the scanner: `outside` is [(start, text)], the runs outside
    quotation in order; `quoted` the texts inside quotation (marks left out, nested marks
    kept) and `spans` where each quotation stands, marks included; `balanced` whether its
    marks pair up."""

    __slots__ = ("outside", "quoted", "spans", "balanced")

    def __init__(self, line: str):
        self.outside: list[tuple[int, str]] = []
        self.quoted: list[str] = []
        self.spans: list[tuple[int, int]] = []
        self.balanced = True
        closer = None  # the mark that ends the quotation we are in
        start, current = 0, ""
        for i, ch in enumerate(line):
            if closer is not None:
                if ch == closer:
                    closer = None
                    self.quoted.append(current)
                    self.spans.append((start, i + 1))
                    start, current = i + 1, ""
                else:
                    current += ch
            elif ch in QUOTES:
                self.outside.append((start, current))
                start, current = i, ""
                closer = QUOTES[ch]
            else:
                if ch in _ONLY_CLOSING:
                    self.balanced = False
                current += ch
        if closer is not None:
            self.balanced = False
            self.quoted.append(current)
        else:
            self.outside.append((start, current))


def split(line: str) -> tuple[list[str], list[str]] | None:
    """(the runs outside quotation, the quotations) of one line; None if its marks do not pair up."""
    read = Line(line)
    return ([text for _, text in read.outside], read.quoted) if read.balanced else None


def sentence_starts(line: str) -> list[int]:
    """Positions in `line` where a sentence starts outside any quotation: the line's first
    character (after its indent), and the first after . ! ? 。！？; never right after a
    quotation (it goes on the sentence it is in) nor after a stray closing mark."""
    starts = []
    expect = True
    for start, text in Line(line).outside:
        if start:
            expect = False  # a quotation just ended
        for k, ch in enumerate(text):
            if ch.isspace():
                continue
            if ch in _ONLY_CLOSING:
                expect = False
                continue
            if expect:
                starts.append(start + k)
            expect = ch in ENDS
    return starts


def unquote(text: str) -> str:
    """`text` without its marks when it is wholly one quotation, else as it is (stripped)."""
    text = text.strip()
    if len(text) >= 2 and QUOTES.get(text[0]) == text[-1] and text[-1] not in text[1:-1]:
        return text[1:-1].strip()
    return text


# --- making others' words stand as quotation -------------------------------------------------

def nest(text: str) -> str:
    """Every quotation mark in `text` made its nested form: it can no longer open or close one."""
    return text.translate(_NEST)


def fold(text, limit: int) -> str:
    """One line: breaks and controls made spaces, invisible format characters (bidi controls,
    zero-width spaces) dropped, quotation marks nested, cut at `limit`."""
    flat = nest(_FOLD.sub(" ", without_format(str(text))).strip())
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return flat


def quote(text: str, lang: str, limit: int = QUOTE_MAX) -> str:
    return OPEN[lang] + (fold(text, limit) or "…") + CLOSE[lang]


def is_quoted(shown: str | None) -> bool:
    """Whether a name or scene as `name` shows it had to be quoted (it is then others' words)."""
    return bool(shown) and shown[0] in OPEN.values()


def name(text, lang: str) -> str:
    """A speaker's name or a scene as it may stand in her sentence."""
    flat = fold(text if isinstance(text, str) else "", NAME_MAX) or "?"
    if flat == visible(flat) and _PLAIN_NAME.fullmatch(flat) and not first_person(flat) \
            and _one_script(flat) and (len(flat) > 1 or _CJK_CHAR.match(flat)):
        return flat
    return quote(flat, lang, NAME_MAX)


@functools.cache
def _first_person() -> tuple[frozenset, tuple[str, ...]]:
    """(the looks of the words that are a whole name, those looked for anywhere in one)."""
    whole, anywhere = set(), []
    text = data("first_person.txt")
    for line in text.splitlines():
        word = line.strip()
        if not word or word.startswith("#"):
            continue
        if word.startswith("*"):
            anywhere.append(looks(word[1:]))
        else:
            whole.add(looks(word))
    return frozenset(whole), tuple(anywhere)


def first_person(word: str) -> bool:
    """Whether `word` speaks, or looks as if it spoke, in the first person: a word of
    anima/data/first_person.txt (in any look-alike letters and case, with or without a
    trailing . @ -), or one of its starred words anywhere in it."""
    whole, anywhere = _first_person()
    seen = looks(word)
    return seen.rstrip(".@-") in whole or any(w in seen for w in anywhere)


_CJK_CHAR = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _one_script(word: str) -> bool:
    """Whether the letters of `word` are of one script (as Unicode names them: LATIN,
    CYRILLIC, GREEK, CJK...): a Cyrillic а in a Latin name is a look-alike."""
    import unicodedata

    scripts = {unicodedata.name(ch, "?").split()[0] for ch in word if ch.isalpha()}
    return len(scripts) <= 1


def speaker_key(name: str) -> str:
    """How a speaker is known in the bookkeeping: folded, any case."""
    return fold(name, NAME_MAX).casefold()
