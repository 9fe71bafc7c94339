import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from anima.cli import cli

VENV_BIN = os.path.dirname(sys.executable)
ANIMA_BIN = shutil.which("anima", path=VENV_BIN) or shutil.which("anima")


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """Every test gets its own ANIMA_HOME and no other ANIMA_* variable."""
    for var in list(os.environ):
        if var.startswith("ANIMA_"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("LANG", "C.UTF-8")
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
