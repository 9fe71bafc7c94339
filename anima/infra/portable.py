"""`anima export` / `anima import`: the whole self as one zstd-compressed tar, to move it.

The archive is a tar stream compressed with zstd. Its first member is MANIFEST.json:
{"format": "anima-export", "version": 1, "created", "anima", "dirs": [{"path", "mode"}],
"files": [{"path", "sha256", "size", "mode", "mtime"}]}; then every directory and file it
names, in that order, nothing else. Left out, because they are rebuilt from the rest:
cache/, index/, lock and temp files (.NAME.lock, .NAME.tmp), and .git/ (history is git's to
move). Symlinks are never followed or stored.

Export reads every file twice: once to hash it for the manifest (which comes first, so an
import can check each member as it arrives), once to write it; a file that changed in
between is a busy home (exit 75), never an archive that contradicts its own manifest.

Import checks everything before the home exists: the archive is unpacked into a fresh
directory beside the target (.anima-import-XXXX) and verified member by member (a path in
the manifest, a plain file or directory, no '..' or absolute path, size and sha256 as
promised, nothing missing, nothing extra); only then is it renamed into place. The target
must not exist or be an empty directory. On any mismatch the staging directory is removed
and the target was never touched.

The manifest is a checksum list: it catches damage, not a forger, who can rewrite it along
with the files. So nothing from an archive gets more than anima's own files have: every file
lands 0600 and every directory 0700 whatever the archive says (a hook arrives without its exec
bit, for a person to enable), and no member may be a link or a device. Nor does a setting
that runs a program (config.SETTINGS, those with `runs`: [dispatch.commands], llm.backend
cmd:) stay in config.toml: it is left there as a comment, with the command that enables it. Sizes are bounded
before they can fill a disk: the sizes the manifest promises (each member must be exactly
its size) must fit in MAX_RATIO times the compressed archive and in the free space beside the
target, and the decompressed stream itself is cut off once it outgrows MAX_RATIO times the
compressed bytes read so far (a pipe, whose length is not known; a tar header bomb). The
staging directory is fresh and private, and only directories and regular files are ever made
in it, so there is no link in it to follow.
"""

import errno
import hashlib
import io
import os
import shutil
import stat
import tarfile
import tempfile

from anima import __version__
from anima.infra import clock, fs, jsontext
from anima.infra.errors import IOERR, AnimaError, Busy, DataError, Refused
from anima.infra.text import name_control_at

MANIFEST = "MANIFEST.json"
FORMAT = "anima-export"
VERSION = 1
LEFT_OUT_DIRS = ("cache", "index", ".git")
_CHUNK = 1 << 20
# A home is text: zstd makes it 3 to 30 times smaller. A stream that grows more than this
# against its compressed bytes (plus SLACK, for small archives and tar's own headers) is a
# decompression bomb, not a home.
MAX_RATIO = 256
SLACK = 64 << 20


def _left_out(rel: str) -> bool:
    top = rel.split("/", 1)[0]
    base = rel.rsplit("/", 1)[-1]
    return top in LEFT_OUT_DIRS or (base.startswith(".") and base.endswith((".lock", ".tmp")))


def _hash_file(path: str) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def inventory(root: str, now: float) -> dict:
    """The manifest of the home at `root`: every kept directory and regular file, sorted."""
    dirs, files = [], []
    for top, subdirs, names in os.walk(root):
        rel_top = os.path.relpath(top, root).replace(os.sep, "/")
        rel_top = "" if rel_top == "." else rel_top
        kept = []
        for d in sorted(subdirs):
            rel = f"{rel_top}/{d}" if rel_top else d
            st = os.lstat(os.path.join(top, d))
            if stat.S_ISDIR(st.st_mode) and not _left_out(rel):
                kept.append(d)
                dirs.append({"path": rel, "mode": stat.S_IMODE(st.st_mode)})
        subdirs[:] = kept
        for name in sorted(names):
            rel = f"{rel_top}/{name}" if rel_top else name
            path = os.path.join(top, name)
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or _left_out(rel):
                continue
            digest, size = _hash_file(path)
            files.append({"path": rel, "sha256": digest, "size": size, "mode": stat.S_IMODE(st.st_mode),
                          "mtime": st.st_mtime})
    return {"format": FORMAT, "version": VERSION, "created": clock.iso(now), "anima": __version__,
            "dirs": dirs, "files": files}


class _Hashing:
    """A file object that hashes what tarfile reads from it, to catch a file that changed."""

    def __init__(self, f):
        self.f = f
        self.h = hashlib.sha256()

    def read(self, n=-1):
        data = self.f.read(n)
        self.h.update(data)
        return data


def export(root: str, out, now: float) -> dict:
    """Write the home at `root` as an archive to the binary file `out`, made at `now`; return
    the manifest."""
    import zstandard

    manifest = inventory(root, now)
    data = jsontext.dumps(manifest, indent=1).encode("utf-8") + b"\n"
    with zstandard.ZstdCompressor(level=10).stream_writer(out, closefd=False) as z, \
            tarfile.open(fileobj=z, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(MANIFEST)
        info.size, info.mode, info.mtime = len(data), 0o600, int(now)
        tar.addfile(info, io.BytesIO(data))
        for d in manifest["dirs"]:
            info = tarfile.TarInfo(d["path"])
            info.type, info.mode = tarfile.DIRTYPE, d["mode"]
            tar.addfile(info)
        for entry in manifest["files"]:
            path = os.path.join(root, entry["path"])
            info = tarfile.TarInfo(entry["path"])
            info.size, info.mode, info.mtime = entry["size"], entry["mode"], entry["mtime"]
            try:
                with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as f:
                    if os.fstat(f.fileno()).st_size != entry["size"]:
                        raise Busy(f"{entry['path']} changed while exporting; try again")
                    reader = _Hashing(f)
                    tar.addfile(info, reader)
            except FileNotFoundError:
                raise Busy(f"{entry['path']} vanished while exporting; try again") from None
            if reader.h.hexdigest() != entry["sha256"]:
                raise Busy(f"{entry['path']} changed while exporting; try again")
    return manifest


def _check_target(target: str) -> None:
    if os.path.islink(target):
        raise Refused(f"{target}: a symlink; import writes a new home, give a plain path")
    if os.path.exists(target):
        if not os.path.isdir(target):
            raise Refused(f"{target}: exists and is not a directory")
        if os.listdir(target):
            raise Refused(f"{target}: exists and is not empty; import writes a whole home, give a new --into")


def _safe(name: str) -> bool:
    parts = name.split("/")
    # a line break or an escape in a name would split a listing of the home, or act on a terminal
    return bool(name) and not name.startswith("/") and "\\" not in name and name_control_at(name) is None and \
        all(p not in ("", ".", "..") for p in parts) and not _left_out(name)


class _Counted:
    """The compressed archive, counting the bytes read from it."""

    def __init__(self, f):
        self.f, self.n = f, 0

    def read(self, n=-1):
        data = self.f.read(n)
        self.n += len(data)
        return data


def _bomb(out: int, compressed: int) -> DataError:
    return DataError(f"the archive unpacks to over {out} bytes from {compressed} compressed, more than "
                     f"{MAX_RATIO} times: a decompression bomb, not a home (refused; nothing written)")


class _Bounded:
    """The decompressed tar stream, cut off (DataError) once it outgrows MAX_RATIO times the
    compressed bytes read so far; read in chunks, so no single read can ask for a huge buffer."""

    def __init__(self, z, counted: _Counted):
        self.z, self.counted, self.out = z, counted, 0

    def read(self, n=-1):
        parts = []
        while n != 0:
            data = self.z.read(_CHUNK if n < 0 else min(n, _CHUNK))
            if not data:
                break
            self.out += len(data)
            if self.out > MAX_RATIO * self.counted.n + SLACK:
                raise _bomb(self.out, self.counted.n)
            parts.append(data)
            if n > 0:
                n -= len(data)
        return b"".join(parts)


def _manifest(tar) -> tuple[dict, dict, dict]:
    member = tar.next()
    if member is None or member.name != MANIFEST or not member.isfile() or member.size > 64 << 20:
        raise DataError(f"not an anima export: the first member is not {MANIFEST}")
    try:
        manifest = jsontext.loads(tar.extractfile(member).read())
    except ValueError as e:
        raise DataError(f"not an anima export: {MANIFEST} is not valid JSON ({e.msg})") from None
    try:
        if manifest.get("format") != FORMAT:
            raise ValueError("format")
        if manifest.get("version") != VERSION:
            raise DataError(f"export format version {manifest.get('version')!r}: this anima reads {VERSION}")
        dirs = {d["path"]: d for d in manifest["dirs"]}
        files = {f["path"]: f for f in manifest["files"]}
        for path, entry in [*dirs.items(), *files.items()]:
            if not (isinstance(path, str) and _safe(path)):
                raise DataError(f"manifest: {path!r} is not a path an anima home holds")
            if not _whole(entry.get("mode")):
                raise DataError(f"manifest: {path!r} has mode {entry.get('mode')!r}, which is no file mode "
                                "(refused; nothing written)")
            parts = path.split("/")
            inside = next(("/".join(parts[:k]) for k in range(1, len(parts)) if "/".join(parts[:k]) in files), None)
            if inside is not None:
                raise DataError(f"manifest: {path!r} is inside {inside!r}, which it lists as a file")
        for path, entry in files.items():
            if not (isinstance(entry.get("sha256"), str) and _whole(entry.get("size"))):
                raise ValueError("files")
            mtime = entry.get("mtime")  # os.utime takes no 1e300 (nor NaN): a time anima takes, or none
            if mtime is not None and (isinstance(mtime, bool) or not isinstance(mtime, (int, float))
                                      or not clock.EARLIEST <= mtime < clock.LATEST):
                raise DataError(f"manifest: {path!r} has mtime {mtime!r}, which is no time (refused; nothing written)")
    except (ValueError, KeyError, TypeError, AttributeError):
        raise DataError(f"not an anima export: {MANIFEST} is not a manifest") from None
    return manifest, dirs, files


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _fits(files: dict, compressed: int | None, target: str) -> None:
    """Refuse, before anything is written, sizes no home has (65): more than MAX_RATIO times the
    compressed archive (when its length is known), or more than the whole disk beside the target;
    and sizes its free space does not hold (74, as if the disk had filled)."""
    total = sum(entry["size"] for entry in files.values())
    if compressed is not None and total > MAX_RATIO * compressed + SLACK:
        raise _bomb(total, compressed)
    st = os.statvfs(os.path.dirname(target))
    free = st.f_bavail * st.f_frsize
    if total > st.f_blocks * st.f_frsize:  # more than the whole disk: the manifest is what is wrong
        raise DataError(f"the archive unpacks to {total} bytes, more than the disk under {target} holds "
                        "(refused; nothing written)")
    if total > free:
        raise AnimaError(f"{target}: the archive unpacks to {total} bytes, {free} are free there "
                         f"(nothing written): {os.strerror(errno.ENOSPC)}", IOERR)


def _length(source) -> int | None:
    """How many bytes are left to read in `source`, when it is a regular file."""
    try:
        st = os.fstat(source.fileno())
        return st.st_size - source.tell() if stat.S_ISREG(st.st_mode) else None
    except (AttributeError, OSError, ValueError):
        return None


def _unpack(tar, stage: str, target: str, dirs: dict, files: dict) -> None:
    seen = set()
    while (member := tar.next()) is not None:  # iterating would yield the manifest again
        name = member.name
        if name in seen:
            raise DataError(f"{name}: in the archive twice")
        seen.add(name)
        dest = os.path.join(stage, name)
        if member.isdir() and name in dirs:
            os.makedirs(dest, mode=fs.DIR_MODE, exist_ok=True)
            continue
        if not (member.isfile() and name in files):
            raise DataError(f"{name}: in the archive but not in its manifest, or not a plain file or "
                            "directory (refused; nothing written)")
        entry = files[name]
        if member.size != entry["size"]:
            raise DataError(f"{name}: {member.size} bytes, the manifest says {entry['size']} "
                            "(refused; nothing written)")
        os.makedirs(os.path.dirname(dest), mode=fs.DIR_MODE, exist_ok=True)
        h = hashlib.sha256()
        src = tar.extractfile(member)
        # anima's mode, never the archive's: nothing imported can be run or read by others
        try:
            fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, fs.FILE_MODE)
            with open(fd, "wb") as f:
                os.fchmod(fd, fs.FILE_MODE)
                while chunk := src.read(_CHUNK):
                    h.update(chunk)
                    f.write(chunk)
        except OSError as e:  # (a write names no file) the staging copy goes: name the file of the home
            e.filename, e.filename2 = os.path.join(target, name), None
            raise
        if h.hexdigest() != entry["sha256"]:
            raise DataError(f"{name}: its sha256 is not the manifest's (refused; nothing written)")
        mtime = entry.get("mtime")
        if mtime is not None:
            os.utime(dest, (mtime, mtime))
    missing = (set(dirs) | set(files)) - seen
    if missing:
        raise DataError(f"{sorted(missing)[0]}: in the manifest but not in the archive (refused; nothing written)")


def hooks(manifest: dict) -> list[str]:
    """The hooks an imported home holds (hooks/NAME), none of them executable yet."""
    return sorted(f["path"] for f in manifest["files"] if f["path"].startswith("hooks/"))


def _disarm(stage: str, created: str) -> dict:
    """Take every setting that runs a program out of the staged config.toml (left there as a
    comment); return them. What may run is a person's to say, never an archive's."""
    from anima.infra import config
    from anima.infra.errors import ConfigError

    created = "".join(c if c.isprintable() else "?" for c in created)[:40]  # the archive's words, on one line
    try:
        return config.disarm(os.path.join(stage, "config.toml"), "came from an archive\n# (anima import; "
                             f"an export made {created})")
    except (ConfigError, Refused) as e:
        raise DataError(f"{str(e).replace(stage, '', 1).lstrip(os.sep)}; anima import cannot tell what it would "
                        "run (refused; nothing written)") from None


def import_(source, target: str) -> tuple[dict, dict]:
    """Unpack the archive read from the binary file `source` as a new home at `target`,
    verifying everything first; return the manifest and the settings that run a program,
    which arrive disarmed (key -> value)."""
    import zstandard

    target = os.path.abspath(target)
    _check_target(target)
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    compressed = _length(source)
    stage = tempfile.mkdtemp(prefix=".anima-import-", dir=parent)
    try:
        counted = _Counted(source)
        try:
            with zstandard.ZstdDecompressor().stream_reader(counted, closefd=False) as z, \
                    tarfile.open(fileobj=_Bounded(z, counted), mode="r|") as tar:
                manifest, dirs, files = _manifest(tar)
                _fits(files, compressed, target)
                _unpack(tar, stage, target, dirs, files)
        except (tarfile.TarError, zstandard.ZstdError, EOFError, OSError) as e:
            if isinstance(e, OSError) and e.errno is not None:
                raise
            raise DataError(f"not an anima export: {e}") from None
        disarmed = _disarm(stage, str(manifest.get("created")))
        for path in sorted(dirs, key=lambda p: -p.count("/")):
            os.chmod(os.path.join(stage, path), fs.DIR_MODE)
        os.chmod(stage, fs.DIR_MODE)
        _check_target(target)  # it may have appeared meanwhile
        os.rename(stage, target)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return manifest, disarmed
