"""Field rules of request schemas: each field names its validator, which turns text into a checked value.

A validator receives the field's text and the whole form (a few rules depend on another field: an
amount on its currency, a CVV on the card's brand). It raises ``FieldProblem`` with a phrase that
follows the field's name in the merchant-facing message ("amount has more fraction digits ...").
"""

from __future__ import annotations

import ipaddress
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from kassa import clock
from kassa.api.errors import ApiError, Code, field_error
from kassa.domain import cards, destinations, money, rebills, urls


class FieldProblem(ValueError):
    pass


Validator = Callable[[str, Mapping[str, str]], Any]
V = TypeVar("V", bound=Validator)

# The JSON Schema (OpenAPI) constraints of the text each validator accepts, declared beside it.
_SCHEMAS: dict[Validator, dict[str, Any]] = {}
# What ``validate`` refuses in every field, as an ECMA-262 pattern for the fields without one of their own.
_NO_CONTROLS = "^[^\\x00-\\x1f\\x7f-\\x9f]*$"


def described(check: V, **schema: Any) -> V:
    _SCHEMAS[check] = schema
    return check


def schema_of(check: Validator) -> dict[str, Any]:
    """The constraints of ``check`` for the OpenAPI document; a validator not described has none."""
    return dict(_SCHEMAS.get(check, {}))


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    check: Validator
    required: bool = False
    description: str = ""


# C0 controls (NUL among them, which PostgreSQL refuses to store), DEL and C1 controls: no field of any
# operation has a use for them, and they would reach storage, logs, pages and callbacks.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def validate(fields: Sequence[Field], form: Mapping[str, str]) -> dict[str, Any]:
    """Checks ``form`` against ``fields`` in declared order; the first problem is refused with code 1."""
    values: dict[str, Any] = {}
    for field in fields:
        text = form.get(field.name, "")
        if text == "":
            if field.required:
                raise field_error(field.name, "is required")
            continue
        if _CONTROL.search(text):
            raise field_error(field.name, "contains control characters")
        try:
            values[field.name] = field.check(text, form)
        except cards.CardError as problem:
            if problem.field:  # the message already names the field at fault
                raise ApiError(Code.FIELD, str(problem)) from None
            raise field_error(field.name, str(problem)) from None
        except (FieldProblem, money.AmountError) as problem:
            raise field_error(field.name, str(problem)) from None
    return values


def text(max_length: int = 128) -> Validator:
    """Any text up to ``max_length`` (``validate`` has refused control characters in every field)."""

    def check(value: str, _form: Mapping[str, str]) -> str:
        if len(value) > max_length:
            raise FieldProblem(f"is longer than {max_length} characters")
        return value

    return described(check, maxLength=max_length, pattern=_NO_CONTROLS)


def digits(max_length: int = 19) -> Validator:
    def check(value: str, _form: Mapping[str, str]) -> str:
        if not (value.isascii() and value.isdigit()) or len(value) > max_length:
            raise FieldProblem(f"must be at most {max_length} digits")
        return value

    return described(check, maxLength=max_length, pattern="^[0-9]+$")


@partial(described, maxLength=18, pattern="^[0-9]+$")
def order_id(value: str, _form: Mapping[str, str]) -> int:
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise FieldProblem("must be a gateway order id (digits)")
    return int(value)


_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$")


@partial(described, maxLength=254, pattern=_EMAIL.pattern)
def email(value: str, _form: Mapping[str, str]) -> str:
    if len(value) > 254 or not _EMAIL.match(value):
        raise FieldProblem("is not an e-mail address")
    return value


@partial(described, maxLength=urls.MAX_LENGTH, pattern=urls.PATTERN, format="uri")
def url(value: str, _form: Mapping[str, str]) -> str:
    """A URL the gateway can send to or redirect to (``domain.urls``), kept as the merchant wrote it."""
    try:
        urls.sendable(value)
    except urls.UrlError as problem:
        raise FieldProblem(str(problem)) from None
    return value


_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = re.compile(rf"(?:{_OCTET}\.){{3}}{_OCTET}")


@partial(described, maxLength=45, pattern="^[0-9A-Fa-f:.]+$")
def ip_address(value: str, _form: Mapping[str, str]) -> str:
    if _IPV4.fullmatch(value):  # the common case, already canonical: no need for the slow parser
        return value
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise FieldProblem("is not an IP address") from None


@partial(described, format="uuid")
def serial(value: str, _form: Mapping[str, str]) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise FieldProblem("is not a serial number (UUID)") from None


@partial(described, enum=sorted(money.CURRENCIES))
def currency_code(value: str, _form: Mapping[str, str]) -> money.Currency:
    return money.currency(value)


# The longest amount text that can be valid: 13 integer digits (10^12 JPY) or 10 and 3 fraction digits.
_AMOUNT_LENGTH = 14


_AMOUNT_PATTERN = "^[0-9]+(\\.[0-9]+)?$"


def amount(*, positive: bool = True) -> Validator:
    def check(value: str, form: Mapping[str, str]) -> int:
        minor = _minor_units(value, form)
        if positive and minor <= 0:
            raise FieldProblem("must be greater than zero")
        if not positive and minor != 0:
            raise FieldProblem("must be zero for an account verification")
        return minor

    return described(check, pattern=_AMOUNT_PATTERN, maxLength=_AMOUNT_LENGTH)


@partial(described, pattern=_AMOUNT_PATTERN, maxLength=_AMOUNT_LENGTH)
def amount_part(value: str, form: Mapping[str, str]) -> int:
    """A part of the request's amount in its currency, such as the VAT it includes: zero or more (whether
    it fits in the amount is the operation's rule)."""
    return _minor_units(value, form)


def _minor_units(value: str, form: Mapping[str, str]) -> int:
    try:
        cur = money.currency(form.get("currency", ""))
    except money.AmountError:
        raise FieldProblem("needs a valid currency") from None
    return money.parse_amount(value, cur)


_AMOUNT_ITEM = " *[0-9]+(\\.[0-9]+)? *"


def amount_list(max_count: int) -> Validator:
    """Comma-separated amounts in ``currency``, each greater than zero and at most the request's ``amount``
    (``enumerate_amounts``); the ones below ``amount``, each once, highest first (``domain.rebills``)."""
    max_length = max_count * (_AMOUNT_LENGTH + 3)

    def check(value: str, form: Mapping[str, str]) -> tuple[int, ...]:
        if len(value) > max_length:
            raise FieldProblem(f"is longer than {max_length} characters")
        items = [item.strip() for item in value.split(",")]
        if len(items) > max_count:
            raise FieldProblem(f"lists more than {max_count} amounts")
        try:
            cur = money.currency(form.get("currency", ""))
            first = money.parse_amount(form.get("amount", ""), cur)
        except money.AmountError:
            raise FieldProblem("needs a valid currency and amount") from None
        amounts = [_listed(item, cur) for item in items]
        if any(listed > first for listed in amounts):
            raise FieldProblem("lists an amount greater than amount")
        return rebills.lower_amounts(amounts, first)

    return described(check, pattern=f"^{_AMOUNT_ITEM}(,{_AMOUNT_ITEM}){{0,{max_count - 1}}}$", maxLength=max_length)


def _listed(item: str, cur: money.Currency) -> int:
    try:
        minor = money.parse_amount(item, cur)
    except money.AmountError as problem:
        raise FieldProblem(f"has {item!r}, which {problem}") from None
    if minor <= 0:
        raise FieldProblem(f"has {item!r}, which must be greater than zero")
    return minor


@partial(described, pattern=f"^{cards.PAN_TEXT.pattern}$", maxLength=37)
def card_number(value: str, _form: Mapping[str, str]) -> str:
    return cards.normalize_pan(value)


@partial(described, pattern="^(0?[1-9]|1[0-2])$")
def expire_month(value: str, _form: Mapping[str, str]) -> int:
    if not (value.isascii() and value.isdigit() and 1 <= int(value) <= 12 and len(value) <= 2):
        raise FieldProblem("must be 01 to 12")
    return int(value)


@partial(described, pattern="^([0-9]{2}|[0-9]{4})$")
def expire_year(value: str, form: Mapping[str, str]) -> int:
    """The 4-digit year; also refuses a card past its expiry month, as CONTRACT §9 asks before processing."""
    try:
        return cards.parse_expiry(form.get("expire_month", ""), value, clock.today()).year
    except cards.CardError as problem:
        if problem.field is None:
            raise FieldProblem("is in the past: the card is expired") from None
        raise


@partial(described, pattern="^[0-9]{3,4}$")
def cvv(value: str, form: Mapping[str, str]) -> str:
    pan = form.get("credit_card_number", "").replace(" ", "").replace("-", "")
    if not cards.cvv_valid(value, cards.brand_of(pan)):
        raise FieldProblem("has the wrong length for the card")
    return value


def _bank_number(check: Callable[[str], str]) -> Validator:
    """A bank number checked as payouts check theirs (``domain.destinations``), refused naming this field."""

    def validator(value: str, _form: Mapping[str, str]) -> str:
        try:
            return check(value)
        except destinations.NumberError as problem:
            raise FieldProblem(str(problem)) from None

    return validator


bic = described(_bank_number(destinations.bic), maxLength=16, pattern="^[0-9A-Za-z -]+$")


def _account_or_iban(text: str) -> str:
    """An account number, checked as an IBAN when it has an IBAN's shape."""
    return destinations.iban_number(text) if destinations.looks_like_iban(text) else destinations.account_number(text)


bank_account_number = described(_bank_number(_account_or_iban), maxLength=42, pattern="^[0-9A-Za-z -]+$")


def integer(low: int, high: int) -> Validator:
    """A whole number from ``low`` to ``high``, perhaps negative."""

    def check(value: str, _form: Mapping[str, str]) -> int:
        text = value.removeprefix("-")
        if not (text.isascii() and text.isdigit() and len(text) <= 9 and low <= int(value) <= high):
            raise FieldProblem(f"must be a whole number from {low} to {high}")
        return int(value)

    return described(check, pattern="^-?[0-9]+$", maxLength=10)


def choice(*allowed: str) -> Validator:
    def check(value: str, _form: Mapping[str, str]) -> str:
        if value not in allowed:
            raise FieldProblem("must be one of " + ", ".join(allowed))
        return value

    return described(check, enum=list(allowed))
