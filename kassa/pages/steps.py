"""3-D Secure messages that go through the customer's browser: what it posts to the issuer's ACS (the
same for gateway pages and for the raw data status gives merchants that run the step themselves), and
reading what it posts back."""

from __future__ import annotations

from sqlalchemy import Connection
from starlette.responses import Response

from kassa.domain import money
from kassa.domain import threeds as tds
from kassa.pages import urls
from kassa.pages.responses import message
from kassa.storage import threeds as store
from kassa.storage.prepared import Record


def method_request(base: str, record: Record) -> tuple[str, str]:
    """The ACS's Method URL and the ``threeDSMethodData`` to post there from a hidden iframe."""
    return urls.acs_method(base), tds.method_data(record["server_trans_id"], urls.method_notification(base))


def acs_request(base: str, record: Record, tx: Record) -> tuple[str, dict[str, str]]:
    """The ACS address and the fields to post there: ``creq`` (2.x), or ``PaReq`` and ``MD`` (1.0.2)."""
    if record["version"] == tds.VERSION_1:
        cur = money.currency(tx["currency"])
        pareq = tds.pareq(record["acs_trans_id"], money.format_amount(tx["amount"], cur), cur.code)
        return urls.acs_pareq(base), {"PaReq": pareq, "MD": record["server_trans_id"]}
    return urls.acs_challenge(base), {"creq": tds.creq(record["server_trans_id"], record["acs_trans_id"])}


def message_value(text: str, *keys: str) -> str | None:
    """The first of ``keys`` a posted 3-D Secure message (base64url JSON: creq, cres, threeDSMethodData,
    PaReq, PaRes) gives a value; None when ``text`` is not such a message or has none of them."""
    try:
        message = tds.decode(text)
    except tds.MessageError:
        return None
    return next((str(message[key]) for key in keys if message.get(key)), None)


def unknown_message() -> Response:
    return message("Unknown 3-D Secure message", "", status=400)


def record_and_checkout(conn: Connection, acs_trans_id: str) -> tuple[Record | None, Record | None]:
    """The 3-D Secure record an ACS message names by acsTransID (or xid), and the checkout session of its
    transaction; a session is found only with its record."""
    record = store.by_acs_trans_id(conn, acs_trans_id)
    if record is None:
        return None, None
    return record, store.session_of(conn, record["transaction_id"], "checkout")
