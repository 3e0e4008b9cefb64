"""The values that steer the sandbox (CONTRACT §9): the CVV2, or for operations without one the last three
digits of the card, account or phone number; and the amount of a card payment, which decides whether the
card has the funds (``short_of_funds``)."""

from __future__ import annotations

from enum import StrEnum


class Trigger(StrEnum):
    APPROVE = "123"
    APPROVE_FOUR_DIGITS = "1234"  # brands with four-digit codes (American Express)
    APPROVE_WITHOUT_3DS = "111"
    CHALLENGE = "321"
    CHALLENGE_1 = "322"
    METHOD_FRICTIONLESS = "323"
    METHOD_CHALLENGE = "324"
    ATTEMPTED = "325"
    REJECTED = "326"
    UNKNOWN = "217"
    FILTERED = "555"
    ACQUIRER_ERROR = "500"
    EXPIRED_CARD = "101"
    INSUFFICIENT_FUNDS = "116"
    NOT_PERMITTED = "119"
    STOLEN_CARD = "209"


def trigger_of(text: str) -> Trigger | None:
    """The trigger ``text`` names, or None: anything else is declined with a CVV2, approved without one."""
    try:
        return Trigger(text)
    except ValueError:
        return None


# A card payment (sale, preauth, rebill, recurring charge) whose amount in minor units ends in these digits
# is declined for insufficient funds (116) where the card would be approved: the one amount-dependent
# decline, so that a rebill's enumerated amounts (CONTRACT §17) can be tried until a lower one is approved.
SHORT_OF_FUNDS_ENDING = "116"


def short_of_funds(amount: int, has_cvv: bool) -> bool:
    """Whether the sandbox's card has too little for a payment of ``amount`` (minor units) made without a
    CVV2 (a rebill, a recurring charge: CONTRACT §9 approves CVV2 123 whatever the amount): 11.16 USD,
    1116 JPY and 0.116 KWD do not pass, 11.15 does."""
    return not has_cvv and str(amount).endswith(SHORT_OF_FUNDS_ENDING)
