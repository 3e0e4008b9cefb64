"""The record of each message sent to an acquirer (``storage.acquirer_messages``): an answer is written only
to a message still waiting for it."""

from __future__ import annotations

from sqlalchemy import Connection, select

from kassa.domain.transactions import TxType
from kassa.storage import acquirer_messages
from kassa.storage.acquirer_messages import State
from kassa.storage.database import Database
from kassa.storage.tables import acquirer_messages as messages
from tests.storage.test_link_states import _connection, _order
from tests.support.databases import shop_endpoint


def _sent(db: Database, bank: int) -> int:
    def unit(conn: Connection) -> int:
        _order(conn, shop_endpoint(conn), "s", TxType.SALE)
        return acquirer_messages.sent(conn, "s", bank, "0200", "000000", "000001", 10)

    return db.write_sync(unit)


def _answer(db: Database, message_id: int) -> bool:
    return db.write_sync(
        lambda conn: acquirer_messages.answered(conn, message_id, 30, response_code="00", approval_code="123456")
    )


def _state(db: Database, message_id: int) -> tuple[str, str | None]:
    query = select(messages.c.state, messages.c.response_code).where(messages.c.id == message_id)
    state, code = db.read_sync(lambda conn: conn.execute(query).one())
    return str(state), code


def test_an_answer_to_a_message_still_sent_is_recorded(db: Database) -> None:
    message_id = _sent(db, _connection(db, "bank"))
    assert _answer(db, message_id)
    assert _state(db, message_id) == ("answered", "00")


def test_a_late_answer_to_a_message_another_worker_took_as_unanswered_changes_nothing(db: Database) -> None:
    message_id = _sent(db, _connection(db, "bank"))
    db.write_sync(lambda conn: acquirer_messages.move(conn, message_id, State.UNANSWERED, 20))  # its reversal sent
    assert not _answer(db, message_id)
    assert _state(db, message_id) == ("unanswered", None)
