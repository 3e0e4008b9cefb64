"""The sandbox acquirer and issuer decide as CONTRACT §9's table says, by CVV2 or a number's last digits."""

from __future__ import annotations

import asyncio

import pytest

from kassa.domain.lifecycle import Stage
from kassa.domain.threeds_protocol import ThreeDSPath
from kassa.domain.transactions import TxType
from kassa.processors.interface import Card, TransactionRequest
from kassa.sandbox.acquirer import SandboxProcessor, decide
from kassa.sandbox.triggers import Trigger, trigger_of


@pytest.mark.parametrize(
    ("cvv", "stage", "code"),
    [
        ("123", Stage.APPROVED, None),
        ("1234", Stage.APPROVED, None),
        ("111", Stage.APPROVED, None),
        ("217", Stage.UNKNOWN, None),
        ("555", Stage.FILTERED, "555"),
        ("500", Stage.ERROR, "500"),
        ("101", Stage.DECLINED, "101"),
        ("116", Stage.DECLINED, "116"),
        ("119", Stage.DECLINED, "119"),
        ("209", Stage.DECLINED, "209"),
        ("999", Stage.DECLINED, "100"),
    ],
)
def test_a_cvv2_decides_the_outcome(cvv: str, stage: Stage, code: str | None) -> None:
    outcome = decide(trigger_of(cvv), True, 7, "serial")
    assert (outcome.stage, outcome.error_code, outcome.processor_tx_id) == (stage, code, "PNTEST-7")


def test_without_a_cvv2_digits_outside_the_table_approve() -> None:
    assert decide(trigger_of("999"), False, 7, "serial").stage is Stage.APPROVED
    assert decide(trigger_of("116"), False, 7, "serial").stage is Stage.DECLINED


def test_every_trigger_has_an_outcome() -> None:
    for trigger in Trigger:
        assert decide(trigger, True, 1, "s").stage in set(Stage)


def _request(cvv: str | None, tx_type: TxType = TxType.SALE, *, present: bool = True) -> TransactionRequest:
    card = Card("4111111111111111", 12, 2030, "Jane Doe", cvv)
    return TransactionRequest(1, "s", tx_type, 100, "USD", card, cardholder_present=present)


@pytest.mark.parametrize(
    ("cvv", "path"),
    [("321", ThreeDSPath.CHALLENGE), ("322", ThreeDSPath.CHALLENGE_1), ("326", ThreeDSPath.REJECTED), ("123", None)],
)
def test_the_issuer_picks_the_authentication_path_by_cvv2(cvv: str, path: ThreeDSPath | None) -> None:
    assert asyncio.run(SandboxProcessor().three_ds_path(_request(cvv))) is path


def test_no_authentication_without_a_cardholder_or_on_a_follow_up() -> None:
    sandbox = SandboxProcessor()
    assert asyncio.run(sandbox.three_ds_path(_request("321", present=False))) is None
    assert asyncio.run(sandbox.three_ds_path(_request("321", TxType.CAPTURE))) is None


def test_follow_ups_on_an_authorization_are_approved_whatever_the_card() -> None:
    outcome = asyncio.run(SandboxProcessor().process(_request("116", TxType.REVERSAL)))
    assert outcome.stage is Stage.APPROVED
