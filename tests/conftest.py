"""Fixtures: every end-to-end test runs against a real gateway on SQLite and on PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from kassa.storage.database import Database, open_database
from tests.support import answers
from tests.support.databases import fresh_postgres, migrated_sqlite, pooled_postgres
from tests.support.gateway import Gateway, Merchant, new_merchant


@pytest.fixture
def database_url(request: pytest.FixtureRequest, tmp_path: Path, sqlite_templates: Path) -> Iterator[str]:
    """A database of its own for the test, of the backend it is parametrized with, at the schema's head (a
    copy of a template migrated once; on PostgreSQL from this worker's pool, emptied back to the template's
    rows between tests: ``pooled_postgres``); empty for the tests marked ``empty_database``, those of
    migrating itself."""
    migrated = request.node.get_closest_marker("empty_database") is None
    if request.param == "postgresql":
        with pooled_postgres() if migrated else fresh_postgres() as url:
            yield url
    elif migrated:
        yield migrated_sqlite(tmp_path / "kassa.db", sqlite_templates)
    else:
        yield f"sqlite:///{tmp_path / 'kassa.db'}"


@pytest.fixture(scope="session")
def sqlite_templates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _template_dir(tmp_path_factory)


def _template_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where this test process keeps its SQLite database at the schema's head, migrated once."""
    folder = tmp_path_factory.getbasetemp() / "templates"
    folder.mkdir(exist_ok=True)
    return folder


BACKENDS = ("sqlite", "postgresql")

# Property tests drive a real gateway over HTTP: a few examples a test keep the suite fast (each of the
# 41 operation rows times two backends), no deadline (a request's time is the machine's, not the code's),
# and no example database in the work tree. ``HYPOTHESIS_PROFILE=thorough`` runs many more.
settings.register_profile(
    "kassa", max_examples=6, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", parent=settings.get_profile("kassa"), max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "kassa"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "backends(*names): run only on these database backends")
    config.addinivalue_line("markers", "empty_database: database_url is an empty database, not one at the head")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("backends")
    backends = marker.args if marker else BACKENDS
    for name, scope in (("database_url", "function"), ("shared_gateway", "session"), ("clock_gateway", "session")):
        if name in metafunc.fixturenames:
            metafunc.parametrize(name, backends, indirect=True, scope=scope)


@pytest.fixture(scope="session", autouse=True)
def answers_match_the_openapi_document() -> Iterator[None]:
    """Every answer an httpx client of this process received is checked against the OpenAPI document once
    the session ends (``tests.support.answers``): a field it does not name, one missing that it requires,
    or a value not of its kind fails the run."""
    with answers.recording_every_answer():
        yield
    wrong = answers.problems()
    assert not wrong, "answers that do not match the OpenAPI document:\n" + "\n".join(wrong)


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    """The database runner on a fresh database at the schema's head, for tests of core and storage."""
    database = open_database(database_url)
    yield database
    database.close()


@pytest.fixture(scope="session")
def shared_gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """One running gateway per backend for the whole session; tests keep apart by using their own merchants."""
    with _session_gateway(request.param, tmp_path_factory, "gateway") as gateway:
        yield gateway


# Production delays (reconciliation 60 s, sessions 1800 s, callback retries from 15 s, expiry after 7 days)
# that tests pass by moving the clock. The callback timeout is a real wait, kept short; four attempts make
# giving up on a callback reachable in three moves.
CLOCK_ENV = {"KASSA_TEST_CLOCK": "1", "KASSA_CALLBACK_TIMEOUT": "1", "KASSA_CALLBACK_MAX_ATTEMPTS": "4"}


@pytest.fixture(scope="session")
def clock_gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """One gateway per backend whose clock tests move (``Gateway.advance``). Time only moves forward and
    a session's tests run one at a time, so each test sees its own delays pass; sandbox endpoints only."""
    with _session_gateway(request.param, tmp_path_factory, "clock-gateway", CLOCK_ENV) as gateway:
        yield gateway


@contextmanager
def _session_gateway(
    backend: str, tmp_path_factory: pytest.TempPathFactory, name: str, env: dict[str, str] | None = None
) -> Iterator[Gateway]:
    data_dir = tmp_path_factory.mktemp(f"{name}-{backend}")
    with ExitStack() as stack:
        if backend == "postgresql":
            url = stack.enter_context(fresh_postgres(migrated=True))
        else:
            url = migrated_sqlite(data_dir / "kassa.db", _template_dir(tmp_path_factory))
        gateway = Gateway(url, data_dir, extra_env=env or {}).start()
        stack.callback(gateway.stop)
        yield gateway


@pytest.fixture
def make_merchant(shared_gateway: Gateway) -> Callable[..., Merchant]:
    def make(currency: str = "USD", **endpoint: Any) -> Merchant:
        return new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}", currency, **endpoint)

    return make


@pytest.fixture
def clock_merchant(clock_gateway: Gateway) -> Merchant:
    """A merchant of its own on the gateway whose clock moves."""
    return new_merchant(clock_gateway, f"m-{uuid.uuid4().hex[:10]}")


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
