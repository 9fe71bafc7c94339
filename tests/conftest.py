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
