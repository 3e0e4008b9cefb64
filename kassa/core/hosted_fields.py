"""Hosted Fields' changes of state (CONTRACT §18): a ticket spent by a tokenization (or by a card number
the gateway refused), and a sale that takes the card a token stands for, once."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import Connection

from kassa.core import opening
from kassa.domain import hosted_fields as hf
from kassa.storage import hosted_fields as store
from kassa.storage import orders as order_store
from kassa.storage.hosted_fields import Tokenized
from kassa.storage.orders import NewOrder, Started
from kassa.storage.prepared import Record


class TicketRefused(Exception):
    def __init__(self, problem: hf.Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


class TokenRefused(Exception):
    """A ``hosted_fields_token`` no sale may use (the message follows the field's name)."""


def ticket_problem(row: Record | None, endpoint_id: int, now_ms: int) -> hf.Problem | None:
    """Why the ticket ``row`` cannot tokenize a card for ``endpoint_id`` (as the SDK was told), if it cannot."""
    if row is None or row["endpoint_id"] != endpoint_id:
        return hf.TICKET_UNKNOWN
    if row["expires_at_ms"] < now_ms:
        return hf.TICKET_EXPIRED
    if row["spent_at_ms"] is not None:
        return hf.TICKET_SPENT
    return None


def tokenize(conn: Connection, ticket_digest: str, endpoint_id: int, card: Tokenized | None, now_ms: int) -> None:
    """Spends the ticket on ``card``, or on nothing when the card number was refused (``card`` None: the
    refusal spends it, so that one ticket cannot try number after number)."""
    if problem := ticket_problem(store.ticket(conn, ticket_digest, lock=True), endpoint_id, now_ms):
        raise TicketRefused(problem)
    if card is None:
        store.spend(conn, ticket_digest, now_ms)
    else:
        store.store_card(conn, ticket_digest, card, now_ms)


def token_problem(row: Record | None, addressed: Collection[int], now_ms: int) -> str | None:
    """Why the token's ``row`` cannot pay a sale at one of ``addressed`` (the endpoint or group as addressed,
    and the endpoint the sale opens at), if it cannot: the SDK was initialised with the ticket's endpoint, so
    a token pays there alone, never at another endpoint of the same merchant. The refusal does not say which."""
    if row is None or row["endpoint_id"] not in addressed or row["expires_at_ms"] < now_ms:
        return "is unknown or has expired (a token lives as long as its ticket, 15 minutes)"
    return None


def sale(conn: Connection, token_digest: str, addressed: Collection[int], new: NewOrder) -> Started:
    """Opens the sale ``new`` on the card the token stands for (``new.card``, made from it) and spends the
    token. A repeat of that sale (the same client_orderid on the same endpoint) finds its order, as any
    repeat does; any other use of a spent token is refused."""
    row = store.by_token(conn, token_digest, lock=True)
    if problem := token_problem(row, addressed, new.now_ms):
        raise TokenRefused(problem)
    assert row is not None
    if row["order_id"] is not None:
        started = order_store.find_started(conn, new.endpoint_id, new.client_orderid)
        if started is None or started.order_id != row["order_id"]:
            raise TokenRefused("was used already: a token pays for one sale")
        return started
    started = opening.open_order(conn, new)
    if started.created:
        store.use_token(conn, token_digest, started.order_id, new.now_ms)
    return started
