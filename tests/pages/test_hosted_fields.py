"""Hosted Fields in headless Chromium (CONTRACT §18): a merchant's checkout page sending exactly §18's
policy loads the SDK from the gateway, the payer types into the gateway's iframes, the merchant's server
gets a token, makes the v4 sale and polls v4 status, and the page shows the outcome; with 3-D Secure
through ``redirect-to`` and the signed return, a declined card, a spent ticket and a network failure. No
policy violation may be reported, and the merchant page's own script never reaches the card."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from importlib import resources

import pytest
from playwright.sync_api import ConsoleMessage, FrameLocator, Page, Route, expect

from kassa.domain import hosted_fields as hf
from tests.support.browser import Screenshots
from tests.support.checkout import Checkout, serving
from tests.support.gateway import Merchant
from tests.support.hosted_fields import TEST_CARD, future_expiry, v4_merchant


@pytest.fixture
def checkout(make_merchant: Callable[..., Merchant]) -> Iterator[Checkout]:
    with serving(Checkout(v4_merchant(make_merchant(descriptor="Corner Bookshop")))) as running:
        yield running


@pytest.fixture
def console(page: Page) -> list[str]:
    """What the browser console reported about content security policies, from every frame."""
    reported: list[str] = []

    def record(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text or "Refused to" in message.text:
            reported.append(message.text)

    page.on("console", record)
    return reported


def field(page: Page, container: str) -> FrameLocator:
    return page.frame_locator(f"#{container} iframe")


def type_card(page: Page, *, number: str = TEST_CARD, exp: str | None = None, cvv: str = "123") -> None:
    field(page, "card-number").locator("input").press_sequentially(number)
    field(page, "card-expiry").locator("input").press_sequentially((exp or future_expiry()).replace("/", ""))
    field(page, "card-cvc").locator("input").press_sequentially(cvv)


def open_checkout(page: Page, checkout: Checkout, query: str = "") -> None:
    page.goto(checkout.url(query))
    expect(page.locator("body")).to_have_attribute("data-ready", "yes", timeout=15_000)


def no_violations(page: Page, console: list[str]) -> None:
    assert console == []
    assert page.evaluate("window.shopLog.violations") == []


def test_a_payer_pays_in_the_gateways_fields_and_the_merchants_page_shows_approved(
    page: Page, checkout: Checkout, console: list[str], screenshots: Screenshots
) -> None:
    open_checkout(page, checkout)
    type_card(page)
    expect(page.locator("#card-number")).to_have_class("field hf-field hf-field--filled")
    screenshots.take(page, "hosted-fields-light-phone.png")
    # The card is out of the merchant page's reach: its script sees neither the iframes' documents nor a value.
    reach = page.evaluate(
        """() => Array.from(document.querySelectorAll('iframe')).map(f => {
            try { return f.contentDocument === null ? 'blocked' : 'readable'; } catch (e) { return 'blocked'; }
        }).concat([document.body.innerHTML.includes('4448') ? 'leaked' : 'clean'])"""
    )
    assert reach == ["blocked", "blocked", "blocked", "clean"]
    page.click("#pay")
    expect(page.locator("#result")).to_have_text("Payment approved", timeout=20_000)
    [answer] = checkout.sales
    assert isinstance(answer["paynet-order-id"], int)
    assert checkout.returns == []  # no browser step: the page never left the shop
    no_violations(page, console)


def test_a_3_d_secure_challenge_goes_through_redirect_to_and_returns_signed(
    page: Page, checkout: Checkout, console: list[str]
) -> None:
    open_checkout(page, checkout)
    type_card(page, cvv="321")
    page.click("#pay")
    expect(page.locator("#code-hint")).to_be_visible(timeout=20_000)  # the issuer's page, opened once
    page.fill("#code", page.inner_text("#code-hint"))
    page.click("#submit-code")
    expect(page.locator("#returned")).to_have_text("approved (signed)", timeout=20_000)
    [back] = checkout.returns
    assert back.fields["merchant_order"] == checkout.sales[0]["merchant-order-id"]
    assert back.fields["orderid"] == str(checkout.sales[0]["paynet-order-id"])
    assert console == []


def test_a_declined_card_is_shown_declined(page: Page, checkout: Checkout, console: list[str]) -> None:
    open_checkout(page, checkout)
    type_card(page, cvv="116")
    page.click("#pay")
    expect(page.locator("#result")).to_have_text("Payment declined", timeout=20_000)
    no_violations(page, console)


def test_a_spent_ticket_is_a_terminal_4xxx_error(page: Page, checkout: Checkout, console: list[str]) -> None:
    open_checkout(page, checkout, "?spent=1")
    type_card(page)
    page.click("#pay")
    expect(page.locator("body")).to_have_attribute("data-spent", "4003", timeout=15_000)
    [problem] = page.evaluate("window.shopLog.errors")
    assert problem["code"] == 4003 and problem["payerMessage"]
    assert checkout.sales == []
    no_violations(page, console)


def test_a_network_failure_is_retried_with_the_same_ticket(page: Page, checkout: Checkout, console: list[str]) -> None:
    failures = []

    def fail_once(route: Route) -> None:
        if not failures:
            failures.append(route.request.url)
            route.abort("internetdisconnected")
        else:
            route.continue_()

    page.route("**/hosted-fields/v1/tokenize", fail_once)
    open_checkout(page, checkout)
    type_card(page)
    page.click("#pay")
    expect(page.locator("#message")).not_to_be_empty(timeout=15_000)
    assert [e["code"] for e in page.evaluate("window.shopLog.errors")] == [3001]
    page.click("#pay")  # the shop's script keeps the ticket after a 3xxx error
    expect(page.locator("#result")).to_have_text("Payment approved", timeout=20_000)
    assert len(failures) == 1
    no_violations(page, console)


def test_the_fields_are_labelled_autocompleted_and_reached_by_tab_in_order_at_phone_width(
    page: Page, checkout: Checkout
) -> None:
    open_checkout(page, checkout)
    wanted = {"card-number": ("cc-number", "Card number"), "card-expiry": ("cc-exp", "Expiry date (MM/YY)")}
    wanted["card-cvc"] = ("cc-csc", "Security code")
    for container, (autocomplete, label) in wanted.items():
        assert page.get_attribute(f"#{container} iframe", "title") == label
        inside = field(page, container)
        expect(inside.locator("input")).to_have_attribute("autocomplete", autocomplete)
        expect(inside.get_by_label(label)).to_have_count(1)  # the input's accessible name
        expect(inside.locator("#hf-error")).to_have_attribute("aria-live", "polite")
    page.focus("#name")
    for container in wanted:
        page.keyboard.press("Tab")
        expect(field(page, container).locator("input")).to_be_focused()
        expect(page.locator(f"#{container}")).to_have_class("field hf-field hf-field--focus")
    page.keyboard.press("Tab")
    expect(page.locator("#pay")).to_be_focused()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # 390 px: nothing overflows
    cvc = page.locator("#card-cvc iframe").bounding_box()
    assert cvc is not None and cvc["x"] + cvc["width"] <= 390 and cvc["width"] > 100


def test_a_wrong_card_is_explained_in_the_field_and_its_ticket_still_pays_once_corrected(
    page: Page, checkout: Checkout, console: list[str], screenshots: Screenshots
) -> None:
    open_checkout(page, checkout, "?theme=dark")
    type_card(page, number="4444 4444 4444 4444", exp="01/20")  # fails Luhn; expired
    number = field(page, "card-number").locator("input")
    expect(number).to_have_attribute("aria-invalid", "true")
    expect(field(page, "card-number").locator("#hf-error")).to_have_text(
        "This card number is not valid: check the digits."
    )
    expect(field(page, "card-expiry").locator("#hf-error")).to_have_text("This card has expired.")
    expect(page.locator("#card-number")).to_have_class("field hf-field hf-field--filled hf-field--error")
    page.click("#pay")
    expect(page.locator("#message")).to_have_text("This card number is not valid: check the digits.")
    screenshots.take(page, "hosted-fields-error-dark-phone.png")
    [problem] = page.evaluate("window.shopLog.errors")
    assert (problem["code"], problem["field"]) == (2002, "card-number")  # checked in the iframe: ticket unspent
    number.fill("")
    number.press_sequentially(TEST_CARD)
    expiry = field(page, "card-expiry").locator("input")
    expiry.fill("")
    expiry.press_sequentially(future_expiry().replace("/", ""))
    expect(page.locator("#card-number")).to_have_class("field hf-field hf-field--filled")
    screenshots.take(page, "hosted-fields-dark-phone.png")
    page.click("#pay")
    expect(page.locator("#result")).to_have_text("Payment approved", timeout=20_000)
    assert len(checkout.sales) == 1
    no_violations(page, console)


def test_styles_beyond_the_allow_list_are_dropped_and_the_sdk_refuses_the_shops_own_origin(
    page: Page, checkout: Checkout, console: list[str]
) -> None:
    open_checkout(page, checkout)
    page.evaluate(
        """window.shopFields.setStyle('card-number', {input: {color: 'rgb(1, 2, 3)', letterSpacing: '2px',
            position: 'absolute', backgroundImage: 'url(https://tracker.example/x.png)'}})"""
    )
    number = field(page, "card-number").locator("input")
    expect(number).to_have_css("color", "rgb(1, 2, 3)")
    expect(number).to_have_css("letter-spacing", "2px")
    expect(number).to_have_css("position", "static")
    expect(number).to_have_css("background-image", "none")
    page.goto(checkout.url("?sdk=own"))  # a copy of the SDK on the shop's origin: its fields would be the shop's
    page.wait_for_function("window.shopLog.errors.length > 0")
    assert [e["code"] for e in page.evaluate("window.shopLog.errors")] == [1002]
    assert page.locator("iframe").count() == 0
    assert console == []


def test_the_sdk_lets_through_the_styles_the_field_page_applies() -> None:
    """The SDK, a static script on the merchant's page, keeps its own copy of the allow-list."""
    sdk = resources.files("kassa.pages").joinpath("static", "hosted-fields.js").read_text()
    listed = re.search(r"var STYLE_PROPERTIES = \[(.*?)\];", sdk, re.S)
    assert listed is not None and tuple(re.findall(r'"(\w+)"', listed.group(1))) == hf.STYLE_PROPERTIES
