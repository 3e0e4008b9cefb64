"""Logs are structured, carry the request's serial number, and never hold card data or secrets."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from kassa.logs import mask_pans
from tests.support.gateway import KASSA, Gateway, new_merchant

CARDS = ("4111111111111111", "5555555555554444", "378282246310005")


@pytest.mark.backends("sqlite")
def test_logs_and_database_never_hold_card_data_or_secrets(
    gateway_factory: Callable[..., Gateway], tmp_path: Path
) -> None:
    gateway = gateway_factory(KASSA_LOG_LEVEL="DEBUG")
    merchant = new_merchant(gateway, "logscan")
    answers = [
        merchant.sale(f"log-{n}", credit_card_number=pan, cvv2="1234" if pan.startswith("37") else "123").json()
        for n, pan in enumerate(CARDS)
    ]
    answers.append(merchant.sale("luhn", credit_card_number="4111111111111112").json())
    answers.append(merchant.sale("wrong-control", control="0" * 40).json())
    for order_id in [a["paynet-order-id"] for a in answers[: len(CARDS)]]:
        assert merchant.wait_final(order_id)["status"] == "approved"
    gateway.stop()

    log = gateway.log_text()
    forbidden = [*CARDS, "4111111111111112", merchant.control_key, "cvv2", "credit_card_number="]
    assert [secret for secret in forbidden if secret in log] == []
    logged_serials = {entry.get("serial") for entry in map(json.loads, log.splitlines())}
    # Whatever the answer, a reader finds the request in the log by the serial number the merchant got.
    assert [a["serial-number"] for a in answers if a["serial-number"] not in logged_serials] == []

    database = Path(gateway.database_url.removeprefix("sqlite:///"))
    stored = b"".join(p.read_bytes() for p in database.parent.glob(database.name + "*"))
    assert [pan for pan in CARDS if pan.encode() in stored] == []
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT COUNT(*) FROM transient_secrets").fetchone() == (0,)


def test_pans_are_masked_but_a_serial_number_ending_in_twelve_digits_is_not() -> None:
    serial = "afc35e9d-6011-4c2b-9a3e-771844497484"
    masked = mask_pans(f'{{"serial": "{serial}", "note": "card 4111111111111111 and 5555555555554444"}}')
    assert serial in masked
    assert "4111111111111111" not in masked and "5555555555554444" not in masked


def test_starting_up_logs_no_line_per_migration_plugin(tmp_path: Path) -> None:
    env = {**os.environ, "KASSA_DATA_DIR": str(tmp_path), "KASSA_DATABASE_URL": f"sqlite:///{tmp_path / 'k.db'}"}
    done = subprocess.run([KASSA, "db", "upgrade"], env=env, capture_output=True, text=True, check=True)
    assert "Running upgrade" in done.stderr  # the migrations themselves are still told
    assert "setup plugin" not in done.stderr
