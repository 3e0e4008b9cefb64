"""The OAuth 1.0a verifier (CONTRACT §4) against RFC 5849's own examples and against requests signed by
oauthlib's client, an implementation independent of Kassa's."""

from __future__ import annotations

import base64
import hashlib
import hmac
from urllib.parse import parse_qsl

import pytest

from kassa.signing import oauth
from kassa.signing.rsa_keys import load
from tests.support.oauth import Where, key_pair, sign

URL = "http://127.0.0.1:8080/paynet/api/v4/create-card-ref/7"
CONTROL_KEY = "B17F59B4-A7DC-41B4-8FF9-37D2DB2B1C3E"
FIELDS = [
    ("client-order-id", "902B4FF5"),
    ("orderid", "8432"),
    ("order_desc", "Café für 2 / zwei + eins"),
    ("bank_branch", "  Main street  "),  # a field Kassa ignores, with the spaces trimming would drop
]


def read(url: str, headers: dict[str, str], body: str) -> oauth.SignedRequest:
    return oauth.read_request(url, headers.get("Authorization"), parse_qsl(body, keep_blank_values=True))


# --- RFC 5849's examples ------------------------------------------------------------------------------------


def test_rfc5849_temporary_credentials_example_verifies_with_the_client_secret_and_an_empty_token_secret() -> None:
    """§1.2's POST /initiate: signed with ``client secret + "&"``, exactly Kassa's HMAC-SHA1 key."""
    header = (
        'OAuth realm="Photos", oauth_consumer_key="dpf43f3p2l4k3l03", oauth_signature_method="HMAC-SHA1", '
        'oauth_timestamp="137131200", oauth_nonce="wIjqoS", '
        'oauth_callback="http%3A%2F%2Fprinter.example.com%2Fready", oauth_signature="74KNZJeDHnMBp0EMJ9ZHt%2FXKycU%3D"'
    )
    request = oauth.read_request("https://photos.example.net/initiate", header, [])
    assert request.consumer_key == "dpf43f3p2l4k3l03"
    assert oauth.hmac_sha1_matches(request, "kd94hf93k423kf44")
    assert not oauth.hmac_sha1_matches(request, "kd94hf93k423kf45")


def test_rfc5849_base_string_example_of_section_3_4_1_1() -> None:
    """The example's query and body parameters, as decoded pairs (Kassa reads the body alone)."""
    header = (
        'OAuth realm="Example",oauth_consumer_key="9djdj82h48djs9d2",oauth_token="kkk9d7dh3k39sjv7",'
        'oauth_signature_method="HMAC-SHA1",oauth_timestamp="137131201",oauth_nonce="7d8f3e4a",'
        'oauth_signature="bYT5CMsGcbgUdFHObYMEfcx6bsw%3D"'
    )
    pairs = parse_qsl("b5=%3D%253D&a3=a&c%40=&a2=r%20b", keep_blank_values=True)
    pairs += parse_qsl("c2&a3=2+q", keep_blank_values=True)
    request = oauth.read_request("http://example.com/request", header, pairs)
    assert request.base_string == (
        "POST&http%3A%2F%2Fexample.com%2Frequest&a2%3Dr%2520b%26a3%3D2%2520q%26a3%3Da%26b5%3D%253D%25253D%26c%2540%3D"
        "%26c2%3D%26oauth_consumer_key%3D9djdj82h48djs9d2%26oauth_nonce%3D7d8f3e4a%26oauth_signature_method%3DHMAC-SHA1"
        "%26oauth_timestamp%3D137131201%26oauth_token%3Dkkk9d7dh3k39sjv7"
    )


def test_rfc5849_photo_request_base_string_gives_the_examples_signature() -> None:
    params = [
        ("file", "vacation.jpg"),
        ("size", "original"),
        ("oauth_consumer_key", "dpf43f3p2l4k3l03"),
        ("oauth_token", "nnch734d00sl2jdk"),
        ("oauth_signature_method", "HMAC-SHA1"),
        ("oauth_timestamp", "137131202"),
        ("oauth_nonce", "chapoH"),
    ]
    base = oauth.base_string("GET", "http://photos.example.net/photos", params)
    digest = hmac.new(b"kd94hf93k423kf44&pfkkdhi9sl3r4s00", base.encode(), hashlib.sha1).digest()
    assert base64.b64encode(digest).decode() == "MdpQcU8iPSUjWoN/UDMsK2sui9I="


# --- requests signed by oauthlib ----------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["header", "body", "both"])
def test_hmac_sha1_signed_by_oauthlib_matches(where: Where) -> None:
    headers, body = sign(URL, FIELDS, login="shop", method="HMAC-SHA1", control_key=CONTROL_KEY, where=where)
    request = read(URL, headers, body)
    assert (request.consumer_key, request.method) == ("shop", "HMAC-SHA1")
    assert oauth.hmac_sha1_matches(request, CONTROL_KEY)
    assert not oauth.hmac_sha1_matches(request, CONTROL_KEY + "x")


@pytest.mark.parametrize("where", ["header", "body", "both"])
def test_rsa_sha256_signed_by_oauthlib_matches_its_public_key_only(where: Where) -> None:
    private, public = key_pair()
    headers, body = sign(URL, FIELDS, login="shop", private_key_pem=private, where=where)
    request = read(URL, headers, body)
    assert oauth.rsa_sha256_matches(request, load(public))
    assert not oauth.rsa_sha256_matches(request, load(key_pair(2048, 1)[1]))


def test_a_control_key_with_reserved_characters_matches_encoded_as_oauthlib_does_or_as_written() -> None:
    key = "k&y=with%and spaces!"
    headers, body = sign(URL, FIELDS, login="shop", method="HMAC-SHA1", control_key=key)
    assert oauth.hmac_sha1_matches(read(URL, headers, body), key)
    request = read(URL, headers, body)
    raw = base64.b64encode(hmac.new(f"{key}&".encode(), request.base_string.encode(), hashlib.sha1).digest())
    as_written = oauth.SignedRequest({**request.protocol, "oauth_signature": raw.decode()}, request.base_string)
    assert oauth.hmac_sha1_matches(as_written, key)


def test_a_changed_body_value_no_longer_matches() -> None:
    headers, body = sign(URL, FIELDS, login="shop", method="HMAC-SHA1", control_key=CONTROL_KEY)
    assert not oauth.hmac_sha1_matches(read(URL, headers, body.replace("8432", "8433")), CONTROL_KEY)


def test_a_value_is_signed_untrimmed_and_an_unknown_field_counts() -> None:
    headers, body = sign(URL, FIELDS, login="shop", method="HMAC-SHA1", control_key=CONTROL_KEY)
    trimmed = body.replace("++Main+street++", "Main+street")
    assert trimmed != body
    assert not oauth.hmac_sha1_matches(read(URL, headers, trimmed), CONTROL_KEY)
    dropped = body.replace("&bank_branch=++Main+street++", "")
    assert not oauth.hmac_sha1_matches(read(URL, headers, dropped), CONTROL_KEY)


def test_the_doubled_slash_path_is_signed_as_sent() -> None:
    doubled = URL.replace("/v4/", "/v4//")
    headers, body = sign(doubled, FIELDS, login="shop", method="HMAC-SHA1", control_key=CONTROL_KEY)
    assert oauth.hmac_sha1_matches(read(doubled, headers, body), CONTROL_KEY)
    assert not oauth.hmac_sha1_matches(read(URL, headers, body), CONTROL_KEY)


# --- reading the parameters ---------------------------------------------------------------------------------


def test_the_header_takes_a_realm_commas_with_or_without_spaces_and_percent_encoded_values() -> None:
    header = 'OAuth realm="kassa",oauth_consumer_key="a%20b",  oauth_nonce="n%2Bx" ,oauth_version="1.0"'
    expected = {"oauth_consumer_key": "a b", "oauth_nonce": "n+x", "oauth_version": "1.0"}
    assert oauth.parse_authorization(header) == expected


@pytest.mark.parametrize(
    "header",
    ['OAuth oauth_nonce="a" oauth_timestamp="1"', "OAuth oauth_nonce=a", 'OAuth oauth_nonce="a", oauth_nonce="a"'],
)
def test_an_unreadable_oauth_header_is_refused(header: str) -> None:
    with pytest.raises(oauth.Unsigned):
        oauth.parse_authorization(header)


def test_another_authorization_scheme_is_not_oauth() -> None:
    assert oauth.parse_authorization("Basic dXNlcjpwYXNz") is None
    with pytest.raises(oauth.Unsigned, match="not signed"):
        oauth.read_request(URL, "Basic dXNlcjpwYXNz", [("a", "b")])


def test_parameters_in_header_and_body_must_be_equal() -> None:
    headers, body = sign(URL, FIELDS, login="shop", method="HMAC-SHA1", control_key=CONTROL_KEY, where="both")
    with pytest.raises(oauth.Unsigned, match="oauth_consumer_key differs"):
        read(URL, headers, body.replace("oauth_consumer_key=shop", "oauth_consumer_key=other"))


def test_a_parameter_twice_in_the_body_is_refused() -> None:
    headers, body = sign(URL, FIELDS, login="shop", method="HMAC-SHA1", control_key=CONTROL_KEY, where="body")
    with pytest.raises(oauth.Unsigned, match="oauth_nonce appears twice"):
        read(URL, headers, body + "&oauth_nonce=again")


@pytest.mark.parametrize(
    ("changed", "problem"),
    [
        ({"oauth_nonce": ""}, "oauth_nonce missing"),
        ({"oauth_version": "2.0"}, "oauth_version must be 1.0"),
        ({"oauth_timestamp": "-5"}, "oauth_timestamp must be whole seconds"),
        ({"oauth_nonce": "n" * 129}, "oauth_nonce must be at most 128"),
    ],
)
def test_malformed_protocol_parameters_are_refused(changed: dict[str, str], problem: str) -> None:
    protocol = {name: "1" for name in oauth.REQUIRED} | changed
    with pytest.raises(oauth.Unsigned, match=problem):
        oauth.read_request(URL, None, list(protocol.items()))


def test_the_timestamp_window_includes_its_bounds() -> None:
    now_ms = 1_800_000_000_000
    assert oauth.within_window(1_800_000_300, now_ms, 300)
    assert oauth.within_window(1_799_999_700, now_ms, 300)
    assert not oauth.within_window(1_800_000_301, now_ms, 300)
    assert not oauth.within_window(1_799_999_699, now_ms, 300)


def test_a_signature_that_is_not_base64_matches_nothing() -> None:
    request = oauth.SignedRequest({"oauth_signature": "not base64!"}, "POST&x&y")
    assert not oauth.hmac_sha1_matches(request, CONTROL_KEY)
    assert not oauth.rsa_sha256_matches(request, load(key_pair()[1]))


# --- the base string URI and the encoding -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scheme", "host", "url"),
    [
        ("HTTP", "Example.COM:80", "http://example.com/p"),
        ("https", "example.com:443", "https://example.com/p"),
        ("https", "example.com:80", "https://example.com:80/p"),
        ("http", "example.com:8080", "http://example.com:8080/p"),
        ("http", "[::1]:80", "http://[::1]/p"),
        ("http", "[::1]", "http://[::1]/p"),
    ],
)
def test_the_base_url_is_lower_case_without_a_default_port(scheme: str, host: str, url: str) -> None:
    assert oauth.base_url(scheme, host, "/p") == url


def test_rfc3986_encoding_keeps_only_unreserved_characters() -> None:
    assert oauth.encode("AZaz09-._~") == "AZaz09-._~"
    assert oauth.encode("a b/c+d=e&f*") == "a%20b%2Fc%2Bd%3De%26f%2A"
    assert oauth.encode("é") == "%C3%A9"
