"""The sandbox acquirer and issuer decide as CONTRACT §9's table says, by CVV2 or a number's last digits."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kassa.domain.destinations import Phone
from kassa.domain.lifecycle import Stage
from kassa.domain.threeds_protocol import VERSION_1, VERSION_2, ChallengeIndicator, ThreeDSPath
from kassa.processors.interface import Authorize, Card, Credit, Initiator, Original, Refund
from kassa.sandbox.acquirer import SandboxProcessor, decide
from kassa.sandbox.issuer import SandboxIssuer
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


@pytest.mark.parametrize(
    ("cvv", "amount", "stage", "code"),
    [
        (None, 1116, Stage.DECLINED, "116"),  # a rebill on a card that would pass
        ("123", 2116, Stage.APPROVED, None),  # a CVV2 decides alone (CONTRACT §9)
        (None, 1115, Stage.APPROVED, None),
        ("999", 1116, Stage.DECLINED, "100"),  # declined by its CVV2 first
    ],
)
def test_a_card_payment_without_a_cvv2_whose_amount_ends_in_116_lacks_the_funds(
    cvv: str | None, amount: int, stage: Stage, code: str | None
) -> None:
    card = Card("4111111111111111", 12, 2030, "Jane Doe", "VISA", cvv)
    outcome = asyncio.run(
        SandboxProcessor().process(Authorize(7, "s", amount, "USD", "SHOP", card, True, Initiator.UNSCHEDULED))
    )
    assert (outcome.stage, outcome.error_code, outcome.processor_tx_id) == (stage, code, "PNTEST-7")


def test_every_trigger_has_an_outcome() -> None:
    for trigger in Trigger:
        assert decide(trigger, True, 1, "s").stage in set(Stage)


def _sale(cvv: str | None) -> Authorize:
    card = Card("4111111111111111", 12, 2030, "Jane Doe", "VISA", cvv)
    return Authorize(1, "s", 100, "USD", "SHOP", card, True, Initiator.CARDHOLDER)


@pytest.mark.parametrize(
    ("cvv", "path"),
    [("321", ThreeDSPath.CHALLENGE), ("322", ThreeDSPath.CHALLENGE_1), ("326", ThreeDSPath.REJECTED), ("123", None)],
)
def test_the_issuer_picks_the_authentication_path_by_cvv2(cvv: str, path: ThreeDSPath | None) -> None:
    assert asyncio.run(SandboxIssuer().path(_sale(cvv))) is path


def test_a_card_sent_without_a_cvv2_is_not_authenticated() -> None:
    assert asyncio.run(SandboxIssuer().path(_sale(None))) is None
    assert asyncio.run(SandboxIssuer().path(_sale(None), ChallengeIndicator.MANDATED)) is None


@pytest.mark.parametrize(
    ("cvv", "path"),
    [
        ("123", ThreeDSPath.CHALLENGE),  # let through unauthenticated unless a challenge is mandated
        ("1234", ThreeDSPath.CHALLENGE),
        ("116", ThreeDSPath.CHALLENGE),  # the acquirer declines it once authenticated
        ("323", ThreeDSPath.METHOD_CHALLENGE),  # frictionless no more
        ("321", ThreeDSPath.CHALLENGE),
        ("322", ThreeDSPath.CHALLENGE_1),
        ("325", ThreeDSPath.ATTEMPTED),
        ("326", ThreeDSPath.REJECTED),
        ("111", None),  # 3-D Secure skipped: the issuer offers none
    ],
)
def test_a_mandated_challenge_is_honoured_by_an_issuer_that_can_authenticate(
    cvv: str, path: ThreeDSPath | None
) -> None:
    assert asyncio.run(SandboxIssuer().path(_sale(cvv), ChallengeIndicator.MANDATED)) is path


def test_the_directory_server_gives_each_2x_authentication_its_own_uuid_and_1_0_2_none() -> None:
    issuer = SandboxIssuer()
    first, second = issuer.ds_trans_id(VERSION_2), issuer.ds_trans_id(VERSION_2)
    assert first is not None and str(uuid.UUID(first)) == first and first != second
    assert issuer.ds_trans_id(VERSION_1) is None


def test_follow_ups_on_an_authorization_are_approved_whatever_the_card() -> None:
    original = Original("s", 100, "123456", "000000000001")
    outcome = asyncio.run(SandboxProcessor().process(Refund(1, "r", 100, "USD", "SHOP", original)))
    assert outcome.stage is Stage.APPROVED


def test_a_card_without_a_cvv2_is_decided_by_its_last_three_digits() -> None:
    card = Card("4000000000000116", 12, 2030, "Jane Doe", "VISA", None)
    rebill = Authorize(1, "s", 100, "USD", "SHOP", card, True, Initiator.UNSCHEDULED)
    outcome = asyncio.run(SandboxProcessor().process(rebill))
    assert (outcome.stage, outcome.error_code, outcome.error_message) == (Stage.DECLINED, "116", "Not sufficient funds")


def test_a_phone_payout_check_answers_the_receivers_name_masked() -> None:
    phone = Phone("+447911123456", "BANK1", "Jane Doe")
    outcome = asyncio.run(SandboxProcessor().process(Credit(1, "s", 100, "GBP", "SHOP", phone, check_only=True)))
    assert outcome.stage is Stage.APPROVED and outcome.recipient_name not in (None, "Jane Doe")
