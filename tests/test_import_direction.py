"""Imports inside ``research/`` point one way, and no modules import each other in a circle.

From the top: live → web (pages, the CLI library, the admin) → services/selectors → worker
(tasks and the reaper → actors → store, leases, crashes, events) → lifecycle and access →
models → telemetry (its database gauges sit above models) → sources/llm → engine. A module may import its own layer and any layer below it,
never one above. Imports inside functions count too: a lazy import is still a dependency.
docs/architecture.md shows the same map.
"""

from __future__ import annotations

import ast
from pathlib import Path

import research

RESEARCH_DIR = Path(research.__file__).parent

# Module prefixes and their height; the longest matching prefix decides a module's layer.
LAYERS: dict[str, int] = {
    "research.live": 80,
    "research.web": 70,
    "research.api": 70,
    "research.cli": 70,
    "research.management": 70,
    "research.admin": 70,
    "research.templatetags": 70,
    "research.services": 60,
    "research.libraries": 60,
    "research.selectors": 60,
    "research.usage": 60,
    "research.questions": 60,
    "research.worker.tasks": 55,
    "research.worker.reaper": 55,
    "research.worker.actors": 54,
    "research.worker.webhooks": 53,
    "research.worker": 52,
    "research.lifecycle": 40,
    "research.access": 40,
    "research.telemetry.gauges": 35,
    "research.models": 30,
    "research.library_models": 30,
    "research.question_models": 30,
    "research.fields": 30,
    "research.report_templates": 30,
    "research.highlight": 30,
    "research.apps": 30,
    "research.migrations": 30,
    "research.telemetry": 25,
    "research.sources": 20,
    "research.llm": 20,
    "research.engine": 10,
}
# Packages whose internal structure another part of the project owns; only their place in
# the layering is checked here (the engine's own purity test covers the engine).
_INTERNAL_CYCLES_NOT_CHECKED = ("research.engine", "research.sources", "research.llm")


def module_name(path: Path) -> str:
    parts = path.relative_to(RESEARCH_DIR.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer_of(module: str) -> int | None:
    matches = [prefix for prefix in LAYERS if module == prefix or module.startswith(prefix + ".")]
    if not matches:
        return None
    return LAYERS[max(matches, key=len)]


def _is_module(name: str) -> bool:
    """Whether ``name`` is a module of the project's source tree (nothing is imported)."""
    base = RESEARCH_DIR.parent.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def research_imports(source: str, *, filename: str = "<module>") -> set[str]:
    """Every ``research.*`` module a source imports (``from research import services``
    names the module ``research.services``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                if _is_module(candidate):
                    found.add(candidate)
    return {name for name in found if name.split(".")[0] == "research" and name != "research"}


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for path in sorted(RESEARCH_DIR.rglob("*.py")):
        name = module_name(path)
        graph[name] = research_imports(path.read_text(encoding="utf-8"), filename=str(path))
    return graph


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    problems = []
    for module, imported in sorted(graph.items()):
        height = layer_of(module)
        for target in sorted(imported):
            target_height = layer_of(target)
            if height is None or target_height is None:
                continue
            if target_height > height:
                problems.append(f"{module} imports {target} (a layer above it)")
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Import cycles among the checked modules (Tarjan's strongly connected components)."""
    checked = {
        name
        for name in graph
        if not name.startswith(_INTERNAL_CYCLES_NOT_CHECKED) and layer_of(name) is not None
    }
    edges = {name: {t for t in graph[name] if t in checked and t != name} for name in checked}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(checked):
        if node not in index:
            visit(node)
    return found


def test_every_research_module_has_a_layer() -> None:
    unplaced = [name for name in import_graph() if name != "research" and layer_of(name) is None]
    assert unplaced == []


def test_no_module_imports_a_layer_above_it() -> None:
    assert upward_imports(import_graph()) == []


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_an_upward_import_is_caught() -> None:
    # The store importing a service (as it once did) would point the worker up at services.
    graph = import_graph()
    graph["research.worker.store"] = graph["research.worker.store"] | {"research.services"}
    assert "research.worker.store imports research.services (a layer above it)" in (
        upward_imports(graph)
    )


def test_a_lazy_import_inside_a_function_counts() -> None:
    source = "def f():\n    from research import services\n"
    assert research_imports(source) == {"research.services"}


def test_a_cycle_is_caught() -> None:
    graph = import_graph()
    graph["research.worker.store"] = graph["research.worker.store"] | {"research.worker.actors"}
    assert any(
        {"research.worker.store", "research.worker.actors"} <= set(cycle) for cycle in cycles(graph)
    )
