"""Payout destinations: which kind a payout's fields name, and the checked e-wallet.

Pure: a payout's form (canonical field names, trimmed text) in, a checked destination out. A field sent
empty counts as not sent. A card destination is only recognised here (`kind_of`): its number and expiry
are the card code's (`cards.py`, `api/fields.py`).

Error messages never contain an account, IBAN, card or phone number: they end up in API responses and logs.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum


class DestinationError(ValueError):
    """A refused destination; `field` names the request field at fault."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


class Kind(StrEnum):
    CARD = "card"
    BANK = "bank"
    EWALLET = "ewallet"
    PHONE = "phone"


# Sent only by the original gateway's v4 bank payout, kept with the account as sent.
BANK_EXTRA = ("bank_branch", "bank_province", "bank_city")
# The fields that tell a destination's kind, in the order messages list them. first_name and last_name
# are the customer's, sent with any kind: they may name a bank account's holder but decide nothing.
# v4 callers spell the card reference either way; every other name arrives canonical.
FIELDS: dict[Kind, tuple[str, ...]] = {
    Kind.CARD: (
        "credit_card_number",
        "expire_month",
        "expire_year",
        "card_printed_name",
        "destination-card-ref-id",
        "destination_card_ref_id",
    ),
    Kind.BANK: ("account_number", "bank_name", "routing_number", "bank_bic", "iban", "account_name", *BANK_EXTRA),
    Kind.EWALLET: ("ewallet_type", "ewallet_wallet"),
    Kind.PHONE: ("receiver_phone", "receiver_bank_id", "receiver_name"),
}
_NO_DESTINATION = "a payout needs a destination: card, bank account, e-wallet or phone fields"


@dataclass(frozen=True, slots=True)
class EWallet:
    wallet_type: str
    wallet: str


def kind_of(form: Mapping[str, str]) -> Kind:
    """The payout_method when sent, else the one kind whose fields were sent.

    A payout_method is checked against the fields, not trusted over them: a card number sent beside
    payout_method=bank is refused rather than ignored, since the merchant meant one of the two and only
    they know which.
    """
    sent = {kind: [name for name in names if form.get(name)] for kind, names in FIELDS.items()}
    kinds = [kind for kind, names in sent.items() if names]
    if method := form.get("payout_method"):
        named = _method(method)
        for kind in kinds:
            if kind is not named:
                fields = ", ".join(sent[kind])
                raise DestinationError(
                    f"payout_method is {named}, but {kind} fields were sent: {fields}", sent[kind][0]
                )
        return named
    if not kinds:
        raise DestinationError(_NO_DESTINATION, "payout_method")
    if len(kinds) > 1:
        listed = "; ".join(f"{kind} ({', '.join(sent[kind])})" for kind in kinds)
        raise DestinationError(
            f"a payout has one destination, but fields of several were sent: {listed}", sent[kinds[1]][0]
        )
    return kinds[0]


def _method(text: str) -> Kind:
    try:
        return Kind(text)
    except ValueError:
        raise DestinationError("payout_method must be one of " + ", ".join(Kind), "payout_method") from None


def ewallet(form: Mapping[str, str]) -> EWallet:
    """Wallet types and identifiers are each provider's own, so both are taken as sent."""
    return EWallet(_required(form, "ewallet_type", "an e-wallet"), _required(form, "ewallet_wallet", "an e-wallet"))


def _required(form: Mapping[str, str], name: str, destination: str) -> str:
    if not (value := form.get(name, "")):
        raise DestinationError(f"{name} is required for a payout to {destination}", name)
    return value


def _compact(number: str) -> str:
    """Without the spaces and hyphens people group numbers with."""
    return number.replace(" ", "").replace("-", "")


def trigger_digits(number: str) -> str:
    """The characters the sandbox reads its outcome table from when there is no CVV2 (CONTRACT §9): the
    last three of the card, account, IBAN or phone number as stored, whatever its grouping was."""
    return _compact(number)[-3:]


def mask_account(number: str) -> str:
    """At most the last four characters, and never more than half of a short number. The stars are four
    whatever the length, so the mask does not tell the length either."""
    number = _compact(number)
    shown = min(4, len(number) // 2)
    return "****" + number[len(number) - shown :]


def mask_name(name: str) -> str:
    """The first letter of each word ("John Smith" → "J*** S****"): enough for a payer to recognise the
    recipient they meant in the phone payout's name check, too little to learn a stranger's name from a
    phone number."""
    return " ".join(word[0] + "*" * (len(word) - 1) for word in name.split())
