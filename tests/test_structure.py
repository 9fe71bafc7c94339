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

