"""Every write anima makes goes through here: atomic replace, locked append, locks, moves.

A reader must only ever see a whole old file or a whole new one, and a crash at any point
must leave one of the two.

Nothing here follows a symlink inside a home. A home registers its root (`confine`, which
`Home` does); a path under it is reached from the root one name at a time, each directory
opened with O_DIRECTORY|O_NOFOLLOW relative to the one before (dir_fd), and the last name
acted on relative to its directory: a symbolic link anywhere on the way, or where the file
should be, is refused (Refused, exit 77, naming the link), and since every step holds the
directory it checked, nothing can be swapped in between a check and its use. The root itself
may be reached through links (ANIMA_HOME=~/link-to-home): only what is inside counts. Inside a
home the file read or written must also be a regular file (a FIFO or device is refused, never
opened in a way that could block). A path in no home (an export's FILE, a --file, a project's
AGENTS.md) is opened as the caller gave it, only its last name not followed.
"""

import errno
import fcntl
import os
import stat

from anima.infra.errors import Busy, DataError, Refused

DIR_MODE = 0o700
FILE_MODE = 0o600

# Every path this process wrote or removed through here, so that git.autocommit commits what
# this command changed and nothing a concurrent one did (anima.infra.git).
CHANGED: set[str] = set()

# The roots of the homes of this process, longest first (a path belongs to the innermost).
_ROOTS: list[str] = []
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_STEP = _DIR | os.O_NOFOLLOW


def confine(root: str) -> None:
    """Register a home: every path under `root` is from now on reached without following a
    link inside it. Its real path too, for paths that were resolved (transcripts are)."""
    for r in {os.path.abspath(root), os.path.realpath(root)}:
        if r not in _ROOTS:
            _ROOTS.append(r)
            _ROOTS.sort(key=len, reverse=True)


def _home_of(path: str) -> tuple[str, list[str]] | None:
    """(root, names below it) of the home holding `path`, or None for a path in no home."""
    for root in _ROOTS:
        if path == root:
            return root, []
        if path.startswith(root.rstrip(os.sep) + os.sep):
            return root, path[len(root.rstrip(os.sep)) + 1:].split(os.sep)
    return None


def _refuse_symlink(path: str) -> None:
    raise Refused(f"{path}: is a symbolic link; anima reads and writes only plain files here")


def _refuse_kind(fd: int, name: str, path: str, want: str) -> None:
    """Refuse `name` in directory `fd`, which is not the `want` ("directory", "regular file")
    that `path` needs; a link is named as a link."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:  # gone meanwhile: as if it had never been there
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path) from None
    if stat.S_ISLNK(st.st_mode):
        _refuse_symlink(path)
    raise Refused(f"{path}: is not a {want}; anima reads and writes only plain files here")


def _open_dir(path: str, create: bool) -> int:
    """A file descriptor of the directory `path`, made (0700, with its parents) if `create`.

    Inside a home every name below the root is opened without following a link; FileNotFoundError
    when one is missing (and not made)."""
    located = _home_of(path)
    if located is None:
        return _open_top(path, create)
    root, names = located
    fd = _open_top(root, create)  # the root itself may be reached through a link
    where = root
    try:
        for name in names:
            where = os.path.join(where, name)
            step = _step(fd, name, where, create)
            os.close(fd)
            fd = step
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_top(path: str, create: bool) -> int:
    """The directory `path` as given, links followed: a home's root, or a directory in no home."""
    try:
        if create:
            os.makedirs(path, mode=DIR_MODE, exist_ok=True)
        return os.open(path, _DIR)
    except (FileExistsError, NotADirectoryError):  # (makedirs: a file there; open: a file on the way)
        raise Refused(f"{path}: is not a directory, or a file is on the way to it") from None


def _step(fd: int, name: str, where: str, create: bool) -> int:
    """Open the directory `name` in directory `fd` (the path `where`), not following a link."""
    try:
        return os.open(name, _STEP, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), where) from None
    except OSError as e:
        if e.errno not in (errno.ENOTDIR, errno.ELOOP):  # (a link: ENOTDIR, as O_DIRECTORY is checked first)
            _about(e, where)
            raise
        _refuse_kind(fd, name, where, "directory")
    try:
        with _naming(where):
            os.mkdir(name, DIR_MODE, dir_fd=fd)
    except FileExistsError:  # a racing process made it: as good
        pass
    return _step(fd, name, where, create=False)


# The context managers here are classes, not contextlib's: contextlib alone would cost every
# command, `anima prompt` served from its cache the most, half a millisecond to import.

class _parent:
    """(fd of `path`'s directory, reached as `_open_dir` does, `path`'s last name, whether
    `path` is in a home), the directory closed when the block ends."""

    def __init__(self, path: str, create: bool = False):
        self.path, self.create = os.path.abspath(path), create

    def __enter__(self):
        directory, name = os.path.split(self.path)
        self.fd = _open_dir(directory, self.create)
        return self.fd, name, _home_of(self.path) is not None

    def __exit__(self, *exc):
        os.close(self.fd)
        return False


def ensure_dir(path: str) -> str:
    """Create a directory (and its parents) private to the user; return it."""
    os.close(_open_dir(os.path.abspath(path), create=True))
    return path


def _not_a_link(fd: int, name: str, path: str, inside: bool) -> None:
    """Refuse a link (or, inside a home, anything but a regular file) where `path` should be."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        _refuse_symlink(path)
    if inside and not stat.S_ISREG(st.st_mode):
        _refuse_kind(fd, name, path, "regular file")


def _open_in(fd: int, name: str, path: str, inside: bool, flags: int, mode: int = FILE_MODE) -> int:
    """Open `name` in directory `fd`, never following a link; inside a home only a regular
    file (O_NONBLOCK: a FIFO put there cannot make the open wait)."""
    try:
        out = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_NONBLOCK if inside else 0), mode,
                      dir_fd=fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            _refuse_symlink(path)
        if e.errno == errno.ENOENT:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path) from None
        if inside and e.errno in (errno.EISDIR, errno.ENXIO):
            _refuse_kind(fd, name, path, "regular file")
        _about(e, path)  # (dir_fd: the error names only the last name)
        raise
    if inside and not stat.S_ISREG(os.fstat(out).st_mode):
        os.close(out)
        _refuse_kind(fd, name, path, "regular file")
    return out


def open_file(path: str, flags: int = os.O_RDONLY, mode: int = FILE_MODE) -> int:
    """A file descriptor of `path` itself (FileNotFoundError when it is not there), reached as
    the module says; with O_CREAT its directory is made first."""
    with _parent(path, create=bool(flags & os.O_CREAT)) as (fd, name, inside):
        return _open_in(fd, name, path, inside, flags, mode)


def status(path: str) -> os.stat_result | None:
    """The status of `path` itself (a link is not followed), reached as the module says; None
    when it is not there."""
    try:
        with _parent(path) as (fd, name, _):
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def check(path: str, kind: str = "file") -> None:
    """Refuse now what writing `path` would refuse: a link (or, inside a home, what is not a
    directory) on the way, or in its place something other than a `kind` ("file", "dir", or
    "entry": anything, a link too, as `remove` takes it). What is not there yet is no
    obstacle. For a change of many files, refused before its first write."""
    try:
        if kind == "dir":
            os.close(_open_dir(os.path.abspath(path), create=False))
            return
        with _parent(path) as (fd, name, inside):
            if kind == "file":
                _not_a_link(fd, name, path, inside)
    except FileNotFoundError:
        pass


def listdir(path: str) -> list[str]:
    """The names in directory `path`, reached as the module says (FileNotFoundError when it is
    not there): a linked directory's names are not taken for the home's."""
    fd = _open_dir(os.path.abspath(path), create=False)
    try:
        return os.listdir(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes, durable: bool = True) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    if durable:
        os.fsync(fd)


def _temp_in(fd: int, name: str, data: bytes | str, mode: int, durable: bool = True) -> str:
    """A hidden temp file beside `name` in directory `fd` holding `data`, already on disk."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd)
    try:
        _write_all(out, data, durable)
    except BaseException:
        os.close(out)
        os.unlink(tmp, dir_fd=fd)
        raise
    os.close(out)
    return tmp


def _rename_in(fd: int, tmp: str, name: str) -> None:
    """Rename temp file `tmp` over `name` (both in directory `fd`); the temp file goes if it fails."""
    try:
        os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=fd)
        except FileNotFoundError:
            pass
        raise


class _naming:
    """An OSError inside names `path` (see _about)."""

    def __init__(self, path: str):
        self.path = path

    def __enter__(self):
        return None

    def __exit__(self, kind, e, tb):
        if isinstance(e, OSError):
            _about(e, self.path)
        return False


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
    with _naming(path), _parent(path, create=True) as (fd, name, inside):
        _not_a_link(fd, name, path, inside)
        tmp = _temp_in(fd, name, data, mode, durable)
        CHANGED.add(path)
        _rename_in(fd, tmp, name)
        if durable:
            os.fsync(fd)


def replacing(path: str, mode: int = FILE_MODE):
    """A binary file to write `path`'s new content into, streamed: it replaces `path` (fsync,
    rename, fsync dir) when the block ends, and is removed if the block raises."""
    import contextlib  # (for the streaming writers only: see _parent)

    return contextlib.contextmanager(_replacing)(path, mode)


def _replacing(path: str, mode: int):
    with _parent(path, create=True) as (fd, name, inside):
        _not_a_link(fd, name, path, inside)
        with _naming(path):
            tmp = _temp_in(fd, name, b"", mode, durable=False)
        CHANGED.add(path)
        try:
            with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd), "wb") as f:
                yield f  # what the caller's block raises is its own: not named after `path`
                with _naming(path):
                    f.flush()
                    os.fsync(f.fileno())
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=fd)
            except FileNotFoundError:
                pass
            raise
        with _naming(path):
            _rename_in(fd, tmp, name)
            os.fsync(fd)


# The derived files this process went without because a link (or what is no regular file)
# stood in their place: a read command still works, and the command layer says so, once.
WENT_WITHOUT: list[str] = []


def went_without(e: Refused) -> None:
    """Note that a derived file was done without, refused as `e` says (the first
    only: that is all that is said, and a long-lived process must not pile them up)."""
    if not WENT_WITHOUT:
        WENT_WITHOUT.append(str(e))


def went_without_warning() -> str:
    """What a command says once it is done, when it went without a derived file."""
    return (f"anima: warning: {WENT_WITHOUT[0]}; went without this derived file "
            "(remove what is there, and anima makes it again)")


def write_cache(path: str, data: bytes | str) -> bool:
    """Write a derived file (a cache entry) if the home takes it; return whether it did. A home
    that cannot (read-only, full, a link in the way) loses nothing by the entry's absence, so a
    read command on it still works: the entry is simply not written, never through a link."""
    try:
        ensure_dir(os.path.dirname(path))
        atomic_write(path, data, durable=False)
    except Refused as e:
        went_without(e)
        return False
    except OSError:
        return False
    return True


def read_cache(path: str) -> bytes | None:
    """A derived file's bytes, or None when there is none to use: missing, unreadable, or a
    link (or no regular file) in its place or on the way, which is not followed."""
    try:
        return read_bytes(path)
    except Refused as e:
        went_without(e)
    except OSError:
        pass
    return None


def create(path: str, data: bytes | str, mode: int = FILE_MODE) -> bool:
    """Write `path` only if it does not exist yet, atomically; return whether it was written.

    The content is linked into place from a temp file, so the file appears whole or not at
    all, and an existing file (or symlink) is never touched.
    """
    with _naming(path), _parent(path, create=True) as (fd, name, _):
        try:
            os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:
            return False
        tmp = _temp_in(fd, name, data, mode)
        CHANGED.add(path)
        try:
            os.link(tmp, name, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp, dir_fd=fd)
        os.fsync(fd)
    return True


class Batch:
    """What a run of appends inside `batch()` owes the disk: the files whose fsync was put off
    (in the order first written), and what must wait until they are on disk (finishing a
    queue item: once it is finished, nothing it wrote may be lost to a power failure)."""

    def __init__(self):
        self.paths: dict[str, None] = {}
        self.after: list = []

    def then(self, fn, *args) -> None:
        """Call `fn(*args)` once what was appended so far is on disk (at the next `sync`)."""
        self.after.append((fn, args))

    def __len__(self) -> int:
        return len(self.after)

    def __enter__(self) -> "Batch":
        _BATCHES.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _BATCHES.remove(self)
        self.sync()

    def sync(self) -> None:
        """fsync each file appended to since the last sync, once; then what waited for it."""
        for path in list(self.paths):
            fd = open_file(path)
            try:
                with _naming(path):
                    os.fsync(fd)
            finally:
                os.close(fd)
            del self.paths[path]
        after, self.after = self.after, []
        for fn, args in after:
            fn(*args)


_BATCHES: list[Batch] = []


def batch() -> Batch:
    """A context: appends inside put off their fsync to the batch's `sync` (at the end, or
    earlier when the caller says): durability per batch, not per line. A kill -9 loses
    nothing by it (the page cache outlives the process, and every write is made at once, in
    order); only a power failure can lose what was appended since the last sync, and nothing
    that waited for it (`Batch.then`) has happened then. An append that what follows must
    never reach the disk without (`barrier=True`) is fsynced at once all the same. (A class,
    not contextlib: every command imports this module, and contextlib costs each of them.)"""
    return Batch()


def append(path: str, data: bytes | str, durable: bool = True, barrier: bool = False) -> None:
    """Append `data` under an exclusive lock, so concurrent writers never interleave a line.
    It starts on a line of its own: a file whose last line is open (a crash mid-append, a
    hand edit) gets a line break first, so that the torn line stays torn and what is
    appended now is read whole.

    `durable=False` skips the fsync, for logs whose last line a crash may lose. Inside a
    `batch()` the fsync is put off to the batch's sync, unless `barrier`."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if durable and _BATCHES and not barrier:
        _BATCHES[-1].paths[path] = None
        durable = False
    fd = open_file(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    CHANGED.add(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size and data[:1] != b"\n" and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        try:
            _write_all(fd, data, durable)
        except OSError as e:  # a disk filled mid-line: cut back what was written, no torn line stays
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass
            _about(e, path)
            raise
    finally:
        os.close(fd)  # closing releases the lock


def remove(path: str) -> None:
    """Delete a file of the home (FileNotFoundError if it is not there); a link in its place
    is removed itself, never followed."""
    with _parent(path) as (fd, name, _):
        CHANGED.add(path)
        try:
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path) from None


def rmtree(path: str) -> None:
    """Delete the directory `path` and everything in it (nothing when it is not there); a
    link in its place is refused, and no link inside it is followed (shutil.rmtree by fd)."""
    import shutil

    try:
        with _parent(path) as (fd, name, _):
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return
            if not stat.S_ISDIR(st.st_mode):
                _refuse_kind(fd, name, path, "directory")
            CHANGED.add(path)
            shutil.rmtree(name, dir_fd=fd)
    except FileNotFoundError:
        return


def move(source: str, target: str, durable: bool = False) -> None:
    """Rename `source` to `target` (replacing it), both reached as the module says, the
    target's directory made if missing; FileNotFoundError when `source` is not there (another
    consumer took it). A link is moved as itself, never followed. `durable` fsyncs the
    target's directory (a queue's delivery; a claim need not survive a crash)."""
    with _parent(source) as (sfd, sname, _), _parent(target, create=True) as (tfd, tname, inside):
        _not_a_link(tfd, tname, target, inside)
        CHANGED.update((source, target))
        try:
            os.rename(sname, tname, src_dir_fd=sfd, dst_dir_fd=tfd)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), source) from None
        if durable:
            os.fsync(tfd)


def lock_path(path: str) -> str:
    """The lock file guarding `path`: hidden, beside it (the file itself is replaced by rename)."""
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.lock")


class locked:
    """Hold the exclusive lock guarding `path`; raise Busy at once when `wait` is false."""

    def __init__(self, path: str, wait: bool = True, what: str | None = None):
        self.path, self.wait, self.what = path, wait, what

    def __enter__(self):
        self.fd = open_file(lock_path(self.path), os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | (0 if self.wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(self.fd)
            raise Busy(f"{self.what or self.path}: busy, another anima process holds the lock; retry later") from None
        except BaseException:
            os.close(self.fd)
            raise
        return None

    def __exit__(self, *exc):
        os.close(self.fd)
        return False


# A derived file (a cache entry) may stand in for its inputs only if every input was last
# modified this long before the inputs were examined: a file rewritten in place within one
# file-system timestamp tick would otherwise keep its signature.
RACY_NS = 50_000_000


def signature(path: str) -> list | None:
    """What tells that a file changed: mtime, size, inode, ctime; None when it is absent.

    Inside a home it is the file's own, reached as the module says (a link is refused): a
    cache entry keyed by it must not stand for a file reached through a link."""
    try:
        if _home_of(os.path.abspath(path)) is None:
            st = os.stat(path)  # (a transcript elsewhere, a project's AGENTS.md: links followed)
        else:
            st = status(path)
            if st is None:
                return None
            if stat.S_ISLNK(st.st_mode):
                _refuse_symlink(path)
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
        f = os.fdopen(open_file(path), "rb")
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
        except ValueError:  # torn by a crash, and closed by the next append: its record is lost
            continue
        if isinstance(value, dict):
            out.append(value)
    return out, offset + cut


def torn_lines(path: str) -> list[int]:
    """The numbers of the lines of the JSON-lines file `path` that hold no JSON object (torn by
    a crash mid-append, or a record an older anima glued onto one: not taken apart, a guess
    could make a record up), the last line too when it has no line break; read under the
    appenders' lock, so a line being written is not taken for torn."""
    from anima.infra import jsontext

    try:
        fd = open_file(path)
    except FileNotFoundError:
        return []
    with os.fdopen(fd, "rb") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_SH)
        data = f.read()
    found = []
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, 1):
        if number == len(lines) and raw == b"":
            break
        try:
            whole = isinstance(jsontext.loads(raw), dict) and number < len(lines)
        except ValueError:
            whole = False
        if not whole:
            found.append(number)
    return found


def read_bytes(path: str) -> bytes | None:
    """The file's bytes, or None when it does not exist. A symlink is refused."""
    try:
        fd = open_file(path)
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
