"""Signing checked against CONTRACT §4's published formulas with fixed vectors: each expected value is
written here by hand from the formula (with hashlib, hmac and cryptography), never by Kassa's code."""

from __future__ import annotations

import base64
import hashlib
import hmac
from urllib.parse import parse_qsl, unquote

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from kassa_client import _core
from kassa_client.operations import OPERATIONS
from kassa_client.signing import Signer, base_string, verify_control

KEY = "B17F59B4-A7DC-41B4-8FF9-37D3E1FD3A42"
LOGIN = "shop"
PRIVATE = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def config(endpoint_id: int = 1, base: str = "http://gate.example/paynet") -> _core.Config:
    return _core.Config(base, endpoint_id, LOGIN, KEY, Signer(LOGIN, KEY, PRIVATE))


def control(operation: str, **fields: object) -> str:
    return dict(_core.wire_fields(OPERATIONS[operation], config(), fields))["control"]


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def test_sale_control_is_the_published_vector() -> None:
    # sha1(endpointId + client_orderid + amount in minor units + email + control key)
    expected = "01486324ef1d0b42d8833ecfb4b4d6ec66a98a16"
    assert sha1("1902B4FF51042john.smith@gmail.com" + KEY) == expected
    assert control("sale", client_orderid="902B4FF5", amount="10.42", currency="USD",
                   email="john.smith@gmail.com") == expected  # fmt: skip


@pytest.mark.parametrize(
    ("amount", "currency", "minor"), [("10.42", "USD", "1042"), ("500", "JPY", "500"), ("1.234", "KWD", "1234")]
)
def test_amount_is_signed_in_the_currencys_minor_units(amount: str, currency: str, minor: str) -> None:
    assert control("preauth", client_orderid="o", amount=amount, currency=currency) == sha1(f"1o{minor}{KEY}")


@pytest.mark.parametrize(
    ("operation", "fields", "message"),
    [
        ("account_verification", {"client_orderid": "o", "email": "e@x.io"}, "1oe@x.io"),
        ("capture", {"orderid": "77", "client_orderid": "o", "amount": "5.5", "currency": "USD"}, "shopo77550USD"),
        ("capture", {"orderid": "77", "client_orderid": "o"}, "shopo77"),
        ("return", {"orderid": "77", "client_orderid": "o", "amount": "1", "currency": "USD"}, "shopo77100USD"),
        ("void", {"orderid": "77", "client_orderid": "o"}, "shopo77"),
        ("status", {"client_orderid": "o"}, "shopo"),
        ("create_card_ref", {"orderid": "77", "client_orderid": "o"}, "shopo77"),
        ("upload_cres_result", {"orderid": "77", "client_orderid": "o", "cres": "x"}, "shopo77"),
        ("get_card_info", {"cardrefid": "99"}, "shop99"),
        ("make_rebill", {"client_orderid": "o", "cardrefid": "99", "amount": "2.00", "currency": "EUR"},
         "shopo99200EUR"),
        ("transfer_by_ref", {"client_orderid": "o", "source_card_ref_id": "8", "destination_card_ref_id": "9",
                             "amount": "3", "currency": "USD"}, "shopo89300USD"),
        ("bank_wire_transfer", {"client_orderid": "o", "payer_fullname": "P", "recipient_name": "R",
                                "recipient_account_number": "A1", "recipient_bank_bic": "DEUTDEFF",
                                "amount": "12.00", "vat_amount": "2.00", "currency": "USD"},
         "1oPRA1DEUTDEFF1200200USD"),
    ],
)  # fmt: skip
def test_each_formula_concatenates_as_the_contract_writes(operation: str, fields: dict[str, str], message: str) -> None:
    assert control(operation, **fields) == sha1(message + KEY)


def test_callback_control_is_status_orderid_client_orderid_and_key() -> None:
    fields = {"status": "approved", "orderid": "123", "client_orderid": "o-1"}
    assert verify_control_of({**fields, "control": sha1("approved123o-1" + KEY)})
    assert not verify_control_of({**fields, "control": sha1("declined123o-1" + KEY)})


def verify_control_of(values: dict[str, str]) -> bool:
    from kassa_client.signing import CALLBACK

    return verify_control(CALLBACK, values, KEY)


# OAuth 1.0a (RFC 5849 §3.4.1): the base string written out by hand. Encoding is RFC 3986: a space is
# %20, "/" %2F, "+" %2B, UTF-8 bytes escaped; then the whole parameter string is encoded once more.
BASE = (
    "POST&http%3A%2F%2Fgate.example%2Fpaynet%2Fapi%2Fv2%2Fpayout%2F7&amount%3D10.42"
    "%26card_printed_name%3DJane%2520Doe%26client_orderid%3Dpo-1%26currency%3DUSD%26oauth_consumer_key%3Dshop"
    "%26oauth_nonce%3Dabc123%26oauth_signature_method%3DHMAC-SHA1%26oauth_timestamp%3D1700000000"
    "%26oauth_version%3D1.0%26order_desc%3Da%252Fb%252Bc%2520%25C3%25A9"
)
BODY = [("client_orderid", "po-1"), ("amount", "10.42"), ("currency", "USD"), ("card_printed_name", "Jane Doe"),
        ("order_desc", "a/b+c é")]  # fmt: skip


def oauth(method: str) -> dict[str, str]:
    return Signer(LOGIN, KEY, PRIVATE).oauth_params(
        method, "HTTP://Gate.Example:80/paynet/api/v2/payout/7", BODY, timestamp=1700000000, nonce="abc123"
    )


def test_oauth_base_string_is_rfc_5849s() -> None:
    params = {k: v for k, v in oauth("HMAC-SHA1").items() if k != "oauth_signature"}
    assert base_string("POST", "HTTP://Gate.Example:80/paynet/api/v2/payout/7", [*BODY, *params.items()]) == BASE


def test_hmac_sha1_signature_is_keyed_with_the_control_key_and_an_ampersand() -> None:
    expected = base64.b64encode(hmac.digest((KEY + "&").encode(), BASE.encode(), "sha1")).decode()
    assert expected == "idZn7dt/rsd9GWJGU/0ncMfN+WY="
    assert oauth("HMAC-SHA1")["oauth_signature"] == expected


def test_hmac_sha1_keys_with_the_control_key_as_written_even_with_reserved_characters() -> None:
    key = "k+y/with=reserved&chars"
    signed = Signer(LOGIN, key, PRIVATE).oauth_params(
        "HMAC-SHA1", "HTTP://Gate.Example:80/paynet/api/v2/payout/7", BODY, timestamp=1700000000, nonce="abc123"
    )
    expected = base64.b64encode(hmac.digest((key + "&").encode(), BASE.encode(), "sha1")).decode()
    assert signed["oauth_signature"] == expected


def test_rsa_sha256_signature_verifies_with_the_public_key_over_the_same_base_string() -> None:
    signature = base64.b64decode(oauth("RSA-SHA256")["oauth_signature"])
    rsa_base = BASE.replace("HMAC-SHA1", "RSA-SHA256")
    PRIVATE.public_key().verify(signature, rsa_base.encode(), padding.PKCS1v15(), hashes.SHA256())


def test_a_prepared_v4_request_signs_its_body_and_url_in_the_authorization_header() -> None:
    prepared = _core.prepare(OPERATIONS["payout_pay"], config(7), {"orderid": "12", "client_orderid": "o"})
    assert prepared.url == "http://gate.example/paynet/api/v4/payout-pay/7"
    header = dict(
        (name, unquote(value.strip('"')))
        for name, _, value in (part.strip().partition("=") for part in prepared.headers["Authorization"][6:].split(","))
    )
    body = parse_qsl(prepared.body.decode())
    assert body == [("login", "shop"), ("orderid", "12"), ("client_orderid", "o")]
    params = sorted([*body, *((k, v) for k, v in header.items() if k != "oauth_signature")])
    encoded = "&".join(f"{quote(k)}={quote(v)}" for k, v in params)
    base = f"POST&{quote('http://gate.example/paynet/api/v4/payout-pay/7')}&{quote(encoded)}"
    signature = base64.b64decode(header["oauth_signature"])
    PRIVATE.public_key().verify(signature, base.encode(), padding.PKCS1v15(), hashes.SHA256())


def quote(text: str) -> str:
    from urllib.parse import quote as url_quote

    return url_quote(text, safe="-._~")
