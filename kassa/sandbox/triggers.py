"""The values that steer the sandbox (CONTRACT §9): the CVV2, or for operations without one the last three
digits of the card, account or phone number."""

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
