"""The schedule of a recurring payment: due dates from the start, its end, and the checks of its fields."""

from __future__ import annotations

import datetime

import pytest

from kassa.domain.recurring import (
    Period,
    Retries,
    Schedule,
    ScheduleError,
    charge_client_orderid,
    date_of,
    midnight_ms,
    schedule_of,
)

TODAY = datetime.date(2026, 1, 20)


def _dates(schedule: Schedule, count: int) -> list[str]:
    return [schedule.due_date(n).isoformat() for n in range(1, count + 1)]


def _schedule(today: datetime.date = TODAY, **fields: str) -> Schedule | None:
    names = ("period", "interval", "start_date", "finish_date", "max_count")
    return schedule_of(**{name: fields.get(name) for name in names}, today=today)


def test_month_steps_from_the_31st_land_on_each_months_last_day_and_come_back() -> None:
    schedule = Schedule(Period.MONTH, 1, datetime.date(2026, 1, 31))
    assert _dates(schedule, 5) == ["2026-01-31", "2026-02-28", "2026-03-31", "2026-04-30", "2026-05-31"]


def test_month_steps_across_a_year_and_a_leap_february() -> None:
    schedule = Schedule(Period.MONTH, 5, datetime.date(2027, 10, 31))
    assert _dates(schedule, 3) == ["2027-10-31", "2028-03-31", "2028-08-31"]
    assert _dates(Schedule(Period.MONTH, 1, datetime.date(2028, 1, 30)), 2) == ["2028-01-30", "2028-02-29"]


def test_a_year_step_from_february_29th_lands_on_the_28th_and_returns_in_leap_years() -> None:
    schedule = Schedule(Period.YEAR, 1, datetime.date(2028, 2, 29))
    assert _dates(schedule, 5) == ["2028-02-29", "2029-02-28", "2030-02-28", "2031-02-28", "2032-02-29"]


def test_day_and_week_steps_count_interval_periods() -> None:
    assert _dates(Schedule(Period.DAY, 3, datetime.date(2026, 12, 30)), 3) == ["2026-12-30", "2027-01-02", "2027-01-05"]
    assert _dates(Schedule(Period.WEEK, 2, datetime.date(2026, 2, 20)), 2) == ["2026-02-20", "2026-03-06"]


def test_a_charge_is_due_at_midnight_utc_of_its_date() -> None:
    schedule = Schedule(Period.MONTH, 1, datetime.date(2026, 1, 31))
    expected = datetime.datetime(2026, 2, 28, tzinfo=datetime.UTC).timestamp() * 1000
    assert schedule.due_ms(2) == expected
    assert date_of(schedule.due_ms(2) or 0) == datetime.date(2026, 2, 28)
    assert date_of(midnight_ms(datetime.date(2026, 3, 1)) - 1) == datetime.date(2026, 2, 28)


def test_max_count_and_finish_date_end_the_schedule() -> None:
    counted = Schedule(Period.MONTH, 1, datetime.date(2026, 1, 31), max_count=4)
    assert counted.due_ms(4) is not None and counted.due_ms(5) is None
    finishing = Schedule(Period.DAY, 1, datetime.date(2026, 1, 1), finish=datetime.date(2026, 1, 3))
    assert finishing.due_ms(3) == midnight_ms(datetime.date(2026, 1, 3))
    assert finishing.due_ms(4) is None


def test_fields_make_a_schedule_starting_today_with_an_interval_of_one_by_default() -> None:
    assert _schedule(period="week") == Schedule(Period.WEEK, 1, TODAY)
    assert _schedule(
        period="month", interval="2", start_date="2026-01-31", finish_date="2026-12-31", max_count="4"
    ) == Schedule(Period.MONTH, 2, datetime.date(2026, 1, 31), datetime.date(2026, 12, 31), 4)


def test_without_period_there_is_no_schedule() -> None:
    assert _schedule() is None


@pytest.mark.parametrize(
    ("fields", "field", "problem"),
    [
        ({"period": "month", "interval": "0"}, "interval", "must be a whole number of at least 1"),
        ({"period": "month", "max_count": "0"}, "max-count", "must be a whole number of at least 1"),
        ({"interval": "2"}, "interval", "needs a period"),
        ({"max_count": "3"}, "max-count", "needs a period"),
        ({"start_date": "2026-02-01"}, "start-date", "needs a period"),
        ({"period": "day", "start_date": "2026-02-30"}, "start-date", "is not a date of the calendar (YYYY-MM-DD)"),
        ({"period": "day", "start_date": "2026-W05-1"}, "start-date", "must be a date YYYY-MM-DD"),
        ({"period": "day", "start_date": "20260201"}, "start-date", "must be a date YYYY-MM-DD"),
        ({"period": "day", "start_date": "2026-01-19"}, "start-date", "is in the past"),
        ({"period": "day", "finish_date": "2026-13-01"}, "finish-date", "is not a date of the calendar (YYYY-MM-DD)"),
        (
            {"period": "day", "start_date": "2026-02-01", "finish_date": "2026-01-31"},
            "finish-date",
            "is before start-date",
        ),
    ],
)
def test_a_wrong_schedule_field_is_refused_naming_it(fields: dict[str, str], field: str, problem: str) -> None:
    with pytest.raises(ScheduleError) as refused:
        _schedule(**fields)
    assert (refused.value.field, refused.value.problem) == (field, problem)


def test_a_start_today_is_accepted_and_a_finish_on_the_start_makes_one_charge() -> None:
    schedule = _schedule(period="day", start_date="2026-01-20", finish_date="2026-01-20")
    assert schedule is not None and schedule.due_ms(1) is not None and schedule.due_ms(2) is None


def test_retries_are_due_a_delay_after_the_try_before_until_none_is_left() -> None:
    retries = Retries(count=3, delay_ms=86_400_000)
    assert [retries.next_at(k, 1_000) for k in range(4)] == [86_401_000] * 3 + [None]


def test_charges_and_their_retries_are_named_after_the_payments_client_orderid() -> None:
    assert [charge_client_orderid("sub", 2, k) for k in range(3)] == ["sub-2", "sub-2-r1", "sub-2-r2"]


def test_a_schedule_ends_where_the_calendar_does() -> None:
    schedule = Schedule(Period.YEAR, 9999, datetime.date(2026, 1, 1))
    assert schedule.due_ms(1) == midnight_ms(datetime.date(2026, 1, 1))
    assert schedule.due_ms(2) is None
    assert Schedule(Period.DAY, 9999, datetime.date(9999, 12, 1)).due_ms(2) is None
