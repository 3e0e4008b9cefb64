"""Fixtures: every end-to-end test runs against a real gateway on SQLite and on PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.support.databases import fresh_postgres
from tests.support.gateway import Gateway, Merchant, new_merchant


@pytest.fixture
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database of the backend the test is parametrized with."""
    if request.param == "postgresql":
        with fresh_postgres() as url:
            yield url
    else:
        yield f"sqlite:///{tmp_path / 'kassa.db'}"


BACKENDS = ("sqlite", "postgresql")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "backends(*names): run only on these database backends")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("backends")
    backends = marker.args if marker else BACKENDS
    for name, scope in (("database_url", "function"), ("shared_gateway", "session")):
        if name in metafunc.fixturenames:
            metafunc.parametrize(name, backends, indirect=True, scope=scope)


@pytest.fixture(scope="session")
def shared_gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """One running gateway per backend for the whole session; tests keep apart by using their own merchants."""
    data_dir = tmp_path_factory.mktemp(f"gateway-{request.param}")
    with ExitStack() as stack:
        url = f"sqlite:///{data_dir / 'kassa.db'}"
        if request.param == "postgresql":
            url = stack.enter_context(fresh_postgres())
        gateway = Gateway(url, data_dir).start()
        stack.callback(gateway.stop)
        yield gateway


@pytest.fixture
def make_merchant(shared_gateway: Gateway) -> Callable[..., Merchant]:
    def make(currency: str = "USD", **endpoint: Any) -> Merchant:
        return new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}", currency, **endpoint)

    return make


@pytest.fixture
def merchant(make_merchant: Callable[..., Merchant]) -> Merchant:
    return make_merchant()


@pytest.fixture
def gateway_factory(database_url: str, tmp_path: Path) -> Iterator[Callable[..., Gateway]]:
    """Gateways of the test's own (on a fresh database), stopped at the end of the test."""
    started: list[Gateway] = []

    def start(*args: str, **env: str) -> Gateway:
        gateway = Gateway(database_url, tmp_path, extra_env=env).start(*args)
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        gateway.stop()
