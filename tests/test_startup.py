"""Startup cost: what a fresh interpreter imports for `import anima.cli`, `--help` and `--version`.

Each check runs in its own `sys.executable` subprocess, so nothing the test process has already
imported can hide an import (SPEC §9: a hot command never pays for jieba, openai or zstandard).
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import anima
from anima.cli import COMMANDS

# Never imported by `import anima.cli`: heavy optional stacks, storage engines, HTTP clients,
# and the parsers that only the commands reading those files need.
NOT_ON_IMPORT = (
    "jieba", "openai", "zstandard", "sqlite3", "yaml", "tomlkit", "tomllib",
    "http.client", "urllib.request", "requests", "httpx", "mcp", "anyio", "pydantic",
)
# Never imported just to print help.
NOT_FOR_HELP = ("yaml", "tomlkit", "sqlite3", "zstandard", "jieba", "openai", "mcp", "anyio")

# Runs `python -m anima ARGS...` exactly as the console would (runpy, run_name="__main__") and,
# at interpreter exit (after click's sys.exit), writes the names in sys.modules to argv[1].
WRAPPER = textwrap.dedent("""\
    import atexit, json, runpy, sys

    out, args = sys.argv[1], sys.argv[2:]

    @atexit.register
    def dump():
        with open(out, "w") as f:
            json.dump(sorted(sys.modules), f)

    sys.argv = ["anima", *args]
    runpy.run_module("anima", run_name="__main__", alter_sys=True)
""")


def fresh_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["LANG"] = "C.UTF-8"
    return env


def loaded(modules, forbidden):
    """The forbidden modules present in `modules`, so a failure names each one."""
    return sorted(m for m in forbidden if m in modules)


def fresh_python(code: str) -> subprocess.CompletedProcess:
    """`python -c CODE` in a fresh interpreter with a clean environment."""
    return subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, env=fresh_env(),
                          timeout=30)


def test_import_cli_stays_light():
    code = "import json, sys; before = set(sys.modules); import anima.cli; " \
           "print(json.dumps(sorted(set(sys.modules) - before)))"
    proc = fresh_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    modules = json.loads(proc.stdout)
    assert "anima.cli" in modules  # the probe really imported it in this interpreter
    assert loaded(modules, NOT_ON_IMPORT) == []


def test_import_cli_loads_no_command_module():
    """The lazy group imports a subcommand's module only when that subcommand runs."""
    code = "import sys, anima.cli; print('\\n'.join(sorted(m for m in sys.modules if m.startswith('anima.'))))"
    proc = fresh_python(code)
    assert proc.returncode == 0, proc.stderr
    commands = [m for m in proc.stdout.split() if m.startswith("anima.commands.")]
    assert commands == []


def run_wrapped(tmp_path, *args):
    script = tmp_path / "wrapper.py"
    script.write_text(WRAPPER)
    dump = tmp_path / "modules.json"
    proc = subprocess.run([sys.executable, str(script), str(dump), *args], check=False, capture_output=True, text=True,
                          env=fresh_env(), timeout=30)
    modules = json.loads(dump.read_text())
    return proc, modules


@pytest.mark.parametrize("args", [["--help"]] + [[name, "--help"] for name in sorted(COMMANDS)],
                         ids=lambda args: " ".join(args))
def test_help_stays_light(tmp_path, args):
    proc, modules = run_wrapped(tmp_path, *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.startswith("Usage: anima " + (args[0] + " " if len(args) > 1 else ""))
    if len(args) > 1:  # the subcommand's module was really loaded to print its help
        assert COMMANDS[args[0]][0].split(":")[0] in modules
    assert loaded(modules, NOT_FOR_HELP) == []


def test_prompt_help_stays_light(tmp_path):
    """Named on its own: `anima prompt` is the command hosts run every turn."""
    proc, modules = run_wrapped(tmp_path, "prompt", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "Print the text a host puts into its system prompt" in proc.stdout
    assert "anima.commands.prompt" in modules
    assert loaded(modules, NOT_FOR_HELP) == []


def test_importtime_of_help_names_no_heavy_module():
    """The same seen by the interpreter itself: `-X importtime` lists every import made."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "anima", "--help"], check=False,
                          capture_output=True, text=True, env=fresh_env(), timeout=30)
    assert proc.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    assert "anima.cli" in imported
    assert loaded(imported, NOT_FOR_HELP) == []


def test_python_m_anima_version():
    proc = subprocess.run([sys.executable, "-m", "anima", "--version"], check=False, capture_output=True, text=True,
                          env=fresh_env(), timeout=30)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"anima {anima.__version__}\n", "")


# Never imported by `anima prompt` served from a warm cache (anima/__main__.py, FAST): click
# and the root group, and what only assembling a prompt needs.
NOT_FOR_A_WARM_PROMPT = ("click", "anima.cli", "anima.infra.config", "anima.infra.text", "importlib.resources",
                         "tomllib", "hashlib", "zlib", *NOT_ON_IMPORT)


def test_a_warm_prompt_imports_no_click(tmp_path, home):
    def anima(*args):
        return subprocess.run([sys.executable, "-m", "anima", *args], capture_output=True, text=True,
                              env=fresh_env(), timeout=30, cwd=tmp_path)

    assert anima("init", "--lang", "en").returncode == 0
    assert anima("note", "add", "I read the tests before the code.").returncode == 0
    past = os.stat(home / "config.toml").st_mtime - 3600
    for dirpath, _, names in os.walk(home):
        for name in names:
            os.utime(os.path.join(dirpath, name), (past, past))
    cold = anima("prompt")
    assert cold.returncode == 0 and "I read the tests before the code." in cold.stdout
    (tmp_path / "wrapper.py").write_text(WRAPPER)
    proc = subprocess.run([sys.executable, str(tmp_path / "wrapper.py"), str(tmp_path / "modules.json"), "prompt"],
                          capture_output=True, text=True, env=fresh_env(), timeout=30, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, cold.stdout, "")
    modules = json.loads((tmp_path / "modules.json").read_text())
    assert "anima.commands.fast" in modules and "anima.notes.heat" in modules  # served, its injection counted
    assert "anima.notes.store" not in modules  # no note is due again within the hour: heat.json is read alone
    assert loaded(modules, NOT_FOR_A_WARM_PROMPT) == []


def test_the_entry_point_imports_no_click():
    """The console script imports anima.__main__ first: click comes only with anima.cli."""
    code = "import json, sys; import anima.__main__; print(json.dumps(sorted(sys.modules)))"
    proc = fresh_python(code)
    assert proc.returncode == 0, proc.stderr
    modules = json.loads(proc.stdout)
    assert "anima.__main__" in modules
    assert loaded(modules, ("click", "anima.cli", "anima.commands.fast", *NOT_ON_IMPORT)) == []
