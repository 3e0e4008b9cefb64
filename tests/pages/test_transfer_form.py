"""transfer-form (CONTRACT §17) in headless Chromium, on SQLite and PostgreSQL: the payer types the source
card, and the receiving card when the request named none, on the gateway's page; the transfer is approved
and the browser comes back to the shop with the signed final redirect."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.pages.test_hosted_pages import landed
from tests.support.gateway import Merchant, free_port, minor_units, sha1
from tests.support.oauth import key_pair, register_key, signed_post
from tests.support.receiver import Receiver, running

RECEIVING = "5555555555554444"


@pytest.fixture
def shop() -> Iterator[Receiver]:
    with running(Receiver(free_port())) as receiver:
        yield receiver


@pytest.fixture
def payer(make_merchant: Callable[..., Merchant]) -> Merchant:
    merchant: Merchant = make_merchant(descriptor="Family Remit")
    return merchant


def fill_source_card(page: Page) -> None:
    page.fill("#cc-number", "4111 1111 1111 1111")
    page.fill("#cc-name", "Jane Doe")
    page.fill("#cc-exp", "12/30")
    page.fill("#cc-csc", "123")


def test_the_payer_types_both_cards_of_a_v2_transfer_form_that_names_no_receiving_card(
    page: Page, payer: Merchant, shop: Receiver
) -> None:
    data = {"client_orderid": "tf-1", "amount": "20.00", "currency": payer.currency, "redirect_url": shop.url}
    data["control"] = sha1(payer.endpoint_id, "tf-1", minor_units("20.00"), "", payer.control_key)
    answer = payer.gateway.post(f"/api/v2/transfer-form/{payer.endpoint_id}", data).json()
    page.goto(answer["redirect-url"])
    expect(page.locator("#pay")).to_have_text("Transfer 20.00 USD")
    expect(page.locator("label[for=to-number]")).to_have_text("Card that receives the money")
    fill_source_card(page)
    page.fill("#to-number", "5555 5555 5555 4445")
    page.click("#pay")
    expect(page.locator("#to-number-error")).to_contain_text("not valid")  # the browser's check
    page.evaluate("document.getElementById('card-form').submit()")  # past it: the server checks again
    expect(page.locator("#to-number-error")).to_contain_text("not valid")
    fill_source_card(page)
    page.fill("#to-number", "5555 5555 5555 4444")
    page.click("#pay")
    fields = landed(page, shop, payer)
    assert (fields["status"], fields["type"], fields["amount"]) == ("approved", "transfer", "20.00")
    status = payer.status(orderid=answer["paynet-order-id"]).json()
    shown = (status["status"], status["last-four-digits"], status["destination-account"])
    assert shown == ("approved", "1111", "555555******4444")


def test_a_v4_transfer_form_naming_its_receiving_card_asks_only_for_the_source_card(
    page: Page, payer: Merchant, shop: Receiver
) -> None:
    register_key(payer.gateway, payer.login, key_pair()[1])
    fields = {
        "client-order-id": "tf-2", "amount": "7.50", "currency": payer.currency, "redirect_url": shop.url,
        "destination-card-no": RECEIVING,
    }  # fmt: skip
    url = f"{payer.gateway.base}/api/v4/transfer-form/{payer.endpoint_id}"
    answer = signed_post(url, fields, login=payer.login, private_key_pem=key_pair()[0], headers={}).json()
    page.goto(answer["redirect-url"])
    assert page.locator("#to-number").count() == 0
    fill_source_card(page)
    page.click("#pay")
    returned = landed(page, shop, payer)
    assert (returned["status"], returned["type"], returned["last-four-digits"]) == ("approved", "transfer", "1111")
    status = payer.status(orderid=answer["paynet-order-id"]).json()
    assert status["destination-account"] == "555555******4444"
