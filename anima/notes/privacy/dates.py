"""Dates of birth: a birth word and a date on the same clause.

Birth words: born (and b. before a date), birthday, birth date, date of birth, DOB, "turns 40", 生日,
出生, 生于. A date:
numeric in any order people write one (1985-07-23, 03/11/1979, 15.03.1991, 12/25, 1983.06), with
a month name (14 March 1990, May 5, 1992, June 2nd, the 9th of November, March 1990), Chinese (1991年3月15日,
5月20日, 九月十二号, 八五年), or a year after "born in" or "b.". Her own birth is hers to keep: a birth word
right after "I was", "I am", "my", "my own" or 我 is not the person's.
"""

import re

from anima.notes.privacy.text import lazy

_BIRTH = lazy(
    r"(?<![A-Za-z])(?:born|b\.(?= ?\d)|birthdays?|birth ?dates?|dates? of birth|d\.?o\.?b\b\.?|birth year"
    r"|turns? \d{1,3}"
    r"(?= on| in))(?![A-Za-z])|生日|出生|生于|诞辰", re.I)
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?"
          r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_ZH_N = r"(?:\d{1,2}|[一二三四五六七八九十]{1,3})"
_DATE = lazy(
    r"(?<![0-9])(?:\d{4}[-/.] ?\d{1,2}(?:[-/.] ?\d{1,2})?|\d{1,2}[-/.]\d{1,2}(?:[-/.]\d{2,4})?)(?![0-9])"
    rf"|(?<![A-Za-z0-9])(?:(?:the )?\d{{1,2}}(?:st|nd|rd|th)?(?: of)? {_MONTH}|{_MONTH} \d{{1,2}}(?:st|nd|rd|th)?)"
    r"(?![A-Za-z0-9])(?:,? \d{4})?"
    rf"|(?<![A-Za-z0-9]){_MONTH},? (?:19|20)\d{{2}}(?![0-9])"
    rf"|(?:\d{{2,4}}|[零〇一二三四五六七八九]{{2,4}}) ?年(?: ?{_ZH_N} ?月(?: ?{_ZH_N} ?[日号])?)?"
    rf"|{_ZH_N} ?月 ?{_ZH_N} ?[日号]"
    r"|(?:(?<=born in )|(?<=b\. ))(?P<year>(?:19|20)\d{2})", re.I)
_MINE = lazy(r"(?:\bi was|\bi am|\bi'm|\bmy(?: own| first| real)?|我的?|我自己的)\s*$", re.I)
_WINDOW = 40


def scan(t, out: list) -> None:
    """(The caller imports this module only for a text with a birth word's first letters in it.)"""
    lower, text = t.lower, t.norm
    for m in _BIRTH.finditer(text):
        if _MINE.search(lower[max(0, m.start() - 14):m.start()]):
            continue
        start, end = t.sentence(m.start())
        lo, hi = max(start, m.start() - _WINDOW), min(end, m.end() + _WINDOW)
        for d in _DATE.finditer(text, lo, hi):
            if d.group("year") or _a_date(d.group()):
                out.append((min(m.start(), d.start()), max(m.end(), d.end()), "birth_date"))
                break


def _a_date(found: str) -> bool:
    """A numeric date must have a plausible month and day in it somewhere (not 2.10.3 as a version)."""
    numbers = [int(n) for n in re.findall(r"\d+", found)]
    if not numbers or not re.fullmatch(r"[\d\-/. ]+", found):
        return True
    if len(numbers) == 1:
        return False
    # month-day (03/15) or day-month (15.03): most of the world writes the day first
    return any(1 <= a <= 12 and 1 <= b <= 31 or 1 <= a <= 31 and 1 <= b <= 12
               for a, b in zip(numbers, numbers[1:], strict=False)) or \
        (len(numbers) == 2 and numbers[0] >= 1900 and 1 <= numbers[1] <= 12)
