"""The transition table of CONTRACT §6, checked exhaustively."""

from __future__ import annotations

import itertools

import pytest

from kassa.domain.lifecycle import (
    FINAL_STAGES,
    TRANSITIONS,
    IllegalTransition,
    Stage,
    Status,
    advance,
    stages_of_status,
    status_of,
)
from kassa.domain.transactions import TxType, order_stage


def test_every_stage_has_a_row_in_the_transition_table() -> None:
    assert set(TRANSITIONS) == set(Stage)


def test_final_stages_are_approved_declined_filtered_error() -> None:
    assert {Stage.APPROVED, Stage.DECLINED, Stage.FILTERED, Stage.ERROR} == FINAL_STAGES


@pytest.mark.parametrize(("current", "target"), list(itertools.product(Stage, Stage)))
def test_advance_allows_exactly_the_declared_transitions(current: Stage, target: Stage) -> None:
    if target in TRANSITIONS[current]:
        assert advance(current, target) is target
    else:
        with pytest.raises(IllegalTransition):
            advance(current, target)


def test_unknown_can_still_be_resolved_by_reconciliation() -> None:
    assert advance(Stage.UNKNOWN, Stage.APPROVED) is Stage.APPROVED


def test_a_final_outcome_is_never_overwritten() -> None:
    with pytest.raises(IllegalTransition):
        advance(Stage.APPROVED, Stage.DECLINED)


def test_3ds_stages_report_processing() -> None:
    for stage in (Stage.PROCESSING, Stage.THREE_D_METHOD, Stage.THREE_D_VALIDATING, Stage.THREE_D_VALIDATED):
        assert status_of(stage) is Status.PROCESSING


@pytest.mark.parametrize(
    ("tx_type", "stage", "expected"),
    [
        (TxType.SALE, Stage.APPROVED, "sale_approved"),
        (TxType.PREAUTH, Stage.THREE_D_METHOD, "auth_3d_method"),
        (TxType.ACCOUNT_VERIFICATION, Stage.DECLINED, "verify_declined"),
        (TxType.REVERSAL, Stage.PROCESSING, "reversal_processing"),
        (TxType.CANCEL, Stage.UNKNOWN, "cancel_unknown"),
    ],
)
def test_order_stage_is_prefix_and_stage(tx_type: TxType, stage: Stage, expected: str) -> None:
    assert order_stage(tx_type, stage) == expected


def test_processing_status_covers_the_3ds_stages() -> None:
    assert set(stages_of_status("processing")) == {"processing", "3d_method", "3d_validating", "3d_validated"}
