import calendar
import os
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from anima.cli import cli

VENV_BIN = os.path.dirname(sys.executable)
ANIMA_BIN = shutil.which("anima", path=VENV_BIN) or shutil.which("anima")


# The moment every test lives at, unless it says otherwise: a test reads the same dates on
# any day it runs (a test that needs the real clock is marked real_clock).
NOW = "2026-11-30T21:05:00Z"


NOW_TS = float(calendar.timegm(time.strptime(NOW, "%Y-%m-%dT%H:%M:%SZ")))  # NOW in seconds since the epoch


def after_now(seconds: float) -> str:
    """The RFC 3339 time `seconds` after NOW."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW_TS + seconds))


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch, request):
    """Every test gets its own ANIMA_HOME, ANIMA_NOW fixed, and no other ANIMA_* variable."""
    for var in list(os.environ):
        if var.startswith("ANIMA_"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("LANG", "C.UTF-8")
    if request.node.get_closest_marker("real_clock") is None:
        monkeypatch.setenv("ANIMA_NOW", NOW)
    root = tmp_path / "home"
    monkeypatch.setenv("ANIMA_HOME", str(root))
    return root


class Run:
    def __init__(self):
        self.runner = CliRunner()

    def __call__(self, *args, input=None, env=None):
        return self.runner.invoke(cli, list(args), input=input, env=env, catch_exceptions=False,
                                  prog_name="anima")


@pytest.fixture
def utc(monkeypatch):
    """The local time zone is UTC (for what anima reads in local time)."""
    import time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.delenv("TZ")
    time.tzset()


@pytest.fixture
def run():
    """Invoke the CLI in-process: result.exit_code, result.stdout, result.stderr."""
    return Run()


@pytest.fixture
def anima_bin():
    """The installed `anima` console script."""
    assert ANIMA_BIN, "the anima console script is not installed (run `make test`)"
    return ANIMA_BIN


def snapshot(root) -> dict:
    """Every file under `root` (path -> bytes), to prove a refused command changed nothing.

    cache/ is left out: it is derived, and any command may fill it (deleting it loses nothing).
    """
    files = {}
    for dirpath, dirnames, names in os.walk(root):
        if dirpath == str(root) and "cache" in dirnames:
            dirnames.remove("cache")
        for name in names:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                with open(path, "rb") as f:
                    files[os.path.relpath(path, root)] = f.read()
    return files


def unwoken(home) -> None:
    """Take back what `anima init` writes of her: the first entry in now.md (her waking up, and
    its record) and her first state, for a test that reads now.md from the first event it
    sends on (tests/test_init.py tests them)."""
    for rel in ("self/stream/now.md", "pipeline/stream.jsonl", "self/state.md"):
        path = os.path.join(str(home), rel)
        if os.path.exists(path):
            os.remove(path)


def kill_after(argv: list, env: dict, seconds: float) -> bool:
    """Run `argv`, SIGKILL it `seconds` later; whether it was still running when killed."""
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(seconds)
    p.send_signal(signal.SIGKILL)
    return p.wait() == -signal.SIGKILL


def kill_when(argv: list, env: dict, path, then: float = 0.0) -> bool:
    """Run `argv`, SIGKILL it `then` seconds after `path` exists (or once it has ended);
    whether it was still running when killed."""
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not os.path.exists(path) and p.poll() is None:
        time.sleep(0.0002)
    time.sleep(then)
    p.send_signal(signal.SIGKILL)
    return p.wait() == -signal.SIGKILL


def wait_until(condition, timeout: float = 30.0, what: str = "the condition"):
    """Poll `condition` until it returns something true, and return that; fail after `timeout`
    seconds (a bound on a hang, not a measure of speed)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def wchan(pid: int) -> str:
    """What process `pid` is blocked in (the kernel's wait channel), "" once it is gone."""
    try:
        with open(f"/proc/{pid}/wchan") as f:
            return f.read()
    except OSError:
        return ""


def act(home, command, params, trace="trace_t1", now=NOW_TS) -> str:
    """Queue the action `command` for anima dispatch, as externalize does; its file name."""
    from anima.infra.home import Home
    from anima.pipeline import dispatch, queues

    return queues.Queue(Home(str(home)), "action").deliver(dispatch.action(command, params, now, trace))


def by_hand(obj: dict, when: str) -> str:
    """Put the event `obj` into inbox/pending as a host may by hand (maildir), without `anima
    say` and its checks (a control character, say); its file name."""
    from anima.infra import clock
    from anima.infra.home import Home
    from anima.pipeline import queues

    payload = {k: v for k, v in obj.items() if k != "source_type"}
    doc = queues.envelope(obj.get("source_type", "message"), "say", payload, "event", now=clock.parse(when, "when"))
    return queues.Queue(Home(os.environ["ANIMA_HOME"]), "pending").deliver(doc)


def write_hook(home, name, body):
    """An executable hooks/NAME with `body`."""
    hooks = home / "hooks"
    hooks.mkdir(exist_ok=True)
    path = hooks / name
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def file_time(offset: float = 0.0) -> float:
    """Now by the clock that stamps files (anima.infra.clock.files_now_ns), plus `offset` seconds:
    an mtime to give a file that is `-offset` seconds old, whatever the process clock says."""
    from anima.infra import clock

    return clock.files_now_ns() / 1e9 + offset


def endless_stdin(argv: list, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `argv` with yes(1) on its stdin: a command that reads all of its input never ends,
    and the timeout fails the test."""
    feeder = subprocess.Popen(["yes", "I"], stdout=subprocess.PIPE)
    try:
        return subprocess.run(argv, stdin=feeder.stdout, capture_output=True, text=True, env=env, timeout=60)
    finally:
        feeder.kill()
        feeder.wait()


def interruptible():
    """preexec_fn for a child that must take Ctrl-C: SIGINT back to its default, which a
    runner started in the background (SIGINT ignored) would otherwise pass on."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _as_root(*argv) -> bool:
    """Run a mount(8)-like command; whether it worked (root with CAP_SYS_ADMIN)."""
    return os.geteuid() == 0 and subprocess.run(argv, capture_output=True).returncode == 0


class ReadOnly:
    """A directory made read-only for real, the way a user meets it: a read-only bind mount of
    it over itself when the tests run as root (root ignores mode bits: CI), else its mode bits
    (an ordinary user is bound by them). `how` says which; `undo()` restores it."""

    def __init__(self, path):
        self.path = str(path)
        if _as_root("mount", "--bind", self.path, self.path):
            if not _as_root("mount", "-o", "remount,bind,ro", self.path):
                subprocess.run(["umount", self.path], check=True)
                raise AssertionError(f"cannot remount {self.path} read-only")
            self.how = "a read-only bind mount"
        else:
            assert os.geteuid() != 0, "root without mount(8): no real way to make a read-only home here"
            subprocess.run(["chmod", "-R", "a-w", self.path], check=True)
            self.how = "mode bits (a-w)"

    def undo(self):
        if self.how is None:
            return
        if self.how.startswith("a read-only bind mount"):
            subprocess.run(["umount", self.path], check=True)
        else:
            subprocess.run(["chmod", "-R", "u+w", self.path], check=True)
        self.how = None


@pytest.fixture
def read_only():
    """read_only(path) makes `path` read-only until the test ends."""
    made = []

    def make(path):
        made.append(ReadOnly(path))
        return made[-1]

    yield make
    for r in reversed(made):
        r.undo()


class FullDisk:
    """A home on a disk that fills for real: a small tmpfs mounted at `mount`, the home in it,
    when the tests run as root (CI). An ordinary user cannot mount one: the commands then run
    with RLIMIT_FSIZE (`limit`, 0 once full), so a write past it fails with EFBIG as a full
    disk's fails with ENOSPC, a real refusal by the kernel either way. `how` says which; run
    commands with `preexec_fn=disk.preexec`."""

    SIZE = "8m"

    def __init__(self, mount):
        self.mount = str(mount)
        os.makedirs(self.mount, exist_ok=True)
        self.mounted = _as_root("mount", "-t", "tmpfs", "-o", f"size={self.SIZE},mode=0700", "tmpfs", self.mount)
        assert self.mounted or os.geteuid() != 0, "root without mount(8): no real way to fill a disk here"
        self.how = "a full tmpfs" if self.mounted else "RLIMIT_FSIZE in the child"
        self.home = os.path.join(self.mount, "home")
        self.limit = None

    def fill(self):
        """Fill the disk: no block left on the tmpfs (the last page of a file may still have
        room, as on any disk), or, without one, no byte may be written at all."""
        if self.mounted:
            with open(os.path.join(self.mount, "filler"), "wb", buffering=0) as f:
                try:
                    while True:
                        f.write(b"\0" * 65536)
                except OSError:  # ENOSPC: full
                    pass
        else:
            self.limit = 0

    def preexec(self):
        if self.limit is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_FSIZE, (self.limit, self.limit))

    def close(self):
        if self.mounted:
            subprocess.run(["umount", "-l", self.mount], check=True)


@pytest.fixture
def full_disk(tmp_path, monkeypatch):
    """A FullDisk whose home is ANIMA_HOME for the test (not filled yet: call fill())."""
    disk = FullDisk(tmp_path / "disk")
    monkeypatch.setenv("ANIMA_HOME", disk.home)
    yield disk
    disk.close()
