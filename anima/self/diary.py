"""self/diary/DATE.md: the diary she decided to write, one file per UTC day (dispatch's
diary.write appends an entry headed by its time)."""

import os
import re
import time

from anima.infra import fs
from anima.infra.errors import NotFound, UsageError

DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")  # (\d would take any script's digits)


def directory(home) -> str:
    return home.path("self", "diary")


def dates(home) -> list[str]:
    try:
        names = fs.listdir(directory(home))
    except FileNotFoundError:
        return []
    return sorted(n[:-3] for n in names if n.endswith(".md") and DATE.fullmatch(n[:-3]))


def check_date(day: str) -> str:
    if DATE.fullmatch(day):
        try:
            time.strptime(day, "%Y-%m-%d")
            return day
        except ValueError:
            pass
    raise UsageError(f"{day!r} is not a date: use YYYY-MM-DD")


def read(home, day: str) -> str:
    text = fs.read_text(os.path.join(directory(home), check_date(day) + ".md"))
    if text is None:
        raise NotFound(f"no diary for {day}")
    return text
