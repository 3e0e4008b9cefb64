"""Hosted Fields in the payer's browser (CONTRACT §18): the SDK script a merchant's checkout page loads,
the field page each of its iframes shows, and the tokenization the card-number iframe posts the card to.
All on the API's own origin: the merchant's page and its scripts never see the card."""

from __future__ import annotations

import secrets
from importlib import resources

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from kassa.clock import now_ms, today
from kassa.core import hosted_fields as core
from kassa.core.opening import new_card
from kassa.domain import cards
from kassa.domain import hosted_fields as hf
from kassa.domain.hosted_fields import Part
from kassa.pages.rendering import render_page
from kassa.pages.responses import html
from kassa.runtime import Services
from kassa.storage import hosted_fields as store
from kassa.storage.hosted_fields import Tokenized
from kassa.vault import tokens
from kassa.vault.keys import hosted_cvv_context
from kassa.web.forms import FormError, read_body

_SENT = ("ticket", "endpointId", "pan", "exp", "cvv")
_TEXT_MAX = 100  # a label or placeholder the merchant's page chose
_LABELS = {Part.PAN: "Card number", Part.EXP: "Expiry date (MM/YY)", Part.CVV: "Security code"}
_AUTOCOMPLETE = {Part.PAN: "cc-number", Part.EXP: "cc-exp", Part.CVV: "cc-csc"}


def _script_json(value: object) -> str:
    """``value`` as JSON to stand inside a <script type="application/json">: no "<" may end it early."""
    return orjson.dumps(value).decode().replace("<", "\\u003c")


_PROBLEMS = _script_json({str(p.code): p.as_json() for p in hf.PROBLEMS})
_RULES = _script_json({**cards.browser_rules(), "styleProperties": list(hf.STYLE_PROPERTIES)})


def _static(name: str) -> bytes:
    return resources.files("kassa.pages").joinpath("static", name).read_bytes()


class HostedFields:
    def __init__(self, services: Services) -> None:
        self.services = services
        # Read once: the files are part of the package and change only with it.
        self.files = {name: _static(name) for name in ("hosted-fields.js", "field.js", "field.css")}

    async def script(self, request: Request) -> Response:
        """The SDK, and the field page's script and style: classic scripts any page may load. A short
        cache lifetime, so that a fix reaches every checkout within minutes."""
        name = request.path_params["name"]
        if name not in self.files:
            return Response("not found\n", 404, media_type="text/plain")
        media = "text/css" if name.endswith(".css") else "text/javascript"
        headers = {
            "cache-control": "public, max-age=300",
            "x-content-type-options": "nosniff",
            "cross-origin-resource-policy": "cross-origin",
        }
        return Response(self.files[name], media_type=f"{media}; charset=utf-8", headers=headers)

    async def field(self, request: Request) -> Response:
        """One field, for any merchant's page to frame. What it needs of its parent comes in the query
        (made by the SDK); it trusts messages from that parent's origin only."""
        try:
            part = Part(request.query_params.get("type", ""))
        except ValueError:
            return Response("unknown field type\n", 400, media_type="text/plain")
        query = request.query_params
        page = render_page(
            "hosted_field.html",
            framed=True,
            fetches=True,
            lang="en",
            label=query.get("label", "")[:_TEXT_MAX] or _LABELS[part],
            placeholder=query.get("placeholder", "")[:_TEXT_MAX],
            autocomplete=_AUTOCOMPLETE[part],
            problems=_PROBLEMS,
            rules=_RULES,
        )
        return html(page)

    async def tokenize(self, request: Request) -> Response:
        """The card of the iframes for a token, against an ephemeral ticket (JSON both ways). Only the
        field page's own script posts here: JSON needs a CORS preflight from any other origin, which gets
        no allowance. A request the field page would not make is refused as an unknown ticket."""
        if request.headers.get("content-type", "").partition(";")[0].strip() != "application/json":
            return _refused(hf.TICKET_UNKNOWN, 415)
        sent = await _sent(request)
        if sent is None:
            return _refused(hf.TICKET_UNKNOWN)
        digest, endpoint = tokens.digest(sent["ticket"]), int(sent["endpointId"])
        row = await self.services.db.read_point(lambda conn: store.ticket(conn, digest))
        if problem := core.ticket_problem(row, endpoint, now_ms()):
            return _refused(problem)
        assert row is not None
        try:
            card = hf.check_card(sent["pan"], sent["exp"], sent["cvv"], today())
        except hf.CardProblem as refused:
            if refused.problem.spends_ticket:
                return await self._spend(digest, endpoint, refused.problem)
            return _refused(refused.problem)
        token = secrets.token_urlsafe(32)
        tokenized = self._sealed(card, row["merchant_id"], digest, tokens.digest(token))
        try:
            await self.services.db.write(lambda conn: core.tokenize(conn, digest, endpoint, tokenized, now_ms()))
        except core.TicketRefused as refused:
            return _refused(refused.problem)
        return JSONResponse({"token": token}, headers={"cache-control": "no-store"})

    async def _spend(self, ticket_digest: str, endpoint_id: int, problem: hf.Problem) -> Response:
        try:
            await self.services.db.write(lambda conn: core.tokenize(conn, ticket_digest, endpoint_id, None, now_ms()))
        except core.TicketRefused as refused:
            return _refused(refused.problem)
        return _refused(problem)

    def _sealed(self, card: hf.CheckedCard, merchant_id: int, ticket_digest: str, token_digest: str) -> Tokenized:
        """Sealed before the unit of work: the database's writer runs units, not cryptography."""
        vault = self.services.vault
        stored = new_card(vault, merchant_id, card.pan, card.expiry.month, card.expiry.year, "")
        cvv = vault.encrypt(card.cvv, hosted_cvv_context(ticket_digest))
        return Tokenized(token_digest, stored, cvv)


async def _sent(request: Request) -> dict[str, str] | None:
    """What the field page posts: ``ticket``, ``endpointId`` (digits), ``pan``, ``exp``, ``cvv``, all text;
    None for anything else."""
    try:
        body = await read_body(request.receive, request.headers.get("content-length", ""))
        sent = orjson.loads(body)
    except (FormError, orjson.JSONDecodeError):
        return None
    if not isinstance(sent, dict) or not all(isinstance(sent.get(name), str) for name in _SENT):
        return None
    endpoint_id = sent["endpointId"]
    if not (endpoint_id.isascii() and endpoint_id.isdigit() and len(endpoint_id) <= 18):  # an int64 id
        return None
    return {name: sent[name] for name in _SENT}


def _refused(problem: hf.Problem, status: int = 400) -> Response:
    return JSONResponse(problem.as_json(), status, headers={"cache-control": "no-store"})
