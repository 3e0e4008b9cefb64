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

# The largest amount of one request, in minor units of every currency (KWD 1,000,000,000.000, USD
# 10,000,000,000.00, JPY 1,000,000,000,000). Orders, transactions and ledger entries hold minor units in
# 64-bit columns (9.2 * 10^18): an order's sums (captures, returns, its ledger balances) stay far inside
# them, and a merchant's balance fits a million such amounts before its SUM needs more than 64 bits
# (``storage.ledger`` sums it exactly all the same).
MAX_MINOR = 10**12
# Longer digit strings are refused before they are converted (int() of thousands of digits is slow).
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
    if len(fraction) > cur.exponent:
        raise AmountError(f"allows at most {cur.exponent} fraction digits for {cur.code}")
    if len(integer) > _MAX_INTEGER_DIGITS:
        raise _too_large(cur)
    minor = int(integer + fraction.ljust(cur.exponent, "0"))
    if minor > MAX_MINOR:
        raise _too_large(cur)
    return minor


def _too_large(cur: Currency) -> AmountError:
    return AmountError(f"must be at most {format_amount(MAX_MINOR, cur)} {cur.code}")


def format_amount(minor: int, cur: Currency) -> str:
    """Inverse of parse_amount; always prints every minor digit so output is stable for signatures."""
    sign = "-" if minor < 0 else ""
    digits = str(abs(minor))
    if cur.exponent == 0:
        return sign + digits
    digits = digits.rjust(cur.exponent + 1, "0")
    return f"{sign}{digits[: -cur.exponent]}.{digits[-cur.exponent :]}"
