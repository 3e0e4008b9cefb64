"""Requests the operation table cannot take: bodies that are not form-encoded, unknown operation paths
and other methods are refused in the contract's format (CONTRACT §1, §12), never a bare text page."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.support.gateway import JSON_ACCEPT, TLS, Gateway, Merchant, classic_fields, new_merchant

JSON_CONTENT_TYPE = "application/vnd.pay+json; charset=utf-8"


@pytest.fixture(scope="module")
def shop(shared_gateway: Gateway) -> Merchant:
    return new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}")


def _sale_body(shop: Merchant) -> str:
    return str(httpx.QueryParams(shop.sale_fields(f"o-{uuid.uuid4().hex[:10]}")))


def _post_sale(shop: Merchant, headers: dict[str, str]) -> httpx.Response:
    with httpx.Client(timeout=30, verify=TLS) as client:
        request = client.build_request(
            "POST", f"{shop.gateway.base}/api/v2/sale/{shop.endpoint_id}", content=_sale_body(shop)
        )
        for name in ("content-type", "accept"):
            request.headers.pop(name, None)
        request.headers.update(headers)
        return client.send(request)


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/json", "multipart/form-data; boundary=x", "application/xml", "x"]
)
def test_body_not_declared_form_encoded_is_refused_with_code_1(shop: Merchant, content_type: str) -> None:
    answer = _post_sale(shop, {**JSON_ACCEPT, "Content-Type": content_type})
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"] == JSON_CONTENT_TYPE
    body = answer.json()
    assert (body["type"], body["error-code"]) == ("validation-error", "1")
    assert "application/x-www-form-urlencoded" in body["error-message"]


@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Type": "application/x-www-form-urlencoded"},
        {"Content-Type": "Application/X-WWW-Form-Urlencoded; charset=UTF-8"},
        {},  # as a client that sets none: the body is read as a form, as before
    ],
    ids=["plain", "with-charset", "absent"],
)
def test_form_encoded_or_undeclared_body_is_taken(shop: Merchant, headers: dict[str, str]) -> None:
    answer = _post_sale(shop, {**JSON_ACCEPT, **headers})
    assert answer.status_code == 200, answer.text
    assert answer.json()["type"] == "async-response"


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_other_method_on_an_operation_path_is_405_in_the_contract_format(shop: Merchant, method: str) -> None:
    answer = httpx.request(
        method, f"{shop.gateway.base}/api/v2/sale/{shop.endpoint_id}", headers=JSON_ACCEPT, verify=TLS
    )
    assert answer.status_code == 405, answer.text
    assert answer.headers["allow"] == "POST"
    assert answer.headers["content-type"] == JSON_CONTENT_TYPE
    body = answer.json()
    assert (body["type"], body["error-code"]) == ("validation-error", "1")
    assert "POST" in body["error-message"]
    uuid.UUID(body["serial-number"])


@pytest.mark.parametrize(
    "path", ["/api/v2/salee/1", "/api/v2/sale", "/api/v2/sale/1/more", "/api/v9/status/1", "/api/", "/api/v2/group/1"]
)
def test_unknown_operation_path_is_404_in_the_contract_format(shop: Merchant, path: str) -> None:
    answer = shop.gateway.post(path, {"login": shop.login})
    assert answer.status_code == 404, answer.text
    assert answer.headers["content-type"] == JSON_CONTENT_TYPE
    body = answer.json()
    assert (body["type"], body["error-code"]) == ("validation-error", "1")
    assert "no operation" in body["error-message"]


def test_unknown_operation_path_answers_classic_text_to_a_classic_client(shop: Merchant) -> None:
    answer = shop.gateway.post("/api/v2/salee/1", {"login": shop.login}, headers={"Accept": "text/html"})
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    fields = dict(classic_fields(answer.content))
    assert (fields["type"], fields["error-code"]) == ("validation-error", "1")


def test_pages_and_the_openapi_document_still_answer_outside_the_api(shop: Merchant) -> None:
    assert httpx.get(f"{shop.gateway.base}/openapi.json", timeout=30, verify=TLS).status_code == 200
    assert httpx.get(f"{shop.gateway.base}/no-such-page", timeout=30, verify=TLS).status_code == 404
