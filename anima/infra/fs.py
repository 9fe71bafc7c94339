"""Every write anima makes goes through here: atomic replace, locked append, locks.

A reader must only ever see a whole old file or a whole new one, and a crash at any point
must leave one of the two. Nothing here follows a symlink in place of a state file: a link
where a file should be is refused, never written through.
"""

import contextlib
import errno
import fcntl
import os

from anima.infra.errors import Busy, DataError, Refused

DIR_MODE = 0o700
FILE_MODE = 0o600

# Every path this process wrote or removed through here, so that git.autocommit commits what
# this command changed and nothing a concurrent one did (anima.infra.git).
CHANGED: set[str] = set()


def ensure_dir(path: str) -> str:
    """Create a directory (and its parents) private to the user; return it."""
    os.makedirs(path, mode=DIR_MODE, exist_ok=True)
    return path


def _refuse_symlink(path: str) -> None:
    if os.path.islink(path):
        raise Refused(f"{path}: is a symbolic link; anima reads and writes only plain files here")


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes, durable: bool = True) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    if durable:
        os.fsync(fd)


def _temp_with(path: str, data: bytes | str, mode: int, durable: bool = True) -> str:
    """A hidden temp file beside `path` holding `data`, already on disk."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    directory = ensure_dir(os.path.dirname(path) or ".")
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except OSError as e:
        _about(e, path)
        raise
    try:
        _write_all(fd, data, durable)
    except BaseException as e:
        os.close(fd)
        os.unlink(tmp)
        _about(e, path)
        raise
    os.close(fd)
    return tmp


def _about(e: BaseException, path: str) -> None:
    """Make `e` name `path`, the file being written, rather than its temp file or nothing at all
    (os.write names no file): the line a full disk or a read-only home ends with says which."""
    if isinstance(e, OSError):
        e.filename, e.filename2 = path, None


def atomic_write(path: str, data: bytes | str, mode: int = FILE_MODE, durable: bool = True) -> None:
    """Replace `path` with `data`: temp file in the same directory, fsync, rename, fsync dir.

    `durable=False` skips both fsyncs, for derived files (caches) only: readers still never
    see half a file, and a crash can at worst leave an entry that fails to parse and is rebuilt.
    """
    _refuse_symlink(path)
    tmp = _temp_with(path, data, mode, durable)
    CHANGED.add(path)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
        _fsync_dir(os.path.dirname(tmp))


@contextlib.contextmanager
def replacing(path: str, mode: int = FILE_MODE):
    """A binary file to write `path`'s new content into, streamed: it replaces `path` (fsync,
    rename, fsync dir) when the block ends, and is removed if the block raises."""
    _refuse_symlink(path)
    tmp = _temp_with(path, b"", mode, durable=False)
    CHANGED.add(path)
    try:
        with open(tmp, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        _about(e, path)
        raise
    _fsync_dir(os.path.dirname(tmp))


def write_cache(path: str, data: bytes | str) -> bool:
    """Write a derived file (a cache entry) if the home takes it; return whether it did. A home
    that cannot (read-only, full) loses nothing by the entry's absence, so a read command on it
    still works: the entry is simply not written."""
    try:
        ensure_dir(os.path.dirname(path))
        atomic_write(path, data, durable=False)
    except (OSError, Refused):
        return False
    return True


def create(path: str, data: bytes | str, mode: int = FILE_MODE) -> bool:
    """Write `path` only if it does not exist yet, atomically; return whether it was written.

    The content is linked into place from a temp file, so the file appears whole or not at
    all, and an existing file (or symlink) is never touched.
    """
    if os.path.lexists(path):
        return False
    tmp = _temp_with(path, data, mode)
    CHANGED.add(path)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    _fsync_dir(os.path.dirname(tmp))
    return True


def append(path: str, data: bytes | str, durable: bool = True) -> None:
    """Append `data` under an exclusive lock, so concurrent writers never interleave a line.

    `durable=False` skips the fsync, for logs whose last line a crash may lose."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    ensure_dir(os.path.dirname(path) or ".")
    fd = _open_nofollow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    CHANGED.add(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        try:
            _write_all(fd, data, durable)
        except OSError as e:  # a disk filled mid-line: cut back what was written, no torn line stays
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            _about(e, path)
            raise
    finally:
        os.close(fd)  # closing releases the lock


def remove(path: str) -> None:
    """Delete a file of the home (FileNotFoundError if it is not there)."""
    CHANGED.add(path)
    os.unlink(path)


def _open_nofollow(path: str, flags: int, mode: int = FILE_MODE) -> int:
    try:
        return os.open(path, flags | os.O_NOFOLLOW, mode)
    except OSError as e:
        if e.errno == errno.ELOOP:
            _refuse_symlink(path)
        raise


def lock_path(path: str) -> str:
    """The lock file guarding `path`: hidden, beside it (the file itself is replaced by rename)."""
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.lock")


@contextlib.contextmanager
def locked(path: str, wait: bool = True, what: str | None = None):
    """Hold the exclusive lock guarding `path`; raise Busy at once when `wait` is false."""
    lock = lock_path(path)
    ensure_dir(os.path.dirname(lock) or ".")
    fd = _open_nofollow(lock, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise Busy(f"{what or path}: busy, another anima process holds the lock; retry later") from None
        yield
    finally:
        os.close(fd)


# A derived file (a cache entry) may stand in for its inputs only if every input was last
# modified this long before the inputs were examined: a file rewritten in place within one
# file-system timestamp tick would otherwise keep its signature.
RACY_NS = 50_000_000


def signature(path: str) -> list | None:
    """What tells that a file changed: mtime, size, inode, ctime; None when it is absent."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns]


def settled(signatures, started_ns: int) -> bool:
    """Whether files with these signatures, examined at `started_ns`, can be cached by them."""
    return all(sig is None or sig[0] < started_ns - RACY_NS for sig in signatures)


def new_json_lines(path: str, offset: int) -> tuple[list[dict] | None, int]:
    """The JSON objects on the whole lines appended to `path` after byte `offset`, and the
    offset past them (a torn last line waits until it is whole; a line that is not a JSON
    object is skipped). (None, 0) when the file is now shorter than `offset`: it was
    replaced, and the caller starts over."""
    from anima.infra import jsontext

    try:
        f = os.fdopen(_open_nofollow(path, os.O_RDONLY), "rb")
    except FileNotFoundError:
        return (None, 0) if offset > 0 else ([], 0)
    with f:
        size = os.fstat(f.fileno()).st_size
        if size < offset:
            return None, 0
        if size == offset:
            return [], offset
        f.seek(offset)
        data = f.read(size - offset)
    cut = data.rfind(b"\n") + 1
    out = []
    for raw in data[:cut].split(b"\n"):
        try:
            value = jsontext.loads(raw)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out, offset + cut


def read_bytes(path: str) -> bytes | None:
    """The file's bytes, or None when it does not exist. A symlink is refused."""
    try:
        fd = _open_nofollow(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        f = os.fdopen(fd, "rb")
    except OSError as e:  # a directory where the file should be: name it, not the descriptor
        os.close(fd)
        _about(e, path)
        raise
    with f:
        return f.read()


def read_text(path: str) -> str | None:
    """The file as UTF-8 text, or None when it does not exist."""
    data = read_bytes(path)
    if data is None:
        return None
    return decode(data, path)


def decode(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{what}: not valid UTF-8 (byte {e.start})") from None


def read_limited(stream, limit: int, what: str = "stdin") -> bytes:
    """Read at most `limit` bytes; a longer input is refused without reading all of it."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise Refused(f"{what}: input too large (over {limit} bytes)")
    return data
