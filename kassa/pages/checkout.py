"""The cardholder's side of the gateway: the hosted card form, and the checkout page that takes the
browser through 3-D Secure (Method step, challenge, 1.0.2 PaReq/PaRes) to the final redirect."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response

from kassa.clock import now_ms, today
from kassa.core import authentication, opening, payouts
from kassa.core.authentication import METHOD_WAIT_MS
from kassa.core.errors import NotWaiting
from kassa.domain import cards, destinations, money
from kassa.domain.callbacks import callback_fields
from kassa.domain.destinations import Kind
from kassa.domain.lifecycle import Stage, is_final
from kassa.domain.order_view import CardView, OrderHead, TransactionView
from kassa.domain.transactions import Needs, TxType, rule
from kassa.pages.redirect import final_redirect
from kassa.pages.rendering import render_page
from kassa.pages.responses import html, message, see_other
from kassa.pages.steps import message_value, record_and_checkout, unknown_message
from kassa.runtime import Services
from kassa.storage import authentications
from kassa.storage.browser_context import BrowserContext, browser_context
from kassa.storage.browser_sessions import SessionKind
from kassa.storage.prepared import Record
from kassa.vault import tokens
from kassa.vault.keys import control_key_context, cvv_context
from kassa.vault.tokens import SealedToken
from kassa.web import addresses
from kassa.web.addresses import public_base
from kassa.web.browser_steps import acs_request, method_request
from kassa.web.forms import form_fields

GONE = (
    "This payment page is no longer available",
    "It was already used or has expired. Return to the shop to try again.",
)


# A page shown again after an error never carries a card number or a security code back to the browser:
# the payer types them again (no card data in any response but as BIN and last four).
_NEVER_SHOWN_AGAIN = frozenset(("cc-number", "cc-csc", "to-number"))


class Pages:
    def __init__(self, services: Services) -> None:
        self.services = services

    # The hosted form: GET shows it, POST takes the card once.

    async def show_form(self, request: Request) -> Response:
        context = await self._form_context(request)
        if context is None:
            return message(*GONE, status=410)
        if is_final(Stage(context.transaction["stage"])):  # a payout the merchant's balance did not cover
            return self._finish(context)
        return self._form(request, context, {}, {})

    async def submit_form(self, request: Request) -> Response:
        context = await self._form_context(request)
        fields = await form_fields(request)
        if context is None or fields is None or is_final(Stage(context.transaction["stage"])):
            return message(*GONE, status=410)
        asks_cvv = _asks_cvv(context.order)
        values, errors = _card_values(fields, asks_cvv=asks_cvv, asks_receiving_card=_asks_receiving_card(context))
        if errors:
            kept = {name: value for name, value in fields.items() if name not in _NEVER_SHOWN_AGAIN}
            return self._form(request, context, kept, errors, status=400)
        order, tx, vault = context.order, context.transaction, self.services.vault
        receiving = values.get("receiving_card_number")
        destination = None
        if receiving is not None:
            destination = payouts.sealed(vault, order["merchant_id"], Kind.CARD, destinations.CardNumber(receiving))
        # Encrypted before the unit of work: the database's writer runs units, not cryptography.
        card = opening.new_card(
            vault,
            order["merchant_id"],
            values["credit_card_number"],
            values["expire_month"],
            values["expire_year"],
            values["card_printed_name"],
        )
        cvv = vault.encrypt(values["cvv2"], cvv_context(tx["serial_number"])) if asks_cvv else None
        ttl_ms = int(self.services.settings.session_ttl_seconds * 1000)
        checkout_token, sealed = tokens.new_token(vault)
        collected = await self.services.db.write(
            lambda conn: opening.collect_card(
                conn, context.session, order, tx["id"], card, cvv, now_ms(), ttl_ms, sealed, destination
            )
        )
        if not collected:
            return message(*GONE, status=410)
        self.services.wake_workers()
        return see_other(addresses.checkout(public_base(request, self.services.settings), checkout_token))

    async def _form_context(self, request: Request) -> BrowserContext | None:
        token = request.path_params["token"]
        context = await self.services.db.read(lambda conn: browser_context(conn, token, SessionKind.FORM))
        if context is None or context.session["used_at_ms"] is not None or context.session["expires_at_ms"] < now_ms():
            return None
        return context

    def _form(
        self,
        request: Request,
        context: BrowserContext,
        values: dict[str, str],
        errors: dict[str, str],
        status: int = 200,
    ) -> Response:
        order = context.order
        amount = money.format_amount(order["amount"], money.currency(order["currency"]))
        button, footnote = _wording(TxType(order["tx_type"]), f"{amount} {order['currency']}")
        page = render_page(
            "form.html",
            action=str(request.url.path),
            amount=amount,
            currency=order["currency"],
            descriptor=context.descriptor,
            order_desc=order["order_desc"],
            values=values,
            errors=errors,
            ask_cvv=_asks_cvv(order),
            ask_receiving_card=_asks_receiving_card(context),
            button=button,
            footnote=footnote,
        )
        return html(page, status)

    # The checkout page: one address that always shows the customer's next step.

    async def checkout(self, request: Request) -> Response:
        token = request.path_params["token"]
        context = await self.services.db.read(lambda conn: browser_context(conn, token, SessionKind.CHECKOUT))
        if context is None:
            return message("This page does not exist", "Return to the shop.", status=404)
        base = public_base(request, self.services.settings)
        stage, record = Stage(context.transaction["stage"]), context.record
        if is_final(stage) or stage is Stage.UNKNOWN:
            return self._finish(context)
        if stage is Stage.THREE_D_METHOD and record is not None:
            return self._method_page(base, token, record)
        if stage is Stage.THREE_D_VALIDATING and record is not None:
            return _to_acs(base, token, context)
        return message("Processing your payment…", "This takes a moment; please keep this page open.", refresh=1)

    def _method_page(self, base: str, token: str, record: Record) -> Response:
        method_url, method_data = method_request(base, record)
        page = render_page(
            "method.html",
            method_url=method_url,
            method_data=method_data,
            continue_url=f"{addresses.checkout(base, token)}/method",
            wait_ms=METHOD_WAIT_MS,
        )
        return html(page)

    def _finish(self, context: BrowserContext) -> Response:
        order, tx = context.order, context.transaction
        fields = callback_fields(
            order=OrderHead.of(order),
            tx=TransactionView.of(tx),
            card=CardView.of(context.card) if context.card else None,
            descriptor=context.descriptor,
        )
        redirect = None
        if order["redirect_url"]:
            key = self.services.vault.decrypt(context.control_key_sealed, control_key_context(order["merchant_id"]))
            redirect = final_redirect(order["redirect_url"], fields, key)
        if redirect is not None:
            return html(redirect)
        title = "Payment approved" if fields["status"] == "approved" else "Payment not completed"
        return message(title, f"Status: {fields['status']}. You may close this page.")

    async def method_done(self, request: Request) -> Response:
        """The checkout page's Method iframe finished or gave up after 10 s."""
        token = request.path_params["token"]
        context = await self.services.db.read(lambda conn: browser_context(conn, token, SessionKind.CHECKOUT))
        if context is None or context.record is None:
            return message("This page does not exist", "Return to the shop.", status=404)
        # The gateway saw (or did not see) the ACS's notification itself: the browser's claim is not needed.
        indicator = "Y" if context.record["method_notified"] else "N"
        brand = context.card["brand"] if context.card else None
        tx_id = context.transaction["id"]
        issuer = self.services.authenticator
        await self._quietly(lambda conn: authentication.method_result(conn, issuer, tx_id, indicator, brand, now_ms()))
        return see_other(addresses.checkout(public_base(request, self.services.settings), token))

    async def method_notification(self, request: Request) -> Response:
        """The ACS's Method page reports through the browser that fingerprinting finished."""
        fields = await form_fields(request) or {}
        server_trans_id = message_value(fields.get("threeDSMethodData", ""), "threeDSServerTransID")
        if server_trans_id is None:
            return unknown_message()

        def notified(conn: Connection) -> None:
            found = authentications.by_server_trans_id(conn, server_trans_id)
            if found is not None:
                authentications.change(conn, found["transaction_id"], now_ms(), method_notified=True)

        await self.services.db.write(notified)
        return html(render_page("method_done.html", framed=True))

    async def challenge_return(self, request: Request) -> Response:
        """The ACS sends the CRes (2.x) or PaRes (1.0.2) back through the browser for gateway-hosted flows."""
        fields = await form_fields(request) or {}
        answer = fields.get("cres") or fields.get("PaRes") or fields.get("pares") or ""
        acs_trans_id = message_value(answer, "acsTransID", "xid")  # 2.x CRes, or 1.0.2 PaRes
        if acs_trans_id is None:
            return unknown_message()
        record, session = await self.services.db.read(lambda conn: record_and_checkout(conn, acs_trans_id))
        if record is None:
            return unknown_message()
        tx_id = record["transaction_id"]
        await self._quietly(lambda conn: authentication.complete_challenge(conn, tx_id, now_ms()))
        if session is None:
            return message("This page does not exist", "Return to the shop.", status=404)
        token = tokens.open_token(self.services.vault, SealedToken.of(session))
        return see_other(addresses.checkout(public_base(request, self.services.settings), token))

    async def _quietly(self, unit: Callable[[Connection], None]) -> None:
        """Runs a 3-D Secure step; a step the transaction has moved past already (a reload) is no error."""
        try:
            await self.services.db.write(unit)
        except NotWaiting:
            return
        self.services.wake_workers()


def _to_acs(base: str, token: str, context: BrowserContext) -> Response:
    assert context.record is not None
    acs_url, fields = acs_request(base, context.record, context.transaction["amount"], context.transaction["currency"])
    if "PaReq" in fields:
        fields["TermUrl"] = addresses.challenge_return(base)
    else:
        fields["threeDSSessionData"] = token  # the ACS returns the CRes to the gateway for this session
    return html(render_page("autopost.html", action=acs_url, fields=fields))


def _asks_cvv(order: Record) -> bool:
    """The card of a cardholder who pays (a sale's, a transfer's source card) is asked for its security
    code; a card a payout pays to is not."""
    return rule(TxType(order["tx_type"])).cardholder_present


def _asks_receiving_card(context: BrowserContext) -> bool:
    """A card-to-card transfer whose request named no receiving card asks the payer for it."""
    return rule(TxType(context.order["tx_type"])).needs is Needs.CARD_TO_CARD and context.destination is None


def _wording(tx_type: TxType, amount: str) -> tuple[str, str]:
    """The form's button and footnote."""
    if tx_type is TxType.PAYOUT:
        return f"Receive {amount}", "Enter the card the money is paid to; card data goes straight to the gateway."
    footnote = "Card data goes straight to the payment gateway; the shop never sees it."
    if tx_type is TxType.TRANSFER:
        return f"Transfer {amount}", footnote
    return ("Pay " + amount if rule(tx_type).moves_money else "Verify card"), footnote


_BAD_NUMBER = "This card number is not valid: check the digits."


def _card_values(
    fields: dict[str, str], *, asks_cvv: bool = True, asks_receiving_card: bool = False
) -> tuple[dict[str, Any], dict[str, str]]:
    """Checks the form again on the server (the browser's checks are a convenience, not a guarantee)."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    try:
        values["credit_card_number"] = cards.normalize_pan(fields.get("cc-number", "").strip())
    except cards.CardError:
        errors["cc-number"] = _BAD_NUMBER
    if asks_receiving_card:
        try:
            values["receiving_card_number"] = cards.normalize_pan(fields.get("to-number", "").strip())
        except cards.CardError:
            errors["to-number"] = _BAD_NUMBER
    month, _, year = fields.get("cc-exp", "").replace(" ", "").partition("/")
    try:
        expiry = cards.parse_expiry(month, year, today())
        values["expire_month"], values["expire_year"] = expiry.month, expiry.year
    except cards.CardError as problem:
        errors["cc-exp"] = "This card has expired." if problem.field is None else "Enter the expiry as MM/YY."
    pan = str(values.get("credit_card_number", ""))
    cvv = fields.get("cc-csc", "").strip()
    if asks_cvv and not cards.cvv_valid(cvv, cards.brand_of(pan) if pan else None):
        errors["cc-csc"] = "Enter the security code printed on the card."
    values["cvv2"] = cvv
    name = fields.get("cc-name", "").strip()
    if len(name) > 128:
        errors["cc-name"] = "The name is too long."
    values["card_printed_name"] = name
    return values, errors
