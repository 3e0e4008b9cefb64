"""A process reports its links to the database cheaply, on a clock the test moves: a link's view is written
when first seen, when it changed (at most every ``REPORT_GAP_MS``) and when its last write is
``REFRESH_MS`` old, and not otherwise; a long error is cut; stopping takes the process's views away."""

from __future__ import annotations

import asyncio
import dataclasses

from kassa.domain.link_status import MAX_ERROR_LENGTH, REFRESH_MS, REPORT_GAP_MS
from kassa.engine.link_reports import LinkReporter
from kassa.processors.iso8583.link import LinkState
from kassa.storage import acquirers, link_states
from kassa.storage.database import Database
from tests.storage.test_acquirers import LINK
from tests.support.databases import TEST_VAULT

START = 1_800_000_000_000
UP = LinkState(
    sockets=1, open=1, signed_on=1, in_flight=0, sign_ons=1, last_error=None, last_error_at_ms=None, last_sign_on=None
)


class Scene:
    """A reporter on a real database, with one link whose state and clock the test sets."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.connection_id = db.write_sync(lambda conn: acquirers.create(conn, TEST_VAULT, "bank", LINK, None, 1)).id
        self.state, self.now = UP, START
        self.reporter = LinkReporter(db, lambda: {self.connection_id: self.state}, "web-1:10:aa", lambda: self.now)

    def report_at(self, ms_after_start: int) -> int | None:
        """Reports at ``START + ms_after_start``; when the link's view was last written, relative to ``START``."""
        self.now = START + ms_after_start
        asyncio.run(self.reporter.report())
        views = self.db.read_sync(lambda conn: link_states.status(conn, self.connection_id, self.now)).processes
        return views[0].reported_at_ms - START if views else None


def test_a_view_is_written_when_first_seen_then_only_as_its_refresh_falls_due(db: Database) -> None:
    scene = Scene(db)
    assert scene.report_at(0) == 0
    assert scene.report_at(REFRESH_MS - 1) == 0  # unchanged, still fresh: nothing written
    assert scene.report_at(REFRESH_MS) == REFRESH_MS


def test_a_changed_view_is_written_no_sooner_than_the_gap_after_the_last_write(db: Database) -> None:
    scene = Scene(db)
    scene.report_at(0)
    scene.state = dataclasses.replace(UP, signed_on=0, last_error="socket 0: echo unanswered", last_error_at_ms=START)
    assert scene.report_at(REPORT_GAP_MS - 1) == 0
    assert scene.report_at(REPORT_GAP_MS) == REPORT_GAP_MS
    status = db.read_sync(lambda conn: link_states.status(conn, scene.connection_id, scene.now))
    assert (status.signed_on, status.processes[0].report.last_error) == (0, "socket 0: echo unanswered")


def test_a_long_error_is_cut_to_what_the_table_keeps(db: Database) -> None:
    scene = Scene(db)
    scene.state = dataclasses.replace(UP, last_error="socket 0: " + "x" * 1000, last_error_at_ms=START)
    scene.report_at(0)
    status = db.read_sync(lambda conn: link_states.status(conn, scene.connection_id, scene.now))
    assert len(status.processes[0].report.last_error or "") == MAX_ERROR_LENGTH


def test_a_process_that_stops_takes_its_views_away(db: Database) -> None:
    scene = Scene(db)
    scene.report_at(0)
    asyncio.run(scene.reporter.forget())
    assert db.read_sync(lambda conn: link_states.status(conn, scene.connection_id, START)).processes == ()
