"""What each transaction type means, in one table: a row per ``TxType`` (CONTRACT §6).

Every rule that depends on a transaction's type reads its row here: the order stage's prefix, which
way money moves, what the transaction needs to run, which follow-ups an order it starts allows, and
what an approval does to the ledger. A new type is a new member and a new row; a test checks that
every member has one, and ``ledger.posting`` ends in ``assert_never`` over the ledger effects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from kassa.domain.lifecycle import Stage


class TxType(StrEnum):
    SALE = "sale"
    PREAUTH = "preauth"
    CAPTURE = "capture"
    CANCEL = "cancel"
    REVERSAL = "reversal"
    VOID = "void"
    ACCOUNT_VERIFICATION = "account-verification"
    PAYOUT = "payout"
    PAYOUT_CHECK = "payout-check"  # reported as a payout (CONTRACT §6 knows no other type for it)
    DEPOSIT_TRANSFER = "deposit-transfer"  # a transfer from the merchant's balance, reported as a transfer
    TRANSFER = "transfer"
    PAN_ELIGIBILITY = "pan-eligibility"
    CHARGEBACK = "chargeback"


class Direction(StrEnum):
    """Which way an approval moves the money of ``amount``."""

    IN = "in"  # from the cardholder to the merchant
    HOLD = "hold"  # reserved on the card, not yet taken
    RELEASE = "release"  # a reservation or an unsettled charge given back
    OUT = "out"  # from the merchant back to a card or another destination
    NONE = "none"  # a check: nothing moves, and amount limits do not apply


class Needs(StrEnum):
    """What the acquirer must be given to run the transaction."""

    CARD = "card"  # the card sent with the request, collected by a hosted form, or stored for a rebill
    CARD_REF = "card-ref"  # a stored card named by reference, with no cardholder present
    DESTINATION = "destination"  # where a payout goes: a card, bank account, e-wallet or phone
    CARD_TO_CARD = "card-to-card"  # a source card, as for a sale, and the card that receives the money
    NOTHING = "nothing"  # acts on the order's existing authorization


class FollowUp(StrEnum):
    """What may happen to an order after the transaction that starts it was approved."""

    CAPTURE = "capture"
    VOID = "void"
    RETURN = "return"
    SETTLEMENT = "settlement"  # its money is settled at the daily cut-off
    CARD_REF = "card-ref"  # its card may be stored for rebills
    EXPIRY = "expiry"  # cancelled when never captured within the authorization's lifetime


class Flow(StrEnum):
    """What the acquirer is asked to do (``processors.interface.Request``): each is a request type there."""

    AUTHORIZE = "authorize"  # take (a sale) or hold (a preauth) money on a card
    VERIFY = "verify"  # check a card, hold nothing
    CAPTURE = "capture"  # take what an authorization held
    REVERSE = "reverse"  # end an authorization before settlement
    REFUND = "refund"  # give back what was taken
    CREDIT = "credit"  # pay out to a destination
    CHECK = "check"  # ask whether a payout to a destination would go through
    TRANSFER = "transfer"  # from one card to another
    NONE = "none"  # nothing is asked: the acquirer reports it (a chargeback)


class Effect(StrEnum):
    """What an approval does to the order's ledger accounts (``ledger.posting`` says how)."""

    BRING_IN = "bring-in"  # external → captured
    HOLD = "hold"  # external → held
    CAPTURE_HOLD = "capture-hold"  # held → captured (a single capture also releases the rest)
    RELEASE_HOLD = "release-hold"  # held → external
    RELEASE_ALL = "release-all"  # held and captured → external
    GIVE_BACK = "give-back"  # captured, then settled → external
    RESERVE = "reserve"  # settled → reserved: a payout accepted, its money kept for it
    PAY_OUT = "pay-out"  # reserved → external
    UNRESERVE = "unreserve"  # reserved → settled: a payout that failed gives back what it reserved
    NONE = "none"  # nothing moves


@dataclass(frozen=True, slots=True)
class TxRule:
    stage_prefix: str  # the order-stage is ``{prefix}_{stage}``
    direction: Direction
    needs: Needs
    on_approved: Effect
    starts_order: bool = False
    follow_ups: frozenset[FollowUp] = frozenset()
    settles: bool = False  # approved, it is money in that settlement moves to the merchant's balance
    cardholder_present: bool = False  # the issuer may ask to authenticate the cardholder (3-D Secure)
    on_opened: Effect = Effect.NONE  # posted in the transaction that accepts it
    on_failed: Effect = Effect.NONE  # posted when it ends declined, filtered or in error
    reported_as: str | None = None  # the transaction-type merchants see, when not the type's own name
    flow: Flow = Flow.NONE
    # No merchant's request made it (an operator records what the acquirer reported): the order's
    # server_callback_url hears of it as of the order's own transaction (CONTRACT §16).
    acquirer_reported: bool = False

    def reads_destination(self, *, has_card: bool) -> bool:
        """Whether the order keeps a destination (``payout_destinations``): a card-to-card transfer's
        receiving card, or whatever else a transaction without a card pays to or checks."""
        return self.needs is Needs.CARD_TO_CARD or (not has_card and self.needs is not Needs.NOTHING)

    @property
    def moves_money(self) -> bool:
        return self.direction is not Direction.NONE


def _from_balance(stage_prefix: str, reported_as: str | None = None) -> TxRule:
    """Money paid out of the merchant's balance: reserved when accepted, paid when approved, given back
    when it fails."""
    return TxRule(
        stage_prefix,
        Direction.OUT,
        Needs.DESTINATION,
        Effect.PAY_OUT,
        True,
        on_opened=Effect.RESERVE,
        on_failed=Effect.UNRESERVE,
        reported_as=reported_as,
        flow=Flow.CREDIT,
    )


_CARD_ORDER = frozenset({FollowUp.VOID, FollowUp.RETURN, FollowUp.SETTLEMENT, FollowUp.CARD_REF})

TX_RULES: Mapping[TxType, TxRule] = {
    TxType.SALE: TxRule(
        "sale",
        Direction.IN,
        Needs.CARD,
        Effect.BRING_IN,
        True,
        _CARD_ORDER,
        settles=True,
        cardholder_present=True,
        flow=Flow.AUTHORIZE,
    ),
    TxType.PREAUTH: TxRule(
        "auth",
        Direction.HOLD,
        Needs.CARD,
        Effect.HOLD,
        True,
        _CARD_ORDER | {FollowUp.CAPTURE, FollowUp.EXPIRY},
        cardholder_present=True,
        flow=Flow.AUTHORIZE,
    ),
    TxType.ACCOUNT_VERIFICATION: TxRule(
        "verify",
        Direction.NONE,
        Needs.CARD,
        Effect.NONE,
        True,
        frozenset({FollowUp.CARD_REF}),
        cardholder_present=True,
        flow=Flow.VERIFY,
    ),
    TxType.CAPTURE: TxRule(
        "capture", Direction.IN, Needs.NOTHING, Effect.CAPTURE_HOLD, settles=True, flow=Flow.CAPTURE
    ),
    TxType.CANCEL: TxRule("cancel", Direction.RELEASE, Needs.NOTHING, Effect.RELEASE_HOLD, flow=Flow.REVERSE),
    TxType.VOID: TxRule("void", Direction.RELEASE, Needs.NOTHING, Effect.RELEASE_ALL, flow=Flow.REVERSE),
    TxType.REVERSAL: TxRule("reversal", Direction.OUT, Needs.NOTHING, Effect.GIVE_BACK, flow=Flow.REFUND),
    TxType.CHARGEBACK: TxRule("chargeback", Direction.OUT, Needs.NOTHING, Effect.GIVE_BACK, acquirer_reported=True),
    TxType.PAYOUT: _from_balance("payout"),
    # payout-check: the destination checked, the order registered, no money moved (payout-pay adds the
    # payout itself to the order).
    TxType.PAYOUT_CHECK: TxRule(
        "payout", Direction.NONE, Needs.DESTINATION, Effect.NONE, True, reported_as="payout", flow=Flow.CHECK
    ),
    TxType.DEPOSIT_TRANSFER: _from_balance("transfer", reported_as="transfer"),
    # From one card to another: the money passes through, nothing stays on the merchant's accounts. The
    # source card's holder may be asked to authenticate (3-D Secure), as for a sale.
    TxType.TRANSFER: TxRule(
        "transfer", Direction.OUT, Needs.CARD_TO_CARD, Effect.NONE, True, cardholder_present=True, flow=Flow.TRANSFER
    ),
    TxType.PAN_ELIGIBILITY: TxRule("pan_eligibility", Direction.NONE, Needs.CARD, Effect.NONE, True, flow=Flow.CHECK),
}


def rule(tx_type: TxType) -> TxRule:
    return TX_RULES[tx_type]


def allowing(follow_up: FollowUp) -> frozenset[TxType]:
    """The types whose orders allow ``follow_up`` (for queries over orders of several types)."""
    return frozenset(t for t, row in TX_RULES.items() if follow_up in row.follow_ups)


SETTLING = frozenset(t for t, row in TX_RULES.items() if row.settles)


def reported(tx_type: TxType) -> str:
    """The ``transaction-type`` status and callbacks name (CONTRACT §6)."""
    return TX_RULES[tx_type].reported_as or tx_type.value


def order_stage(tx_type: TxType, stage: Stage) -> str:
    return f"{TX_RULES[tx_type].stage_prefix}_{stage.value}"
