"""The house rules of docs/architecture.md that keep the package readable: no module over 450 lines, and no
import cycle between the package's modules (module-level and function-level imports alike)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "perception_safety"
MAX_LINES = 450


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported_modules(path: Path, known: set[str], me: str | None = None) -> set[str]:
    """Package modules that ``path`` imports anywhere in its body (top level, functions, TYPE_CHECKING blocks).

    ``from a.b import c`` names the module ``a.b.c`` when that is a module, else ``a.b``; relative imports are
    resolved against the importing module's package.
    """
    me = me or module_name(path)
    here = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")[: len(here.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {m for m in found if m in known and m != me}


def import_graph() -> dict[str, set[str]]:
    modules = package_modules()
    known = set(modules)
    return {name: imported_modules(path, known) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_module_is_over_the_size_limit():
    long = {
        name: n
        for name, path in package_modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, f"modules over {MAX_LINES} lines (split them along their ideas): {long}"


def test_no_import_cycle_between_modules():
    found = cycles(import_graph())
    assert found == [], "import cycles (move the shared types where both sides can import them downward): " + "; ".join(
        " <-> ".join(c) for c in found
    )


def test_the_cycle_finder_finds_a_planted_cycle():
    # a -> b -> c -> a is one component; d -> a hangs off it; e is alone
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]


def test_function_level_and_relative_imports_count(tmp_path):
    mod = tmp_path / "m.py"
    mod.write_text(
        "def f():\n    from perception_safety.core import types\n"
        "if False:\n    from .errors import PerceptionSafetyError\n",
        encoding="utf-8",
    )
    known = {"perception_safety.core", "perception_safety.core.types", "perception_safety.errors"}
    assert imported_modules(mod, known, me="perception_safety.m") == {
        "perception_safety.core.types",
        "perception_safety.errors",
    }
