"""Routing: the conditions an endpoint's connections take payments on, as operators write them, and the
cascade list (CONTRACT §16)."""

from __future__ import annotations

import pytest

from kassa.domain.action_codes import ActionCode
from kassa.domain.cards import Brand
from kassa.domain.routing import (
    BinRange,
    Conditions,
    Entry,
    Kind,
    Payment,
    RouteProblem,
    parse_cascade,
    parse_route,
    render_cascade,
)

VISA_EUR = Payment(Kind.PAYMENT, "4111111111111111", Brand.VISA, "EUR", 10_000)


def test_a_connection_without_conditions_takes_every_payment() -> None:
    assert Conditions().match(VISA_EUR)
    assert Conditions().match(Payment(Kind.PAYOUT, None, None, "JPY", 1))


@pytest.mark.parametrize(
    ("conditions", "taken"),
    [
        (Conditions(brands=frozenset({Brand.VISA})), True),
        (Conditions(brands=frozenset({Brand.MASTERCARD, Brand.AMEX})), False),
        (Conditions(bins=(BinRange("400000", "499999"),)), True),
        (Conditions(bins=(BinRange("411112", "411119"), BinRange("5", "5"))), False),
        (Conditions(bins=(BinRange("41111111", "41111111"),)), True),
        (Conditions(currencies=frozenset({"EUR", "USD"})), True),
        (Conditions(currencies=frozenset({"USD"})), False),
        (Conditions(min_amount=10_000), True),
        (Conditions(min_amount=10_001), False),
        (Conditions(max_amount=10_000), True),
        (Conditions(max_amount=9_999), False),
        (Conditions(kinds=frozenset({Kind.PAYMENT})), True),
        (Conditions(kinds=frozenset({Kind.PAYOUT})), False),
        (Conditions(brands=frozenset({Brand.VISA}), currencies=frozenset({"USD"})), False),
    ],
)
def test_a_payment_is_taken_when_it_matches_every_condition(conditions: Conditions, taken: bool) -> None:
    assert conditions.match(VISA_EUR) is taken


def test_a_payout_to_no_card_is_not_taken_by_a_connection_that_asks_for_a_brand_or_bin() -> None:
    to_a_bank = Payment(Kind.PAYOUT, None, None, "EUR", 100)
    assert not Conditions(bins=(BinRange("4", "4"),)).match(to_a_bank)
    assert not Conditions(brands=frozenset({Brand.VISA})).match(to_a_bank)
    assert Conditions(kinds=frozenset({Kind.PAYOUT})).match(to_a_bank)


def test_a_route_is_read_from_entries_with_their_conditions_and_written_back_the_same() -> None:
    text = "acq-eu[brand=visa,MASTERCARD; bin=400000-499999,510000; currency=eur; amount=100-500000; kind=payment]"
    [eu, backup] = parse_route([text, "backup"])
    assert eu == Entry(
        "acq-eu",
        Conditions(
            brands=frozenset({Brand.VISA, Brand.MASTERCARD}),
            bins=(BinRange("400000", "499999"), BinRange("510000", "510000")),
            currencies=frozenset({"EUR"}),
            min_amount=100,
            max_amount=500_000,
            kinds=frozenset({Kind.PAYMENT}),
        ),
    )
    assert backup == Entry("backup")
    assert parse_route([eu.render()]) == [eu]
    assert eu.render() == (
        "acq-eu[brand=MASTERCARD,VISA; bin=400000-499999,510000; currency=EUR; amount=100-500000; kind=payment]"
    )


def test_entries_may_share_one_text_separated_by_commas_or_lines_and_an_amount_may_be_open() -> None:
    entries = parse_route(["a[amount=-5000], b[amount=5001-]\nc , d[]\r\ne\r\n"])
    assert [e.name for e in entries] == ["a", "b", "c", "d", "e"]
    assert (entries[0].conditions.min_amount, entries[0].conditions.max_amount) == (None, 5000)
    assert (entries[1].conditions.min_amount, entries[1].conditions.max_amount) == (5001, None)
    assert entries[0].render() == "a[amount=-5000]" and entries[3].render() == "d"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a[brand=visa; brand=amex]", "a: brand is given twice"),
        ("a[colour=red]", "a: 'colour=red' is no condition"),
        ("a[brand=diners club]", "a: brand 'diners club' is none of VISA, MASTERCARD"),
        ("a[bin=4000-49999]", "a: BIN range '4000-49999' must be a prefix of 1 to 11 digits"),
        ("a[bin=500000-400000]", "the lower first"),
        ("a[bin=4111111111111111]", "a: BIN range '4111111111111111' must be a prefix"),
        ("a[currency=EURO]", "a: currency 'EURO' is not an ISO 4217 code"),
        ("a[amount=10.00-20.00]", "a: amount '10.00-20.00' must be MIN-MAX in minor units"),
        ("a[amount=500-100]", "a: amount '500-100' must be MIN-MAX"),
        ("a[amount=-]", "must be MIN-MAX"),
        ("a[amount=100]", "must be MIN-MAX"),
        ("a[kind=refund]", "a: kind 'refund' is none of payment, payout"),
        ("a b", "separate entries by commas"),
        ("a[" + "x" * 3000 + "]", "a: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' is no condition"),
        ("a[bin=" + ",".join(f"{n:06d}" for n in range(400)) + "]", "a: the conditions are longer than 2000"),
        ("a[brand=visa", "cannot read the route"),
    ],
)
def test_a_route_that_cannot_be_used_is_refused_naming_the_connection_and_the_part(text: str, problem: str) -> None:
    with pytest.raises(RouteProblem, match=problem.replace("[", r"\[")):
        parse_route([text])


def test_a_cascade_list_is_codes_none_or_the_default() -> None:
    assert parse_cascade("911, 907,911") == (ActionCode.ISSUER_TIMED_OUT, ActionCode.ISSUER_INOPERATIVE)
    assert parse_cascade("none") == ()
    assert parse_cascade("default") is None and parse_cascade("") is None
    assert [render_cascade(parse_cascade(t)) for t in ("116,100", "none", "default")] == ["116,100", "none", "default"]
    with pytest.raises(RouteProblem, match="cascade code '05' is none of the action codes 100, 101"):
        parse_cascade("05")
