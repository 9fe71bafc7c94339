"""anima export / anima import: the whole self moved as one verified archive."""

import hashlib
import io
import json
import os
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
