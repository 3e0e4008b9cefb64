"""The schedule of a recurring payment (CONTRACT §13): when its n-th charge is due, when it ends, and the
checks of the fields that describe it.

A charge is due at 00:00 UTC of its date. The n-th date is computed from the start, never from the date
before it, so a month step from the 31st lands on each month's last day and comes back to the 31st:
01-31, 02-28, 03-31, 04-30. Without a ``period`` there is no schedule: the payment is charged only when
asked (a stored card, CONTRACT §13's create-card-ref v4)."""

from __future__ import annotations

import calendar
import datetime
import re
from dataclasses import dataclass
from enum import StrEnum

from kassa.domain.action_codes import ActionCode

_DAY_MS = 86_400_000
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")  # not fromisoformat's alone: it takes 2026-W05-1 too


class Period(StrEnum):
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    YEAR = "year"


class Status(StrEnum):
    """A recurring payment's status: ``active`` until its schedule has made its last charge and that
    charge's tries are over (``finished``), an operator cancelled it, or its card expired before a charge."""

    ACTIVE = "active"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


class ChargeState(StrEnum):
    """One try of one charge: its order is ``open`` until final; a failed try waits for the next
    (``retry_due``) or is ``declined`` for good."""

    OPEN = "open"
    APPROVED = "approved"
    RETRY_DUE = "retry_due"
    DECLINED = "declined"


@dataclass(frozen=True, slots=True)
class Retries:
    """A failed try (declined, filtered or error) is tried again ``count`` more times, each ``delay_ms``
    after the try before it was made."""

    count: int
    delay_ms: int

    def next_at(self, try_number: int, made_at_ms: int) -> int | None:
        """When the try after ``try_number`` (0: the charge's first) is due, or None when none is left."""
        return made_at_ms + self.delay_ms if try_number < self.count else None


# The outcome of a charge whose card has expired by its due date: declined by the gateway itself, without
# reaching the acquirer, with the ISO 8583 action code the acquirer would give (CONTRACT §9).
EXPIRED_CARD_CODE = ActionCode.EXPIRED_CARD.value
EXPIRED_CARD_MESSAGE = "Expired card: the recurring payment is stopped"


# The most ``charge_client_orderid`` adds: "-999999-r999" is 12 (max-count has six digits).
CHARGE_SUFFIX_MAX = 16


def charge_client_orderid(client_orderid: str, n: int, try_number: int) -> str:
    """The ``client_orderid`` of a charge's order: ``{client_orderid}-{n}``, its retries ``-r1``, ``-r2``..."""
    return f"{client_orderid}-{n}" + (f"-r{try_number}" if try_number else "")


class ScheduleError(ValueError):
    """A schedule field is wrong; ``field`` names it as the request spells it."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field} {problem}")
        self.field = field
        self.problem = problem


@dataclass(frozen=True, slots=True)
class Schedule:
    period: Period
    interval: int  # every ``interval`` periods
    start: datetime.date
    finish: datetime.date | None = None  # no charge is due after this date
    max_count: int | None = None  # no more charges than this

    def due_date(self, n: int) -> datetime.date:
        """The date of the ``n``-th charge (the first is 1, on ``start``)."""
        steps = (n - 1) * self.interval
        match self.period:
            case Period.DAY:
                return self.start + datetime.timedelta(days=steps)
            case Period.WEEK:
                return self.start + datetime.timedelta(weeks=steps)
            case Period.MONTH:
                return _add_months(self.start, steps)
            case Period.YEAR:
                return _add_months(self.start, 12 * steps)

    def due_ms(self, n: int) -> int | None:
        """When the ``n``-th charge is due (00:00 UTC of its date), or None when the schedule ends before it
        (past ``finish``, ``max_count``, or the calendar's last year, 9999)."""
        if self.max_count is not None and n > self.max_count:
            return None
        try:
            date = self.due_date(n)
        except (ValueError, OverflowError):  # beyond year 9999: no date, so no charge
            return None
        if self.finish is not None and date > self.finish:
            return None
        return midnight_ms(date)


def _add_months(start: datetime.date, months: int) -> datetime.date:
    """``start`` moved by ``months``, on the same day or the month's last when it has fewer days."""
    index = start.month - 1 + months
    year, month = start.year + index // 12, index % 12 + 1
    return datetime.date(year, month, min(start.day, calendar.monthrange(year, month)[1]))


def midnight_ms(date: datetime.date) -> int:
    return (date - datetime.date(1970, 1, 1)).days * _DAY_MS


def date_of(ms: int) -> datetime.date:
    """The UTC date of an epoch-milliseconds time."""
    return datetime.date(1970, 1, 1) + datetime.timedelta(days=ms // _DAY_MS)


def schedule_of(
    *,
    period: str | None,
    interval: str | None,
    start_date: str | None,
    finish_date: str | None,
    max_count: str | None,
    today: datetime.date,
) -> Schedule | None:
    """The schedule the request's fields describe (None without ``period``: no automatic charges), or
    ``ScheduleError`` naming the first field at fault. A start before ``today`` is refused: charges already
    due would all be made at once."""
    if period is None:
        for name, value in (
            ("interval", interval),
            ("start-date", start_date),
            ("finish-date", finish_date),
            ("max-count", max_count),
        ):
            if value is not None:
                raise ScheduleError(name, "needs a period")
        return None
    every = _positive("interval", interval) if interval is not None else 1
    start = _date("start-date", start_date) if start_date is not None else today
    if start < today:
        raise ScheduleError("start-date", "is in the past")
    finish = _date("finish-date", finish_date) if finish_date is not None else None
    if finish is not None and finish < start:
        raise ScheduleError("finish-date", "is before start-date")
    count = _positive("max-count", max_count) if max_count is not None else None
    return Schedule(Period(period), every, start, finish, count)


def _positive(field: str, text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise ScheduleError(field, "must be a whole number of at least 1")
    return int(text)


def _date(field: str, text: str) -> datetime.date:
    if _DATE.fullmatch(text) is None:
        raise ScheduleError(field, "must be a date YYYY-MM-DD")
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise ScheduleError(field, "is not a date of the calendar (YYYY-MM-DD)") from None
