"""The time anima runs at: now, or ANIMA_NOW (RFC 3339) for tests and replays."""

import os
import time


def now() -> float:
    """Seconds since the epoch."""
    fixed = os.environ.get("ANIMA_NOW")
    if fixed:
        return parse(fixed, "ANIMA_NOW")
    return time.time()


def parse(text: str, what: str, error=None) -> float:
    """Seconds since the epoch of an RFC 3339 time; `error` (default UsageError) if it is not one."""
    from datetime import datetime, timezone

    from anima.errors import UsageError

    try:
        moment = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise (error or UsageError)(f"{what}: not an RFC 3339 time: {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def iso(seconds: float) -> str:
    """RFC 3339 in UTC to the second, e.g. 2026-11-30T04:17:21Z."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
