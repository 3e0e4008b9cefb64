"""The console as an admin uses it, clicking through Chromium: sign in with password and one-time code,
create a merchant and its endpoint, register its RSA key, give it sandbox money; then a sale the merchant
makes through the API is found by the search, its page shows the callback that failed, and the callback is
redelivered from that page and arrives."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from playwright.sync_api import Page, expect

from tests.support.browser import Screenshots
from tests.support.console import Login, sign_in_page
from tests.support.gateway import Gateway, Merchant, free_port
from tests.support.receiver import Receiver, running


def _public_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def _create_merchant(page: Page, gateway: Gateway, login: str) -> Merchant:
    page.get_by_role("link", name="Merchants").click()
    page.get_by_label("Login").fill(login)
    page.get_by_role("button", name="Create merchant").click()
    control_key = page.locator("#control-key").inner_text().strip()
    page.get_by_label("Currency").fill("USD")
    page.get_by_role("button", name="Create endpoint").click()
    expect(page.locator("summary", has_text="Change endpoint")).to_be_visible()
    endpoint_id = next(e["id"] for e in gateway.cli("endpoint", "list") if e["merchant"] == login)
    return Merchant(gateway, login, control_key, endpoint_id)


def _wait_for_text(page: Page, url: str, text: str, count: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while page.content().count(text) < count and time.monotonic() < deadline:
        time.sleep(0.2)
        page.goto(url)
    assert page.content().count(text) >= count, text


def test_an_admin_sets_up_a_merchant_and_redelivers_its_failed_callback_from_the_order_page(
    page: Page, shared_gateway: Gateway, operator_of: Callable[..., Login], screenshots: Screenshots
) -> None:
    sign_in_page(page, shared_gateway, operator_of("admin"))
    login = f"shop-{uuid.uuid4().hex[:8]}"
    merchant = _create_merchant(page, shared_gateway, login)

    page.get_by_label(re.compile("Public key")).fill(_public_pem())
    page.get_by_role("button", name="Add key").click()
    expect(page.get_by_role("button", name=re.compile(r"Revoke key \d+"))).to_be_visible()
    assert [k["merchant"] for k in shared_gateway.cli("key", "list", "--merchant", login)] == [login]

    page.goto(f"{shared_gateway.console}/balances/{login}")
    page.get_by_label("Currency").fill("USD")
    page.get_by_label("Amount").fill("250.00")
    page.get_by_label("Reason").fill("sandbox money for payouts")
    page.get_by_role("button", name="Credit", exact=True).click()
    assert shared_gateway.cli("balance", "show", "--merchant", login)[0]["available"] == "250.00"

    with running(Receiver(free_port(), script=["500"])) as shop:
        client_orderid = f"c-{uuid.uuid4().hex[:10]}"
        orderid = merchant.sale(client_orderid, server_callback_url=shop.url).json()["paynet-order-id"]
        assert merchant.wait_final(orderid)["status"] == "approved"
        shop.wait_for(1)

        page.get_by_role("link", name="Orders").click()
        page.get_by_label("client_orderid").fill(client_orderid)
        page.get_by_role("button", name="Search").click()
        page.get_by_role("link", name=orderid, exact=True).click()
        detail = f"{shared_gateway.console}/orders/{orderid}"
        _wait_for_text(page, detail, '<tr class="attempt">', 1)
        expect(page.locator("tr.attempt").first).to_contain_text("500")
        screenshots.take(page, "console-order.png")

        page.get_by_role("button", name="Redeliver callbacks").click()
        page.get_by_role("button", name=re.compile("Yes, redeliver")).click()
        assert len(shop.wait_for(2, timeout=10)) == 2  # long before the first retry, 15 s after the 500
        _wait_for_text(page, detail, '<tr class="attempt">', 2)
