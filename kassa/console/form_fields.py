"""Fields of the console's forms read into values, each refusal a ``Problem`` that names its field."""

from __future__ import annotations

from kassa.domain import money
from kassa.domain.merchants import Mode


class Problem(ValueError):
    """What is wrong with a posted form, fit to show above it (it names the field)."""


def currency(text: str, label: str = "Currency") -> money.Currency:
    try:
        return money.currency(text.strip().upper())
    except money.AmountError as problem:
        raise Problem(f"{label} {problem}.") from None


def amount(text: str, cur: money.Currency, label: str) -> int | None:
    """Decimal text in the currency's major units, in minor units; empty is None (no value)."""
    if not text:
        return None
    try:
        return money.parse_amount(text, cur)
    except money.AmountError as problem:
        raise Problem(f"{label} {problem}.") from None


def positive_amount(text: str, cur: money.Currency, label: str = "Amount") -> int:
    minor = amount(text, cur, label)
    if not minor:
        raise Problem(f"{label} must be greater than zero.")
    return minor


def limits(low: int | None, high: int | None) -> None:
    if low is not None and high is not None and low > high:
        raise Problem("Minimum amount must not be above the maximum amount.")


def mode(text: str) -> Mode:
    try:
        return Mode(text)
    except ValueError:
        raise Problem(f"Mode must be one of {', '.join(m.value for m in Mode)}.") from None


def bounded_text(text: str, label: str, longest: int, *, required: bool = False) -> str:
    if required and not text:
        raise Problem(f"{label} is required.")
    if len(text) > longest or not text.isprintable():
        raise Problem(f"{label} must be at most {longest} printable characters.")
    return text


def whole_number(text: str, label: str, highest: int) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 9 or int(text) > highest:
        raise Problem(f"{label} must be a whole number from 0 to {highest}.")
    return int(text)
