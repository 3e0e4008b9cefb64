"""Subscriptions in the console: a recurring payment made through the API is listed, shown with its
schedule and masked card, and cancelled by an admin (through ``kassa recurring cancel``'s core function,
audited); a viewer may read but not cancel; in Chromium the cancel button asks first."""

from __future__ import annotations

import datetime
import re
import uuid
from collections.abc import Callable

import pytest
from playwright.sync_api import Dialog, Page

from tests.api.test_recurring import card_fields, subscription
from tests.support.browser import Screenshots
from tests.support.console import ConsoleClient, Login, sign_in_page
from tests.support.gateway import Gateway, Merchant, new_merchant
from tests.support.oauth import key_pair, register_key


@pytest.fixture
def shop(shared_gateway: Gateway) -> Merchant:
    """A merchant of its own that signs v4 requests with its RSA key."""
    merchant = new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}")
    register_key(shared_gateway, merchant.login, key_pair()[1])
    return merchant


def subscribe(shop: Merchant, client_orderid: str = "box") -> str:
    """A monthly payment of 9.90 USD, at most 3 charges, the first 40 days ahead (none is charged while the
    test runs); its recurring-payment-id."""
    start = (datetime.datetime.now(datetime.UTC).date() + datetime.timedelta(days=40)).isoformat()
    fields = {**card_fields(), "period": "month", "start_date": start, "max-count": "3"}
    answer = subscription(shop, client_orderid, **fields)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "approved", body
    return str(body["recurring-payment-id"])


def status_of(gateway: Gateway, payment_id: str) -> str:
    return str(gateway.cli("recurring", "show", payment_id)["status"])


def test_a_subscription_made_through_the_api_is_listed_under_its_merchant(
    shop: Merchant, console_as: Callable[[str], ConsoleClient]
) -> None:
    payment_id = subscribe(shop)
    listed = console_as("viewer").get("/subscriptions", merchant=shop.login)
    assert listed.status_code == 200
    row = re.search(rf'<a href="/subscriptions/{payment_id}">.*?</tr>', listed.text, re.S)
    assert row, listed.text
    for shown in (shop.login, "box", "active", "9.90 USD", "every 1 month"):
        assert shown in row[0]


def test_the_list_pages_by_id_newest_first(shop: Merchant, console_as: Callable[[str], ConsoleClient]) -> None:
    older, newer = subscribe(shop, "first"), subscribe(shop, "second")
    viewer = console_as("viewer")
    both = viewer.get("/subscriptions", merchant=shop.login).text
    assert both.index(f"/subscriptions/{newer}") < both.index(f"/subscriptions/{older}")
    after_newer = viewer.get("/subscriptions", merchant=shop.login, before=newer).text
    assert f"/subscriptions/{older}" in after_newer and f"/subscriptions/{newer}" not in after_newer


def test_an_unknown_merchant_filter_says_so(console_as: Callable[[str], ConsoleClient]) -> None:
    answer = console_as("viewer").get("/subscriptions", merchant="no-such-merchant")
    assert answer.status_code == 404 and "No merchant with login no-such-merchant." in answer.text


def test_a_subscription_shows_its_schedule_and_only_the_masked_card(
    shop: Merchant, console_as: Callable[[str], ConsoleClient]
) -> None:
    payment_id = subscribe(shop)
    page = console_as("viewer").get(f"/subscriptions/{payment_id}")
    assert page.status_code == 200
    assert "<dt>Every</dt><dd>1 month</dd>" in page.text and "<dt>At most</dt><dd>3 charges</dd>" in page.text
    assert "411111******1111" in page.text and "4111111111111111" not in page.text
    assert "No charge yet." in page.text
    assert "/cancel" not in page.text  # a viewer is not offered the form


def test_a_missing_subscription_is_404(console_as: Callable[[str], ConsoleClient]) -> None:
    assert console_as("viewer").get("/subscriptions/999999999").status_code == 404


def test_an_admin_cancels_a_subscription_which_then_shows_cancelled_and_is_audited(
    shop: Merchant, shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient]
) -> None:
    payment_id = subscribe(shop)
    admin = console_as("admin")
    detail = f"/subscriptions/{payment_id}"
    assert f"Cancel subscription {payment_id}</button>" in admin.get(detail).text
    answer = admin.post(f"{detail}/cancel", {}, from_page=detail)
    assert answer.status_code == 303 and answer.headers["location"] == detail
    shown = admin.get(detail).text
    assert '<span class="badge cancelled" id="status">cancelled</span>' in shown
    assert f"{detail}/cancel" not in shown
    assert status_of(shared_gateway, payment_id) == "cancelled"
    audit = admin.get("/audit", action="recurring.cancel").text
    assert f"recurring {payment_id}" in audit and "cancelled" in audit


def test_a_viewer_posting_the_cancel_form_is_refused_and_the_subscription_stays_active(
    shop: Merchant, shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient]
) -> None:
    payment_id = subscribe(shop)
    viewer = console_as("viewer")
    detail = f"/subscriptions/{payment_id}"
    assert viewer.post(f"{detail}/cancel", {}, from_page=detail).status_code == 403
    assert status_of(shared_gateway, payment_id) == "active"


def test_in_chromium_the_cancel_button_asks_first_and_a_no_cancels_nothing(
    shop: Merchant, shared_gateway: Gateway, operator_of: Callable[..., Login], page: Page, screenshots: Screenshots
) -> None:
    payment_id = subscribe(shop)
    sign_in_page(page, shared_gateway, operator_of("admin"))
    page.goto(f"{shared_gateway.console}/subscriptions/{payment_id}")
    screenshots.take(page, "console-subscription.png")
    asked: list[str] = []

    def answer(dialog: Dialog, accept: bool) -> None:
        asked.append(dialog.message)
        if accept:
            dialog.accept()
        else:
            dialog.dismiss()

    button = page.get_by_role("button", name=f"Cancel subscription {payment_id}")
    page.once("dialog", lambda dialog: answer(dialog, False))
    button.click()
    assert asked == [f"Cancel subscription {payment_id}? No charge is made after this."]
    assert status_of(shared_gateway, payment_id) == "active"
    page.once("dialog", lambda dialog: answer(dialog, True))
    with page.expect_navigation():
        button.click()
    assert page.locator("#status").inner_text() == "cancelled"
    assert status_of(shared_gateway, payment_id) == "cancelled"
