"""Chargeback reports checked field by field (a typed one, a file's lines), the schemes' reason codes and
what makes two reports one dispute, on plain data."""

from __future__ import annotations

import datetime

import pytest

from kassa.domain.chargebacks import (
    COLUMNS,
    LineError,
    Monitored,
    Reported,
    age_days,
    dedup_key,
    minor_amount,
    read_file,
    reason_codes,
    reported,
)

TODAY = datetime.date(2026, 11, 26)
HEADER = "orderid,processor-rrn,amount,currency,reason-code,date"


def typed(**fields: str) -> Reported:
    values = {"order_id": "12", "processor_rrn": "", "amount": "1.00", "currency": "USD", "reason_code": "10.4",
              "disputed_on": "2026-11-20", **fields}  # fmt: skip
    return reported(0, **values, today=TODAY, names=COLUMNS)


def test_reason_codes_of_both_schemes_have_their_meaning() -> None:
    codes = reason_codes()
    assert (codes["10.4"].scheme, codes["10.4"].meaning) == ("visa", "Other fraud, card absent")
    assert (codes["4837"].scheme, codes["4837"].meaning) == ("mastercard", "No cardholder authorization")
    assert codes["12.6.1"].meaning == "Duplicate processing"


def test_a_report_names_its_order_by_id_or_by_the_acquirers_reference() -> None:
    assert typed().order_id == 12 and typed().names == "order 12"
    by_rrn = typed(order_id="", processor_rrn="000012345678")
    assert (by_rrn.order_id, by_rrn.processor_rrn, by_rrn.names) == (None, "000012345678", "processor-rrn 000012345678")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"processor_rrn": "42"}, "give either orderid or processor-rrn, not both nor neither"),
        ({"order_id": ""}, "give either orderid or processor-rrn"),
        ({"order_id": "12a"}, "orderid must be the gateway's order id"),
        ({"order_id": "1" * 19}, "orderid must be the gateway's order id"),
        ({"order_id": "", "processor_rrn": "12 34"}, "processor-rrn must be the acquirer's reference"),
        ({"reason_code": "99"}, "reason-code '99' is no Visa or Mastercard reason code"),
        ({"currency": "XYZ"}, "currency 'XYZ' is no ISO 4217 currency code"),
        ({"disputed_on": "20.11.2026"}, "date must be a date as YYYY-MM-DD"),
        ({"disputed_on": "20261120"}, "date must be a date as YYYY-MM-DD"),
        ({"disputed_on": "2026-11-27"}, "date 2026-11-27 is after today"),
    ],
)
def test_a_refused_report_names_its_field(fields: dict[str, str], message: str) -> None:
    with pytest.raises(LineError, match=message):
        typed(**fields)


def test_the_amount_is_read_in_the_orders_currency_which_the_report_must_name() -> None:
    assert minor_amount(typed(amount="10.42"), "USD", "amount") == 1042
    assert minor_amount(typed(amount="1000", currency="JPY"), "JPY", "amount") == 1000
    with pytest.raises(LineError, match="currency USD is not the order's currency EUR"):
        minor_amount(typed(), "EUR", "amount")
    with pytest.raises(LineError, match="--amount allows at most 0 fraction digits for JPY"):
        minor_amount(typed(amount="1.5", currency=None), "JPY", "--amount")  # type: ignore[arg-type]
    with pytest.raises(LineError, match="amount must be greater than zero"):
        minor_amount(typed(amount="0.00"), "USD", "amount")


def test_one_dispute_is_one_order_reason_day_and_amount() -> None:
    assert dedup_key(12, typed(), 100) == dedup_key(12, typed(currency="usd"), 100)
    assert dedup_key(12, typed(), 100) != dedup_key(12, typed(disputed_on="2026-11-21"), 100)
    assert dedup_key(12, typed(), 100) != dedup_key(12, typed(reason_code="13.1"), 100)
    assert dedup_key(12, typed(), 100) != dedup_key(12, typed(), 101)


def test_a_disputes_age_is_in_days_since_it_was_reported() -> None:
    assert age_days("2026-11-20", TODAY) == 6


def test_a_file_is_read_whole_with_a_problem_per_refused_line_numbered_as_an_editor_does() -> None:
    text = "\n".join([
        HEADER,
        "12,,1.00,USD,10.4,2026-11-20",
        "",  # blank lines are skipped, and counted
        "13,,1.00,USD,10.4",
        ",0000123,2.50,EUR,4853,2026-11-21",
        "14,,1.00,USD,77,2026-11-20",
    ])  # fmt: skip
    found, problems = read_file(text, TODAY)
    assert [(r.line, r.order_id, r.processor_rrn) for r in found] == [(2, 12, None), (5, None, "0000123")]
    assert problems == [
        "line 4: 5 fields where the header has 6",
        "line 6: reason-code '77' is no Visa or Mastercard reason code (kassa chargeback codes)",
    ]


def test_a_files_columns_may_come_in_any_order_and_without_processor_rrn() -> None:
    found, problems = read_file("Date,Amount,OrderID,Currency,Reason-Code\n2026-11-20,3.00,12,usd,4837\n", TODAY)
    assert problems == []
    assert [(r.order_id, r.amount, r.currency, r.reason_code, r.disputed_on) for r in found] == [
        (12, "3.00", "USD", "4837", "2026-11-20")
    ]


def test_a_file_without_the_columns_or_without_lines_is_refused() -> None:
    assert read_file("orderid,amount\n12,1.00\n", TODAY)[1] == [
        "line 1: the header lacks the column(s) currency, reason-code, date"
    ]
    assert read_file("amount,currency,reason-code,date\n", TODAY)[1] == [
        "line 1: the header lacks the column(s) orderid or processor-rrn"
    ]
    assert read_file(HEADER + "\n", TODAY)[1] == ["the file has no chargeback lines"]
    assert read_file("", TODAY)[1][0].startswith("line 1: the header lacks")


def test_a_merchant_is_flagged_above_one_chargeback_in_a_hundred_sales_by_count() -> None:
    at_the_line = Monitored("shop", sales=100, chargebacks=1, decided=120, filtered=6)
    assert (at_the_line.chargeback_rate, at_the_line.filter_rate, at_the_line.flagged) == ("1.0%", "5.0%", False)
    assert Monitored("shop", sales=100, chargebacks=2, decided=100, filtered=0).flagged
    assert Monitored("shop", sales=0, chargebacks=1, decided=0, filtered=0).flagged  # old sales, new chargebacks
    quiet = Monitored("shop", sales=0, chargebacks=0, decided=0, filtered=0)
    assert (quiet.chargeback_rate, quiet.filter_rate, quiet.flagged) == (None, None, False)
