"""Private numbers: phone, resident ID, SSN, bank card, IBAN, bank account, passport, ID documents.

One pass finds every run of digits in the note's one spelling (text.py): digit groups joined by a
space, a dash, a dot or a slash, a group perhaps in parentheses, a "+" in front, an X at the end.
Each run is then judged by what it is made of, in this order:

- not private: a date (its first groups a real year-month-day in any order people write one),
  an IPv4 address, a quantity (a unit follows: bytes, tokens, ms, rows, 字节, 个, ...), an issue
  number (# in front), a round number (six or more trailing zeros);
- a resident ID: 18 characters whose GB 11643 check digit and birth date are valid;
- a bank card: 13 to 19 digits in an issuer's range (4 Visa, 51-55 and 2221-2720 Mastercard, 34/37
  Amex, 62 UnionPay, 35 JCB, 6011 Discover, ...) that pass the Luhn check, run together
  or grouped as cards are printed (fours, or 4-6-5 / 4-6-4);
- a US social security number: 3-2-4 digits with dashes (spaces or none: after "SSN"), whose
  area is not 000, 666 or 9xx and whose group and serial are not zeros;
- a phone number: "+" or "00" and a country code and 7 to 14 more digits; a Chinese mobile
  (11 digits in an allocated 1xx range, optionally after 86); a North American number (3-3-4,
  area and exchange not starting with 0 or 1); a national number with its trunk 0 (9 to 12
  digits in groups); 7 to 15 digits after a phone word ("phone", "call", 电话, 手机, 号码, ...);
  7 or more digits dictated as words;
- a bank account: 6 or more digits after an account word (account number, routing, sort code,
  银行账号, 对公账户, 卡号, ...);
- none of the last three when the words just before it name a thing of the machine's (job id,
  trace id, build, 任务编号, ...), and no phone number when a plural noun follows it (a count:
  13912345678 iterations) or a document's word comes before it (an NHS number), unless a phone
  word does.

Letters and digits: an IBAN (country, check digits, 11 to 30 more, grouped by spaces or dashes;
mod-97 = 1; in lower case after the word IBAN); a Chinese licence plate (京A12345); a vehicle
identification number whose check digit is right, or after VIN; the Chinese
passport and travel-permit formats (E, G, D, S, P or C and 8 digits; E, a letter and 7 digits);
and any letters-and-digits value after a passport or ID-document word (passport, 护照, 通行证;
driver's licence, ID card, national insurance, tax ID, Aadhaar, 身份证, 驾驶证, 社保, ...), or a
record's word (student ID, medical record number, MRN, licence plate, car reg, 学号, 病历号, 车牌,
...: the kind "document").
"""

import re

from anima.notes.privacy.text import lazy

# groups joined by one separator; a separator may only be left out next to a parenthesis
_RUN = lazy(
    r"(?<![A-Za-z0-9_.\-/])(?:\+ ?)?(?:\(\d{1,5}\)|\d+)"
    r"(?:(?: ?[-./] ?| |(?<=\))|(?=\())(?:\(\d{1,5}\)|\d+))*(?:[Xx](?![A-Za-z0-9_]))?(?![A-Za-z0-9_])")
_GROUP = lazy(r"\d+")
_NOT_SEPARATOR = lazy(r"[\d()+Xx]")

_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
# the issuer ranges of payment cards (Mir, Mastercard 2-series, Amex, JCB, Diners, Visa, Mastercard,
# Maestro, Discover, UnionPay, RuPay, Chinese domestic 9xxx): a timestamp or an order number that
# starts with a date (2026...) is none of them
_CARD_IIN = lazy(r"2(?:20[0-4]|2[2-9]|[3-6]|7[01]|720)|3[0-9]|4|5[0-9]|6|8[12]|9")
# the number ranges allocated to Chinese mobile networks (MIIT), as 11-digit numbers
_CN_MOBILE = lazy(r"1(?:3\d|4[5-9]|5[0-35-9]|6[2567]|7[0-8]|8\d|9[0-35-9])\d{8}")

_UNIT = lazy(
    r"\s*(?:%|(?:bytes?|[kmgt]i?b|b|bits?|tokens?|ms|us|ns|s|secs?|seconds?|mins?|minutes?|hours?|h|days?|weeks?"
    r"|months?|years?|rows?|lines?|chars?|characters?|words?|files?|items?|records?|entries|notes?|requests?"
    r"|queries|calls|times|runs|steps|tests?|px|pixels?|points?|x|fps|hz|khz|mhz|ghz|rpm|ops|qps|users|people"
    r"|messages|events|commits|cores|threads)(?![A-Za-z])"
    r"|(?:字节|字|个|条|行|次|毫秒|秒|分钟|小时|天|周|篇|份|项|人|倍|页|张|行|兆|字符|毫|微秒|纳秒|令牌|万|亿))", re.I)

_PHONE_WORDS = lazy(
    r"(?:\b(?:phone|telephone|tel|mobile|cell|cellphone|landline|whatsapp|fax|hotline|call(?:ed|ing)?|ring|text"
    r"|reach(?:ed)?|dial(?:led)?|contact)\b|(?:their|his|her|your|user's|users')\s+(?:number|no\.?)"
    r"|电话|手机|座机|号码|联系|致电|拨打|打给|热线|微信)", re.I)
_SSN_WORDS = lazy(r"\b(?:ssn|social security(?: number| no\.?)?)\b", re.I)
_ACCOUNT_WORDS = lazy(
    r"(?:\b(?:bank )?account(?! ?(?:id|name))(?: number| no\.?| #)?|\bacct\b|\brouting(?: number| no\.?)?"
    r"|\bsort code|\baba\b|\bswift|\bbic\b|账号|帐号|账户|帐户|卡号|银行)", re.I)
# a word just before a number that says it names a thing of the machine's (a job, a trace, an
# issue), not a person: "job id 13912345678", "任务编号是13912345678"
_IDENTIFIER = lazy(
    r"(?:\b(?:job|task|build|run|trace|request|session|process|pid|thread|issue|ticket|bug|commit|pull request|pr"
    r"|order|invoice|batch|event|message|transaction|correlation|span|test|item|row|object|page|version"
    r"|release|revision|error|exit|status|port|seed|step|iteration|epoch|frame|offset|block|sequence|snapshot"
    r"|artifact|pipeline|workflow|container|image|node|shard|partition|chunk|packet|query|incident|alert|tracking"
    r"|experiment|benchmark|fixture|sample|tx|txn|trade|shipment|parcel)s?"
    r"(?:\s*(?:ids?|numbers?|nos?\.?|#|codes?|hash|key))?|(?:任务|工单|订单|作业|构建|进程|线程|批次|事件|日志|消息"
    r"|请求|会话|版本|测试|用例|快递|运单|实验|样本)(?:编号|号码|号|id|序号)?)"
    r"\s*(?:[:=#：]|\bis\b|\bwas\b|是|为)?\s*$", re.I)
# a plural noun right after a number makes it a count ("13912345678 iterations"), unless the word
# is a verb or a word that merely ends in s
_COUNTED = lazy(r"\s+(?:more\s+|new\s+|such\s+)?(?P<noun>[a-z]{2,}s)(?![A-Za-z'’])")
_NOT_PLURAL = frozenset((  # noqa: SIM905
    "is was has his hers its yes this thus plus always sometimes perhaps afterwards towards unless belongs goes "
    "means stays appears seems looks needs says works rings reaches gets does makes takes comes shows remains "
    "matches as us ours yours theirs whereas besides").split())
_DICTATED_MIN = 7
_SENTENCE_BEFORE = lazy(r".*(?:[;!?。；！？\n]|\.\s)", re.S)

_IBAN = lazy(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]){11,30}(?![A-Za-z0-9])")
_CN_PASSPORT = lazy(r"(?<![A-Za-z0-9])(?:[EGDSPC] ?\d{4} ?\d{4}|E[A-Z] ?\d{3} ?\d{4})(?![A-Za-z0-9])")

# an identity document named, then (a few words on, on the same clause) its number
_DOCUMENTS = lazy(
    r"(?P<passport>(?<![A-Za-z])passports?|护照|通行证|travel permit)"
    r"|(?P<id>driv(?:er'?s?|ing) licen[cs]e|licen[cs]e (?:number|no\.?)|(?:national |identity |id )card"
    r"|national id|identity (?:number|document)|id (?:number|no\.?)|(?:user's|their|his|her) id\b"
    r"|social security(?: number| no\.?)?|\bssn\b|national insurance(?: number| no\.?)?|\bni (?:number|no\.?)"
    r"|\bnhs (?:number|no\.?)"
    r"|\bnino\b|tax (?:id|number|code)|\btin\b|\bein\b|aadhaa?r|\bnric\b|\bpan card"
    r"|身份证|驾驶证|驾照|社保|医保卡|居住证|户口|工号|军官证)"
    r"|(?P<doc>student (?:id|number|no\.?|card)|matriculation number|medical record(?: number| no\.?)?|\bmrn\b"
    r"|patient (?:id|number|no\.?)|hospital number|(?:licen[cs]e|number|registration) plates?|\bplates?\b"
    r"|\breg(?:istration)? (?:number|no\.?)|car registration|car reg\b|\bvin\b|chassis number|学号|学生证|病历号|病案号"
    r"|住院号|就诊卡号|门诊号|车牌|车架号)", re.I)
_DOCUMENT_HINTS = ("passport", "nhs", "student", "matriculation", "medical record", "mrn", "patient", "hospital",
                   "plate", "reg", "vin", "chassis", "学生证", "病历", "病案", "住院号", "就诊卡", "门诊号", "车牌",
                   "车架号", "护照", "通行证", "permit", "licen", "card", "identity", "national", " id", "ssn",
                   "social security", "insurance", "ni ", "nino", "tax ", "tin", "ein", "aadha", "nric", "身份证",
                   "驾驶证", "驾照", "社保", "医保", "居住证", "户口", "工号", "学号", "军官证")
_DOC_NO = lazy(r"\s*(?:numbers?|num\.?|no\.?|nr\.?|#)(?![A-Za-z])", re.I)
_DOC_FILLER = lazy(r"(?:[^0-9.!?。！？;\n]|(?<=[Nn]o)\.){0,24}?(?=[A-Z0-9])")
# chunks of capitals and digits; a chunk of letters only is at most two of them (QQ 12 34 56 C)
_DOC_VALUE = lazy(r"(?:(?:[A-Z]{1,2}|[A-Z]*[0-9][A-Z0-9]*)(?:[ -](?=[A-Z0-9]))?){1,8}")


# a Chinese plate: the province's character, the city's letter, five or six letters and digits
_CN_PLATE = lazy(r"[京津沪渝冀豫云辽黑湘皖鲁新苏浙赣鄂桂甘晋蒙陕吉闽贵粤青藏川宁琼][A-Z] ?[·•・.]? ?[A-HJ-NP-Z0-9]{5,6}"
                 r"(?![A-Za-z0-9])")
_PLATE_PROVINCES = frozenset("京津沪渝冀豫云辽黑湘皖鲁新苏浙赣鄂桂甘晋蒙陕吉闽贵粤青藏川宁琼")
# a vehicle identification number: 17 of its letters (no I, O, Q) and digits, checked by its ninth
_VIN = lazy(r"(?<![A-Za-z0-9])[A-HJ-NPR-Z0-9]{17}(?![A-Za-z0-9])")
_VIN_VALUES = {**{str(d): d for d in range(10)}, **dict(zip("ABCDEFGH", range(1, 9), strict=True)),
               **dict(zip("JKLMN", range(1, 6), strict=True)), "P": 7, "R": 9,
               **dict(zip("STUVWXYZ", range(2, 10), strict=True))}
_VIN_WEIGHTS = (8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2)


def scan(t, out: list) -> None:
    text, lower = t.norm, t.lower
    if not text.isascii() and not _PLATE_PROVINCES.isdisjoint(text):
        for m in _CN_PLATE.finditer(text):
            if sum(c.isdigit() for c in m.group()) >= 2:
                out.append((m.start(), m.end(), "document"))
    if t.has_digit():
        for m in _RUN.finditer(text):
            kind = _judge(t, m)
            if kind:
                out.append((m.start(), m.end(), kind))
        if any(h in lower for h in _DOCUMENT_HINTS):
            _documents(text, lower, out)  # after the runs: a number judged on its own is reported so
        # an IBAN is printed in capitals; written in lower case it is one only where it is named
        upper = text.upper() if "iban" in lower and len(text.upper()) == len(text) else text
        if any(c.isupper() for c in upper):
            for m in _IBAN.finditer(upper):
                end = _iban_end(m.group())
                if end:
                    out.append((m.start(), m.start() + end, "bank_account"))
            for m in _CN_PASSPORT.finditer(text):
                out.append((m.start(), m.end(), "passport"))
            for m in (_VIN.finditer(text) if any(len(w) >= 17 for w in t.tokens) else ()):
                if _valid_vin(m.group()) or "vin" in lower or "车架号" in text or "chassis" in lower:
                    out.append((m.start(), m.end(), "document"))


def _judge(t, m) -> str | None:
    text, run = t.norm, m.group()
    groups = _GROUP.findall(run)
    digits = "".join(groups) + ("X" if run[-1] in "Xx" else "")
    n = len(digits)
    if n < 6:
        return None
    start, end = m.start(), m.end()
    seps = set(_NOT_SEPARATOR.sub("", run)) or {""}
    sizes = [len(g) for g in groups]
    before = _clause_before(t.lower[max(0, start - 40):start])
    if before.rstrip().endswith("#") or _not_private(digits, groups, seps, text, end):
        return None
    if n == 18 and _valid_id(digits):
        return "id_number"
    if not digits.isdigit():
        return None
    kind = _kind(t, run, digits, sizes, seps, before, start, end)
    # (the words before a number are read last: most runs are no candidate at all)
    return None if kind and _IDENTIFIER.search(before) else kind


def _kind(t, run: str, digits: str, sizes: list[int], seps: set, before: str, start: int, end: int) -> str | None:
    n, text = len(digits), t.norm
    if 13 <= n <= 19 and _CARD_IIN.match(digits) and _card_groups(sizes, seps) and _luhn(digits):
        return "bank_card"
    if n == 9 and _valid_ssn(digits):
        if sizes == [3, 2, 4] and seps == {"-"} or _SSN_WORDS.search(before):
            return "id_number"
    if _phone(run, digits, sizes, seps, before) or (n >= _DICTATED_MIN and _dictated(t, start, end)):
        if _PHONE_WORDS.search(before):
            return "phone"
        if _counted(text, end) or _DOCUMENTS.search(before):
            return None  # 13912345678 iterations; an NHS number or a student number, which _documents names
        return "phone"
    if _ACCOUNT_WORDS.search(before) and not _DOCUMENTS.search(before):  # 社保卡号 is an ID
        return "bank_account"
    return None


def _not_private(digits: str, groups: list[str], seps: set, text: str, end: int) -> bool:
    if (len(groups) == 3 or len(groups) > 3 and len(groups[0]) == 4) and _is_date(groups[:3]):
        return True
    if len(groups) == 4 and seps == {"."} and all(int(g) <= 255 for g in groups):
        return True  # IPv4
    if seps == {"."} and len(groups) == 2:
        return True  # a decimal: 1.3812345678
    if len(digits) - len(digits.rstrip("0")) >= 6:
        return True  # a round number: 16000000000
    return quantity(text, end)


def _counted(text: str, end: int) -> bool:
    m = _COUNTED.match(text, end)
    return bool(m) and not m.group("noun").endswith(("ss", "us", "is")) and m.group("noun") not in _NOT_PLURAL


def quantity(text: str, end: int) -> bool:
    """Whether the number that ends at `end` is followed by a unit: 16000000000 bytes, 15000 ms."""
    return bool(_UNIT.match(text, end))


def _is_date(groups: list[str]) -> bool:
    """Whether three groups are a real date in some order: Y-M-D, D-M-Y or M-D-Y."""
    a, b, c = groups
    if len(a) == 4:
        return _date(int(a), int(b), int(c))
    if len(c) in (2, 4) and len(a) <= 2 and len(b) <= 2:
        year = int(c)
        return _date(year, int(b), int(a)) or _date(year, int(a), int(b))
    return False


def _date(year: int, month: int, day: int) -> bool:
    return (year < 100 or 1900 <= year <= 2100) and 1 <= month <= 12 and 1 <= day <= _MONTH_DAYS[month - 1]


def _phone(run: str, digits: str, sizes: list[int], seps: set, before: str) -> bool:
    n = len(digits)
    if run[0] == "+":
        return 8 <= n <= 15
    if digits.startswith("00") and len(sizes) >= 2 and 10 <= n <= 17:
        return True  # an international prefix: 0086 138..., 0044 20 ...
    national = digits[2:] if n == 13 and digits.startswith("86") else digits
    if len(national) == 11 and _CN_MOBILE.fullmatch(national):
        tail = sizes[1:] if n == 13 and sizes[0] == 2 else sizes
        if tail in ([11], [3, 4, 4], [3, 8], [7, 4], [4, 3, 4], [3, 3, 5], [13]):
            return True
    if seps != {"."} or len(sizes) >= 3:
        if sizes in ([3, 3, 4], [1, 3, 3, 4]) and _nanp(digits[-10:]) and (n == 10 or digits[0] == "1"):
            return True
        if digits[0] == "0" and digits[1] != "0" and 9 <= n <= 12 and len(sizes) >= 2 and min(sizes) >= 2:
            return True
    if 7 <= n <= 15 and _PHONE_WORDS.search(before):
        return True
    return False


def _nanp(ten: str) -> bool:
    return ten[0] in "23456789" and ten[3] in "23456789"


def _clause_before(before: str) -> str:
    """The words before a number back to the end of the sentence before: the word that says what
    the number is (phone, account, SSN) must be in them."""
    m = _SENTENCE_BEFORE.match(before)
    return before[m.end():] if m else before


def _dictated(t, start: int, end: int) -> bool:
    """Whether the digits were written as words in the note ("one three eight", "一三八")."""
    a, b = t.span(start, end)
    return any(c.isalpha() for c in t.note[a:b])


def _card_groups(sizes: list[int], seps: set) -> bool:
    if len(sizes) == 1:
        return True
    if len(seps) != 1:
        return False
    if sizes in ([4, 6, 5], [4, 6, 4]):
        return True
    return all(s == 4 for s in sizes[:-1]) and 1 <= sizes[-1] <= 4


def _valid_id(number: str) -> bool:
    """GB 11643: weighted checksum of the first 17 digits, plus a real birth date YYYYMMDD."""
    if not number[:17].isdigit():
        return False
    total = sum(int(number[i]) * _ID_WEIGHTS[i] for i in range(17))
    if _ID_CHECK[total % 11] != number[17].upper():
        return False
    year, month, day = int(number[6:10]), int(number[10:12]), int(number[12:14])
    if not (1900 <= year <= 2100 and 1 <= month <= 12 and 1 <= day <= _MONTH_DAYS[month - 1]):
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return not (month == 2 and day == 29 and not leap)


def _valid_vin(vin: str) -> bool:
    """ISO 3779 as North America checks it: the weighted sum mod 11 is the ninth character (10 is X)."""
    if sum(c.isdigit() for c in vin) < 5 or sum(c.isalpha() for c in vin) < 2:
        return False
    total = sum(_VIN_VALUES[c] * w for c, w in zip(vin, _VIN_WEIGHTS, strict=True))
    return "0123456789X"[total % 11] == vin[8]


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


def _valid_ssn(digits: str) -> bool:
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def _iban_end(found: str) -> int:
    """The length of the IBAN `found` starts with (mod-97 = 1), or 0; trailing groups that make
    it fail are dropped (a capitalised word after it)."""
    while True:
        compact = found.replace(" ", "").replace("-", "")
        if len(compact) < 15:
            return 0
        if int("".join(str(int(c, 36)) for c in compact[4:] + compact[:4])) % 97 == 1:
            return len(found)
        cut = max(found.rfind(" "), found.rfind("-"))
        if cut < 0:
            return 0
        found = found[:cut]


def _documents(text: str, lower: str, out: list) -> None:
    for m in _DOCUMENTS.finditer(lower):
        no = _DOC_NO.match(text, m.end())
        filler = _DOC_FILLER.match(text, no.end() if no else m.end())
        if not filler:
            continue
        value = _DOC_VALUE.match(text, filler.end())
        if not value:
            continue
        found = value.group().rstrip(" -")
        digits = sum(c.isdigit() for c in found)
        start, end = value.start(), value.start() + len(found)
        if any(a < end and start < b for a, b, _ in out):
            continue  # the number was judged on its own (a valid ID, a card): that is the finding
        plate = m.group("doc") and any(w in m.group("doc") for w in ("plate", "reg", "车牌"))
        if digits >= 4 and len(found.replace(" ", "")) >= 5 or plate and digits >= 2 and len(found) >= 5:
            kind = "passport" if m.group("passport") else "document" if m.group("doc") else "id_number"
            out.append((m.start(), filler.end() + len(found), kind))
