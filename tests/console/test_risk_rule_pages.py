"""Risk rules in the console: admins create and disable them, as ``kassa rule`` then shows, each change
audited under the operator's email; bad input is refused naming the option; everyone reads the rules, a
rule's counts of the orders it filtered, and on an order's page the rule that filtered it; a viewer
changes nothing."""

from __future__ import annotations

import re
from collections.abc import Callable

from tests.support.console import ConsoleClient
from tests.support.databases import run_sql
from tests.support.gateway import Gateway, Merchant


def _audited(gateway: Gateway, rule_id: int) -> list[str]:
    rows = run_sql(gateway.database_url, f"SELECT action FROM audit_log WHERE target = 'rule {rule_id}' ORDER BY id")
    return [row[0] for row in rows]


def test_an_admin_creates_a_rule_that_filters_and_disables_it(
    console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin, gateway = console_as("admin"), merchant.gateway
    fields = {"kind": "email", "endpoint": str(merchant.endpoint_id), "values": "Fraud@Example.com\n", "note": "wave"}
    created = admin.post("/rules", fields, from_page="/rules")
    assert created.status_code == 303, created.text
    rule_id = int(created.headers["location"].rsplit("/", 1)[1])
    assert gateway.cli("rule", "show", str(rule_id))["entries"] == ["fraud@example.com"]
    order = merchant.sale("con-r-1", email="fraud@example.com").json()["paynet-order-id"]
    assert merchant.wait_final(order)["status"] == "filtered"
    page = admin.get(f"/rules/{rule_id}").text
    assert "1 in the last day, 1 in the last 30 days" in page and "fraud@example.com" in page
    assert f'href="/rules/{rule_id}">risk rule {rule_id}' in admin.get(f"/orders/{order}").text
    assert admin.post(f"/rules/{rule_id}/disable", {}).status_code == 303
    assert gateway.cli("rule", "show", str(rule_id))["enabled"] is False
    assert admin.post(f"/rules/{rule_id}/disable", {}).status_code == 409
    assert "Enable this rule again" in admin.get(f"/rules/{rule_id}").text
    assert admin.post(f"/rules/{rule_id}/enable", {}).status_code == 303
    assert gateway.cli("rule", "show", str(rule_id))["enabled"] is True
    assert _audited(gateway, rule_id) == ["rule.create", "rule.disable", "rule.enable"]


def test_a_limit_is_created_in_dry_run_from_the_console(
    console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin = console_as("admin")
    fields = {
        "kind": "sum", "endpoint": str(merchant.endpoint_id), "per": "ip", "limit": "100000", "window": "7d",
        "currency": "usd", "dry_run": "1",
    }  # fmt: skip
    created = admin.post("/rules", fields, from_page="/rules")
    assert created.status_code == 303, created.text
    shown = merchant.gateway.cli("rule", "show", created.headers["location"].rsplit("/", 1)[1])
    assert (shown["mode"], shown["limit"]) == (
        "dry-run",
        {"per": "ip", "limit": 100000, "window": "7d", "currency": "USD"},
    )


def test_bad_input_is_refused_naming_the_option_and_the_form_kept(
    console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin, endpoint = console_as("admin"), str(merchant.endpoint_id)
    cases = [
        ({"kind": "bin", "values": "411111"}, "--merchant LOGIN or --endpoint ID"),
        ({"kind": "bin", "endpoint": endpoint, "values": "41111"}, "6-digit BIN"),
        ({"kind": "count", "endpoint": endpoint, "per": "card", "limit": "5"}, "--window"),
        ({"kind": "count", "endpoint": endpoint, "per": "card", "limit": "five", "window": "1h"}, "--limit"),
        ({"kind": "card", "endpoint": endpoint, "card_orders": "999999999"}, "--card-of-order"),
    ]
    for fields, named in cases:
        answer = admin.post("/rules", fields, from_page="/rules")
        assert answer.status_code == 400 and named in answer.text, (fields, answer.text[:300])
    assert 'value="999999999"' in answer.text  # the refused form comes back filled in


def test_a_viewer_reads_rules_and_changes_nothing(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    rule = shared_gateway.cli(
        "rule", "create", "--kind", "ip", "--endpoint", str(merchant.endpoint_id), "--value", "198.51.100.1"
    )
    viewer = console_as("viewer")
    for path in ("/rules", f"/rules/{rule['id']}"):
        answer = viewer.get(path)
        assert answer.status_code == 200 and '<form method="post" action="/rules' not in answer.text, path
    assert (
        viewer.post("/rules", {"kind": "bin", "endpoint": str(merchant.endpoint_id), "values": "411111"}).status_code
        == 403
    )
    assert viewer.post(f"/rules/{rule['id']}/disable", {}).status_code == 403
    assert shared_gateway.cli("rule", "show", str(rule["id"]))["enabled"] is True


def test_an_admin_adds_and_removes_a_block_lists_entries_and_each_change_is_audited(
    console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin, gateway = console_as("admin"), merchant.gateway
    rule = gateway.cli(
        "rule", "create", "--kind", "email", "--endpoint", str(merchant.endpoint_id), "--value", "a@x.io"
    )
    path = f"/rules/{rule['id']}/entries"
    assert (
        admin.post(
            path, {"add": "B@x.io\r\nc@x.io\r\n", "remove": "a@x.io"}, from_page=f"/rules/{rule['id']}"
        ).status_code
        == 303
    )
    assert gateway.cli("rule", "show", str(rule["id"]))["entries"] == ["b@x.io", "c@x.io"]
    refused = admin.post(path, {"add": "", "remove": "nobody@x.io"})
    assert refused.status_code == 400 and "is not on rule" in refused.text and ">nobody@x.io</textarea>" in refused.text
    assert console_as("viewer").post(path, {"add": "d@x.io"}).status_code == 403
    assert gateway.cli("rule", "show", str(rule["id"]))["entries"] == ["b@x.io", "c@x.io"]
    assert _audited(gateway, rule["id"]) == ["rule.create", "rule.entries"]


def test_a_rules_page_lists_the_orders_it_filtered_most_recent_first_a_page_at_a_time(
    console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    rule = merchant.gateway.cli(
        "rule", "create", "--kind", "email", "--endpoint", str(merchant.endpoint_id), "--value", "fraud@example.com"
    )
    passed = merchant.sale("con-o-passed").json()["paynet-order-id"]
    filtered = [merchant.sale(f"con-o-{n}", email="fraud@example.com").json()["paynet-order-id"] for n in range(51)]
    assert merchant.wait_final(filtered[-1])["status"] == "filtered"
    viewer = console_as("viewer")
    page = viewer.get(f"/rules/{rule['id']}").text
    listed = re.findall(r'<tr data-order="(\d+)">', page)
    assert listed == filtered[::-1][:50]  # the most recent first, a page of 50
    assert passed not in listed
    assert f'<a href="/orders/{filtered[-1]}">{filtered[-1]}</a>' in page
    assert "51 in the last day, 51 in the last 30 days" in page
    older = re.search(rf'href="/rules/{rule["id"]}\?before=(\d+)">Older orders', page)
    assert older is not None and older[1] == listed[-1]
    rest = viewer.get(f"/rules/{rule['id']}", before=older[1]).text
    assert re.findall(r'<tr data-order="(\d+)">', rest) == [filtered[0]]
    assert "Older orders" not in rest and "con-o-0" in rest


def test_an_admin_creates_a_three_ds_rule_and_its_page_says_what_it_requires(
    console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin = console_as("admin")
    fields = {"kind": "three-ds-above", "endpoint": str(merchant.endpoint_id), "amount": "50000", "currency": "usd"}
    created = admin.post("/rules", fields, from_page="/rules")
    assert created.status_code == 303, created.text
    rule_id = created.headers["location"].rsplit("/", 1)[1]
    shown = merchant.gateway.cli("rule", "show", rule_id)
    assert (shown["kind"], shown["three_ds_above"]) == ("three-ds-above", {"amount": 50000, "currency": "USD"})
    page = admin.get(f"/rules/{rule_id}").text
    assert "above 50000 minor units (500.00 USD)" in page and "<code>4201</code>" in page
    listing = admin.get("/rules").text
    assert "3-D Secure above 500.00 USD" in listing
    assert '<textarea id="r-values" name="values" rows="4" spellcheck="false" autocomplete="off"></textarea>' in listing
    refused = admin.post("/rules", {**fields, "currency": ""}, from_page="/rules")
    assert refused.status_code == 400 and "--currency is required" in refused.text
