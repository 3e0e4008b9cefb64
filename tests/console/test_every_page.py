"""Every page the navigation leads to, walked as an admin: it answers, names each field, masks every card
number, and (in Chromium, at a laptop's and a phone's width) renders without a CSP violation or a script
error. ``make screenshots`` keeps the Chromium pictures in docs/screenshots/, with risk rules that filtered
orders and open disputes to show."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from html.parser import HTMLParser

import pytest
from playwright.sync_api import Browser

from tests.console.test_disputes import charge_back
from tests.support.browser import Screenshots
from tests.support.console import ConsoleClient, Login, sign_in_page
from tests.support.gateway import Gateway, Merchant, new_merchant

_NAV = re.compile(r'<nav aria-label="Sections">(.*?)</nav>', re.S)
_LINK = re.compile(r'href="(/[^"]*)"')
_FULL_PAN = re.compile(r"\b4111111111111111\b")


def _sections(html: str) -> list[str]:
    nav = _NAV.search(html)
    assert nav, "no section navigation"
    return _LINK.findall(nav[1])


class _Fields(HTMLParser):
    """The form fields a person fills in, and which of them no label names."""

    def __init__(self) -> None:
        super().__init__()
        self.labelled: set[str] = set()
        self.fields: list[tuple[str, str]] = []  # (id, name)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "label" and found.get("for"):
            self.labelled.add(found["for"] or "")
        kind = found.get("type") or ""
        if tag in ("input", "select", "textarea") and kind not in ("hidden", "submit") and "aria-label" not in found:
            self.fields.append((found.get("id") or "", found.get("name") or ""))

    def unlabelled(self) -> list[str]:
        return [name or field_id for field_id, name in self.fields if field_id not in self.labelled]


def test_every_section_answers_with_labelled_fields_and_no_full_card_number(
    console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    assert merchant.sale("every-page-1").status_code == 200  # something to show, card 4111...1111
    admin = console_as("admin")
    sections = _sections(admin.get("/").text)
    assert len(sections) >= 9
    for path in sections:
        answer = admin.get(path)
        assert answer.status_code == 200, path
        fields = _Fields()
        fields.feed(answer.text)
        assert fields.unlabelled() == [], path
        assert not _FULL_PAN.search(answer.text), path


@pytest.fixture(scope="module")
def something_to_show(shared_gateway: Gateway) -> int:
    """Risk rules that filtered orders, and open disputes, so that their pages show what they are for; the
    id of the rule that filtered most."""
    shop = new_merchant(shared_gateway, f"shop-{uuid.uuid4().hex[:8]}")
    scope = ("--endpoint", str(shop.endpoint_id))
    listed = shared_gateway.cli(
        "rule", "create", "--kind", "email", *scope, "--value", "fraud@example.com", "--value", "mule@example.net",
        "--note", "addresses of the chargebacks of March",
    )  # fmt: skip
    shared_gateway.cli("rule", "create", "--kind", "count", *scope, "--per", "card", "--limit", "5", "--window", "1h")
    shared_gateway.cli("rule", "create", "--kind", "three-ds-above", *scope, "--amount", "20000", "--currency", "USD")
    shared_gateway.cli(
        "rule", "create", "--kind", "bin", "--merchant", shop.login, "--value", "400000-400099", "--dry-run"
    )
    for n, email in enumerate(["fraud@example.com", "mule@example.net", "fraud@example.com"]):
        shop.sale(f"shown-{n}", email=email)
    unauthenticated = shop.sale("shown-3ds", cvv2="111", amount="250.00").json()["paynet-order-id"]
    assert shop.wait_final(unauthenticated)["status"] == "filtered"
    charge_back(shop, "10.42", "10.4", days_ago=12)
    charge_back(shop, "5.00", "4853", days_ago=3)
    return int(listed["id"])


@pytest.mark.parametrize(("width", "height", "suffix"), [(1280, 800, ""), (390, 844, "-phone")])
def test_every_section_renders_in_chromium_without_a_policy_violation(
    browser: Browser,
    shared_gateway: Gateway,
    operator_of: Callable[..., Login],
    screenshots: Screenshots,
    something_to_show: int,
    width: int,
    height: int,
    suffix: str,
) -> None:
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    sign_in_page(page, shared_gateway, operator_of("admin"))
    sections = _sections(page.content())
    for path in sections:
        page.goto(f"{shared_gateway.console}{path}")
        page.wait_for_load_state("networkidle")
        name = "overview" if path == "/" else path.strip("/").replace("/", "-")
        screenshots.take(page, f"console-{name}{suffix}.png")
    page.goto(f"{shared_gateway.console}/rules/{something_to_show}")  # a rule's page, with its orders
    page.wait_for_load_state("networkidle")
    screenshots.take(page, f"console-rule{suffix}.png")
    context.close()
    assert problems == []
