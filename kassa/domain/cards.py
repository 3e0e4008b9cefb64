"""Card number, CVV and expiry rules.

Error messages never contain the PAN or CVV: they end up in API responses and logs.
"""

import datetime
import functools
import re
from dataclasses import dataclass
from enum import StrEnum

_PAN_MIN, _PAN_MAX = 12, 19
# Single spaces or hyphens between digit groups, as people copy numbers off cards.
PAN_TEXT = re.compile(r"[0-9]+(?:[ -][0-9]+)*")
_DIGITS = re.compile(r"[0-9]+")  # not \d or str.isdigit: both accept non-ASCII digits
_MONTH = re.compile(r"0?[1-9]|1[0-2]")
_YEAR = re.compile(r"[0-9]{2}|[0-9]{4}")
_MAX_YEARS_AHEAD = 50


class CardError(ValueError):
    """Invalid card data; `field` names the request field when exactly one part is wrong.

    It stays None when no single field is to blame, e.g. an expired card.
    """

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class Brand(StrEnum):
    VISA = "VISA"
    MASTERCARD = "MASTERCARD"
    AMEX = "AMEX"
    MIR = "MIR"
    UNIONPAY = "UNIONPAY"
    JCB = "JCB"
    DISCOVER = "DISCOVER"
    DINERS = "DINERS"
    MAESTRO = "MAESTRO"


# (prefix length, first, last, brand). brand_of tries longer prefixes first, so a
# narrow range such as Discover 6011 wins over any broader one sharing its leading digits. Hosted Fields'
# iframes get the same table (``pages.hosted_fields``), so that the payer's browser sees the same brands.
IIN_RANGES: tuple[tuple[int, int, int, Brand], ...] = tuple(
    sorted(
        [
            (1, 4, 4, Brand.VISA),
            (2, 51, 55, Brand.MASTERCARD),
            (4, 2221, 2720, Brand.MASTERCARD),
            (2, 34, 34, Brand.AMEX),
            (2, 37, 37, Brand.AMEX),
            (4, 2200, 2204, Brand.MIR),
            (2, 62, 62, Brand.UNIONPAY),
            (2, 81, 81, Brand.UNIONPAY),
            (4, 3528, 3589, Brand.JCB),
            (4, 6011, 6011, Brand.DISCOVER),
            (3, 644, 649, Brand.DISCOVER),
            (2, 65, 65, Brand.DISCOVER),
            (3, 300, 305, Brand.DINERS),
            (2, 36, 36, Brand.DINERS),
            (2, 38, 39, Brand.DINERS),
            (2, 50, 50, Brand.MAESTRO),
            (2, 56, 58, Brand.MAESTRO),
            (2, 63, 63, Brand.MAESTRO),
            (2, 67, 67, Brand.MAESTRO),
        ],
        key=lambda rule: -rule[0],
    )
)


_IIN_LONGEST = max(length for length, *_ in IIN_RANGES)

# The lengths each brand issues numbers in. Hosted Fields' card-number iframe takes a number of its brand as
# complete, and valid, at these lengths alone (another brand's, or none: any length the gateway accepts);
# the gateway itself accepts any length within _PAN_MIN.._PAN_MAX, so a brand's new length still pays.
ISSUED_LENGTHS: dict[Brand, tuple[int, ...]] = {
    Brand.AMEX: (15,),
    Brand.MASTERCARD: (16,),
    Brand.MIR: (16, 17, 18, 19),
    Brand.VISA: (13, 16, 19),
    Brand.DINERS: (14, 15, 16, 17, 18, 19),
}

# An ASCII digit to the value of the digit doubled, less 9 past 9.
_LUHN_DOUBLED = bytes.maketrans(b"0123456789", bytes([0, 2, 4, 6, 8, 1, 3, 5, 7, 9]))


def luhn_valid(digits: str) -> bool:
    """Catches most typos before a number reaches the acquirer."""
    if _DIGITS.fullmatch(digits) is None:
        return False
    # From the right, the digits as they are plus every second one doubled (less 9 past 9): summed as
    # bytes, the doubled ones through a table, a sixth of the cost of a loop over the digits.
    raw = digits.encode("ascii")
    kept, doubled = raw[-1::-2], raw[-2::-2]
    return (sum(kept) - ord("0") * len(kept) + sum(doubled.translate(_LUHN_DOUBLED))) % 10 == 0


def normalize_pan(text: str) -> str:
    """Strip group separators and validate; the result is the only PAN form stored or sent on."""
    if PAN_TEXT.fullmatch(text) is None:
        raise CardError(f"must be {_PAN_MIN} to {_PAN_MAX} digits")
    pan = _pan_shaped(text.replace(" ", "").replace("-", ""))
    if not luhn_valid(pan):
        raise CardError("fails the Luhn check")
    return pan


def _pan_shaped(pan: str) -> str:
    """Shape only, no Luhn: masking must also work on a number the acquirer later declines."""
    if _DIGITS.fullmatch(pan) is None or not _PAN_MIN <= len(pan) <= _PAN_MAX:
        raise CardError(f"must be {_PAN_MIN} to {_PAN_MAX} digits")
    return pan


def brand_of(pan: str) -> Brand | None:
    """Works on a full PAN or just its BIN; None means an unrecognised network, which callers may accept."""
    if _DIGITS.fullmatch(pan) is None:
        return None
    return _brand_of_prefix(pan[:_IIN_LONGEST])


@functools.lru_cache(maxsize=4096)  # every sale asks twice (number, then CVV length); few prefixes recur
def _brand_of_prefix(prefix: str) -> Brand | None:
    for length, first, last, brand in IIN_RANGES:
        if len(prefix) >= length and first <= int(prefix[:length]) <= last:
            return brand
    return None


def cvv_lengths(brand: Brand | None) -> tuple[int, ...]:
    """With the brand unknown either common length is accepted rather than rejecting a real card."""
    if brand is None:
        return (3, 4)
    return (4,) if brand is Brand.AMEX else (3,)


def cvv_valid(cvv: str, brand: Brand | None) -> bool:
    return _DIGITS.fullmatch(cvv) is not None and len(cvv) in cvv_lengths(brand)


def browser_rules() -> dict[str, object]:
    """These rules as a browser's script reads them (Hosted Fields' iframes): brands by IIN, longest prefix
    first; each brand's issued lengths and CVV lengths; the lengths any number may have; how many years
    ahead an expiry may be. The iframes check with the gateway's own rules, never a copy of them."""
    return {
        "brands": [[length, first, last, brand.value] for length, first, last, brand in IIN_RANGES],
        "panLengths": {brand.value: list(lengths) for brand, lengths in ISSUED_LENGTHS.items()},
        "panRange": [_PAN_MIN, _PAN_MAX],
        "cvvLengths": {brand.value: list(cvv_lengths(brand)) for brand in Brand},
        "cvvLengthsUnknown": list(cvv_lengths(None)),
        "maxYearsAhead": _MAX_YEARS_AHEAD,
    }


@dataclass(frozen=True, slots=True)
class Expiry:
    month: int
    year: int  # four digits, so comparisons need no century guess

    def passed(self, today: datetime.date) -> bool:
        """Cards are valid through the last day of the expiry month, so months are compared, not dates."""
        return (self.year, self.month) < (today.year, today.month)


def parse_expiry(month: str, year: str, today: datetime.date) -> Expiry:
    """`today` is passed in so the caller decides the clock (and tests can pin it)."""
    if _MONTH.fullmatch(month) is None:
        raise CardError("expire_month must be 01 to 12", field="expire_month")
    if _YEAR.fullmatch(year) is None:
        raise CardError("expire_year must be 2 or 4 digits", field="expire_year")
    expiry = Expiry(int(month), int(year) + (2000 if len(year) == 2 else 0))
    if expiry.passed(today):
        raise CardError("card is expired")
    if expiry.year > today.year + _MAX_YEARS_AHEAD:
        raise CardError(f"expire_year must be at most {_MAX_YEARS_AHEAD} years ahead", field="expire_year")
    return expiry


def bin_of(pan: str) -> str:
    return _pan_shaped(pan)[:6]


def last_four(pan: str) -> str:
    return _pan_shaped(pan)[-4:]


def mask_pan(pan: str) -> str:
    """Keeps BIN and last four, the most PCI DSS allows to be displayed; too short a PAN is
    refused because its BIN and last four would overlap and reveal it whole."""
    pan = _pan_shaped(pan)
    return pan[:6] + "*" * (len(pan) - 10) + pan[-4:]


def mask_stored(bin_: str, last_four: str, brand: str | None) -> str:
    """A stored card for display: only BIN and last four are kept in clear, so the hidden digits are
    counted from the brand's usual length (15 for American Express, 16 for the others)."""
    hidden = (15 if brand == Brand.AMEX else 16) - len(bin_) - len(last_four)
    return bin_ + "*" * hidden + last_four
