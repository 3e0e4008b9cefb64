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

# ISO 4217 numeric codes of the currencies above: what ISO 8583 messages carry (field 49, CONTRACT §15).
_NUMERIC = (
    "AED 784 AFN 971 ALL 008 AMD 051 AOA 973 ARS 032 AUD 036 AWG 533 AZN 944 BAM 977 BBD 052 BDT 050 "
    "BGN 975 BHD 048 BIF 108 BMD 060 BND 096 BOB 068 BRL 986 BSD 044 BTN 064 BWP 072 BYN 933 BZD 084 "
    "CAD 124 CDF 976 CHF 756 CLP 152 CNY 156 COP 170 CRC 188 CUP 192 CVE 132 CZK 203 DJF 262 DKK 208 "
    "DOP 214 DZD 012 EGP 818 ERN 232 ETB 230 EUR 978 FJD 242 FKP 238 GBP 826 GEL 981 GHS 936 GIP 292 "
    "GMD 270 GNF 324 GTQ 320 GYD 328 HKD 344 HNL 340 HTG 332 HUF 348 IDR 360 ILS 376 INR 356 IQD 368 "
    "IRR 364 ISK 352 JMD 388 JOD 400 JPY 392 KES 404 KGS 417 KHR 116 KMF 174 KPW 408 KRW 410 KWD 414 "
    "KYD 136 KZT 398 LAK 418 LBP 422 LKR 144 LRD 430 LSL 426 LYD 434 MAD 504 MDL 498 MGA 969 MKD 807 "
    "MMK 104 MNT 496 MOP 446 MRU 929 MUR 480 MVR 462 MWK 454 MXN 484 MYR 458 MZN 943 NAD 516 NGN 566 "
    "NIO 558 NOK 578 NPR 524 NZD 554 OMR 512 PAB 590 PEN 604 PGK 598 PHP 608 PKR 586 PLN 985 PYG 600 "
    "QAR 634 RON 946 RSD 941 RUB 643 RWF 646 SAR 682 SBD 090 SCR 690 SDG 938 SEK 752 SGD 702 SHP 654 "
    "SLE 925 SOS 706 SRD 968 SSP 728 STN 930 SVC 222 SYP 760 SZL 748 THB 764 TJS 972 TMT 934 TND 788 "
    "TOP 776 TRY 949 TTD 780 TWD 901 TZS 834 UAH 980 UGX 800 USD 840 UYU 858 UZS 860 VED 926 VES 928 "
    "VND 704 VUV 548 WST 882 XAF 950 XCD 951 XCG 532 XOF 952 XPF 953 YER 886 ZAR 710 ZMW 967 ZWG 924"
)
NUMERIC: dict[str, str] = dict(zip(_NUMERIC.split()[::2], _NUMERIC.split()[1::2], strict=True))

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


def numeric_code(cur: Currency) -> str:
    """The currency's ISO 4217 numeric code (three digits)."""
    return NUMERIC[cur.code]


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
