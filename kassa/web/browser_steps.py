"""The 3-D Secure messages a customer's browser posts to the issuer's ACS: the same for the gateway's
checkout page and for the raw data status gives merchants that run the step on their own pages."""

from __future__ import annotations

from kassa.domain import money
from kassa.domain import threeds_protocol as tds
from kassa.storage.prepared import Record
from kassa.web import addresses


def method_request(base: str, authentication: Record) -> tuple[str, str]:
    """The ACS's Method URL and the ``threeDSMethodData`` to post there from a hidden iframe."""
    notification = addresses.method_notification(base)
    return addresses.acs_method(base), tds.method_data(authentication["server_trans_id"], notification)


def acs_request(base: str, authentication: Record, amount: int, currency: str) -> tuple[str, dict[str, str]]:
    """The ACS address and the fields to post there: ``creq`` (2.x), or ``PaReq`` and ``MD`` (1.0.2), for a
    transaction of ``amount`` minor units of ``currency``."""
    if authentication["version"] == tds.VERSION_1:
        cur = money.currency(currency)
        pareq = tds.pareq(authentication["acs_trans_id"], money.format_amount(amount, cur), cur.code)
        return addresses.acs_pareq(base), {"PaReq": pareq, "MD": authentication["server_trans_id"]}
    creq = tds.creq(authentication["server_trans_id"], authentication["acs_trans_id"])
    return addresses.acs_challenge(base), {"creq": creq}
