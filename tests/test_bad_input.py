"""Bad input through the installed `anima`: refused with one line and a documented status,
nothing written; never exit 70 (a bug in anima)."""

import os
import subprocess

import pytest

from conftest import snapshot


def anima(anima_bin, *args, input=None, env=None):
    return subprocess.run([anima_bin, *args], input=input, capture_output=True, timeout=120,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def lived(anima_bin, home):
    for args in (("init", "--lang", "en"), ("note", "add", "I read the file before I answer.")):
        assert anima(anima_bin, *args).returncode == 0
    return home


@pytest.mark.parametrize("argv, number, shown", [
    ((b"think", b"I am \xff."), 2, "I am \\xff."),
    ((b"note", b"add", b"I keep \xfe\xff notes."), 3, "I keep \\xfe\\xff notes."),
    ((b"say", b"hi \xff", b"--speaker", b"Alice"), 2, "hi \\xff"),
    ((b"say", b"hi", b"--speaker", b"Al\xffce"), 4, "Al\\xffce"),
    ((b"say", b"hi", b"--speaker=Al\xffce"), 3, "--speaker=Al\\xffce"),
    ((b"config", b"set", b"notes.max_chars", b"1\xff"), 4, "1\\xff"),
    ((b"--home", b"/tmp/\xff", b"note", b"list"), 2, "/tmp/\\xff"),
])
def test_an_argument_that_is_not_utf8_is_65_naming_it(anima_bin, lived, argv, number, shown):
    before = snapshot(lived)
    r = anima(anima_bin, *argv)
    assert (r.returncode, r.stdout) == (65, b"")
    assert r.stderr.decode() == f"anima: argument {number} '{shown}': not valid UTF-8; anima takes UTF-8 text\n"
    assert snapshot(lived) == before


def test_an_anima_home_that_is_not_utf8_is_65(anima_bin, tmp_path):
    r = subprocess.run([anima_bin, "note", "list"], capture_output=True,
                       env={**os.environ, "ANIMA_HOME": os.fsdecode(os.fsencode(str(tmp_path)) + b"/h\xff")})
    assert (r.returncode, r.stdout) == (65, b"")
    assert r.stderr.decode() == f"anima: ANIMA_HOME '{tmp_path}/h\\xff': not valid UTF-8; anima takes UTF-8 paths\n"
    assert b"h\xff" not in os.listdir(os.fsencode(str(tmp_path)))
