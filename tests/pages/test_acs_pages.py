"""The sandbox ACS's pages and the final redirect at the HTTP level: the Method page serves only a live
Method session, and no address a page posts to can add a directive to its Content-Security-Policy."""

from __future__ import annotations

import re
import uuid

import httpx

from kassa.domain import threeds_protocol as tds
from tests.support.gateway import TLS, Merchant

# Every page's policy has exactly these directives (kassa/pages/rendering.py).
DIRECTIVES = {
    "default-src",
    "script-src",
    "style-src",
    "img-src",
    "form-action",
    "frame-ancestors",
    "frame-src",
    "base-uri",
}
INJECTED = "https://shop.example;script-src 'unsafe-inline' *"


def directives(answer: httpx.Response) -> dict[str, str]:
    policy = answer.headers["content-security-policy"]
    parsed = {}
    for part in policy.split(";"):
        name, _, value = part.strip().partition(" ")
        parsed[name] = value
    return parsed


def assert_policy_intact(answer: httpx.Response) -> None:
    found = directives(answer)
    assert set(found) == DIRECTIVES, answer.headers["content-security-policy"]
    assert "unsafe-inline" not in answer.headers["content-security-policy"]
    assert "," not in answer.headers["content-security-policy"]


def method_post(m: Merchant, data: str) -> httpx.Response:
    return httpx.post(m.gateway.base + "/acs/method", data={"threeDSMethodData": data}, verify=TLS)


def test_acs_method_page_refuses_method_data_of_no_session_the_gateway_started(merchant: Merchant) -> None:
    forged = tds.method_data(str(uuid.uuid4()), "https://attacker.example/collect")
    answer = method_post(merchant, forged)
    assert answer.status_code == 404, answer.text
    assert "attacker.example" not in answer.text


def test_acs_method_page_serves_a_live_method_session_and_only_while_it_is_open(merchant: Merchant) -> None:
    order = merchant.sale("acs-m-1", cvv2="324").json()["paynet-order-id"]
    method = merchant.wait_stage(order, leaving="sale_processing")
    assert method["order-stage"] == "sale_3d_method"
    shown = httpx.post(
        method["threeds-method-url"], data={"threeDSMethodData": method["threeds-method-data"]}, verify=TLS
    )
    assert shown.status_code == 200, shown.text
    assert merchant.gateway.base + "/3ds/method-notification" in shown.text
    assert_policy_intact(shown)

    checkout = httpx.get(method["redirect-to"], verify=TLS)  # the checkout page ends the Method step
    continued = re.search(r'action="([^"]+/checkout/[^"]+/method)"', checkout.text)
    assert continued is not None, checkout.text
    httpx.post(continued.group(1), verify=TLS)
    assert merchant.wait_stage(order, leaving="sale_3d_method")["order-stage"] != "sale_3d_method"
    again = method_post(merchant, method["threeds-method-data"])
    assert again.status_code == 404, again.text


def test_acs_method_page_refuses_a_notification_address_that_would_inject_a_policy_directive(
    merchant: Merchant,
) -> None:
    order = merchant.sale("acs-m-2", cvv2="324").json()["paynet-order-id"]
    method = merchant.wait_stage(order, leaving="sale_processing")
    server_trans_id = tds.decode(method["threeds-method-data"])["threeDSServerTransID"]
    answer = method_post(merchant, tds.method_data(server_trans_id, INJECTED))
    assert answer.status_code == 400, answer.text
    assert_policy_intact(answer)


def test_pareq_term_url_cannot_inject_a_policy_directive(merchant: Merchant) -> None:
    order = merchant.sale("acs-p-1", cvv2="322").json()["paynet-order-id"]
    step = merchant.wait_stage(order, leaving="sale_processing")
    assert step["threeds-version"] == "1.0.2"
    posted = {"PaReq": step["pareq"], "MD": step["md"], "TermUrl": INJECTED}
    page = httpx.post(step["acs-url"], data=posted, verify=TLS).text
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', page))
    code = re.search(r'id="code-hint">(\d+)<', page)
    assert code is not None
    fields = {name: value.replace("&#39;", "'") for name, value in fields.items()}
    answer = httpx.post(merchant.gateway.base + "/acs/answer", data={**fields, "code": code.group(1)}, verify=TLS)
    assert answer.status_code == 400, answer.text
    assert_policy_intact(answer)


def test_redirect_url_cannot_inject_a_policy_directive_into_the_acs_return(merchant: Merchant) -> None:
    accepted = merchant.sale("acs-r-1", cvv2="321", redirect_url=INJECTED + "/return").json()
    if accepted.get("type") == "validation-error":  # refused at request time: nothing to inject
        assert accepted["error-message"].startswith("redirect_url")
        return
    step = merchant.wait_stage(accepted["paynet-order-id"], leaving="sale_processing")
    page = httpx.post(step["acs-url"], data={"creq": step["creq"]}, verify=TLS).text
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', page))
    code = re.search(r'id="code-hint">(\d+)<', page)
    assert code is not None
    answer = httpx.post(merchant.gateway.base + "/acs/answer", data={**fields, "code": code.group(1)}, verify=TLS)
    assert_policy_intact(answer)
    assert "unsafe-inline" not in answer.text or answer.status_code == 400


def test_hosted_form_final_redirect_to_an_injecting_redirect_url_keeps_the_policy_intact(
    merchant: Merchant,
) -> None:
    data = merchant.sale_fields("acs-f-1", redirect_url=INJECTED + "/return")
    for card_field in ("credit_card_number", "card_printed_name", "expire_month", "expire_year", "cvv2"):
        del data[card_field]
    accepted = merchant.gateway.post(f"/api/v2/sale-form/{merchant.endpoint_id}", data).json()
    if accepted.get("type") == "validation-error":  # refused at request time: nothing to inject
        return
    card = {"cc-number": "4111111111111111", "cc-name": "Jane Doe", "cc-exp": "12/30", "cc-csc": "123"}
    submitted = httpx.post(accepted["redirect-url"], data=card, verify=TLS)
    assert submitted.status_code == 303, submitted.text
    checkout = submitted.headers["location"]
    merchant.wait_final(accepted["paynet-order-id"])
    final = httpx.get(checkout, verify=TLS)
    assert_policy_intact(final)
