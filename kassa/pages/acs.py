"""The sandbox issuer's Access Control Server: the pages a cardholder's bank would show.

- Method URL: a (simulated) device fingerprint, then a POST of ``threeDSMethodData`` back to the 3DS
  server's notification URL.
- 2.x challenge (``creq``) and 1.0.2 (``PaReq``/``MD``/``TermUrl``): a one-time code page; the code is
  shown as a hint, since this is a sandbox. The ACS records its decision (as an RReq would), then sends
  the browser back with ``cres`` or ``PaRes``: for 2.x to the gateway when the checkout page started
  the challenge (``threeDSSessionData`` names a checkout session), else to the order's ``redirect_url``
  (merchant-hosted flows, which then call upload-cres-result); for 1.0.2 to the requestor's ``TermUrl``.
"""

from __future__ import annotations

import hmac

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response

from kassa.clock import now_ms
from kassa.core import authentication
from kassa.core.errors import NotWaiting
from kassa.domain import cards, money
from kassa.domain import threeds_protocol as tds
from kassa.pages.rendering import origin_source, render_page
from kassa.pages.responses import html, message
from kassa.pages.steps import in_method_step, message_value, record_and_checkout, unknown_message
from kassa.runtime import Services
from kassa.storage.browser_context import BrowserContext, context_of_transaction
from kassa.vault import tokens
from kassa.web import addresses
from kassa.web.addresses import public_base
from kassa.web.forms import form_fields

BANK = "Sandbox Bank"
NOT_WAITING = ("Nothing to confirm", "This authentication is no longer waiting for you. Return to the shop.")


class AccessControlServer:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def method(self, request: Request) -> Response:
        """Serves only a Method step the gateway started and that is still open: any other posted
        ``threeDSMethodData`` would make this page send a browser wherever the data says."""
        fields = await form_fields(request) or {}
        data = fields.get("threeDSMethodData", "")
        target = message_value(data, "threeDSMethodNotificationURL")
        server_trans_id = message_value(data, "threeDSServerTransID")
        if target is None or server_trans_id is None:
            return unknown_message()
        if not await self.services.db.read(lambda conn: in_method_step(conn, server_trans_id, now_ms())):
            return message("No device check is waiting", "Return to the shop.", status=404)
        return _post_back(
            target, {"threeDSMethodData": fields["threeDSMethodData"]}, "Checking this device…", framed=True
        )

    async def challenge(self, request: Request) -> Response:
        fields = await form_fields(request) or {}
        acs_trans_id = message_value(fields.get("creq", ""), "acsTransID")
        if acs_trans_id is None:
            return unknown_message()
        hidden = {"acsTransID": acs_trans_id, "threeDSSessionData": fields.get("threeDSSessionData", "")}
        return await self._code_page(request, acs_trans_id, hidden)

    async def pareq(self, request: Request) -> Response:
        fields = await form_fields(request) or {}
        acs_trans_id = message_value(fields.get("PaReq", ""), "xid")
        if acs_trans_id is None:
            return unknown_message()
        hidden = {"acsTransID": acs_trans_id, "MD": fields.get("MD", ""), "TermUrl": fields.get("TermUrl", "")}
        return await self._code_page(request, acs_trans_id, hidden)

    async def answer(self, request: Request) -> Response:
        fields = await form_fields(request) or {}
        acs_trans_id = fields.get("acsTransID", "")
        context = await self._context(acs_trans_id)
        if context is None or context.record is None:
            return message(*NOT_WAITING, status=409)
        brand = context.card["brand"] if context.card else None
        code, issuer = fields.get("code", ""), self.services.authenticator
        try:
            status = await self.services.db.write(
                lambda conn: authentication.acs_answer(conn, issuer, acs_trans_id, code, brand, now_ms())
            )
        except NotWaiting:
            return message(*NOT_WAITING, status=409)
        record = context.record
        if record["version"] == tds.VERSION_1:
            pares = tds.pares(acs_trans_id, status)
            return _post_back(fields.get("TermUrl", ""), {"PaRes": pares, "MD": fields.get("MD", "")})
        cres = tds.cres(record["server_trans_id"], acs_trans_id, status)
        session_data = fields.get("threeDSSessionData", "")
        gateway_hosted = session_data and hmac.compare_digest(
            tokens.digest(session_data), context.session["token_digest"]
        )
        target = (
            addresses.challenge_return(public_base(request, self.services.settings))
            if gateway_hosted
            else context.order["redirect_url"]
        )
        if not target:
            return message("Authentication finished", "Return to the shop to complete the payment.")
        return _post_back(target, {"cres": cres, "threeDSSessionData": session_data})

    async def _code_page(self, request: Request, acs_trans_id: str, hidden: dict[str, str]) -> Response:
        context = await self._context(acs_trans_id)
        record = context.record if context else None
        if context is None or record is None or record["step"] != tds.Step.CHALLENGE or record["trans_status"] != "C":
            return message(*NOT_WAITING, status=409)
        tx, card = context.transaction, context.card
        cur = money.currency(tx["currency"])
        page = render_page(
            "acs.html",
            bank=BANK,
            amount=money.format_amount(tx["amount"], cur),
            currency=cur.code,
            merchant=context.descriptor or "the merchant",
            masked=cards.mask_stored(card["bin"], card["last_four"], card["brand"]) if card else "",
            code=record["challenge_code"],
            action=f"{public_base(request, self.services.settings)}/acs/answer",
            fields=hidden,
        )
        return html(page)

    async def _context(self, acs_trans_id: str) -> BrowserContext | None:
        def load(conn: Connection) -> BrowserContext | None:
            _, session = record_and_checkout(conn, acs_trans_id)
            if session is None:
                return None
            return context_of_transaction(conn, session["transaction_id"], session)

        return await self.services.db.read(load)


def _post_back(
    target: str, fields: dict[str, str], text: str = "Returning to the shop…", framed: bool = False
) -> Response:
    origin = origin_source(target)
    if origin is None:  # it would go into the policy's form-action: nothing a policy cannot name safely
        return message("Unknown return address", "", status=400)
    page = render_page(
        "autopost.html", form_action=f"'self' {origin}", framed=framed, action=target, fields=fields, message=text
    )
    return html(page)
