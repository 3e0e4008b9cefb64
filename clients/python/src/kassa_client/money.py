"""Amounts (CONTRACT §3): decimals in major units on the wire, integer minor units in ``control``, with the
currency's ISO 4217 exponent. Never a float."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

# ISO 4217 minor units that are not 2 (the common case).
_EXPONENTS = {
    **dict.fromkeys(
        ("BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF",
         "XOF", "XPF"),
        0,
    ),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
    **dict.fromkeys(("CLF", "UYW"), 4),
}  # fmt: skip

Amount = Decimal | str | int
"""Major units: ``Decimal("10.42")``, ``"10.42"`` or ``10`` (an int is whole major units, never minor)."""


def exponent(currency: str) -> int:
    """The number of fraction digits of ``currency`` (USD 2, JPY 0, KWD 3)."""
    return _EXPONENTS.get(currency.upper(), 2)


def to_decimal(amount: Amount, currency: str) -> Decimal:
    """``amount`` as a Decimal with exactly the currency's fraction digits; ValueError when it has more
    digits than the currency allows, is not a number, or is a float."""
    if isinstance(amount, float):  # a float cannot say 0.1 exactly: refuse it rather than guess
        raise TypeError("amounts are Decimal, str or int, never float")
    try:
        value = Decimal(str(amount).strip())
    except InvalidOperation:
        raise ValueError(f"amount {amount!r} is not a decimal number") from None
    places = exponent(currency)
    quantum = Decimal(1).scaleb(-places)
    if not value.is_finite() or value != value.quantize(quantum):
        raise ValueError(f"amount {amount!r} has more than {places} fraction digits for {currency}")
    return value.quantize(quantum)


def from_minor(minor: int, currency: str) -> Decimal:
    """Minor units (``1042`` USD) as major units (``Decimal("10.42")``)."""
    return Decimal(minor).scaleb(-exponent(currency))


def to_minor(amount: Amount, currency: str) -> int:
    """Major units as integer minor units: ``10.42`` USD is ``1042``, ``500`` JPY ``500``, ``1.234`` KWD ``1234``."""
    return int(to_decimal(amount, currency).scaleb(exponent(currency)))


def wire(amount: Amount, currency: str) -> str:
    """The request's ``amount`` value: major units with ``.`` and the currency's fraction digits."""
    return format(to_decimal(amount, currency), "f")
