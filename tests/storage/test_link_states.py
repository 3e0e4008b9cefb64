"""Links as operators read them from the database, on SQLite and PostgreSQL: each connection's views of the
processes that reported lately, added up; a view older than the staleness bound left out, so a connection
only dead processes reported is not opened rather than down; a process that stops takes its views away;
unanswered authorizations count as reversals pending and unanswered captures and voids as advices."""

from __future__ import annotations

from sqlalchemy import Connection

from kassa.core import followups, outcomes
from kassa.core.opening import open_order
from kassa.domain.lifecycle import Stage
from kassa.domain.link_status import STALE_MS, LinkHealth, LinkReport, LinkStatus
from kassa.domain.transactions import TxType
from kassa.processors.interface import Outcome
from kassa.storage import acquirer_messages, acquirers, link_states
from kassa.storage import orders as order_store
from kassa.storage.acquirer_messages import State
from kassa.storage.database import Database
from kassa.storage.orders import NewCard, NewOrder
from tests.storage.test_acquirers import LINK
from tests.support.databases import TEST_VAULT, shop_endpoint

NOW = 1_800_000_000_000
UP = LinkReport(sockets=2, signed_on=2, in_flight=3, last_error=None, last_error_at_ms=None)


def _connection(db: Database, name: str) -> int:
    return db.write_sync(lambda conn: acquirers.create(conn, TEST_VAULT, name, LINK, None, 1000)).id


def _report(db: Database, process: str, connection_id: int, seen: LinkReport, at_ms: int) -> None:
    db.write_sync(lambda conn: link_states.report(conn, process, [(connection_id, seen)], at_ms))


def _status(db: Database, connection_id: int, now_ms: int = NOW) -> LinkStatus:
    return db.read_sync(lambda conn: link_states.status(conn, connection_id, now_ms))


def test_a_links_status_adds_up_the_processes_that_reported_it_lately(db: Database) -> None:
    bank, other = _connection(db, "bank"), _connection(db, "other")
    down = LinkReport(2, 0, 0, "socket 1: [Errno 111] Connection refused", NOW - 5_000)
    _report(db, "web-1:10:aa", bank, UP, NOW - 1_000)
    _report(db, "web-2:11:bb", bank, down, NOW - STALE_MS)
    _report(db, "dead:12:cc", bank, LinkReport(2, 2, 40, "socket 0: later", NOW - 1), NOW - STALE_MS - 1)
    _report(db, "web-1:10:aa", other, UP, NOW)

    status = _status(db, bank)
    assert [view.process for view in status.processes] == ["web-1:10:aa", "web-2:11:bb"]
    assert (status.sockets, status.signed_on, status.in_flight, status.health) == (4, 2, 3, LinkHealth.PARTLY)
    failed = status.last_error
    assert failed is not None and (failed.process, failed.report) == ("web-2:11:bb", down)


def test_a_view_written_again_replaces_the_processes_last(db: Database) -> None:
    bank = _connection(db, "bank")
    _report(db, "web-1:10:aa", bank, UP, NOW - 5_000)
    _report(db, "web-1:10:aa", bank, LinkReport(2, 0, 0, "socket 0: echo unanswered", NOW - 10), NOW)
    status = _status(db, bank)
    assert (len(status.processes), status.signed_on, status.health) == (1, 0, LinkHealth.DOWN)
    assert status.processes[0].reported_at_ms == NOW


def test_a_link_only_dead_processes_reported_is_not_opened_rather_than_down(db: Database) -> None:
    bank, never = _connection(db, "bank"), _connection(db, "never")
    _report(db, "dead:12:cc", bank, UP, NOW - STALE_MS - 1)
    for connection_id in (bank, never):
        status = _status(db, connection_id)
        assert (status.processes, status.health) == ((), LinkHealth.NOT_OPENED)


def test_a_process_that_stops_takes_its_views_away_and_dead_ones_are_pruned(db: Database) -> None:
    bank, other = _connection(db, "bank"), _connection(db, "other")
    for connection_id in (bank, other):
        _report(db, "web-1:10:aa", connection_id, UP, NOW)
        _report(db, "web-2:11:bb", connection_id, UP, NOW)
    _report(db, "dead:12:cc", bank, UP, NOW - STALE_MS - 1)
    assert db.write_sync(lambda conn: link_states.forget(conn, "web-1:10:aa")) == 2
    assert db.write_sync(lambda conn: link_states.prune(conn, NOW)) == 1
    assert [view.process for view in _status(db, bank, NOW - STALE_MS).processes] == ["web-2:11:bb"]


def test_unanswered_authorizations_are_reversals_pending_and_unanswered_captures_and_voids_advices(
    db: Database,
) -> None:
    bank, other = _connection(db, "bank"), _connection(db, "other")

    def unit(conn: Connection) -> None:
        ids = shop_endpoint(conn)
        _order(conn, ids, "s", TxType.SALE)
        preauth, voided = _order(conn, ids, "p", TxType.PREAUTH), _order(conn, ids, "v", TxType.SALE)
        followups.add(conn, order_store.lock_order(conn, preauth), TxType.CAPTURE, 1000, "p-c", 20)
        followups.add(conn, order_store.lock_order(conn, voided), TxType.VOID, 1000, "v-v", 20)
        serials = {"s": State.UNANSWERED, "p": State.ANSWERED, "p-c": State.UNANSWERED, "v-v": State.UNANSWERED}
        for serial, state in serials.items():
            message_id = acquirer_messages.sent(conn, serial, bank, "0200", "000000", "000001", 10)
            acquirer_messages.move(conn, message_id, state, 11)
        answered = acquirer_messages.sent(conn, "s", other, "0200", "000000", "000002", 10)
        acquirer_messages.move(conn, answered, State.REVERSED, 12)

    db.write_sync(unit)
    status = _status(db, bank)
    assert (status.reversals_pending, status.advices_pending, status.health) == (1, 2, LinkHealth.NOT_OPENED)
    assert (_status(db, other).reversals_pending, _status(db, other).advices_pending) == (0, 0)


def _order(conn: Connection, ids: tuple[int, int], serial: str, tx_type: TxType) -> int:
    """An order of ``tx_type`` whose first transaction (serial ``serial``) was approved."""
    card = NewCard(b"ciphertext", "f" * 64, "411111", "1111", "VISA", 12, 2030, "Jane Doe")
    new = NewOrder(
        ids[0], ids[1], serial, tx_type, 1000, "USD", "", "", "{}", None, None, None, None, "fp", serial, 1, card=card
    )
    started = open_order(conn, new)
    outcomes.record(conn, started.transaction_id, Outcome(Stage.APPROVED), 2)
    return started.order_id
