"""A small crash test inside `make test`: a few kills under load lose and double nothing."""

from __future__ import annotations

import pytest

from tests.crash.crashtest import run


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_killing_the_gateway_under_load_loses_and_doubles_nothing(backend: str) -> None:
    passed, summary = run(rounds=3, backend=backend, threads=4)
    assert passed, summary
