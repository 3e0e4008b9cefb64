"""Scheme B (CONTRACT §4, SPEC.md "Scheme B") through HTTP: requests signed by oauthlib's client pass the
gateway's OAuth check for both methods, wherever the ``oauth_*`` parameters stand; everything else is
refused with the contract's status, code and header. The operations used have no handler yet, so a
request that passes its OAuth check gets the 501 that names its operation, and one refused gets 401."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from kassa.storage.database import open_database
from kassa.storage.tables import oauth_nonces
from tests.support.gateway import JSON_ACCEPT, TLS, Gateway, Merchant, classic_fields, new_merchant
from tests.support.gateway import new_classic_merchant as classic_merchant
from tests.support.oauth import Where, key_pair, register_key, revoke_key, sign, signed_post

RSA_PATH = "/api/v4/payout-check"  # RSA-SHA256, not built yet: 501 once past the OAuth check
HMAC_PATH = "/api/v2/payout"  # HMAC-SHA1, likewise
JSON_TYPE = "application/vnd.pay+json; charset=utf-8"
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


def passed(response: httpx.Response, code: str) -> None:
    """Past the OAuth check: the 501 of an operation not built yet, in JSON."""
    assert response.status_code == 501, response.text
    assert response.headers["content-type"] == JSON_TYPE
    body = response.json()
    assert (body["type"], body["error-code"]) == ("error", "501")
    assert code in body["error-message"]


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
    passed(rsa_post(shop, where=where), "PAYOUT_V4_CHECK")


@pytest.mark.parametrize("where", ["header", "body", "both"])
def test_hmac_sha1_signed_by_oauthlib_passes_the_oauth_check(shop: Merchant, where: Where) -> None:
    passed(hmac_post(shop, where=where), "PAYOUT")


def test_every_unbuilt_oauth_row_answers_501_once_signed(shop: Merchant) -> None:
    for path, code in (("/api/v4/payout-pay", "PAYOUT_V4_PAY"), ("/api/v4/transfer", "TRANSFER_V4")):
        passed(rsa_post(shop, path), code)
    passed(hmac_post(shop, "/api/v2/pan-eligibility/send"), "PAN_ELIGIBILITY_SEND")


def test_the_doubled_slash_path_is_verified_as_sent(shop: Merchant) -> None:
    passed(rsa_post(shop, "/api/v4//payout-check"), "PAYOUT_V4_CHECK")
    passed(hmac_post(shop, "/api//v2/payout"), "PAYOUT")


def test_a_group_call_is_verified_with_the_groups_merchant(shop: Merchant) -> None:
    group = shop.gateway.cli("group", "create", "--merchant", shop.login, "--endpoints", str(shop.endpoint_id))
    address = f"{shop.gateway.base}{RSA_PATH}/group/{group['id']}"
    passed(signed_post(address, FIELDS, login=shop.login, private_key_pem=key_pair()[0]), "PAYOUT_V4_CHECK")


def test_keys_rotate_two_active_at_once(shop: Merchant) -> None:
    private, public = key_pair(2048, 1)
    register_key(shop.gateway, shop.login, public)
    passed(rsa_post(shop, private=private), "PAYOUT_V4_CHECK")
    passed(rsa_post(shop), "PAYOUT_V4_CHECK")


def test_a_timestamp_a_little_off_either_way_passes(shop: Merchant) -> None:
    passed(rsa_post(shop, timestamp=int(time.time()) - 290), "PAYOUT_V4_CHECK")
    passed(rsa_post(shop, timestamp=int(time.time()) + 290), "PAYOUT_V4_CHECK")


def test_the_same_nonce_at_another_timestamp_passes(shop: Merchant) -> None:
    now = int(time.time())
    passed(rsa_post(shop, nonce="123456", timestamp=now), "PAYOUT_V4_CHECK")
    passed(rsa_post(shop, nonce="123456", timestamp=now - 1), "PAYOUT_V4_CHECK")


def test_v4_answers_json_without_accept_or_with_any_type(shop: Merchant) -> None:
    passed(rsa_post(shop, headers={}), "PAYOUT_V4_CHECK")  # httpx sends Accept: */*
    headers, body = sign(url(shop, RSA_PATH), FIELDS, login=shop.login, private_key_pem=key_pair()[0])
    with httpx.Client(timeout=30, verify=TLS) as client:
        request = client.build_request("POST", url(shop, RSA_PATH), content=body, headers=headers)
        del request.headers["accept"]
        passed(client.send(request), "PAYOUT_V4_CHECK")


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
    passed(rsa_post(merchant, private=key_pair(2048, 4)[0]), "PAYOUT_V4_CHECK")  # the process holds it now
    revoke_key(shared_gateway, old)
    refused(rsa_post(merchant, private=key_pair(2048, 4)[0]), 2, "revoked key")
    refused(rsa_post(merchant, private=key_pair(2048, 4)[0]), 2, "does not match")
    passed(rsa_post(merchant, private=key_pair(2048, 5)[0]), "PAYOUT_V4_CHECK")


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
    passed(httpx.post(url(shop, HMAC_PATH), content=body, headers=send, verify=TLS), "PAYOUT")
    replay = httpx.post(url(shop, HMAC_PATH), content=body, headers=send, verify=TLS)
    refused(replay, 10, "oauth_nonce was used already with this oauth_timestamp")


def test_a_refused_signature_spends_no_nonce(shop: Merchant) -> None:
    now = int(time.time())
    refused(rsa_post(shop, private=key_pair(2048, 2)[0], nonce="n-1", timestamp=now), 2)
    passed(rsa_post(shop, nonce="n-1", timestamp=now), "PAYOUT_V4_CHECK")


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
    passed(httpx.post(url(shop, HMAC_PATH), content=body, headers=forwarded, verify=TLS), "PAYOUT")


def test_a_default_port_in_the_host_header_is_dropped(shop: Merchant) -> None:
    headers, body = sign(
        f"http://pay.example.com/paynet{HMAC_PATH}/{shop.endpoint_id}",
        FIELDS,
        login=shop.login,
        method="HMAC-SHA1",
        control_key=shop.control_key,
    )
    named = {**JSON_ACCEPT, **headers, "Host": "PAY.example.com:80"}
    passed(httpx.post(url(shop, HMAC_PATH), content=body, headers=named, verify=TLS), "PAYOUT")


@pytest.mark.backends("sqlite")
def test_forwarded_headers_from_an_untrusted_peer_are_ignored(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory(KASSA_TRUSTED_PROXIES="192.0.2.0/24")
    merchant = new_merchant(gateway, _login())
    public = f"https://pay.example.com/paynet{HMAC_PATH}/{merchant.endpoint_id}"
    headers, body = sign(public, FIELDS, login=merchant.login, method="HMAC-SHA1", control_key=merchant.control_key)
    forwarded = {**JSON_ACCEPT, **headers, "X-Forwarded-Host": "pay.example.com", "X-Forwarded-Proto": "https"}
    refused(httpx.post(url(merchant, HMAC_PATH), content=body, headers=forwarded, verify=TLS), 2, "does not match")
    passed(hmac_post(merchant, headers={**JSON_ACCEPT, "X-Forwarded-Host": "elsewhere.example"}), "PAYOUT")


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
    passed(send(first, request), "PAYOUT_V4_CHECK")
    refused(send(second, request), 10, "oauth_nonce was used already")
    passed(send(second, signed()), "PAYOUT_V4_CHECK")  # both processes hold the key now
    revoke_key(first, key_id)
    refused(send(first, signed()), 2, "revoked key")
    refused(send(second, signed()), 2, "revoked key")


# --- nonces are forgotten as the window passes --------------------------------------------------------------


def test_nonces_older_than_the_window_are_pruned(clock_gateway: Gateway) -> None:
    merchant = new_merchant(clock_gateway, _login())
    now_s = clock_gateway.advance(0) // 1000
    nonce = uuid.uuid4().hex
    passed(hmac_post(merchant, timestamp=now_s, nonce=nonce), "PAYOUT")
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
