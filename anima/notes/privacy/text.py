"""A note as the detectors read it: one spelling, every character traced back to the note.

Private data is written in more ways than a pattern can list, so before any detector looks, the
note is rewritten into one spelling:

- NFKC, so full-width digits, letters and punctuation are ASCII (１３８ is 138, ＠ is @, ：is :),
  and every dash (‐ – — −) is "-";
- numbers in words, English and Chinese: four or more digit words in a row are digits
  ("one three eight ..." and "一三八 ..." are 138..., 幺 is 1, 两 2, 〇 and 零 0); a comma, dash
  or 、 between two of them stays as one space (a phone number keeps its groups), spaces go;
- characters spaced out one by one: single letters, digits, "_" or "-" (or the words underscore,
  dash, hyphen) separated by single spaces, six or more (four or more when all are digits), are
  one word ("s k _ l i v e" and "s k underscore l i v e" are sk_live, "7 7 3 1" is 7731).

Detectors match `Text.norm` (and `Text.lower`, the same length); `Text.span(start, end)` is the
stretch of the note a stretch of norm came from, so a finding always quotes the note itself.
A note that is plain ASCII with none of these costs one `isascii` and two substring gates.
"""

import re


class lazy:
    """A pattern compiled on first use. Most notes pass the cheap gate in front of most patterns,
    and compiling them all (30 ms) would be paid by every `note add`."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int = 0):
        self._args = (pattern, flags)
        self._compiled = None

    def __getattr__(self, name):
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return getattr(self._compiled, name)


_PUNCTUATION = str.maketrans(dict.fromkeys("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~，。：；！？、（）“”‘’", " "))

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63"), "-")
# what NFKC does to the full-width forms (１ ＠ ： ，) and the ideographic space, one character for
# one: the common case, done by one str.translate; unicodedata is asked only for what is left
_WIDE = {**{c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}, 0x3000: 0x20, **_DASHES}

_EN_DIGITS = {"zero": "0", "oh": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
              "seven": "7", "eight": "8", "nine": "9"}
_EN_WORD = r"(?:(?:double|triple)\s+)?(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"
_EN_RUN = lazy(rf"(?<![A-Za-z]){_EN_WORD}(?:(?:\s*[,;-]\s*|\s+){_EN_WORD}){{3,}}(?![A-Za-z])", re.I)
_EN_PART = lazy(r"(double|triple)\s+([a-z]+)|([a-z]+)|([,;-])", re.I)

_ZH_DIGITS = {"零": "0", "〇": "0", "○": "0", "一": "1", "幺": "1", "二": "2", "两": "2", "三": "3", "四": "4",
              "五": "5", "六": "6", "七": "7", "八": "8", "九": "9"}
_ZH_SET = frozenset(_ZH_DIGITS)
_ZH_RUN = lazy("[零〇○一幺二两三四五六七八九](?:[ ,、-]?[零〇○一幺二两三四五六七八九]){3,}")

# one character with a space after it, then single characters: "s k _ l i v e", "7 7 3 1"; an @ and
# a dot may be among them (an address typed out, "d a v e @ m a i l . c o m"), never first
_SPELLED = {"underscore": "_", "dash": "-", "hyphen": "-"}
_ONE = r"(?:[A-Za-z0-9_@.-](?![A-Za-z0-9_@-])|(?:underscore|dash|hyphen)(?![A-Za-z]))"
_SPACED = lazy(rf"(?<![A-Za-z0-9_-])(?:[A-Za-z0-9_-](?= {_ONE})|(?:underscore|dash|hyphen)(?= {_ONE}))"
                     rf"(?: {_ONE}){{3,}}", re.I)

# a full stop after a single letter ("b. 1985", "e.g.") ends no sentence
_SENTENCE_END = lazy(r"(?<!\b[A-Za-z])[.!?](?=\s|$)|[。！？；;\n]")


class Text:
    """The note (`note`), its one spelling (`norm`, `lower`) and the map between them."""

    __slots__ = ("note", "norm", "lower", "_starts", "_ends", "_ends_of_sentences", "_words", "_tokens", "_digit")

    def __init__(self, note: str):
        self.note = note
        norm, starts, ends = _fold(note)
        norm, starts, ends = _number_words(norm, starts, ends)
        norm, starts, ends = _spaced_out(norm, starts, ends)
        self.norm, self._starts, self._ends = norm, starts, ends
        lower = norm.lower()
        if len(lower) != len(norm):  # a letter whose lower case is two characters: keep it as it is
            lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in norm)
        self.lower = lower
        self._ends_of_sentences = None
        self._words = self._tokens = self._digit = None

    @property
    def words(self) -> frozenset:
        """The lower-cased words of norm (split at white space and punctuation): the gates."""
        if self._words is None:
            self._words = frozenset(self.lower.translate(_PUNCTUATION).split())
        return self._words

    @property
    def tokens(self) -> list:
        """norm split at white space only (a key, an address, a number keep their punctuation)."""
        if self._tokens is None:
            self._tokens = self.norm.split()
        return self._tokens

    def has_digit(self) -> bool:
        if self._digit is None:
            self._digit = any(d in self.norm for d in "0123456789")
        return self._digit

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Where norm[start:end] came from in the note."""
        if self._starts is None:
            return start, end
        return self._starts[start], self._ends[end - 1]

    def sentence(self, i: int) -> tuple[int, int]:
        """The bounds in norm of the sentence holding norm index i."""
        if self._ends_of_sentences is None:
            self._ends_of_sentences = [m.end() for m in _SENTENCE_END.finditer(self.norm)]
        start = 0
        for end in self._ends_of_sentences:
            if end > i:
                return start, end
            start = end
        return start, len(self.norm)


def _fold(s: str):
    """NFKC and one dash; (text, None, None) while every character still maps to itself."""
    if s.isascii():
        return s, None, None
    import unicodedata

    s = s.translate(_WIDE)
    if unicodedata.is_normalized("NFKC", s):
        return s, None, None
    out, starts, ends = [], [], []
    for i, c in enumerate(s):
        folded = c if c.isascii() else unicodedata.normalize("NFKC", c)
        out.append(folded)
        starts += [i] * len(folded)
        ends += [i + 1] * len(folded)
    return "".join(out), starts, ends


def _rewrite(s: str, starts, ends, edits):
    """s with each (a, b, pieces) of `edits` (in order, not overlapping) put in place of s[a:b];
    a piece is (character, from, to): it came from s[from:to]."""
    if starts is None:
        starts, ends = range(len(s)), range(1, len(s) + 1)
    out, new_starts, new_ends, pos = [], [], [], 0
    for a, b, pieces in edits:
        out.append(s[pos:a])
        new_starts += starts[pos:a]
        new_ends += ends[pos:a]
        for char, src_start, src_end in pieces:
            out.append(char)
            new_starts.append(starts[src_start])
            new_ends.append(ends[src_end - 1])
        pos = b
    out.append(s[pos:])
    new_starts += starts[pos:]
    new_ends += ends[pos:]
    return "".join(out), new_starts, new_ends


def _number_words(s: str, starts, ends):
    edits = []
    if sum(w in _EN_DIGITS for w in s.lower().translate(_PUNCTUATION).split()) >= 4:
        for m in _EN_RUN.finditer(s):
            pieces = _en_pieces(m)
            if pieces:
                edits.append((m.start(), m.end(), pieces))
    if not s.isascii() and sum(c in _ZH_SET for c in s) >= 4:
        for m in _ZH_RUN.finditer(s):
            pieces = []
            for i in range(m.start(), m.end()):
                c = s[i]
                if c in _ZH_DIGITS:
                    pieces.append((_ZH_DIGITS[c], i, i + 1))
                elif c != " ":
                    pieces.append((" ", i, i + 1))
            edits.append((m.start(), m.end(), pieces))
    if not edits:
        return s, starts, ends
    edits.sort()
    return _rewrite(s, starts, ends, edits)


def _en_pieces(m):
    """The digits of one run of English digit words; None if "oh" would begin or end it."""
    pieces, words = [], 0
    for part in _EN_PART.finditer(m.group()):
        a, b = m.start() + part.start(), m.start() + part.end()
        if part.group(4):
            if pieces and pieces[-1][0] != " ":
                pieces.append((" ", a, b))
            continue
        word = (part.group(2) or part.group(3)).lower()
        times = {"double": 2, "triple": 3}.get((part.group(1) or "").lower(), 1)
        pieces += [(_EN_DIGITS[word], a, b)] * times
        words += 1
    digits = [p for p in pieces if p[0] != " "]
    first, last = m.group()[:2].lower(), m.group()[-2:].lower()
    # a lone "oh" at either end is the interjection; "double oh" and "triple oh" are digits
    doubled = re.search(r"(?:double|triple)\s+oh$", m.group(), re.I)
    if words < 4 or first == "oh" or last == "oh" and not doubled:
        return None
    return digits and pieces


def _spaced_out(s: str, starts, ends):
    edits, run = [], 0
    for word in s.split(" "):  # a run of four one-character words (or underscore, dash, hyphen)?
        run = run + 1 if len(word) <= 2 or word.lower().strip(".,;:") in _SPELLED else 0
        if run >= 4:
            break
    if run >= 4:
        for m in _SPACED.finditer(s):
            pieces, pos = [], m.start()
            for part in m.group().split(" "):
                pieces.append((_SPELLED.get(part.lower(), part), pos, pos + len(part)))
                pos += len(part) + 1
            chars = "".join(p[0] for p in pieces)
            if len(chars) >= 6 or (len(chars) >= 4 and chars.isdigit()):
                edits.append((m.start(), m.end(), pieces))
    if not edits:
        return s, starts, ends
    return _rewrite(s, starts, ends, edits)
