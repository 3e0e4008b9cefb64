"""Hosted Fields (CONTRACT §18) without I/O: how long a ticket lives, the error codes the SDK reports and
the gateway's own check of the card the iframes send.

The codes are one table for the gateway and its iframes (the field page carries it as JSON, so the
browser's checks and the server's name the same problem alike). The SDK's own codes, about its
configuration (1xxx), are the script's. 4000-4999 mean the ticket is spent: the merchant's server must
ask for another; every other code leaves it usable for another try.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from enum import StrEnum

from kassa.domain import cards

TICKET_TTL_MS = 15 * 60 * 1000
# The CSS properties a merchant's style bag may set (CONTRACT §18: colours, fonts, letter spacing, line
# height, padding, text alignment), camelCase as the SDK takes them. The field page gets this list with
# its rules and applies it again: a script of the merchant's page can post styles to it directly. The SDK,
# a static script on the merchant's page, holds a copy a test keeps equal to this one.
STYLE_PROPERTIES = (
    "color", "backgroundColor", "caretColor", "fontFamily", "fontSize", "fontStyle", "fontVariant", "fontWeight",
    "letterSpacing", "lineHeight", "padding", "paddingTop", "paddingRight", "paddingBottom", "paddingLeft",
    "textAlign",
)  # fmt: skip


class Part(StrEnum):
    """The three fields, as ``HostedFields.init`` names their types."""

    PAN = "pan"
    EXP = "exp"
    CVV = "cvv"


@dataclass(frozen=True, slots=True)
class Problem:
    code: int
    part: Part | None  # the field at fault, if one is
    message: str  # for the merchant's developer
    payer_message: str  # for the payer, shown in the field and given to onError

    @property
    def spends_ticket(self) -> bool:
        return 4000 <= self.code <= 4999

    def as_json(self) -> dict[str, object]:
        return {"code": self.code, "field": self.part, "message": self.message, "payerMessage": self.payer_message}


PAN_EMPTY = Problem(2001, Part.PAN, "the card number is empty", "Enter the card number.")
PAN_INVALID = Problem(
    2002,
    Part.PAN,
    "the card number is incomplete or fails the Luhn check",
    "This card number is not valid: check the digits.",
)
EXP_EMPTY = Problem(2101, Part.EXP, "the expiry date is empty", "Enter the expiry date.")
EXP_FORMAT = Problem(2102, Part.EXP, "the expiry date is not MM/YY", "Enter the expiry date as MM/YY.")
EXP_PAST = Problem(2103, Part.EXP, "the card has expired", "This card has expired.")
EXP_FAR = Problem(2104, Part.EXP, "the expiry date is too far in the future", "Check the expiry date.")
CVV_EMPTY = Problem(2201, Part.CVV, "the security code is empty", "Enter the security code.")
CVV_LENGTH = Problem(
    2202,
    Part.CVV,
    "the security code has the wrong length for the card's brand",
    "Enter the security code printed on the card.",
)
NETWORK = Problem(
    3001,
    None,
    "the gateway could not be reached; tokenize again with the same ticket",
    "We could not reach the payment service. Please try again.",
)
GATEWAY = Problem(
    3002,
    None,
    "the gateway failed or is busy; tokenize again with the same ticket",
    "The payment service is busy. Please try again.",
)
BUSY = Problem(3003, None, "a tokenization is already running", "Please wait a moment.")
FIELDS_SILENT = Problem(
    3004, None, "the expiry or security code field did not answer: are all three on the page?", "Please try again."
)
TICKET_UNKNOWN = Problem(
    4001,
    None,
    "the ephemeral ticket is unknown, or was issued for another endpoint",
    "This payment page has expired. Please reload it.",
)
TICKET_EXPIRED = Problem(
    4002, None, "the ephemeral ticket has expired (15 minutes)", "This payment page has expired. Please reload it."
)
TICKET_SPENT = Problem(
    4003, None, "the ephemeral ticket was used already", "This payment page has expired. Please reload it."
)
CARD_REFUSED = Problem(
    4004, Part.PAN, "the gateway refused the card number", "This card number is not valid: check the digits."
)

PROBLEMS = (
    PAN_EMPTY, PAN_INVALID, EXP_EMPTY, EXP_FORMAT, EXP_PAST, EXP_FAR, CVV_EMPTY, CVV_LENGTH,
    NETWORK, GATEWAY, BUSY, FIELDS_SILENT, TICKET_UNKNOWN, TICKET_EXPIRED, TICKET_SPENT, CARD_REFUSED,
)  # fmt: skip


class CardProblem(ValueError):
    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


@dataclass(frozen=True, slots=True)
class CheckedCard:
    pan: str
    expiry: cards.Expiry
    cvv: str


def check_card(pan_text: str, exp_text: str, cvv_text: str, today: datetime.date) -> CheckedCard:
    """The gateway's own check of what the iframes send (theirs is a convenience): a number it refuses is
    ``CARD_REFUSED``, which spends the ticket, so that one ticket cannot try number after number."""
    if not pan_text:
        raise CardProblem(PAN_EMPTY)
    try:
        pan = cards.normalize_pan(pan_text)
    except cards.CardError:
        raise CardProblem(CARD_REFUSED) from None
    expiry = _expiry(exp_text, today)
    if not cvv_text:
        raise CardProblem(CVV_EMPTY)
    if not cards.cvv_valid(cvv_text, cards.brand_of(pan)):
        raise CardProblem(CVV_LENGTH)
    return CheckedCard(pan, expiry, cvv_text)


def _expiry(text: str, today: datetime.date) -> cards.Expiry:
    """MM/YY (the field's own format; spaces around the slash allowed)."""
    if not text:
        raise CardProblem(EXP_EMPTY)
    month, slash, year = text.replace(" ", "").partition("/")
    if not slash or len(month) != 2 or len(year) != 2:
        raise CardProblem(EXP_FORMAT)
    try:
        return cards.parse_expiry(month, year, today)
    except cards.CardError as problem:
        if problem.field is None:
            raise CardProblem(EXP_PAST) from None
        far = problem.field == "expire_year" and year.isascii() and year.isdigit()
        raise CardProblem(EXP_FAR if far else EXP_FORMAT) from None
