"""The two times anima reads: her time, and the time files are stamped with.

`now` is the time anima lives at: ANIMA_NOW (RFC 3339) when set, for tests and replays, else
the system clock. A command reads it once (or takes it from its --now) and passes it down:
nothing below the command layer reads it again, so one run writes one time.

`files_now_ns` is the time the kernel stamps files with right now. A file's age (a claim, a
hot session, a backlog) and whether a cache may trust a file's signature are measured
against it, never against `now`: ANIMA_NOW moves her time, not the files', and a process
whose clock is moved (faketime, a container's time namespace) still sees the files' real
stamps.
"""

import os
import time


def now() -> float:
    """Seconds since the epoch."""
    fixed = os.environ.get("ANIMA_NOW")
    if fixed:
        from anima.infra.errors import ConfigError

        return parse(fixed, "ANIMA_NOW", ConfigError)  # a variable's bad value, as config's are (78)
    return time.time()


def files_now_ns() -> int:
    """Nanoseconds since the epoch by the clock that stamps files.

    A new pipe's inode is stamped by that very clock (the kernel's coarse real-time clock, the
    one mtime and ctime come from), so its fstat reads it in three system calls and writes
    nothing. Where a pipe carries no stamp, the system clock."""
    r, w = os.pipe()
    try:
        stamp = os.fstat(r).st_mtime_ns
    finally:
        os.close(r)
        os.close(w)
    return stamp or time.time_ns()


# The times anima takes: from the epoch, which every time here counts from, to a millennium
# short of the calendar's end, so that any date computed from one (a cron rule's next time
# years ahead, an archive's name) is still a four-digit year. 9999-12-31T23:59:59Z crashed tick.
EARLIEST, LATEST = 0.0, 221845392000.0  # 1970-01-01T00:00:00Z, 9000-01-01T00:00:00Z


def seconds_of(text) -> float | None:
    """Seconds since the epoch of a time written as RFC 3339 has it, whatever its year; None
    if `text` is not one."""
    from datetime import datetime, timezone

    try:
        moment = datetime.fromisoformat(text.upper())  # (RFC 3339 lets t and z be lower case)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        return moment.timestamp()
    except (AttributeError, TypeError, ValueError, OverflowError):  # (not a str at all: no upper())
        return None


def parse(text: str, what: str, error=None) -> float:
    """Seconds since the epoch of an RFC 3339 time from 1970 to 8999; `error` (default
    UsageError) if it is not one."""
    from anima.infra.errors import UsageError

    seconds = seconds_of(text)
    if seconds is None:
        from anima.infra.text import undecodable

        shown = undecodable(text) if isinstance(text, str) else None  # bytes from the environment, as \xNN
        shown = repr(text) if shown is None else f"'{shown}'"
        raise (error or UsageError)(f"{what}: not an RFC 3339 time: {shown}")
    if not EARLIEST <= seconds < LATEST:
        raise (error or UsageError)(f"{what}: {text!r} is outside the years anima takes (1970 to 8999)")
    return seconds


def iso(seconds: float) -> str:
    """RFC 3339 in UTC to the second, e.g. 2026-11-30T04:17:21Z."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
