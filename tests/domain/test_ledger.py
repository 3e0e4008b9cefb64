"""Double-entry postings: every posting balances, and the balances follow the money."""

from __future__ import annotations

import pytest

from kassa.domain.ledger import Account, Balances, on_approved, on_settlement, replay
from kassa.domain.lifecycle import Stage
from kassa.domain.transactions import TxType

APPROVED = Stage.APPROVED

POSTED = list(TxType)


@pytest.mark.parametrize("tx_type", POSTED)
@pytest.mark.parametrize("multi", [False, True])
def test_every_posting_sums_to_zero(tx_type: TxType, multi: bool) -> None:
    posting = on_approved(tx_type, 40, Balances(held=100, captured=30, settled=70), multi_capture=multi)
    assert sum(delta for _, delta in posting) == 0


def test_single_partial_capture_releases_the_rest_of_the_hold() -> None:
    after = replay([(TxType.PREAUTH, 100, APPROVED), (TxType.CAPTURE, 60, APPROVED)], multi_capture=False)
    assert after == Balances(held=0, captured=60, settled=0)


def test_multi_capture_keeps_the_rest_held() -> None:
    after = replay([(TxType.PREAUTH, 100, APPROVED), (TxType.CAPTURE, 60, APPROVED)], multi_capture=True)
    assert after == Balances(held=40, captured=60, settled=0)


def test_reversal_takes_from_unsettled_money_first_then_settled() -> None:
    posting = on_approved(TxType.REVERSAL, 50, Balances(captured=20, settled=80), multi_capture=False)
    totals = {account: sum(d for a, d in posting if a is account) for account, _ in posting}
    assert totals == {Account.CAPTURED: -20, Account.SETTLED: -30, Account.EXTERNAL: 50}


def test_settlement_moves_captured_to_settled() -> None:
    assert on_settlement(Balances(captured=25)) == [(Account.CAPTURED, -25), (Account.SETTLED, 25)]


def test_void_releases_hold_and_captured_money() -> None:
    posting = on_approved(TxType.VOID, 0, Balances(held=10, captured=20), multi_capture=True)
    assert sum(d for a, d in posting if a is Account.EXTERNAL) == 30


def test_a_payout_in_flight_keeps_its_amount_reserved_out_of_the_available_balance() -> None:
    assert replay([(TxType.PAYOUT, 500, Stage.PROCESSING)], multi_capture=False) == Balances(settled=-500, reserved=500)


def test_an_approved_payout_pays_its_reservation_out() -> None:
    assert replay([(TxType.PAYOUT, 500, APPROVED)], multi_capture=False) == Balances(settled=-500)


@pytest.mark.parametrize("stage", [Stage.DECLINED, Stage.FILTERED, Stage.ERROR])
def test_a_failed_payout_gives_its_reservation_back(stage: Stage) -> None:
    assert replay([(TxType.PAYOUT, 500, stage)], multi_capture=False) == Balances()


def test_a_payout_still_unknown_keeps_its_reservation_until_reconciled() -> None:
    assert replay([(TxType.PAYOUT, 500, Stage.UNKNOWN)], multi_capture=False) == Balances(settled=-500, reserved=500)
