"""No full card, account, IBAN, e-wallet or phone number of a payout appears anywhere an operator or an
attacker could read it: the database (SQLite's files byte for byte; every text of every PostgreSQL table),
the gateway's log, the CLI's output, status answers and callbacks."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select

from kassa.sandbox.triggers import Trigger
from kassa.storage.database import sqlalchemy_url
from kassa.storage.tables import metadata
from tests.api.test_payouts import credit, outcome, payout
from tests.support.cards import pan_ending
from tests.support.gateway import Merchant, free_port
from tests.support.receiver import Receiver, running

STEERING = {trigger.value for trigger in Trigger} - {Trigger.APPROVE.value, Trigger.APPROVE_WITHOUT_3DS.value}


def _numbers() -> dict[str, dict[str, str]]:
    """A destination of every kind, each number drawn for this test so that no other test writes it, and
    none ending in a sandbox trigger (CONTRACT §9: a payout to a number ending in 217 is ``unknown``)."""
    digits = "".join(random.choices("0123456789", k=12))
    while {digits[:3], digits[-3:]} & STEERING:
        digits = "".join(random.choices("0123456789", k=12))
    return {
        pan_ending(digits[:3]): {
            "credit_card_number": pan_ending(digits[:3]),
            "expire_month": "12",
            "expire_year": "2031",
        },
        f"77{digits}": {"account_number": f"77{digits}", "bank_name": "Scan Bank", "account_name": "Ann Lee"},
        f"wallet{digits}": {"ewallet_type": "paypal", "ewallet_wallet": f"wallet{digits}"},
        "447911123" + digits[:3]: {
            "receiver_phone": "+447911123" + digits[:3],
            "receiver_bank_id": "GBFPS01",
            "receiver_name": "Ann Lee",
        },
    }


def _stored_text(database_url: str) -> str:
    if database_url.startswith("sqlite"):
        database = Path(database_url.removeprefix("sqlite:///"))
        return b"".join(p.read_bytes() for p in database.parent.glob(database.name + "*")).decode("latin-1")
    engine = create_engine(sqlalchemy_url(database_url))
    try:
        with engine.connect() as conn:
            return "\n".join(str(row) for table in metadata.sorted_tables for row in conn.execute(select(table)))
    finally:
        engine.dispose()


def test_no_full_destination_number_is_stored_logged_shown_or_called_back(payer: Merchant) -> None:
    numbers = _numbers()
    seen: list[str] = []
    with running(Receiver(free_port())) as receiver:
        for destination in numbers.values():
            status = outcome(payer, payout(payer, destination, "1.00", server_callback_url=receiver.url))
            assert status["status"] == "approved"
            seen.append(str(status))
            seen.append(payer.gateway.cli("order", "show", status["paynet-order-id"]).__repr__())
        seen += [str(callback.query) for callback in receiver.wait_for(len(numbers))]
    seen.append(str(payer.gateway.cli("order", "list", "--merchant", payer.login)))
    seen.append(str(payer.gateway.cli("balance", "show", "--merchant", payer.login)))
    seen.append(payer.gateway.log_text())
    seen.append(_stored_text(payer.gateway.database_url))
    everything = "\n".join(seen)
    for number in numbers:
        assert number not in everything, f"a full destination number ending {number[-4:]} was found"
    assert "****" in everything  # the masked numbers are there instead


@pytest.fixture
def payer(make_merchant: object) -> Merchant:
    merchant: Merchant = make_merchant()  # type: ignore[operator]
    credit(merchant, "100.00")
    return merchant
