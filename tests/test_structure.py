"""The import rule: the tree shows the product, and its layers hold.

Read from the source (every import statement, those inside functions too, since a lazy import
is a dependency all the same): no module imports itself round a circle, nor does a package;
infra imports nothing of anima above it; no module outside the command layer imports click,
directly or through another module; and nothing outside the command layer imports it.
"""

import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "anima")
COMMAND_LAYER = ("anima.cli", "anima.commands")


def module_name(path: str) -> str:
    rel = os.path.relpath(path, os.path.dirname(ROOT))[: -len(".py")].replace(os.sep, ".")
    return rel[: -len(".__init__")] if rel.endswith(".__init__") else rel


def imports(path: str, name: str) -> set[str]:
    """Every module `name` imports: `import a.b` and `from a import b` (b a module or a name)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def module_paths() -> dict[str, str]:
    found = {}
    for dirpath, dirnames, names in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        found.update((module_name(os.path.join(dirpath, n)), os.path.join(dirpath, n)) for n in names if n.endswith(".py"))
    return found


PATHS = module_paths()


def graph() -> dict[str, set[str]]:
    edges = {}
    for name, path in PATHS.items():
        targets = imports(path, name)
        edges[name] = {t for t in targets if t in PATHS and t != name} | {t for t in targets if t == "click"}
    return edges


EDGES = graph()
MODULES = sorted(m for m in EDGES if m != "click")


def package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or module in {f"anima.{p}" for p in PACKAGES} else module


PACKAGES = sorted(d for d in os.listdir(ROOT) if os.path.isfile(os.path.join(ROOT, d, "__init__.py")))


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One circle of the graph, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_tree_is_the_design():
    assert {"infra", "self", "notes", "facts", "recall", "pipeline", "stream", "host", "trust",
            "commands"} <= set(PACKAGES)
    flat = [m for m in MODULES if m.count(".") == 1 and m.split(".")[1] not in PACKAGES]
    assert flat == ["anima.__main__", "anima.cli"]


def test_no_module_imports_itself_round_a_circle():
    assert cycle({m: {t for t in EDGES[m] if t != "click"} for m in MODULES}) is None


def test_no_package_imports_itself_round_a_circle():
    domain = [m for m in MODULES if not m.startswith(COMMAND_LAYER) and m != "anima.__main__"]
    edges: dict[str, set[str]] = {}
    for m in domain:
        edges.setdefault(package(m), set()).update(
            package(t) for t in EDGES[m] if t != "click" and package(t) != package(m) and t != "anima")
    assert cycle(edges) is None


def test_infra_imports_nothing_above_it():
    above = {m: sorted(t for t in EDGES[m] if t not in ("click", "anima") and not t.startswith("anima.infra"))
             for m in MODULES if m.startswith("anima.infra")}
    assert {m: t for m, t in above.items() if t} == {}


@pytest.mark.parametrize("module", [m for m in MODULES if not m.startswith(COMMAND_LAYER) and m != "anima.__main__"])
def test_no_domain_module_reaches_click(module):
    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        for t in EDGES.get(m, ()):
            assert t != "click", f"{module} imports click (through {m})"
            assert not t.startswith(COMMAND_LAYER), f"{module} imports the command layer ({t}, through {m})"
            if t not in seen:
                seen.add(t)
                todo.append(t)


def test_the_rule_sees_a_circle_and_a_lazy_import():
    """The checks above can fail: a circle is found, and an import inside a function counts."""
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None
    assert "anima.stream.echo" in EDGES["anima.stream.consolidate"]  # imported inside a method


def _calls(path: str):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            yield node.func


READS_THE_CLOCK = ("anima.commands", "anima.host.mcp", "anima.infra.clock")  # mcp: once per request


def test_only_the_command_layer_reads_the_clock():
    """One clock: a command reads her time once (its flag, ANIMA_NOW or the system clock) and
    passes `now` down; nothing below reads it again."""
    readers = sorted(m for m in MODULES if not m.startswith(READS_THE_CLOCK)
                     for f in _calls(PATHS[m])
                     if f.attr == "now" and isinstance(f.value, ast.Name) and f.value.id == "clock")
    assert readers == []


def test_no_command_passes_a_value_through_the_environment():
    changed = []
    for m in MODULES:
        with open(PATHS[m], encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, ast.AugAssign) else node.targets if isinstance(node, ast.Delete) else []
            if any(isinstance(t, ast.Subscript) and ast.unparse(t.value) == "os.environ" for t in targets):
                changed.append(m)
        changed += [m for f in _calls(PATHS[m])
                    if f.attr in ("pop", "update", "setdefault", "clear") and ast.unparse(f.value) == "os.environ"]
    assert changed == []



# Calls that reach a file by its path, following a link on the way (and, but for os.open with
# O_NOFOLLOW, in place). Inside a home only anima.infra.fs may make them: it reaches every name
# from the home's root without following one (a link is refused, 77, not an ELOOP at 70).
FILE_CALLS = {"open", "os.open", "os.replace", "os.rename", "os.renames", "os.unlink", "os.remove", "os.rmdir",
              "os.removedirs", "os.makedirs", "os.mkdir", "os.listdir", "os.scandir", "os.utime", "os.chmod",
              "os.chown", "os.truncate", "os.link", "os.symlink", "os.mkfifo", "shutil.rmtree", "shutil.move",
              "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree", "sqlite3.connect",
              "tempfile.mkdtemp", "tempfile.mkstemp", "glob.glob", "os.walk"}

# The calls made on paths in no home, or that a reason lets follow a link: module -> why.
OUTSIDE_THE_HOME = {
    ("anima.commands.fast", "os.open"): "/dev/null, to point a closed stdout at",
    ("anima.commands._io", "open"): "a --file FILE a person gives, anywhere",
    ("anima.commands.portable", "open"): "the archive anima import reads, anywhere",
    ("anima.stream.history", "os.open"): "a history file anima import-history reads, anywhere (O_NOFOLLOW)",
    ("anima.host.prompt", "open"): "the project file in the working directory (AGENTS.md may be a link)",
    ("anima.trust.why", "open"): "the project file, as prompt reads it",
    ("anima.recall.zstd", "open"): "transcripts, which may be links to a host's (anima-transcripts(5))",
    ("anima.recall.index", "open"): "transcripts, as anima.recall.zstd reads them",
    ("anima.recall.sources", "glob.glob"): "the recall.sources globs, anywhere",
    ("anima.recall.sources", "os.scandir"): "transcript directories, links followed (anima-transcripts(5))",
    ("anima.recall.index", "sqlite3.connect"): "the index, opened by fs.open_file first: no link on the way",
    ("anima.recall.fts", "sqlite3.connect"): "an in-memory database",
    ("anima.infra.text", "open"): "a table of anima/data, in the installed package",
    ("anima.infra.portable", "open"): "export: a file found by lstat, opened O_NOFOLLOW",
    ("anima.infra.portable", "os.walk"): "export: the home's tree, no link followed, each entry lstat'ed",
    ("anima.trust.check", "os.walk"): "finding links and modes by lstat; what it reads, it reads through fs",
    ("anima.trust.forget", "os.walk"): "finding the queue files to forget; read and removed through fs",
    ("anima.infra.portable", "os.open"): "import: a fresh private staging directory beside the target",
    ("anima.infra.portable", "os.makedirs"): "import: the staging directory and the target's parent",
    ("anima.infra.portable", "os.utime"): "import: the staging directory",
    ("anima.infra.portable", "os.chmod"): "import: the staging directory",
    ("anima.infra.portable", "os.rename"): "import: the staging directory to the new home",
    ("anima.infra.portable", "os.listdir"): "import: whether the target is empty",
    ("anima.infra.portable", "shutil.rmtree"): "import: the staging directory, when the import fails",
    ("anima.infra.portable", "tempfile.mkdtemp"): "import: the staging directory",
}


def _file_calls(path: str):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in FILE_CALLS:
                yield name, node.lineno


def test_only_fs_reaches_a_file_of_the_home_by_its_path():
    """Every open, rename, removal or listing of a path in the home goes through anima.infra.fs;
    a call elsewhere is on a path in no home, with its reason above."""
    found = {(m, name): line for m in MODULES if m != "anima.infra.fs" for name, line in _file_calls(PATHS[m])}
    unexplained = sorted(f"{PATHS[m]}:{line}: {name}" for (m, name), line in found.items()
                         if (m, name) not in OUTSIDE_THE_HOME)
    assert unexplained == []
    assert sorted(set(OUTSIDE_THE_HOME) - set(found)) == []  # a reason for a call that is gone goes too
