"""Errors that end a command with a documented exit status (anima(1), EXIT STATUS).

Domain modules raise these; only the command layer turns them into a line on stderr.
"""

OK = 0
NOTHING = 1  # nothing matched / a check found problems, like grep
USAGE = 2
DATAERR = 65  # bad input data
SOFTWARE = 70  # a bug in anima
UNAVAILABLE = 69  # model backend unavailable
TEMPFAIL = 75  # busy: a lock is held, retry later
NOPERM = 77  # refused by a rule
CONFIG = 78  # bad configuration


class AnimaError(Exception):
    """A failure the user can act on; the message is one line saying what and why."""

    exit_code = SOFTWARE

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(AnimaError):
    exit_code = USAGE


class DataError(AnimaError):
    exit_code = DATAERR


class Busy(AnimaError):
    exit_code = TEMPFAIL


class Refused(AnimaError):
    exit_code = NOPERM


class ConfigError(AnimaError):
    exit_code = CONFIG


class NotFound(AnimaError):
    exit_code = NOTHING
