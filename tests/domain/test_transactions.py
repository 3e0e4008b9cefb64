"""The transaction-type table: every type has a row, and the rows say what the order rules rely on."""

from __future__ import annotations

import itertools

import pytest

from kassa.domain.transactions import TX_RULES, Direction, FollowUp, Needs, TxType, allowing, reported, rule


def test_every_transaction_type_has_a_row() -> None:
    assert set(TX_RULES) == set(TxType)


def test_types_share_a_stage_prefix_exactly_when_they_are_reported_as_one_type() -> None:
    for a, b in itertools.product(TX_RULES, repeat=2):
        assert (rule(a).stage_prefix == rule(b).stage_prefix) == (reported(a) == reported(b)), (a, b)


def test_only_a_preauth_order_can_be_captured_or_expire() -> None:
    assert allowing(FollowUp.CAPTURE) == {TxType.PREAUTH}
    assert allowing(FollowUp.EXPIRY) == {TxType.PREAUTH}


def test_cards_approved_with_the_cardholder_present_may_be_stored() -> None:
    assert allowing(FollowUp.CARD_REF) == {TxType.SALE, TxType.PREAUTH, TxType.ACCOUNT_VERIFICATION}


@pytest.mark.parametrize("tx_type", [t for t in TxType if rule(t).follow_ups])
def test_only_order_starting_types_allow_follow_ups(tx_type: TxType) -> None:
    assert rule(tx_type).starts_order


def test_follow_ups_on_an_authorization_need_nothing_but_the_order() -> None:
    for tx_type in (TxType.CAPTURE, TxType.CANCEL, TxType.VOID, TxType.REVERSAL):
        assert rule(tx_type).needs is Needs.NOTHING
        assert not rule(tx_type).starts_order


def test_an_account_verification_moves_no_money() -> None:
    assert rule(TxType.ACCOUNT_VERIFICATION).direction is Direction.NONE
    assert not rule(TxType.ACCOUNT_VERIFICATION).moves_money


def test_money_in_is_what_settlement_moves() -> None:
    assert {t for t in TxType if rule(t).settles} == {TxType.SALE, TxType.CAPTURE}
