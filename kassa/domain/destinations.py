"""Payout destinations: which kind a payout's fields name, and the checked bank account, e-wallet and phone.

Pure: a payout's form (canonical field names, trimmed text) in, a checked destination out. A field sent
empty counts as not sent. A card destination is only recognised here (`kind_of`): its number and expiry
are the card code's (`cards.py`, `api/fields.py`).

Error messages never contain an account, IBAN, card or phone number: they end up in API responses and logs.
"""

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import phonenumbers
import stdnum.bic
import stdnum.iban
import stdnum.us.rtn
from stdnum.exceptions import InvalidChecksum, InvalidComponent, InvalidLength, ValidationError


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


# Bank fields the original gateway's v4 bank payout example sends besides the account; kept as sent.
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
_NO_DESTINATION = "payout_method is required, or the fields of a card, bank account, e-wallet or phone destination"
# ASCII only (not \w or str.isalnum, which take any script's letters and digits), spaces and hyphens removed.
_ACCOUNT = re.compile(r"[0-9A-Za-z]{1,34}")
_IBAN = re.compile(r"[A-Za-z]{2}[0-9]{2}[0-9A-Za-z]{1,30}")
_BIC = re.compile(r"[0-9A-Za-z]+")
_ROUTING = re.compile(r"[0-9]{9}")
# "+" then digits, in groups as people write them; phonenumbers alone would also read letters
# ("+1 800 FLOWERS"), extensions and other scripts' digits.
_PHONE = re.compile(r"\+[0-9]+(?:[ -][0-9]+)*")
_BAD_PHONE = "receiver_phone must be a valid phone number in E.164 form, such as +447911123456"


@dataclass(frozen=True, slots=True)
class BankAccount:
    number: str  # letters and digits; the IBAN when only an IBAN was sent
    bank_name: str
    routing_number: str | None
    bic: str | None  # upper case
    iban: str | None  # upper case, without spaces
    holder_name: str
    extra: dict[str, str]  # those of BANK_EXTRA sent, as sent


@dataclass(frozen=True, slots=True)
class EWallet:
    wallet_type: str
    wallet: str


@dataclass(frozen=True, slots=True)
class Phone:
    number: str  # E.164: "+" and the digits, such as "+447911123456"
    bank_id: str
    receiver_name: str


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


def bank_account(form: Mapping[str, str]) -> BankAccount:
    """None of routing_number, bank_bic and iban is required: which one a bank needs depends on its
    country, which the payout does not name. Each one sent is checked."""
    iban = _optional(form, "iban", iban_number)
    return BankAccount(
        number=_account_number(form.get("account_number", ""), iban),
        bank_name=_required(form, "bank_name", "a bank account"),
        routing_number=_optional(form, "routing_number", routing_number),
        bic=_optional(form, "bank_bic", bic),
        iban=iban,
        holder_name=_holder_name(form),
        extra={name: form[name] for name in BANK_EXTRA if form.get(name)},
    )


class NumberError(ValueError):
    """A refused bank number: the phrase that follows the field's name, whatever the field is called
    (``bank_bic`` in a payout, ``recipient-bank-bic`` in a bank wire)."""


def named(name: str, check: Callable[[str], str], text: str) -> str:
    """``check(text)``, its refusal a ``DestinationError`` naming the field ``name``."""
    try:
        return check(text)
    except NumberError as problem:
        raise DestinationError(f"{name} {problem}", name) from None


def _optional(form: Mapping[str, str], name: str, check: Callable[[str], str]) -> str | None:
    return named(name, check, text) if (text := form.get(name, "")) else None


def _account_number(text: str, iban: str | None) -> str:
    """An IBAN holds the domestic account number, so one sent alone stands in for it (SEPA payouts
    often carry only the IBAN). Sent together the two are not compared: where the account number sits
    in an IBAN is each country's own layout."""
    if not text:
        if iban is None:
            raise DestinationError(
                "account_number (or iban) is required for a payout to a bank account", "account_number"
            )
        return iban
    return named("account_number", account_number, text)


def account_number(text: str) -> str:
    number = _compact(text)
    if _ACCOUNT.fullmatch(number) is None:
        raise NumberError("must be 1 to 34 letters and digits")
    return number


def looks_like_iban(text: str) -> bool:
    """Two letters of country and two check digits first: an IBAN's shape, which no domestic account
    number of the countries that have IBANs takes."""
    return _IBAN.fullmatch(_compact(text)) is not None


def iban_number(text: str) -> str:
    """The mod-97 check digits, then the length and layout of the IBANs of the country it names (and
    its national check digits where stdnum knows them): the registry changes, and stdnum follows it."""
    number = _compact(text)
    if _IBAN.fullmatch(number) is None:
        raise NumberError("must be a country code, 2 check digits and up to 30 letters or digits")
    try:
        return stdnum.iban.validate(number)
    except InvalidChecksum:
        raise NumberError("fails its check digits") from None
    except ValidationError:
        raise NumberError("does not have the length and layout of its country's IBANs") from None


def bic(text: str) -> str:
    """A BIC (SWIFT code), upper case: its length, layout and country."""
    number = _compact(text)
    if _BIC.fullmatch(number) is None:
        raise NumberError("must be letters and digits")
    try:
        return stdnum.bic.validate(number)
    except InvalidLength:
        raise NumberError("must be 8 or 11 characters") from None
    except InvalidComponent:
        raise NumberError("names no known country") from None
    except ValidationError:
        raise NumberError(
            "must be 4 letters of bank, 2 of country, 2 characters of location and an optional 3 of branch"
        ) from None


def routing_number(text: str) -> str:
    """A US ABA number: the ninth digit checks the first eight."""
    if _ROUTING.fullmatch(text) is None:
        raise NumberError("must be 9 digits")
    try:
        return stdnum.us.rtn.validate(text)
    except ValidationError:
        raise NumberError("fails its ABA check digit") from None


def _holder_name(form: Mapping[str, str]) -> str:
    """account_name, else the customer's first and last name, else none: SPEC.md's own v4 bank payout
    example names no holder, and merchant code written from it must work."""
    if name := form.get("account_name"):
        return name
    return " ".join(part for part in (form.get("first_name"), form.get("last_name")) if part)


def ewallet(form: Mapping[str, str]) -> EWallet:
    """Wallet types and identifiers are each provider's own, so both are taken as sent."""
    return EWallet(_required(form, "ewallet_type", "an e-wallet"), _required(form, "ewallet_wallet", "an e-wallet"))


def _required(form: Mapping[str, str], name: str, destination: str) -> str:
    if not (value := form.get(name, "")):
        raise DestinationError(f"{name} is required for a payout to {destination}", name)
    return value


def phone(form: Mapping[str, str]) -> Phone:
    """The receiver's bank and name are the instant payment system's own identifiers, taken as sent."""
    return Phone(
        _e164(form.get("receiver_phone", "")),
        _required(form, "receiver_bank_id", "a phone"),
        _required(form, "receiver_name", "a phone"),
    )


def _e164(text: str) -> str:
    """phonenumbers knows each country's numbering plan (lengths, ranges in use), which a length rule
    would not: "+1415555" has plausible digits but is no number. A number without its country code is
    refused rather than guessed: the payout names no country to read it in."""
    if not text:
        raise DestinationError("receiver_phone is required for a payout to a phone", "receiver_phone")
    if _PHONE.fullmatch(text) is None:
        raise DestinationError(_BAD_PHONE, "receiver_phone")
    try:
        number = phonenumbers.parse(text, None)
    except phonenumbers.NumberParseException:
        raise DestinationError(_BAD_PHONE, "receiver_phone") from None
    if not phonenumbers.is_valid_number(number):
        raise DestinationError(_BAD_PHONE, "receiver_phone")
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


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


@dataclass(frozen=True, slots=True)
class CardNumber:
    """A card known by its number alone (transfer-by-ref's ``destination-card-no``, pan-eligibility's
    card): no expiry is sent, so it is no stored card; the caller has checked the number (Luhn)."""

    number: str


Destination = BankAccount | EWallet | Phone | CardNumber
_KINDS: dict[Kind, type[BankAccount] | type[EWallet] | type[Phone] | type[CardNumber]] = {
    Kind.CARD: CardNumber,
    Kind.BANK: BankAccount,
    Kind.EWALLET: EWallet,
    Kind.PHONE: Phone,
}


def number_of(destination: Destination) -> str:
    """The number that identifies where the money goes: what is masked, and what the sandbox reads."""
    return destination.wallet if isinstance(destination, EWallet) else destination.number


def unsealed(kind: str, fields: Mapping[str, Any]) -> Destination:
    """A destination from the fields it was stored with (``dataclasses.asdict`` of it, as JSON)."""
    return _KINDS[Kind(kind)](**fields)
