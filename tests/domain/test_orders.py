"""Order rules (CONTRACT §7) on plain data: no HTTP, no database."""

from __future__ import annotations

import pytest

from kassa.domain.lifecycle import Stage
from kassa.domain.orders import (
    OrderRuleError,
    OrderState,
    Refusal,
    TxRecord,
    may_expire,
    plan_capture,
    plan_card_ref,
    plan_chargeback,
    plan_return,
    plan_void,
)
from kassa.domain.transactions import TxType

APPROVED, PROCESSING, DECLINED = Stage.APPROVED, Stage.PROCESSING, Stage.DECLINED


def order(kind: TxType, amount: int, *later: TxRecord, multi: bool = False, root: Stage = APPROVED) -> OrderState:
    return OrderState(kind, amount, multi, (TxRecord(kind, root, amount), *later))


def refused(refusal: Refusal, call: object, *args: object) -> None:
    with pytest.raises(OrderRuleError) as caught:
        call(*args)  # type: ignore[operator]
    assert caught.value.refusal is refusal


def test_capture_without_amount_takes_the_remainder() -> None:
    assert plan_capture(order(TxType.PREAUTH, 10_000), None) == 10_000


def test_single_capture_endpoint_refuses_a_second_capture() -> None:
    captured = order(TxType.PREAUTH, 10_000, TxRecord(TxType.CAPTURE, APPROVED, 6_000))
    refused(Refusal.STATE, plan_capture, captured, 1_000)


def test_multi_capture_counts_captures_still_processing() -> None:
    state = order(TxType.PREAUTH, 10_000, TxRecord(TxType.CAPTURE, PROCESSING, 6_000), multi=True)
    assert plan_capture(state, 4_000) == 4_000
    refused(Refusal.AMOUNT, plan_capture, state, 4_001)


def test_declined_capture_frees_its_amount() -> None:
    state = order(TxType.PREAUTH, 10_000, TxRecord(TxType.CAPTURE, DECLINED, 6_000), multi=True)
    assert plan_capture(state, None) == 10_000


def test_capture_of_a_sale_or_unapproved_preauth_is_refused() -> None:
    refused(Refusal.STATE, plan_capture, order(TxType.SALE, 100), None)
    refused(Refusal.STATE, plan_capture, order(TxType.PREAUTH, 100, root=DECLINED), None)


def test_capture_after_cancel_is_refused() -> None:
    state = order(TxType.PREAUTH, 100, TxRecord(TxType.CANCEL, APPROVED, 100))
    refused(Refusal.STATE, plan_capture, state, None)


def test_return_on_an_uncaptured_preauth_is_a_whole_cancel() -> None:
    assert plan_return(order(TxType.PREAUTH, 100), None) == (TxType.CANCEL, 100)
    refused(Refusal.AMOUNT, plan_return, order(TxType.PREAUTH, 100), 50)


def test_return_on_a_captured_preauth_reverses_the_captured_amount() -> None:
    state = order(TxType.PREAUTH, 100, TxRecord(TxType.CAPTURE, APPROVED, 60))
    assert plan_return(state, None) == (TxType.REVERSAL, 60)


def test_partial_returns_cannot_exceed_the_sale_including_pending_ones() -> None:
    state = order(TxType.SALE, 100, TxRecord(TxType.REVERSAL, APPROVED, 30), TxRecord(TxType.REVERSAL, PROCESSING, 60))
    assert plan_return(state, 10) == (TxType.REVERSAL, 10)
    refused(Refusal.AMOUNT, plan_return, state, 11)


def test_return_of_a_fully_returned_sale_is_an_amount_refusal() -> None:
    state = order(TxType.SALE, 100, TxRecord(TxType.REVERSAL, APPROVED, 100))
    refused(Refusal.AMOUNT, plan_return, state, None)


def test_void_needs_unsettled_approved_money_and_nothing_in_flight() -> None:
    assert plan_void(order(TxType.SALE, 100)) == 100
    settled = OrderState(TxType.SALE, 100, False, (TxRecord(TxType.SALE, APPROVED, 100, settled=True),))
    refused(Refusal.STATE, plan_void, settled)
    busy = order(TxType.SALE, 100, TxRecord(TxType.REVERSAL, PROCESSING, 10))
    refused(Refusal.STATE, plan_void, busy)


def test_only_untouched_authorizations_expire() -> None:
    assert may_expire(order(TxType.PREAUTH, 100))
    assert not may_expire(order(TxType.PREAUTH, 100, TxRecord(TxType.CAPTURE, APPROVED, 100)))
    assert not may_expire(order(TxType.SALE, 100))


@pytest.mark.parametrize("kind", [TxType.SALE, TxType.PREAUTH, TxType.ACCOUNT_VERIFICATION])
def test_card_ref_is_made_from_an_approved_card_order(kind: TxType) -> None:
    plan_card_ref(order(kind, 1_000))


def test_card_ref_of_a_returned_sale_is_still_allowed() -> None:
    plan_card_ref(order(TxType.SALE, 1_000, TxRecord(TxType.REVERSAL, APPROVED, 1_000)))


@pytest.mark.parametrize("root", [PROCESSING, DECLINED, Stage.THREE_D_VALIDATING, Stage.UNKNOWN])
def test_card_ref_of_an_order_not_approved_is_refused(root: Stage) -> None:
    refused(Refusal.STATE, plan_card_ref, order(TxType.SALE, 1_000, root=root))


def test_card_ref_of_a_payout_is_refused() -> None:
    refused(Refusal.STATE, plan_card_ref, order(TxType.PAYOUT, 1_000))


# --- chargebacks ------------------------------------------------------------------------------------------


def test_chargeback_takes_at_most_what_is_captured_and_not_returned() -> None:
    state = order(TxType.SALE, 100, TxRecord(TxType.REVERSAL, APPROVED, 30))
    assert plan_chargeback(state, 70) == 70
    with pytest.raises(OrderRuleError) as caught:
        plan_chargeback(state, 71)
    assert (caught.value.refusal, caught.value.left) == (Refusal.AMOUNT, 70)
    assert "left to charge back" in caught.value.message


def test_chargebacks_and_returns_in_flight_count_against_each_other() -> None:
    state = order(
        TxType.SALE, 100, TxRecord(TxType.CHARGEBACK, APPROVED, 60), TxRecord(TxType.REVERSAL, PROCESSING, 30)
    )
    assert plan_chargeback(state, 10) == 10
    refused(Refusal.AMOUNT, plan_chargeback, state, 11)
    refused(Refusal.AMOUNT, plan_return, state, 11)
    assert plan_return(state, None) == (TxType.REVERSAL, 10)


def test_chargeback_on_a_preauth_counts_only_its_captures() -> None:
    state = order(TxType.PREAUTH, 100, TxRecord(TxType.CAPTURE, APPROVED, 40))
    assert plan_chargeback(state, 40) == 40
    refused(Refusal.AMOUNT, plan_chargeback, state, 41)
    refused(Refusal.AMOUNT, plan_chargeback, order(TxType.PREAUTH, 100), 1)


@pytest.mark.parametrize("kind", [TxType.ACCOUNT_VERIFICATION, TxType.PAYOUT])
def test_chargeback_of_an_order_that_took_no_card_money_is_refused(kind: TxType) -> None:
    refused(Refusal.STATE, plan_chargeback, order(kind, 100), 1)


def test_chargeback_of_a_declined_sale_or_of_nothing_is_refused() -> None:
    refused(Refusal.STATE, plan_chargeback, order(TxType.SALE, 100, root=DECLINED), 1)
    refused(Refusal.AMOUNT, plan_chargeback, order(TxType.SALE, 100), 0)


def test_void_after_a_chargeback_is_refused() -> None:
    refused(Refusal.STATE, plan_void, order(TxType.SALE, 100, TxRecord(TxType.CHARGEBACK, APPROVED, 10)))
