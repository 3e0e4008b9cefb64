"""Disputes in the console: chargebacks recorded with ``kassa chargeback`` are listed open, oldest first,
with their age and what their reason code means; an admin closes one as won (its amount credited back,
once, audited) or lost; a viewer reads the page but is offered no form, and posting one is refused."""

from __future__ import annotations

import datetime
import re
import uuid
from collections.abc import Callable

import pytest

from tests.ops.test_chargeback_cli import available, settled_sale
from tests.support.console import ConsoleClient
from tests.support.gateway import Gateway, Merchant, new_merchant


@pytest.fixture
def shop(shared_gateway: Gateway) -> Merchant:
    return new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}")


def charge_back(shop: Merchant, amount: str, reason: str, days_ago: int) -> str:
    """A chargeback of a settled sale of ``shop`` reported ``days_ago``; its dispute's id."""
    day = (datetime.datetime.now(datetime.UTC).date() - datetime.timedelta(days=days_ago)).isoformat()
    orderid = settled_sale(shop)
    created = shop.gateway.cli(
        "chargeback", "create", "--order", orderid, "--amount", amount, "--reason", reason, "--date", day
    )
    return str(created["dispute"])


def row_of(html: str, dispute_id: str) -> str:
    found = re.search(rf'<tr data-dispute="{dispute_id}">.*?</tr>', html, re.S)
    assert found, html
    return found[0]


def test_open_disputes_are_listed_oldest_first_with_their_age_and_reasons_meaning(
    shop: Merchant, console_as: Callable[[str], ConsoleClient]
) -> None:
    newer = charge_back(shop, "1.00", "4853", days_ago=2)
    older = charge_back(shop, "2.00", "10.4", days_ago=30)
    page = console_as("viewer").get("/disputes", merchant=shop.login)
    assert page.status_code == 200
    assert page.text.index(f'data-dispute="{older}"') < page.text.index(f'data-dispute="{newer}"')
    shown = row_of(page.text, older)
    for expected in ("30 d", "2.00 USD", "<code>10.4</code> Other fraud, card absent", "(visa)", shop.login):
        assert expected in shown, shown
    assert "/close" not in page.text  # a viewer is offered no form


def test_an_admin_closes_a_dispute_won_which_credits_back_once_and_is_audited(
    shop: Merchant, console_as: Callable[[str], ConsoleClient]
) -> None:
    dispute = charge_back(shop, "4.00", "13.1", days_ago=1)
    assert available(shop) == "6.42"
    admin = console_as("admin")
    assert f'action="/disputes/{dispute}/close"' in admin.get("/disputes", merchant=shop.login).text
    answer = admin.post(f"/disputes/{dispute}/close", {"outcome": "won"}, from_page="/disputes")
    assert answer.status_code == 303 and answer.headers["location"] == "/disputes"
    assert available(shop) == "10.42"
    again = admin.post(f"/disputes/{dispute}/close", {"outcome": "won"}, from_page="/disputes")
    assert again.status_code == 409 and "already closed (won)" in again.text
    assert available(shop) == "10.42"
    assert f'data-dispute="{dispute}"' not in admin.get("/disputes", merchant=shop.login).text
    assert 'class="badge won"' in admin.get("/disputes", merchant=shop.login, state="won").text
    audit = admin.get("/audit", action="chargeback.close").text
    assert f"dispute {dispute}" in audit


def test_an_admin_closes_a_dispute_lost_and_nothing_moves(
    shop: Merchant, console_as: Callable[[str], ConsoleClient]
) -> None:
    dispute = charge_back(shop, "4.00", "13.1", days_ago=1)
    answer = console_as("admin").post(f"/disputes/{dispute}/close", {"outcome": "lost"}, from_page="/disputes")
    assert answer.status_code == 303
    assert available(shop) == "6.42"
    lost = console_as("admin").get("/disputes", merchant=shop.login, state="lost").text
    assert 'class="badge lost"' in row_of(lost, dispute)


def test_a_viewer_posting_the_close_form_is_refused_and_the_dispute_stays_open(
    shop: Merchant, console_as: Callable[[str], ConsoleClient]
) -> None:
    dispute = charge_back(shop, "4.00", "13.1", days_ago=1)
    refused = console_as("viewer").post(f"/disputes/{dispute}/close", {"outcome": "won"}, from_page="/disputes")
    assert refused.status_code == 403
    assert available(shop) == "6.42"
    assert f'data-dispute="{dispute}"' in console_as("admin").get("/disputes", merchant=shop.login).text
