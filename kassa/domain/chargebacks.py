"""Chargebacks as operators report them (CONTRACT §16): one typed at the command line or a line of an
acquirer's report, checked field by field before any order is looked up; the card schemes' reason codes;
what makes two reports the same dispute; how a dispute ends.

How much a chargeback may take is an order rule (``orders.plan_chargeback``); its ledger posting is its
type's row (``transactions``: ``Effect.GIVE_BACK``).
"""

from __future__ import annotations

import csv
import datetime
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from importlib import resources

from kassa.domain import money


class DisputeState(StrEnum):
    OPEN = "open"
    WON = "won"  # the merchant's evidence held: the amount is credited back
    LOST = "lost"  # the chargeback stands


@dataclass(frozen=True, slots=True)
class ReasonCode:
    scheme: str  # visa, mastercard
    code: str
    meaning: str


@cache
def reason_codes() -> Mapping[str, ReasonCode]:
    """The schemes' reason codes by code (``reason_codes.toml``, package data read once)."""
    table = tomllib.loads(resources.files("kassa.domain").joinpath("reason_codes.toml").read_text())
    return {
        code: ReasonCode(scheme, code, meaning) for scheme, codes in table.items() for code, meaning in codes.items()
    }


class LineError(ValueError):
    """A report refused: the message names the field (``--amount``, a CSV column) and why."""


@dataclass(frozen=True, slots=True)
class Reported:
    """A chargeback as reported, not yet matched to its order. ``line`` is its line in a file (0: typed)."""

    line: int
    order_id: int | None  # the gateway's orderid, or
    processor_rrn: str | None  # the acquirer's reference of the sale or capture charged back
    amount: str  # major units, as typed: read in the order's currency
    currency: str | None  # the report's; None: the order's
    reason_code: str
    disputed_on: str  # YYYY-MM-DD

    @property
    def names(self) -> str:
        return f"order {self.order_id}" if self.order_id is not None else f"processor-rrn {self.processor_rrn}"


_RRN = re.compile(r"[0-9A-Za-z]{1,32}")
_ORDER_ID = re.compile(r"[0-9]{1,18}")


def reported(
    line: int,
    *,
    order_id: str,
    processor_rrn: str,
    amount: str,
    currency: str | None,
    reason_code: str,
    disputed_on: str,
    today: datetime.date,
    names: Mapping[str, str],
) -> Reported:
    """A report checked field by field; ``names`` are the fields' names as the operator typed them
    (``--order``, or the CSV column), for messages."""
    order_id, processor_rrn = order_id.strip(), processor_rrn.strip()
    if bool(order_id) == bool(processor_rrn):
        raise LineError(f"give either {names['order_id']} or {names['processor_rrn']}, not both nor neither")
    if order_id and not _ORDER_ID.fullmatch(order_id):
        raise LineError(f"{names['order_id']} must be the gateway's order id (digits)")
    if processor_rrn and not _RRN.fullmatch(processor_rrn):
        raise LineError(f"{names['processor_rrn']} must be the acquirer's reference (letters and digits, at most 32)")
    code = reason_code.strip()
    if code not in reason_codes():
        raise LineError(
            f"{names['reason_code']} {code!r} is no Visa or Mastercard reason code (kassa chargeback codes)"
        )
    cur = currency.strip().upper() if currency is not None else None
    if cur is not None and cur not in money.CURRENCIES:
        raise LineError(f"{names['currency']} {cur!r} is no ISO 4217 currency code")
    return Reported(
        line,
        int(order_id) if order_id else None,
        processor_rrn or None,
        amount.strip(),
        cur,
        code,
        _day(disputed_on.strip(), today, names["disputed_on"]),
    )


def _day(text: str, today: datetime.date, name: str) -> str:
    try:
        day = datetime.date.fromisoformat(text)
    except ValueError:
        raise LineError(f"{name} must be a date as YYYY-MM-DD") from None
    if len(text) != 10:
        raise LineError(f"{name} must be a date as YYYY-MM-DD")
    if day > today:
        raise LineError(f"{name} {text} is after today")
    return text


def minor_amount(report: Reported, order_currency: str, name: str) -> int:
    """The amount in the order's minor units; refused when the report names another currency."""
    if report.currency is not None and report.currency != order_currency:
        raise LineError(f"currency {report.currency} is not the order's currency {order_currency}")
    try:
        minor = money.parse_amount(report.amount, money.currency(order_currency))
    except money.AmountError as problem:
        raise LineError(f"{name} {problem}") from None
    if minor <= 0:
        raise LineError(f"{name} must be greater than zero")
    return minor


def age_days(disputed_on: str, today: datetime.date) -> int:
    """How many days ago the acquirer reported the dispute."""
    return (today - datetime.date.fromisoformat(disputed_on)).days


def dedup_key(order_id: int, report: Reported, amount: int) -> str:
    """What makes two reports one dispute: the same order, reason code, day and amount."""
    return f"{order_id}|{report.reason_code}|{report.disputed_on}|{amount}"


# The columns of an import file (``kassa chargeback import``): a header line names them, in any order.
COLUMNS = {
    "order_id": "orderid",
    "processor_rrn": "processor-rrn",
    "amount": "amount",
    "currency": "currency",
    "reason_code": "reason-code",
    "disputed_on": "date",
}
_REQUIRED = ("amount", "currency", "reason-code", "date")


def read_file(text: str, today: datetime.date) -> tuple[list[Reported], list[str]]:
    """Every line of an import file checked: the reports, and a problem per refused line
    (``line 4: ...``, counted as a text editor counts them, the header being line 1)."""
    rows = csv.reader(text.splitlines())
    header = [name.strip().lower() for name in next(rows, [])]
    missing = [name for name in _REQUIRED if name not in header]
    if "orderid" not in header and "processor-rrn" not in header:
        missing.insert(0, "orderid or processor-rrn")
    if missing:
        return [], [f"line 1: the header lacks the column(s) {', '.join(missing)}"]
    found, problems = [], []
    for number, row in enumerate(rows, start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            problems.append(f"line {number}: {len(row)} fields where the header has {len(header)}")
            continue
        cells = dict(zip(header, row, strict=True))
        values = {field: cells.get(column, "") for field, column in COLUMNS.items()}
        try:
            found.append(reported(number, **values, today=today, names=COLUMNS))
        except LineError as problem:
            problems.append(f"line {number}: {problem}")
    if not found and not problems:
        problems.append("the file has no chargeback lines")
    return found, problems


# Card schemes' monitoring programmes flag a merchant whose chargebacks in a month pass a share of its
# sales by count (Visa's and Mastercard's early-warning levels sit near 0.9-1%): the overview flags at 1%.
MONITORED_SHARE_PERCENT = 1


@dataclass(frozen=True, slots=True)
class Monitored:
    """One merchant over a period: its approved sales, chargebacks, and decided and filtered payments, by
    count in every currency."""

    login: str
    sales: int
    chargebacks: int
    decided: int
    filtered: int

    @property
    def chargeback_rate(self) -> str | None:
        return _percent(self.chargebacks, self.sales)

    @property
    def filter_rate(self) -> str | None:
        return _percent(self.filtered, self.decided)

    @property
    def flagged(self) -> bool:
        """Chargebacks above the monitored share of sales (any chargeback, with no sale in the period)."""
        return self.chargebacks * 100 > MONITORED_SHARE_PERCENT * self.sales


def _percent(part: int, whole: int) -> str | None:
    return f"{100 * part / whole:.1f}%" if whole else None
