"""Periodic tasks: two nodes starting at the same moment both schedule the first run without an error."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import sqlalchemy

from kassa.storage import schedule
from kassa.storage.database import sqlalchemy_url
from kassa.storage.migrate import upgrade
from tests.support.databases import run_sql


@pytest.fixture
def engine(database_url: str) -> Iterator[sqlalchemy.Engine]:
    upgrade(database_url)
    engine = sqlalchemy.create_engine(sqlalchemy_url(database_url))
    yield engine
    engine.dispose()


@pytest.mark.backends("postgresql")
def test_two_nodes_scheduling_the_first_run_at_once_both_succeed(engine: sqlalchemy.Engine, database_url: str) -> None:
    first = engine.connect()
    first.begin()
    assert not schedule.claim_due(first, "settlement", 0, 100)  # inserted, not committed yet
    outcome: list[object] = []

    def second_node() -> None:
        with engine.begin() as conn:  # sees no row either, and its insert waits for the first
            try:
                outcome.append(schedule.claim_due(conn, "settlement", 0, 100))
            except sqlalchemy.exc.DBAPIError as failure:
                outcome.append(failure)

    thread = threading.Thread(target=second_node)
    thread.start()
    waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
    deadline = time.monotonic() + 10
    while run_sql(database_url, waiting) == [(0,)] and time.monotonic() < deadline:
        time.sleep(0.01)  # until the second node's insert waits on the first's row
    first.commit()
    first.close()
    thread.join(10)
    assert outcome == [False]
