"""The client is its own distribution: it imports nothing of Kassa's server package."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

SOURCES = Path(__file__).parent.parent / "src" / "kassa_client"


def test_no_module_of_the_client_imports_kassa() -> None:
    found = []
    for path in SOURCES.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [f"{path.name}: {n}" for n in names if n == "kassa" or n.startswith("kassa.")]
    assert found == []


def test_the_package_is_marked_typed() -> None:
    assert (SOURCES / "py.typed").exists()


def test_the_distribution_depends_on_httpx_and_cryptography_only() -> None:
    project = tomllib.loads((SOURCES.parent.parent / "pyproject.toml").read_text())["project"]
    assert [re.split(r"[<>=!~ \[;]", r)[0] for r in project["dependencies"]] == ["httpx", "cryptography"]
