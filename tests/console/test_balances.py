"""Balances and ledgers in the console, sandbox and live apart, and admins' sandbox credits and debits
(as ``kassa balance credit|debit``): never on a live balance, refused beyond the available balance or
without a reason."""

from __future__ import annotations

from collections.abc import Callable

from tests.support.console import ConsoleClient
from tests.support.gateway import Gateway, Merchant


def _available(gateway: Gateway, login: str) -> dict[str, str]:
    shown = gateway.cli("balance", "show", "--merchant", login)
    return {f"{b['currency']} {b['mode']}": b["available"] for b in shown}


def test_a_credit_shows_in_the_balance_the_ledger_and_kassa_balance_show(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin = console_as("admin")
    fields = {"currency": "USD", "amount": "25.00", "reason": "sandbox funds for tests"}
    credited = admin.post(f"/balances/{merchant.login}/credit", fields)
    assert credited.status_code == 303 and credited.headers["location"] == f"/balances/{merchant.login}"
    assert _available(shared_gateway, merchant.login) == {"USD sandbox": "25.00"}
    page = admin.get(f"/balances/{merchant.login}").text
    assert "25.00" in page and "sandbox funds for tests" in page
    assert merchant.login in admin.get("/balances").text

    assert admin.post(f"/balances/{merchant.login}/debit", {**fields, "amount": "5.50"}).status_code == 303
    assert _available(shared_gateway, merchant.login) == {"USD sandbox": "19.50"}
    entries = admin.get("/audit", action="balance.debit").text
    assert f"balance {merchant.login} USD sandbox" in entries and "19.50" in entries


def test_a_debit_beyond_the_available_balance_is_refused(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin = console_as("admin")
    fields = {"currency": "USD", "amount": "10.00", "reason": "funds"}
    assert admin.post(f"/balances/{merchant.login}/credit", fields).status_code == 303
    refused = admin.post(f"/balances/{merchant.login}/debit", {**fields, "amount": "10.01"})
    assert refused.status_code == 409 and "has less than 10.01 USD available" in refused.text
    assert _available(shared_gateway, merchant.login) == {"USD sandbox": "10.00"}


def test_a_credit_without_a_reason_or_with_a_bad_amount_is_refused_naming_the_field(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin = console_as("admin")
    cases = [
        ({"currency": "USD", "amount": "1.00", "reason": ""}, "Reason is required"),
        ({"currency": "USD", "amount": "1.001", "reason": "x"}, "Amount allows at most 2 fraction digits"),
        ({"currency": "USD", "amount": "0", "reason": "x"}, "Amount must be greater than zero"),
        ({"currency": "DOLLARS", "amount": "1", "reason": "x"}, "Currency must be an ISO 4217 currency code"),
    ]
    for fields, message in cases:
        answer = admin.post(f"/balances/{merchant.login}/credit", fields)
        assert answer.status_code == 400 and message in answer.text, fields
    assert _available(shared_gateway, merchant.login) == {}


def test_a_credit_to_a_merchant_with_a_live_endpoint_reaches_its_sandbox_balance_alone(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], make_merchant: Callable[..., Merchant]
) -> None:
    live = make_merchant(live=True)
    admin = console_as("admin")
    fields = {"currency": "USD", "amount": "100.00", "reason": "test money"}
    assert admin.post(f"/balances/{live.login}/credit", fields).status_code == 303
    assert _available(shared_gateway, live.login) == {"USD sandbox": "100.00"}
    page = admin.get(f"/balances/{live.login}").text
    assert 'id="balance-USD-sandbox"' in page and 'id="balance-USD-live"' not in page
    assert f"balance {live.login} USD sandbox" in admin.get("/audit", action="balance.credit").text


def test_a_viewer_reads_balances_but_is_refused_credit_and_debit(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    viewer = console_as("viewer")
    fields = {"currency": "USD", "amount": "1.00", "reason": "x"}
    for kind in ("credit", "debit"):
        assert viewer.post(f"/balances/{merchant.login}/{kind}", fields).status_code == 403
    page = viewer.get(f"/balances/{merchant.login}")
    assert page.status_code == 200 and "Credit" not in page.text
    assert _available(shared_gateway, merchant.login) == {}
