"""Money as integer minor units.

Amounts travel as decimal text on the wire and as integers everywhere else, so
rounding never happens: text that cannot be represented exactly is refused.
"""

import re
from dataclasses import dataclass


class AmountError(ValueError):
    """Bad amount or currency; the message omits the field name so callers can prefix it."""


@dataclass(frozen=True, slots=True)
class Currency:
    code: str
    exponent: int  # ISO 4217 minor unit: digits allowed after the decimal point


# ISO 4217 circulating currencies by minor unit. Fund codes (BOV, CLF, USN, ...) and
# units without a minor unit (XAU, XDR, XTS, ...) are left out: cards cannot settle in them.
_EXPONENTS: dict[int, str] = {
    0: "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX VND VUV XAF XOF XPF",
    3: "BHD IQD JOD KWD LYD OMR TND",
    2: (
        "AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BRL BSD BTN BWP "
        "BYN BZD CAD CDF CHF CNY COP CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP "
        "GBP GEL GHS GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW "
        "KYD KZT LAK LBP LKR LRD LSL MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR "
        "MZN NAD NGN NIO NOK NPR NZD PAB PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD SCR "
        "SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TOP TRY TTD TWD TZS "
        "UAH USD UYU UZS VED VES WST XCD XCG YER ZAR ZMW ZWG"
    ),
}

CURRENCIES: dict[str, Currency] = {
    code: Currency(code, exponent) for exponent, codes in _EXPONENTS.items() for code in codes.split()
}

# More than 15 integer digits would overflow 64-bit minor units for 3-decimal currencies.
_MAX_INTEGER_DIGITS = 15
# [0-9] rather than \d: \d also matches Arabic-Indic and other Unicode digits.
_AMOUNT = re.compile(r"(?P<integer>[0-9]+)(?:\.(?P<fraction>[0-9]+))?")


def currency(code: str) -> Currency:
    """Look up a currency; lower case is refused because ISO alpha-3 codes are upper case."""
    found = CURRENCIES.get(code)
    if found is None:
        raise AmountError("must be an ISO 4217 currency code")
    return found


def parse_amount(text: str, cur: Currency) -> int:
    """Convert major-unit decimal text to minor units without ever going through float."""
    match = _AMOUNT.fullmatch(text)
    if match is None:
        raise AmountError("must be a decimal number like 10.42")
    integer, fraction = match["integer"], match["fraction"] or ""
    if len(integer) > _MAX_INTEGER_DIGITS:
        raise AmountError(f"must have at most {_MAX_INTEGER_DIGITS} integer digits")
    if len(fraction) > cur.exponent:
        raise AmountError(f"allows at most {cur.exponent} fraction digits for {cur.code}")
    return int(integer + fraction.ljust(cur.exponent, "0"))


def format_amount(minor: int, cur: Currency) -> str:
    """Inverse of parse_amount; always prints every minor digit so output is stable for signatures."""
    sign = "-" if minor < 0 else ""
    digits = str(abs(minor))
    if cur.exponent == 0:
        return sign + digits
    digits = digits.rjust(cur.exponent + 1, "0")
    return f"{sign}{digits[: -cur.exponent]}.{digits[-cur.exponent :]}"
