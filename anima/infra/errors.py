"""Errors that end a command with a documented exit status (anima(1), EXIT STATUS).

Domain modules raise these; only the command layer turns them into a line on stderr.
"""

import errno

OK = 0
NOTHING = 1  # nothing matched / a check found problems, like grep
USAGE = 2
DATAERR = 65  # bad input data
SOFTWARE = 70  # a bug in anima
UNAVAILABLE = 69  # model backend unavailable
CANTCREAT = 73  # cannot write: a read-only file system, no permission, a file where a directory should be
IOERR = 74  # the system failed the write: no space left, a quota, a file size limit, a device error
TEMPFAIL = 75  # busy: a lock is held, retry later
NOPERM = 77  # refused by a rule
CONFIG = 78  # bad configuration


# What the environment can do to a file operation, whatever anima's own code is right: such an
# OSError ends the command with 73 or 74 and the path, not as a bug (70). Any other errno
# (ENOENT, EBADF, EINVAL, ...) stays what it most likely is: a bug in anima.
_CANNOT_WRITE = {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EISDIR, errno.ETXTBSY}
_SYSTEM_FAILED = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EMLINK, errno.ENAMETOOLONG}


def os_error_code(e: OSError) -> int | None:
    """The exit status of a file operation the environment refused (73 or 74), or None."""
    if e.errno in _CANNOT_WRITE:
        return CANTCREAT
    if e.errno in _SYSTEM_FAILED:
        return IOERR
    return None


def os_error_message(e: OSError) -> str:
    """One line: the path and why, e.g. `/h/notes/notes.md: No space left on device`."""
    where = e.filename if e.filename is not None else "a file of the home"
    return f"{where}: {e.strerror or e}"


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


def line(message: str) -> str:
    """The one line on stderr that ends a command: `anima: ` and the message, its line breaks
    made spaces."""
    return f"anima: {' '.join(message.split(chr(10)))}"


def ending(e: Exception) -> tuple[str, int]:
    """The message and exit status a command ends with when `e` escapes it: anima's own error
    as it says, a file operation the environment refused as 73 or 74 with the path, anything
    else as a bug (70). The same on the click path (anima.cli) and the fast one (anima.__main__)."""
    if isinstance(e, AnimaError):
        return str(e), e.exit_code
    if isinstance(e, OSError) and os_error_code(e) is not None:
        return os_error_message(e), os_error_code(e)
    return f"internal error: {type(e).__name__}: {e} (ANIMA_DEBUG=1 shows the traceback)", SOFTWARE
