"""Operations on an existing order: capture, return and void (CONTRACT §7), and storing its card.

Each locks the order row, asks the order rules whether the operation is allowed given every transaction
of the order (those still processing count as if approved), and adds the new transaction with its job.
Concurrent requests on one order therefore queue on the row lock, on one node or many, and can never move
more money than the rules allow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection

from kassa.core.errors import FieldMismatch, NoSuchOrder, SignatureMismatch
from kassa.domain.orders import OrderState, plan_card_ref
from kassa.domain.transactions import TxType
from kassa.storage import card_refs as card_ref_store
from kassa.storage import jobs as job_queue
from kassa.storage import orders as order_store
from kassa.storage.jobs import JobKind
from kassa.storage.prepared import Record

# The order rule of an operation: the type and amount of the transaction it adds (``amount`` None: all
# that is left), or ``OrderRuleError``.
Plan = Callable[[OrderState, int | None], tuple[TxType, int]]


@dataclass(frozen=True, slots=True)
class OrderRef:
    """The order a request names, on the endpoints it may use."""

    endpoint_ids: Sequence[int]
    order_id: int
    client_orderid: str


@dataclass(frozen=True, slots=True)
class Added:
    order_id: int
    endpoint_id: int


# Whether the request's control signs the order's amount (minor units) and currency.
OrderSignature = Callable[[int, str], bool]


def locked_order(conn: Connection, ref: OrderRef, signature: OrderSignature | None = None) -> Record:
    """The order ``ref`` names, locked until the database transaction ends. With ``signature``, the request
    is refused unless it signs that order, before anything else: a request whose control matches nothing
    learns the same whether or not the order exists."""
    order = order_store.lock_order_for_merchant(conn, ref.endpoint_ids, ref.order_id)
    if order is not None and order["client_orderid"] != ref.client_orderid:
        order = None
    if signature is not None and not _signs(signature, order):
        raise SignatureMismatch()
    if order is None:
        raise NoSuchOrder("no such order for this endpoint and client_orderid")
    return order


def _signs(signature: OrderSignature, order: Record | None) -> bool:
    # The digest is computed for a missing order too, so the time taken does not tell either.
    signed = signature(order["amount"], order["currency"]) if order is not None else signature(0, "")
    return signed and order is not None


def follow_up(
    conn: Connection,
    ref: OrderRef,
    plan: Plan,
    amount: int | None,
    currency: str | None,
    serial: str,
    now_ms: int,
    signature: OrderSignature | None = None,
) -> Added:
    order = locked_order(conn, ref, signature)
    if currency is not None and currency != order["currency"]:
        raise FieldMismatch("currency", f"must be the order's currency {order['currency']}")
    tx_type, planned = plan(order_store.order_state(conn, order), amount)
    add(conn, order, tx_type, planned, serial, now_ms)
    return Added(order["id"], order["endpoint_id"])


def add(conn: Connection, order: Record, tx_type: TxType, amount: int, serial: str, now_ms: int) -> int:
    """A further transaction on the order, in processing, with its job for the workers."""
    tx_id = order_store.insert_transaction(conn, order["id"], tx_type, amount, order["currency"], serial, now_ms)
    job_queue.add(conn, JobKind.PROCESS, tx_id, run_at_ms=now_ms, now_ms=now_ms)
    return tx_id


def card_reference(conn: Connection, ref: OrderRef, now_ms: int) -> int:
    """The reference of the card the order paid with: made on the first call, the same one after."""
    order = locked_order(conn, ref)
    plan_card_ref(order_store.order_state(conn, order))
    return card_ref_store.reference(conn, order, now_ms)
