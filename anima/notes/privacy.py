"""Detect the user's private data in a short self-note (Chinese and English).

`anima note add TEXT` lets an agent write a note about itself; a note that carries the *user's*
private data is refused. `scan(text)` returns every finding in text order; `describe(finding)`
gives a short English phrase for the refusal message that never repeats the secret.

Kinds: email, phone, id_number, passport, bank_card, address, password, api_key, sensitive_word.

Everything here is regular expressions plus a few checksums (GB 11643 for resident IDs, Luhn for
bank cards). Only `re` is imported, each pattern is compiled the first time a note needs it, and when several
detectors claim the same characters the more specific one wins (an API key over a password, an
ID number over a bank card, ...), so each piece of text is reported once.
"""

from __future__ import annotations

import re

if False:  # annotations only; never imported at run time, so `import anima.notes.privacy` costs just `re`
    from collections.abc import Iterable

__all__ = ["DEFAULT_SENSITIVE_WORDS", "Finding", "describe", "scan"]

DEFAULT_SENSITIVE_WORDS: tuple[str, ...] = (
    # health (en)
    "diagnosed", "diagnosis", "HIV", "cancer", "tumor", "tumour", "chemotherapy", "depression",
    "antidepressant", "antidepressants", "prescription", "prescriptions", "pregnant", "pregnancy", "miscarriage",
    "surgery", "therapy session", "blood pressure", "insulin", "diabetes",
    # finance (en)
    "salary", "income", "debt", "debts", "loan", "loans", "mortgage", "credit score", "bank balance",
    "net worth", "bankruptcy", "bankrupt",
    # health (zh)
    "确诊", "诊断", "癌症", "化疗", "抑郁症", "抗抑郁", "处方", "怀孕", "流产", "手术", "血压", "胰岛素", "糖尿病",
    # finance (zh)
    "工资", "月薪", "年薪", "收入", "负债", "欠款", "贷款", "房贷", "信用分", "存款", "余额", "破产",
)


class Finding:
    """One piece of private data: its kind, the matched text and where it starts in the note."""

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


# --------------------------------------------------------------------------------------------------
# Patterns. Digit runs are fenced with explicit look-arounds instead of \b, because in a str pattern
# \b treats Chinese characters as word characters ("手机13812345678" has no \b before the 1).
# --------------------------------------------------------------------------------------------------

class _lazy:
    """A pattern compiled on first use. Most notes pass the cheap gates in front of most
    patterns, so compiling them all at import (~10 ms, on every `note add`) is mostly waste."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int = 0):
        self._args = (pattern, flags)
        self._compiled = None

    def __getattr__(self, name):
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return getattr(self._compiled, name)


_A = re.ASCII
_AI = re.ASCII | re.IGNORECASE

_EMAIL = _lazy(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
               r"(?![A-Za-z0-9-])")

# Chinese mobile: optional +86 / 0086 / 86, then 1[3-9]x xxxx xxxx with optional spaces or dashes.
_CN_MOBILE = _lazy(r"(?<![0-9A-Za-z+])(?:(?:\+|00)?86[ -]?)?1[3-9][0-9](?:[ -]?[0-9]{4}){2}(?![0-9])")
# Chinese landline: area code 0xx / 0xxx then a 7-8 digit local number (a separator or (0xx) is required).
_CN_LANDLINE = _lazy(r"(?<![0-9A-Za-z])(?:\(0[1-9][0-9]{1,2}\)[ -]?|0[1-9][0-9]{1,2}[ -])[1-9][0-9]{6,7}(?![0-9])")
# International: +CC then 6-14 digits, spaces / dashes / a parenthesised group allowed between them.
_INTL_PHONE = _lazy(r"(?<![0-9A-Za-z+])\+[1-9][0-9]{0,2}(?:[ -]?(?:\([0-9]{1,5}\)|[0-9])){6,16}(?![0-9])")
# North-American style without the country code: (415) 555-0132, 415-555-0132, 415.555.0132.
_NANP_PHONE = _lazy(r"(?<![0-9A-Za-z.\-])(?:\([2-9][0-9]{2}\) ?[2-9][0-9]{2}[ -]|[2-9][0-9]{2}([ .-])[2-9][0-9]{2}\1)"
                         r"[0-9]{4}(?![0-9]|[.-][0-9])")
# Any number right after a phone keyword: "phone: 020 7946 0958", "电话 8888 6666".
_PHONE_CONTEXT = _lazy(
    r"(?:(?<![A-Za-z])(?:phone|telephone|tel|mobile|cell|whatsapp)(?:\s*(?:number|no\.?|#))?"
    r"|(?:电话|手机|座机|联系方式)(?:号码|号)?)"
    r"\s*(?:[:：]|is|是|为)?\s*(\+?[0-9][0-9 ()\-]{5,20}[0-9])(?![0-9])", _AI)

_ID_NUMBER = _lazy(r"(?<![0-9A-Za-z+])[1-9][0-9]{16}[0-9Xx](?![0-9A-Za-z])")
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

# 13-19 digits, run together or in groups of 4 (4-6-5 for Amex); a card starts with 2-6, 8 or 9
# (no issuer uses 0, 1 or 7 for a payment card), which keeps millisecond timestamps out.
_BANK_CARD = _lazy(
    r"(?<![0-9A-Za-z+])(?=[2-689])(?:[0-9]{13,19}|[0-9]{4}(?:[ -][0-9]{4}){2,3}(?:[ -][0-9]{1,3})?"
    r"|[0-9]{4}[ -][0-9]{6}[ -][0-9]{4,5})(?![0-9A-Za-z])")

_CN_PASSPORT = _lazy(r"(?<![0-9A-Za-z])(?:[EGDSP][0-9]{8}|E[A-Z][0-9]{7})(?![0-9A-Za-z])")
_PASSPORT_CONTEXT = _lazy(
    r"(?:(?<![A-Za-z])passport|护照)\s*(?:number|num|no\.?|#|号码|号)?\s*(?:[:：]|is|是|为)?\s*"
    r"((?=[A-Za-z]*[0-9])[A-Za-z0-9]{6,9})(?![A-Za-z0-9])", _AI)

_EN_STREET_SUFFIX = (r"Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|Ter"
                     r"|Square|Sq|Highway|Hwy|Parkway|Pkwy|Circle|Cir|Crescent|Alley|Plaza")
# A house number, 1-4 capitalised words (or ordinals: 5th), a capitalised street suffix, then an
# optional direction ("NW"); an "Apt 5, " / "Suite 200, " in front is taken along.
_EN_ADDRESS = _lazy(
    r"(?:\b(?:Apt|Apartment|Suite|Ste|Unit|Flat)\.?\s*#?[0-9A-Za-z-]+,?\s+)?"
    r"(?<![\w.,-])[0-9]{1,6}[A-Za-z]?(?:-[0-9]+)?,?\s+"
    r"(?:(?!(?:In|The|To|Of|And|For|With|A|An|On|At|By|From|My|Your|Our|Its|His|Her|Their|Is|Are|Was|I)\s)"
    r"(?:[A-Z][A-Za-z'.-]*|[0-9]+(?:st|nd|rd|th))\s+){1,4}"
    rf"(?:{_EN_STREET_SUFFIX})\b\.?(?:\s+(?:NW|NE|SW|SE|N|S|E|W)\b\.?)?", _A)

# Chinese: a road / street / lane / compound word, a number and a unit (号 弄 栋 单元 室 楼 ...), then
# more number + unit pairs ("3号楼", "2单元501室"). The place name before the road word is added
# by walking left in _cn_addresses.
_CN_UNIT = r"(?:号楼|号院|单元|号|弄|栋|幢|室|楼|层|座)"
_CN_ADDRESS = _lazy(
    r"(街道|大道|大街|胡同|小区|花园|家园|园区|公寓|新村|大厦|广场|路|街|巷|村|苑|园) ?[0-9０-９]{1,5} ?" + _CN_UNIT
    + r"(?: ?[0-9０-９一二三四五六七八九十A-Za-z]{1,4}" + _CN_UNIT + r")*")
# 线路 思路 电路 ... 上街 逛街 ... 农村: words that end in a road word but are not a place.
_CN_NOT_ROAD = {"路": "线思电道网回通链一套短迷退出进销门", "街": "上逛", "村": "农"}
# Where the walk left stops: punctuation, and characters that introduce an address rather than name one.
_CN_LEAD_STOP = set("在是为于住到的了把被给向将让对请说写记叫过我你他她们从往址：:，,。；;、 ")
_CN_NAME_MAX = 14

_PASSWORD_EN = _lazy(
    r"(?<![A-Za-z])(?:password|passwd|passcode|passphrase|pass word|pwd|pin(?: code| number)?)s?"
    r"(?:\s+(?:for|to|of|on)\s+[\w .@'-]{1,30}?)?"
    r"\s*(?P<sep>[:：=]|\bis\b|\bwas\b|是|为)\s*(?P<val>[!-~]+)", _AI)
_PASSWORD_ZH = _lazy(r"(?:密码|密碼|口令)\s*(?:是|为|為|：|:|=)\s*(?P<val>[!-~]{3,})")
_PASSWORD_NOT_VALUES = frozenset((  # noqa: SIM905
    "wrong correct incorrect invalid valid required needed missing expired weak strong empty blank set reset changed "
    "hidden secret private sensitive case-sensitive unknown encrypted hashed stored protected optional mandatory too "
    "not never still the a an now saved ok fine same different long short good bad safe unsafe compromised leaked "
    "redacted masked none null undefined unset ever also only already there here it this that rotated updated "
    "visible shared correctly").split())
_TRAILING_PUNCT = ".,;:!?)]}>'\"`"
_CLAUSE_END = _lazy(r"\s*(?:$|[.,;:!?)\]\n，。；：！？、）]|[^\x00-\x7f])")

_API_KEYS = _lazy(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
    r"|(?<![A-Za-z0-9])sk-(?:proj-|ant-|live-|test-|svcacct-)?[A-Za-z0-9_-]{20,}"
    r"|(?<![A-Za-z0-9])(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}"
    r"|(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{20,}"
    r"|(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"
    r"|(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}"
    r"|(?<![A-Za-z0-9])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", _A)
_BEARER = _lazy(r"\bBearer\s+([A-Za-z0-9._~+/-]{16,}=*)", _AI)
_API_ASSIGN = _lazy(
    r"(?:(?<![A-Za-z0-9])(?:api[_ -]?key|apikey|access[_ -]?key|secret[_ -]?key|private[_ -]?key|client[_ -]?secret"
    r"|access[_ -]?token|auth[_ -]?token|refresh[_ -]?token|api[_ -]?token|token|secret)"
    r"|密钥|秘钥|令牌)"
    r"[\"']?\s*(?:[:=：]|\bis\b|是|为)\s*[\"']?([A-Za-z0-9_./+=-]{16,})", _AI)

# Sensitive words in an everyday engineering sense: "technical debt", "diagnosed the bug", "诊断问题",
# "收入笔记" (filed into my notes). A word inside one of these is not reported; only function words
# may sit between the parts, so "diagnosed with depression after tests" still reports both words.
_BENIGN_WORD_USES = _lazy(
    r"\b(?:technical|tech|design|documentation|test)\s+debts?\b"
    r"|\bdiagnos(?:e|ed|es|ing|is)\s+(?:of\s+)?(?:(?:the|a|an|this|that|these|those|my|its|their|our|your|one|two"
    r"|another|same|flaky|failing|broken|slow|intermittent|root)\s+){0,3}"
    r"(?:bugs?|errors?|issues?|problems?|failures?|crash(?:es)?|tests?|builds?|code|regressions?|root cause|logs?)\b"
    r"|诊断(?:出|了|一下|下|这个|那个|这些|了一下)*(?:问题|错误|故障|bug|代码|日志|原因|报错|失败|工具|性能)"
    r"|(?:问题|错误|故障|bug|代码|日志|报错|性能)诊断"
    r"|收入(?:到)?(?:笔记|囊中|记忆|清单|列表|文档|索引)", _AI)

_HAS_DIGIT = _lazy(r"[0-9]")


# Word lists are matched by a plain substring search for each word's first token in the lower-cased
# note (C speed), and only a word that is present gets its own small regex (compiled once, on first
# need) to check word boundaries and the whitespace of multi-word phrases. One big case-insensitive
# alternation over the whole list costs ~10 ms to compile and ~0.2 ms per note.
_word_regexes: dict[str, re.Pattern] = {}


def _word_regex(word: str) -> re.Pattern:
    pattern = _word_regexes.get(word)
    if pattern is None:
        body = r"\s+".join(re.escape(piece) for piece in word.split())
        head = r"(?<![A-Za-z0-9])" if word[0].isascii() and word[0].isalnum() else ""
        tail = r"(?![A-Za-z0-9])" if word[-1].isascii() and word[-1].isalnum() else ""
        if len(_word_regexes) >= 1024:
            _word_regexes.clear()
        pattern = _word_regexes[word] = re.compile(head + body + tail, re.IGNORECASE)
    return pattern


def _word_needles(words) -> tuple[tuple[str, str], ...]:
    """(first token lower-cased, word) for each distinct non-blank word."""
    if isinstance(words, str):
        words = (words,)
    seen, out = set(), []
    for word in words:
        word = word.strip() if isinstance(word, str) else ""
        if word and word.lower() not in seen:
            seen.add(word.lower())
            out.append((word.split()[0].lower(), word))
    return tuple(out)


_DEFAULT_NEEDLES = _word_needles(DEFAULT_SENSITIVE_WORDS)


# --------------------------------------------------------------------------------------------------
# Validators
# --------------------------------------------------------------------------------------------------

def _digits(s: str) -> str:
    return "".join(c for c in s if c.isdigit())


def _valid_id(number: str) -> bool:
    """GB 11643: weighted checksum of the first 17 digits, plus a real birth date YYYYMMDD."""
    total = sum(int(number[i]) * _ID_WEIGHTS[i] for i in range(17))
    if _ID_CHECK[total % 11] != number[17].upper():
        return False
    year, month, day = int(number[6:10]), int(number[10:12]), int(number[12:14])
    if not (1900 <= year <= 2100 and 1 <= month <= 12 and 1 <= day <= _MONTH_DAYS[month - 1]):
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return not (month == 2 and day == 29 and not leap)


def _luhn(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = ord(c) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _secretish(value: str) -> bool:
    """A digit, a symbol, or inner capitals: not an ordinary English word."""
    if any(c.isdigit() for c in value):
        return True
    if any(not (c.isalpha() or c in "-'") for c in value):
        return True
    return any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)


def _placeholder(value: str) -> bool:
    return not value.strip("*•xX#._-<>") or value.lower().strip("<>[]()") in ("redacted", "hidden", "masked")


# --------------------------------------------------------------------------------------------------
# Detectors. Each yields (start, end, kind); lower rank wins an overlap.
# --------------------------------------------------------------------------------------------------

_RANK = {"api_key": 0, "email": 1, "password": 2, "id_number": 3, "bank_card": 4, "passport": 5, "phone": 6,
         "address": 7, "sensitive_word": 8}


# Cheap substring gates (on the lower-cased note) in front of the costlier patterns.
_API_KEY_HINTS = ("-----begin", "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "akia", "asia", "xox",
                  "aiza", "eyj")
_API_ASSIGN_HINTS = ("key", "token", "secret", "密钥", "秘钥", "令牌")
_PASSWORD_HINTS = ("pass", "pwd", "pin")
_PHONE_HINTS = ("phone", "tel", "mobile", "cell", "whatsapp", "电话", "手机", "座机", "联系方式")


def _hint(lower, hints) -> bool:
    return any(h in lower for h in hints)


def _api_keys(text, lower, out):
    if _hint(lower, _API_KEY_HINTS):
        for m in _API_KEYS.finditer(text):
            out.append((m.start(), m.end(), "api_key"))
    if "bearer" in lower:
        for m in _BEARER.finditer(text):
            if any(c.isdigit() for c in m.group(1)):
                out.append((m.start(), m.end(), "api_key"))
    if not _hint(lower, _API_ASSIGN_HINTS):
        return
    for m in _API_ASSIGN.finditer(text):
        value = m.group(1)
        if any(c.isdigit() for c in value) or (any(c.isupper() for c in value) and any(c.islower() for c in value)):
            out.append((m.start(), m.end(), "api_key"))


def _passwords(text, lower, out):
    for m in (_PASSWORD_EN.finditer(text) if _hint(lower, _PASSWORD_HINTS) else ()):
        raw = m.group("val")
        kept = raw.rstrip(_TRAILING_PUNCT)
        if len(kept) < 3:
            kept = raw
        if kept[:1] in "\"'`" and kept[0] in raw[1:]:
            kept = raw[:raw.index(kept[0], 1) + 1]  # keep the closing quote
        quoted = kept[:1] in "\"'`" and len(kept) > 2
        value = kept.strip("\"'`")
        if len(value) < 3 or _placeholder(value):
            continue
        end = m.start("val") + len(kept)
        # A plain word after "password is" / "password:" is a leak only when quoted or closing the
        # clause ("the password is swordfish."), and not an everyday word ("the password is wrong").
        plain = m.group("sep") != "=" and not _secretish(value)
        if plain and (value.lower() in _PASSWORD_NOT_VALUES
                      or not (quoted or len(value) >= 4 and _CLAUSE_END.match(text, end))):
            continue
        out.append((m.start(), end, "password"))
    for m in (_PASSWORD_ZH.finditer(text) if "密" in text or "口令" in text else ()):
        raw = m.group("val")
        value = raw.rstrip(_TRAILING_PUNCT) or raw
        if len(value) < 3 or _placeholder(value) or value.lower() in _PASSWORD_NOT_VALUES:
            continue
        out.append((m.start(), m.start("val") + len(value), "password"))


def _emails(text, out):
    for m in _EMAIL.finditer(text):
        out.append((m.start(), m.end(), "email"))


def _numbers(text, lower, out):
    for m in _ID_NUMBER.finditer(text):
        if _valid_id(m.group()):
            out.append((m.start(), m.end(), "id_number"))
    for m in _BANK_CARD.finditer(text):
        digits = _digits(m.group())
        if 13 <= len(digits) <= 19 and _luhn(digits):
            out.append((m.start(), m.end(), "bank_card"))
    for m in _CN_PASSPORT.finditer(text):
        out.append((m.start(), m.end(), "passport"))
    if "passport" in lower or "护照" in text:
        for m in _PASSPORT_CONTEXT.finditer(text):
            out.append((m.start(), m.end(), "passport"))
    for m in _CN_MOBILE.finditer(text):
        out.append((m.start(), m.end(), "phone"))
    for m in _CN_LANDLINE.finditer(text):
        out.append((m.start(), m.end(), "phone"))
    for m in _INTL_PHONE.finditer(text):
        if 7 <= len(_digits(m.group())) <= 17:
            out.append((m.start(), m.end(), "phone"))
    for m in _NANP_PHONE.finditer(text):
        out.append((m.start(), m.end(), "phone"))
    for m in (_PHONE_CONTEXT.finditer(text) if _hint(lower, _PHONE_HINTS) else ()):
        if 7 <= len(_digits(m.group(1))) <= 15:
            out.append((m.start(1), m.end(1), "phone"))
    for m in _EN_ADDRESS.finditer(text):
        out.append((m.start(), m.end(), "address"))
    _cn_addresses(text, out)


def _cn_addresses(text, out):
    for m in _CN_ADDRESS.finditer(text):
        road, start = m.group(1), m.start()
        if start == 0 or text[start - 1] in _CN_NOT_ROAD.get(road, ""):
            continue
        i = start
        while i > 0 and start - i < _CN_NAME_MAX:
            c = text[i - 1]
            if c in _CN_LEAD_STOP or not ("\u4e00" <= c <= "\u9fff" or c.isascii() and c.isalpha()):
                break
            i -= 1
        if i < start:
            out.append((i, m.end(), "address"))


def _sensitive_words(text, lower, words, out):
    needles = _DEFAULT_NEEDLES if words is DEFAULT_SENSITIVE_WORDS else _word_needles(words)
    benign = None
    for needle, word in needles:
        if needle not in lower:
            continue
        for m in _word_regex(word).finditer(text):
            if benign is None:
                benign = [b.span() for b in _BENIGN_WORD_USES.finditer(text)]
            if any(bs <= m.start() and m.end() <= be for bs, be in benign):
                continue
            out.append((m.start(), m.end(), "sensitive_word"))


def scan(text: str, sensitive_words: Iterable[str] = DEFAULT_SENSITIVE_WORDS) -> list[Finding]:
    """Every piece of private data in `text`, in text order; [] for an ordinary self-note.

    `sensitive_words` replaces (does not extend) the default health / finance word list; pass
    `DEFAULT_SENSITIVE_WORDS + (...)` to extend it, or () to switch word matching off.
    """
    candidates: list[tuple[int, int, str]] = []
    lower = text.lower()
    _api_keys(text, lower, candidates)
    _passwords(text, lower, candidates)
    if "@" in text:
        _emails(text, candidates)
    if _HAS_DIGIT.search(text):
        _numbers(text, lower, candidates)
    _sensitive_words(text, lower, sensitive_words, candidates)

    if len(candidates) > 1:
        candidates.sort(key=lambda c: (_RANK[c[2]], c[0], -c[1]))
        kept: list[tuple[int, int, str]] = []
        for c in candidates:
            if all(c[1] <= k[0] or k[1] <= c[0] for k in kept):
                kept.append(c)
        candidates = sorted(kept)
    return [Finding(kind, text[start:end], start) for start, end, kind in candidates]


_DESCRIPTIONS = {
    "email": "an e-mail address",
    "phone": "a phone number",
    "id_number": "a Chinese resident ID number",
    "passport": "a passport number",
    "bank_card": "a bank card number (passes the Luhn check)",
    "address": "a street address",
    "password": "a password",
    "api_key": "an API key or access token",
}


def _mask(s: str) -> str:
    """All but the last 2 characters hidden (at most 8 stars, so the length is not given away either)."""
    if len(s) <= 2:
        return "*" * len(s)
    return "*" * min(len(s) - 2, 8) + s[-2:]


def describe(f: Finding) -> str:
    """A short English phrase for an error message; it never repeats a secret."""
    if f.kind == "sensitive_word":
        return f"the health or finance word '{f.match}'"
    return f"{_DESCRIPTIONS.get(f.kind, 'private data')} ({_mask(f.match)})"
