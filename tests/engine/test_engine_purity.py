"""The engine is pure Python: no Django, and nothing from the rest of the project."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import research.engine

pytestmark = pytest.mark.service_neutral

ENGINE_DIR = Path(research.engine.__file__).parent
MODULES = sorted(ENGINE_DIR.rglob("*.py"))


def _dotted(path: Path) -> str:
    """``research.engine.run.orchestrator`` for ``…/engine/run/orchestrator.py``."""
    parts = path.relative_to(ENGINE_DIR).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("research.engine", *parts))


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_engine_modules_exist() -> None:
    names = {_dotted(path).removeprefix("research.engine.") for path in MODULES}
    assert {"contracts", "states", "guards", "urls", "ledger", "citations", "ports"} <= names
    assert {"run.orchestrator", "quality"} <= names


def test_no_engine_module_imports_django() -> None:
    offenders = {
        _dotted(path): sorted(
            name for name in _imported_modules(path) if name.split(".")[0] == "django"
        )
        for path in MODULES
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_engine_imports_nothing_else_from_the_project() -> None:
    project_packages = {"research", "accounts", "config"}
    offenders = {
        _dotted(path): sorted(
            name
            for name in _imported_modules(path)
            if name.split(".")[0] in project_packages and not name.startswith("research.engine")
        )
        for path in MODULES
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_importing_the_whole_engine_loads_no_django() -> None:
    modules = ", ".join(_dotted(path) for path in MODULES)
    script = (
        f"import sys, {modules}\n"
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "print(loaded)\n"
        "sys.exit(1 if loaded else 0)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ENGINE_DIR.parent.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
