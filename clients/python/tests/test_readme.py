"""README.md cannot drift from the client: its test blocks run as written, and it shows every operation."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kassa_client import Kassa
from kassa_client.testing import Sandbox

README = (Path(__file__).parent.parent / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
TESTS = [block for block in BLOCKS if "def test_" in block]


def readme_test(block: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {}
    exec(compile("from kassa_client.testing import Sandbox\n" + block, "README.md", "exec"), namespace)  # noqa: S102
    [test] = [value for name, value in namespace.items() if name.startswith("test_")]
    return test  # type: ignore[no-any-return]


def test_the_merchant_flow_is_marked_and_runnable() -> None:
    assert "<!-- merchant-flow -->\n```python" in README
    assert any("def test_a_merchants_typical_flow" in block for block in TESTS)


@pytest.mark.parametrize("block", TESTS, ids=lambda block: re.search(r"def (test_\w+)", block)[1])  # type: ignore[index]
def test_readme_test_runs_as_written(block: str, kassa_sandbox: Sandbox) -> None:
    readme_test(block)(kassa_sandbox)


def test_every_operation_has_an_example() -> None:
    methods = [name for name in vars(Kassa) if not name.startswith("_") and callable(getattr(Kassa, name))]
    missing = [name for name in methods if name not in ("close", "request") and f".{name}(" not in README]
    assert missing == []
