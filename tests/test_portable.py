"""anima export / anima import: the whole self moved as one verified archive."""

import hashlib
import io
import json
import os
import shlex
import shutil
import stat
import subprocess
import tarfile

import pytest
import zstandard

from conftest import snapshot

SECRET_LINE = "I keep a lighthouse log for Marguerite"


def make_home(run):
    assert run("init").exit_code == 0
    assert run("note", "add", "I answer better when I slow down before replying.").exit_code == 0
    assert run("self", "set", "direction", input="I want to learn to sail.\n").exit_code == 0
    assert run("think", SECRET_LINE).exit_code == 0
    assert run("session", "append", "--session", "s1", "--role", "user", "I live in Lisbon now.").exit_code == 0
    assert run("say", "--speaker", "alice", "hello there").exit_code == 0


def tree(root) -> dict:
    """path -> (bytes, mode) of everything an export carries; dirs -> mode."""
    out = {}
    for dirpath, dirnames, names in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d not in ("cache", "index", ".git")]
        for d in dirnames:
            out[os.path.normpath(os.path.join(rel_dir, d)) + "/"] = stat.S_IMODE(os.lstat(os.path.join(dirpath, d)).st_mode)
        for name in names:
            if name.startswith(".") and name.endswith((".lock", ".tmp")):
                continue
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.normpath(os.path.join(rel_dir, name))] = (f.read(), stat.S_IMODE(os.stat(path).st_mode),
                                                                       os.stat(path).st_mtime)
    return out


def unpacked(archive: bytes) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(archive)).read()
    members = []
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
        for m in tar.getmembers():
            members.append((m, tar.extractfile(m).read() if m.isfile() else None))
    return members


def repacked(members) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for m, data in members:
            tar.addfile(m, io.BytesIO(data) if data is not None else None)
    return zstandard.ZstdCompressor().compress(buf.getvalue())


def test_round_trip_is_byte_identical(run, home, tmp_path):
    make_home(run)
    archive = tmp_path / "self.tar.zst"
    r = run("export", str(archive))
    assert r.exit_code == 0, r.stderr
    assert r.stdout == ""
    new = tmp_path / "moved"
    r = run("import", str(archive), "--into", str(new))
    assert r.exit_code == 0, r.stderr
    assert tree(new) == tree(home)
    assert stat.S_IMODE(os.stat(new).st_mode) == 0o700
    # the moved self works: it tells the same prompt
    a = run("prompt", env={"ANIMA_HOME": str(home)}).stdout
    b = run("prompt", env={"ANIMA_HOME": str(new)}).stdout
    assert a == b and "sail" in a


def test_manifest_first_lists_every_file_with_its_hash(run, home, tmp_path):
    make_home(run)
    (home / "cache" / "junk").write_text("derived")
    archive = tmp_path / "a.tar.zst"
    assert run("export", str(archive)).exit_code == 0
    members = unpacked(archive.read_bytes())
    assert members[0][0].name == "MANIFEST.json"
    manifest = json.loads(members[0][1])
    files = {f["path"]: f for f in manifest["files"]}
    import hashlib

    for m, data in members[1:]:
        if m.isfile():
            assert hashlib.sha256(data).hexdigest() == files[m.name]["sha256"]
    names = {m.name for m, _ in members}
    assert "self/stream/now.md" in names and "notes/notes.md" in names
    assert not any(n.startswith(("cache/", "index/")) or n in ("cache", "index") for n in names)
    assert not any(os.path.basename(n).endswith(".lock") for n in names)


def test_real_pipe_between_two_processes(run, home, tmp_path, anima_bin):
    make_home(run)
    new = tmp_path / "piped"
    p = subprocess.run(f"'{anima_bin}' export | '{anima_bin}' import --into '{new}' -", shell=True,
                       capture_output=True, text=True, env={**os.environ, "ANIMA_HOME": str(home)})
    assert p.returncode == 0, p.stderr
    assert tree(new) == tree(home)


def _refused(run, tmp_path, archive: bytes, expect: str, code: int = 65):
    bad = tmp_path / "bad.tar.zst"
    bad.write_bytes(archive)
    target = tmp_path / "target"
    before = sorted(os.listdir(tmp_path))
    r = run("import", str(bad), "--into", str(target))
    assert r.exit_code == code, (r.stdout, r.stderr)
    assert expect in r.stderr and r.stderr.count("\n") == 1
    assert not target.exists()
    assert sorted(os.listdir(tmp_path)) == before  # no staging directory left behind


def test_tampered_content_is_refused_and_nothing_written(run, home, tmp_path):
    make_home(run)
    archive = tmp_path / "a.tar.zst"
    assert run("export", str(archive)).exit_code == 0
    members = unpacked(archive.read_bytes())
    changed = [(m, d.replace(b"lighthouse", b"lighthoose") if d else d) for m, d in members]
    assert changed != members
    _refused(run, tmp_path, repacked(changed), "sha256")


def test_extra_member_missing_member_and_escaping_path_are_refused(run, home, tmp_path):
    make_home(run)
    archive = tmp_path / "a.tar.zst"
    assert run("export", str(archive)).exit_code == 0
    members = unpacked(archive.read_bytes())
    extra = tarfile.TarInfo("notes/evil.md")
    extra.size = 4
    _refused(run, tmp_path, repacked([*members, (extra, b"evil")]), "not in its manifest")
    dropped = [(m, d) for m, d in members if m.name != "notes/notes.md"]
    _refused(run, tmp_path, repacked(dropped), "not in the archive")
    manifest = json.loads(members[0][1])
    manifest["files"].append({"path": "../escape", "sha256": "0" * 64, "size": 1, "mode": 0o600})
    data = json.dumps(manifest).encode()
    head = tarfile.TarInfo("MANIFEST.json")
    head.size = len(data)
    _refused(run, tmp_path, repacked([(head, data), *members[1:]]), "not a path an anima home holds")


@pytest.mark.parametrize("payload", [b"", b"not an archive at all", zstandard.ZstdCompressor().compress(b"x" * 1000)])
def test_not_an_export(run, tmp_path, payload):
    _refused(run, tmp_path, payload, "not an anima export")


def test_import_refuses_a_home_that_is_not_empty(run, home, tmp_path):
    make_home(run)
    archive = tmp_path / "a.tar.zst"
    assert run("export", str(archive)).exit_code == 0
    before = snapshot(home)
    r = run("import", str(archive))  # into the home itself
    assert r.exit_code == 77 and "not empty" in r.stderr
    assert snapshot(home) == before
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run("import", str(archive), "--into", str(empty)).exit_code == 0
    assert (empty / "self" / "stream" / "now.md").read_text().count(SECRET_LINE) == 1


def test_import_of_a_missing_file_is_a_usage_error(run, tmp_path):
    r = run("import", str(tmp_path / "nope.tar.zst"), "--into", str(tmp_path / "x"))
    assert r.exit_code == 2 and "No such file" in r.stderr
    assert not (tmp_path / "x").exists()


def test_export_to_a_directory_is_a_usage_error_and_leaves_nothing(run, home, tmp_path):
    make_home(run)
    target = tmp_path / "backups"
    target.mkdir()
    r = run("export", str(target))
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == f"anima: {target}: is a directory; give the archive's file name\n"
    assert os.listdir(target) == [] and not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_a_manifest_with_a_path_inside_a_file_is_refused(run, home, tmp_path):
    make_home(run)
    archive = tmp_path / "a.tar.zst"
    assert run("export", str(archive)).exit_code == 0
    members = unpacked(archive.read_bytes())
    manifest = json.loads(members[0][1])
    inner = tarfile.TarInfo("notes/notes.md/x")
    inner.size = 1
    manifest["files"].append({"path": inner.name, "sha256": hashlib.sha256(b"x").hexdigest(), "size": 1,
                              "mode": 0o600})
    data = json.dumps(manifest).encode()
    head = tarfile.TarInfo("MANIFEST.json")
    head.size = len(data)
    _refused(run, tmp_path, repacked([(head, data), *members[1:], (inner, b"x")]),
             "'notes/notes.md/x' is inside 'notes/notes.md', which it lists as a file")


# --- nothing smuggled in: no executable, no mode, no link, no bomb ------------------------

def _import_bin(anima_bin, tmp_path, archive: bytes, pipe: bool = False):
    """`anima import` of `archive` in a real process (from a file, or a pipe of unknown length)
    into tmp_path/target; (the process, the target, tmp_path's names before)."""
    bad = tmp_path / "in.tar.zst"
    bad.write_bytes(archive)
    target = tmp_path / "target"
    before = sorted(os.listdir(tmp_path))
    if pipe:
        p = subprocess.run(f"cat '{bad}' | '{anima_bin}' import --into '{target}' -", shell=True,
                           capture_output=True, text=True, timeout=300)
    else:
        p = subprocess.run([anima_bin, "import", str(bad), "--into", str(target)], capture_output=True, text=True,
                           timeout=300)
    return p, target, before


def _refused_bin(anima_bin, tmp_path, archive: bytes, expect: str, pipe: bool = False):
    p, target, before = _import_bin(anima_bin, tmp_path, archive, pipe)
    assert (p.returncode, p.stdout) == (65, ""), p.stderr
    assert expect in p.stderr and p.stderr.count("\n") == 1 and p.stderr.startswith("anima: "), p.stderr
    assert not target.exists()
    assert sorted(os.listdir(tmp_path)) == before  # no staging directory left behind
    return p.stderr


def _with_manifest(members, change) -> bytes:
    manifest = json.loads(members[0][1])
    change(manifest)
    data = json.dumps(manifest).encode()
    head = tarfile.TarInfo("MANIFEST.json")
    head.size = len(data)
    return repacked([(head, data), *members[1:]])


def test_import_brings_no_executable_code_and_no_modes(run, home, tmp_path, anima_bin):
    make_home(run)
    hooks = home / "hooks"
    hooks.mkdir()
    witness = tmp_path / "ran"
    (hooks / "ping").write_text(f"#!/bin/sh\necho ran > '{witness}'\n")
    (hooks / "ping").chmod(0o755)
    (home / "notes" / "notes.md").chmod(0o666)
    (home / "self" / "memories").chmod(0o777)
    archive = tmp_path / "a.tar.zst"
    assert run("export", str(archive)).exit_code == 0
    members = unpacked(archive.read_bytes())
    assert {m.name: m.mode for m, _ in members}["hooks/ping"] == 0o755  # the archive says so...
    p, new, _ = _import_bin(anima_bin, tmp_path, archive.read_bytes())
    assert (p.returncode, p.stdout) == (0, "")
    assert p.stderr == (f"anima: hooks/ping: arrived not executable; dispatch runs it once a person enables it: "
                        f"chmod +x {new / 'hooks' / 'ping'}\n")
    for dirpath, _, names in os.walk(new):  # ...but every mode is anima's own
        assert stat.S_IMODE(os.lstat(dirpath).st_mode) == 0o700, dirpath
        for name in names:
            assert stat.S_IMODE(os.lstat(os.path.join(dirpath, name)).st_mode) == 0o600, name
    # dispatch does not run it until a person says so
    from anima.infra.home import Home
    from anima.pipeline import dispatch, queues

    env = {**os.environ, "ANIMA_HOME": str(new)}
    queues.Queue(Home(str(new)), "action").deliver(dispatch.action("ping", {}, 0, "trace_t"))
    assert subprocess.run([anima_bin, "dispatch"], env=env).returncode == 0
    assert not witness.exists()
    (new / "hooks" / "ping").chmod(0o700)
    queues.Queue(Home(str(new)), "action").deliver(dispatch.action("ping", {}, 0, "trace_u"))
    assert subprocess.run([anima_bin, "dispatch"], env=env).returncode == 0
    assert witness.read_text() == "ran\n"


def test_modes_an_archive_claims_are_not_kept(run, home, tmp_path, anima_bin):
    make_home(run)
    archive = tmp_path / "a.tar.zst"
    assert run("export", str(archive)).exit_code == 0
    members = unpacked(archive.read_bytes())
    for m, _ in members[1:]:
        m.mode = 0o6777  # setuid, setgid, everyone's

    def everyone(manifest):
        for entry in manifest["dirs"] + manifest["files"]:
            entry["mode"] = 0o6777

    p, new, _ = _import_bin(anima_bin, tmp_path, _with_manifest(members, everyone))
    assert (p.returncode, p.stderr) == (0, "")
    modes = {stat.S_IMODE(os.lstat(os.path.join(d, n)).st_mode) for d, ds, ns in os.walk(new) for n in ds + ns}
    assert modes == {0o600, 0o700}


class Zeros(io.RawIOBase):
    def __init__(self, n):
        self.left = n

    def readable(self):
        return True

    def readinto(self, b):
        n = min(len(b), self.left)
        b[:n] = bytes(n)
        self.left -= n
        return n


def bomb(size: int) -> bytes:
    """A whole, honest archive (its manifest true to every byte) holding a file of `size` zeros,
    made without holding it in memory."""
    h = hashlib.sha256()
    zeros = bytes(1 << 20)
    for _ in range(size >> 20):
        h.update(zeros)
    manifest = json.dumps({"format": "anima-export", "version": 1, "created": "2026-11-30T21:05:00Z",
                           "anima": "0", "dirs": [{"path": "notes", "mode": 0o700}],
                           "files": [{"path": "notes/notes.md", "sha256": h.hexdigest(), "size": size,
                                      "mode": 0o600, "mtime": 0}]}).encode()
    out = io.BytesIO()
    with zstandard.ZstdCompressor().stream_writer(out, closefd=False) as z, \
            tarfile.open(fileobj=z, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for name, data in (("MANIFEST.json", manifest),):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        d = tarfile.TarInfo("notes")
        d.type = tarfile.DIRTYPE
        tar.addfile(d)
        info = tarfile.TarInfo("notes/notes.md")
        info.size = size
        tar.addfile(info, Zeros(size))
    return out.getvalue()


def test_a_decompression_bomb_is_refused_before_anything_lands(tmp_path, anima_bin):
    small = bomb(1 << 20)  # the same archive with 1 MiB: a home may well hold that
    p, target, _ = _import_bin(anima_bin, tmp_path, small)
    assert p.returncode == 0, p.stderr
    shutil.rmtree(target)
    archive = bomb(256 << 20)
    assert len(archive) < 1 << 20  # 256 MiB from next to nothing
    _refused_bin(anima_bin, tmp_path, archive, f"unpacks to over {256 << 20} bytes from {len(archive)} compressed")


def test_a_bomb_on_a_pipe_is_cut_off_as_it_grows(tmp_path, anima_bin):
    # a pipe's length is unknown, and a tar header is read whole before any member: a 96 MiB one
    info = tarfile.TarInfo("MANIFEST.json")
    info.pax_headers = {"comment": "a" * (96 << 20)}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(info, io.BytesIO(b""))
    archive = zstandard.ZstdCompressor().compress(buf.getvalue())
    message = _refused_bin(anima_bin, tmp_path, archive, "a decompression bomb, not a home", pipe=True)
    assert int(message.split("unpacks to over ")[1].split()[0]) < 80 << 20  # cut off well before its end


def test_sizes_no_disk_holds_are_refused_from_a_pipe_too(run, home, tmp_path, anima_bin):
    make_home(run)
    archive = tmp_path / "a.tar.zst"
    assert run("export", str(archive)).exit_code == 0
    members = unpacked(archive.read_bytes())

    def huge(manifest):
        manifest["files"][0]["size"] = 1 << 62

    message = _refused_bin(anima_bin, tmp_path, _with_manifest(members, huge),
                           f"bytes, more than the disk under {tmp_path}/target holds", pipe=True)
    assert int(message.split("unpacks to ")[1].split()[0]) > 1 << 62


@pytest.mark.parametrize("key, value, expect", [
    ("mtime", 1e300, "which is no time"),
    ("mtime", float("nan"), "MANIFEST.json is not valid JSON (NaN is not JSON)"),
    ("mtime", -1, "which is no time"),
    ("mtime", "yesterday", "which is no time"),
    ("mtime", True, "which is no time"),
    ("size", 1e300, "is not a manifest"),
    ("size", -1, "is not a manifest"),
    ("size", True, "is not a manifest"),
    ("mode", 1e300, "has mode 1e+300, which is no file mode"),
    ("mode", float("nan"), "MANIFEST.json is not valid JSON (NaN is not JSON)"),
    ("mode", "rwx", "has mode 'rwx', which is no file mode"),
    ("mode", -1, "has mode -1, which is no file mode"),
])
def test_an_absurd_manifest_value_is_bad_data(run, home, tmp_path, anima_bin, key, value, expect):
    make_home(run)
    archive = tmp_path / "a.tar.zst"
    assert run("export", str(archive)).exit_code == 0
    members = unpacked(archive.read_bytes())

    def absurd(manifest):
        manifest["files"][0][key] = value

    _refused_bin(anima_bin, tmp_path, _with_manifest(members, absurd), expect)


def test_a_manifest_nested_deep_is_bad_data_not_a_crash(run, home, tmp_path, anima_bin):
    make_home(run)
    archive = tmp_path / "a.tar.zst"
    assert run("export", str(archive)).exit_code == 0
    members = unpacked(archive.read_bytes())
    data = b'{"format": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    head = tarfile.TarInfo("MANIFEST.json")
    head.size = len(data)
    message = _refused_bin(anima_bin, tmp_path, repacked([(head, data), *members[1:]]),
                           "MANIFEST.json is not valid JSON (nested deeper than 100 levels)")
    assert message == "anima: not an anima export: MANIFEST.json is not valid JSON (nested deeper than 100 levels)\n"


@pytest.mark.parametrize("name", ["notes/a\nb.md", "notes/a\rb.md", "notes/a\x1b[31mb.md", "notes/a\x00b.md",
                                  "notes/a\x85b.md", "notes/a\u2028b.md", "notes/a\tb.md"])
def test_a_name_with_a_control_character_or_a_line_break_is_refused(run, home, tmp_path, anima_bin, name):
    make_home(run)
    archive = tmp_path / "a.tar.zst"
    assert run("export", str(archive)).exit_code == 0
    members = unpacked(archive.read_bytes())
    i = next(i for i, (m, _) in enumerate(members) if m.name == "notes/notes.md")
    members[i][0].name = name

    def rename(manifest):
        next(f for f in manifest["files"] if f["path"] == "notes/notes.md")["path"] = name

    _refused_bin(anima_bin, tmp_path, _with_manifest(members, rename),
                 f"manifest: {name!r} is not a path an anima home holds")


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "chardev", "blockdev", "fifo", "dotdot", "absolute"])
def test_no_member_is_a_link_a_device_or_leads_outside(run, home, tmp_path, anima_bin, kind):
    make_home(run)
    archive = tmp_path / "a.tar.zst"
    assert run("export", str(archive)).exit_code == 0
    members = unpacked(archive.read_bytes())
    i, (m, _) = next((i, x) for i, x in enumerate(members) if x[0].name == "notes/notes.md")
    odd = tarfile.TarInfo("notes/notes.md")
    if kind in ("dotdot", "absolute"):
        odd.name = "../notes.md" if kind == "dotdot" else str(tmp_path / "notes.md")
        odd.size = m.size
        members.insert(i + 1, (odd, members[i][1]))
    else:
        odd.type = {"symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE, "chardev": tarfile.CHRTYPE,
                    "blockdev": tarfile.BLKTYPE, "fifo": tarfile.FIFOTYPE}[kind]
        odd.linkname = "/etc/passwd" if kind in ("symlink", "hardlink") else ""
        odd.devmajor, odd.devminor = 1, 3
        members[i] = (odd, None)
    _refused_bin(anima_bin, tmp_path, repacked(members), "not in its manifest, or not a plain file or directory")
    assert not (tmp_path / "notes.md").exists()


# Each way TOML can spell the settings that run a program; `anima import` must take them all out.
RUNNING_LAYOUTS = {
    "tables": '[dispatch.commands]\nreply = ["/bin/sh", "-c", "touch {w}"]\n[llm]\nbackend = "cmd:/bin/sh -c \'touch {w}\'"\n',
    "inline": 'dispatch = {{commands = {{reply = ["/bin/sh", "-c", "touch {w}"]}}}}\n'
              'llm = {{backend = "cmd:/bin/sh -c \'touch {w}\'"}}\n',
    "dotted": 'dispatch.commands.reply = ["/bin/sh", "-c", "touch {w}"]\n'
              'llm.backend = "cmd:/bin/sh -c \'touch {w}\'"\n',
    "a line break": '[dispatch]\ncommands = {{reply = ["/bin/sh", "-c", "touch {w}\\n[x]"]}}\n'
                    '[llm]\nbackend = "cmd:/bin/sh -c \'touch {w}\'\\n[dispatch.commands]\\nreply = [\\"/bin/sh\\"]"\n',
}


@pytest.mark.parametrize("layout", sorted(RUNNING_LAYOUTS))
def test_import_brings_no_setting_that_runs_a_program(run, home, tmp_path, anima_bin, layout):
    """Every setting of the schema that names a program (Setting.runs) arrives as a comment,
    listed on stderr with the command that enables it; until then dispatch and internalize run
    nothing of the archive's."""
    from anima.infra import config

    assert {k for k, s in config.SETTINGS.items() if s.runs} == {"dispatch.commands", "llm.backend"}
    make_home(run)
    witness = tmp_path / "ran"
    (home / "config.toml").write_text(RUNNING_LAYOUTS[layout].format(w=witness))
    archive = tmp_path / "a.tar.zst"
    assert run("export", str(archive)).exit_code == 0
    p, new, _ = _import_bin(anima_bin, tmp_path, archive.read_bytes())
    assert (p.returncode, p.stdout) == (0, "")
    values = config.running(config._flatten(__import__("tomllib").loads((home / "config.toml").read_text())))
    lines = []
    for key, value in values.items():
        shown = config.show_value(value, key)
        enable = f"anima --home {new} config set {key} {shlex.quote(shown)}" if shown.isprintable() \
            else "set it by hand, if at all"
        lines.append(f"anima: config.toml: {key} runs a program and arrived disarmed (a comment at the end of "
                     f"config.toml); to enable it: {enable}\n")
    assert p.stderr == "".join(lines) and len(lines) == 2
    text = (new / "config.toml").read_text()
    assert config.running(config._flatten(__import__("tomllib").loads(text))) == {}
    assert "# Disarmed, as they run programs and came from an archive\n# (anima import; an export made " in text
    env = {**os.environ, "ANIMA_HOME": str(new)}
    from anima.infra.home import Home
    from anima.pipeline import dispatch, queues

    queues.Queue(Home(str(new)), "action").deliver(dispatch.action("reply", {"text": "hi"}, 0, "trace_t"))
    r = subprocess.run([anima_bin, "dispatch"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([anima_bin, "internalize"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert not witness.exists()
    if layout != "a line break":  # a person who reads it and agrees: the printed command arms it
        enable = p.stderr.splitlines()[0].split("to enable it: ", 1)[1]
        path = os.path.dirname(anima_bin) + os.pathsep + env.get("PATH", "")
        assert subprocess.run(enable, shell=True, env={**env, "PATH": path}).returncode == 0
        queues.Queue(Home(str(new)), "action").deliver(dispatch.action("reply", {"text": "hi"}, 0, "trace_u"))
        assert subprocess.run([anima_bin, "dispatch"], env=env).returncode == 0
        assert witness.exists()


def test_import_refuses_a_config_it_cannot_read(run, home, tmp_path, anima_bin):
    make_home(run)
    (home / "config.toml").write_text('[dispatch.commands]\nreply = ["/bin/sh"\n')
    archive = tmp_path / "a.tar.zst"
    assert run("export", str(archive)).exit_code == 0
    p, new, before = _import_bin(anima_bin, tmp_path, archive.read_bytes())
    assert (p.returncode, p.stdout) == (65, "")
    assert p.stderr.startswith("anima: config.toml: not valid TOML: ")
    assert p.stderr.endswith("; anima import cannot tell what it would run (refused; nothing written)\n")
    assert not new.exists() and sorted(os.listdir(tmp_path)) == before
