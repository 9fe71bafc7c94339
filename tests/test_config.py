import json

import pytest

from anima.infra import config

from conftest import snapshot


@pytest.fixture
def inited(run, home):
    run("init", "--lang", "en")
    return home


def test_get_defaults_without_a_config_file(run, home):
    assert run("config", "get", "prompt.budget.notes").stdout == "120\n"
    assert run("config", "get", "prompt.sections").stdout == "self,notes,profile,conclusions,habits,project\n"
    assert json.loads(run("config", "get", "prompt.sections", "--json").stdout)[0] == "self"
    assert not home.exists()


def test_list_prints_every_key_tab_separated(run, inited):
    lines = run("config", "list").stdout.splitlines()
    assert [ln.split("\t")[0] for ln in lines] == list(config.SETTINGS)
    assert "core.lang\ten" in lines
    assert json.loads(run("config", "list", "--json").stdout)["self.block_max_chars"] == 2000


def test_set_keeps_comments_and_layout(run, inited):
    path = inited / "config.toml"
    before = path.read_text()
    r = run("config", "set", "prompt.budget.notes", "150")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")
    after = path.read_text()
    assert after == before.replace("\nnotes = 120\n", "\nnotes = 150\n")
    assert run("config", "get", "prompt.budget.notes").stdout == "150\n"


def test_set_on_a_fresh_home_writes_the_commented_defaults(run, home):
    assert run("config", "set", "core.lang", "zh").exit_code == 0
    text = (home / "config.toml").read_text()
    assert text == config.render_default().replace('lang = "en"', 'lang = "zh"')


@pytest.mark.parametrize("key, value, code, message", [
    ("prompt.budget.nope", "1", 2, "anima: unknown config key 'prompt.budget.nope'; `anima config list` shows them all\n"),
    ("../etc", "1", 2, None),
    ("prompt.budget.notes", "many", 78, 'anima: prompt.budget.notes: must be an integer from 0 to 100000, not "many"\n'),
    ("prompt.budget.notes", "-1", 78, "anima: prompt.budget.notes: must be an integer from 0 to 100000, not -1\n"),
    ("core.lang", "fr", 78, 'anima: core.lang: must be one of zh, en, not "fr"\n'),
    ("prompt.sections", "self,bogus", 78, None),
    ("prompt.sections", "self,self", 78, None),
    ("prompt.project_file", "../secrets", 78, None),
])
def test_bad_key_or_value_changes_nothing(run, inited, key, value, code, message):
    before = snapshot(inited)
    r = run("config", "set", "--", key, value)
    assert r.exit_code == code
    if message:
        assert r.stderr == message
    assert len(r.stderr.splitlines()) == 1
    assert snapshot(inited) == before


def test_get_unknown_key_is_a_usage_error(run, inited):
    assert run("config", "get", "nope").exit_code == 2


@pytest.mark.parametrize("text, message", [
    ("[core\n", "not valid TOML"),
    ('[core]\nlang = "fr"\n', "core.lang: must be one of zh, en"),
    ("[prompt.budget]\nnotse = 3\n", "unknown key 'prompt.budget.notse'"),
    ("[prompt.budget]\nnotes = true\n", "prompt.budget.notes: must be an integer"),
])
def test_a_broken_config_file_is_named_and_left_alone(run, inited, text, message):
    path = inited / "config.toml"
    path.write_text(text)
    for args in (("config", "list"), ("prompt",), ("self", "set", "direction")):
        r = run(*args, input="x")
        assert r.exit_code == 78, args
        assert r.stderr.startswith(f"anima: {path}: ") and message in r.stderr
        assert len(r.stderr.splitlines()) == 1
    assert path.read_text() == text


def test_environment_beats_the_file(run, inited):
    assert run("config", "get", "core.lang", env={"ANIMA_LANG": "zh"}).stdout == "zh\n"
    r = run("config", "get", "core.lang", env={"ANIMA_LANG": "xx"})
    assert (r.exit_code, r.stderr) == (78, 'anima: ANIMA_LANG: core.lang: must be one of zh, en, not "xx"\n')


def test_bool_and_list_values_parse(run, inited):
    assert run("config", "set", "prompt.sections", "project, self").exit_code == 0
    assert run("config", "get", "prompt.sections").stdout == "project,self\n"
    assert 'sections = ["project", "self"]' in (inited / "config.toml").read_text()


@pytest.mark.parametrize("given, stored, shown", [
    ('["/a", "/b"]', ["/a", "/b"], "/a,/b"),
    ("/a, /b", ["/a", "/b"], "/a,/b"),
    ('["/logs/a,b/*.jsonl", " x"]', ["/logs/a,b/*.jsonl", " x"], '["/logs/a,b/*.jsonl", " x"]'),
    ("[]", [], "[]"),
])
def test_a_list_setting_takes_a_json_array_or_the_comma_form(run, inited, given, stored, shown):
    import tomllib

    assert run("config", "set", "recall.sources", given).exit_code == 0
    assert tomllib.loads((inited / "config.toml").read_text())["recall"]["sources"] == stored
    assert run("config", "get", "recall.sources").stdout == shown + "\n"
    assert run("config", "set", "recall.sources", shown).exit_code == 0  # what get shows, set takes back
    assert tomllib.loads((inited / "config.toml").read_text())["recall"]["sources"] == stored


@pytest.mark.parametrize("given, why", [
    ('["/a","/b"', 'begins with \'[\' but is not a JSON array'),
    ('[1, 2]', "is not a JSON array of strings"),
    ('"/a", "/b"', "begins with a quote"),
    ("/a, '/b'", "begins with a quote"),
])
def test_anything_else_is_refused_and_changes_nothing(run, inited, given, why):
    before = (inited / "config.toml").read_bytes()
    r = run("config", "set", "recall.sources", given)
    assert r.exit_code == 78 and why in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert (inited / "config.toml").read_bytes() == before


def backdate(path):
    import os

    from conftest import file_time

    past = file_time(-3600)
    os.utime(path, (past, past))


def test_parsed_config_is_cached_and_an_edit_is_seen_at_once(run, inited):
    path = inited / "config.toml"
    backdate(path)
    assert run("config", "get", "prompt.budget.notes").stdout == "120\n"
    cache = inited / "cache" / "config.json"
    assert json.loads(cache.read_text())["values"]["prompt.budget.notes"] == 120
    # Prove the cache is what answers: doctor it.
    cache.write_text(cache.read_text().replace('"prompt.budget.notes": 120', '"prompt.budget.notes": 121'))
    assert run("config", "get", "prompt.budget.notes").stdout == "121\n"
    path.write_text(path.read_text().replace("notes = 120", "notes = 99"))
    assert run("config", "get", "prompt.budget.notes").stdout == "99\n"


def test_a_just_written_config_is_not_cached(run, inited):
    run("config", "set", "prompt.budget.notes", "77")
    run("config", "get", "prompt.budget.notes")
    cache = inited / "cache" / "config.json"
    assert not cache.exists() or json.loads(cache.read_text())["values"]["prompt.budget.notes"] == 77


def test_a_corrupt_config_cache_is_ignored(run, inited):
    backdate(inited / "config.toml")
    run("config", "get", "core.lang")
    (inited / "cache" / "config.json").write_text("{oops")
    assert run("config", "get", "core.lang").stdout == "en\n"


def test_an_invalid_config_is_never_cached(run, inited):
    path = inited / "config.toml"
    path.write_text('[core]\nlang = "fr"\n')
    backdate(path)
    for _ in range(2):
        assert run("config", "list").exit_code == 78
    assert not (inited / "cache" / "config.json").exists()
