"""Signed card-lifecycle requests (preauth, capture, return, void, account verification) of a merchant."""

from __future__ import annotations

import json

import httpx

from tests.support.commands import run_kassa
from tests.support.gateway import Merchant, minor_units, sha1


def preauth(m: Merchant, client_orderid: str, amount: str = "100.00", **fields: str) -> httpx.Response:
    data = m.sale_fields(client_orderid, amount=amount, **fields)
    return m.gateway.post(f"/api/v2/preauth/{m.endpoint_id}", data)


def account_verification(
    m: Merchant, client_orderid: str, cvv2: str = "123", operation: str = "account-verification", **fields: str
) -> httpx.Response:
    """An account verification, or ``operation`` signed as one (``sync/account-verification``)."""
    data = m.sale_fields(client_orderid, cvv2=cvv2, amount="0", **fields)
    del data["amount"]
    data["control"] = fields.get("control") or sha1(m.endpoint_id, client_orderid, data["email"], m.control_key)
    return m.gateway.post(f"/api/v2/{operation}/{m.endpoint_id}", data)


def follow_up_fields(m: Merchant, client_orderid: str, orderid: str, amount: str | None = None) -> dict[str, str]:
    """A signed capture, return or void body (CONTRACT §4: amount and currency signed only when sent)."""
    data = {"login": m.login, "client_orderid": client_orderid, "orderid": orderid}
    if amount is None:
        data["control"] = sha1(m.login, client_orderid, orderid, m.control_key)
    else:
        data.update(amount=amount, currency=m.currency)
        data["control"] = sha1(m.login, client_orderid, orderid, minor_units(amount), m.currency, m.control_key)
    return data


def _money_op(
    m: Merchant, path: str, client_orderid: str, orderid: str, amount: str | None, **headers: str
) -> httpx.Response:
    data = follow_up_fields(m, client_orderid, orderid, amount)
    return m.gateway.post(f"{path}/{m.endpoint_id}", data, {"Accept": "application/vnd.pay+json", **headers})


def capture(m: Merchant, client_orderid: str, orderid: str, amount: str | None = None) -> httpx.Response:
    return _money_op(m, "/api/v2/capture", client_orderid, orderid, amount)


def refund(m: Merchant, client_orderid: str, orderid: str, amount: str | None = None, **headers: str) -> httpx.Response:
    return _money_op(m, "/api/v2/return", client_orderid, orderid, amount, **headers)


def void(m: Merchant, client_orderid: str, orderid: str) -> httpx.Response:
    return _money_op(m, "/api/v2/void", client_orderid, orderid, None)


def approved_order(m: Merchant, client_orderid: str, *, kind: str = "sale", amount: str = "100.00") -> str:
    """Starts a sale or preauth and waits until it is approved; returns its paynet-order-id."""
    answer = (preauth(m, client_orderid, amount) if kind == "preauth" else m.sale(client_orderid, amount=amount)).json()
    order_id = str(answer["paynet-order-id"])
    assert m.wait_final(order_id)["status"] == "approved"
    return order_id


def final(m: Merchant, answer: httpx.Response) -> dict[str, str]:
    """Waits for the transaction an accepted request started, by its serial number."""
    assert answer.status_code == 200, answer.text
    body = answer.json()
    orderid, serial = body["paynet-order-id"], body["serial-number"]
    return m.wait_final(orderid, by_request_sn=serial)


def ledger_check(m: Merchant) -> dict[str, object]:
    """What `kassa ledger check --json` says of the gateway's database (its exit status included)."""
    done = run_kassa(["ledger", "check", "--json"], m.gateway.env)
    report: dict[str, object] = json.loads(done.stdout)
    report["exit"] = done.returncode
    return report


LEDGER_OK = {"ok": True, "problems": [], "exit": 0}
