"""Merchant-hosted 3-D Secure (CONTRACT §8): the merchant runs the browser part itself, driven only by
status and the three upload operations. The test plays the browser with an HTTP client."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import httpx

from kassa.domain import threeds_protocol as tds
from tests.support.databases import run_sql
from tests.support.gateway import TLS, Merchant, free_port, sha1
from tests.support.receiver import Receiver, running

SESSION_TTL = 1800  # KASSA_SESSION_TTL_SECONDS's default
METHOD_WAIT = 10  # seconds the gateway waits for a 3DS Method result (EMV 3-D Secure)


class HiddenFields(HTMLParser):
    def __init__(self, html: str) -> None:
        super().__init__()
        self.action = ""
        self.fields: dict[str, str] = {}
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form" and not self.action:
            self.action = values.get("action", "")
        if tag == "input" and values.get("type") == "hidden":
            self.fields[values["name"]] = values["value"]


def upload(m: Merchant, operation: str, order: str, client_orderid: str, **fields: str) -> httpx.Response:
    data = {"login": m.login, "client_orderid": client_orderid, "orderid": order, **fields}
    data["control"] = sha1(m.login, client_orderid, order, m.control_key)
    return m.gateway.post(f"/api/3ds/v1/{operation}/{m.endpoint_id}", data)


def through_acs(step: dict[str, str], code: str | None = None, term_url: str = "") -> HiddenFields:
    """Plays the cardholder at the issuer's ACS with the challenge status gave (2.x ``creq``, or 1.0.2
    ``pareq`` with ``term_url``): enters ``code``, by default the one the sandbox page hints, and returns
    the form the ACS sends the browser back with."""
    posted = (
        {"creq": step["creq"]} if "creq" in step else {"PaReq": step["pareq"], "MD": step["md"], "TermUrl": term_url}
    )
    acs_page = httpx.post(step["acs-url"], data=posted, verify=TLS).text
    if code is None:
        hint = re.search(r'id="code-hint">(\d+)<', acs_page)
        assert hint is not None
        code = hint.group(1)
    form = HiddenFields(acs_page)
    return HiddenFields(httpx.post(form.action, data={**form.fields, "code": code}, verify=TLS).text)


def test_direct_sale_with_method_then_challenge_driven_through_status_and_uploads(merchant: Merchant) -> None:
    with running(Receiver(free_port())) as receiver:
        accepted = merchant.sale(
            "mh-1", cvv2="324", redirect_url="https://shop.example/return", server_callback_url=receiver.url
        ).json()
        order = accepted["paynet-order-id"]
        method = merchant.wait_stage(order, leaving="sale_processing")
        assert (method["status"], method["order-stage"]) == ("processing", "sale_3d_method")
        assert method["threeds-version"] == "2.2.0"
        assert method["redirect-to"].startswith(merchant.gateway.base + "/checkout/")
        assert "<form" in method["html"]
        assert method["threeds-method-url"] and method["threeds-method-data"]

        uploaded = upload(
            merchant, "upload-method-url-result", order, "mh-1",
            threeDSServerTransID=method["threeds-server-trans-id"], threeDSCompInd="Y",
            browserAcceptHeader="text/html", browserIP="203.0.113.7", browserJavaEnabled="false",
            browserJavascriptEnabled="true", browserLanguage="en-GB", browserColorDepth="24",
            browserScreenHeight="1080", browserScreenWidth="1920", browserTZ="0", browserUserAgent="Mozilla/5.0",
        )  # fmt: skip
        assert uploaded.json()["type"] == "async-response", uploaded.text
        challenge = merchant.wait_stage(order, leaving="sale_3d_method")
        assert challenge["order-stage"] == "sale_3d_validating"
        creq = tds.decode(challenge["creq"])
        forged = tds.cres(creq["threeDSServerTransID"], creq["acsTransID"], "Y")  # the ACS has not answered
        assert upload(merchant, "upload-cres-result", order, "mh-1", cres=forged).json()["error-code"] == "6"

        back = through_acs(challenge)
        assert back.action == "https://shop.example/return"

        done = upload(merchant, "upload-cres-result", order, "mh-1", cres=back.fields["cres"])
        assert done.json()["type"] == "async-response", done.text
        final = merchant.wait_final(order)
        assert (final["status"], final["order-stage"]) == ("approved", "sale_approved")
        [callback] = receiver.wait_for(1)
    assert (callback.query["status"], callback.query["orderid"]) == ("approved", order)
    again = upload(merchant, "upload-cres-result", order, "mh-1", cres=back.fields["cres"])
    assert again.json()["error-code"] == "6"


def test_upload_for_an_order_not_waiting_for_that_step_is_code_6(merchant: Merchant) -> None:
    order = merchant.sale("mh-2", cvv2="321").json()["paynet-order-id"]
    waiting = merchant.wait_stage(order, leaving="sale_processing")
    assert waiting["order-stage"] == "sale_3d_validating"
    answer = upload(
        merchant, "upload-method-url-result", order, "mh-2",
        threeDSServerTransID=waiting["threeds-server-trans-id"], threeDSCompInd="Y",
    )  # fmt: skip
    assert (answer.status_code, answer.json()["error-code"]) == (400, "6")


def test_3ds_1_0_2_merchant_hosted_with_pares_upload(merchant: Merchant) -> None:
    order = merchant.sale("mh-3", cvv2="322").json()["paynet-order-id"]
    step = merchant.wait_stage(order, leaving="sale_processing")
    assert (step["threeds-version"], step["order-stage"]) == ("1.0.2", "sale_3d_validating")
    term_url = "https://shop.example/term"
    back = through_acs(step, "000000-wrong", term_url)
    assert back.action == term_url
    done = upload(merchant, "upload-pares-result", order, "mh-3", pares=back.fields["PaRes"], md=back.fields["MD"])
    assert done.json()["type"] == "async-response"
    final = merchant.wait_final(order)
    assert (final["status"], final["error-code"]) == ("declined", "100")
    assert "3-D Secure" in final["error-message"]


def _stored_cvvs(merchant: Merchant, *orders: str) -> list[bytes]:
    """The encrypted CVVs still held for the transactions of ``orders``."""
    query = (
        "SELECT s.cvv_ciphertext FROM transient_secrets s JOIN transactions t ON t.id = s.transaction_id"
        f" WHERE t.order_id IN ({', '.join(str(int(order)) for order in orders)})"
    )
    return [bytes(cvv) for (cvv,) in run_sql(merchant.gateway.database_url, query)]


def test_cvv_is_kept_encrypted_across_3ds_and_deleted_whatever_the_outcome(merchant: Merchant) -> None:
    passed = merchant.sale("cv-1", cvv2="321", redirect_url="https://shop.example/3ds").json()["paynet-order-id"]
    failed = merchant.sale("cv-2", cvv2="322").json()["paynet-order-id"]
    steps = {order: merchant.wait_stage(order, leaving="sale_processing") for order in (passed, failed)}
    held = _stored_cvvs(merchant, passed, failed)
    assert len(held) == 2
    assert all(b"321" not in blob and b"322" not in blob for blob in held)

    back = through_acs(steps[passed])
    upload(merchant, "upload-cres-result", passed, "cv-1", cres=back.fields["cres"])
    assert merchant.wait_final(passed)["status"] == "approved"

    back = through_acs(steps[failed], "wrong", "https://t.example/")
    upload(merchant, "upload-pares-result", failed, "cv-2", pares=back.fields["PaRes"], md=back.fields["MD"])
    assert merchant.wait_final(failed)["status"] == "declined"
    assert _stored_cvvs(merchant, passed, failed) == []


def test_abandoned_challenge_is_declined_at_session_expiry_and_its_cvv_deleted(clock_merchant: Merchant) -> None:
    order = clock_merchant.sale("ab-1", cvv2="321").json()["paynet-order-id"]
    assert clock_merchant.wait_stage(order, leaving="sale_processing")["order-stage"] == "sale_3d_validating"
    assert len(_stored_cvvs(clock_merchant, order)) == 1
    clock_merchant.gateway.advance(SESSION_TTL)
    final = clock_merchant.wait_final(order)
    assert (final["status"], final["error-code"]) == ("declined", "100")
    assert _stored_cvvs(clock_merchant, order) == []


def test_method_step_without_a_result_goes_on_after_ten_seconds_as_not_completed(clock_merchant: Merchant) -> None:
    order = clock_merchant.sale("si-1", cvv2="323").json()["paynet-order-id"]
    assert clock_merchant.wait_stage(order, leaving="sale_processing")["order-stage"] == "sale_3d_method"
    # The test clock runs on from real time as well: a move that leaves seconds of margin keeps this check
    # true on a loaded machine (9 s left one, and the timeout fell due under a full suite's load).
    clock_merchant.gateway.advance(METHOD_WAIT - 5)
    # Workers woke with the move: a due method timeout would have run within a poll.
    assert clock_merchant.wait_stage(order, leaving="sale_3d_method", timeout=0.5)["order-stage"] == "sale_3d_method"
    clock_merchant.gateway.advance(5)
    final = clock_merchant.wait_final(order)
    assert final["status"] == "approved"  # nobody uploaded a Method result: the 10 s rule moved it on
    [tx] = clock_merchant.gateway.cli("order", "show", order)["transactions"]
    assert (tx["three_ds"]["comp_ind"], tx["three_ds"]["trans_status"]) == ("N", "Y")
