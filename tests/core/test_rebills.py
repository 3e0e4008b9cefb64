"""Enumerated rebills (CONTRACT §17): only the rebill's own authorization tries a lower amount."""

from __future__ import annotations

from typing import Any, cast

import pytest
from sqlalchemy import Connection

from kassa.core.rebills import next_try
from kassa.domain.lifecycle import Stage
from kassa.processors.interface import Outcome

ORDER = {"id": 1, "enumerate_amounts": "800,500"}
NO_DATABASE = cast(Connection, None)  # a follow-up's decline is decided before anything is read or written


@pytest.mark.parametrize("tx_type", ["capture", "reversal", "void", "cancel"])
def test_a_declined_follow_up_of_an_enumerating_preauth_is_not_tried_at_a_lower_amount(tx_type: str) -> None:
    transaction: dict[str, Any] = {"id": 2, "tx_type": tx_type, "stage": "processing", "amount": 1000}
    assert not next_try(NO_DATABASE, ORDER, transaction, Outcome(Stage.DECLINED, "116"), 0)
