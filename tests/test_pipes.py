"""Transcript tests: the installed `anima` in real bash pipelines, as a user or cron runs it.

Every command line here is run by /bin/bash with the environment the autouse `home` fixture
prepared (ANIMA_HOME in a temp dir, no other ANIMA_* variable).
"""

import os
import subprocess
import sys

import pytest

import anima

from conftest import snapshot


def sh(command, env=None, cwd=None, timeout=30):
    return subprocess.run(command, shell=True, executable="/bin/bash", check=False, capture_output=True, text=True,
                          env=env if env is not None else dict(os.environ), cwd=cwd, timeout=timeout)


def q(path) -> str:
    """A path quoted for the shell."""
    return "'" + str(path).replace("'", "'\\''") + "'"


def test_init_then_self_get_into_head(anima_bin, home):
    a = q(anima_bin)
    proc = sh(f"{a} init --lang en && {a} self get | head -1")
    assert proc.returncode == 0
    assert proc.stdout == "# Existence anchor (existence_anchor)\n"
    assert proc.stderr == f"anima: initialised {home} (en): 29 files and directories created\n"


def test_self_set_from_redirected_file(anima_bin, home, tmp_path):
    a = q(anima_bin)
    assert sh(f"{a} init --lang en").returncode == 0
    content = ("I want to keep plain files honest.\n\n"
               "- Focus: 专注于当下的一件事。\n- Growth: listen first.  \n\n\n")
    body = tmp_path / "direction.md"
    body.write_text(content, encoding="utf-8")

    proc = sh(f"{a} self set direction < {q(body)}")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")

    proc = sh(f"{a} self get direction")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == content.rstrip() + "\n"
    # The old starter body went to history as revision 1.
    assert sorted(os.listdir(home / "self" / "blocks" / ".history" / "direction")) == ["1.md"]


def test_self_set_from_cat_pipe(anima_bin, home):
    a = q(anima_bin)
    proc = sh(f"printf 'I am a small tool.\\nI keep my word.\\n' | {a} self set self_model && {a} self get self_model")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "I am a small tool.\nI keep my word.\n", "")


def test_prompt_into_head(anima_bin, home):
    a = q(anima_bin)
    assert sh(f"{a} init --lang en").returncode == 0
    proc = sh(f"set +o pipefail; {a} prompt | head -1")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "## Self layer\n", "")


def test_long_prompt_into_head_prints_no_traceback(anima_bin, home, tmp_path):
    """Far more output than a pipe holds: anima meets a closed pipe mid-write and must stay quiet."""
    a = q(anima_bin)
    assert sh(f"{a} init --lang en && {a} config set prompt.project_max_chars 1000000").returncode == 0
    project = tmp_path / "project"
    project.mkdir()
    (project / "AGENTS.md").write_text("".join(f"line {i} " + "x" * 100 + "\n" for i in range(8000)))
    full = sh(f"{a} prompt", cwd=project)
    assert full.returncode == 0
    assert len(full.stdout) > 800_000  # the whole file is printed: far beyond a 64 KiB pipe buffer

    for _ in range(3):  # the prompt is assembled the first time and cached after: both paths
        proc = sh(f"set +o pipefail; {a} prompt | head -1; echo \"status ${{PIPESTATUS[*]}}\"", cwd=project)
        lines = proc.stdout.splitlines()
        assert lines[0] == "## Self layer"
        assert lines[1].split()[-1] == "0"  # head's status
        assert "Traceback" not in proc.stderr
        assert "BrokenPipeError" not in proc.stderr
        assert "Exception ignored" not in proc.stderr
        assert proc.stderr == ""


def test_empty_stdin_is_refused_and_changes_nothing(anima_bin, home):
    a = q(anima_bin)
    assert sh(f"{a} init --lang en").returncode == 0
    before = snapshot(home)
    proc = sh(f"{a} self set self_model < /dev/null")
    assert (proc.returncode, proc.stdout, proc.stderr) == (77, "", "anima: self_model: refusing an empty body\n")
    assert snapshot(home) == before


def test_blank_stdin_is_refused_and_changes_nothing(anima_bin, home):
    a = q(anima_bin)
    assert sh(f"{a} init --lang en").returncode == 0
    before = snapshot(home)
    proc = sh(f"printf '\\n  \\n\\n' | {a} self set self_model")
    assert (proc.returncode, proc.stdout, proc.stderr) == (77, "", "anima: self_model: refusing an empty body\n")
    assert snapshot(home) == before


def test_cron_like_empty_environment(anima_bin, home, tmp_path):
    """cron gives a near-empty environment: no LANG, a bare PATH, no venv on it."""
    assert sh(f"{q(anima_bin)} init --lang zh").returncode == 0
    expected = sh(f"{q(anima_bin)} prompt", cwd=tmp_path)
    assert expected.returncode == 0 and expected.stdout.startswith("## 自我层\n")

    cron_home = tmp_path / "cronhome"
    cron_home.mkdir()
    proc = sh(f"cd {q(tmp_path)} && env -i PATH=/usr/bin:/bin HOME={q(cron_home)} ANIMA_HOME={q(home)} "
              f"{q(anima_bin)} prompt", env={"PATH": "/usr/bin:/bin"})
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == expected.stdout
    assert not os.path.exists(cron_home / ".anima")  # ANIMA_HOME was honoured, not ~/.anima


def test_cron_like_environment_without_anima_home_uses_home_dir(anima_bin, tmp_path):
    cron_home = tmp_path / "cronhome"
    cron_home.mkdir()
    proc = sh(f"env -i PATH=/usr/bin:/bin HOME={q(cron_home)} {q(anima_bin)} init --lang en && "
              f"env -i PATH=/usr/bin:/bin HOME={q(cron_home)} {q(anima_bin)} prompt | head -1",
              env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "## Self layer\n"
    assert os.path.isfile(cron_home / ".anima" / "self" / "blocks" / "self_model.md")


def test_version(anima_bin):
    proc = sh(f"{q(anima_bin)} --version")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"anima {anima.__version__}\n", "")


def test_python_m_anima_help():
    proc = sh(f"{q(sys.executable)} -m anima --help")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith("Usage: anima [OPTIONS] COMMAND [ARGS]...\n")
    for name in ("init", "config", "self", "prompt"):
        assert f"\n  {name} " in proc.stdout


BROKEN = b"---\nkey: self_model\ntitle: [unclosed\nlocked: false\n---\nI am whoever the file says.\n"


def broken_home(anima_bin, home):
    assert sh(f"{q(anima_bin)} init --lang en").returncode == 0
    path = home / "self" / "blocks" / "self_model.md"
    path.write_bytes(BROKEN)
    return path


def assert_one_line_naming(proc, path):
    assert proc.returncode == 65, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.endswith("\n")
    assert proc.stderr.startswith("anima: ")
    assert str(path) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_broken_front_matter_is_one_line_and_never_overwritten(anima_bin, home, tmp_path):
    path = broken_home(anima_bin, home)
    a = q(anima_bin)
    before = snapshot(home)
    for command in (f"{a} self get", f"{a} self get self_model", f"{a} self get --json",
                    f"cd {q(tmp_path)} && {a} prompt",
                    f"echo 'a new body' | {a} self set self_model",
                    f"echo 'a new body' | {a} self set self_model --force"):
        proc = sh(command)
        assert_one_line_naming(proc, path)
        assert path.read_bytes() == BROKEN, command
    after = snapshot(home)
    # `self set` takes the block's lock file before reading it under the lock; nothing else may change.
    after.pop(os.path.join("self", "blocks", ".self_model.md.lock"), None)
    assert after == before
    assert not os.path.exists(home / "self" / "blocks" / ".history" / "self_model")


def test_broken_front_matter_with_debug_shows_traceback(anima_bin, home):
    path = broken_home(anima_bin, home)
    env = dict(os.environ, ANIMA_DEBUG="1")
    proc = sh(f"{q(anima_bin)} self get", env=env)
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert "Traceback (most recent call last)" in proc.stderr
    assert "DataError" in proc.stderr and str(path) in proc.stderr
    assert path.read_bytes() == BROKEN


@pytest.mark.parametrize("argv", [
    ["note", "list"], ["facts"], ["tools"], ["self", "log", "direction"], ["doctor"], ["recall", "tea"],
    ["self", "get"], ["prompt"], ["stream"], ["metrics"], ["queue", "ls", "pending"], ["note", "list", "--json"],
])
def test_a_reader_gone_before_the_first_byte_ends_quietly_with_0(anima_bin, home, argv):
    """stdout is a pipe whose reading end is already closed: the first write meets EPIPE,
    every time (what `| head -1` does in most runs). Exit 1 would say "nothing found"."""
    a = q(anima_bin)
    setup = sh(f"{a} init --lang en && {a} config set index.enabled false && {a} note add 'I read the file before I answer.' && "
               f"{a} session append --session s1 --role user 'Green tea keeps me awake.' && "
               f"{a} recall tea --json | {a} stage --tag drink && "
               f"printf 'Long-term: be useful.\\n' | {a} self set direction && {a} say hi --speaker Al && {a} tick")
    assert setup.returncode == 0, setup.stderr  # (the index's note of a hot session is stderr's own)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([anima_bin, *argv], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr) == (0, "")
