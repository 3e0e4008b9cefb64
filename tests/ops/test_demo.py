"""``kassa serve --demo`` (``make serve``): a sandbox merchant ready to use, its banner telling what a
merchant's developer needs, and sandbox money so that a first payout is approved."""

from __future__ import annotations

import json
import re
import signal
import time
import uuid
from collections.abc import Callable

import pytest

from tests.support.acquirer_host import host_on_a_thread
from tests.support.gateway import Gateway, Merchant
from tests.support.oauth import signed_post


def _banner(gateway: Gateway) -> str:
    deadline = time.monotonic() + 10
    while "endpoint id:" not in (text := gateway.log_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return text


def test_the_demo_merchant_starts_with_a_sandbox_balance_that_a_payout_draws_on(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory("--demo")
    banner = _banner(gateway)
    assert "10000.00 USD available" in banner, banner
    control_key = re.search(r"control key:\s+(\S+)", banner)
    endpoint = re.search(r"endpoint id:\s+(\d+)", banner)
    assert control_key and endpoint, banner
    fields = {
        "client_orderid": f"demo-{uuid.uuid4().hex[:8]}",
        "amount": "25.00",
        "currency": "USD",
        "credit_card_number": "4111111111111111",
        "expire_month": "12",
        "expire_year": "2030",
    }
    url = f"{gateway.base}/api/v2/payout/{endpoint[1]}"
    answer = signed_post(url, fields, login="demo", method="HMAC-SHA1", control_key=control_key[1])
    assert answer.status_code == 200, answer.text
    shown = gateway.cli("balance", "show", "--merchant", "demo")
    deadline = time.monotonic() + 10
    while shown[0]["reserved"] != "0.00" and time.monotonic() < deadline:
        time.sleep(0.05)
        shown = gateway.cli("balance", "show", "--merchant", "demo")
    assert shown == [{"currency": "USD", "mode": "sandbox", "available": "9975.00", "reserved": "0.00"}]


@pytest.mark.empty_database
def test_starting_the_demo_prints_the_banner_and_two_log_lines_and_nothing_else(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory("--demo")
    printed = _banner(gateway).splitlines()
    logged = [json.loads(line) for line in printed if line.startswith("{")]
    assert [entry["msg"] for entry in logged] == ["database schema upgraded", "serving"], printed
    assert logged[1]["api"] == f"127.0.0.1:{gateway.port}" and logged[1]["ops"] == f"127.0.0.1:{gateway.ops_port}"
    told = [line for line in printed if not line.startswith("{")]
    assert told[0] == "Kassa sandbox is ready.", printed
    assert not [line for line in told if "warning" in line.lower() or "deprecat" in line.lower()], told


def test_ctrl_c_stops_the_demo_quietly(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory("--demo")
    _banner(gateway)
    assert gateway.process is not None
    gateway.process.send_signal(signal.SIGINT)
    assert gateway.process.wait(30) == 0
    assert "Aborted" not in gateway.log_text()


def test_with_a_demo_acquirer_the_demos_payments_go_over_iso_8583_and_without_it_back_to_the_sandbox(
    gateway_factory: Callable[..., Gateway],
) -> None:
    with host_on_a_thread() as host:
        gateway = gateway_factory("--demo", "--demo-acquirer", f"127.0.0.1:{host.port}")
        banner = _banner(gateway)
        control_key = re.search(r"control key:\s+(\S+)", banner)
        endpoint = re.search(r"endpoint id:\s+(\d+)", banner)
        assert control_key and endpoint, banner
        demo = Merchant(gateway, "demo", control_key[1], int(endpoint[1]), "USD")
        final = demo.wait_final(demo.sale(f"demo-iso-{uuid.uuid4().hex[:6]}").json()["paynet-order-id"])
        assert final["status"] == "approved"
        assert [m for m in host.received if m["t"] == "0200" and m["37"] == final["processor-rrn"]]
    assert gateway.cli("endpoint", "connections", "--id", endpoint[1])["connections"] == ["demo-acquirer"]
    gateway.stop()
    again = gateway_factory("--demo")
    _banner(again)
    assert again.cli("endpoint", "connections", "--id", endpoint[1])["connections"] == ["sandbox"]
