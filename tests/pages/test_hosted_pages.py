"""A cardholder in headless Chromium: hosted forms, 3-D Secure, and the way back to the shop."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import httpx
import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

from tests.support.browser import Screenshots
from tests.support.gateway import TLS, Merchant, free_port, sha1
from tests.support.receiver import Receiver, running

pytestmark = pytest.mark.backends("sqlite")  # the pages are the same on both; the API suites cover both


@pytest.fixture
def shop() -> Iterator[Receiver]:
    with running(Receiver(free_port())) as receiver:
        yield receiver


SESSION_TTL = 1800  # KASSA_SESSION_TTL_SECONDS's default


@pytest.fixture
def merchant_for_pages(make_merchant: Callable[..., Merchant]) -> Merchant:
    merchant: Merchant = make_merchant(descriptor="Corner Bookshop")
    return merchant


def form_url(
    m: Merchant, client_orderid: str, shop: Receiver, operation: str = "sale-form", amount: str = "25.00"
) -> str:
    data = m.sale_fields(client_orderid, amount=amount, redirect_url=shop.url + "/return")
    for card_field in ("credit_card_number", "card_printed_name", "expire_month", "expire_year", "cvv2"):
        del data[card_field]
    answer = m.gateway.post(f"/api/v2/{operation}/{m.endpoint_id}", data).json()
    assert answer["type"] == "async-form-response", answer
    return str(answer["redirect-url"])


def pay(page: Page, url: str, *, number: str = "4111 1111 1111 1111", exp: str = "12/30", cvv: str = "123") -> None:
    page.goto(url)
    page.fill("#cc-number", number)
    page.fill("#cc-name", "Jane Doe")
    page.fill("#cc-exp", exp)
    page.fill("#cc-csc", cvv)
    page.click("#pay")


def landed(page: Page, shop: Receiver, m: Merchant) -> dict[str, str]:
    """The shop's return page got the signed final redirect; returns its fields."""
    expect(page.locator("#thanks")).to_be_visible(timeout=20_000)
    [returned] = shop.posted
    fields = returned.query
    assert fields["control"] == sha1(fields["status"], fields["orderid"], fields["client_orderid"], m.control_key)
    return fields


def test_cardholder_completes_sale_form_and_lands_on_the_shop_with_a_signed_post(
    page: Page, merchant_for_pages: Merchant, shop: Receiver, screenshots: Screenshots
) -> None:
    url = form_url(merchant_for_pages, "pf-1", shop)
    page.goto(url)
    expect(page.locator("#amount")).to_have_text("25.00 USD")
    expect(page.get_by_role("heading")).to_have_text("Corner Bookshop")
    for field, autocomplete in (
        ("cc-number", "cc-number"),
        ("cc-exp", "cc-exp"),
        ("cc-csc", "cc-csc"),
        ("cc-name", "cc-name"),
    ):
        assert page.get_attribute(f"#{field}", "autocomplete") == autocomplete
        expect(page.locator(f"label[for={field}]")).to_be_visible()
    page.fill("#cc-number", "4111 1111 1111 1111")
    expect(page.locator("#brand")).to_have_text("VISA")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390  # fits a phone screen
    screenshots.take(page, "hosted-form.png")
    pay(page, url)
    fields = landed(page, shop, merchant_for_pages)
    assert (fields["status"], fields["type"], fields["amount"]) == ("approved", "sale", "25.00")
    assert merchant_for_pages.status(client_orderid="pf-1").json()["status"] == "approved"


def test_field_errors_are_shown_next_to_the_field_in_the_browser_and_by_the_server(
    page: Page, merchant_for_pages: Merchant, shop: Receiver, screenshots: Screenshots
) -> None:
    url = form_url(merchant_for_pages, "pf-2", shop)
    pay(page, url, number="4111 1111 1111 1112", exp="01/20", cvv="12")
    expect(page.locator("#cc-number-error")).to_contain_text("not valid")
    expect(page.locator("#cc-exp-error")).to_contain_text("expired")
    expect(page.locator("#cc-csc-error")).to_contain_text("3-digit")
    screenshots.take(page, "hosted-form-errors.png")
    page.evaluate("document.getElementById('card-form').submit()")  # past the browser's checks
    expect(page.locator("#cc-number-error")).to_contain_text("not valid")
    assert page.get_attribute("#cc-number", "aria-invalid") == "true"
    pay(page, url)  # the token still works after a refused submission
    assert landed(page, shop, merchant_for_pages)["status"] == "approved"


def test_a_form_shown_again_after_an_error_carries_no_card_number_or_code_back(
    merchant_for_pages: Merchant, shop: Receiver
) -> None:
    card = {"cc-number": "4111 1111 1111 1111", "cc-name": "Jane Doe", "cc-exp": "01/20", "cc-csc": "123"}
    answer = httpx.post(form_url(merchant_for_pages, "pf-echo", shop), data=card, verify=TLS, timeout=30)
    assert answer.status_code == 400 and "expired" in answer.text
    assert "4111" not in answer.text and 'value="123"' not in answer.text
    assert 'value="Jane Doe"' in answer.text  # what is not card data is kept for the payer


def test_used_form_token_shows_an_error_page(page: Page, merchant_for_pages: Merchant, shop: Receiver) -> None:
    url = form_url(merchant_for_pages, "pf-3", shop)
    pay(page, url)
    landed(page, shop, merchant_for_pages)
    response = page.goto(url)
    assert response is not None and response.status == 410
    expect(page.locator("#title")).to_contain_text("no longer available")


def test_expired_form_token_shows_an_error_page(
    page: Page, clock_merchant: Merchant, shop: Receiver, screenshots: Screenshots
) -> None:
    url = form_url(clock_merchant, "pf-4", shop)
    # Ten seconds before it expires: the test clock runs on with real time, which a loaded machine spends.
    clock_merchant.gateway.advance(SESSION_TTL - 10)
    response = page.goto(url)
    assert response is not None and response.status == 200
    clock_merchant.gateway.advance(11)
    response = page.goto(url)
    assert response is not None and response.status == 410
    screenshots.take(page, "hosted-form-expired.png", full_page=False)
    final = clock_merchant.wait_final(clock_merchant.status(client_orderid="pf-4").json()["paynet-order-id"])
    assert (final["status"], final["error-code"]) == ("declined", "100")


@pytest.mark.parametrize(("code", "status"), [("right", "approved"), ("wrong", "declined")])
def test_3ds_2_challenge_passes_with_the_code_shown_and_fails_with_another(
    page: Page, merchant_for_pages: Merchant, shop: Receiver, screenshots: Screenshots, code: str, status: str
) -> None:
    pay(page, form_url(merchant_for_pages, f"pc-{code}", shop), cvv="321")
    expect(page.locator("#code-hint")).to_be_visible(timeout=15_000)
    screenshots.take(page, "acs-challenge.png")
    hint = page.inner_text("#code-hint")
    page.fill("#code", hint if code == "right" else "000000" if hint != "000000" else "111111")
    page.click("#submit-code")
    fields = landed(page, shop, merchant_for_pages)
    assert fields["status"] == status


def test_3ds_method_step_then_frictionless_approval(
    page: Page, merchant_for_pages: Merchant, shop: Receiver, screenshots: Screenshots
) -> None:
    pay(page, form_url(merchant_for_pages, "pm-1", shop), cvv="323")
    with contextlib.suppress(PlaywrightError):  # the step may already be moving on: the picture is a bonus
        screenshots.take(page, "threeds-method.png", full_page=False)
    assert landed(page, shop, merchant_for_pages)["status"] == "approved"
    order = merchant_for_pages.status(client_orderid="pm-1").json()["paynet-order-id"]
    shown = merchant_for_pages.gateway.cli("order", "show", order)
    authentication = shown["transactions"][0]["three_ds"]
    assert (authentication["trans_status"], authentication["comp_ind"], authentication["eci"]) == ("Y", "Y", "05")
    assert authentication["server_trans_id"] and authentication["authentication_value"]


def test_3ds_1_0_2_pareq_pares_exchange(page: Page, merchant_for_pages: Merchant, shop: Receiver) -> None:
    pay(page, form_url(merchant_for_pages, "p1-1", shop), cvv="322")
    expect(page.locator("#code-hint")).to_be_visible(timeout=15_000)
    page.fill("#code", page.inner_text("#code-hint"))
    page.click("#submit-code")
    assert landed(page, shop, merchant_for_pages)["status"] == "approved"


def test_direct_sale_with_a_3ds_card_sends_the_customer_through_redirect_to(
    page: Page, merchant_for_pages: Merchant, shop: Receiver
) -> None:
    order = merchant_for_pages.sale("pd-1", cvv2="321", redirect_url=shop.url + "/return").json()["paynet-order-id"]
    step = merchant_for_pages.wait_stage(order, leaving="sale_processing")
    page.set_content(step["html"])  # the merchant shows the document status gave it
    expect(page.locator("#code-hint")).to_be_visible(timeout=15_000)
    page.fill("#code", page.inner_text("#code-hint"))
    page.click("#submit-code")
    assert landed(page, shop, merchant_for_pages)["status"] == "approved"


def test_a_card_to_card_transfer_passes_its_3ds_challenge_in_the_browser(
    page: Page, merchant_for_pages: Merchant, shop: Receiver
) -> None:
    from tests.support.oauth import key_pair, register_key, signed_post

    m = merchant_for_pages
    register_key(m.gateway, m.login, key_pair()[1])
    fields = {
        "client_orderid": "tr-3ds", "amount": "15.00", "currency": m.currency, "redirect_url": shop.url + "/return",
        "credit_card_number": "4111111111111111", "expire_month": "12", "expire_year": "2030", "cvv2": "321",
        "destination-card-no": "5555555555554444",
    }  # fmt: skip
    url = f"{m.gateway.base}/api/v4/transfer/{m.endpoint_id}"
    order = signed_post(url, fields, login=m.login, private_key_pem=key_pair()[0], headers={}).json()["paynet-order-id"]
    step = m.wait_stage(order, leaving="transfer_processing")
    page.set_content(step["html"])
    expect(page.locator("#code-hint")).to_be_visible(timeout=15_000)
    page.fill("#code", page.inner_text("#code-hint"))
    page.click("#submit-code")
    landed_status = landed(page, shop, m)
    assert (landed_status["status"], landed_status["type"]) == ("approved", "transfer")


def test_a_payout_form_takes_the_recipients_card_without_its_code_and_returns_to_the_shop(
    page: Page, merchant_for_pages: Merchant, shop: Receiver
) -> None:
    from tests.api.test_payouts import available, credit

    m = merchant_for_pages
    credit(m, "100.00")
    page.goto(form_url(m, "po-form", shop, "payout-form", amount="30.00"))
    expect(page.locator("#pay")).to_have_text("Receive 30.00 USD")
    assert page.locator("#cc-csc").count() == 0
    page.fill("#cc-number", "5555 5555 5555 4444")
    page.fill("#cc-name", "Jane Doe")
    page.fill("#cc-exp", "12/30")
    page.click("#pay")
    fields = landed(page, shop, m)
    assert (fields["status"], fields["type"], fields["last-four-digits"]) == ("approved", "payout", "4444")
    assert available(m) == "70.00"


def test_a_payout_form_the_balance_does_not_cover_returns_the_recipient_to_the_shop_declined(
    page: Page, merchant_for_pages: Merchant, shop: Receiver
) -> None:
    page.goto(form_url(merchant_for_pages, "po-none", shop, "payout-form", amount="30.00"))
    fields = landed(page, shop, merchant_for_pages)
    assert (fields["status"], fields["error_code"]) == ("declined", "116")


def test_preauth_and_verification_forms(page: Page, merchant_for_pages: Merchant, shop: Receiver) -> None:
    pay(page, form_url(merchant_for_pages, "pa-1", shop, "preauth-form"))
    assert landed(page, shop, merchant_for_pages)["type"] == "preauth"
    shop.posted.clear()
    data = merchant_for_pages.sale_fields("pv-1", redirect_url=shop.url + "/return")
    for name in ("credit_card_number", "card_printed_name", "expire_month", "expire_year", "cvv2", "amount"):
        del data[name]
    data["control"] = sha1(merchant_for_pages.endpoint_id, "pv-1", data["email"], merchant_for_pages.control_key)
    answer = merchant_for_pages.gateway.post(
        f"/api/v2/account-verification-form/{merchant_for_pages.endpoint_id}", data
    )
    pay(page, answer.json()["redirect-url"])
    assert landed(page, shop, merchant_for_pages)["type"] == "account-verification"
