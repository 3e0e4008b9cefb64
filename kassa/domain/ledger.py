"""Double-entry postings for card money movements. Every posting's entries sum to zero.

Accounts, per merchant and currency:
- ``external``: the card networks' side (money owed to or by them);
- ``held``: authorized and not captured;
- ``captured``: captured (or sold) and not yet settled;
- ``settled``: the merchant's settled balance (what payouts draw on).

Postings depend on the order's current balances (a cancel releases whatever is still held, a reversal
takes from the unsettled part first), so callers pass them in.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kassa.domain.lifecycle import TxType


class Account(StrEnum):
    EXTERNAL = "external"
    HELD = "held"
    CAPTURED = "captured"
    SETTLED = "settled"


Posting = list[tuple[Account, int]]


@dataclass(frozen=True, slots=True)
class Balances:
    """One order's balance on each account."""

    held: int = 0
    captured: int = 0
    settled: int = 0

    @classmethod
    def of(cls, sums: dict[Account, int]) -> Balances:
        return cls(sums.get(Account.HELD, 0), sums.get(Account.CAPTURED, 0), sums.get(Account.SETTLED, 0))


def _move(source: Account, target: Account, amount: int) -> Posting:
    return [(source, -amount), (target, amount)] if amount else []


# Postings that move money already on the order's accounts, and so depend on its balances.
NEEDS_BALANCES = frozenset({TxType.CAPTURE, TxType.CANCEL, TxType.VOID, TxType.REVERSAL})


def on_approved(tx_type: TxType, amount: int, balances: Balances, *, multi_capture: bool) -> Posting:
    """The posting for a transaction of ``tx_type`` that just became approved."""
    match tx_type:
        case TxType.SALE:
            return _move(Account.EXTERNAL, Account.CAPTURED, amount)
        case TxType.PREAUTH:
            return _move(Account.EXTERNAL, Account.HELD, amount)
        case TxType.CAPTURE:
            posting = _move(Account.HELD, Account.CAPTURED, amount)
            if not multi_capture:  # a single partial capture releases the rest of the hold
                posting += _move(Account.HELD, Account.EXTERNAL, balances.held - amount)
            return posting
        case TxType.CANCEL:
            return _move(Account.HELD, Account.EXTERNAL, balances.held)
        case TxType.VOID:
            return _move(Account.HELD, Account.EXTERNAL, balances.held) + _move(
                Account.CAPTURED, Account.EXTERNAL, balances.captured
            )
        case TxType.REVERSAL:
            unsettled = min(amount, balances.captured)
            return _move(Account.CAPTURED, Account.EXTERNAL, unsettled) + _move(
                Account.SETTLED, Account.EXTERNAL, amount - unsettled
            )
        case _:
            return []


def on_settlement(balances: Balances) -> Posting:
    return _move(Account.CAPTURED, Account.SETTLED, balances.captured)


def replay(transactions: list[tuple[TxType, int]], *, multi_capture: bool) -> Balances:
    """The balances an order's approved transactions should have produced, settlement aside
    (settlement moves money between ``captured`` and ``settled`` only)."""
    sums: dict[Account, int] = {}
    for tx_type, amount in transactions:
        for account, delta in on_approved(tx_type, amount, Balances.of(sums), multi_capture=multi_capture):
            sums[account] = sums.get(account, 0) + delta
    return Balances.of(sums)
