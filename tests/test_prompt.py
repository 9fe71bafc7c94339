import os
import re

import pytest

from anima.host import prompt
from anima.host.prompt import Item, fence, fill

from conftest import NOW_TS, file_time


@pytest.fixture
def inited(run, home):
    assert run("init", "--lang", "en").exit_code == 0
    return home


@pytest.fixture
def project(tmp_path):
    d = tmp_path / "project"
    d.mkdir()
    (d / "AGENTS.md").write_text("# Project rules\n\nRun the tests.\n")
    return d


def age(*roots):
    """Backdate every file so that the prompt cache trusts it (see fs.RACY_NS)."""
    past = file_time(-3600)
    for root in roots:
        for dirpath, _, names in os.walk(root):
            for name in names:
                os.utime(os.path.join(dirpath, name), (past, past))


def cache_files(home):
    d = home / "cache" / "prompt"
    return sorted(d.iterdir()) if d.exists() else []


def test_sections_in_order_with_headings_outside_fences(run, inited, project):
    r = run("prompt", "--cwd", str(project))
    assert r.exit_code == 0 and r.stderr == ""
    out = r.stdout
    assert out.startswith("## Self layer\n\nThis is how you see yourself.")
    assert out.index("## Self layer") < out.index("## Project context")
    inside = False
    for line in out.splitlines():
        if re.fullmatch(r"`{3,}(md)?", line):
            inside = line.endswith("md")
        elif line.startswith("## "):
            assert not inside, line
    assert out.count("```md\n") == 2 and out.endswith("Run the tests.\n```\n")
    titles = re.findall(r"^### (.+)$", out, re.M)
    assert titles == ["Existence anchor", "Self-model", "Personality baseline", "Direction", "Metacognition",
                      "Autobiography summary"]
    assert f"The AGENTS.md of the directory you are working in ({project})." in out


def test_output_is_byte_identical_across_runs(anima_bin, inited, project):
    import subprocess

    outs = {subprocess.run([anima_bin, "prompt", "--cwd", str(project)], capture_output=True, check=True).stdout
            for _ in range(3)}
    age(inited, project)
    outs |= {subprocess.run([anima_bin, "prompt", "--cwd", str(project)], capture_output=True, check=True).stdout
             for _ in range(3)}
    assert len(outs) == 1


def test_a_body_with_a_fence_gets_a_longer_fence(run, inited, project):
    run("self", "set", "metacognition", input="I write code like:\n\n```python\nprint(1)\n```\n")
    out = run("prompt", "--cwd", str(project)).stdout
    assert "\n````md\n### Existence anchor" in out
    assert "print(1)\n```\n\n### Autobiography summary" in out
    assert "happen — recent ones in detail, older ones more briefly.\n````\n" in out


def test_fence_is_longer_than_any_backtick_run():
    assert fence("plain") == "```md\nplain\n```"
    assert fence("a ``` b") == "````md\na ``` b\n````"
    assert fence("`````") == "``````md\n`````\n``````"


def test_sections_flag_and_unknown_section(run, inited, project):
    out = run("prompt", "--cwd", str(project), "--sections", "project").stdout
    assert out.startswith("## Project context\n")
    assert "## Self layer" not in out
    out = run("prompt", "--cwd", str(project), "--sections", "project,self").stdout
    assert out.index("## Self layer") < out.index("## Project context")
    r = run("prompt", "--sections", "self,soul")
    assert (r.exit_code, r.stderr) == (2, "anima: --sections: unknown section 'soul'; sections: self, notes, "
                                          "profile, conclusions, habits, project\n")


def test_sections_from_config(run, inited, project):
    run("config", "set", "prompt.sections", "project")
    assert run("prompt", "--cwd", str(project)).stdout.startswith("## Project context\n")


def test_lang_zh_headings_and_frames(run, inited, project):
    out = run("prompt", "--cwd", str(project), "--lang", "zh").stdout
    assert out.startswith("## 自我层\n\n以下是你对自己的认识")
    assert "## 项目上下文\n\n你当前工作目录" in out
    run("config", "set", "core.lang", "zh")
    assert run("prompt", "--cwd", str(project)).stdout == out


def test_stats_go_to_stderr(run, inited, project):
    r = run("prompt", "--cwd", str(project), "--stats")
    self_chars = sum(len(run("self", "get", k).stdout.rstrip("\n")) for k in (
        "existence_anchor", "self_model", "personality_baseline", "direction", "metacognition",
        "autobiography_summary"))
    assert r.stderr == (f"self\t{self_chars}\t-\nnotes\t0\t120\nprofile\t0\t60\nconclusions\t0\t80\n"
                        f"habits\t0\t40\nproject\t31\t20000\ntotal\t0\t300\n")
    assert r.stdout == run("prompt", "--cwd", str(project)).stdout
    assert run("prompt", "--cwd", str(project), "--stats", "--sections", "self").stderr == f"self\t{self_chars}\t-\n"


def test_no_agents_md_no_project_section(run, inited, tmp_path):
    out = run("prompt", "--cwd", str(tmp_path)).stdout
    assert "## Project context" not in out


def test_an_empty_home_prints_nothing_and_says_why(run, home, tmp_path):
    r = run("prompt", "--cwd", str(tmp_path))
    assert (r.exit_code, r.stdout) == (0, "")
    assert r.stderr == f"anima: no self blocks in {home}/self/blocks; run `anima init`\n"


def test_a_long_project_file_is_cut_at_a_line_and_says_so(run, inited, project):
    run("config", "set", "prompt.project_max_chars", "20")
    (project / "AGENTS.md").write_text("line one\nline two\nline three\n")
    out = run("prompt", "--cwd", str(project)).stdout
    assert out.endswith(f"```md\nline one\nline two\n```\n\n(Cut here: 11 more characters are in "
                        f"{project}/AGENTS.md.)\n")


def test_project_file_may_be_a_symlink_and_may_hold_bad_bytes(run, inited, project):
    (project / "CLAUDE.md").write_bytes(b"caf\xe9 rules\n")
    (project / "AGENTS.md").unlink()
    (project / "AGENTS.md").symlink_to("CLAUDE.md")
    out = run("prompt", "--cwd", str(project)).stdout
    assert "```md\ncaf\ufffd rules\n```" in out


def test_warm_call_is_served_from_the_cache(run, inited, project):
    age(inited, project)
    first = run("prompt", "--cwd", str(project)).stdout
    [entry] = cache_files(inited)
    # Prove the second call reads the entry rather than reassembling: doctor the entry.
    entry.write_text(entry.read_text().replace("Run the tests.", "Served from cache."))
    second = run("prompt", "--cwd", str(project)).stdout
    assert second == first.replace("Run the tests.", "Served from cache.")


@pytest.mark.parametrize("edit", ["block", "config", "agents", "agents_created", "block_in_place"])
def test_cache_is_invalidated_by_an_edit_to_any_input(run, inited, project, edit):
    agents = project / "AGENTS.md"
    if edit == "agents_created":
        agents.unlink()
    age(inited, project)
    before = run("prompt", "--cwd", str(project)).stdout
    assert len(cache_files(inited)) == 1
    if edit == "block":
        run("self", "set", "direction", input="A brand new direction.")
        assert "A brand new direction." in run("prompt", "--cwd", str(project)).stdout
    elif edit == "config":
        run("config", "set", "core.lang", "zh")
        assert run("prompt", "--cwd", str(project)).stdout.startswith("## 自我层")
    elif edit == "agents":
        agents.write_text("# Project rules\n\nChanged.\n")
        assert "Changed." in run("prompt", "--cwd", str(project)).stdout
    elif edit == "agents_created":
        agents.write_text("Now there are rules.\n")
        assert "Now there are rules." in run("prompt", "--cwd", str(project)).stdout
    elif edit == "block_in_place":
        # Same size, same mtime: only the inode change time tells.
        f = inited / "self" / "blocks" / "direction.md"
        st = f.stat()
        text = f.read_text()
        i = text.rindex("Long-term")
        with open(f, "r+") as fh:
            fh.seek(len(text[:i].encode()))
            fh.write("LONG-TERM")
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert "LONG-TERM" in run("prompt", "--cwd", str(project)).stdout
    assert run("prompt", "--cwd", str(project)).stdout != before


def test_a_just_modified_input_is_not_cached(run, inited, project):
    age(inited, project)
    now = file_time()
    os.utime(project / "AGENTS.md", (now, now))
    run("prompt", "--cwd", str(project))
    assert cache_files(inited) == []
    age(project)
    run("prompt", "--cwd", str(project))
    assert len(cache_files(inited)) == 1


def test_a_corrupt_cache_entry_is_ignored(run, inited, project):
    age(inited, project)
    first = run("prompt", "--cwd", str(project)).stdout
    [entry] = cache_files(inited)
    entry.write_text("{not json")
    assert run("prompt", "--cwd", str(project)).stdout == first


def test_deleting_the_cache_loses_nothing(run, inited, project):
    import shutil

    age(inited, project)
    first = run("prompt", "--cwd", str(project)).stdout
    shutil.rmtree(inited / "cache")
    assert run("prompt", "--cwd", str(project)).stdout == first


# --- budget accounting (the domain function every budgeted section uses) ---------------

def items(*texts):
    return [Item(str(i), t) for i, t in enumerate(texts)]


def test_fill_takes_whole_items_best_first_within_the_limit():
    chosen, used = fill(items("aaaa", "bbb", "cc"), 7)
    assert [i.text for i in chosen] == ["aaaa", "bbb"] and used == 7


def test_fill_drops_the_lowest_ranked_and_never_skips_rank():
    chosen, used = fill(items("aaaa", "bbbbbb", "c"), 6)
    assert [i.text for i in chosen] == ["aaaa"] and used == 4


def test_fill_with_zero_limit_or_nothing():
    assert fill(items("a"), 0) == ([], 0)
    assert fill([], 100) == ([], 0)


def test_budgeted_sections_share_the_total(monkeypatch, home):
    from anima.infra import config
    from anima.infra.home import Home

    cfg = config.load(str(home / "config.toml"))
    cfg.values.update({"prompt.budget.total": 10, "prompt.budget.notes": 8, "prompt.budget.conclusions": 8})
    monkeypatch.setitem(prompt.ITEM_SOURCES, "notes", lambda ctx: items("note one", "n2"))
    monkeypatch.setitem(prompt.ITEM_SOURCES, "conclusions", lambda ctx: items("c1", "c2", "c3"))
    ctx = prompt.Context(Home(str(home)), cfg, str(home), "en", NOW_TS)
    p = prompt.assemble(ctx, ["notes", "conclusions"])
    assert p.stats == [("notes", 8, 8), ("conclusions", 2, 8), ("total", 10, 10)]
    assert "```md\nnote one\n```" in p.text and "```md\nc1\n```" in p.text
    assert p.injected == {"notes": ["0"], "conclusions": ["0"]}
