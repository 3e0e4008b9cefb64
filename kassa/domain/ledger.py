"""Double-entry postings for money movements; every posting's entries sum to zero. What a transaction
type's approval does is its row's ``Effect`` (``transactions``); how each effect posts is here.

Accounts, per merchant and currency:
- ``external``: the card networks' side (money owed to or by them);
- ``held``: authorized and not captured;
- ``captured``: captured (or sold) and not yet settled;
- ``settled``: the merchant's settled balance, available to pay out;
- ``reserved``: taken from ``settled`` for payouts in flight, until they are approved (then paid out to
  ``external``) or fail (then given back to ``settled``).

Postings depend on the order's current balances (a cancel releases whatever is still held, a reversal
takes from the unsettled part first), so callers pass them in. A transaction's type says what its
acceptance, its approval and its failure post (``TxRule.on_opened``, ``on_approved``, ``on_failed``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import assert_never

from kassa.domain.lifecycle import FAILED, Stage
from kassa.domain.transactions import Effect, TxType, rule


class Account(StrEnum):
    EXTERNAL = "external"
    HELD = "held"
    CAPTURED = "captured"
    SETTLED = "settled"
    RESERVED = "reserved"


# The accounts of a merchant's balance in each currency (``storage.balances`` keeps their sums).
BALANCE_ACCOUNTS = frozenset({Account.SETTLED, Account.RESERVED})

Posting = list[tuple[Account, int]]


@dataclass(frozen=True, slots=True)
class Balances:
    """One order's balance on each account."""

    held: int = 0
    captured: int = 0
    settled: int = 0
    reserved: int = 0

    @classmethod
    def of(cls, sums: dict[Account, int]) -> Balances:
        return cls(*(sums.get(account, 0) for account in _BALANCES_ORDER))


_BALANCES_ORDER = (Account.HELD, Account.CAPTURED, Account.SETTLED, Account.RESERVED)


def _move(source: Account, target: Account, amount: int) -> Posting:
    return [(source, -amount), (target, amount)] if amount else []


def needs_balances(effect: Effect) -> bool:
    """Whether the posting depends on the order's balances (it moves money already on its accounts)."""
    return effect in _FROM_BALANCES


_FROM_BALANCES = frozenset(
    {Effect.CAPTURE_HOLD, Effect.RELEASE_HOLD, Effect.RELEASE_ALL, Effect.GIVE_BACK, Effect.UNRESERVE}
)


def on_approved(tx_type: TxType, amount: int, balances: Balances, *, multi_capture: bool) -> Posting:
    """The posting for a transaction of ``tx_type`` that just became approved."""
    return posting(rule(tx_type).on_approved, amount, balances, multi_capture=multi_capture)


def posting(effect: Effect, amount: int, balances: Balances, *, multi_capture: bool) -> Posting:
    match effect:
        case Effect.BRING_IN:
            return _move(Account.EXTERNAL, Account.CAPTURED, amount)
        case Effect.HOLD:
            return _move(Account.EXTERNAL, Account.HELD, amount)
        case Effect.CAPTURE_HOLD:
            captured = _move(Account.HELD, Account.CAPTURED, amount)
            if multi_capture:
                return captured
            return captured + _move(Account.HELD, Account.EXTERNAL, balances.held - amount)  # releases the rest
        case Effect.RELEASE_HOLD:
            return _move(Account.HELD, Account.EXTERNAL, balances.held)
        case Effect.RELEASE_ALL:
            return _move(Account.HELD, Account.EXTERNAL, balances.held) + _move(
                Account.CAPTURED, Account.EXTERNAL, balances.captured
            )
        case Effect.GIVE_BACK:
            unsettled = min(amount, balances.captured)
            return _move(Account.CAPTURED, Account.EXTERNAL, unsettled) + _move(
                Account.SETTLED, Account.EXTERNAL, amount - unsettled
            )
        case Effect.RESERVE:
            return _move(Account.SETTLED, Account.RESERVED, amount)
        case Effect.PAY_OUT:
            return _move(Account.RESERVED, Account.EXTERNAL, amount)
        case Effect.UNRESERVE:
            return _move(Account.RESERVED, Account.SETTLED, balances.reserved)
        case Effect.NONE:
            return []
        case _:
            assert_never(effect)


def on_settlement(balances: Balances) -> Posting:
    return _move(Account.CAPTURED, Account.SETTLED, balances.captured)


def replay(transactions: list[tuple[TxType, int, Stage]], *, multi_capture: bool) -> Balances:
    """The balances an order's transactions (type, amount, stage, in order) should have produced,
    settlement aside (settlement moves money between ``captured`` and ``settled`` only)."""
    sums: dict[Account, int] = {}
    for tx_type, amount, stage in transactions:
        row = rule(tx_type)
        effects = [row.on_opened]
        if stage is Stage.APPROVED:
            effects.append(row.on_approved)
        elif stage in FAILED:
            effects.append(row.on_failed)
        for effect in effects:
            for account, delta in posting(effect, amount, Balances.of(sums), multi_capture=multi_capture):
                sums[account] = sums.get(account, 0) + delta
    return Balances.of(sums)
