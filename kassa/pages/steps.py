"""Reading the 3-D Secure messages a customer's browser posts back to the gateway's pages."""

from __future__ import annotations

from sqlalchemy import Connection
from starlette.responses import Response

from kassa.domain import threeds_protocol as tds
from kassa.pages.responses import message
from kassa.storage import authentications, browser_sessions
from kassa.storage.browser_sessions import SessionKind
from kassa.storage.prepared import Record


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


def in_method_step(conn: Connection, server_trans_id: str, now_ms: int) -> bool:
    """Whether ``server_trans_id`` names an authentication the gateway started that is still at its
    Method step, with its checkout session open: the only kind the ACS's Method page serves."""
    authentication = authentications.by_server_trans_id(conn, server_trans_id)
    if authentication is None or authentication["step"] != tds.Step.METHOD:
        return False
    session = browser_sessions.session_of(conn, authentication["transaction_id"], SessionKind.CHECKOUT)
    return session is not None and session["expires_at_ms"] >= now_ms


def record_and_checkout(conn: Connection, acs_trans_id: str) -> tuple[Record | None, Record | None]:
    """The 3-D Secure record an ACS message names by acsTransID (or xid), and the checkout session of its
    transaction; a session is found only with its record."""
    authentication = authentications.by_acs_trans_id(conn, acs_trans_id)
    if authentication is None:
        return None, None
    return authentication, browser_sessions.session_of(conn, authentication["transaction_id"], SessionKind.CHECKOUT)
