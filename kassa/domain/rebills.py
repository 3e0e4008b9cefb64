"""What a rebill on a stored card may add to its charge (CONTRACT §17): the merchant-initiated scenario it
is sent to the acquirer as, and the lower amounts tried in turn after a decline (``enumerate_amounts``).

Enumerated amounts are kept with the order as minor units, highest first ("800,500"): the request's
``amount`` is tried first, then after each decline the highest kept amount below the one declined, until
one is approved or none is left. Each try sets the order's and its transaction's amount, so the order shows
the amount approved (or the last one declined)."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

# At most this many amounts in ``enumerate_amounts``: each is an authorization at the acquirer, and card
# schemes frown on many declined tries of one payment.
MAX_AMOUNTS = 10


class Scenario(StrEnum):
    """``recurrent_scenario``: how the merchant charges the stored card, sent to the acquirer as the
    merchant-initiated transaction's indicator (ISO 8583 field 48 ``MI``)."""

    REGULAR = "REGULAR"  # on a schedule the cardholder agreed to: a recurring charge
    IRREGULAR = "IRREGULAR"  # when the merchant decides (top-ups, usage): an unscheduled charge


def merchant_initiated(card_ref_id: int | None, recurring_payment_id: int | None) -> bool:
    """Whether an order is a charge the merchant initiates with no cardholder there: a rebill on a stored
    card or a recurring payment's charge (CONTRACT §13, §17). Anything else is the cardholder's own."""
    return card_ref_id is not None or recurring_payment_id is not None


def lower_amounts(amounts: Iterable[int], first: int) -> tuple[int, ...]:
    """The amounts to try after ``first`` (the request's amount), each once, highest first."""
    return tuple(sorted({amount for amount in amounts if amount < first}, reverse=True))


def kept(amounts: tuple[int, ...]) -> str | None:
    """``lower_amounts`` as the order keeps them; None when there is none."""
    return ",".join(map(str, amounts)) or None


def next_amount(kept_amounts: str | None, declined: int) -> int | None:
    """The amount to try after ``declined`` was declined: the highest kept one below it; None when none is
    left (or the order enumerates none)."""
    if not kept_amounts:
        return None
    return next((amount for amount in map(int, kept_amounts.split(",")) if amount < declined), None)
