"""Every ciphertext the database holds, by kind: its column, the key of its row and what it is bound to
(the vault's associated data). ``kassa vault status`` counts them by key version, ``kassa vault rotate``
reads those under older keys in batches and swaps each for its resealed copy.

The key version is the ciphertext's header (``vault.keys.header``), read in SQL from its first bytes, so
neither a count nor a batch decrypts anything it does not reseal. A new sealed column belongs here, or
rotation leaves it under the old key and retiring that key makes it unreadable
(tests/vault/test_sealed.py checks every LargeBinary column of the tables is either here or plain).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, FromClause, LargeBinary, func, literal, literal_column, select, update
from sqlalchemy.sql.schema import Column

from kassa.storage.acquirers import secret_context
from kassa.storage.operators import totp_context
from kassa.storage.tables import (
    acquirer_connections,
    browser_sessions,
    cards,
    hosted_fields_tickets,
    merchants,
    operators,
    orders,
    payout_destinations,
    transactions,
    transient_secrets,
)
from kassa.vault import tokens
from kassa.vault.keys import (
    control_key_context,
    cvv_context,
    destination_context,
    hosted_cvv_context,
    key_version,
    pan_context,
)


@dataclass(frozen=True, slots=True)
class Sealed:
    kind: str  # as status and rotate name it
    column: Column[Any]  # the ciphertext
    key: Column[Any]  # its row's key: batches go in its order, a swap names it
    bound: ColumnElement[Any]  # the value its vault context is made of
    context: Callable[[Any], str]  # ``bound``'s value to the context
    source: FromClause  # the column's table, joined to ``bound``'s when that is another


SEALED = (
    Sealed("card_numbers", cards.c.pan_ciphertext, cards.c.id, cards.c.merchant_id, pan_context, cards),
    Sealed(
        "payout_destinations",
        payout_destinations.c.details_ciphertext,
        payout_destinations.c.order_id,
        orders.c.merchant_id,
        destination_context,
        payout_destinations.join(orders, orders.c.id == payout_destinations.c.order_id),
    ),
    Sealed(
        "control_keys", merchants.c.control_key_sealed, merchants.c.id, merchants.c.id, control_key_context, merchants
    ),
    Sealed(
        "cvvs",
        transient_secrets.c.cvv_ciphertext,
        transient_secrets.c.transaction_id,
        transactions.c.serial_number,
        cvv_context,
        transient_secrets.join(transactions, transactions.c.id == transient_secrets.c.transaction_id),
    ),
    Sealed(
        "page_tokens",
        browser_sessions.c.token_sealed,
        browser_sessions.c.token_digest,
        browser_sessions.c.token_digest,
        tokens.sealing_context,
        browser_sessions,
    ),
    Sealed("totp_secrets", operators.c.totp_sealed, operators.c.id, operators.c.id, totp_context, operators),
    Sealed(
        "acquirer_secrets",
        acquirer_connections.c.secret_sealed,
        acquirer_connections.c.id,
        acquirer_connections.c.id,
        secret_context,
        acquirer_connections,
    ),
    Sealed(
        "hosted_fields_card_numbers",
        hosted_fields_tickets.c.pan_ciphertext,
        hosted_fields_tickets.c.ticket_digest,
        hosted_fields_tickets.c.merchant_id,
        pan_context,
        hosted_fields_tickets,
    ),
    Sealed(
        "hosted_fields_cvvs",
        hosted_fields_tickets.c.cvv_ciphertext,
        hosted_fields_tickets.c.ticket_digest,
        hosted_fields_tickets.c.ticket_digest,
        hosted_cvv_context,
        hosted_fields_tickets,
    ),
)


def _head(sealed: Sealed, length: int) -> ColumnElement[bytes]:
    # Literal positions: PostgreSQL has substr(bytea, int, int) only, and a bound Python int may be bigint.
    return func.substr(sealed.column, literal_column("1"), literal_column(str(length)), type_=LargeBinary)


def counts(conn: Connection, sealed: Sealed) -> dict[int | None, int]:
    """How many of ``sealed``'s ciphertexts each key version sealed (None: a header of no known format)."""
    head = _head(sealed, 2)
    found: dict[int | None, int] = {}
    for first_bytes, count in conn.execute(
        select(head, func.count()).where(sealed.column.is_not(None)).group_by(head)
    ).all():
        version = key_version(bytes(first_bytes))
        found[version] = found.get(version, 0) + count
    return found


@dataclass(frozen=True, slots=True)
class Outdated:
    key: Any
    blob: bytes
    context: str


def outdated(conn: Connection, sealed: Sealed, header: bytes, after: Any, limit: int) -> list[Outdated]:
    """Up to ``limit`` of ``sealed``'s ciphertexts that do not start with ``header`` (the primary key's),
    in key order after ``after`` (None: from the first)."""
    query = (
        select(sealed.key.label("key"), sealed.column.label("blob"), sealed.bound.label("bound"))
        .select_from(sealed.source)
        .where(sealed.column.is_not(None), _head(sealed, len(header)) != literal(header, LargeBinary))
        .order_by(sealed.key)
        .limit(limit)
    )
    if after is not None:
        query = query.where(sealed.key > after)
    return [Outdated(key, bytes(blob), sealed.context(bound)) for key, blob, bound in conn.execute(query).all()]


def swap(conn: Connection, sealed: Sealed, key: Any, old: bytes, new: bytes) -> bool:
    """Writes ``new`` where the row still holds ``old``: a row a request changed or removed since it was
    read is left as that request left it. True when written."""
    table = sealed.column.table
    changed = conn.execute(
        update(table).where(sealed.key == key, sealed.column == old).values({sealed.column.name: new})
    ).rowcount
    return bool(changed)
