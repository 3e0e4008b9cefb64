"""Payouts in the console: a payout made through the API is listed under its merchant with its destination
masked as stored, filtered by status, and shown with its transactions; no full card, account or phone
number reaches the page."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import Page

from tests.api.test_payouts import BANK, CARD, PHONE, check, credit, outcome, pay, payout
from tests.support.browser import Screenshots
from tests.support.console import ConsoleClient, Login, sign_in_page
from tests.support.gateway import Gateway, Merchant


@pytest.fixture
def payer(make_merchant: Callable[..., Merchant]) -> Merchant:
    """A sandbox merchant of its own with 100.00 USD available."""
    merchant = make_merchant()
    credit(merchant, "100.00")
    return merchant


def paid(m: Merchant, destination: dict[str, str], amount: str = "30.00") -> tuple[str, dict[str, str]]:
    """The order id and final status of a payout to ``destination``."""
    status = outcome(m, payout(m, destination, amount))
    return status["paynet-order-id"], status


def row_of(html: str, order_id: str) -> str:
    found = re.search(rf'<tr data-order="{order_id}">(.*?)</tr>', html, re.S)
    assert found, f"no row for order {order_id}"
    return found[1]


SECRETS = (
    CARD["credit_card_number"], BANK["account_number"], BANK["iban"], PHONE["receiver_phone"],
    PHONE["receiver_phone"].lstrip("+"), PHONE["receiver_name"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("destination", "kind", "masked"),
    [(CARD, "card", "411111******1111"), (BANK, "bank", "****5432"), (PHONE, "phone", "****3456")],
)
def test_a_payout_is_listed_with_its_destination_masked_and_no_full_number(
    payer: Merchant,
    console_as: Callable[[str], ConsoleClient],
    destination: dict[str, str],
    kind: str,
    masked: str,
) -> None:
    order_id, status = paid(payer, destination)
    assert status["status"] == "approved"
    listed = console_as("viewer").get("/payouts", merchant=payer.login).text
    row = row_of(listed, order_id)
    assert f"{kind} <code>{masked}</code>" in row
    assert "30.00 USD" in row and "approved" in row and payer.login in row
    assert not [secret for secret in SECRETS if secret in listed]


def test_a_checked_then_paid_payout_shows_its_destination_recipient_and_transactions_and_links_its_order(
    payer: Merchant, console_as: Callable[[str], ConsoleClient]
) -> None:
    client_orderid, order_id, _ = check(payer, PHONE)
    answer = pay(payer, client_orderid, order_id)
    assert answer.status_code == 200, answer.text
    assert payer.wait_final(order_id, by_request_sn=answer.json()["serial-number"])["status"] == "approved"
    page = console_as("viewer").get(f"/payouts/{order_id}")
    assert page.status_code == 200
    assert "<dt>Destination</dt><dd>phone</dd>" in page.text
    assert '<code id="account">****3456</code>' in page.text
    assert "<dt>Recipient name</dt><dd>J*** D**</dd>" in page.text
    transactions = page.text.split('<table id="transactions">', 1)[1]
    assert transactions.index("<td>payout-check</td>") < transactions.index("<td>payout</td>")
    assert f'href="/orders/{order_id}"' in page.text
    assert not [secret for secret in SECRETS if secret in page.text]


def test_the_status_filter_keeps_only_payouts_of_that_status(
    payer: Merchant, console_as: Callable[[str], ConsoleClient]
) -> None:
    approved, _ = paid(payer, CARD, "10.00")
    declined, status = paid(payer, CARD, "500.00")  # beyond the balance
    assert (status["status"], status["error-code"]) == ("declined", "116")
    viewer = console_as("viewer")
    only_declined = viewer.get("/payouts", merchant=payer.login, status="declined").text
    assert f'data-order="{declined}"' in only_declined and f'data-order="{approved}"' not in only_declined
    assert "<code>116</code>" in row_of(only_declined, declined)
    only_approved = viewer.get("/payouts", merchant=payer.login, status="approved").text
    assert f'data-order="{approved}"' in only_approved and f'data-order="{declined}"' not in only_approved


def test_the_list_pages_by_order_id_newest_first(payer: Merchant, console_as: Callable[[str], ConsoleClient]) -> None:
    first, _ = paid(payer, CARD, "1.00")
    second, _ = paid(payer, CARD, "1.00")
    viewer = console_as("viewer")
    both = viewer.get("/payouts", merchant=payer.login).text
    assert both.index(f'data-order="{second}"') < both.index(f'data-order="{first}"')
    older = viewer.get("/payouts", merchant=payer.login, before=second).text
    assert f'data-order="{first}"' in older and f'data-order="{second}"' not in older


def test_a_sale_is_no_payout(merchant: Merchant, console_as: Callable[[str], ConsoleClient]) -> None:
    sale = merchant.sale("not-a-payout", cvv2="111")
    order_id = sale.json()["paynet-order-id"]
    viewer = console_as("viewer")
    assert viewer.get(f"/payouts/{order_id}").status_code == 404
    assert f'data-order="{order_id}"' not in viewer.get("/payouts", merchant=merchant.login).text


def test_on_a_phone_the_payouts_list_shows_the_masked_destination(
    payer: Merchant, shared_gateway: Gateway, operator_of: Callable[..., Login], page: Page, screenshots: Screenshots
) -> None:
    order_id, _ = paid(payer, BANK)
    sign_in_page(page, shared_gateway, operator_of("viewer"))
    page.goto(f"{shared_gateway.console}/payouts?merchant={payer.login}")
    assert page.locator(f'tr[data-order="{order_id}"] td.destination').inner_text() == "bank ****5432"
    screenshots.take(page, "console-payouts.png")
