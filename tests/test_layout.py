"""The package layout stays a layering: no package of ``kassa`` imports from a package that imports it back."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import kassa

ROOT = Path(kassa.__file__).parent


def _unit(module: str) -> str:
    """The package a module belongs to (``kassa.core.outcomes`` → ``core``); a top-level module
    (``kassa.clock``) is a unit of its own."""
    return module.split(".")[1] if module.count(".") >= 1 else module


def _imports() -> dict[str, set[str]]:
    """For each unit, the units its modules import (at module level or inside functions)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for path in ROOT.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        module = "kassa." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
        source = _unit(module.removesuffix(".__init__"))
        for node in ast.walk(ast.parse(path.read_text())):
            for target in {_unit(name) for name in _imported(node)} - {source}:
                edges[source].add(target)
    return edges


def _imported(node: ast.AST) -> list[str]:
    """The ``kassa`` modules an import statement names (``from kassa import clock``: ``kassa.clock``)."""
    if isinstance(node, ast.ImportFrom) and node.module == "kassa":
        return [f"kassa.{alias.name}" for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kassa."):
        return [node.module]
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.startswith("kassa.")]
    return []


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle among the units, or None."""
    visiting: list[str] = []
    done: set[str] = set()

    def visit(unit: str) -> list[str] | None:
        if unit in visiting:
            return [*visiting[visiting.index(unit) :], unit]
        if unit in done:
            return None
        visiting.append(unit)
        for target in sorted(edges.get(unit, ())):
            if found := visit(target):
                return found
        visiting.pop()
        done.add(unit)
        return None

    for unit in sorted(edges):
        if found := visit(unit):
            return found
    return None


def test_no_package_imports_from_a_package_that_imports_it_back() -> None:
    assert _cycle(_imports()) is None


def test_the_domain_imports_nothing_of_kassa_but_itself_and_the_signing_formulas() -> None:
    assert _imports()["domain"] <= {"signing"}


def test_a_cycle_would_be_found() -> None:
    assert _cycle({"api": {"pages"}, "pages": {"web", "api"}}) == ["api", "pages", "api"]


def test_only_the_composition_root_and_the_cli_know_the_sandbox_is_there() -> None:
    """The engine, core and pages reach acquirers and issuers through ``processors.interface`` alone, so a
    real acquirer takes the sandbox's place without a change to them."""
    knowing = {unit for unit, targets in _imports().items() if "sandbox" in targets}
    assert knowing <= {"runtime", "ops"}
