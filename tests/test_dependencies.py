"""pyproject.toml declares what the code imports, and the locks in requirements/ pin what it declares at
versions it allows: a dependency added without `make lock` fails here, not on a fresh machine."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterable
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
_PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
RUNTIME = [Requirement(r) for r in _PROJECT["project"]["dependencies"]]
DEV = [Requirement(r) for r in _PROJECT["project"]["optional-dependencies"]["dev"]]
BUILD = [Requirement(r) for r in _PROJECT["build-system"]["requires"]]
_OWN = {"kassa", "tests", "bench"}
# Runtime dependencies the gateway's code names but never imports: others import them.
LOADED_BY_NAME = {
    "uvloop": "uvicorn's event loop (loop='uvloop' in ops/processes.py)",
    "httptools": "uvicorn's HTTP parser (http='httptools')",
    "psycopg": "SQLAlchemy's driver of postgresql+psycopg:// URLs (storage/database.py)",
}
_STALE = "requirements/ does not match pyproject.toml: run `make lock`"


def names(requirements: Iterable[Requirement]) -> set[str]:
    return {canonicalize_name(r.name) for r in requirements}


def imported_distributions(*folders: str) -> set[str]:
    """The distributions providing the third-party modules that code under ``folders`` imports."""
    modules: set[str] = set()
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    modules.update(alias.name.partition(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules.add(node.module.partition(".")[0])
    owners = packages_distributions()
    third_party = modules - set(sys.stdlib_module_names) - _OWN
    return {canonicalize_name(owner) for module in third_party for owner in owners.get(module, [module])}


def pins(lock: str) -> dict[str, Version]:
    text = (ROOT / "requirements" / lock).read_text()
    return {canonicalize_name(m[1]): Version(m[2]) for m in re.finditer(r"^([\w.-]+)==([^\s;\\]+)", text, re.M)}


def test_runtime_dependencies_are_exactly_what_the_gateway_imports() -> None:
    assert names(RUNTIME) == imported_distributions("kassa") | LOADED_BY_NAME.keys()


def test_tests_and_benchmarks_import_only_declared_distributions() -> None:
    assert imported_distributions("tests", "bench") <= names(RUNTIME) | names(DEV)


def test_dev_lock_pins_every_declared_dependency_at_an_allowed_version() -> None:
    locked = pins("dev.txt")
    for requirement in RUNTIME + DEV:
        name = canonicalize_name(requirement.name)
        assert name in locked and locked[name] in requirement.specifier, f"{requirement}: {_STALE}"


def test_runtime_lock_is_the_dev_lock_without_the_dev_tools() -> None:
    runtime, dev = pins("runtime.txt"), pins("dev.txt")
    assert names(RUNTIME) <= runtime.keys(), _STALE
    assert runtime == {name: dev[name] for name in runtime}, _STALE
    assert not names(DEV) & runtime.keys()


def test_build_lock_pins_pip_and_an_allowed_build_backend() -> None:
    locked = pins("build.txt")
    assert "pip" in locked
    for requirement in BUILD:
        name = canonicalize_name(requirement.name)
        assert name in locked and locked[name] in requirement.specifier, f"{requirement}: {_STALE}"
