"""The one private-data detector: what in a text is the person's private data (Chinese and English).

A self-note and a self block are about her, never about the person she talks to. Both ask this:

- `scan(text, ...)` every piece of private data in text order, as Findings (kind, the note's own
  characters, where they start); [] for an ordinary note;
- `refuse(text, what, why, ...)` raises Refused naming the first one, never repeating it;
- `settings(cfg)` the keyword arguments of both from config.toml (notes.builtin_sensitive_words,
  notes.sensitive_words).

Kinds: email, phone, id_number, passport, bank_card, bank_account, address, birth_date, password
(PINs and codes too), login (account names), api_key, document (licence plates, VINs, student and
medical record numbers), health, finance (a lost job too), trait (sexual orientation, religion),
sensitive_word (a person's own word). The text is first read into one spelling (text.py: NFKC,
numbers in words, characters spaced out); then numbers.py (digit runs, checked by structure and
checksum: GB 11643, Luhn, mod-97, the VIN check digit), tokens.py (keys, passwords, account names,
e-mail), places.py (addresses), dates.py (dates of birth) and words.py (health, money, orientation
and religion, with the context that tells the person's finances from "it costs me patience") each
propose findings; where two claim the same characters the more specific wins (a key over a
password, a password over a phone number, an ID over a card, ...).
Only `re` is imported up front; unicodedata when a text is not ASCII, and numbers.py, places.py
and dates.py when it could hold what they find (a digit, a Chinese character, a birth word): each
module is a tenth of a millisecond of `note add`.
"""

from anima.notes.privacy import text, tokens, words

__all__ = ["FINANCE", "FINANCE_IN_CONTEXT", "FINANCE_WITH_AMOUNT", "HEALTH", "HEALTH_IN_CONTEXT", "KINDS", "TRAIT",
           "TRAIT_IN_CONTEXT", "Finding", "describe", "refuse", "scan", "settings"]

HEALTH, HEALTH_IN_CONTEXT = words.HEALTH, words.HEALTH_IN_CONTEXT
FINANCE, FINANCE_IN_CONTEXT, FINANCE_WITH_AMOUNT = words.FINANCE, words.FINANCE_IN_CONTEXT, words.FINANCE_WITH_AMOUNT
TRAIT, TRAIT_IN_CONTEXT = words.TRAIT, words.TRAIT_IN_CONTEXT

# most specific first: of two findings over the same characters, the one earlier here is kept
KINDS = ("api_key", "password", "email", "bank_account", "login", "id_number", "bank_card", "passport", "document",
         "phone", "birth_date", "address", "health", "finance", "trait", "sensitive_word")
_RANK = {kind: i for i, kind in enumerate(KINDS)}
_BIRTH_HINTS = ("born", "b. ", "birth", "dob", "d.o.b", "turns ", "turn ", "生日", "出生", "生于", "诞辰")

_DESCRIPTIONS = {
    "email": "an e-mail address",
    "phone": "a phone number",
    "id_number": "an identity number",
    "passport": "a passport number",
    "bank_card": "a bank card number (passes the Luhn check)",
    "bank_account": "a bank account number",
    "address": "a street address",
    "birth_date": "a date of birth",
    "password": "a password or PIN",
    "login": "an account name",
    "api_key": "an API key or access token",
    "document": "a document or record number (licence plate, VIN, student or medical record number)",
}
_WORD_DESCRIPTIONS = {"health": "the health word", "finance": "the finance word",
                      "sensitive_word": "the word (notes.sensitive_words)"}


class Finding:
    """One piece of private data: its kind, the matched text and where it starts in the text."""

    __slots__ = ("kind", "match", "start")

    def __init__(self, kind: str, match: str, start: int):
        self.kind = kind
        self.match = match
        self.start = start

    @property
    def end(self) -> int:
        return self.start + len(self.match)

    def __eq__(self, other):
        if not isinstance(other, Finding):
            return NotImplemented
        return (self.kind, self.match, self.start) == (other.kind, other.match, other.start)

    def __hash__(self):
        return hash((self.kind, self.match, self.start))

    def __repr__(self):
        return f"Finding(kind={self.kind!r}, match={self.match!r}, start={self.start})"


_extra_cache: dict = {}


def scan(note: str, sensitive_words=(), builtin_words: bool = True) -> list[Finding]:
    """Every piece of private data in `note`, in text order; [] for an ordinary self-note.

    `builtin_words`: also the built-in health and finance word lists (with their context rules);
    `sensitive_words`: a person's own words, each refused wherever it stands.
    """
    t = text.Text(note)
    found: list[tuple[int, int, str]] = []
    tokens.scan(t, found)
    digits = t.has_digit()
    if digits:
        from anima.notes.privacy import numbers

        numbers.scan(t, found)
    if digits or not t.norm.isascii():
        from anima.notes.privacy import places

        places.scan(t, found)
    if any(h in t.lower for h in _BIRTH_HINTS):
        from anima.notes.privacy import dates

        dates.scan(t, found)
    needles = words.BUILTIN if builtin_words else words.NONE
    if sensitive_words:
        key = (tuple(sensitive_words) if not isinstance(sensitive_words, str) else (sensitive_words,), builtin_words)
        joined = _extra_cache.get(key)
        if joined is None:
            if len(_extra_cache) > 64:
                _extra_cache.clear()
            joined = _extra_cache[key] = needles + words.extra(key[0])
        needles = joined
    if needles:
        words.scan(t, needles, found)
    if len(found) > 1:
        found.sort(key=lambda c: (_RANK[c[2]], c[0], -c[1]))
        kept: list[tuple[int, int, str]] = []
        for c in found:
            if all(c[1] <= k[0] or k[1] <= c[0] for k in kept):
                kept.append(c)
        found = sorted(kept)
    out = []
    for start, end, kind in found:
        a, b = t.span(start, end)
        out.append(Finding(kind, note[a:b], a))
    return out


def settings(cfg) -> dict:
    """scan's keyword arguments as config.toml sets them."""
    return {"builtin_words": bool(cfg["notes.builtin_sensitive_words"]),
            "sensitive_words": tuple(cfg["notes.sensitive_words"])}


def refuse(note: str, what: str, why: str, **kwargs) -> None:
    """Refused ("{what} that holds {the first finding}: {why}") if `note` holds private data."""
    found = scan(note, **kwargs)
    if found:
        from anima.infra.errors import Refused

        raise Refused(f"{what} that holds {describe(found[0])}: {why}")


def _mask(s: str) -> str:
    """All but the last 2 characters hidden (at most 8 stars, so the length is not given away either)."""
    if len(s) <= 2:
        return "*" * len(s)
    return "*" * min(len(s) - 2, 8) + s[-2:]


def describe(f: Finding) -> str:
    """A short English phrase for an error message; it never repeats a secret (a word of the
    health and finance lists, no secret, is named)."""
    if f.kind in _WORD_DESCRIPTIONS:
        return f"{_WORD_DESCRIPTIONS[f.kind]} '{f.match}'"
    if f.kind == "trait":  # the word is the secret ("gay"), and two of its letters half tell it
        return "a sexual orientation or religion"
    return f"{_DESCRIPTIONS.get(f.kind, 'private data')} ({_mask(f.match)})"
