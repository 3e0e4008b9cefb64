"""Queries on orders, their transactions and their cards. What a state change writes, and when, is
decided in ``kassa.core``; here are the statements it runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BindParameter,
    Column,
    ColumnElement,
    Connection,
    Join,
    Label,
    bindparam,
    delete,
    exists,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from kassa.domain.lifecycle import Stage, stages_of_status
from kassa.domain.order_view import OrderView
from kassa.domain.orders import OrderState, TxRecord
from kassa.domain.risk import Mode
from kassa.domain.transactions import TxType
from kassa.storage import browser_sessions
from kassa.storage.browser_sessions import SessionKind
from kassa.storage.jobs import FINISH_HELD, Job, JobKind, Lease, finish_held, leased
from kassa.storage.prepared import Joined, Prepared, Record, Row, inserting
from kassa.storage.tables import (
    cards,
    endpoints,
    jobs,
    merchants,
    orders,
    payout_destinations,
    transactions,
    transient_secrets,
)
from kassa.vault.tokens import SealedToken


@dataclass(frozen=True, slots=True)
class NewCard:
    pan_ciphertext: bytes
    pan_fingerprint: str
    bin: str
    last_four: str
    brand: str | None
    exp_month: int
    exp_year: int
    holder_name: str


@dataclass(frozen=True, slots=True)
class NewOrder:
    merchant_id: int
    endpoint_id: int
    client_orderid: str
    tx_type: TxType
    amount: int
    currency: str
    email: str
    order_desc: str
    customer: str  # JSON of the optional customer fields
    redirect_url: str | None
    server_callback_url: str | None
    notify_url: str | None
    merchant_data: str | None
    request_fingerprint: str
    serial: str
    now_ms: int
    card: NewCard | None = None  # the card sent with the request, stored with the order
    card_id: int | None = None  # or a card stored before: the one a rebill charges
    card_ref_id: int | None = None  # the reference the rebill named
    recurring_payment_id: int | None = None  # the recurring payment this order is a charge of
    recurrent_scenario: str | None = None  # a rebill's (``domain.rebills.Scenario``)
    enumerate_amounts: str | None = None  # a rebill's lower amounts to try (``domain.rebills.kept``)
    cvv_ciphertext: bytes | None = None
    form_ttl_ms: int | None = None  # a hosted form collects the card: no processing until it is submitted
    form_token: SealedToken | None = None  # the hosted form's token, with ``form_ttl_ms``
    lease: Lease | None = None  # the processing job is written leased to this worker, to hand over

    @property
    def hosted(self) -> bool:
        return self.form_ttl_ms is not None


@dataclass(frozen=True, slots=True)
class Started:
    order_id: int
    endpoint_id: int
    serial: str
    request_fingerprint: str
    created: bool
    transaction_id: int
    form_token: SealedToken | None = None  # the hosted form's, sealed: its URL needs the vault
    job: Job | None = None  # the processing job, written leased (``NewOrder.lease``)
    card_id: int | None = None  # the card written with the order
    decided: bool = False  # ended at once as it was opened (a risk rule filtered it): its callbacks queued
    three_ds_rules: Mode | None = None  # above 3-D Secure rules' amounts (``transactions.three_ds_rules``)


def _values(*columns: str) -> dict[str, BindParameter[Any]]:
    return {c: bindparam(c) for c in columns}


_CARD_FIELDS = tuple(f.name for f in dataclasses.fields(NewCard))
_CARD_VALUES = _values("merchant_id", "created_at_ms", *_CARD_FIELDS)
_INSERT_CARD = inserting(insert(cards).values(_CARD_VALUES), cards.c.id)
_DELETE_CARD = Prepared(delete(cards).where(cards.c.id == bindparam("card_id")))
# An order takes its endpoint's mode from the endpoint's row as it is written, so no caller can get it
# wrong and no later change of the endpoint moves it (``tables.orders``).
_ENDPOINT_MODE = select(endpoints.c.mode).where(endpoints.c.id == bindparam("endpoint_id")).scalar_subquery()
_ORDER_VALUES: dict[str, Any] = {"mode": _ENDPOINT_MODE} | _values(
    "merchant_id",
    "endpoint_id",
    "client_orderid",
    "tx_type",
    "amount",
    "currency",
    "card_id",
    "card_ref_id",
    "recurring_payment_id",
    "recurrent_scenario",
    "enumerate_amounts",
    "email",
    "order_desc",
    "customer",
    "redirect_url",
    "server_callback_url",
    "notify_url",
    "merchant_data",
    "request_fingerprint",
    "created_at_ms",
)
_ORDER_KEY = ["endpoint_id", "client_orderid"]
# A client_orderid used before inserts nothing (no exception, so no savepoint is needed around it).
_INSERT_ORDER = inserting(
    sqlite_insert(orders).values(_ORDER_VALUES).on_conflict_do_nothing(index_elements=_ORDER_KEY),
    orders.c.id,
    postgresql=pg_insert(orders).values(_ORDER_VALUES).on_conflict_do_nothing(index_elements=_ORDER_KEY),
)
_TRANSACTION_COLUMNS = ("order_id", "serial_number", "tx_type", "stage", "amount", "currency")
_INSERT_TRANSACTION = inserting(
    insert(transactions).values(_values(*_TRANSACTION_COLUMNS, "created_at_ms", "updated_at_ms")), transactions.c.id
)
_INSERT_SECRET = Prepared(
    insert(transient_secrets).values(transaction_id=bindparam("tx_id"), cvv_ciphertext=bindparam("cvv"))
)


# PostgreSQL: a card sale's five rows in one statement, one round trip instead of five (data-modifying
# CTEs run once and to completion). Without an order (client_orderid used before) nothing after it runs.
_START_CARD_SALE = Prepared(
    text(
        """
WITH card AS (
    INSERT INTO cards (merchant_id, pan_ciphertext, pan_fingerprint, bin, last_four, brand, exp_month, exp_year,
                       holder_name, created_at_ms)
    VALUES (:merchant_id, :pan_ciphertext, :pan_fingerprint, :bin, :last_four, :brand, :exp_month, :exp_year,
            :holder_name, :created_at_ms)
    RETURNING id
), started AS (
    INSERT INTO orders (merchant_id, endpoint_id, client_orderid, tx_type, amount, currency, card_id, email,
                        order_desc, customer, redirect_url, server_callback_url, notify_url, merchant_data,
                        request_fingerprint, created_at_ms, mode)
    SELECT :merchant_id, :endpoint_id, :client_orderid, :tx_type, :amount, :currency, card.id, :email,
           :order_desc, :customer, :redirect_url, :server_callback_url, :notify_url, :merchant_data,
           :request_fingerprint, :created_at_ms, (SELECT mode FROM endpoints WHERE id = :endpoint_id)
    FROM card
    ON CONFLICT (endpoint_id, client_orderid) DO NOTHING
    RETURNING id
), tx AS (
    INSERT INTO transactions (order_id, serial_number, tx_type, stage, amount, currency, created_at_ms, updated_at_ms)
    SELECT started.id, :serial_number, :tx_type, :stage, :amount, :currency, :created_at_ms, :created_at_ms
    FROM started
    RETURNING id
), secret AS (
    INSERT INTO transient_secrets (transaction_id, cvv_ciphertext) SELECT tx.id, :cvv FROM tx
), job AS (
    INSERT INTO jobs (kind, transaction_id, run_at_ms, attempts, lease_owner, lease_until_ms, created_at_ms)
    SELECT :kind, tx.id, :created_at_ms, :attempts, :lease_owner, :lease_until_ms, :created_at_ms FROM tx
    RETURNING id, transaction_id
)
SELECT (SELECT id FROM card) AS card_id, (SELECT id FROM started) AS order_id, (SELECT id FROM job) AS job_id,
       (SELECT transaction_id FROM job) AS tx_id
"""
    )
)


def insert_card_sale(conn: Connection, new: NewOrder, card: NewCard) -> Started:
    """PostgreSQL: a card sale's card, order, transaction, CVV and processing job in one statement. A
    client_orderid used before writes the card only, and the order it started is returned."""
    order = _order_values(new)
    extra = {"serial_number": new.serial, "stage": Stage.PROCESSING.value, "cvv": new.cvv_ciphertext}
    values = {**order, **_card_values(card, new.merchant_id, new.now_ms), **extra, **leased(new.lease)}
    ids = _START_CARD_SALE.one(conn, {**values, "kind": JobKind.PROCESS.value})
    if ids["order_id"] is None:
        return started_before(conn, new, ids["card_id"])
    tx_id = ids["tx_id"]
    job = None if new.lease is None else Job(ids["job_id"], JobKind.PROCESS, tx_id, 1)
    return Started(
        ids["order_id"],
        new.endpoint_id,
        new.serial,
        new.request_fingerprint,
        True,
        tx_id,
        job=job,
        card_id=ids["card_id"],
    )


def insert_card(conn: Connection, card: NewCard, merchant_id: int, now_ms: int) -> int:
    card_id = _INSERT_CARD.inserted_id(conn, _card_values(card, merchant_id, now_ms))
    assert card_id is not None, "a card has no unique columns to conflict on"
    return card_id


def insert_order(conn: Connection, new: NewOrder, card_id: int | None) -> int | None:
    """The new order's id; None when its client_orderid was used before on the endpoint (nothing written)."""
    return _INSERT_ORDER.inserted_id(conn, {**_order_values(new), "card_id": card_id})


def _order_values(new: NewOrder) -> dict[str, Any]:
    return dict(
        merchant_id=new.merchant_id,
        endpoint_id=new.endpoint_id,
        client_orderid=new.client_orderid,
        tx_type=new.tx_type.value,
        amount=new.amount,
        currency=new.currency,
        email=new.email,
        order_desc=new.order_desc,
        customer=new.customer,
        redirect_url=new.redirect_url,
        server_callback_url=new.server_callback_url,
        notify_url=new.notify_url,
        merchant_data=new.merchant_data,
        request_fingerprint=new.request_fingerprint,
        created_at_ms=new.now_ms,
        card_ref_id=new.card_ref_id,
        recurring_payment_id=new.recurring_payment_id,
        recurrent_scenario=new.recurrent_scenario,
        enumerate_amounts=new.enumerate_amounts,
    )


def started_before(conn: Connection, new: NewOrder, card_id: int | None) -> Started:
    """The order an earlier request started with this client_orderid; the card just stored (``card_id``)
    is dropped."""
    if card_id is not None:
        delete_card(conn, card_id)
    found = find_started(conn, new.endpoint_id, new.client_orderid)
    if found is None:
        raise RuntimeError("client_orderid conflicts with an order that cannot be found")
    return found


def delete_card(conn: Connection, card_id: int) -> None:
    """A card just stored for a request that turned out to repeat an earlier one."""
    _DELETE_CARD.execute(conn, {"card_id": card_id})


def _card_values(card: NewCard, merchant_id: int, now_ms: int) -> dict[str, Any]:
    values = {name: getattr(card, name) for name in _CARD_FIELDS}
    values.update(merchant_id=merchant_id, created_at_ms=now_ms)
    return values


def insert_transaction(
    conn: Connection, order_id: int, tx_type: TxType, amount: int, currency: str, serial: str, now_ms: int
) -> int:
    """A transaction in ``processing``, the stage every transaction starts in."""
    values = dict(
        order_id=order_id,
        serial_number=serial,
        tx_type=tx_type.value,
        stage=Stage.PROCESSING.value,
        amount=amount,
        currency=currency,
        created_at_ms=now_ms,
        updated_at_ms=now_ms,
    )
    tx_id = _INSERT_TRANSACTION.inserted_id(conn, values)
    assert tx_id is not None, "a serial number is new"
    return tx_id


def keep_cvv(conn: Connection, transaction_id: int, cvv_ciphertext: bytes) -> None:
    _INSERT_SECRET.execute(conn, {"tx_id": transaction_id, "cvv": cvv_ciphertext})


def set_amount(conn: Connection, order_id: int, transaction_id: int, amount: int, now_ms: int) -> None:
    """The amount a rebill tries next (``enumerate_amounts``): its order's and its transaction's."""
    conn.execute(update(orders).where(orders.c.id == order_id).values(amount=amount))
    conn.execute(
        update(transactions).where(transactions.c.id == transaction_id).values(amount=amount, updated_at_ms=now_ms)
    )


def set_card(conn: Connection, order_id: int, card_id: int) -> None:
    conn.execute(update(orders).where(orders.c.id == order_id).values(card_id=card_id))


def find_started(conn: Connection, endpoint_id: int, client_orderid: str) -> Started | None:
    """The order ``client_orderid`` started on the endpoint, as its opening answered it."""
    row = conn.execute(
        select(
            orders.c.id,
            orders.c.endpoint_id,
            orders.c.request_fingerprint,
            transactions.c.serial_number,
            transactions.c.id.label("tx_id"),
        )
        .join(transactions, transactions.c.order_id == orders.c.id)
        .where(orders.c.endpoint_id == endpoint_id, orders.c.client_orderid == client_orderid)
        .order_by(transactions.c.id)
        .limit(1)
    ).first()
    if row is None:
        return None
    form = browser_sessions.session_of(conn, row.tx_id, SessionKind.FORM)
    token = SealedToken.of(form) if form else None
    return Started(row.id, row.endpoint_id, row.serial_number, row.request_fingerprint, False, row.tx_id, token)


def _state(order: Record, txs: Sequence[Record], *, multi_capture: bool) -> OrderState:
    records = tuple(
        TxRecord(TxType(tx["tx_type"]), Stage(tx["stage"]), tx["amount"], tx["settled_at_ms"] is not None) for tx in txs
    )
    return OrderState(TxType(order["tx_type"]), order["amount"], multi_capture, records)


_TRANSACTIONS_OF = Prepared(
    select(transactions).where(transactions.c.order_id == bindparam("order_id")).order_by(transactions.c.id)
)
# What a status report or an operator shows of an order (``domain.order_view``), its transactions, card and
# destination: no ciphertexts, no callback addresses or customer data (reading and splitting the 17 unused
# columns cost a status call 4 µs).
_ORDER_REPORTED = (
    "id", "endpoint_id", "client_orderid", "tx_type", "amount", "currency", "email", "card_ref_id",
    "recurring_payment_id", "merchant_data",
)  # fmt: skip
_PARTS = (
    ("o_", [orders.c[n] for n in _ORDER_REPORTED]),
    ("t_", [c for c in transactions.c if c.name != "order_id"]),
    ("c_", [c for c in cards.c if c.name not in {"merchant_id", "pan_ciphertext", "pan_fingerprint", "created_at_ms"}]),
    ("d_", [payout_destinations.c[n] for n in ("kind", "masked", "recipient_name")]),
)


def _labelled(parts: Sequence[tuple[str, Iterable[Column[Any]]]]) -> list[Label[Any]]:
    """Columns named with their table's prefix (``t_id``, ``o_id``), for joined reads; ``table.c`` for all."""
    return [column.label(prefix + column.name) for prefix, columns in parts for column in columns]


def _card_or_none(card: Row) -> Row | None:
    return card if card["id"] is not None else None


def _with_order_and_card() -> Join:
    """A transaction joined to its order and to the order's card (none until a hosted form collected it)."""
    return transactions.join(orders, orders.c.id == transactions.c.order_id).outerjoin(
        cards, cards.c.id == orders.c.card_id
    )


def _snapshot_query(*where: ColumnElement[bool]) -> Joined:
    """The order, each of its transactions, its card and its destination in one query (one round trip on
    PostgreSQL): a row per transaction, columns prefixed ``o_``, ``t_``, ``c_`` and ``d_``."""
    joined = _with_order_and_card().outerjoin(payout_destinations, payout_destinations.c.order_id == orders.c.id)
    return Joined(select(*_labelled(_PARTS)).select_from(joined).where(*where).order_by(transactions.c.id))


_SNAPSHOT_BY_ID = _snapshot_query(orders.c.id == bindparam("order_id"))
_SNAPSHOT_BY_CLIENT_ORDERID = _snapshot_query(
    orders.c.endpoint_id == bindparam("endpoint_id"), orders.c.client_orderid == bindparam("client_orderid")
)


def find_view(
    conn: Connection, endpoint_ids: Sequence[int], order_id: int | None, client_orderid: str | None
) -> OrderView | None:
    """The read model of the order named by id or by ``client_orderid`` (or both, which must agree), when it
    was made on one of ``endpoint_ids``."""
    if order_id is not None:
        found = _view(_SNAPSHOT_BY_ID.all(conn, {"order_id": order_id}))
        if found is None or found.head.endpoint_id not in endpoint_ids:
            return None
        return found if client_orderid in (None, found.head.client_orderid) else None
    for endpoint_id in endpoint_ids:  # one for an endpoint, a handful for a group
        rows = _SNAPSHOT_BY_CLIENT_ORDERID.all(conn, {"endpoint_id": endpoint_id, "client_orderid": client_orderid})
        if rows:
            return _view(rows)
    return None


def _view(rows: list[dict[str, Row]]) -> OrderView | None:
    """The read model from the snapshot query's rows, one per transaction, each split by table."""
    if not rows:
        return None
    first = rows[0]
    destination = first["d_"] if first["d_"]["kind"] is not None else None
    return OrderView.of(first["o_"], [row["t_"] for row in rows], _card_or_none(first["c_"]), destination)


@dataclass(frozen=True, slots=True)
class AuthorizationWork:
    """What a processor needs to authorize one transaction (ciphertexts: the vault decrypts them); only the
    columns of ``_AUTHORIZATION``."""

    transaction: Record
    order: Record  # with its endpoint's ``descriptor``
    card: Record | None
    cvv_ciphertext: bytes | None
    destination: Record | None = None  # a payout's, when it goes to no card (``storage.payouts``)
    original: Record | None = None  # a follow-up's: the authorization it acts on (``authorization_of``)
    authentication: Record | None = None  # the 3-D Secure record of a transaction authenticated


_TRANSACTION = Prepared(select(transactions).where(transactions.c.id == bindparam("tx_id")))
_LOCKED_ORDER = Prepared(select(orders).where(orders.c.id == bindparam("order_id")).with_for_update())
_FORGET = delete(transient_secrets).where(transient_secrets.c.transaction_id == bindparam("tx_id"))
_FORGET_SECRET = Prepared(_FORGET)
_WRITE_OUTCOME = (
    update(transactions)
    .where(transactions.c.id == bindparam("tx_id"))
    .values(
        stage=bindparam("new_stage"),
        error_code=bindparam("new_error_code"),
        error_message=bindparam("new_error_message"),
        approval_code=bindparam("new_approval_code"),
        processor_rrn=bindparam("new_processor_rrn"),
        processor_tx_id=bindparam("new_processor_tx_id"),
        updated_at_ms=bindparam("now_ms"),
    )
)
# PostgreSQL: the CVV forgotten by the same statement, a data-modifying CTE (one round trip fewer an outcome).
_RECORD = Prepared(
    _WRITE_OUTCOME,
    postgresql=_WRITE_OUTCOME.add_cte(_FORGET.cte("forgotten")),
)


def load_authorization(conn: Connection, transaction_id: int) -> AuthorizationWork:
    row = _AUTHORIZATION.one(conn, {"tx_id": transaction_id})
    return AuthorizationWork(row["t_"], row["o_"], _card_or_none(row["c_"]), row["s_"]["cvv_ciphertext"])


def authorization_of(conn: Connection, order_id: int) -> Record:
    """The transaction that started the order (a sale, a preauth): what its follow-ups act on at the
    acquirer."""
    return _FIRST_OF_ORDER.one(conn, {"order_id": order_id})


_FIRST_OF_ORDER = Prepared(
    select(*(transactions.c[n] for n in ("serial_number", "amount", "approval_code", "processor_rrn")))
    .where(transactions.c.order_id == bindparam("order_id"))
    .order_by(transactions.c.id)
    .limit(1)
)


def load_transaction(conn: Connection, transaction_id: int) -> tuple[Record, Record, Record | None]:
    """A transaction with its order and the order's card (None until a hosted form collected it)."""
    row = _TRANSACTION_IN_FULL.one(conn, {"tx_id": transaction_id})
    return row["t_"], row["o_"], _card_or_none(row["c_"])


def _transaction_query(parts: Sequence[tuple[str, Iterable[Column[Any]]]], *, with_cvv: bool) -> Joined:
    """A transaction, its order and card (and the CVV kept for its authorization) in one query: the
    columns of ``parts``, prefixed ``t_``, ``o_``, ``c_`` (and ``s_``); the order's endpoint's columns may be
    among the order's."""
    joined = _with_order_and_card().join(endpoints, endpoints.c.id == orders.c.endpoint_id)
    columns = _labelled(parts)
    if with_cvv:
        secret = transient_secrets.c.transaction_id == transactions.c.id
        joined = joined.outerjoin(transient_secrets, secret)
        columns.append(transient_secrets.c.cvv_ciphertext.label("s_cvv_ciphertext"))
    return Joined(select(*columns).select_from(joined).where(transactions.c.id == bindparam("tx_id")))


# What a processor is given (``processors.interface.Request``), read by a worker for every transaction: 20
# columns rather than every column of four tables.
_AUTHORIZED_TRANSACTION = ("stage", "serial_number", "tx_type", "amount", "currency", "three_ds_rules")
_AUTHORIZED_ORDER = (
    "id", "merchant_id", "endpoint_id", "card_ref_id", "recurring_payment_id", "recurrent_scenario"
)  # fmt: skip
_AUTHORIZATION = _transaction_query(
    (
        (
            "t_",
            [transactions.c[n] for n in _AUTHORIZED_TRANSACTION],
        ),
        ("o_", [*(orders.c[n] for n in _AUTHORIZED_ORDER), endpoints.c.descriptor]),
        ("c_", [cards.c[n] for n in ("id", "brand", "pan_ciphertext", "exp_month", "exp_year", "holder_name")]),
    ),
    with_cvv=True,
)
_TRANSACTION_IN_FULL = _transaction_query((("t_", transactions.c), ("o_", orders.c), ("c_", cards.c)), with_cvv=False)


def lock_order_of(conn: Connection, transaction_id: int) -> Record:
    """The order of a transaction, locked until the end of the database transaction."""
    return _LOCKED_ORDER_OF.one(conn, {"tx_id": transaction_id})


_LOCKED_ORDER_OF = Prepared(
    select(orders)
    .where(
        orders.c.id == select(transactions.c.order_id).where(transactions.c.id == bindparam("tx_id")).scalar_subquery()
    )
    .with_for_update()
)


def fenced_outcome_context(conn: Connection, job: Job, owner: str) -> tuple[Row, Row, Row | None, Row] | None:
    """``locked_outcome_context`` of the job's transaction, once the job is deleted while ``owner``'s lease
    on it holds (``jobs.finish_held``, the fence of the writes that follow); None, and nothing deleted,
    when another worker took the job over. On PostgreSQL in one statement, the fence a data-modifying CTE
    that the locked read requires: one round trip fewer a processed transaction."""
    if conn.dialect.name != "postgresql":
        return locked_outcome_context(conn, job.transaction_id) if finish_held(conn, job, owner) else None
    row = _FENCED_OUTCOME_CONTEXT.first(conn, {"tx_id": job.transaction_id, "job_id": job.id, "owner": owner})
    return None if row is None else (row["o_"], row["t_"], _card_or_none(row["c_"]), row["e_"])


def locked_outcome_context(conn: Connection, transaction_id: int) -> tuple[Row, Row, Row | None, Row]:
    """A transaction's order and the transaction, both locked until the end of the database transaction,
    with what its callbacks need: the order's card, and a signer row with the endpoint's descriptor and mode
    and the merchant's control key. One statement: on PostgreSQL, a row found changed once its lock is
    granted is read again as committed (and the join checked again), so the order and the transaction are
    as the last holder of the lock left them, as if read after it."""
    row = _LOCKED_OUTCOME_CONTEXT.one(conn, {"tx_id": transaction_id})
    return row["o_"], row["t_"], _card_or_none(row["c_"]), row["e_"]


def _outcome_context(*required: ColumnElement[bool]) -> Joined:
    # The order first in the FROM and in the lock list: every writer locks an order before its transactions.
    joined = (
        orders.join(transactions, transactions.c.order_id == orders.c.id)
        .outerjoin(cards, cards.c.id == orders.c.card_id)
        .join(endpoints, endpoints.c.id == orders.c.endpoint_id)
        .join(merchants, merchants.c.id == endpoints.c.merchant_id)
    )
    columns = _labelled((("o_", orders.c), ("t_", transactions.c), ("c_", cards.c)))
    columns += [endpoints.c.descriptor.label("e_descriptor"), endpoints.c.mode.label("e_mode")]
    columns.append(merchants.c.control_key_sealed.label("e_control_key_sealed"))
    query = select(*columns).select_from(joined).where(transactions.c.id == bindparam("tx_id"), *required)
    return Joined(query.with_for_update(of=[orders, transactions]))


_LOCKED_OUTCOME_CONTEXT = _outcome_context()
_FENCE = FINISH_HELD.returning(jobs.c.id).cte("fence")
_FENCED_OUTCOME_CONTEXT = _outcome_context(exists(select(_FENCE.c.id)))


def write_outcome(conn: Connection, transaction_id: int, changes: dict[str, Any], now_ms: int) -> None:
    """Sets the outcome's columns (``changes``: stage, error_code, error_message, approval_code,
    processor_rrn, processor_tx_id) and forgets the CVV kept for the authorization, whatever the outcome:
    it is never stored after one."""
    _RECORD.execute(conn, {"tx_id": transaction_id, "now_ms": now_ms, **{f"new_{k}": v for k, v in changes.items()}})
    if conn.dialect.name != "postgresql":  # there the same statement forgot it
        _FORGET_SECRET.execute(conn, {"tx_id": transaction_id})


def locked_stage(conn: Connection, transaction_id: int) -> Stage:
    return Stage(
        conn.execute(
            select(transactions.c.stage).where(transactions.c.id == transaction_id).with_for_update()
        ).scalar_one()
    )


def set_stage(conn: Connection, transaction_id: int, stage: Stage, now_ms: int) -> None:
    conn.execute(
        update(transactions).where(transactions.c.id == transaction_id).values(stage=stage.value, updated_at_ms=now_ms)
    )


def card_brand(conn: Connection, transaction_id: int) -> str | None:
    brand: str | None = conn.execute(
        select(cards.c.brand)
        .join(orders, orders.c.card_id == cards.c.id)
        .join(transactions, transactions.c.order_id == orders.c.id)
        .where(transactions.c.id == transaction_id)
    ).scalar()
    return brand


def latest_transaction_id(conn: Connection, order_id: int) -> int:
    return int(
        conn.execute(select(func.max(transactions.c.id)).where(transactions.c.order_id == order_id)).scalar_one()
    )


def transaction(conn: Connection, transaction_id: int) -> Record:
    return _TRANSACTION.one(conn, {"tx_id": transaction_id})


def lock_order(conn: Connection, order_id: int) -> Record:
    """The order row, locked until the end of the transaction: operations on one order are serialized."""
    return _LOCKED_ORDER.one(conn, {"order_id": order_id})


def multi_capture_of(conn: Connection, order: Record) -> bool:
    return bool(conn.execute(select(endpoints.c.multi_capture).where(endpoints.c.id == order["endpoint_id"])).scalar())


def transactions_of(conn: Connection, order_id: int) -> list[Record]:
    """The order's transactions, first to last."""
    return list(_TRANSACTIONS_OF.all(conn, {"order_id": order_id}))


def order_state(conn: Connection, order: Record) -> OrderState:
    txs = _TRANSACTIONS_OF.all(conn, {"order_id": order["id"]})
    return _state(order, txs, multi_capture=multi_capture_of(conn, order))


def lock_order_for_merchant(conn: Connection, endpoint_ids: Sequence[int], order_id: int) -> Record | None:
    """The order, locked as ``lock_order`` does, when it was made on one of ``endpoint_ids``."""
    query = select(orders).where(orders.c.id == order_id, orders.c.endpoint_id.in_(endpoint_ids)).with_for_update()
    return conn.execute(query).mappings().first()


def list_orders(conn: Connection, merchant_id: int | None, status: str | None, limit: int) -> list[Record]:
    """Orders newest first, each with the stage of its latest transaction."""
    latest = (
        select(transactions.c.order_id, func.max(transactions.c.id).label("tx_id"))
        .group_by(transactions.c.order_id)
        .subquery()
    )
    query = (
        select(
            orders.c.id,
            orders.c.merchant_id,
            orders.c.endpoint_id,
            orders.c.client_orderid,
            orders.c.amount,
            orders.c.currency,
            orders.c.created_at_ms,
            transactions.c.tx_type,
            transactions.c.stage,
        )
        .join(latest, latest.c.order_id == orders.c.id)
        .join(transactions, transactions.c.id == latest.c.tx_id)
        .order_by(orders.c.id.desc())
        .limit(limit)
    )
    if merchant_id is not None:
        query = query.where(orders.c.merchant_id == merchant_id)
    if status is not None:
        query = query.where(transactions.c.stage.in_(stages_of_status(status)))
    return list(conn.execute(query).mappings().all())


def view_by_id(conn: Connection, order_id: int) -> OrderView | None:
    """The read model of an order, whichever endpoint it is on (for operators)."""
    return _view(_SNAPSHOT_BY_ID.all(conn, {"order_id": order_id}))
