"""``kassa rule``, run as operators run it against a gateway's database: rules are created for a merchant or
an endpoint, listed, shown with their entries and the orders they filtered, and disabled; every change is
in the audit log; input it cannot take is refused naming the option; a card is blocked by an order it paid."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

from tests.support.databases import run_sql
from tests.support.gateway import Merchant, cli_run


def _refusal(merchant: Merchant, *args: str) -> str:
    done = cli_run(merchant.gateway, "rule", "create", *args)
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr


def test_a_rule_is_created_listed_shown_and_disabled_and_each_change_audited(merchant: Merchant) -> None:
    gateway = merchant.gateway
    created = gateway.cli(
        "rule", "create", "--kind", "sum", "--merchant", merchant.login, "--per", "email",
        "--limit", "50000", "--window", "24h", "--currency", "usd", "--note", "card testing wave",
    )  # fmt: skip
    rule_id = created["id"]
    assert created["limit"] == {"per": "email", "limit": 50000, "window": "1d", "currency": "USD"}
    assert (created["kind"], created["mode"], created["enabled"], created["error_code"]) == (
        "sum",
        "enforce",
        True,
        "4102",
    )
    assert created["filtered"] == {"last_day": 0, "last_30_days": 0}
    assert rule_id in [r["id"] for r in gateway.cli("rule", "list")]
    human = cli_run(gateway, "rule", "show", str(rule_id)).stdout
    assert "at most 50000 USD minor units per email in 1d" in human and "note: card testing wave" in human
    disabled = gateway.cli("rule", "disable", str(rule_id))
    assert disabled["enabled"] is False and disabled["disabled_at"] is not None
    assert rule_id not in [r["id"] for r in gateway.cli("rule", "list")]
    assert rule_id in [r["id"] for r in gateway.cli("rule", "list", "--all")]
    again = cli_run(gateway, "rule", "disable", str(rule_id))
    assert again.returncode != 0 and f"rule {rule_id} is disabled already" in again.stderr
    enabled = gateway.cli("rule", "enable", str(rule_id))
    assert enabled["enabled"] is True and rule_id in [r["id"] for r in gateway.cli("rule", "list")]
    again = cli_run(gateway, "rule", "enable", str(rule_id))
    assert again.returncode != 0 and f"rule {rule_id} is enabled already" in again.stderr
    audited = run_sql(
        gateway.database_url, f"SELECT actor, action FROM audit_log WHERE target = 'rule {rule_id}' ORDER BY id"
    )
    actions = ("rule.create", "rule.disable", "rule.enable")
    assert [tuple(row) for row in audited] == [(f"cli:{getpass.getuser()}", a) for a in actions]


def test_a_card_is_blocked_by_an_order_it_paid_and_the_order_shows_its_rule(merchant: Merchant) -> None:
    gateway = merchant.gateway
    first = merchant.sale("cli-r-1", credit_card_number="4444333322221111").json()["paynet-order-id"]
    assert merchant.wait_final(first)["status"] == "approved"
    endpoint = str(merchant.endpoint_id)
    created = gateway.cli("rule", "create", "--kind", "card", "--endpoint", endpoint, "--card-of-order", first)
    assert created["entry_count"] == 1 and len(created["entries"][0]) == 64
    again = merchant.sale("cli-r-2", credit_card_number="4444333322221111").json()["paynet-order-id"]
    assert merchant.wait_final(again)["status"] == "filtered"
    assert gateway.cli("order", "show", again)["filtered_by_rule"] == created["id"]
    assert f"filtered by risk rule {created['id']}" in cli_run(gateway, "order", "show", again).stdout
    assert gateway.cli("rule", "show", str(created["id"]))["filtered"] == {"last_day": 1, "last_30_days": 1}
    [audited] = run_sql(gateway.database_url, f"SELECT after FROM audit_log WHERE target = 'rule {created['id']}'")
    assert json.loads(audited[0])["entries"] == created["entries"]  # who blocked what, kept
    listing = json.dumps(gateway.cli("rule", "list"))
    assert "4444" not in listing and created["entries"][0] not in listing  # a list is counted, not shown


def test_a_dry_run_rule_is_shown_with_what_it_would_have_filtered(merchant: Merchant) -> None:
    created = merchant.gateway.cli(
        "rule", "create", "--kind", "ip", "--endpoint", str(merchant.endpoint_id), "--value", "203.0.113.0/24",
        "--dry-run",
    )  # fmt: skip
    assert created["mode"] == "dry-run"
    sale = merchant.sale("cli-dry-1").json()["paynet-order-id"]
    assert merchant.wait_final(sale)["status"] == "approved"
    assert merchant.gateway.cli("rule", "show", str(created["id"]))["filtered"]["last_day"] == 1


def test_what_a_rule_cannot_be_is_refused_naming_the_option(merchant: Merchant) -> None:
    scope = ("--endpoint", str(merchant.endpoint_id))
    assert "--merchant LOGIN or --endpoint ID" in _refusal(merchant, "--kind", "bin", "--value", "411111")
    assert "--endpoint" in _refusal(merchant, "--kind", "bin", "--value", "411111", "--endpoint", "999999")
    assert "--merchant" in _refusal(merchant, "--kind", "bin", "--value", "411111", "--merchant", "nobody")
    assert "--value" in _refusal(merchant, "--kind", "bin", "--value", "41111", *scope)
    assert "--value" in _refusal(merchant, "--kind", "email", *scope)
    assert "--window" in _refusal(merchant, "--kind", "count", "--per", "card", "--limit", "5", *scope)
    assert "--currency" in _refusal(
        merchant, "--kind", "sum", "--per", "card", "--limit", "5", "--window", "1h", *scope
    )
    assert "--card-of-order" in _refusal(merchant, "--kind", "card", "--card-of-order", "999999999", *scope)
    refused = _refusal(merchant, "--kind", "card", "--value", "4111111111111111", *scope)
    assert "fingerprint" in refused and "4111111111111111" not in refused


def test_a_block_list_is_read_from_a_file_of_one_entry_a_line(merchant: Merchant, tmp_path: Path) -> None:
    listed = tmp_path / "bins.txt"
    listed.write_text("# BINs of the wave of 3 March\n400000-400099\n\n535522  # one more\n")
    created = merchant.gateway.cli(
        "rule", "create", "--kind", "bin", "--endpoint", str(merchant.endpoint_id), "--values-file", str(listed)
    )
    assert created["entries"] == ["400000-400099", "535522"]


def test_entries_are_added_to_and_removed_from_a_block_list_each_change_audited(merchant: Merchant) -> None:
    gateway, endpoint = merchant.gateway, str(merchant.endpoint_id)
    created = gateway.cli("rule", "create", "--kind", "email", "--endpoint", endpoint, "--value", "a@example.com")
    rule_id = str(created["id"])
    added = gateway.cli("rule", "add", rule_id, "--value", "Cardholder@Example.com", "--value", "a@example.com")
    assert added["changed"] == ["+cardholder@example.com"] and added["entry_count"] == 2
    filtered = merchant.sale("cli-add-1").json()["paynet-order-id"]  # e-mail cardholder@example.com
    assert merchant.wait_final(filtered)["status"] == "filtered"
    removed = gateway.cli("rule", "remove", rule_id, "--value", "cardholder@example.com")
    assert removed["changed"] == ["-cardholder@example.com"] and removed["entries"] == ["a@example.com"]
    passed = merchant.sale("cli-add-2").json()["paynet-order-id"]
    assert merchant.wait_final(passed)["status"] == "approved"
    refused = cli_run(gateway, "rule", "remove", rule_id, "--value", "nobody@example.com")
    assert refused.returncode != 0 and "is not on rule" in refused.stderr
    limit = gateway.cli("rule", "create", "--kind", "count", "--endpoint", endpoint, "--per", "ip", "--limit", "9",
                        "--window", "1h")  # fmt: skip
    refused = cli_run(gateway, "rule", "add", str(limit["id"]), "--value", "1.2.3.4")
    assert refused.returncode != 0 and "--value is for block lists, not for a count limit" in refused.stderr
    audited = run_sql(
        gateway.database_url, f"SELECT action, after FROM audit_log WHERE target = 'rule {rule_id}' ORDER BY id"
    )
    assert [(a, json.loads(after).get("entries")) for a, after in audited][1:] == [
        ("rule.entries", ["+cardholder@example.com"]),
        ("rule.entries", ["-cardholder@example.com"]),
    ]


def test_a_three_ds_rule_is_created_with_its_amount_and_currency_and_listed_with_them(merchant: Merchant) -> None:
    gateway, scope = merchant.gateway, ("--merchant", merchant.login)
    created = gateway.cli(
        "rule", "create", "--kind", "three-ds-above", *scope, "--amount", "50000", "--currency", "eur", "--dry-run"
    )
    assert (created["kind"], created["mode"], created["error_code"]) == ("three-ds-above", "dry-run", "4201")
    assert created["three_ds_above"] == {"amount": 50000, "currency": "EUR"}
    assert (created["limit"], created["entry_count"]) == (None, 0)
    [listed] = [r for r in gateway.cli("rule", "list") if r["id"] == created["id"]]
    assert listed["three_ds_above"] == {"amount": 50000, "currency": "EUR"}
    human = cli_run(gateway, "rule", "show", str(created["id"])).stdout
    assert "three-ds-above\tdry-run" in human and "3-D Secure required above 50000 EUR minor units" in human
    assert "--currency is required" in _refusal(merchant, "--kind", "three-ds-above", *scope, "--amount", "5")
    assert "--amount" in _refusal(merchant, "--kind", "three-ds-above", *scope, "--currency", "EUR")
    assert "--amount is for a three-ds-above rule" in _refusal(
        merchant, "--kind", "bin", *scope, "--value", "411111", "--amount", "5"
    )
    assert "--per, --limit and --window" in _refusal(
        merchant, "--kind", "three-ds-above", *scope, "--amount", "5", "--currency", "EUR", "--window", "1h"
    )
