"""What the gateway sent acquirers over ISO 8583, one row per financial message, and how each ended.

A row is written before its message goes out (``sent``), so that a message that may have reached the host
when the process died is known on restart: an authorization is then reversed rather than sent again, an
advice repeated. Its id is the message's retrieval reference number (field 37). The row moves on when the
answer comes (``answered``), when none came in time (``unanswered``: a reversal follows, repeated until the
host answers it, ``reversed``), when nothing could be sent (``unsent``: no socket was signed on), or when its
reversal or repetition went unanswered for 24 hours after it was first sent (``abandoned``: given up, for
an operator to settle with the acquirer).

STANs come from ``acquirer_stans``: a process reserves a block of a connection's numbers at a time, so no
two processes of a deployment use one number while the other's message may be outstanding.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from sqlalchemy import Connection, bindparam, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from kassa.domain.transactions import Flow, TxType, rule
from kassa.storage.prepared import Prepared, Record, Row
from kassa.storage.tables import acquirer_connections, acquirer_messages, acquirer_stans, transactions


class State(StrEnum):
    SENT = "sent"
    ANSWERED = "answered"
    UNANSWERED = "unanswered"
    REVERSED = "reversed"
    UNSENT = "unsent"
    ABANDONED = "abandoned"


PENDING = (State.SENT, State.UNANSWERED)  # may still be outstanding at the host: reversals and advices to repeat

_TRANSACTION = select(transactions.c.id).where(transactions.c.serial_number == bindparam("serial")).scalar_subquery()
_SENT = Prepared(
    insert(acquirer_messages)
    .values(
        transaction_id=_TRANSACTION,
        connection_id=bindparam("connection_id"),
        mti=bindparam("mti"),
        processing_code=bindparam("processing_code"),
        stan=bindparam("stan"),
        amount=bindparam("amount"),
        sent_at_ms=bindparam("now_ms"),
        state=State.SENT.value,
        repeats=0,
        updated_at_ms=bindparam("now_ms"),
    )
    .returning(acquirer_messages.c.id)
)
_LAST = Prepared(
    select(acquirer_messages)
    .where(acquirer_messages.c.transaction_id == _TRANSACTION)
    .order_by(acquirer_messages.c.id.desc())
    .limit(1)
)
_MOVE = Prepared(
    update(acquirer_messages)
    .where(acquirer_messages.c.id == bindparam("message_id"))
    .values(
        state=bindparam("state"),
        response_code=func.coalesce(bindparam("response_code"), acquirer_messages.c.response_code),
        approval_code=func.coalesce(bindparam("approval_code"), acquirer_messages.c.approval_code),
        repeats=acquirer_messages.c.repeats + bindparam("repeated"),
        updated_at_ms=bindparam("now_ms"),
    )
)


def sent(
    conn: Connection,
    serial: str,
    connection_id: int,
    mti: str,
    processing_code: str,
    stan: str,
    now_ms: int,
    amount: int | None = None,
) -> int:
    """A message of the transaction ``serial`` (at ``amount``) about to go out; its id (the RRN)."""
    values = {"serial": serial, "connection_id": connection_id, "mti": mti, "processing_code": processing_code}
    return int(_SENT.one(conn, {**values, "stan": stan, "now_ms": now_ms, "amount": amount})["id"])


def of_try(message: Record, amount: int) -> bool:
    """Whether ``message`` went out for the try of its transaction at ``amount``: a rebill that enumerates
    amounts tries each one anew (a row of before migration 0031 has no amount: its transaction had one)."""
    return message["amount"] is None or message["amount"] == amount


def last_of(conn: Connection, serial: str) -> Record | None:
    """The latest message sent for the transaction ``serial``."""
    return _LAST.first(conn, {"serial": serial})


_REACHED = Prepared(
    select(acquirer_messages.c.id)
    .where(acquirer_messages.c.transaction_id == bindparam("transaction_id"))
    .where(acquirer_messages.c.state != State.UNSENT.value)
    .limit(1)
)


def reached_acquirer(conn: Connection, transaction_id: int) -> bool:
    """Whether a message of the transaction may have reached an acquirer's host (any but ``unsent``)."""
    return _REACHED.scalar(conn, {"transaction_id": transaction_id}) is not None


def messages_of(conn: Connection, serial: str) -> list[Row]:
    """Every message sent for the transaction ``serial``, oldest first: its tries, one per connection."""
    return _OF_TRANSACTION.all(conn, {"serial": serial})


_OF_TRANSACTION = Prepared(
    select(acquirer_messages).where(acquirer_messages.c.transaction_id == _TRANSACTION).order_by(acquirer_messages.c.id)
)


def tries_of(conn: Connection, transaction_id: int) -> list[dict[str, object]]:
    """The messages of a transaction with their connection's name and RRN, oldest first, for the console."""
    c = acquirer_messages.c
    query = (
        select(acquirer_connections.c.name.label("connection"), *c)
        .join(acquirer_connections, acquirer_connections.c.id == c.connection_id)
        .where(c.transaction_id == transaction_id)
        .order_by(c.id)
    )
    return [{**row, "rrn": rrn_of(row["id"])} for row in conn.execute(query).mappings()]


def rrn_of(message_id: int) -> str:
    """A message's retrieval reference number (field 37): its row's id."""
    return f"{message_id:012d}"


def move(
    conn: Connection,
    message_id: int,
    state: State,
    now_ms: int,
    *,
    response_code: str | None = None,
    approval_code: str | None = None,
    repeated: int = 0,
) -> None:
    values = {"message_id": message_id, "state": state.value, "response_code": response_code, "now_ms": now_ms}
    values["approval_code"] = approval_code
    _MOVE.execute(conn, {**values, "repeated": repeated})


_ANSWERED = Prepared(
    update(acquirer_messages)
    .where(acquirer_messages.c.id == bindparam("message_id"), acquirer_messages.c.state == State.SENT.value)
    .values(
        state=State.ANSWERED.value,
        response_code=bindparam("response_code"),
        approval_code=bindparam("approval_code"),
        updated_at_ms=bindparam("now_ms"),
    )
)


def answered(
    conn: Connection, message_id: int, now_ms: int, *, response_code: str | None, approval_code: str | None
) -> bool:
    """Records the answer to a message still ``sent``; False, writing nothing, when it is not. A worker whose
    lease ran out while it waited may get its answer after another took the job over and, finding the message
    unanswered, sent its reversal: that late answer must not mark the message answered, or the reversal
    would stop being repeated and the sale be recorded approved."""
    values = {"message_id": message_id, "response_code": response_code, "approval_code": approval_code}
    return bool(_ANSWERED.execute(conn, {**values, "now_ms": now_ms}).rowcount)


def pending(conn: Connection) -> dict[str, int]:
    """By connection name, the messages whose reversal or repetition is not answered yet, for operators;
    along ``ix_acquirer_messages_state``."""
    c = acquirer_messages.c
    query = (
        select(acquirer_connections.c.name, func.count())
        .join(acquirer_connections, acquirer_connections.c.id == c.connection_id)
        .where(c.state == State.UNANSWERED.value)
        .group_by(acquirer_connections.c.name)
    )
    return {name: int(count) for name, count in conn.execute(query).all()}


# Unanswered, these are repeated until answered (``processors.iso8583.connector``); any other message is
# reversed, and stays pending until its reversal is answered.
_ADVICE_FLOWS = frozenset({Flow.CAPTURE, Flow.REVERSE})


def pending_of(conn: Connection, connection_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
    """By connection id, the reversals and the advices not answered yet, along ``ix_acquirer_messages_state``."""
    c = acquirer_messages.c
    query = (
        select(c.connection_id, transactions.c.tx_type, func.count())
        .join(transactions, transactions.c.id == c.transaction_id)
        .where(c.state == State.UNANSWERED.value, c.connection_id.in_(connection_ids))
        .group_by(c.connection_id, transactions.c.tx_type)
    )
    found: dict[int, tuple[int, int]] = {}
    for connection_id, tx_type, count in conn.execute(query).all():
        reversals, advices = found.get(connection_id, (0, 0))
        if rule(TxType(tx_type)).flow in _ADVICE_FLOWS:
            advices += int(count)
        else:
            reversals += int(count)
        found[connection_id] = (reversals, advices)
    return found


_RESERVE = Prepared(
    sqlite.insert(acquirer_stans)
    .values(connection_id=bindparam("connection_id"), next=bindparam("count"))
    .on_conflict_do_update(index_elements=["connection_id"], set_={"next": acquirer_stans.c.next + bindparam("count")})
    .returning(acquirer_stans.c.next),
    postgresql=postgresql.insert(acquirer_stans)
    .values(connection_id=bindparam("connection_id"), next=bindparam("count"))
    .on_conflict_do_update(index_elements=["connection_id"], set_={"next": acquirer_stans.c.next + bindparam("count")})
    .returning(acquirer_stans.c.next),
)


def reserve_stans(conn: Connection, connection_id: int, count: int) -> range:
    """``count`` numbers of the connection's sequence no other process will use; a STAN is one of them
    modulo 999999, plus 1 (``stan_of``)."""
    end = int(_RESERVE.one(conn, {"connection_id": connection_id, "count": count})["next"])
    return range(end - count, end)


def stan_of(number: int) -> str:
    return f"{number % 999_999 + 1:06d}"
