"""Merchants, endpoints and RSA keys in the console: admins create and change them, the API obeys at
once, a viewer changes nothing, and a control key is shown once."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from playwright.sync_api import Page, expect

from tests.support.browser import Screenshots
from tests.support.console import ConsoleClient, Login, sign_in_page
from tests.support.gateway import Gateway, Merchant, unreachable_connection
from tests.support.oauth import with_exponent
from tests.support.operations import approved_order

_CONTROL_KEY = re.compile(r'id="control-key">([^<]+)<')


def _login() -> str:
    return f"shop-{uuid.uuid4().hex[:10]}"


def _endpoints_of(gateway: Gateway, login: str) -> list[dict[str, Any]]:
    return [e for e in gateway.cli("endpoint", "list") if e["merchant"] == login]


def _rsa_key(bits: int) -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=bits)


def _public_pem(key: rsa.RSAPrivateKey) -> str:
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return public.decode()


def _fingerprint(key: rsa.RSAPrivateKey) -> str:
    der = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def _endpoint_fields(**changes: str) -> dict[str, str]:
    return {"descriptor": "", "min_amount": "", "max_amount": "", "mode": "sandbox", "replay_window": "0",
            "enabled": "1", **changes}  # fmt: skip


def test_an_admin_creates_a_merchant_sees_its_control_key_once_and_a_sale_signed_with_it_is_approved(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient]
) -> None:
    admin, login = console_as("admin"), _login()
    created = admin.post("/merchants", {"login": login}, from_page="/merchants")
    assert created.status_code == 200, created.text
    found = _CONTROL_KEY.search(created.text)
    assert found, "the control key is shown on the page the creation answers with"
    key = found[1]
    again = admin.get(f"/merchants/{login}")
    assert again.status_code == 200 and login in again.text and key not in again.text
    assert key not in admin.get("/audit", action="merchant.create").text
    assert login in admin.get("/merchants").text

    fields = {"currency": "EUR", "mode": "sandbox", "descriptor": "Shop EUR", "max_amount": "500.00"}
    assert admin.post(f"/merchants/{login}/endpoints", fields).status_code == 303
    [endpoint] = _endpoints_of(shared_gateway, login)
    assert (endpoint["currency"], endpoint["mode"], endpoint["max_amount"]) == ("EUR", "sandbox", 50000)
    assert "Shop EUR" in admin.get(f"/merchants/{login}").text

    approved_order(Merchant(shared_gateway, login, key, endpoint["id"], "EUR"), "console-made-1", amount="20.00")


def test_a_taken_login_and_a_bad_one_are_refused_with_a_message(
    console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin = console_as("admin")
    taken = admin.post("/merchants", {"login": merchant.login})
    assert taken.status_code == 409 and f"Login {merchant.login} is taken" in taken.text
    bad = admin.post("/merchants", {"login": "has spaces"})
    assert bad.status_code == 400 and "Login must be" in bad.text


def test_a_lowered_maximum_makes_the_api_refuse_a_sale_above_it(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin = console_as("admin")
    changed = admin.post(f"/endpoints/{merchant.endpoint_id}", _endpoint_fields(max_amount="5.00", descriptor="Cap"))
    assert changed.status_code == 303
    [endpoint] = _endpoints_of(shared_gateway, merchant.login)
    assert (endpoint["max_amount"], endpoint["descriptor"]) == (500, "Cap")
    refused = merchant.sale("above-the-maximum", amount="10.42")
    assert "exceeds the endpoint's maximum" in refused.text
    approved_order(merchant, "below-the-maximum", amount="4.99")
    entries = admin.get("/audit", action="endpoint.update").text
    assert f"endpoint {merchant.endpoint_id}" in entries


def test_a_disabled_endpoint_takes_no_sale_and_takes_them_again_once_enabled(
    console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin = console_as("admin")
    assert admin.post(f"/endpoints/{merchant.endpoint_id}", _endpoint_fields(enabled="")).status_code == 303
    assert "disabled" in admin.get(f"/merchants/{merchant.login}").text
    assert "paynet-order-id" not in merchant.sale("while-disabled").text
    assert admin.post(f"/endpoints/{merchant.endpoint_id}", _endpoint_fields()).status_code == 303
    approved_order(merchant, "enabled-again", amount="1.00")


def test_bad_endpoint_settings_are_refused_naming_the_field(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin = console_as("admin")
    cases = [
        ({"max_amount": "ten"}, "Maximum amount must be a decimal number"),
        ({"min_amount": "1.001"}, "Minimum amount allows at most 2 fraction digits"),
        ({"min_amount": "9.00", "max_amount": "1.00"}, "Minimum amount must not be above the maximum"),
        ({"replay_window": "-1"}, "Replay window must be a whole number"),
        ({"mode": "production"}, "Mode must be one of"),
    ]
    for changes, message in cases:
        answer = admin.post(f"/endpoints/{merchant.endpoint_id}", _endpoint_fields(**changes))
        assert answer.status_code == 400 and message in answer.text, changes
    created = admin.post(f"/merchants/{merchant.login}/endpoints", {"currency": "XYZ", "mode": "sandbox"})
    assert created.status_code == 400 and "Currency must be an ISO 4217 currency code" in created.text
    [endpoint] = _endpoints_of(shared_gateway, merchant.login)
    assert endpoint["max_amount"] is None and endpoint["min_amount"] is None


def test_an_admin_adds_a_2048_bit_key_sees_its_fingerprint_and_revokes_it(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin, key = console_as("admin"), _rsa_key(2048)
    added = admin.post(f"/merchants/{merchant.login}/keys", {"mode": "sandbox", "pem": _public_pem(key)})
    assert added.status_code == 303
    assert f"SHA256:{_fingerprint(key)}" in admin.get(f"/merchants/{merchant.login}").text
    [stored] = shared_gateway.cli("key", "list", "--merchant", merchant.login)
    assert stored["fingerprint"] == _fingerprint(key) and stored["revoked_at"] is None

    again = admin.post(f"/merchants/{merchant.login}/keys", {"mode": "sandbox", "pem": _public_pem(key)})
    assert again.status_code == 409 and "has this key already" in again.text

    assert admin.post(f"/keys/{stored['id']}/revoke", {}).status_code == 303
    [revoked] = shared_gateway.cli("key", "list", "--merchant", merchant.login)
    assert revoked["revoked_at"] is not None
    assert "revoked" in admin.get(f"/merchants/{merchant.login}").text


def test_a_short_key_a_private_key_and_text_that_is_no_key_are_refused_with_a_message(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin = console_as("admin")
    short = admin.post(f"/merchants/{merchant.login}/keys", {"mode": "sandbox", "pem": _public_pem(_rsa_key(1024))})
    assert short.status_code == 400 and "the key has 1024 bits" in short.text
    private_pem = (
        _rsa_key(2048)
        .private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        .decode()
    )
    private = admin.post(f"/merchants/{merchant.login}/keys", {"mode": "sandbox", "pem": private_pem})
    assert private.status_code == 400 and "this is a PRIVATE key" in private.text
    assert private_pem.splitlines()[1] not in private.text
    garbage = admin.post(f"/merchants/{merchant.login}/keys", {"mode": "live", "pem": "hello"})
    assert garbage.status_code == 400 and "expected one PEM block" in garbage.text
    assert shared_gateway.cli("key", "list", "--merchant", merchant.login) == []


def test_a_key_of_another_merchant_and_a_key_with_exponent_3_are_refused_with_a_message(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], make_merchant: Callable[..., Merchant]
) -> None:
    admin, merchant, other, key = console_as("admin"), make_merchant(), make_merchant(), _public_pem(_rsa_key(2048))
    assert admin.post(f"/merchants/{other.login}/keys", {"mode": "sandbox", "pem": key}).status_code == 303
    taken = admin.post(f"/merchants/{merchant.login}/keys", {"mode": "sandbox", "pem": key})
    assert taken.status_code == 409
    assert "Public key: this public key is registered for another merchant" in taken.text
    low = admin.post(f"/merchants/{merchant.login}/keys", {"mode": "sandbox", "pem": with_exponent(key, 3)})
    assert low.status_code == 400 and "the public exponent is 3; RSA keys must have one from 65537" in low.text
    assert shared_gateway.cli("key", "list", "--merchant", merchant.login) == []


def test_a_viewer_is_refused_every_change_and_nothing_changes(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant, tmp_path: Path
) -> None:
    pem = tmp_path / "key.pem"
    pem.write_text(_public_pem(_rsa_key(2048)))
    [key] = [shared_gateway.cli("key", "add", "--merchant", merchant.login, "--mode", "sandbox", "--pem", str(pem))]
    endpoints_before = _endpoints_of(shared_gateway, merchant.login)
    viewer, login = console_as("viewer"), _login()
    posts = [
        ("/merchants", {"login": login}),
        (f"/merchants/{merchant.login}/endpoints", {"currency": "USD", "mode": "sandbox"}),
        (f"/endpoints/{merchant.endpoint_id}", _endpoint_fields(max_amount="1.00")),
        (f"/merchants/{merchant.login}/keys", {"mode": "sandbox", "pem": _public_pem(_rsa_key(2048))}),
        (f"/keys/{key['id']}/revoke", {}),
    ]
    for path, fields in posts:
        assert viewer.post(path, fields).status_code == 403, path
    assert login not in {m["login"] for m in shared_gateway.cli("merchant", "list")}
    assert _endpoints_of(shared_gateway, merchant.login) == endpoints_before
    [still] = shared_gateway.cli("key", "list", "--merchant", merchant.login)
    assert still["revoked_at"] is None
    page = viewer.get(f"/merchants/{merchant.login}")
    assert page.status_code == 200 and "Create an endpoint" not in page.text and "Revoke" not in page.text


def test_in_a_browser_an_admin_creates_a_merchant_and_credits_its_sandbox_balance(
    shared_gateway: Gateway, operator_of: Callable[..., Login], page: Page, screenshots: Screenshots
) -> None:
    sign_in_page(page, shared_gateway, operator_of("admin"))
    page.get_by_role("link", name="Merchants").click()
    login = _login()
    page.get_by_label("Login", exact=True).fill(login)
    page.get_by_role("button", name="Create merchant").click()
    expect(page.get_by_role("heading", name=f"Control key of {login}")).to_be_visible()
    expect(page.locator("#control-key")).to_have_text(re.compile(r"^[0-9a-f]{32}$"))
    screenshots.take(page, "console-merchant-created.png")

    page.get_by_role("link", name="balances and ledger").click()
    page.get_by_label("Amount").fill("12.34")
    page.get_by_label("Reason").fill("browser test funds")
    page.get_by_role("button", name="Credit", exact=True).click()
    expect(page.locator("#balance-USD-sandbox")).to_contain_text("12.34")
    screenshots.take(page, "console-balance.png")
    assert shared_gateway.cli("balance", "show", "--merchant", login)[0]["available"] == "12.34"


def test_a_merchant_holding_sandbox_money_goes_live_and_keeps_that_money_in_the_sandbox(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    shared_gateway.cli("balance", "credit", "--merchant", merchant.login, "--currency", "USD", "--amount", "50.00",
                       "--reason", "sandbox money")  # fmt: skip
    admin = console_as("admin")
    refused = admin.post(f"/endpoints/{merchant.endpoint_id}", _endpoint_fields(mode="live"))
    assert refused.status_code == 400  # served by the sandbox alone, it could take no live payment
    assert f"Endpoint {merchant.endpoint_id} cannot go live: connection sandbox is a sandbox" in refused.text
    assert _endpoints_of(shared_gateway, merchant.login)[0]["mode"] == "sandbox"
    connection = unreachable_connection(shared_gateway)
    shared_gateway.cli("endpoint", "connections", "--id", str(merchant.endpoint_id), connection)
    assert admin.post(f"/endpoints/{merchant.endpoint_id}", _endpoint_fields(mode="live")).status_code == 303
    assert _endpoints_of(shared_gateway, merchant.login)[0]["mode"] == "live"
    shared_gateway.cli("endpoint", "create", "--merchant", merchant.login, "--currency", "USD", "--mode", "live",
                       "--connection", unreachable_connection(shared_gateway))  # fmt: skip
    shown = shared_gateway.cli("balance", "show", "--merchant", merchant.login)
    assert shown == [{"currency": "USD", "mode": "sandbox", "available": "50.00", "reserved": "0.00"}]
