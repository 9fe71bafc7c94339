"""Text as anima stores it in Markdown: one kind of line break, no control characters."""

import functools
import json
import re
import unicodedata

# Line breaks other than \n that some readers (str.splitlines) would split on.
_BREAKS = re.compile(r"\r\n|[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
# C0 and C1 controls but the tab and the line breaks: a NUL ends a C string, an ESC (or the
# C1 CSI, U+009B) starts a terminal's escape sequence.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f]")
# What printable shows as U+FFFD: those, the bidi controls that reorder what follows, and the
# tag characters (hidden_tag, below). This and the patterns of flags are compiled where they
# are first used (re's own cache keeps them): a class past the BMP costs ~0.3 ms, which a
# process that prints nothing (a tick, a note added) need not pay at import.
_UNPRINTED = _CONTROL.pattern[:-1] + "\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]"
# In a name nothing breaks a line either: a listing of names is one a line.
_NAME_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def text_lines(text: str) -> str:
    """`text` with every kind of line break made \\n and every other control character dropped
    (a tab stays)."""
    return _CONTROL.sub("", _BREAKS.sub("\n", text))


def data(name: str) -> str:
    """A table of anima/data, read from the package's own directory (importlib.resources
    would find the same file, at 20 ms of imports a process: more than a query's work)."""
    import os

    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", name),
              encoding="utf-8") as f:
        return f.read()


@functools.cache
def _ignorable() -> tuple[tuple[int, int], ...]:
    ranges = json.loads(data("ignorable.json"))
    return tuple((lo, hi) for lo, hi in ranges)


@functools.cache
def _shows_nothing(ch: str) -> bool:
    if unicodedata.category(ch) == "Cf":
        return True
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _ignorable())


def without_format(text: str) -> str:
    """`text` without the characters that show nothing: the format characters (Unicode
    category Cf: zero-width spaces and joiners, bidi controls, the BOM) and every other
    Default_Ignorable_Code_Point (U+034F, the Hangul fillers U+115F U+3164 U+FFA0, the
    variation selectors; anima/data/ignorable.json, made by scripts/tables.py)."""
    return "".join(ch for ch in text if not _shows_nothing(ch))


def visible(text: str) -> str:
    """`text` as it looks: NFKC (full-width and other compatibility forms made plain) without
    the characters that show nothing, so that what hides behind them is seen: a heading after
    a zero-width space, a full-width ＃."""
    return without_format(unicodedata.normalize("NFKC", text))


# What a line may start with and still look as if it started with what follows: blank signs
# that are not whitespace (the braille blank), and combining marks with nothing to sit on.
_BLANK_START = re.compile(r"(?:\s|\u2800|\u3000)*")


def heading_like(line: str) -> bool:
    """Whether `line` looks like a Markdown heading: its visible form starts with '#' once
    whitespace, the braille blank U+2800 and leading combining marks are taken as nothing."""
    shown = visible(line)
    i = 0
    while i < len(shown):
        m = _BLANK_START.match(shown, i)
        i = m.end()
        if i < len(shown) and unicodedata.category(shown[i]).startswith("M"):
            i += 1
            continue
        break
    return shown.startswith("#", i)


# Bidi controls (embeddings, overrides, isolates, marks): they make a text show in an order
# other than the one it is compared in.
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# The tag characters: each shows nothing and stands for an ASCII one, so a text a model reads can
# hide words a person never sees. Their one use is a subdivision's flag (UTS #51: the black flag,
# the region's two letters and one to four letters or digits of its subdivision, a cancel tag:
# 🏴 gbsct 󠁿 is Scotland's), which leaves no room for words.
_FLAG = "\U0001f3f4[\U000e0061-\U000e007a]{2}[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,4}\U000e007f"
_FLAG_OR_TAG = f"({_FLAG})|[\U000e0000-\U000e007f]"
_FLAG_OR_UNPRINTED = f"({_FLAG})|{_UNPRINTED}"


def hidden_tag(text: str) -> int | None:
    """Where the first tag character that is no part of a subdivision's flag is, or None."""
    return next((m.start() for m in re.finditer(_FLAG_OR_TAG, text) if not m[1]), None)


@functools.cache
def _lookalikes() -> dict[str, str]:
    return json.loads(data("lookalikes.json"))


@functools.cache
def _simplified() -> dict[str, str]:
    return json.loads(data("simplified.json"))


def _prototypes(text: str) -> str:
    table = _lookalikes()
    return "".join(table.get(ch, ch) for ch in text)


def _one_script(text: str) -> str:
    table = _simplified()
    return "".join(table.get(ch, ch) for ch in text)


def looks(text: str) -> str:
    """What `text` looks like in any case, to compare by: its visible form with each look-alike
    made the character it looks like (Unicode's confusables, UTS #39: Cyrillic М -> M, Greek
    Ι -> l; one character for one), case folded, made so again (a capital's small letter may look like
    another), l made i (the prototype of capital I is l: folded, I is i), and each traditional
    Chinese character the simplified one it is written as (給 -> 给; OpenCC's table,
    anima/data/simplified.json, made by scripts/tables.py). Two texts that look or read the
    same have the same `looks`; it is for comparing, never to show."""
    return _one_script(_prototypes(_prototypes(visible(text)).casefold()).replace("l", "i"))

def control_at(text: str) -> int | None:
    """Where the first control character that text_lines drops is in `text`, or None."""
    found = _CONTROL.search(text)
    return found.start() if found else None


def plain(text: str, what: str) -> str:
    """`text` with every kind of line break made \\n; DataError when it holds another control
    character (a tab stays). The one check of text that enters the home (`what` it is, for
    the message: "a note"), so that no NUL or escape reaches a file and every system prompt."""
    text = _BREAKS.sub("\n", text)
    where = control_at(text)
    if where is not None:
        from anima.infra.errors import DataError

        raise DataError(f"{what} is plain text; this one holds the control character U+{ord(text[where]):04X} "
                        f"at character {where + 1}")
    return text


def printable(text: str) -> str:
    """`text` as it may be printed: every control character text_lines drops made U+FFFD, so a
    NUL or an escape a person edited into a file reaches no terminal and no prompt, and shows;
    so are the bidi controls that reorder what follows them (embeddings, overrides, isolates),
    so that a person reads the words in the order they are stored ("\u202egnihtemos" shows
    as it is, not as "something"), and the tag characters (but a subdivision's flag's), so
    that no hidden words reach a prompt unseen. The marks (LRM, RLM, ALM) reorder nothing and
    stay, as right-to-left text uses them."""
    if "\U0001f3f4" in text:  # (a subdivision's flag keeps its tag characters: see hidden_tag)
        return re.sub(_FLAG_OR_UNPRINTED, lambda m: m[1] or "\ufffd", text)
    return re.sub(_UNPRINTED, "\ufffd", text)


def name_control_at(name: str) -> int | None:
    """Where the first control character or line break is in the name `name`, or None."""
    found = _NAME_CONTROL.search(name)
    return found.start() if found else None


def undecodable(value: str) -> str | None:
    """`value`, a string from the system (argv, the environment), shown with its undecodable
    bytes as \\xNN when it is not UTF-8 text; None when it is. Python hands such bytes over as
    lone surrogates (surrogateescape), which no UTF-8 file can hold."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate no byte stands for
            return value.encode("utf-8", "backslashreplace").decode("ascii")
    return None
