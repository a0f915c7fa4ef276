"""The committed lock is what gets installed, and it agrees with pyproject.toml.

`uv.lock` is the resolution (every platform and Python version at once); the hashed
`requirements/*.txt` exported from it are what `make` and `.ci/run` install with plain pip.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

pytestmark = pytest.mark.service_neutral

ROOT = Path(__file__).resolve().parent.parent
EXPORTS = {
    "requirements/app.txt": ["--group", "build"],
    "requirements/dev.txt": ["--group", "build", "--extra", "dev"],
}
# Our own top-level packages and the standard library are not dependencies.
OWN = {"config", "accounts", "research", "evals", "tests", "manage"}


def uv() -> str:
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert found, "uv is part of the dev lock; `make install` puts it in .venv/bin"
    return found


def run_uv(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "UV_NO_PROGRESS": "1"}
    return subprocess.run(
        [uv(), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_lock_agrees_with_pyproject():
    result = run_uv("lock", "--check", "--offline")
    assert result.returncode == 0, (
        "uv.lock does not match pyproject.toml; run `make lock` and commit both.\n" + result.stderr
    )


@pytest.mark.parametrize("path", sorted(EXPORTS))
def test_exported_requirements_are_the_lock(path):
    result = run_uv(
        "export",
        "--frozen",
        "--no-emit-project",
        *EXPORTS[path],
        "--format",
        "requirements-txt",
    )
    assert result.returncode == 0, result.stderr
    committed = (ROOT / path).read_text(encoding="utf-8")

    def pins(text: str) -> list[str]:
        return [line for line in text.splitlines() if line and not line.startswith("#")]

    assert pins(result.stdout) == pins(committed), f"{path} is stale; run `make lock`."


def test_every_pin_carries_hashes():
    for path in EXPORTS:
        lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
        pins = [line for line in lines if line and line[0].isalnum()]
        assert pins, path
        for line in pins:
            assert "==" in line and line.rstrip().endswith("\\"), f"{path}: {line!r} has no hash"


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    return {Requirement(r).name.lower().replace("_", "-") for r in requirements}


def _imported_top_level(folders: list[str]) -> set[str]:
    names: set[str] = set()
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names.add(node.module.split(".")[0])
    return names - OWN - set(sys.stdlib_module_names) - {"__future__"}


def test_every_directly_imported_package_is_declared():
    distributions = importlib.metadata.packages_distributions()
    declared = _declared()
    undeclared = {}
    for module in sorted(_imported_top_level(["config", "accounts", "research", "evals", "tests"])):
        owners = {d.lower().replace("_", "-") for d in distributions.get(module, [])}
        assert owners, f"{module} is imported but no installed distribution provides it"
        if not owners & declared:
            undeclared[module] = sorted(owners)
    assert not undeclared, f"imported directly but not declared in pyproject.toml: {undeclared}"
