"""Scheme B (CONTRACT §4, SPEC.md "Scheme B") through HTTP: requests signed by oauthlib's client pass the
gateway's OAuth check for both methods, wherever the ``oauth_*`` parameters stand; everything else is
refused with the contract's status, code and header. The fields sent name no complete destination, so a
request that passes its OAuth check gets the operation's refusal of its fields (400, code 1), and one
refused gets 401. The v4 operations that write (create-card-ref, create-recurring-payment) show that a
nonce is spent once, with the operation's effect or alone, and that its replay is refused whatever the
first answer was."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from kassa import crashpoints
from kassa.storage.database import open_database
from kassa.storage.tables import oauth_nonces
from tests.support.databases import run_sql
from tests.support.gateway import JSON_ACCEPT, TLS, Gateway, Merchant, classic_fields, new_merchant
from tests.support.gateway import new_classic_merchant as classic_merchant
from tests.support.oauth import Where, key_pair, register_key, revoke_key, sign, signed_post
from tests.support.operations import approved_order

RSA_PATH = "/api/v4/payout-check"  # RSA-SHA256: refuses FIELDS' destination once past the OAuth check
HMAC_PATH = "/api/v2/payout"  # HMAC-SHA1, likewise
JSON_TYPE = "application/vnd.pay+json; charset=utf-8"
# What the payout's own validation says of FIELDS (a bank branch, no account): said only past OAuth.
DESTINATION_MISSING = "account_number (or iban) is required for a payout to a bank account"
FIELDS = [
    ("client-order-id", "902B4FF5"),  # the v4 examples' spelling, signed so
    ("amount", "10.42"),
    ("currency", "USD"),
    ("order_desc", "Café für 2 / zwei + eins"),  # spaces, /, + and non-ASCII letters
    ("bank_branch", " Main street "),  # a field Kassa ignores, with white space trimming would drop
]


def _login() -> str:
    return f"m-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def shop(shared_gateway: Gateway) -> Merchant:
    """A sandbox merchant with the first test key registered."""
    merchant = new_merchant(shared_gateway, _login())
    register_key(shared_gateway, merchant.login, key_pair()[1])
    return merchant


def url(m: Merchant, path: str) -> str:
    return f"{m.gateway.base}{path}/{m.endpoint_id}"


def rsa_post(m: Merchant, path: str = RSA_PATH, *, private: str | None = None, **options: Any) -> httpx.Response:
    return signed_post(url(m, path), FIELDS, login=m.login, private_key_pem=private or key_pair()[0], **options)


def hmac_post(m: Merchant, path: str = HMAC_PATH, **options: Any) -> httpx.Response:
    options.setdefault("control_key", m.control_key)
    return signed_post(url(m, path), FIELDS, login=m.login, method="HMAC-SHA1", **options)


def passed(response: httpx.Response, missing: str = DESTINATION_MISSING) -> None:
    """Past the OAuth check: the operation's own answer, in JSON. Its fields are read, and these lack the
    operation's own (a payout's destination, half given: a bank branch, no account), which only the
    operation's validation, run after the signature passed, names: an OAuth refusal names no such field."""
    assert response.headers["content-type"] == JSON_TYPE, response.text
    assert "www-authenticate" not in response.headers  # which every OAuth refusal carries
    body = response.json()
    assert (response.status_code, body["type"], body["error-code"]) == (400, "validation-error", "1"), response.text
    assert body["error-message"] == missing, body


def refused(response: httpx.Response, code: int, message: str = "") -> dict[str, str]:
    """An OAuth refusal: 401, WWW-Authenticate naming the realm, validation-error with ``code``."""
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == 'OAuth realm="kassa"'
    body = dict(response.json())
    assert (body["type"], body["error-code"]) == ("validation-error", str(code)), body
    assert message in body["error-message"]
    return body


# --- what passes --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["header", "body", "both"])
def test_rsa_sha256_signed_by_oauthlib_passes_the_oauth_check(shop: Merchant, where: Where) -> None:
    passed(rsa_post(shop, where=where))


@pytest.mark.parametrize("where", ["header", "body", "both"])
def test_hmac_sha1_signed_by_oauthlib_passes_the_oauth_check(shop: Merchant, where: Where) -> None:
    passed(hmac_post(shop, where=where))


def test_the_other_oauth_rows_pass_the_check_too(shop: Merchant) -> None:
    transfer_card = "credit_card_number is required (or card_recurring_payment_id, or deposit2card=true)"
    passed(rsa_post(shop, "/api/v4/transfer"), transfer_card)
    passed(hmac_post(shop, "/api/v2/pan-eligibility/send"), "credit_card_number or sending-card-ref-id is required")


def test_the_doubled_slash_path_is_verified_as_sent(shop: Merchant) -> None:
    passed(rsa_post(shop, "/api/v4//payout-check"))
    passed(hmac_post(shop, "/api//v2/payout"))


def test_a_group_call_is_verified_with_the_groups_merchant(shop: Merchant) -> None:
    group = shop.gateway.cli("group", "create", "--merchant", shop.login, "--endpoints", str(shop.endpoint_id))
    address = f"{shop.gateway.base}{RSA_PATH}/group/{group['id']}"
    passed(signed_post(address, FIELDS, login=shop.login, private_key_pem=key_pair()[0]))


def test_keys_rotate_two_active_at_once(shop: Merchant) -> None:
    private, public = key_pair(2048, 1)
    register_key(shop.gateway, shop.login, public)
    passed(rsa_post(shop, private=private))
    passed(rsa_post(shop))


def test_a_timestamp_a_little_off_either_way_passes(shop: Merchant) -> None:
    passed(rsa_post(shop, timestamp=int(time.time()) - 290))
    passed(rsa_post(shop, timestamp=int(time.time()) + 290))


def test_the_same_nonce_at_another_timestamp_passes(shop: Merchant) -> None:
    now = int(time.time())
    passed(rsa_post(shop, nonce="123456", timestamp=now))
    passed(rsa_post(shop, nonce="123456", timestamp=now - 1))


def test_v4_answers_json_without_accept_or_with_any_type(shop: Merchant) -> None:
    passed(rsa_post(shop, headers={}))  # httpx sends Accept: */*
    headers, body = sign(url(shop, RSA_PATH), FIELDS, login=shop.login, private_key_pem=key_pair()[0])
    with httpx.Client(timeout=30, verify=TLS) as client:
        request = client.build_request("POST", url(shop, RSA_PATH), content=body, headers=headers)
        del request.headers["accept"]
        passed(client.send(request))


def test_v4_refuses_another_accept_type_with_code_9(shop: Merchant) -> None:
    response = rsa_post(shop, headers={"Accept": "text/html"})
    assert response.status_code == 400, response.text
    assert response.json()["error-code"] == "9"


def test_v2_oauth_rows_still_need_the_json_accept_type(shop: Merchant) -> None:
    response = hmac_post(shop, headers={})
    assert (response.status_code, response.json()["error-code"]) == (400, "9")


# --- what is refused ----------------------------------------------------------------------------------------


def test_an_unsigned_request_is_refused_with_401_and_www_authenticate(shop: Merchant) -> None:
    refused(shop.gateway.post(f"{RSA_PATH}/{shop.endpoint_id}", dict(FIELDS)), 2, "not signed")


def test_a_changed_body_field_is_refused(shop: Merchant) -> None:
    headers, body = sign(url(shop, RSA_PATH), FIELDS, login=shop.login, private_key_pem=key_pair()[0])
    changed = body.replace("amount=10.42", "amount=99.42")
    assert changed != body
    response = httpx.post(url(shop, RSA_PATH), content=changed, headers={**JSON_ACCEPT, **headers}, verify=TLS)
    body_refused = refused(response, 2, "oauth_signature does not match a sandbox key of")
    assert key_pair()[1].splitlines()[1] not in body_refused["error-message"]


def test_a_key_the_merchant_did_not_register_is_refused(shop: Merchant) -> None:
    refused(rsa_post(shop, private=key_pair(2048, 2)[0]), 2, "does not match")


def test_a_key_of_exponent_3_stored_before_keys_were_checked_verifies_nothing(shared_gateway: Gateway) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from kassa.clock import now_ms
    from kassa.domain.merchants import Mode
    from kassa.signing.rsa_keys import PublicKey
    from kassa.storage import merchant_keys, merchants

    weak = rsa.generate_private_key(public_exponent=3, key_size=2048)
    private = weak.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = weak.public_key()
    pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    stored = PublicKey(pem, uuid.uuid4().hex, 2048, public.public_numbers().n)  # as a gateway before the check kept it
    merchant = new_merchant(shared_gateway, _login())
    db = open_database(shared_gateway.database_url, threads=1)
    try:
        db.write_sync(
            lambda conn: merchant_keys.add(
                conn, merchants.merchant_id(conn, merchant.login), Mode.SANDBOX, stored, now_ms()
            )
        )
    finally:
        db.close()
    refused(rsa_post(merchant, private=private.decode()), 2, "does not match")


def test_a_wrong_control_key_is_refused(shop: Merchant) -> None:
    body = refused(
        hmac_post(shop, control_key=shop.control_key + "x"), 2, "does not match (HMAC-SHA1, http://127.0.0.1:"
    )
    assert shop.control_key not in body["error-message"]


def test_a_signature_made_with_a_1024_bit_key_is_refused(shop: Merchant) -> None:
    refused(rsa_post(shop, private=key_pair(1024)[0]), 2, "does not match")


def test_a_live_key_does_not_verify_a_sandbox_endpoint(shared_gateway: Gateway) -> None:
    merchant = new_merchant(shared_gateway, _login())
    register_key(shared_gateway, merchant.login, key_pair(2048, 3)[1], mode="live")
    refused(rsa_post(merchant, private=key_pair(2048, 3)[0]), 2, "sandbox key")


def test_a_revoked_key_verifies_nothing_from_the_next_request_on(shared_gateway: Gateway) -> None:
    merchant = new_merchant(shared_gateway, _login())
    old = register_key(shared_gateway, merchant.login, key_pair(2048, 4)[1])
    register_key(shared_gateway, merchant.login, key_pair(2048, 5)[1])
    passed(rsa_post(merchant, private=key_pair(2048, 4)[0]))  # the process holds it now
    revoke_key(shared_gateway, old)
    refused(rsa_post(merchant, private=key_pair(2048, 4)[0]), 2, "revoked key")
    refused(rsa_post(merchant, private=key_pair(2048, 4)[0]), 2, "does not match")
    passed(rsa_post(merchant, private=key_pair(2048, 5)[0]))


def test_the_wrong_signature_method_is_refused(shop: Merchant) -> None:
    response = signed_post(
        url(shop, RSA_PATH), FIELDS, login=shop.login, method="HMAC-SHA1", control_key=shop.control_key
    )
    refused(response, 2, "oauth_signature_method must be RSA-SHA256 for this operation")


def test_another_merchants_login_as_consumer_key_is_code_3(shop: Merchant, shared_gateway: Gateway) -> None:
    other = new_merchant(shared_gateway, _login())
    response = signed_post(url(shop, HMAC_PATH), FIELDS, login=other.login, method="HMAC-SHA1", control_key="x")
    assert response.status_code == 400, response.text
    assert response.json()["error-code"] == "3"


def test_header_and_body_parameters_that_differ_are_refused(shop: Merchant) -> None:
    headers, body = sign(url(shop, RSA_PATH), FIELDS, login=shop.login, private_key_pem=key_pair()[0], where="both")
    forged = body.replace("oauth_nonce=", "oauth_nonce=x")
    response = httpx.post(url(shop, RSA_PATH), content=forged, headers={**JSON_ACCEPT, **headers}, verify=TLS)
    refused(response, 2, "oauth_nonce differs between the Authorization header and the body")


@pytest.mark.parametrize("off", [-301, 301])
def test_a_timestamp_301_seconds_off_is_refused_with_code_10(shop: Merchant, off: int) -> None:
    now = time.time()
    timestamp = math.floor(now) - 301 if off < 0 else math.ceil(now) + 301
    refused(rsa_post(shop, timestamp=timestamp), 10, "oauth_timestamp is more than 300 s off the gateway's clock")


def test_a_replayed_nonce_is_refused_with_code_10(shop: Merchant) -> None:
    headers, body = sign(
        url(shop, HMAC_PATH), FIELDS, login=shop.login, method="HMAC-SHA1", control_key=shop.control_key
    )
    send = {**JSON_ACCEPT, **headers}
    passed(httpx.post(url(shop, HMAC_PATH), content=body, headers=send, verify=TLS))
    replay = httpx.post(url(shop, HMAC_PATH), content=body, headers=send, verify=TLS)
    refused(replay, 10, "oauth_nonce was used already with this oauth_timestamp")


def test_a_refused_signature_spends_no_nonce(shop: Merchant) -> None:
    now = int(time.time())
    refused(rsa_post(shop, private=key_pair(2048, 2)[0], nonce="n-1", timestamp=now), 2)
    passed(rsa_post(shop, nonce="n-1", timestamp=now))


def test_classic_merchants_get_oauth_refusals_as_401_in_the_classic_format(shared_gateway: Gateway) -> None:
    merchant = classic_merchant(shared_gateway, _login())
    response = hmac_post(merchant, control_key="wrong", headers={})
    assert response.status_code == 401, response.text
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["www-authenticate"] == 'OAuth realm="kassa"'
    assert dict(classic_fields(response.content))["error-code"] == "2"


# --- where the client addressed the gateway -----------------------------------------------------------------


def test_behind_a_trusted_proxy_the_forwarded_host_and_scheme_are_signed(shop: Merchant) -> None:
    public = f"https://pay.example.com/paynet{HMAC_PATH}/{shop.endpoint_id}"
    headers, body = sign(public, FIELDS, login=shop.login, method="HMAC-SHA1", control_key=shop.control_key)
    forwarded = {**JSON_ACCEPT, **headers, "X-Forwarded-Host": "pay.example.com", "X-Forwarded-Proto": "https"}
    passed(httpx.post(url(shop, HMAC_PATH), content=body, headers=forwarded, verify=TLS))


def test_a_default_port_in_the_host_header_is_dropped(shop: Merchant) -> None:
    headers, body = sign(
        f"http://pay.example.com/paynet{HMAC_PATH}/{shop.endpoint_id}",
        FIELDS,
        login=shop.login,
        method="HMAC-SHA1",
        control_key=shop.control_key,
    )
    named = {**JSON_ACCEPT, **headers, "Host": "PAY.example.com:80"}
    passed(httpx.post(url(shop, HMAC_PATH), content=body, headers=named, verify=TLS))


@pytest.mark.backends("sqlite")
def test_forwarded_headers_from_an_untrusted_peer_are_ignored(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory(KASSA_TRUSTED_PROXIES="192.0.2.0/24")
    merchant = new_merchant(gateway, _login())
    public = f"https://pay.example.com/paynet{HMAC_PATH}/{merchant.endpoint_id}"
    headers, body = sign(public, FIELDS, login=merchant.login, method="HMAC-SHA1", control_key=merchant.control_key)
    forwarded = {**JSON_ACCEPT, **headers, "X-Forwarded-Host": "pay.example.com", "X-Forwarded-Proto": "https"}
    refused(httpx.post(url(merchant, HMAC_PATH), content=body, headers=forwarded, verify=TLS), 2, "does not match")
    passed(hmac_post(merchant, headers={**JSON_ACCEPT, "X-Forwarded-Host": "elsewhere.example"}))


# --- many processes -----------------------------------------------------------------------------------------


@pytest.mark.backends("postgresql")
def test_a_replay_to_a_second_process_on_the_same_postgresql_is_refused(
    gateway_factory: Callable[..., Gateway],
) -> None:
    first, second = gateway_factory(), gateway_factory()
    merchant = new_merchant(first, _login())
    key_id = register_key(first, merchant.login, key_pair()[1])
    public = f"http://pay.example.com/paynet{RSA_PATH}/{merchant.endpoint_id}"  # both behind one host name

    def send(gateway: Gateway, signed: tuple[dict[str, str], str]) -> httpx.Response:
        headers = {**JSON_ACCEPT, **signed[0], "X-Forwarded-Host": "pay.example.com"}
        address = f"{gateway.base}{RSA_PATH}/{merchant.endpoint_id}"
        return httpx.post(address, content=signed[1], headers=headers, verify=TLS)

    def signed() -> tuple[dict[str, str], str]:
        return sign(public, FIELDS, login=merchant.login, private_key_pem=key_pair()[0])

    request = signed()
    passed(send(first, request))
    refused(send(second, request), 10, "oauth_nonce was used already")
    passed(send(second, signed()))  # both processes hold the key now
    revoke_key(first, key_id)
    refused(send(first, signed()), 2, "revoked key")
    refused(send(second, signed()), 2, "revoked key")


# --- the nonce on operations that write: spent with their effect, or alone ----------------------------------


def _v4_signed(m: Merchant, operation: str, fields: dict[str, str]) -> tuple[str, dict[str, str], str]:
    """The address, headers and body of a v4 request signed with the merchant's key, to send more than once."""
    address = url(m, f"/api/v4/{operation}")
    headers, body = sign(address, fields, login=m.login, private_key_pem=key_pair()[0])
    return address, {**JSON_ACCEPT, **headers}, body


def _payments_of(m: Merchant) -> list[dict[str, Any]]:
    return list(m.gateway.cli("recurring", "list", "--merchant", m.login))


def test_a_replayed_card_ref_v4_is_refused_with_code_10_and_changes_nothing(shop: Merchant) -> None:
    orderid = approved_order(shop, "nonce-ref")
    address, headers, body = _v4_signed(shop, "create-card-ref", {"client_orderid": "nonce-ref", "orderid": orderid})
    first = httpx.post(address, content=body, headers=headers, verify=TLS)
    assert (first.status_code, first.json()["status"]) == (200, "approved"), first.text
    made = _payments_of(shop)
    refused(httpx.post(address, content=body, headers=headers, verify=TLS), 10, "oauth_nonce was used already")
    assert _payments_of(shop) == made and len(made) == 1


def test_a_replayed_recurring_payment_makes_no_second_payment(shop: Merchant) -> None:
    fields = {"client_orderid": "nonce-sub", "amount": "9.90", "currency": shop.currency, "order_desc": "Box"}
    card = {"credit_card_number": "4111111111111111", "expire_month": "12", "expire_year": "2030"}
    address, headers, body = _v4_signed(shop, "create-recurring-payment", {**fields, **card})
    assert httpx.post(address, content=body, headers=headers, verify=TLS).status_code == 200
    refused(httpx.post(address, content=body, headers=headers, verify=TLS), 10, "oauth_nonce was used already")
    assert [p["client_orderid"] for p in _payments_of(shop)] == ["nonce-sub"]


def test_a_handler_refusal_spends_the_nonce_so_its_replay_is_code_10(shop: Merchant) -> None:
    orderid = shop.sale("nonce-declined", cvv2="999").json()["paynet-order-id"]
    assert shop.wait_final(orderid)["status"] == "declined"
    fields = {"client_orderid": "nonce-declined", "orderid": orderid}
    address, headers, body = _v4_signed(shop, "create-card-ref", fields)
    assert httpx.post(address, content=body, headers=headers, verify=TLS).json()["error-code"] == "6"
    refused(httpx.post(address, content=body, headers=headers, verify=TLS), 10, "oauth_nonce was used already")


def test_a_replay_with_an_idempotency_key_is_refused_not_answered_from_the_store(shop: Merchant) -> None:
    orderid = approved_order(shop, "nonce-key")
    fields = {"client_orderid": "nonce-key", "orderid": orderid}
    address, headers, body = _v4_signed(shop, "create-card-ref", fields)
    keyed = {**headers, "Idempotency-Key": f"k-{uuid.uuid4().hex}"}
    first = httpx.post(address, content=body, headers=keyed, verify=TLS)
    assert first.status_code == 200, first.text
    refused(httpx.post(address, content=body, headers=keyed, verify=TLS), 10, "oauth_nonce was used already")
    _, signed_again, body_again = _v4_signed(shop, "create-card-ref", fields)  # a retry signs again
    repeat = httpx.post(
        address,
        content=body_again,
        headers={**signed_again, "Idempotency-Key": keyed["Idempotency-Key"]},
        verify=TLS,
    )
    assert (repeat.status_code, repeat.content) == (200, first.content)


def test_a_revoked_key_is_refused_on_an_operation_that_writes_though_the_process_cached_it(
    shared_gateway: Gateway,
) -> None:
    merchant = new_merchant(shared_gateway, _login())
    old = register_key(shared_gateway, merchant.login, key_pair(2048, 4)[1])
    orderid = approved_order(merchant, "nonce-revoked")
    fields = {"client_orderid": "nonce-revoked", "orderid": orderid}
    address = url(merchant, "/api/v4/create-card-ref")
    first = signed_post(address, fields, login=merchant.login, private_key_pem=key_pair(2048, 4)[0])
    assert first.status_code == 200, first.text  # the process holds the key now
    made = _payments_of(merchant)
    revoke_key(shared_gateway, old)
    again = signed_post(address, fields, login=merchant.login, private_key_pem=key_pair(2048, 4)[0])
    refused(again, 2, "revoked key")
    assert _payments_of(merchant) == made


def test_a_gateway_killed_before_an_operations_commit_keeps_neither_its_nonce_nor_its_effect(
    gateway_factory: Callable[..., Gateway],
) -> None:
    doomed = gateway_factory(KASSA_TEST_CLOCK="1", KASSA_TEST_CRASH_POINT=crashpoints.RECURRING_PAYMENT_WRITTEN)
    merchant = new_merchant(doomed, _login())
    register_key(doomed, merchant.login, key_pair()[1])
    fields = {"client_orderid": "nonce-crash", "amount": "9.90", "currency": merchant.currency, "order_desc": "Box"}
    card = {"credit_card_number": "4111111111111111", "expire_month": "12", "expire_year": "2030"}
    address, headers, body = _v4_signed(merchant, "create-recurring-payment", {**fields, **card})
    with pytest.raises(httpx.TransportError):
        httpx.post(address, content=body, headers=headers, verify=TLS)
    assert doomed.process is not None and doomed.process.wait(30) == -9  # inside the handler's transaction
    stored = "SELECT COUNT(*) FROM oauth_nonces UNION ALL SELECT COUNT(*) FROM recurring_payments"
    assert run_sql(doomed.database_url, stored) == [(0,), (0,)]

    restarted = gateway_factory()  # on the same database; the request goes to it as signed, Host and all
    again = httpx.post(
        f"{restarted.base}/api/v4/create-recurring-payment/{merchant.endpoint_id}",
        content=body,
        headers={**headers, "Host": f"127.0.0.1:{doomed.port}"},
        verify=TLS,
    )
    assert (again.status_code, again.json()["status"]) == (200, "approved"), again.text
    assert run_sql(doomed.database_url, stored) == [(1,), (1,)]
    replayed = httpx.post(again.url, content=body, headers={**headers, "Host": f"127.0.0.1:{doomed.port}"}, verify=TLS)
    refused(replayed, 10, "oauth_nonce was used already")


# --- nonces are forgotten as the window passes --------------------------------------------------------------


def test_nonces_older_than_the_window_are_pruned(clock_gateway: Gateway) -> None:
    merchant = new_merchant(clock_gateway, _login())
    now_s = clock_gateway.advance(0) // 1000
    nonce = uuid.uuid4().hex
    passed(hmac_post(merchant, timestamp=now_s, nonce=nonce))
    assert _nonce_stored(clock_gateway, nonce)
    clock_gateway.advance(299)
    assert _nonce_stored(clock_gateway, nonce)
    clock_gateway.advance(2)  # the scheduler's tick runs before the move is answered
    assert not _nonce_stored(clock_gateway, nonce)


def _nonce_stored(gateway: Gateway, nonce: str) -> bool:
    db = open_database(gateway.database_url, threads=1)
    try:
        query = oauth_nonces.select().where(oauth_nonces.c.nonce == nonce)
        return db.read_sync(lambda conn: conn.execute(query).first() is not None)
    finally:
        db.close()
