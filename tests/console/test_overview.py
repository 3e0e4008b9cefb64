"""The overview: money taken in today and over 30 days by merchant and currency, approval rate and decline
reasons, in tables that need no JavaScript; in Chromium, uPlot charts of the daily series, and the figures
reloaded by htmx from their fragment."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

import pytest
from playwright.sync_api import Page

from tests.support.browser import Screenshots
from tests.support.console import ConsoleClient, Login, sign_in_page
from tests.support.gateway import Gateway, Merchant


def _sale(merchant: Merchant, cvv2: str, amount: str) -> dict[str, str]:
    answer = merchant.sale(f"ov-{uuid.uuid4().hex[:10]}", cvv2=cvv2, amount=amount)
    assert answer.status_code == 200, answer.text
    return merchant.wait_final(answer.json()["paynet-order-id"])


@pytest.fixture
def traded(make_merchant: Callable[..., Merchant]) -> Merchant:
    """A merchant of its own with one approved sale of 10.42 USD and one declined for insufficient funds."""
    merchant = make_merchant()
    assert _sale(merchant, "111", "10.42")["status"] == "approved"
    declined = _sale(merchant, "116", "3.00")
    assert (declined["status"], declined["error-code"]) == ("declined", "116")
    return merchant


def cells(html: str, table: str, login: str) -> dict[str, str]:
    """The figures of ``login``'s USD row in the table with id ``table``, by cell class, tags stripped."""
    section = html.split(f'<table id="{table}">', 1)[1].split("</table>", 1)[0]
    row = re.search(rf'<tr data-merchant="{re.escape(login)}" data-currency="USD">(.*?)</tr>', section, re.S)
    assert row, f"no row for {login} in {table}"
    found = re.findall(r'<td class="(?:num )?(\w+)">(.*?)</td>', row[1], re.S)
    return {name: " ".join(re.sub(r"<[^>]+>", "", text).split()) for name, text in found}


@pytest.mark.parametrize("table", ["today", "month"])
def test_the_overview_counts_a_sale_and_a_decline_made_through_the_api(
    traded: Merchant, console_as: Callable[[str], ConsoleClient], table: str
) -> None:
    page = console_as("viewer").get("/")
    assert page.status_code == 200
    assert cells(page.text, table, traded.login) == {
        "volume": "10.42",
        "approved": "1",
        "decided": "2",
        "rate": "50.0%",
        "reasons": "116 \u00d7 1",
    }


def test_a_merchant_with_chargebacks_above_one_percent_of_its_sales_is_flagged_with_its_filter_rate(
    make_merchant: Callable[..., Merchant], console_as: Callable[[str], ConsoleClient]
) -> None:
    merchant = make_merchant()
    sold = _sale(merchant, "111", "10.42")
    assert _sale(merchant, "555", "3.00")["status"] == "filtered"
    merchant.gateway.cli(
        "chargeback", "create", "--order", sold["paynet-order-id"], "--amount", "10.42", "--reason", "10.4"
    )
    page = console_as("viewer").get("/").text
    row = re.search(rf'<tr data-merchant="{merchant.login}" class="flagged">(.*?)</tr>', page, re.S)
    assert row is not None and "above 1%" in row[1]
    found = dict(re.findall(r'<td class="num (\w+)">(.*?)</td>', row[1]))
    assert found == {
        "sales": "1",
        "chargebacks": "1",
        "chargeback_rate": "100.0%",
        "filtered": "1",
        "filter_rate": "50.0%",
    }


def test_the_overview_is_complete_without_javascript(
    traded: Merchant, console_as: Callable[[str], ConsoleClient]
) -> None:
    html = console_as("viewer").get("/").text
    daily = html.split('<table id="daily-USD">', 1)[1].split("</table>", 1)[0]
    assert len(re.findall(r'<th scope="row">\d{4}-\d\d-\d\d</th>', daily)) == 30
    assert "<caption>USD: approved payments and volume per day, last 30 days</caption>" in html
    # Nothing inline the Content-Security-Policy would refuse: scripts are files, or data never run.
    for tag in re.findall(r"<script[^>]*>", html):
        assert 'src="/static/' in tag or 'type="application/json"' in tag, tag
    assert " style=" not in html
    assert '"includeIndicatorStyles":false' in html
    assert 'hx-get="/overview/figures"' in html and 'hx-trigger="every 60s"' in html


def test_the_figures_fragment_holds_just_the_tables(
    traded: Merchant, console_as: Callable[[str], ConsoleClient]
) -> None:
    answer = console_as("viewer").get("/overview/figures")
    assert answer.status_code == 200
    assert "<html" not in answer.text and "<nav" not in answer.text
    assert cells(answer.text, "month", traded.login)["approved"] == "1"
    assert 'id="overview-series"' in answer.text


def test_the_figures_fragment_without_a_session_sends_htmx_to_sign_in(shared_gateway: Gateway) -> None:
    answer = ConsoleClient(shared_gateway).get("/overview/figures")
    assert answer.status_code == 401
    assert answer.headers["hx-redirect"] == "/sign-in?next=/"


def test_chromium_draws_the_daily_charts_and_htmx_reloads_the_figures(
    traded: Merchant,
    shared_gateway: Gateway,
    operator_of: Callable[..., Login],
    page: Page,
    screenshots: Screenshots,
) -> None:
    refused: list[str] = []
    page.on("console", lambda message: refused.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: refused.append(str(error)))
    sign_in_page(page, shared_gateway, operator_of("viewer"))
    page.locator("#chart-USD canvas").first.wait_for()
    assert page.locator("#charts").is_visible()
    assert page.evaluate("htmx.config.includeIndicatorStyles") is False
    screenshots.take(page, "console-overview.png")

    # What the minute's trigger does, at once: fetch the fragment, swap it in, and the charts are redrawn.
    page.evaluate("document.getElementById('chart-list').replaceChildren()")
    with page.expect_response(f"{shared_gateway.console}/overview/figures"):
        page.evaluate("htmx.ajax('GET', '/overview/figures', '#figures')")
    page.locator("#chart-USD canvas").first.wait_for()
    login = traded.login
    row = page.locator(f'#month tr[data-merchant="{login}"] td.approved')
    assert row.inner_text() == "1"
    assert not [text for text in refused if "favicon" not in text and "404" not in text], refused
